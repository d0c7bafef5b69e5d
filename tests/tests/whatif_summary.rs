//! The critical path in the run's summary: a run with GPU work (a fake backend, no GPU
//! needed) gets a section of `summary.txt` and `critical_path` in `summary.json` at its end;
//! `metron report` on the folder replaces them (twice gives the same files), and a summary
//! that cannot take them is left as it was. Each `step` spins 200 µs, copies 300 µs to the
//! device, runs a 2 ms kernel after the copy on the same stream, synchronizes with it (woken
//! 2 µs after it ends) and spins 100 µs more: the kernel is the first row of the table, the
//! copy is on the path too, and the GPU's idle time between kernels is the copy's and the
//! time after the sync.

mod c_api_support;
use c_api_support::artifacts;
use metron::gpu::{GpuKind, GpuRecord};
use metron_tests::fake_gpu;
use metron_whatif::summary::{HEADING, SUMMARY_KEY, SUMMARY_ROWS};
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output};
use std::sync::Arc;

const STEPS: u32 = 4;
const KERNEL_NS: u64 = 2_000_000;
const COPY_NS: u64 = 300_000;

fn spin_until(t: u64) {
    while metron::clock::monotonic_ns() < t {
        std::hint::spin_loop();
    }
}

fn report(dir: &Path) -> Output {
    let out = Command::new(artifacts().metron())
        .args(["report", dir.to_str().unwrap()])
        .output()
        .expect("metron runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn json(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).expect("the file")).expect("JSON")
}

#[test]
fn the_summary_shows_the_critical_path_once_however_often_it_is_written() {
    let dir = fake_gpu::start(
        "metron-whatif-summary",
        fake_gpu::no_flush,
        fake_gpu::metadata,
        &["Fake GPU"],
    );
    // SAFETY: gettid has no preconditions.
    let tid = u32::try_from(unsafe { libc::gettid() }).expect("a tid");
    let copy_call: Arc<str> = "cudaMemcpyAsync".into();
    let launch: Arc<str> = "cudaLaunchKernel".into();
    let sync: Arc<str> = "cudaStreamSynchronize".into();
    let kernel: Arc<str> = "busy_kernel".into();
    let mut batch = Vec::new();
    for i in 0..STEPS {
        let _step = metron::scope!("step");
        spin_until(metron::clock::monotonic_ns() + 200_000);
        let t = metron::clock::monotonic_ns();
        let corr = 3 * i + 1;
        let mut c = GpuRecord::new(GpuKind::RuntimeApi, Arc::clone(&copy_call));
        (c.start_ns, c.end_ns, c.correlation, c.tid) = (t, t + 5_000, corr, tid);
        let mut copy = GpuRecord::new(GpuKind::Memcpy, "HtoD".into());
        (
            copy.start_ns,
            copy.end_ns,
            copy.correlation,
            copy.stream,
            copy.bytes,
        ) = (t + 8_000, t + 8_000 + COPY_NS, corr, 7, 1 << 20);
        let mut l = GpuRecord::new(GpuKind::RuntimeApi, Arc::clone(&launch));
        (l.start_ns, l.end_ns, l.correlation, l.tid) = (t + 6_000, t + 11_000, corr + 1, tid);
        let mut k = GpuRecord::new(GpuKind::Kernel, Arc::clone(&kernel));
        (k.start_ns, k.end_ns, k.correlation, k.stream) =
            (copy.end_ns, copy.end_ns + KERNEL_NS, corr + 1, 7);
        let mut s = GpuRecord::new(GpuKind::RuntimeApi, Arc::clone(&sync));
        (s.start_ns, s.end_ns, s.correlation, s.tid) =
            (t + 12_000, k.end_ns + 2_000, corr + 2, tid);
        spin_until(s.end_ns + 100_000);
        batch.extend([c, copy, l, k, s]);
    }
    metron::gpu::submit(&batch);
    let out = metron::finish().expect("finished").output_dir;

    // The end of the run added the section once, after the summary's own tables.
    let txt = std::fs::read_to_string(out.join("summary.txt")).expect("summary.txt");
    assert!(txt.starts_with("metron summary: "), "{txt}");
    assert_eq!(txt.matches(HEADING).count(), 1, "{txt}");
    let section = &txt[txt.find(HEADING).unwrap()..];
    assert!(
        txt.find("wall_clock.elapsed").unwrap() < txt.find(HEADING).unwrap(),
        "{txt}"
    );
    let critical_txt = std::fs::read_to_string(out.join("critical_path.txt")).unwrap();
    let first_row = section.lines().nth(2).expect("a first row");
    assert!(
        first_row.trim_start().starts_with("kernel busy_kernel"),
        "{section}"
    );
    // The rows are critical_path.txt's, and so is the idle time.
    assert!(critical_txt.contains(first_row), "{critical_txt}");
    assert!(section.contains("  copy Memcpy HtoD "), "{section}");
    assert!(section.contains("  GPU 0 idle "), "{section}");
    assert!(
        section.contains("critical_path.txt") && section.contains("critical_path.json"),
        "{section}"
    );

    // summary.json: the region trees as the summary sink wrote them, and the critical path.
    let summary = json(&out.join("summary.json"));
    assert_eq!(summary["schema"], "metron.summary/1");
    assert_eq!(summary["merged"][0]["name"], "step");
    let cp = &summary[SUMMARY_KEY];
    let full = json(&out.join("critical_path.json"));
    assert_eq!(cp["file"], "critical_path.json");
    assert_eq!(cp["table"][0]["item"], "kernel busy_kernel");
    assert_eq!(cp["table"][0]["on_path_ns"], u64::from(STEPS) * KERNEL_NS);
    assert_eq!(
        cp["table"][0]["gain_if_2x_ns"],
        u64::from(STEPS) * KERNEL_NS / 2
    );
    let rows = cp["table"].as_array().unwrap();
    let full_rows = full["table"].as_array().unwrap();
    assert_eq!(rows[..], full_rows[..full_rows.len().min(SUMMARY_ROWS)]);
    let copy_row = rows
        .iter()
        .find(|r| r["item"] == "copy Memcpy HtoD")
        .expect("the copy is on the path");
    assert_eq!(copy_row["on_path_ns"], u64::from(STEPS) * COPY_NS);
    assert_eq!(cp["gpu_idle"], full["gpu_idle"]);
    // Between two kernels the GPU copied for 300 µs; before the copy nothing ran, the thread
    // having come out of its sync.
    let idle = &cp["gpu_idle"]["GPU 0"];
    assert_eq!(
        idle["copies_only_ns"],
        u64::from(STEPS - 1) * COPY_NS,
        "{idle}"
    );
    assert_eq!(idle["waiting_for_launches_ns"], 0, "{idle}");
    assert_eq!(
        idle["after_a_sync_ns"].as_i64().unwrap() + idle["copies_only_ns"].as_i64().unwrap(),
        idle["idle_ns"].as_i64().unwrap(),
        "{idle}"
    );
    assert_eq!(cp["length_ns"], full["critical_path"]["length_ns"]);
    assert_eq!(cp["run_ns"], full["run"]["replayed_ns"]);
    let meta = json(&out.join("metadata.json"));
    assert!(
        meta["outputs"]["report"]["critical_path"].is_null(),
        "{}",
        meta["outputs"]["report"]
    );

    // `metron report`, twice: the same files, the section still once.
    let (txt_bytes, json_bytes) = (
        std::fs::read(out.join("summary.txt")).unwrap(),
        std::fs::read(out.join("summary.json")).unwrap(),
    );
    for _ in 0..2 {
        report(&out);
        assert_eq!(
            String::from_utf8(std::fs::read(out.join("summary.txt")).unwrap()).unwrap(),
            String::from_utf8(txt_bytes.clone()).unwrap()
        );
        assert!(std::fs::read(out.join("summary.json")).unwrap() == json_bytes);
    }

    // A summary.json that does not parse is left as it was, and the command says why;
    // summary.txt still takes the section, once.
    std::fs::write(out.join("summary.json"), b"{\"cut\": [1, 2").unwrap();
    let said = report(&out);
    let err = String::from_utf8_lossy(&said.stderr);
    assert!(
        err.contains("the critical path in the summary: summary.json: not a JSON object"),
        "{err}"
    );
    assert_eq!(
        std::fs::read(out.join("summary.json")).unwrap(),
        b"{\"cut\": [1, 2"
    );
    assert!(!out.join("summary.json.partial").exists());
    assert_eq!(std::fs::read(out.join("summary.txt")).unwrap(), txt_bytes);

    if std::env::var_os("KEEP").is_none() {
        let _ = std::fs::remove_dir_all(&dir);
    }
}
