//! Regions recorded before `main`: by a program's own constructor (Rust, default priority, which
//! may run before Metron's start-up constructor), and by C constructors of priority 101 and
//! default, linked against `libmetron.so` and statically against `libmetron.a`. The hot path
//! reaches the runtime through hooks that Metron's first constructor installs; none of these
//! records may be lost.

mod c_api_support;
use c_api_support::*;
use metron_tests::{emit_data, scenario, Scenario};
use serde_json::json;

/// Runs in every process of this test binary; records only in the scenario's child.
#[used]
#[link_section = ".init_array"]
static RECORD_BEFORE_MAIN: extern "C" fn() = record_before_main;

extern "C" fn record_before_main() {
    // Must not unwind into the loader.
    let _ = std::panic::catch_unwind(|| {
        if std::env::var_os("METRON_TEST_RECORD_IN_CONSTRUCTOR").is_some() {
            let _g = metron::scope!("in_constructor");
        }
    });
}

scenario! {
    fn scenario_record_before_main() {
        {
            let _g = metron::scope!("in_main");
        }
        emit_data(&json!({}));
    }
}

#[test]
fn a_rust_constructor_records_before_main_and_its_region_is_kept() {
    let run = Scenario::new("scenario_record_before_main")
        .env("METRON_TEST_RECORD_IN_CONSTRUCTOR", "1")
        .run();
    let regions = region_counts(&run.summary()["merged"]);
    assert_eq!(regions.get("in_constructor"), Some(&1), "{regions:?}");
    assert_eq!(regions.get("in_main"), Some(&1), "{regions:?}");
    assert!(
        !run.stderr.contains("before Metron's first constructor"),
        "{}",
        run.stderr
    );
    assert_eq!(run.metadata()["records"]["dropped_before_start"], 0);
}

fn constructors_recorded(exe: &std::path::Path, dir: &std::path::Path) {
    let out = run_in(exe, dir, &[], &[]);
    assert_success(&out, "constructors");
    let summary = read_json(&dir.join("run"), "summary.json");
    assert_eq!(
        region_counts(&summary["merged"]),
        counts(&[("ctor_101", 1), ("ctor_default", 1), ("in_main", 1)]),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn c_constructors_record_before_main_with_the_shared_library() {
    let dir = temp_dir("ctor-shared");
    let exe = compile(&program("constructors.c"), &dir, &[]);
    constructors_recorded(&exe, &dir);
}

#[test]
fn c_constructors_record_before_main_with_the_static_archive() {
    let dir = temp_dir("ctor-static");
    let exe = compile_static(&program("constructors.c"), &dir.join("constructors"), &[]);
    constructors_recorded(&exe, &dir);
}
