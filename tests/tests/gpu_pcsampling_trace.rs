//! PC sampling's stall annotations in the Perfetto trace, without a GPU: a fake backend submits
//! kernel records, `metron_gpu_nvidia::pc_sampling::replay` feeds recorded CUPTI PC records (laid out
//! as `CUpti_PCSamplingData`, decoded as Metron decodes CUPTI's, in continuous mode), and the
//! run writes its outputs. The trace, decoded by the independent validator with the official
//! Perfetto protos, must have a `PC sampling` track under the kernels' stream track with one
//! slice per launch at the kernel slice's times, whose annotations are the summary's numbers
//! for that kernel (samples, top three stalls and their %, hottest line and its stall).

use metron::gpu::{GpuKind, GpuRecord};
use metron_gpu_nvidia::pc_sampling::{replay, Mode, RecordedBuffer, RecordedPc};
use metron_tests::fake_gpu;
use serde_json::Value;
use std::collections::HashMap;

const CHASE: &str = "_Z5chasePKjPj";
const FMA: &str = "_Z3fmaPf";

/// CUPTI's stall reasons on the H100 that these records use (index, name).
fn reasons() -> Vec<(u32, String)> {
    [
        (0, "smsp__pcsamp_sample_count"),
        (2, "smsp__pcsamp_warps_issue_stalled_barrier"),
        (3, "smsp__pcsamp_warps_issue_stalled_barrier_not_issued"),
        (14, "smsp__pcsamp_warps_issue_stalled_long_scoreboard"),
        (
            15,
            "smsp__pcsamp_warps_issue_stalled_long_scoreboard_not_issued",
        ),
        (22, "smsp__pcsamp_warps_issue_stalled_math_pipe_throttle"),
        (
            23,
            "smsp__pcsamp_warps_issue_stalled_math_pipe_throttle_not_issued",
        ),
        (32, "smsp__pcsamp_warps_issue_stalled_selected"),
        (36, "smsp__pcsamp_warps_issue_stalled_wait"),
        (37, "smsp__pcsamp_warps_issue_stalled_wait_not_issued"),
    ]
    .iter()
    .map(|(i, n)| (*i, n.to_string()))
    .collect()
}

fn pc(function: &str, index: u32, offset: u64, stalls: &[(u32, u32)]) -> RecordedPc {
    RecordedPc {
        crc: 0x193e_71a6,
        function: function.into(),
        function_index: index,
        pc_offset: offset,
        correlation: 0,
        stalls: stalls.to_vec(),
    }
}

fn kernel(name: &str, start: u64, end: u64, corr: u32) -> GpuRecord {
    let mut r = GpuRecord::new(GpuKind::Kernel, name.into());
    r.start_ns = start;
    r.end_ns = end;
    r.stream = 7;
    r.correlation = corr;
    r
}

#[test]
fn stall_annotations_match_the_summary() {
    let dir = fake_gpu::start(
        "metron-pc-trace",
        fake_gpu::no_flush,
        fake_gpu::metadata,
        &["Fake GPU"],
    );
    // Two buffers, as two GetData calls would return them.
    let buffer = |total_samples, pcs| RecordedBuffer {
        total_samples,
        dropped_samples: 0,
        pcs,
    };
    let buffers = vec![
        buffer(
            1324,
            vec![
                pc(CHASE, 0, 0x6f0, &[(14, 900), (15, 850), (36, 10), (32, 4)]),
                pc(CHASE, 0, 0x700, &[(36, 40), (2, 0)]),
                pc(FMA, 1, 0x170, &[(22, 300), (23, 280), (36, 70), (37, 5)]),
            ],
        ),
        buffer(
            348,
            vec![
                pc(CHASE, 0, 0x6f0, &[(14, 100), (36, 6)]),
                pc(FMA, 1, 0x180, &[(22, 200), (32, 30), (2, 12)]),
            ],
        ),
    ];
    let lines: HashMap<(String, u64), (String, u32)> = [
        ((CHASE, 0x6f0), 56),
        ((CHASE, 0x700), 57),
        ((FMA, 0x170), 80),
        ((FMA, 0x180), 81),
    ]
    .iter()
    .map(|&((f, o), l)| ((f.to_string(), o), ("/src/pc_stalls.cu".to_string(), l)))
    .collect();
    replay(Mode::Continuous, reasons(), &buffers, lines);

    let key = metron::intern(metron::gpu::LAUNCH_KEY, metron::CallsiteKind::AnnotationKey);
    for corr in [11u64, 12] {
        let _r = metron::scope!("memory");
        metron::by_id::annotate(key, metron::AnnotationValue::U64(corr));
    }
    {
        let _r = metron::scope!("math");
        metron::by_id::annotate(key, metron::AnnotationValue::U64(13));
    }
    let chase = metron::gpu::demangle_kernel(CHASE);
    let fma = metron::gpu::demangle_kernel(FMA);
    let t0 = metron::clock::monotonic_ns();
    metron::gpu::submit(&[
        kernel(&chase, t0 + 1000, t0 + 9000, 11),
        kernel(&chase, t0 + 10_000, t0 + 19_000, 12),
        kernel(&fma, t0 + 20_000, t0 + 23_000, 13),
    ]);
    let report = metron::finish().expect("finished");
    let out = &report.output_dir;

    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let by_kernel: HashMap<String, &Value> = summary["gpu_pc_sampling"]["by_kernel"]
        .as_array()
        .expect("by_kernel")
        .iter()
        .map(|k| (k["name"].as_str().unwrap().to_string(), k))
        .collect();
    assert_eq!(by_kernel.len(), 2, "{by_kernel:?}");

    let trace = metron_tests::validated_trace(&out.join("trace.pftrace"), &["--slices"]);
    let tracks = trace["tracks"].as_array().unwrap();
    let stream = tracks
        .iter()
        .find(|t| t["name"] == "GPU 0 Fake GPU stream 7")
        .expect("the stream track");
    let notes = tracks
        .iter()
        .find(|t| t["name"] == "GPU 0 Fake GPU stream 7 PC sampling")
        .unwrap_or_else(|| panic!("a PC sampling track: {tracks:?}"));
    assert_eq!(notes["parent"], stream["uuid"], "under the stream's track");
    let slices = trace["slices"].as_array().unwrap();
    let on =
        |t: &Value| -> Vec<&Value> { slices.iter().filter(|s| s["track"] == t["uuid"]).collect() };
    let kernel_slices = on(stream);
    let note_slices = on(notes);
    assert_eq!(note_slices.len(), 3, "one per launch: {note_slices:?}");
    for n in note_slices {
        let a = &n["args"];
        let k = kernel_slices
            .iter()
            .find(|k| k["args"]["correlation_id"] == a["correlation_id"])
            .expect("the kernel slice of the note's correlation id");
        assert_eq!((&n["ts"], &n["dur"]), (&k["ts"], &k["dur"]), "{n} vs {k}");
        assert_eq!(a["kernel"], k["name"]);
        let s = by_kernel[a["kernel"].as_str().unwrap()];
        assert_eq!(a["scope"], "kernel, all launches");
        assert_eq!(a["samples"], s["samples"], "{a}");
        let reasons = s["stall_reasons"].as_array().unwrap();
        for i in 0..3 {
            let r = &reasons[i];
            assert_eq!(a[format!("stall_{}", i + 1)], r["reason"], "{a}");
            assert_eq!(a[format!("stall_{}_percent", i + 1)], r["percent"], "{a}");
        }
        let top = &s["top_lines"][0];
        assert_eq!(a["hottest_line"], top["location"]);
        assert_eq!(a["hottest_line_stall"], top["dominant_stall"]);
        let pct = 100.0 * top["samples"].as_f64().unwrap() / s["samples"].as_f64().unwrap();
        assert_eq!(
            a["hottest_line_percent"].as_f64(),
            Some((pct * 100.0).round() / 100.0)
        );
        assert_eq!(
            n["name"].as_str().unwrap(),
            format!(
                "{} {:.1}%",
                reasons[0]["reason"].as_str().unwrap(),
                reasons[0]["percent"].as_f64().unwrap()
            )
        );
    }
    // The numbers themselves: chase has 1000 long_scoreboard, 56 wait, 4 selected samples.
    let c = by_kernel[&chase];
    assert_eq!(c["samples"], 1060);
    assert_eq!(c["stall_reasons"][0]["reason"], "long_scoreboard");
    assert_eq!(c["top_lines"][0]["location"], "pc_stalls.cu:56");
    let meta: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("metadata.json")).unwrap()).unwrap();
    assert_eq!(meta["outputs"]["trace"]["complete"], true);
    let _ = std::fs::remove_dir_all(&dir);
}
