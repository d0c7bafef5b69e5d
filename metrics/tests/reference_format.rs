//! Metric files in the layout of the reference (`rocprofiler-library-spec.txt`): top-level `<gfxN>` sections of `<metric name block event>` counters and a
//! `<global>` section of `<metric name expr>` derived metrics, with or without a wrapping
//! root, attribute values quoted or not.

use metron_metrics::{MetricSet, MetricsError};

/// The spec's example, completed: two architecture sections and a global one, no root,
/// values unquoted as the spec writes them.
const SPEC_LAYOUT: &str = "<gfx8>
\t<metric name=L1_CYCLES_COUNTER block=L1 event=0 ></metric>
\t<metric name=L1_MISS_COUNTER block=L1 event=33 ></metric>
</gfx8>

<gfx9>
\t<metric name=L1_CYCLES_COUNTER block=L1 event=1 descr=\"L1 cycles\"></metric>
\t<metric name=L1_MISS_COUNTER block=L1 event=0x22 ></metric>
</gfx9>

<global>
\t<metric name=L1_MISS_RATIO expr=100*L1_MISS_COUNTER/L1_CYCLES_COUNTER ></metric>
\t<metric name=\"L1_HITS\" expr=\"L1_CYCLES_COUNTER - L1_MISS_COUNTER\" descr=\"hits\"></metric>
</global>
";

fn check_spec_layout(set: &MetricSet) {
    let gfx8 = set.arch("gfx8").expect("gfx8 section");
    assert_eq!(gfx8.counters["L1_MISS_COUNTER"].block, "L1");
    assert_eq!(gfx8.counters["L1_MISS_COUNTER"].event, 33);
    assert_eq!(gfx8.counters["L1_CYCLES_COUNTER"].event, 0);
    let gfx9 = set.arch("gfx9").expect("gfx9 section");
    assert_eq!(gfx9.counters["L1_MISS_COUNTER"].event, 0x22);
    assert_eq!(
        gfx9.counters["L1_CYCLES_COUNTER"].description.as_deref(),
        Some("L1 cycles")
    );
    let ratio = set.metric("L1_MISS_RATIO").expect("global metric");
    assert_eq!(ratio.expr.source(), "100*L1_MISS_COUNTER/L1_CYCLES_COUNTER");
    let values = |n: &str| match n {
        "L1_MISS_COUNTER" => Some(&[25.0][..]),
        "L1_CYCLES_COUNTER" => Some(&[200.0][..]),
        _ => None,
    };
    assert_eq!(set.evaluate("L1_MISS_RATIO", &values).unwrap(), 12.5);
    assert_eq!(set.evaluate("L1_HITS", &values).unwrap(), 175.0);
    assert_eq!(
        set.needed_counters(["L1_MISS_RATIO"])
            .unwrap()
            .into_iter()
            .collect::<Vec<_>>(),
        ["L1_CYCLES_COUNTER", "L1_MISS_COUNTER"]
    );
}

#[test]
fn the_spec_layout_without_a_root_loads() {
    let set = MetricSet::from_xml("rocprof.xml", SPEC_LAYOUT).unwrap();
    check_spec_layout(&set);
    assert_eq!(
        set.arch("gfx9").unwrap().location.to_string(),
        "rocprof.xml:6:1"
    );
    assert_eq!(
        set.metric("L1_HITS").unwrap().location.to_string(),
        "rocprof.xml:13:2"
    );
}

#[test]
fn the_spec_layout_inside_a_metrics_root_or_after_a_declaration_loads() {
    let rooted = format!("<metrics>\n{SPEC_LAYOUT}</metrics>\n");
    check_spec_layout(&MetricSet::from_xml("rooted.xml", &rooted).unwrap());
    let declared = format!("<?xml version=\"1.0\"?>\n{SPEC_LAYOUT}");
    check_spec_layout(&MetricSet::from_xml("declared.xml", &declared).unwrap());
    // One section alone is a document with that section as its root.
    let single = MetricSet::from_xml(
        "one.xml",
        "<gfx90a><metric name=\"SQ_WAVES\" block=\"SQ\" event=\"4\"/></gfx90a>",
    )
    .unwrap();
    assert_eq!(single.arch("gfx90a").unwrap().counters["SQ_WAVES"].event, 4);
    // rocprofiler's files comment with '#' lines between sections.
    let commented = format!("# GFX counters\n{SPEC_LAYOUT}# end\n");
    check_spec_layout(&MetricSet::from_xml("commented.xml", &commented).unwrap());
}

#[test]
fn a_rocprofiler_file_adds_to_the_built_in_metrics() {
    let mut set = MetricSet::default_cpu();
    set.merge_xml("rocprof.xml", SPEC_LAYOUT).unwrap();
    check_spec_layout(&set);
    assert!(set.metric("IPC").is_some());
}

fn load_err(text: &str) -> String {
    MetricSet::from_xml("rocprof.xml", text)
        .unwrap_err()
        .to_string()
}

#[test]
fn errors_in_the_spec_layout_keep_file_line_and_column() {
    // An expression error in <global>, after unquoted values: the column is the file's.
    let text = SPEC_LAYOUT.replace("100*L1_MISS_COUNTER/", "100*L1_MISS_COUNTER/*");
    assert_eq!(
        load_err(&text),
        "rocprof.xml:12:54: expected a number, counter or '(' after '/', found '*'"
    );
    // An unknown reference.
    let text = SPEC_LAYOUT.replace("/L1_CYCLES_COUNTER ", "/L1_CYCLE_COUNTER ");
    assert_eq!(
        load_err(&text),
        "rocprof.xml:12:54: metric 'L1_MISS_RATIO' refers to unknown counter or metric 'L1_CYCLE_COUNTER' (did you mean 'L1_CYCLES_COUNTER' or 'L1_MISS_COUNTER'?)"
    );
    // A bad event id in the second section.
    let text = SPEC_LAYOUT.replace("event=0x22", "event=0xZZ");
    assert_eq!(
        load_err(&text),
        "rocprof.xml:8:40: counter 'L1_MISS_COUNTER': event '0xZZ' is not a decimal or 0x-hex integer"
    );
    // A <metric> in a section that is neither a counter nor a derived metric.
    let text = SPEC_LAYOUT.replace(
        "<metric name=L1_MISS_COUNTER block=L1 event=33 >",
        "<metric name=L1_MISS_COUNTER>",
    );
    assert_eq!(
        load_err(&text),
        "rocprof.xml:3:2: <metric> in <gfx8> needs 'block' and 'event' (a counter) or 'expr' (a derived metric)"
    );
    // An unknown top-level element between sections.
    let text = SPEC_LAYOUT
        .replace("<gfx9>", "<gpu9>")
        .replace("</gfx9>", "</gpu9>");
    assert_eq!(
        load_err(&text),
        "rocprof.xml:6:1: unknown element <gpu9> at the top level (expected <arch>, <metric>, <global> or an architecture section such as <gfx9>)"
    );
    // A section defined twice.
    let text = format!("{SPEC_LAYOUT}<gfx8></gfx8>\n");
    assert_eq!(
        load_err(&text),
        "rocprof.xml:15:1: duplicate arch 'gfx8' (first defined at rocprof.xml:1:1)"
    );
    // Malformed XML (a <metric> left open, as the spec's sketch does) in a file with no
    // root: the position is in the file, the message does not name the synthetic root.
    let text = SPEC_LAYOUT.replace("event=33 ></metric>", "event=33 >");
    let err = MetricSet::from_xml("rocprof.xml", &text).unwrap_err();
    assert!(matches!(err, MetricsError::Xml { .. }), "{err}");
    assert_eq!(
        err.to_string(),
        "rocprof.xml:4:1: malformed XML: expected 'metric' tag, not 'gfx8'"
    );
    // Malformed XML in the last section: the error is found further into the file when
    // the sections are read together, and reported there.
    let text = SPEC_LAYOUT.replace("descr=\"hits\"></metric>", "descr=\"hits\"></metrc>");
    let err = load_err(&text);
    assert!(err.starts_with("rocprof.xml:13:"), "{err}");
    assert!(!err.contains("metron-metrics-file"), "{err}");
    // A <metrics> root must stand alone.
    let text = format!("<metrics/>\n{SPEC_LAYOUT}");
    assert_eq!(
        load_err(&text),
        "rocprof.xml:1:1: a <metrics> root must be the only top-level element"
    );
}
