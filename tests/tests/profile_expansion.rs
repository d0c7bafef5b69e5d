//! `#[metron::profile]` on every function shape of `ui/pass/profile_lint_clean.rs` (compiled
//! here as a module, so with this crate's lints and clippy too): each call is exactly one region
//! under the function's name (each poll for an `async fn`), open across early returns and `?`.

#![deny(warnings)]

#[path = "../ui/pass/profile_lint_clean.rs"]
mod shapes;

use metron_tests::{find, scenario, shape, threads, Scenario};
use serde_json::Value;
use std::collections::BTreeMap;

scenario! {
    fn scenario_every_shape() {
        shapes::main();
    }
}

/// How many times each region name was entered, over the whole tree.
fn counts_by_name(regions: &Value, counts: &mut BTreeMap<String, u64>) {
    for node in regions.as_array().expect("a regions array") {
        let name = node["name"].as_str().expect("a region name").to_string();
        *counts.entry(name).or_default() += node["count"].as_u64().expect("a count");
        counts_by_name(&node["children"], counts);
    }
}

#[test]
fn every_function_shape_records_one_region_per_call_under_its_name() {
    let run = Scenario::new("scenario_every_shape").run();
    let summary = run.summary();
    let merged = &summary["merged"];
    let mut counts = BTreeMap::new();
    counts_by_name(merged, &mut counts);
    let once = [
        "expression_body",
        "one_line_unit",
        "multi_line_if",
        "block_tail",
        "unit_empty",
        "unit_statements",
        "early_return",
        "before return",
        "question_mark",
        "before ?",
        "renamed",
        "with bundle",
        "async_with_bundle",
        "boxed",
        "generic",
        "lifetimes_and_consts",
        "impl_trait",
        "patterns",
        "attributes",
        "with_allow",
        "inner_attribute",
        "unsafe_fn",
        "extern_c",
        "items_in_body",
        "labeled_loops",
        "let_else",
        "closure_tail",
        "new",
        "bump",
        "get",
        "double_area",
        "area",
        "async_method",
        "into_inner",
        "async_plain",
        "async_question_mark",
        "async_unit",
    ];
    let mut expected: BTreeMap<String, u64> = once.iter().map(|n| (n.to_string(), 1)).collect();
    expected.insert("fib".into(), 9); // fib(4)
    expected.insert("new".into(), 2);
    expected.insert("async_generic".into(), 2); // pending once: two polls, two regions
    assert_eq!(counts, expected, "tree: {}", shape(merged));

    // The region is open for the whole body: at an early return, at `?`, around the calls a
    // body makes (recursion nests once per level).
    assert_eq!(
        shape(&Value::Array(vec![find(merged, &["early_return"]).clone()])),
        "early_return×1{before return×1}"
    );
    assert_eq!(
        shape(&Value::Array(
            vec![find(merged, &["question_mark"]).clone()]
        )),
        "question_mark×1{before ?×1}"
    );
    assert_eq!(
        shape(&Value::Array(vec![find(merged, &["fib"]).clone()])),
        "fib×1{fib×2{fib×4{fib×2}}}"
    );
    assert_eq!(
        shape(&Value::Array(vec![find(merged, &["double_area"]).clone()])),
        "double_area×1{area×1}"
    );
    let metadata = run.metadata();
    let main = &threads(&metadata)[0];
    assert_eq!(main["unbalanced_ends"], 0);
    assert_eq!(main["open_at_exit"], 0);
}
