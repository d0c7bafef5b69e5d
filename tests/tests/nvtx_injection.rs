//! NVTX v3 injection: C and C++ programs built with the real `nvtx3` headers, run with
//! `NVTX_INJECTION64_PATH=libmetron.so`; every event must become the expected region,
//! instant, async slice or thread name in `summary.json` and in the decoded trace, with
//! NVTX's return values unchanged. Skipped (with the reason printed) only when the headers are
//! missing; `scripts/install-deps.sh` installs them.

mod c_api_support;
mod nvtx_support;
use c_api_support::*;
use nvtx_support::*;
use std::path::{Path, PathBuf};

/// Builds `nvtx_events.c` with its second NVTX copy (`second_copy.c`, a shared library of its
/// own, as PyTorch has two).
fn build_c_program(dir: &Path, include: &Path) -> PathBuf {
    cc(
        &[source("second_copy.c")],
        &dir.join("libnvtx_second.so"),
        Some(include),
        true,
        &[],
    );
    let exe = dir.join("nvtx_events");
    cc(
        &[source("nvtx_events.c")],
        &exe,
        Some(include),
        false,
        &[
            format!("-L{}", dir.display()),
            format!("-Wl,-rpath,{}", dir.display()),
            "-lnvtx_second".into(),
        ],
    );
    exe
}

fn injected() -> String {
    artifacts().lib().display().to_string()
}

#[test]
fn every_nvtx_event_from_c_becomes_a_region_instant_async_slice_or_thread_name() {
    let Some(include) = nvtx_include_or_skip("nvtx events from C") else {
        return;
    };
    let dir = temp_dir("nvtx-c");
    let exe = build_c_program(&dir, &include);
    let out = run_traced(&exe, &dir, &[("NVTX_INJECTION64_PATH", &injected())]);
    let run = dir.join("run");

    // NVTX's return values: push gives the 0-based level, pop the level it closed, both per
    // domain; an unbalanced pop is negative (and not fatal).
    let rv = printed(&out);
    let expected = [
        ("push_outer", 0),
        ("push_inner", 1),
        ("pop_inner", 1),
        ("push_wide", 1),
        ("pop_wide", 1),
        ("domain_push", 0),
        ("domain_push_registered", 1),
        ("domain_pop_registered", 1),
        ("domain_pop", 0),
        ("domain_pop_unbalanced", -1),
        ("worker_push", 0),
        ("worker_pop", 0),
        ("pop_outer", 0),
        ("pop_unbalanced", -1),
    ];
    for (key, value) in expected {
        assert_eq!(rv.get(key), Some(&value), "{key}: {rv:?}");
    }

    let summary = read_json(&run, "summary.json");
    let main = summary_thread(&summary, "nvtx-main");
    assert_eq!(
        region_counts(&main["regions"]),
        counts(&[
            ("outer", 1),
            ("outer/inner-ex", 1),
            ("outer/wide-range", 1),
            ("outer/metron-domain::domain-range", 1),
            (
                "outer/metron-domain::domain-range/metron-domain::registered-msg",
                1
            ),
            ("outer/second-copy-range", 1),
        ])
    );
    let worker = summary_thread(&summary, "nvtx-worker");
    assert_eq!(
        region_counts(&worker["regions"]),
        counts(&[("worker-range", 1)])
    );
    let worker2 = summary_thread(&summary, "named-by-main");
    assert_eq!(
        region_counts(&worker2["regions"]),
        counts(&[("worker2-range", 1)]),
        "a thread named by another thread's nvtxNameOsThreadA"
    );
    assert_eq!(
        marks(&summary),
        counts(&[
            ("app-start", 1),
            ("markex", 1),
            ("metron-domain::registered-msg", 1),
            ("second-copy-mark", 1),
            ("wide-mark", 1),
            ("worker-mark", 1),
        ])
    );
    let ranges = async_ranges(&summary);
    assert_eq!(ranges["startex-range"], (1, 0));
    assert_eq!(ranges["metron-domain::domain-async"], (1, 0));
    assert_eq!(ranges["cross-thread"], (1, 1), "ended on the worker thread");
    assert_eq!(summary["async_ranges"]["unmatched_ends"], 0);

    // Both NVTX copies initialised Metron; the two unbalanced pops are reported.
    let metadata = read_json(&run, "metadata.json");
    let nvtx = &metadata["nvtx"];
    assert_eq!(nvtx["initializations"], 2, "{nvtx}");
    assert_eq!(nvtx["unbalanced_pops"], 2, "{nvtx}");
    assert_eq!(nvtx["domains"], serde_json::json!(["metron-domain"]));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("found no open range of domain metron-domain"),
        "{stderr}"
    );

    // The trace: regions nested on their threads with payload, colour and category; async
    // slices on tracks of their own.
    let trace = decoded_trace(&run.join("trace.pftrace"));
    let all = slices(&trace);
    let inner = slice(&all, "inner-ex");
    assert!(inner.on_thread && inner.track == "nvtx-main" && inner.depth == 1);
    assert_eq!(inner.args["payload"], 42);
    assert_eq!(inner.args["color"], "#FF00FF00");
    assert_eq!(inner.args["category"], "io");
    let domain = slice(&all, "metron-domain::domain-range");
    assert_eq!(domain.args["payload"], 2.5);
    assert_eq!(
        slice(&all, "metron-domain::registered-msg").depth,
        2,
        "nested in the domain's range"
    );
    assert_eq!(slice(&all, "worker-range").track, "nvtx-worker");
    let cross = slice(&all, "cross-thread");
    assert!(!cross.on_thread && cross.track == "cross-thread");
    assert_ne!(cross.args["begin_tid"], cross.args["end_tid"]);
    assert!(!slice(&all, "startex-range").on_thread);
    let instants: Vec<&str> = trace["instants"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|i| i["name"].as_str())
        .collect();
    for name in [
        "app-start",
        "markex",
        "metron-domain::registered-msg",
        "worker-mark",
    ] {
        assert!(instants.contains(&name), "{name} in {instants:?}");
    }
}

#[test]
fn nvtx3_cpp_ranges_domains_and_registered_strings_become_regions() {
    let Some(include) = nvtx_include_or_skip("nvtx3.hpp from C++") else {
        return;
    };
    let dir = temp_dir("nvtx-cpp");
    let exe = dir.join("nvtx_events_cpp");
    cc(
        &[source("nvtx_events.cpp")],
        &exe,
        Some(&include),
        false,
        &[],
    );
    run_traced(&exe, &dir, &[("NVTX_INJECTION64_PATH", &injected())]);
    let summary = read_json(&dir.join("run"), "summary.json");
    assert_eq!(
        region_counts(&summary["merged"]),
        counts(&[
            ("cpp-outer", 1),
            ("cpp-outer/cpp-inner", 1),
            ("cpp-domain::cpp-registered", 1),
        ])
    );
    assert_eq!(
        marks(&summary),
        counts(&[("cpp-mark", 1), ("cpp-domain::cpp-domain-mark", 1)])
    );
    assert_eq!(async_ranges(&summary)["cpp-unique"], (1, 1));
    let trace = decoded_trace(&dir.join("run/trace.pftrace"));
    let all = slices(&trace);
    assert_eq!(slice(&all, "cpp-inner").args["payload"], 7);
    assert_eq!(slice(&all, "cpp-inner").args["color"], "#FFFF0000");
}

#[test]
fn without_injection_nvtx_is_a_no_op_and_metron_records_nothing_from_it() {
    let Some(include) = nvtx_include_or_skip("nvtx without injection") else {
        return;
    };
    let dir = temp_dir("nvtx-none");
    let exe = build_c_program(&dir, &include);
    let out = run_in(&exe, &dir, &[], &[]);
    assert_success(&out, "nvtx_events without injection");
    // NVTX with no tool returns NVTX_NO_PUSH_POP_TRACKING (-2) from push and pop.
    assert_eq!(printed(&out).get("push_outer"), Some(&-2));
    assert!(!dir.join("run").exists(), "nothing loaded Metron");
}

#[test]
fn metron_run_injects_itself_into_nvtx_unless_another_tool_is_set() {
    let Some(include) = nvtx_include_or_skip("metron run with NVTX") else {
        return;
    };
    let dir = temp_dir("nvtx-run");
    let exe = build_c_program(&dir, &include);
    let launch = |out: &str, env: &[(&str, &str)]| {
        let mut cmd = std::process::Command::new(artifacts().metron());
        cmd.args(["run", "--trace", "false", "--output-path"])
            .arg(dir.join(out))
            .arg("--")
            .arg(&exe)
            .env_remove("NVTX_INJECTION64_PATH")
            .env_remove("LD_PRELOAD");
        for (k, v) in env {
            cmd.env(k, v);
        }
        let result = cmd.output().expect("run metron");
        assert_success(&result, "metron run");
        result
    };
    launch("injected", &[]);
    let summary = read_json(&dir.join("injected"), "summary.json");
    let regions = region_counts(&summary["merged"]);
    assert_eq!(
        regions.get("nvtx_events/outer/inner-ex"),
        Some(&1),
        "{regions:?}"
    );

    let other = launch(
        "other",
        &[("NVTX_INJECTION64_PATH", "/nonexistent/tool.so")],
    );
    let stderr = String::from_utf8_lossy(&other.stderr);
    assert!(
        stderr.contains("NVTX_INJECTION64_PATH is already set (/nonexistent/tool.so)"),
        "{stderr}"
    );
    let summary = read_json(&dir.join("other"), "summary.json");
    assert!(!region_counts(&summary["merged"]).contains_key("nvtx_events/outer"));
}

#[test]
fn in_a_forked_child_nvtx_keeps_its_return_values_and_the_parents_run_is_untouched() {
    let Some(include) = nvtx_include_or_skip("nvtx in a forked child") else {
        return;
    };
    let dir = temp_dir("nvtx-fork");
    let exe = dir.join("nvtx_fork");
    cc(&[source("nvtx_fork.c")], &exe, Some(&include), false, &[]);
    let out = run_traced(&exe, &dir, &[("NVTX_INJECTION64_PATH", &injected())]);
    let rv = printed(&out);
    for (key, value) in [
        ("child_push", 1),
        ("child_pop", 1),
        ("child_pop_parent", 0),
        ("child_exit", 0),
        ("parent_pop", 0),
    ] {
        assert_eq!(rv.get(key), Some(&value), "{key}: {rv:?}");
    }
    let summary = read_json(&dir.join("run"), "summary.json");
    assert_eq!(
        region_counts(&summary["merged"]),
        counts(&[("parent-outer", 1), ("parent-outer/parent-inner", 1)]),
        "nothing of the child's"
    );
    assert!(marks(&summary).is_empty());
    assert!(async_ranges(&summary).is_empty());
}
