//! The cost of call-stack sampling.
//!
//! - `sampling/capture/<n>-frames`: what the signal handler does for one sample (framehop
//!   unwind of `n` frames of this benchmark's own stack plus the store into the thread's ring),
//!   called directly from normal code, so that the kernel's signal delivery is not included.
//! - Then, outside criterion, the overhead of sampling at 1 kHz on a CPU-bound program: this
//!   binary re-runs itself as a child doing a fixed amount of work on 2 threads, alternately
//!   with `METRON_SAMPLING=on` and off, and compares the CPU time (user + system, from
//!   `wait4`) and wall time of the children (medians of `ROUNDS` each). Signal delivery, the
//!   handler, the sampler thread and the flusher's decoding are all included.

use criterion::{criterion_group, Criterion};
use metron::sampling::bench::Capture;
use std::hint::black_box;
use std::process::Command;
use std::time::{Duration, Instant};

const CHILD_ENV: &str = "METRON_BENCH_SAMPLING_CHILD";
const ROUNDS: usize = 7;

#[inline(never)]
fn nest(depth: u32, capture: &Capture) -> bool {
    if depth == 0 {
        return capture.capture();
    }
    let stored = nest(depth - 1, capture);
    black_box(stored)
}

fn capture(c: &mut Criterion) {
    let capture = Capture::new();
    let mut group = c.benchmark_group("sampling/capture");
    group
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    for depth in [0u32, 10, 30] {
        capture.clear();
        nest(depth, &capture);
        let frames = capture.last_depth();
        group.bench_function(format!("{frames}-frames"), |b| {
            b.iter_custom(|iters| {
                let start = Instant::now();
                for i in 0..iters {
                    if i % 1024 == 0 {
                        capture.clear();
                    }
                    black_box(nest(depth, &capture));
                }
                start.elapsed()
            })
        });
    }
    group.finish();
}

criterion_group!(benches, capture);

/// The fixed work of a child: 2 threads of dependent arithmetic.
fn child_work() {
    let work = || {
        let mut x = 1u64;
        for i in 0..600_000_000u64 {
            x = black_box(x.rotate_left(5) ^ i).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
        x
    };
    let other = std::thread::spawn(work);
    black_box(work());
    black_box(other.join().unwrap());
}

fn process_cpu_s() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid out-pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 / 1e9
}

/// (CPU s, wall s) of one child run, whole process and during the work only.
fn run_child(sampling: bool) -> ((f64, f64), (f64, f64)) {
    let exe = std::env::current_exe().unwrap();
    let started = Instant::now();
    let mut child = Command::new(exe)
        .stdout(std::process::Stdio::piped())
        .env(CHILD_ENV, "1")
        .env("METRON_SAMPLING", if sampling { "on" } else { "off" })
        .env("METRON_SAMPLING_FREQ", "1000")
        .env(
            "METRON_OUTPUT_PATH",
            std::env::temp_dir().join("metron-bench-sampling/%pid%"),
        )
        .spawn()
        .unwrap();
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid out-value.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: waits for our own child; `status` and `usage` are valid out-pointers.
    unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    let wall = started.elapsed().as_secs_f64();
    let mut text = String::new();
    std::io::Read::read_to_string(&mut child.stdout.take().unwrap(), &mut text).unwrap();
    let _ = child.try_wait();
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    let mut words = text.split_whitespace().map(|w| w.parse::<f64>().unwrap());
    let work = (words.next().unwrap(), words.next().unwrap());
    ((tv(usage.ru_utime) + tv(usage.ru_stime), wall), work)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn overhead() {
    // [off, on] × [whole cpu, whole wall, work cpu, work wall]
    let mut m: [[Vec<f64>; 4]; 2] = Default::default();
    for _ in 0..ROUNDS {
        for (i, sampling) in [false, true].into_iter().enumerate() {
            let ((c, w), (wc, ww)) = run_child(sampling);
            for (k, v) in [c, w, wc, ww].into_iter().enumerate() {
                m[i][k].push(v);
            }
        }
    }
    let labels = [
        "whole process CPU",
        "whole process wall",
        "during the work, process CPU",
        "during the work, wall",
    ];
    println!("sampling/overhead at 1 kHz, 2 CPU-bound threads, medians of {ROUNDS} runs:");
    for (k, label) in labels.iter().enumerate() {
        let off = median(m[0][k].clone());
        let on = median(m[1][k].clone());
        println!(
            "  {label:<30} {off:.3} s off, {on:.3} s on ({:+.2} %)",
            100.0 * (on / off - 1.0)
        );
    }
}

/// `METRON_BENCH_SAMPLING_CAPTURES=N`: N captures at 10 extra frames, then exit; run under
/// callgrind with N = 0 and N = 10000, the difference of the instruction counts / 10000 is
/// the instructions of one capture (`scripts`-free: see the Performance chapter, `docs/src/performance.md`).
const CAPTURES_ENV: &str = "METRON_BENCH_SAMPLING_CAPTURES";

fn main() {
    if let Some(n) = std::env::var(CAPTURES_ENV)
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
    {
        let capture = Capture::new();
        for i in 0..n {
            if i % 1024 == 0 {
                capture.clear();
            }
            black_box(nest(10, &capture));
        }
        capture.clear();
        nest(10, &capture);
        println!("frames {}", capture.last_depth());
        return;
    }
    if std::env::var_os(CHILD_ENV).is_some() {
        let _ = metron::init();
        let (cpu0, wall0) = (process_cpu_s(), Instant::now());
        child_work();
        println!(
            "{} {}",
            process_cpu_s() - cpu0,
            wall0.elapsed().as_secs_f64()
        );
        return;
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
    if std::env::args().any(|a| a == "--bench") {
        overhead();
    }
}
