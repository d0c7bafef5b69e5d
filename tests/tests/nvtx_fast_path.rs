//! The NVTX handlers' fast path and name cache with the shapes that break caches
//! (`tests/nvtx/nvtx_cache.c`): a buffer reused for other names, names that end at a page's
//! last byte, 8 threads nesting short and long names, a signal handler calling NVTX in the
//! middle of the thread's own calls, no allocation per pair of known names. Checked in the
//! summary: every range under its own name, with its count; and in what the program printed:
//! the levels NVTX returned and the allocations counted.
mod c_api_support;
mod nvtx_support;

use c_api_support::*;
use nvtx_support::*;

#[test]
fn reused_buffers_page_ends_threads_and_signal_handlers_keep_every_name_and_level() {
    let Some(include) = nvtx_include_or_skip("nvtx fast path") else {
        return;
    };
    let dir = temp_dir("nvtx-cache");
    let exe = dir.join("nvtx_cache");
    cc(&[source("nvtx_cache.c")], &exe, Some(&include), false, &[]);
    let lib = artifacts().lib().display().to_string();
    // A buffer large enough for every record: no segment hand-over (the buffer's cold path) in
    // the counted window, as in hot_path_allocations.rs.
    let out = run_traced(
        &exe,
        &dir,
        &[
            ("NVTX_INJECTION64_PATH", &lib),
            ("METRON_BUFFER_SIZE", "64M"),
        ],
    );
    assert_success(&out, "nvtx_cache");
    let printed = printed(&out);
    assert_eq!(
        printed["bad_levels"], 0,
        "levels NVTX returned: {printed:?}"
    );
    let in_handler = printed["handler_ranges"] as u64;

    let summary = read_json(&dir.join("run"), "summary.json");
    let mut got = region_counts(&summary["merged"]);
    let handled =
        got.remove("in-handler").unwrap_or(0) + got.remove("interrupted/in-handler").unwrap_or(0);
    // A handler that interrupts the thread's own NVTX call is refused (-1) or recorded, never
    // lost.
    assert_eq!(
        handled, in_handler,
        "every range the signal handler opened is recorded, at the top level or inside the \
         range it interrupted"
    );
    eprintln!("signal handler: {in_handler} ranges opened, {handled} recorded");
    let rounds = 8 * 20_000;
    assert_eq!(
        got,
        counts(&[
            ("short", 3),
            ("fifteen-bytes!!", 3),
            ("sixteen-bytes!!!", 3),
            ("short2", 3),
            ("s", 3),
            ("edge", 4),
            ("edge-of-page-12", 2),
            ("x", 2),
            ("thread-outer", rounds),
            ("thread-outer/a-rather-long-name-of-a-middle-range", rounds),
            (
                "thread-outer/a-rather-long-name-of-a-middle-range/leaf",
                rounds
            ),
            ("interrupted", 3_000_000),
            ("counted-short", 100_001),
            ("counted-short/a-counted-name-longer-than-15-bytes", 100_001),
        ])
    );
    let metadata = read_json(&dir.join("run"), "metadata.json");
    assert_eq!(
        metadata["nvtx"]["unbalanced_pops"], 0,
        "{}",
        metadata["nvtx"]
    );
}

#[test]
fn repeated_domain_registered_and_attribute_pushes_keep_their_names_payloads_and_colours() {
    let Some(include) = nvtx_include_or_skip("nvtx fast path, attributes") else {
        return;
    };
    let dir = temp_dir("nvtx-attrs");
    let exe = dir.join("nvtx_cache");
    cc(&[source("nvtx_cache.c")], &exe, Some(&include), false, &[]);
    let lib = artifacts().lib().display().to_string();
    let env = [
        ("NVTX_INJECTION64_PATH", lib.as_str()),
        ("METRON_TRACE", "true"),
    ];
    let out = run_in(&exe, &dir, &["attrs"], &env);
    assert_success(&out, "nvtx_cache attrs");
    assert_eq!(printed(&out)["bad_levels"], 0, "levels NVTX returned");

    let run = dir.join("run");
    let metadata = read_json(&run, "metadata.json");
    assert_eq!(
        metadata["nvtx"]["unbalanced_pops"], 0,
        "{}",
        metadata["nvtx"]
    );
    let trace = decoded_trace(&run.join("trace.pftrace"));
    let all = slices(&trace);
    let count = |name: &str| all.iter().filter(|s| s.name == name).count();
    assert_eq!(count("default-outer"), 1000);
    assert_eq!(count("cache-domain::reg"), 1000);
    assert_eq!(count("cache-domain::dom-ascii"), 1000);
    // Every round's payload on its registered range, every colour on its ASCII one.
    let mut payloads: Vec<u64> = all
        .iter()
        .filter(|s| s.name == "cache-domain::reg")
        .map(|s| s.args["payload"].as_u64().expect("a payload"))
        .collect();
    payloads.sort_unstable();
    assert_eq!(payloads, (0..1000).collect::<Vec<u64>>());
    assert!(all
        .iter()
        .filter(|s| s.name == "cache-domain::dom-ascii")
        .all(|s| s.args["color"] == "#FF112233" && s.args.get("payload").is_none()));
}
