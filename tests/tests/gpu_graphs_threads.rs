//! Graph and thread bookkeeping without a GPU, with synthetic CUPTI-shaped records through a fake
//! backend: CUDA graph kernels (one correlation id, several nodes) join the region open on the
//! launching thread at the graph launch and get their graph and node ids and their per-node
//! counter ranges in order; launches on two threads and two devices keep their regions,
//! threads and device ids; a launch that could not be profiled reads NaN with its reason;
//! region-mode counter values (the `gpu.<metric>` annotations) become the summary's "GPU
//! counters by region" table and `gpu_counters.by_region`.

use metron::gpu::{GpuKind, GpuRecord};
use metron::sinks::kernels_csv;
use metron_tests::fake_gpu;

fn kernel(name: &str, start: u64, corr: u32, device: u32, stream: u32) -> GpuRecord {
    let mut r = GpuRecord::new(GpuKind::Kernel, name.into());
    r.start_ns = start;
    r.end_ns = start + 1000;
    r.correlation = corr;
    r.device = device;
    r.stream = stream;
    r.grid = [4, 1, 1];
    r.block = [128, 1, 1];
    r
}

fn rows(text: &str) -> Vec<std::collections::HashMap<String, String>> {
    let mut lines = text.lines().filter(|l| !l.starts_with('#'));
    let header: Vec<String> = split(lines.next().unwrap());
    lines
        .map(|l| header.iter().cloned().zip(split(l)).collect())
        .collect()
}

/// CSV fields (quoted fields may hold commas).
fn split(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    for c in line.chars() {
        match c {
            '"' => quoted = !quoted,
            ',' if !quoted => out.push(std::mem::take(&mut cur)),
            c => cur.push(c),
        }
    }
    out.push(cur);
    out
}

#[test]
fn graphs_threads_devices_and_region_counters_reach_the_outputs() {
    fake_gpu::start(
        "metron-gpu-graphs",
        fake_gpu::no_flush,
        fake_gpu::metadata,
        &["Fake GPU A", "Fake GPU B"],
    );
    kernels_csv::set_counter_metrics(vec!["smsp__inst_executed.sum".into()], Vec::new());
    let key = metron::intern(metron::gpu::LAUNCH_KEY, metron::CallsiteKind::AnnotationKey);
    let inst = metron::intern(
        "gpu.smsp__inst_executed.sum",
        metron::CallsiteKind::AnnotationKey,
    );
    let error = metron::intern("gpu.counters_error", metron::CallsiteKind::AnnotationKey);
    let t0 = metron::clock::monotonic_ns();

    // Two launching threads, one region each; thread A also launches a graph (corr 21).
    let a = std::thread::spawn(move || {
        let _r = metron::scope!("graph_replay");
        metron::by_id::annotate(key, metron::AnnotationValue::U64(21));
    });
    let b = std::thread::spawn(move || {
        let _r = metron::scope!("worker1");
        metron::by_id::annotate(key, metron::AnnotationValue::U64(31));
        metron::by_id::annotate(key, metron::AnnotationValue::U64(32));
    });
    a.join().unwrap();
    b.join().unwrap();
    // Region-mode values: two counted instances and one that read NaN.
    for v in [100.0, 300.0] {
        let _r = metron::scope!("counted");
        metron::by_id::annotate(inst, metron::AnnotationValue::F64(v));
    }
    {
        let _r = metron::scope!("counted");
        metron::by_id::annotate(
            error,
            metron::AnnotationValue::Str("a region of thread 7 is counted at the same time"),
        );
    }

    // The graph launch ran three kernel nodes and a memset node; CUPTI gave three ranges.
    kernels_csv::record_launch_ranges(
        21,
        vec![
            ("0".into(), vec![11.0]),
            ("1".into(), vec![22.0]),
            ("2".into(), vec![33.0]),
        ],
    );
    kernels_csv::record_kernel_counters(31, vec![44.0]);
    kernels_csv::record_kernel_nan(
        32,
        "launched while a CUDA stream capture was in progress".into(),
    );
    let mut api = GpuRecord::new(GpuKind::RuntimeApi, "cudaGraphLaunch".into());
    api.start_ns = t0 + 10;
    api.end_ns = t0 + 500;
    api.correlation = 21;
    api.tid = 4242;
    let mut records = vec![api];
    for (i, name) in ["saxpy", "fma_loop", "block_sum"].iter().enumerate() {
        let mut k = kernel(name, t0 + 1000 + 2000 * i as u64, 21, 0, 9);
        k.graph_id = 2;
        k.graph_node = 40 + i as u64;
        records.push(k);
    }
    let mut set = GpuRecord::new(GpuKind::Memset, "Memset".into());
    set.start_ns = t0 + 900;
    set.end_ns = t0 + 950;
    set.correlation = 21;
    set.stream = 9;
    set.graph_id = 2;
    set.graph_node = 39;
    records.push(set);
    records.push(kernel("saxpy", t0 + 20_000, 31, 1, 13));
    records.push(kernel("saxpy", t0 + 30_000, 32, 1, 14));
    metron::gpu::submit(&records);
    let report = metron::finish().expect("first finish");

    let csv = std::fs::read_to_string(report.output_dir.join("kernels.csv")).unwrap();
    let rows = rows(&csv);
    assert_eq!(rows.len(), 5, "{csv}");
    let graph: Vec<_> = rows.iter().filter(|r| r["GraphId"] == "2").collect();
    assert_eq!(graph.len(), 3, "{csv}");
    for (i, r) in graph.iter().enumerate() {
        assert_eq!(r["Region"], "graph_replay", "{csv}");
        assert_eq!(r["GraphNodeId"], (40 + i).to_string());
        assert_eq!(r["ThreadID"], "4242", "the graph launch's API thread");
        assert_eq!(r["smsp__inst_executed.sum"], ((i + 1) * 11).to_string());
    }
    let w: Vec<_> = rows.iter().filter(|r| r["Region"] == "worker1").collect();
    assert_eq!(w.len(), 2, "{csv}");
    // No API record: the launching thread comes from the join, one thread for both.
    assert!(w
        .iter()
        .all(|r| r["Device"] == "1" && !r["ThreadID"].is_empty()));
    assert_eq!(w[0]["ThreadID"], w[1]["ThreadID"]);
    assert_ne!(w[0]["ThreadID"], "4242");
    assert!(w.iter().all(|r| r["Method"].contains("Fake GPU B")));
    assert_eq!(w[0]["smsp__inst_executed.sum"], "44");
    assert_eq!(w[1]["smsp__inst_executed.sum"], "nan");
    assert!(w[1]["CounterNote"].contains("stream capture"), "{csv}");

    let summary = std::fs::read_to_string(report.output_dir.join("summary.txt")).unwrap();
    let table = summary
        .split("GPU counters by region (region mode)")
        .nth(1)
        .unwrap_or_else(|| panic!("no region counter table:\n{summary}"));
    let counted = table.lines().find(|l| l.contains("counted")).unwrap();
    assert!(counted.contains("1 NaN: a region of thread 7"), "{table}");
    let line = table
        .lines()
        .find(|l| l.ends_with("smsp__inst_executed.sum"))
        .unwrap();
    let cols: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(&cols[..5], &["2", "400", "200.0", "100", "300"], "{line}");
    let json: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(report.output_dir.join("summary.json")).unwrap(),
    )
    .unwrap();
    let by_region = &json["gpu"]["gpu_counters"]["by_region"][0];
    assert_eq!(by_region["region"], "counted");
    assert_eq!(by_region["sums"]["smsp__inst_executed.sum"], 400.0);
    assert_eq!(by_region["stats"]["smsp__inst_executed.sum"]["count"], 2);
    assert_eq!(by_region["nan"], 1);

    // Tracks of both devices in the trace, graph annotations on the nodes.
    let trace = std::fs::read(report.output_dir.join("trace.pftrace")).unwrap();
    let text = String::from_utf8_lossy(&trace);
    assert!(text.contains("GPU 0 Fake GPU A stream 9"));
    assert!(text.contains("GPU 1 Fake GPU B stream 13"));
    assert_eq!(text.matches("graph_node_id").count(), 4);
    let _ = std::fs::remove_dir_all(&report.output_dir);
}
