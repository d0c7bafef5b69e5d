//! Region-mode GPU counter values that arrive after their region ended, without a GPU: C-style
//! regions carry their range number (`gpu.counters_range`), the backend's outcomes come later
//! by that number (as its evaluation thread delivers them), and the summary joins them per
//! region name: values, NaN with the reason (also for a range whose values never came), and a
//! metric set of several passes marked "combined over N passes of M instances".

use metron::sinks::gpu_region_ranges::{self as late, RangeOutcome};
use metron_tests::fake_gpu;

#[test]
fn late_counter_values_join_their_region_instances_in_the_summary() {
    fake_gpu::start(
        "metron-gpu-late-values",
        fake_gpu::no_flush,
        fake_gpu::metadata,
        &["Fake GPU A"],
    );
    late::set_columns(vec!["smsp__inst_executed.sum".into()]);
    let range = metron::intern(late::RANGE_KEY, metron::CallsiteKind::AnnotationKey);
    let instance = |name_range: (&'static str, u64)| match name_range.0 {
        "step" => {
            let _r = metron::scope!("step");
            metron::by_id::annotate(range, metron::AnnotationValue::U64(name_range.1));
        }
        "loop" => {
            let _r = metron::scope!("loop");
            metron::by_id::annotate(range, metron::AnnotationValue::U64(name_range.1));
        }
        _ => {
            let _r = metron::scope!("once");
            metron::by_id::annotate(range, metron::AnnotationValue::U64(name_range.1));
        }
    };
    for i in 1..=4 {
        instance(("step", i));
    }
    for i in 5..=8 {
        instance(("loop", i));
    }
    instance(("once", 9));
    // The outcomes, out of order, after the regions ended; range 4's never comes.
    late::record(vec![
        (2, RangeOutcome::Values(vec![300.0])),
        (9, RangeOutcome::Nan("repeated only 1 time(s)".into())),
        (1, RangeOutcome::Values(vec![100.0])),
        (
            3,
            RangeOutcome::Nan("a region of thread 7 overlapped".into()),
        ),
        (
            5,
            RangeOutcome::Combined {
                values: vec![10.0],
                passes: 2,
            },
        ),
        (6, RangeOutcome::PassOf { first: 5 }),
        (
            7,
            RangeOutcome::Combined {
                values: vec![30.0],
                passes: 2,
            },
        ),
        (8, RangeOutcome::PassOf { first: 7 }),
    ]);
    // A run with counted regions has kernels (the summary's GPU section needs records).
    let mut k = metron::gpu::GpuRecord::new(metron::gpu::GpuKind::Kernel, "fma_kernel".into());
    k.start_ns = metron::clock::monotonic_ns();
    k.end_ns = k.start_ns + 1000;
    metron::gpu::submit(&[k]);
    let report = metron::finish().expect("finish");

    let json: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(report.output_dir.join("summary.json")).unwrap(),
    )
    .unwrap();
    let rows = json["gpu"]["gpu_counters"]["by_region"]
        .as_array()
        .unwrap()
        .clone();
    let row = |name: &str| rows.iter().find(|r| r["region"] == name).unwrap().clone();
    let step = row("step");
    assert_eq!(step["sums"]["smsp__inst_executed.sum"], 400.0, "{step}");
    assert_eq!(step["stats"]["smsp__inst_executed.sum"]["count"], 2);
    assert_eq!(step["nan"], 2, "{step}");
    let reasons = step["nan_reasons"].to_string();
    assert!(
        reasons.contains("thread 7") && reasons.contains("never decoded"),
        "{reasons}"
    );
    assert!(step["combined"].is_null());
    let looped = row("loop");
    assert_eq!(looped["stats"]["smsp__inst_executed.sum"]["mean"], 20.0);
    assert_eq!(looped["stats"]["smsp__inst_executed.sum"]["min"], 10.0);
    assert_eq!(looped["combined"]["passes"], 2);
    assert_eq!(looped["combined"]["instances"], 4);
    assert_eq!(
        looped["combined"]["note"],
        "combined over 2 passes of 4 instances"
    );
    assert_eq!(row("once")["nan"], 1);

    let text = std::fs::read_to_string(report.output_dir.join("summary.txt")).unwrap();
    let table = text
        .split("GPU counters by region (region mode)")
        .nth(1)
        .unwrap_or_else(|| panic!("no region counter table:\n{text}"));
    assert!(
        table.contains("loop  (combined over 2 passes of 4 instances"),
        "{table}"
    );
    assert!(
        table.contains("once  (1 NaN: repeated only 1 time(s))"),
        "{table}"
    );
    let _ = std::fs::remove_dir_all(&report.output_dir);
}
