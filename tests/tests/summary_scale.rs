//! The summary of a program with many region names: every region in `summary.json`, a
//! readable `summary.txt` (the top regions, the rest folded per parent); and calls refused by
//! a documented limit, reported where a user looks (the last stderr line, the summary's
//! header), not only in `metadata.json`.

use metron_tests::{find, scenario, Scenario};
use serde_json::Value;

/// Distinct region names, each used once, all under one parent region.
const NAMES: u64 = 20_000;

scenario! {
    fn scenario_many_names() {
        let _parent = metron::scope!("parent");
        for i in 0..NAMES {
            let id = metron::intern(&format!("name {i}"), metron::CallsiteKind::Region);
            assert!(metron::by_id::begin(id));
            // The later names take longer, so the top of the text table is known: 19999, ...
            std::hint::black_box((0..i / 64).sum::<u64>());
            assert!(metron::by_id::end(id));
        }
    }
}

#[test]
fn twenty_thousand_names_are_all_in_summary_json_and_folded_in_summary_txt() {
    let run = Scenario::new("scenario_many_names").run();
    let summary = run.summary();
    let parent = find(&summary["merged"], &["parent"]);
    let children = parent["children"].as_array().unwrap();
    assert_eq!(children.len() as u64, NAMES);
    assert!(children.iter().all(|c| c["count"] == 1));

    let text = run.summary_text();
    assert!(
        text.contains("each table shows the 100 regions with the most total time"),
        "{}",
        &text[..text.len().min(2000)]
    );
    // The merged table and the thread's: 99 names shown under `parent` (which takes one of the
    // 100 places), the other 19,901 on one line each.
    let folded: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("other regions (folded)"))
        .collect();
    assert_eq!(folded.len(), 2, "{folded:?}");
    for line in &folded {
        assert!(line.contains("19901 other regions"), "{line}");
        // `| |_ 19901 other regions (folded) | count | ...`
        let count: u64 = line.split('|').nth(3).unwrap().trim().parse().unwrap();
        assert_eq!(count, NAMES - 99, "{line}");
    }
    let shown = text.lines().filter(|l| l.contains("|_ name ")).count();
    assert_eq!(shown, 2 * 99, "name rows in the two tables");
    assert!(text.lines().count() < 400, "{} lines", text.lines().count());
}

fn refused() -> Vec<(String, u64)> {
    vec![
        ("test calls past a documented limit".to_string(), 7),
        ("nothing refused here".to_string(), 0),
    ]
}

scenario! {
    fn scenario_refusals() {
        metron::add_refusals(refused);
        let _r = metron::scope!("r");
    }
}

#[test]
fn refused_calls_are_in_the_last_stderr_line_the_summary_header_and_metadata() {
    let run = Scenario::new("scenario_refusals").run();
    let line = run
        .stderr
        .lines()
        .rev()
        .find(|l| l.starts_with("metron: wrote "))
        .expect("the last line");
    assert!(
        line.contains("; refused: 7 test calls past a documented limit"),
        "{line}"
    );
    assert!(!line.contains("nothing refused"), "{line}");
    assert!(run.wrote_line().is_some(), "the counts still parse: {line}");
    let text = run.summary_text();
    let header: Vec<&str> = text.lines().take(3).collect();
    assert!(
        header
            .iter()
            .any(|l| l.contains("refused by a documented limit")
                && l.contains("7 test calls past a documented limit")),
        "{header:?}"
    );
    let expected: Value = serde_json::json!({ "test calls past a documented limit": 7 });
    assert_eq!(run.metadata()["refused"], expected);
    assert_eq!(run.summary()["refused"], expected);
}
