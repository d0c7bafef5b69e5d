//! Loading, evaluating, needed counters and merging of metric files.

use std::collections::BTreeSet;

use metron_metrics::{MetricSet, DEFAULT_CPU_XML};

fn lookup<'v>(vals: &'v [(&'v str, &'v [f64])]) -> impl Fn(&str) -> Option<&'v [f64]> {
    move |n| vals.iter().find(|(k, _)| *k == n).map(|(_, v)| *v)
}

#[test]
fn default_file_loads() {
    let set = MetricSet::default_cpu();
    let arch = set.arch("perf-generic").unwrap();
    let names: Vec<&str> = arch.counters.keys().map(String::as_str).collect();
    for c in [
        "cycles",
        "instructions",
        "cache-references",
        "cache-misses",
        "branch-instructions",
        "branch-misses",
        "L1-dcache-loads",
        "L1-dcache-load-misses",
        "task-clock",
        "page-faults",
        "context-switches",
        "cpu-migrations",
    ] {
        assert!(names.contains(&c), "{c} missing");
    }
    assert_eq!(names.len(), 12);
    assert_eq!(arch.counters["L1-dcache-load-misses"].event, 0x10000);
    assert_eq!(arch.counters["cycles"].block, "hardware");
    let metrics: Vec<&str> = set.metrics().keys().map(String::as_str).collect();
    assert_eq!(
        metrics,
        [
            "CPI",
            "IPC",
            "L1D_miss_ratio",
            "branch_miss_ratio",
            "cache_miss_ratio"
        ]
    );
    assert_eq!(
        set.metric("cache_miss_ratio").unwrap().unit.as_deref(),
        Some("%")
    );
    assert!(DEFAULT_CPU_XML.contains("<metrics>"));
}

#[test]
fn default_metrics_evaluate() {
    let set = MetricSet::default_cpu();
    let vals: &[(&str, &[f64])] = &[
        ("cycles", &[4000.0]),
        ("instructions", &[6000.0]),
        ("cache-references", &[200.0]),
        ("cache-misses", &[50.0]),
        ("branch-instructions", &[1000.0]),
        ("branch-misses", &[20.0]),
        ("L1-dcache-loads", &[800.0]),
        ("L1-dcache-load-misses", &[8.0]),
    ];
    let f = lookup(vals);
    assert_eq!(set.evaluate("IPC", &f).unwrap(), 6000.0 / 4000.0);
    assert_eq!(set.evaluate("CPI", &f).unwrap(), 4000.0 / 6000.0);
    assert_eq!(set.evaluate("cache_miss_ratio", &f).unwrap(), 25.0);
    assert_eq!(set.evaluate("branch_miss_ratio", &f).unwrap(), 2.0);
    assert_eq!(set.evaluate("L1D_miss_ratio", &f).unwrap(), 1.0);
    // A counter is its own (basic) metric; multi-instance values are summed.
    let per_core: &[(&str, &[f64])] = &[
        ("cycles", &[100.0, 300.0]),
        ("instructions", &[50.0, 150.0]),
    ];
    assert_eq!(set.evaluate("cycles", &lookup(per_core)).unwrap(), 400.0);
    assert_eq!(set.evaluate("IPC", &lookup(per_core)).unwrap(), 0.5);
}

const GPU: &str = r#"<?xml version="1.0"?>
<metrics>
  <arch name="gfx9">
    <counter name="L1.MISS" block="L1" event="33" descr="L1 misses"/>
    <counter name="L1.CYCLES" block="L1" event="0"/>
    <counter name="SE.BUSY" block="SE" event="0x10"/>
    <counter name="GRBM_COUNT" block="GRBM" event="0"/>
  </arch>
  <metric name="L1_MISS_RATIO" expr="100*L1.MISS/L1.CYCLES" unit="%"/>
  <metric name="SE_IMBALANCE" expr="max(SE.BUSY) / avg(SE.BUSY)"/>
  <metric name="SE_BUSY_PCT" expr="100 * avg(SE.BUSY) / GRBM_COUNT"/>
  <metric name="SCORE" expr="L1_MISS_RATIO * SE_IMBALANCE - -1"/>
  <metric name="SCORE2" expr="2 * SCORE"/>
</metrics>
"#;

#[test]
fn nested_metrics_and_reductions() {
    let set = MetricSet::from_xml("gpu.xml", GPU).unwrap();
    let vals: &[(&str, &[f64])] = &[
        ("L1.MISS", &[10.0]),
        ("L1.CYCLES", &[40.0]),
        ("SE.BUSY", &[10.0, 30.0, 20.0, 20.0]),
        ("GRBM_COUNT", &[80.0]),
    ];
    let f = lookup(vals);
    assert_eq!(set.evaluate("L1_MISS_RATIO", &f).unwrap(), 25.0);
    assert_eq!(set.evaluate("SE_IMBALANCE", &f).unwrap(), 1.5);
    assert_eq!(set.evaluate("SE_BUSY_PCT", &f).unwrap(), 25.0);
    assert_eq!(set.evaluate("SCORE", &f).unwrap(), 25.0 * 1.5 + 1.0);
    assert_eq!(
        set.evaluate("SCORE2", &f).unwrap(),
        2.0 * (25.0 * 1.5 + 1.0)
    );
}

#[test]
fn needed_counters_transitive() {
    let set = MetricSet::from_xml("gpu.xml", GPU).unwrap();
    let need = set.needed_counters(["SCORE2"]).unwrap();
    let want: BTreeSet<String> = ["L1.CYCLES", "L1.MISS", "SE.BUSY"]
        .into_iter()
        .map(String::from)
        .collect();
    assert_eq!(need, want);
    let need = set
        .needed_counters(["SCORE", "SE_BUSY_PCT", "GRBM_COUNT"])
        .unwrap();
    assert_eq!(need.len(), 4);
    assert!(set
        .needed_counters(Vec::<String>::new())
        .unwrap()
        .is_empty());

    let cpu = MetricSet::default_cpu();
    let need: Vec<String> = cpu
        .needed_counters(["IPC", "CPI"])
        .unwrap()
        .into_iter()
        .collect();
    assert_eq!(need, ["cycles", "instructions"]);
}

#[test]
fn user_file_overrides_and_adds() {
    let user = r#"<metrics>
  <arch name="perf-generic">
    <counter name="stalled-cycles-frontend" block="hardware" event="7"/>
  </arch>
  <metric name="IPC" expr="instructions / (cycles - stalled-cycles-frontend)" descr="IPC excluding frontend stalls"/>
  <metric name="IPC_x100" expr="100 * IPC"/>
</metrics>"#;
    let dir = std::env::temp_dir().join(format!("metron-metrics-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("user.xml");
    std::fs::write(&path, user).unwrap();
    let set = MetricSet::default_cpu_with_user_file(&path).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();

    let vals: &[(&str, &[f64])] = &[
        ("cycles", &[1000.0]),
        ("instructions", &[1200.0]),
        ("stalled-cycles-frontend", &[200.0]),
    ];
    let f = lookup(vals);
    assert_eq!(set.evaluate("IPC", &f).unwrap(), 1.5);
    assert_eq!(set.evaluate("IPC_x100", &f).unwrap(), 150.0);
    assert_eq!(set.evaluate("CPI", &f).unwrap(), 1000.0 / 1200.0);
    assert_eq!(
        set.metric("IPC").unwrap().description.as_deref(),
        Some("IPC excluding frontend stalls")
    );
    assert!(set
        .metric("IPC")
        .unwrap()
        .location
        .file
        .ends_with("user.xml"));
    assert_eq!(set.arch("perf-generic").unwrap().counters.len(), 13);
    assert_eq!(
        set.needed_counters(["IPC_x100"])
            .unwrap()
            .into_iter()
            .collect::<Vec<_>>(),
        ["cycles", "instructions", "stalled-cycles-frontend"]
    );
}

#[test]
fn failed_merge_leaves_set_unchanged() {
    let mut set = MetricSet::default_cpu();
    let before = set.clone();
    let err = set
        .merge_xml(
            "user.xml",
            "<metrics>\n  <metric name=\"CPI\" expr=\"1 / IPC\"/>\n  <metric name=\"IPC\" expr=\"1 / CPI\"/>\n</metrics>",
        )
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "user.xml:3:32: metrics refer to each other in a cycle: CPI -> IPC -> CPI"
    );
    assert_eq!(set, before);
}
