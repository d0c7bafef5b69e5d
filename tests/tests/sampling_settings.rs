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
    // 1,000/s asked. The kernel merges the expirations of a timer whose signal is still
    // pending (an overrun), which a loaded machine causes (this file's three scenarios share
    // two cores in CI; with two more busy processes 884/s was seen): 75 % is the bound.
    let rate = data["main_real"].as_f64().unwrap() / data["wall_s"].as_f64().unwrap();
    assert!(
        rate >= 750.0,
        "{rate:.0} wall-time samples/s on a thread that slept half the time"
    );
    assert!(
        sampling["achieved"]["real_samples_per_second"]
            .as_f64()
            .unwrap()
            >= 750.0
    );
}

#[test]
fn only_the_chosen_threads_are_sampled() {
    let run = Scenario::new("scenario_sleep_then_spin")
        .env("METRON_SAMPLING", "on")
        // Index 0 is the process's main thread, which the sampler sees first (Metron starts before
        // `main`); the test harness runs this scenario on the next thread, index 1.
        .env("METRON_SAMPLING_TIDS", "1")
        .run();
    let data = run.data();
    println!("{data}");
    assert!(data["main_cpu"].as_u64().unwrap() >= 150, "{data}");
    assert_eq!(data["worker_cpu"], 0, "{data}");
}
