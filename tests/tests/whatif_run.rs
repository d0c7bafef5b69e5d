//! `metron whatif` on a run folder written by the runtime: regions recorded by the thread,
//! GPU API calls and kernels delivered through a fake backend (no GPU needed). Each `step`
//! spins 200 µs, launches a 2 ms kernel (10 µs after its launch began), synchronizes with it
//! (woken 2 µs after it ends) and spins 100 µs more. With the kernel 50 % faster every step is
//! exactly 1 ms shorter; the replay of the unchanged run gives back every step's recorded time.

mod c_api_support;
use c_api_support::artifacts;
use metron::gpu::{GpuKind, GpuRecord};
use metron_tests::fake_gpu;
use std::process::Command;
use std::sync::Arc;

const STEPS: u32 = 4;
const KERNEL_NS: u64 = 2_000_000;

fn spin_until(t: u64) {
    while metron::clock::monotonic_ns() < t {
        std::hint::spin_loop();
    }
}

#[test]
fn a_faster_kernel_shortens_each_step_by_what_it_saves() {
    let dir = fake_gpu::start(
        "metron-whatif",
        fake_gpu::no_flush,
        fake_gpu::metadata,
        &["Fake GPU"],
    );
    // SAFETY: gettid has no preconditions.
    let tid = u32::try_from(unsafe { libc::gettid() }).expect("a tid");
    let launch: Arc<str> = "cudaLaunchKernel".into();
    let sync: Arc<str> = "cudaStreamSynchronize".into();
    let kernel: Arc<str> = "busy_kernel".into();
    let mut batch = Vec::new();
    for i in 0..STEPS {
        let _step = metron::scope!("step");
        spin_until(metron::clock::monotonic_ns() + 200_000);
        let t = metron::clock::monotonic_ns();
        let corr = i + 1;
        let mut api = GpuRecord::new(GpuKind::RuntimeApi, Arc::clone(&launch));
        (api.start_ns, api.end_ns, api.correlation, api.tid) = (t, t + 5_000, corr, tid);
        let mut k = GpuRecord::new(GpuKind::Kernel, Arc::clone(&kernel));
        (k.start_ns, k.end_ns, k.correlation, k.stream) =
            (t + 10_000, t + 10_000 + KERNEL_NS, corr, 7);
        let mut s = GpuRecord::new(GpuKind::RuntimeApi, Arc::clone(&sync));
        (s.start_ns, s.end_ns, s.correlation, s.tid) =
            (t + 6_000, k.end_ns + 2_000, 1000 + corr, tid);
        spin_until(s.end_ns + 100_000);
        batch.extend([api, k, s]);
    }
    metron::gpu::submit(&batch);
    let out = metron::finish().expect("finished").output_dir;

    // The run wrote its critical path, and report.html shows it.
    let table = std::fs::read_to_string(out.join("critical_path.txt")).expect("critical_path.txt");
    assert!(table.contains("kernel busy_kernel"), "{table}");
    let html = std::fs::read_to_string(out.join("report.html")).expect("report.html");
    assert!(html.contains("id=critical-path-table") && html.contains("kernel busy_kernel"));

    let run = metron_export::Run::read(&out).expect("the run folder reads");
    let graph = metron_whatif::from_run(&run);
    assert_eq!(
        graph.blocked_syncs, STEPS as usize,
        "each sync waited for its kernel"
    );
    let faster = vec![metron_whatif::speedup::Speedup::parse("busy_kernel=50%").unwrap()];
    let answer = metron_whatif::answer::answer(&graph, faster, Some("step")).expect("answered");
    let (_, steps) = answer.per.as_ref().expect("per step");
    assert_eq!(steps.len(), STEPS as usize);
    for s in steps {
        assert_eq!(s.replayed, s.recorded, "{s:?}");
        assert_eq!(s.recorded - s.predicted, (KERNEL_NS / 2) as i64, "{s:?}");
    }
    let kernel_row = answer
        .table
        .iter()
        .find(|r| r.item.label() == "kernel busy_kernel")
        .expect("the kernel is on the critical path");
    assert_eq!(kernel_row.on_path, i64::from(STEPS) * KERNEL_NS as i64);

    // The command says the same.
    let cli = Command::new(artifacts().metron())
        .args([
            "whatif",
            out.to_str().unwrap(),
            "--faster",
            "busy_kernel=50%",
            "--per",
            "step",
            "--json",
        ])
        .output()
        .expect("metron runs");
    assert!(
        cli.status.success(),
        "{}",
        String::from_utf8_lossy(&cli.stderr)
    );
    let json: serde_json::Value = serde_json::from_slice(&cli.stdout).expect("JSON");
    let instances = json["per"]["instances"].as_array().expect("instances");
    assert_eq!(instances.len(), STEPS as usize);
    for (i, s) in instances.iter().zip(steps) {
        assert_eq!(i["predicted_ns"], s.predicted);
    }
    let text = Command::new(artifacts().metron())
        .args([
            "whatif",
            out.to_str().unwrap(),
            "--faster",
            "nothing_like_this=50%",
        ])
        .output()
        .expect("metron runs");
    assert_eq!(text.status.code(), Some(2));
    let err = String::from_utf8_lossy(&text.stderr);
    assert!(
        err.contains("matches no kernel, region or API call") && err.contains("busy_kernel"),
        "{err}"
    );
    if std::env::var_os("KEEP").is_none() {
        let _ = std::fs::remove_dir_all(&dir);
    }
}
