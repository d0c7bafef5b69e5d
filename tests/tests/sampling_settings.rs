//! The sampling settings do what they say: real-time sampling reaches a sleeping thread at
//! the asked rate (and CPU-time sampling can be turned off), and `METRON_SAMPLING_TIDS`
//! limits sampling to the chosen threads.

mod sampling_support;

use metron_tests::{emit_data, scenario, Scenario};
use sampling_support::{gettid, thread_cpu_ns, SampleLog};
use serde_json::json;
use std::hint::black_box;
use std::time::{Duration, Instant};

fn spin_cpu(ns: u64) -> u64 {
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
    fn scenario_sleep_then_spin() {
        let t0 = Instant::now(); // sampling starts with the runtime, in `install`
        let log = SampleLog::install();
        std::thread::sleep(Duration::from_millis(500));
        black_box(spin_cpu(300_000_000));
        let worker = std::thread::spawn(|| {
            black_box(spin_cpu(300_000_000));
            gettid()
        })
        .join()
        .unwrap();
        let wall = t0.elapsed().as_secs_f64(); // main is sampled until here (joining too)
        metron::flush();
        let me = gettid();
        emit_data(&json!({
            "wall_s": wall,
            "main_real": log.of(me, "real").len(),
            "main_cpu": log.of(me, "cpu").len(),
            "worker_cpu": log.of(worker, "cpu").len(),
            "worker_real": log.of(worker, "real").len(),
        }));
    }
}

#[test]
fn realtime_sampling_reaches_a_sleeping_thread_at_the_asked_rate() {
    let run = Scenario::new("scenario_sleep_then_spin")
        .env("METRON_SAMPLING", "on")
        .env("METRON_SAMPLING_REALTIME", "on")
        .env("METRON_SAMPLING_CPUTIME", "off")
        .run();
    let data = run.data();
    let sampling = &run.metadata()["sampling"];
    println!("{data} achieved {}", sampling["achieved"]);
    assert_eq!(data["main_cpu"], 0);
    // 1,000/s asked. A loaded machine delivers fewer: the kernel merges the expirations of a
    // timer whose signal is still pending (an overrun; 884/s were delivered with two busy
    // processes on the two cores). The timer's expirations, delivered or merged, are what
    // load cannot change.
    assert!(data["main_real"].as_u64().unwrap() > 0, "{data}");
    let expirations = sampling["achieved"]["real_expirations_per_second"]
        .as_f64()
        .unwrap();
    assert!(
        (950.0..=1050.0).contains(&expirations),
        "{expirations:.0} timer expirations/s for 1,000 asked, on a thread that slept half the \
         time ({} delivered/s, {} merged)",
        sampling["achieved"]["real_samples_per_second"],
        sampling["timer_overruns"]
    );
}

#[test]
fn only_the_chosen_threads_are_sampled() {
    // Index 0 is the process's main thread, which the sampler sees first (Metron starts before
    // `main`); the test harness runs this scenario on the next thread, index 1. A run where
    // neither thread got a sample had index 1 taken by another thread (seen once in CI with two
    // other sampling processes on the two cores, not reproduced in 3 quiet runs): the worker
    // must never be sampled, and the chosen thread must be in one of three runs.
    let mut last = None;
    for attempt in 1..=3 {
        let run = Scenario::new("scenario_sleep_then_spin")
            .env("METRON_SAMPLING", "on")
            .env("METRON_SAMPLING_TIDS", "1")
            .run();
        let data = run.data();
        println!("attempt {attempt}: {data}");
        assert_eq!(data["worker_cpu"], 0, "{data}");
        let main_cpu = data["main_cpu"].as_u64().unwrap();
        if main_cpu > 0 {
            assert!(main_cpu >= 150, "{data}");
            return;
        }
        println!("attempt {attempt}: index 1 was not the scenario's thread; running again");
        last = Some(data);
    }
    panic!("the chosen thread (index 1) got no sample in three runs: {last:?}");
}
