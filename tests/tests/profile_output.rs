//! Call-stack samples become a flat profile and a call tree in `summary.txt`/`summary.json`,
//! `stacks.folded` for flame graph tools, and callstack samples on the thread tracks of
//! `trace.pftrace`; a backtrace taken at a region's start is listed under the region ("called
//! from") and is not counted as a sample.
//!
//! The samples are real stacks of this test binary (captured with glibc's `backtrace(3)`
//! inside `#[inline(never)]` functions), fed to the sinks as `Event::Sample`s with known
//! proportions: 300 samples in `leaf_a`, 100 in `leaf_b`, both called from `outer_work`.

use metron::sinks::folded::FoldedSink;
use metron::sinks::perfetto::{Categories, PerfettoConfig, PerfettoSink, TraceFillPolicy};
use metron::sinks::summary::{SummaryConfig, SummarySink};
use metron::{Callsite, CallsiteKind, Event, RunInfo, SampleTrigger, Sink, ThreadInfo};
use serde_json::Value;
use std::ffi::{c_int, c_void};
use std::path::{Path, PathBuf};
use std::process::Command;

extern "C" {
    /// glibc `backtrace(3)`: return addresses of the calling thread, innermost first.
    fn backtrace(buffer: *mut *mut c_void, size: c_int) -> c_int;
}

static REGION: Callsite = Callsite::new(
    "load",
    file!(),
    line!(),
    module_path!(),
    CallsiteKind::Region,
    &[],
);

/// The return addresses of the caller's stack; `[0]` is inside the function that called this.
#[inline(never)]
fn capture() -> Vec<u64> {
    let mut buf = [std::ptr::null_mut::<c_void>(); 64];
    // SAFETY: `buf` has room for the 64 entries `backtrace` may write.
    let n = unsafe { backtrace(buf.as_mut_ptr(), buf.len() as c_int) };
    // [0] returns into `capture`, [1] into its caller.
    buf[1..n.max(1) as usize]
        .iter()
        .map(|p| *p as u64)
        .collect()
}

// The constants keep the two from being merged into one function by the optimizer.
#[inline(never)]
fn leaf_a() -> Vec<u64> {
    std::hint::black_box(0xa);
    std::hint::black_box(capture())
}

#[inline(never)]
fn leaf_b() -> Vec<u64> {
    std::hint::black_box(0xb);
    std::hint::black_box(capture())
}

/// A sample's stack: the first address (inside the leaf) stands for the interrupted
/// instruction, the rest are return addresses.
#[inline(never)]
fn outer_work() -> (Vec<u64>, Vec<u64>, Vec<u64>) {
    let a = leaf_a();
    let b = leaf_b();
    let region = std::hint::black_box(capture());
    (a, b, region)
}

fn thread(tid: u32, name: &str, index: u64) -> ThreadInfo {
    ThreadInfo {
        tid,
        name: name.into(),
        index,
        is_metron: false,
    }
}

fn run_dir() -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "metron-profile-output-{}-{}",
        std::process::id(),
        metron::clock::monotonic_ns()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn feed(sinks: &mut [Box<dyn Sink>], dir: &Path) -> (u32, u32) {
    let (a, b, region) = outer_work();
    let start = metron::clock::monotonic_ns();
    let main_tid = std::process::id();
    let worker_tid = main_tid + 1;
    let main = thread(main_tid, "main", 0);
    let worker = thread(worker_tid, "worker", 1);
    let mut main_events = Vec::new();
    let mut worker_events = Vec::new();
    for i in 0..400u64 {
        let (frames, events) = if i % 4 == 3 {
            (&b, &mut worker_events)
        } else {
            (&a, &mut main_events)
        };
        events.push(Event::Sample {
            ts_ns: start + i * 1_000_000,
            frames,
            trigger: SampleTrigger::CpuTime,
        });
    }
    // A region with a backtrace at its start, on the main thread.
    let begin = start + 500_000;
    let region_events = [
        Event::Begin {
            ts_ns: begin,
            site: &REGION,
        },
        Event::Sample {
            ts_ns: begin,
            frames: &region,
            trigger: SampleTrigger::RegionBegin(&REGION),
        },
        Event::End {
            begin_ns: begin,
            ts_ns: begin + 10_000,
            site: &REGION,
            values: &[],
            closed_by_metron: false,
        },
    ];
    // Metron's own flusher, sampled too: in the trace and the folded stacks, not in the
    // merged profile.
    let flusher = ThreadInfo {
        is_metron: true,
        ..thread(main_tid + 2, "metron-flusher", 2)
    };
    let flusher_events: Vec<Event<'_>> = (0..50u64)
        .map(|i| Event::Sample {
            ts_ns: start + i * 1_000_000,
            frames: &a,
            trigger: SampleTrigger::CpuTime,
        })
        .collect();
    for sink in sinks.iter_mut() {
        sink.events(&flusher, &flusher_events);
        sink.events(&main, &region_events);
        // Delivered in several batches, as the flusher does.
        for chunk in main_events.chunks(64) {
            sink.events(&main, chunk);
        }
        sink.events(&worker, &worker_events);
    }
    let run = RunInfo {
        output_dir: dir.to_path_buf(),
        pid: std::process::id(),
        exe: "profile_output".into(),
        argv: vec![],
        hostname: "test".into(),
        start_realtime_ns: 0,
        start_ns: start,
        end_ns: start + 401_000_000,
    };
    for sink in sinks.iter_mut() {
        sink.finish(&run).expect("sink finished");
    }
    (main_tid, worker_tid)
}

fn function<'a>(profile: &'a Value, name: &str) -> &'a Value {
    profile["functions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["function"].as_str().unwrap().ends_with(name))
        .unwrap_or_else(|| panic!("no function {name} in {:#}", profile["functions"]))
}

fn python(script: &str, trace: &Path) -> (Value, bool, String) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("perfetto")
        .join(script);
    let out = Command::new("python3")
        .arg(path)
        .arg(trace)
        .output()
        .expect("python3 runs");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_ne!(
        out.status.code(),
        Some(2),
        "{script} could not run: {stderr}"
    );
    let json = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{script} output is not JSON ({e}): {stderr}"));
    (json, out.status.success(), stderr)
}

/// The one test of this file that starts a Perfetto session (one per process).
#[test]
fn samples_become_a_profile_folded_stacks_and_trace_callstacks() {
    let dir = run_dir();
    let config = PerfettoConfig {
        file_name: "trace.pftrace".into(),
        buffer_bytes: 4 << 20,
        fill_policy: TraceFillPolicy::Discard,
        categories: Categories::ALL,
        write_interval: None,
        segment_bytes: 64 << 10,
        max_file_bytes: None,
    };
    // Per-thread stacks (`METRON_SAMPLING_PER_THREAD`); the default, merged, is below.
    let mut sinks: Vec<Box<dyn Sink>> = vec![
        Box::new(SummarySink::with_config(SummaryConfig {
            sampling_per_thread: true,
            ..SummaryConfig::default()
        })),
        Box::new(FoldedSink::per_thread(true)),
        Box::new(PerfettoSink::new(config, dir.clone())),
    ];
    let (main_tid, worker_tid) = feed(&mut sinks, &dir);

    // summary.json: the flat profile, with the known proportions.
    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap();
    let sampling = &summary["sampling"];
    let profiles = sampling["profiles"].as_array().unwrap();
    assert_eq!(profiles.len(), 1, "{sampling:#}");
    let p = &profiles[0];
    assert_eq!(p["clock"], "cpu_time");
    assert_eq!(
        p["samples"], 400,
        "neither the region backtrace nor Metron's own thread is counted"
    );
    let a = function(p, "leaf_a");
    let b = function(p, "leaf_b");
    let outer = function(p, "outer_work");
    let pct = |v: &Value| v.as_f64().unwrap();
    assert!((pct(&a["inclusive_pct"]) - 75.0).abs() < 1e-9, "{a}");
    assert!((pct(&b["inclusive_pct"]) - 25.0).abs() < 1e-9, "{b}");
    assert!(
        (pct(&outer["inclusive_pct"]) - 100.0).abs() < 1e-9,
        "{outer}"
    );
    assert_eq!(outer["self"], 0, "{outer}");
    // Self time lands on the innermost frame: leaf_a itself or a callee inlined into it.
    let self_total: u64 = p["functions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["self"].as_u64().unwrap())
        .sum();
    assert_eq!(self_total, 400);
    assert!(
        a["file"].as_str().unwrap().ends_with("profile_output.rs"),
        "{a}"
    );
    // By line: the lines of leaf_a that called `capture` are 75 % inclusive.
    let line = p["lines"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["function"].as_str().unwrap().ends_with("leaf_a"))
        .expect("a line of leaf_a");
    assert!(
        line["location"]
            .as_str()
            .unwrap()
            .contains("profile_output.rs:"),
        "{line}"
    );
    assert!((pct(&line["inclusive_pct"]) - 75.0).abs() < 1e-9, "{line}");
    // The call tree: ... -> outer_work -> leaf_a (300) and leaf_b (100), merged over threads.
    fn find<'a>(nodes: &'a Value, name: &str) -> Option<&'a Value> {
        nodes.as_array()?.iter().find_map(|n| {
            if n["function"].as_str()?.ends_with(name) {
                Some(n)
            } else {
                find(&n["children"], name)
            }
        })
    }
    let tree_outer = find(&p["call_tree"], "outer_work").expect("outer_work in the call tree");
    assert_eq!(tree_outer["total"], 400);
    assert_eq!(
        find(&tree_outer["children"], "leaf_a").unwrap()["total"],
        300
    );
    assert_eq!(
        find(&tree_outer["children"], "leaf_b").unwrap()["total"],
        100
    );
    let by_thread = p["call_tree_by_thread"].as_array().unwrap();
    assert_eq!(by_thread.len(), 3);
    assert_eq!(by_thread[0]["samples"], 300);
    assert_eq!(by_thread[1]["samples"], 100);
    assert_eq!(by_thread[2]["samples"], 50);
    assert_eq!(by_thread[2]["is_metron"], true);
    // The region backtrace: "called from" outer_work.
    let rb = &sampling["region_backtraces"][0];
    assert_eq!(rb["region"], "load");
    assert_eq!(rb["count"], 1);
    let frames: Vec<&str> = rb["called_from"][0]["frames"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_str().unwrap())
        .collect();
    // Innermost first: outer_work (or a callee inlined into it, `black_box`), then its callers.
    assert!(
        frames[..2].iter().any(|f| f.contains("outer_work")),
        "{frames:?}"
    );
    assert!(
        frames
            .iter()
            .any(|f| f.contains("samples_become_a_profile")),
        "{frames:?}"
    );

    // summary.txt
    let text = std::fs::read_to_string(dir.join("summary.txt")).unwrap();
    assert!(
        text.contains("sampled profile (cpu_time): 400 samples on 2 threads"),
        "{text}"
    );
    assert!(text.contains("leaf_a") && text.contains("call tree, merged over threads"));
    assert!(text.contains("region backtraces"));

    // stacks.folded: thread;outer;...;inner count, outermost first.
    let folded = std::fs::read_to_string(dir.join("stacks.folded")).unwrap();
    let line_a = folded
        .lines()
        .find(|l| l.contains("leaf_a"))
        .unwrap_or_else(|| panic!("{folded}"));
    assert!(line_a.starts_with(&format!("main-{main_tid};")), "{line_a}");
    assert!(line_a.ends_with(" 300"), "{line_a}");
    let (o, l) = (
        line_a.find("outer_work").unwrap(),
        line_a.find("leaf_a").unwrap(),
    );
    assert!(o < l, "outermost first: {line_a}");
    let line_b = folded.lines().find(|l| l.contains("leaf_b")).unwrap();
    assert!(line_b.starts_with(&format!("worker-{worker_tid};")) && line_b.ends_with(" 100"));
    let total: u64 = folded
        .lines()
        .map(|l| l.rsplit_once(' ').unwrap().1.parse::<u64>().unwrap())
        .sum();
    assert_eq!(total, 450);
    assert!(folded
        .lines()
        .any(|l| l.starts_with("metron-flusher-") && l.ends_with(" 50")));
    assert!(!folded.contains("\n\n"));

    // trace.pftrace: PerfSamples on the threads, callstacks resolve to the functions.
    let trace = dir.join("trace.pftrace");
    let (t, ok, stderr) = python("trace_samples.py", &trace);
    assert!(ok, "trace_samples.py: {stderr}\n{:#}", t["errors"]);
    let samples = t["samples"].as_array().unwrap();
    assert_eq!(samples.len(), 450);
    let on_main: Vec<&Value> = samples.iter().filter(|s| s["tid"] == main_tid).collect();
    assert_eq!(on_main.len(), 300);
    assert!(samples.iter().all(|s| s["pid"] == std::process::id()));
    let frames: Vec<&str> = on_main[0]["frames"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_str().unwrap())
        .collect();
    let oi = frames
        .iter()
        .position(|f| f.contains("outer_work"))
        .expect("outer_work");
    let li = frames
        .iter()
        .position(|f| f.contains("leaf_a"))
        .expect("leaf_a");
    assert!(oi < li, "outermost first: {frames:?}");
    assert!(frames[li].contains("profile_output.rs:"), "{frames:?}");
    // The thread track of that tid exists.
    assert!(t["thread_tracks"]
        .as_object()
        .unwrap()
        .values()
        .any(|v| v["tid"] == main_tid));
    let bt = t["backtraces"].as_array().unwrap();
    assert_eq!(bt.len(), 1, "{bt:?}");
    assert_eq!(bt[0]["name"], "metron: backtrace");
    assert_eq!(bt[0]["region"], "load");
    assert!(bt[0]["frames"].to_string().contains("outer_work"));
    // The structural validator still passes with the samples in the trace.
    let (v, ok, stderr) = python("validate_trace.py", &trace);
    assert!(ok, "validate_trace.py: {stderr}\n{:#}", v["checks"]);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn threads_are_merged_by_default_rooted_at_the_program() {
    let dir = run_dir();
    let mut sinks: Vec<Box<dyn Sink>> =
        vec![Box::new(SummarySink::new()), Box::new(FoldedSink::new())];
    feed(&mut sinks, &dir);
    let folded = std::fs::read_to_string(dir.join("stacks.folded")).unwrap();
    let count = |root: &str, leaf: &str| -> u64 {
        folded
            .lines()
            .filter(|l| l.starts_with(&format!("{root};")) && l.contains(leaf))
            .map(|l| l.rsplit_once(' ').unwrap().1.parse::<u64>().unwrap())
            .sum()
    };
    // The main thread's 300 and the worker's 100 under one root; the flusher's 50 apart.
    assert_eq!(count("profile_output", "leaf_a"), 300, "{folded}");
    assert_eq!(count("profile_output", "leaf_b"), 100, "{folded}");
    assert_eq!(count("metron:metron-flusher", "leaf_a"), 50, "{folded}");
    assert!(
        folded
            .lines()
            .all(|l| l.starts_with("profile_output;") || l.starts_with("metron:metron-flusher;")),
        "{folded}"
    );
    // summary.json: one call tree, merged; no tree per thread unless asked.
    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap();
    let p = &summary["sampling"]["profiles"][0];
    assert!(p.get("call_tree_by_thread").is_none(), "{p:#}");
    assert_eq!(p["threads"].as_array().unwrap().len(), 3);
    assert!(p["call_tree_nodes"]["shown"].as_u64().unwrap() > 0);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_run_without_samples_writes_no_stacks_file_and_an_empty_sampling_section() {
    let dir = run_dir();
    let mut sinks: Vec<Box<dyn Sink>> =
        vec![Box::new(SummarySink::new()), Box::new(FoldedSink::new())];
    let run = RunInfo {
        output_dir: dir.clone(),
        pid: std::process::id(),
        exe: "profile_output".into(),
        argv: vec![],
        hostname: "test".into(),
        start_realtime_ns: 0,
        start_ns: 0,
        end_ns: 1,
    };
    for s in sinks.iter_mut() {
        s.finish(&run).unwrap();
    }
    assert!(!dir.join("stacks.folded").exists());
    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["sampling"]["profiles"], serde_json::json!([]));
    assert_eq!(
        summary["sampling"]["region_backtraces"],
        serde_json::json!([])
    );
    let _ = std::fs::remove_dir_all(&dir);
}
