//! The C API from C: every call, its statuses, and what reaches summary.json and metadata.json.

mod c_api_support;
use c_api_support::*;

#[test]
fn every_c_call_succeeds_and_the_summary_shows_the_regions_marks_and_counters() {
    let dir = temp_dir("regions");
    let exe = compile(&program("regions.c"), &dir, &[]);
    let out = run_in(&exe, &dir, &[], &[]);
    assert_success(&out, "regions.c");
    let run = dir.join("run");
    let summary = read_json(&run, "summary.json");
    assert_eq!(
        region_counts(&summary["merged"]),
        counts(&[
            ("outer", 3),
            ("outer/marker", 3),
            ("outer/marker/pushed", 3),
            ("name_reused", 2),
        ]),
        "regions recorded while collection was stopped, or after finalize, must not appear"
    );
    assert_eq!(summary["threads"][0]["name"], "renamed");
    assert_eq!(summary["marks"][0]["name"], "tick");
    assert_eq!(summary["marks"][0]["count"], 3);
    assert_eq!(summary["counters"][0]["name"], "q");
    assert_eq!(summary["counters"][0]["count"], 3);
    assert_eq!(summary["counters"][0]["max"], 2.0);
    let metadata = read_json(&run, "metadata.json");
    assert_eq!(
        metadata["c_api"]["errors_total"], 0,
        "{}",
        metadata["c_api"]
    );
    assert_eq!(metadata["c_api"]["abi_version"], 1);
    for t in metadata["threads"].as_array().unwrap() {
        assert_eq!(t["unbalanced_ends"], 0);
        assert_eq!(t["open_at_exit"], 0);
    }
}

#[test]
fn bad_input_returns_error_codes_is_counted_and_leaves_other_threads_intact() {
    let dir = temp_dir("misuse");
    let exe = compile(&program("misuse.c"), &dir, &[]);
    let out = run_in(&exe, &dir, &[], &[]);
    assert_success(&out, "misuse.c");
    let run = dir.join("run");
    let metadata = read_json(&run, "metadata.json");
    let errors = &metadata["c_api"]["errors"];
    assert_eq!(errors["null_argument"], 12, "{errors}");
    assert_eq!(errors["no_open_region"], 5, "{errors}");
    assert_eq!(errors["mismatched_end"], 4, "{errors}");
    assert_eq!(errors["invalid_argument"], 3, "{errors}");
    assert_eq!(errors["internal"], 0, "{errors}");
    assert_eq!(metadata["c_api"]["errors_total"], 24);
    for t in metadata["threads"].as_array().unwrap() {
        assert_eq!(t["unbalanced_ends"], 0, "the trace stays balanced: {t}");
        assert_eq!(t["open_at_exit"], 0, "{t}");
        assert_eq!(t["malformed"], 0, "{t}");
    }
    let summary = read_json(&run, "summary.json");
    assert_eq!(
        region_counts(&summary["merged"]),
        counts(&[
            ("clean", 1000),
            ("clean/inner", 1000),
            ("kept", 1),
            ("kept/p", 1),
            ("x", 1),
        ])
    );
}

#[test]
fn the_last_error_names_the_call_and_what_was_open() {
    let dir = temp_dir("last-error");
    let source = dir.join("last_error.c");
    std::fs::write(
        &source,
        r#"#include <metron/metron.h>
#include <stdio.h>
int main(void) {
    metron_region_begin("a");
    metron_region_end("b");
    printf("%s\n", metron_last_error());
    metron_region_end("a");
    metron_pop();
    printf("%s\n", metron_last_error());
    return 0;
}
"#,
    )
    .unwrap();
    let exe = compile(&source, &dir, &[]);
    let out = run_in(&exe, &dir, &[], &[]);
    assert_success(&out, "last_error.c");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(
        lines[0],
        "metron_region_end(\"b\"): the innermost open region on this thread is \"a\", begun with metron_region_begin; nothing was ended"
    );
    assert_eq!(
        lines[1],
        "metron_pop(): no region is open on this thread (end without begin)"
    );
}

#[test]
fn metron_enabled_off_makes_init_report_disabled_and_every_call_a_no_op() {
    let dir = temp_dir("disabled");
    let source = dir.join("disabled.c");
    std::fs::write(
        &source,
        r#"#include <metron/metron.h>
int main(void) {
    if (metron_init(NULL) != METRON_ERROR_DISABLED) return 1;
    if (metron_region_begin("r") != METRON_OK) return 2;
    if (metron_region_end("r") != METRON_OK) return 3;
    return 0;
}
"#,
    )
    .unwrap();
    let exe = compile(&source, &dir, &[]);
    let out = run_in(&exe, &dir, &[], &[("METRON_ENABLED", "0")]);
    assert_success(&out, "disabled.c");
    assert!(!dir.join("run").exists(), "no output when METRON_ENABLED=0");
}

#[test]
fn more_than_256_open_regions_on_a_thread_is_refused_and_counted() {
    let dir = temp_dir("too-deep");
    let source = dir.join("deep.c");
    std::fs::write(
        &source,
        r#"#include <metron/metron.h>
int main(void) {
    int i;
    for (i = 0; i < 256; i++)
        if (metron_region_begin("deep") != METRON_OK) return 1;
    if (metron_region_begin("deeper") != METRON_ERROR_TOO_DEEP) return 2;
    for (i = 0; i < 256; i++)
        if (metron_region_end("deep") != METRON_OK) return 3;
    if (metron_region_end("deep") != METRON_ERROR_NO_OPEN_REGION) return 4;
    return 0;
}
"#,
    )
    .unwrap();
    let exe = compile(&source, &dir, &[]);
    let out = run_in(&exe, &dir, &[], &[]);
    assert_success(&out, "deep.c");
    let metadata = read_json(&dir.join("run"), "metadata.json");
    assert_eq!(metadata["c_api"]["errors"]["too_deep"], 1);
    assert_eq!(metadata["c_api"]["errors"]["no_open_region"], 1);
    assert_eq!(metadata["threads"][0]["unbalanced_ends"], 0);
    // summary.json nests 256 levels deep (beyond serde_json's default recursion limit): read
    // the total from summary.txt.
    let text = std::fs::read_to_string(dir.join("run/summary.txt")).unwrap();
    assert!(
        text.lines().next().unwrap().contains(", 256 regions,"),
        "{text:.200}"
    );
}
