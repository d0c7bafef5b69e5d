//! `metron sample --pid PID --duration 2s` samples a running process from outside: a C
//! workload whose two threads, created only after Metron attached, spend 3:1 of their CPU
//! time in `spin_hot` and `spin_cold`. The shares of the two functions in `stacks.folded`
//! are 75 % / 25 % within ±5 points, the threads created after attaching are sampled, the
//! run folder has the summary, the flame graph and a valid trace with a track per thread, and
//! the target runs on unaffected (its own exit code and output). Skips, saying why, where
//! `perf_event_open` on another process is not allowed.

mod c_api_support;
use c_api_support::*;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};

const WORKLOAD: &str = r#"#include <pthread.h>
#include <stdio.h>
#include <time.h>
static double cpu_s(void) {
    struct timespec t; clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}
/* The same loop in both, so that iterations cost the same: 3:1 by count. */
__attribute__((noinline)) void spin_hot(long n) {
    volatile unsigned long x = 1;
    for (long i = 0; i < n; i++) x = x * 6364136223846793005UL + 1;
}
__attribute__((noinline)) void spin_cold(long n) {
    volatile unsigned long x = 1;
    for (long i = 0; i < n; i++) x = x * 6364136223846793005UL + 1;
}
static void* work(void* arg) {
    double start = cpu_s();
    while (cpu_s() - start < 1.5) { spin_hot(300000); spin_cold(100000); }
    return arg;
}
int main(void) {
    printf("ready\n");
    fflush(stdout);
    char line[16];
    if (!fgets(line, sizeof line, stdin)) return 3;   /* "go": Metron is attached */
    pthread_t t[2];
    for (int i = 0; i < 2; i++) pthread_create(&t[i], 0, work, 0);
    for (int i = 0; i < 2; i++) pthread_join(t[i], 0);
    printf("done\n");
    return 7;
}
"#;

/// Why this machine cannot run the test, if it cannot.
fn skip_reason() -> Option<String> {
    if !cfg!(target_arch = "x86_64") {
        return Some("the attach unwinder is x86-64 only".into());
    }
    match std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .ok()
        .and_then(|s| s.trim().parse::<i32>().ok())
    {
        None => Some("no /proc/sys/kernel/perf_event_paranoid: no perf events here".into()),
        Some(p) if p > 2 => Some(format!(
            "kernel.perf_event_paranoid is {p}: sampling another process needs <= 2"
        )),
        _ => None,
    }
}

/// (hot, cold) samples by leaf frame.
fn shares(folded: &str) -> (u64, u64) {
    let (mut hot, mut cold) = (0, 0);
    for line in folded.lines() {
        let (stack, n) = line.rsplit_once(' ').unwrap();
        let n: u64 = n.parse().unwrap();
        let frames: Vec<&str> = stack.split(';').collect();
        match *frames.last().unwrap() {
            "spin_hot" => hot += n,
            "spin_cold" => cold += n,
            _ => {}
        }
    }
    (hot, cold)
}

#[test]
fn attaching_samples_a_running_process_and_the_threads_it_creates_without_disturbing_it() {
    if let Some(reason) = skip_reason() {
        println!("SKIP: {reason}");
        return;
    }
    let dir = temp_dir("attach");
    let source = dir.join("workload.c");
    std::fs::write(&source, WORKLOAD).unwrap();
    let exe = dir.join("workload");
    let cc = Command::new("cc")
        .args(["-std=c99", "-O1", "-g", "-pthread", "-D_DEFAULT_SOURCE"])
        .arg(&source)
        .arg("-o")
        .arg(&exe)
        .output()
        .unwrap();
    assert_success(&cc, "cc workload.c");

    let mut target = Command::new(&exe)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .env_remove("LD_PRELOAD")
        .spawn()
        .unwrap();
    let mut target_out = BufReader::new(target.stdout.take().unwrap());
    let mut line = String::new();
    target_out.read_line(&mut line).unwrap();
    assert_eq!(line, "ready\n");

    let runs = dir.join("runs");
    let mut metron = Command::new(artifacts().metron())
        .args([
            "sample",
            "--pid",
            &target.id().to_string(),
            "--duration",
            "2s",
            "-o",
        ])
        .arg(runs.join("%exe%-%pid%"))
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until Metron is attached, then let the workload start its threads.
    let mut metron_err = BufReader::new(metron.stderr.take().unwrap());
    let mut said = String::new();
    loop {
        let mut l = String::new();
        if metron_err.read_line(&mut l).unwrap() == 0 {
            break;
        }
        said.push_str(&l);
        if l.contains("attached to process") {
            break;
        }
    }
    if said.contains("not allowed to sample") {
        let _ = target.kill();
        let _ = target.wait();
        let _ = metron.wait();
        println!("SKIP: {said}");
        return;
    }
    assert!(said.contains("attached to process"), "metron said: {said}");
    target.stdin.take().unwrap().write_all(b"go\n").unwrap();
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut metron_err, &mut rest).unwrap();
    let status = metron.wait().unwrap();
    assert!(
        status.success(),
        "metron sample --pid: {status}\n{said}{rest}"
    );
    println!("{said}{rest}");

    // The target ran on, unaffected: its own output and exit code.
    let mut out = String::new();
    std::io::Read::read_to_string(&mut target_out, &mut out).unwrap();
    let target_status = target.wait().unwrap();
    assert_eq!(target_status.code(), Some(7));
    assert_eq!(out, "done\n");

    let folders = run_folders(&runs);
    assert_eq!(folders.len(), 1, "{folders:?}");
    let run = &folders[0];
    for file in [
        "summary.txt",
        "summary.json",
        "stacks.folded",
        "flamegraph.svg",
        "metadata.json",
    ] {
        assert!(
            run.join(file).is_file(),
            "{file} missing in {}",
            run.display()
        );
    }
    let folded = std::fs::read_to_string(run.join("stacks.folded")).unwrap();
    let (hot, cold) = shares(&folded);
    // Threads are merged in stacks.folded: the sampled threads are the profile's.
    let summary = read_json(run, "summary.json");
    let threads: Vec<String> = summary["sampling"]["profiles"][0]["threads"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|t| t["samples"].as_u64().unwrap_or(0) > 0)
        .map(|t| format!("{}-{}", t["name"], t["tid"]))
        .collect();
    let share = 100.0 * hot as f64 / (hot + cold) as f64;
    println!("spin_hot {hot}, spin_cold {cold} samples: {share:.1} % hot; threads {threads:?}");
    assert!(hot + cold >= 300, "too few samples: {folded}");
    assert!(
        (70.0..=80.0).contains(&share),
        "hot share {share:.1} %, expected 75 ± 5"
    );
    // Both threads were created after attaching, and both were sampled.
    assert!(threads.len() >= 2, "{threads:?}");
    let metadata = read_json(run, "metadata.json");
    let attach = &metadata["attach"];
    assert_eq!(attach["threads_at_attach"], 1, "{attach}");
    assert!(
        attach["threads_created_while_attached_sampled"]
            .as_u64()
            .unwrap()
            >= 2,
        "{attach}"
    );
    // The workload may end before the 2 s are over: then its exit ends the sampling.
    assert!(
        attach["ended_by"] == "duration" || attach["ended_by"] == "target exited",
        "{attach}"
    );
    assert_eq!(metadata["sampling"]["lost_samples"], 0, "{metadata}");
    // Samples were unwound through the threads' callers (framehop over the target's files).
    assert!(
        folded.lines().any(|l| l.contains(";work;spin_hot ")),
        "{folded}"
    );

    // The trace: valid, one track per sampled thread, under the target's process.
    check_trace(&run.join("trace.pftrace"), target.id(), threads.len());
    let _ = std::fs::remove_dir_all(&dir);
}

fn check_trace(trace: &Path, pid: u32, threads: usize) {
    let json = metron_tests::validated_trace(trace, &[]);
    let tracks = json["tracks"].as_array().unwrap();
    let process = tracks.iter().find(|t| t["type"] == "process").unwrap();
    assert_eq!(process["pid"], pid);
    assert_eq!(process["name"], "workload");
    let thread_tracks = tracks.iter().filter(|t| t["type"] == "thread").count();
    assert_eq!(thread_tracks, threads, "{tracks:?}");
}

#[test]
fn attaching_to_a_missing_process_or_with_bad_flags_is_a_clear_error() {
    let out = Command::new(artifacts().metron())
        .args(["sample", "--pid", "4000000000"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no process 4000000000"), "{err}");
    let out = Command::new(artifacts().metron())
        .args(["sample", "--pid", "1", "--duration", "soon"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("expected a positive time"), "{err}");

    // A process that already runs Metron: said, with its own run folder.
    let dir = temp_dir("attach-metron");
    // What `metron run` does: the runtime library preloaded.
    let mut under = Command::new("sleep")
        .arg("5")
        .env("LD_PRELOAD", artifacts().lib())
        .env("METRON_PRELOAD", "1")
        .env("METRON_OUTPUT_PATH", dir.join("own-%pid%"))
        .spawn()
        .unwrap();
    let pid = under.id();
    // Its runtime started: Metron's threads are there.
    for _ in 0..100 {
        let started = std::fs::read_dir(format!("/proc/{pid}/task"))
            .unwrap()
            .flatten()
            .any(|t| {
                std::fs::read_to_string(t.path().join("comm"))
                    .is_ok_and(|n| n.starts_with("metron-"))
            });
        if started {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let out = Command::new(artifacts().metron())
        .args(["sample", "--pid", &pid.to_string(), "--duration", "1s"])
        .output()
        .unwrap();
    let _ = under.kill();
    let _ = under.wait();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("already runs Metron"), "{err}");
    assert!(err.contains(&dir.display().to_string()), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn ctrl_c_ends_the_sampling_cleanly_with_the_run_folder_written() {
    if let Some(reason) = skip_reason() {
        println!("SKIP: {reason}");
        return;
    }
    let dir = temp_dir("attach-interrupt");
    // A busy shell loop: something to sample.
    let mut target = Command::new("sh")
        .args(["-c", "i=0; while :; do i=$((i+1)); done"])
        .spawn()
        .unwrap();
    let mut metron = Command::new(artifacts().metron())
        .args(["sample", "--pid", &target.id().to_string(), "-o"])
        .arg(dir.join("run"))
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = BufReader::new(metron.stderr.take().unwrap());
    let mut said = String::new();
    while !said.contains("attached to process") && !said.contains("not allowed") {
        if err.read_line(&mut said).unwrap() == 0 {
            break;
        }
    }
    if said.contains("not allowed to sample") {
        let _ = target.kill();
        let _ = target.wait();
        let _ = metron.wait();
        println!("SKIP: {said}");
        return;
    }
    std::thread::sleep(std::time::Duration::from_millis(500));
    // SAFETY: sends SIGINT to our own child, as Ctrl-C in a terminal would.
    unsafe { libc::kill(metron.id() as i32, libc::SIGINT) };
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut err, &mut rest).unwrap();
    let status = metron.wait().unwrap();
    // The target runs on: Metron left it alone.
    let still_running = target.try_wait().unwrap().is_none();
    let _ = target.kill();
    let _ = target.wait();
    assert!(status.success(), "{status}: {said}{rest}");
    assert!(still_running, "the target was stopped by the interrupt");
    assert!(rest.contains("ended by interrupted"), "{rest}");
    let metadata = read_json(&dir.join("run"), "metadata.json");
    assert_eq!(metadata["attach"]["ended_by"], "interrupted");
    assert!(
        metadata["sampling"]["samples"]["cpu_time"]
            .as_u64()
            .unwrap()
            > 50,
        "{}",
        metadata["sampling"]
    );
    assert!(dir.join("run/stacks.folded").is_file());
    let _ = std::fs::remove_dir_all(&dir);
}
