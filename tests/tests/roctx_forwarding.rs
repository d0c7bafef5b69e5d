//! ROCTx: `libmetron.so` defines the ROCTx API (as ROCprofiler-SDK's `roctx.h` declares it),
//! records every call and forwards it to the real library (`dlsym(RTLD_NEXT)`): here a
//! stand-in built by the test, whose distinctive return values must reach the application
//! unchanged. Without a real library, the calls return what ROCTx would.

mod c_api_support;
mod nvtx_support;
use c_api_support::*;
use nvtx_support::*;

fn check_recorded(summary: &serde_json::Value) {
    let main = summary_thread(summary, "roctx-main");
    assert_eq!(
        region_counts(&main["regions"]),
        counts(&[("roctx-outer", 1), ("roctx-outer/roctx-inner", 1)]),
        "the range pushed while paused is not recorded"
    );
    let worker = summary_thread(summary, "roctx-worker");
    assert_eq!(
        region_counts(&worker["regions"]),
        counts(&[("roctx-worker-range", 1)])
    );
    assert_eq!(marks(summary), counts(&[("roctx-mark", 1)]));
    let ranges = async_ranges(summary);
    assert_eq!(ranges["roctx-async"], (1, 0));
    assert_eq!(ranges["roctx-cross"], (1, 1));
}

#[test]
fn roctx_calls_are_recorded_and_forwarded_with_their_return_values_unchanged() {
    let dir = temp_dir("roctx-standin");
    let include = source("");
    cc(
        &[source("roctx_standin.c")],
        &dir.join("libroctx_standin.so"),
        Some(&include),
        true,
        &[],
    );
    let exe = dir.join("roctx_events");
    cc(
        &[source("roctx_events.c")],
        &exe,
        Some(&include),
        false,
        &[
            format!("-L{}", dir.display()),
            format!("-Wl,-rpath,{}", dir.display()),
            "-lroctx_standin".into(),
        ],
    );
    let lib = artifacts().lib().display().to_string();
    let out = run_traced(&exe, &dir, &[("LD_PRELOAD", &lib)]);
    let rv = printed(&out);
    let expected = [
        ("name_main", 13),
        ("push_outer", 100),
        ("push_inner", 101),
        ("pop_inner", 201),
        ("start_nonzero", 1),
        ("worker_push", 101),
        ("worker_pop", 201),
        ("pause", 11),
        ("resume", 12),
        ("name_agent", 14),
        ("name_device", 15),
        ("name_stream", 16),
        ("pop_outer", 200),
        ("pop_unbalanced", -7),
        // Every call reached the stand-in: 22 calls in the program.
        ("standin_calls", 22),
    ];
    for (key, value) in expected {
        assert_eq!(rv.get(key), Some(&value), "{key}: {rv:?}");
    }
    check_recorded(&read_json(&dir.join("run"), "summary.json"));
    let metadata = read_json(&dir.join("run"), "metadata.json");
    assert_eq!(
        metadata["nvtx"]["unbalanced_pops"], 1,
        "reported, never fatal"
    );
}

#[test]
fn without_a_real_roctx_library_the_calls_return_what_roctx_would() {
    let dir = temp_dir("roctx-alone");
    let exe = compile(
        &source("roctx_events.c"),
        &dir,
        &["-DNO_STANDIN", "-I", &source("").display().to_string()],
    );
    let out = run_traced(&exe, &dir, &[]);
    let rv = printed(&out);
    let expected = [
        ("name_main", 0),
        ("push_outer", 0),
        ("push_inner", 1),
        ("pop_inner", 1),
        ("worker_push", 0),
        ("worker_pop", 0),
        ("pause", 0),
        ("push_paused", 1),
        ("pop_paused", 1),
        ("resume", 0),
        ("pop_outer", 0),
        ("pop_unbalanced", -1),
    ];
    for (key, value) in expected {
        assert_eq!(rv.get(key), Some(&value), "{key}: {rv:?}");
    }
    check_recorded(&read_json(&dir.join("run"), "summary.json"));
}
