//! Sampling survives what real programs do: ten thousand short-lived threads, `fork` while
//! every thread is being sampled, samples landing in the middle of Metron's own flush, and a
//! program with its own `SIGPROF` handler and profiling timer (which keeps working: Metron
//! samples on a real-time signal of its own).

mod sampling_support;

use metron_tests::{emit_data, scenario, Scenario};
use sampling_support::{gettid, thread_cpu_ns, SampleLog};
use serde_json::json;
use std::hint::black_box;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn spin_for_cpu(ns: u64) -> u64 {
    let start = thread_cpu_ns();
    let mut x = 1u64;
    while thread_cpu_ns() - start < ns {
        for _ in 0..1000 {
            x = black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
        }
    }
    x
}

scenario! {
    fn scenario_ten_thousand_threads() {
        let log = SampleLog::install();
        let started = Instant::now();
        let mut done = 0u64;
        for _ in 0..10_000 / 8 {
            let batch: Vec<_> = (0..8)
                .map(|i| {
                    std::thread::spawn(move || {
                        // Half record a region (registered at once), half only compute
                        // (found by the sampler's scan if they live long enough).
                        if i % 2 == 0 {
                            let _g = metron::scope!("short");
                            spin_for_cpu(200_000)
                        } else {
                            spin_for_cpu(200_000)
                        }
                    })
                })
                .collect();
            for t in batch {
                black_box(t.join().unwrap());
                done += 1;
            }
        }
        metron::flush();
        let samples = log.all().len();
        emit_data(&json!({"threads": done, "samples": samples, "seconds": started.elapsed().as_secs_f64()}));
    }
}

#[test]
fn ten_thousand_short_lived_threads_are_sampled_without_leaks_or_crashes() {
    let run = Scenario::new("scenario_ten_thousand_threads")
        .env("METRON_SAMPLING", "on")
        .env("METRON_SAMPLING_FREQ", "5000")
        .run();
    let data = run.data();
    let sampling = &run.metadata()["sampling"];
    println!(
        "{data}\nthreads sampled {}, samples {}, stray {}, errors {}",
        sampling["threads_sampled"],
        sampling["samples"],
        sampling["stray_signals"],
        sampling["errors"]
    );
    assert_eq!(data["threads"], 10_000);
    let sampled = sampling["threads_sampled"].as_u64().unwrap();
    assert!(
        sampled >= 5_000,
        "threads that recorded a region are all sampled: {sampled}"
    );
    assert_eq!(sampling["threads_not_sampled_no_slot"], 0);
    assert!(data["samples"].as_u64().unwrap() >= 1_000, "{data}");
    assert_eq!(sampling["dropped_ring_full"], 0);
    let summary = run.summary();
    assert_eq!(
        metron_tests::find(&summary["merged"], &["short"])["count"],
        5_000
    );
}

scenario! {
    fn scenario_fork_while_sampling() {
        let log = SampleLog::install();
        let stop = Arc::new(AtomicBool::new(false));
        let workers: Vec<_> = (0..2)
            .map(|_| {
                let stop = Arc::clone(&stop);
                std::thread::spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        let _g = metron::scope!("work");
                        black_box(spin_for_cpu(1_000_000));
                    }
                })
            })
            .collect();
        black_box(spin_for_cpu(100_000_000));
        let mut statuses = Vec::new();
        for _ in 0..20 {
            // SAFETY: the child only computes, records (a no-op there) and exits.
            let pid = unsafe { libc::fork() };
            if pid == 0 {
                {
                    let _g = metron::scope!("in_child");
                    black_box(spin_for_cpu(50_000_000));
                }
                metron::flush();
                std::process::exit(7);
            }
            let mut status = 0;
            // SAFETY: waits for the child just forked; `status` is a valid out-pointer.
            unsafe { libc::waitpid(pid, &mut status, 0) };
            statuses.push(status);
        }
        let before = log.all().len();
        black_box(spin_for_cpu(200_000_000));
        stop.store(true, Ordering::Relaxed);
        for w in workers {
            w.join().unwrap();
        }
        metron::flush();
        let main_after = log.of(gettid(), "cpu").len();
        emit_data(&json!({
            "statuses": statuses,
            "samples_before_end": before,
            "samples_total": log.all().len(),
            "main_samples": main_after,
        }));
    }
}

#[test]
fn a_child_forked_while_sampling_runs_normally_and_the_parent_keeps_sampling() {
    let run = Scenario::new("scenario_fork_while_sampling")
        .env("METRON_SAMPLING", "on")
        .env("METRON_SAMPLING_REALTIME", "on")
        .env("METRON_SAMPLING_FREQ", "2000")
        .run();
    let data = run.data();
    println!("{data}");
    for status in data["statuses"].as_array().unwrap() {
        let s = status.as_i64().unwrap() as i32;
        assert!(
            libc::WIFEXITED(s) && libc::WEXITSTATUS(s) == 7,
            "child status {s:#x} (signal {})",
            libc::WTERMSIG(s)
        );
    }
    assert!(
        data["samples_total"].as_u64().unwrap() > data["samples_before_end"].as_u64().unwrap(),
        "the parent keeps sampling after the forks: {data}"
    );
    assert!(!run.stdout.contains("in_child"));
    let tree = metron_tests::shape(&run.summary()["merged"]);
    assert!(!tree.contains("in_child"), "{tree}");
}

scenario! {
    fn scenario_samples_during_flush() {
        let log = SampleLog::install();
        let stop = Arc::new(AtomicBool::new(false));
        let worker = {
            let stop = Arc::clone(&stop);
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    {
                        let _g = metron::scope!("busy");
                        for _ in 0..100 {
                            let _h = metron::scope!("inner");
                        }
                    }
                    std::thread::sleep(Duration::from_micros(200));
                }
            })
        };
        let started = Instant::now();
        let mut flushes = 0u64;
        // A thread that records nothing, started while the flushes run: only the sampler's
        // scan can find it, which a flushing loop must not starve.
        let mut quiet = None;
        while started.elapsed() < Duration::from_millis(1500) {
            metron::flush(); // drains regions and samples: samples land inside it
            flushes += 1;
            if quiet.is_none() && started.elapsed() > Duration::from_millis(200) {
                let stop = Arc::clone(&stop);
                quiet = Some(std::thread::spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        black_box(spin_for_cpu(1_000_000));
                    }
                    gettid()
                }));
            }
        }
        stop.store(true, Ordering::Relaxed);
        worker.join().unwrap();
        let quiet_tid = quiet.expect("started").join().unwrap();
        metron::flush();
        emit_data(&json!({
            "flushes": flushes,
            "main_samples": log.of(gettid(), "cpu").len() + log.of(gettid(), "real").len(),
            "quiet_samples": log.of(quiet_tid, "cpu").len() + log.of(quiet_tid, "real").len(),
        }));
    }
}

#[test]
fn samples_that_arrive_during_metrons_own_flush_are_taken_safely() {
    let run = Scenario::new("scenario_samples_during_flush")
        .env("METRON_SAMPLING", "on")
        .env("METRON_SAMPLING_REALTIME", "on")
        .env("METRON_SAMPLING_FREQ", "5000")
        .run();
    let data = run.data();
    println!("{data}");
    assert!(data["flushes"].as_u64().unwrap() > 10, "{data}");
    // The main thread does nothing but flush: its samples were taken inside the flush.
    assert!(data["main_samples"].as_u64().unwrap() >= 100, "{data}");
    // Found by the scan while the main thread flushed without pause.
    assert!(data["quiet_samples"].as_u64().unwrap() >= 50, "{data}");
    assert!(run.summary()["merged"].to_string().contains("busy"));
}

static PROF_TICKS: AtomicU64 = AtomicU64::new(0);

extern "C" fn own_sigprof(_sig: libc::c_int) {
    PROF_TICKS.fetch_add(1, Ordering::Relaxed);
}

fn install_own_profiler() {
    // SAFETY: installs a plain handler (atomics only) for SIGPROF and arms ITIMER_PROF at
    // 1 ms; every struct is fully initialised and lives for its call.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = own_sigprof as *const () as usize;
        action.sa_flags = libc::SA_RESTART;
        libc::sigemptyset(&mut action.sa_mask);
        assert_eq!(
            libc::sigaction(libc::SIGPROF, &action, std::ptr::null_mut()),
            0
        );
        let tick = libc::timeval {
            tv_sec: 0,
            tv_usec: 1000,
        };
        let timer = libc::itimerval {
            it_interval: tick,
            it_value: tick,
        };
        assert_eq!(
            libc::setitimer(libc::ITIMER_PROF, &timer, std::ptr::null_mut()),
            0
        );
    }
}

scenario! {
    fn scenario_own_sigprof() {
        install_own_profiler(); // before Metron starts
        let log = SampleLog::install();
        let cpu0 = thread_cpu_ns();
        black_box(spin_for_cpu(1_000_000_000));
        let cpu_s = (thread_cpu_ns() - cpu0) as f64 / 1e9;
        metron::flush();
        emit_data(&json!({
            "program_ticks": PROF_TICKS.load(Ordering::Relaxed),
            "metron_samples": log.of(gettid(), "cpu").len(),
            "cpu_s": cpu_s,
        }));
    }
}

#[test]
fn a_program_with_its_own_sigprof_profiler_keeps_it_and_is_sampled_too() {
    let run = Scenario::new("scenario_own_sigprof")
        .env("METRON_SAMPLING", "on")
        .run();
    let data = run.data();
    let sampling = &run.metadata()["sampling"];
    println!("{data} signal {}", sampling["signal"]);
    assert_ne!(sampling["signal"], "SIGPROF");
    let cpu_s = data["cpu_s"].as_f64().unwrap();
    // ITIMER_PROF counts process CPU time at the kernel tick (250 Hz here, at most 1 kHz).
    assert!(
        data["program_ticks"].as_f64().unwrap() >= 100.0 * cpu_s,
        "the program's own SIGPROF handler still runs: {data}"
    );
    if sampling["cpu_method"] == "perf_task_clock" {
        assert!(
            data["metron_samples"].as_f64().unwrap() >= 900.0 * cpu_s,
            "{data}"
        );
    }
}
