//! Settings from the environment: bad values are reported (stderr and `metadata.json`) and
//! replaced by their defaults without losing the run; `METRON_ENABLED=0` writes nothing.

use metron_tests::{emit_data, find, scenario, shape, Scenario};
use serde_json::json;
use std::time::Instant;

scenario! {
    fn scenario_a_few_regions() {
        for _ in 0..3 {
            let _outer = metron::scope!("still_recorded");
            let _inner = metron::scope!("nested");
        }
    }
}

#[test]
fn bad_values_are_reported_per_variable_and_the_run_still_writes_its_output_with_the_defaults() {
    let run = Scenario::new("scenario_a_few_regions")
        .env("METRON_BUFFER_SIZE", "12Q")
        .env("METRON_BUFFER_POLICY", "sometimes")
        .env("METRON_FLUSH_INTERVAL", "soon")
        .run();

    let expected = [
        (
            "METRON_BUFFER_SIZE",
            "12Q",
            "a size in bytes with an optional K, M or G suffix",
            "256K",
        ),
        (
            "METRON_BUFFER_POLICY",
            "sometimes",
            "one of: lossless, discard",
            "lossless",
        ),
        (
            "METRON_FLUSH_INTERVAL",
            "soon",
            "a duration with a unit: ms, s, us or m",
            "1s",
        ),
    ];
    let metadata = run.metadata();
    let errors = metadata["setting_errors"]
        .as_array()
        .expect("setting_errors");
    assert_eq!(errors.len(), expected.len(), "{errors:?}");
    for (name, value, accepted, default) in expected {
        let line = run
            .stderr
            .lines()
            .find(|l| l.starts_with(&format!("metron: {name}=")))
            .unwrap_or_else(|| panic!("no stderr line for {name}:\n{}", run.stderr));
        assert!(line.contains(&format!("{name}=\"{value}\"")), "{line}");
        assert!(line.contains(accepted), "{line}");
        assert!(
            line.contains(&format!("using the default \"{default}\"")),
            "{line}"
        );
        assert!(
            errors
                .iter()
                .any(|e| format!("metron: {}", e.as_str().unwrap()) == line),
            "metadata.json lists {line:?}"
        );
    }

    // The defaults are in force...
    let setting = |name: &str| {
        metadata["settings"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["name"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("{name} in metadata.settings"))
    };
    assert_eq!(
        setting("METRON_BUFFER_SIZE"),
        json!({"name": "METRON_BUFFER_SIZE", "value": (256 << 10).to_string(), "source": "default"})
    );
    assert_eq!(setting("METRON_BUFFER_POLICY")["value"], "lossless");
    assert_eq!(setting("METRON_FLUSH_INTERVAL")["value"], "1000ms");
    assert_eq!(setting("METRON_OUTPUT_PATH")["source"], "environment");
    assert_eq!(metadata["buffer"]["segment_bytes"], 256 << 10);
    assert_eq!(metadata["buffer"]["policy"], "lossless");

    // ...and the run was recorded and written as usual.
    let summary = run.summary();
    assert_eq!(shape(&summary["merged"]), "still_recorded×3{nested×3}");
    assert_eq!(metadata["records"]["written"], 12);
    assert!(run.wrote_line().is_some());
}

#[test]
fn good_values_are_taken_and_listed_with_their_source() {
    let run = Scenario::new("scenario_a_few_regions")
        .env("METRON_BUFFER_SIZE", "64K")
        .env("METRON_BUFFER_POLICY", "Discard")
        .env("METRON_FLUSH_INTERVAL", "250ms")
        .env("METRON_BUFFER_WATERMARK", "50")
        .run();
    let metadata = run.metadata();
    assert_eq!(metadata["setting_errors"], json!([]));
    assert!(!run.stderr.contains("is not accepted"), "{}", run.stderr);
    assert_eq!(metadata["buffer"]["segment_bytes"], 64 << 10);
    assert_eq!(metadata["buffer"]["policy"], "discard");
    let sources: Vec<_> = metadata["settings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["source"] == "environment")
        .map(|s| {
            format!(
                "{}={}",
                s["name"].as_str().unwrap(),
                s["value"].as_str().unwrap()
            )
        })
        .collect();
    assert!(
        sources.contains(&"METRON_FLUSH_INTERVAL=250ms".to_string()),
        "{sources:?}"
    );
    assert!(
        sources.contains(&"METRON_BUFFER_WATERMARK=50".to_string()),
        "{sources:?}"
    );
    let summary = run.summary();
    assert_eq!(find(&summary["merged"], &["still_recorded"])["count"], 3);
}

#[test]
fn summary_off_writes_only_the_metadata() {
    let run = Scenario::new("scenario_a_few_regions")
        .env("METRON_SUMMARY", "off")
        .run();
    assert!(!run.output_dir.join("summary.json").exists());
    assert!(!run.output_dir.join("summary.txt").exists());
    assert_eq!(run.metadata()["records"]["written"], 12);
}

const DISABLED_PAIRS: u32 = 1_000_000;

scenario! {
    fn scenario_disabled() {
        assert!(!metron::init(), "init reports that Metron is off");
        assert!(!metron::collecting());
        let id = metron::intern("by-id", metron::CallsiteKind::Region);
        assert!(!metron::by_id::begin(id), "nothing is stored");
        let start = Instant::now();
        for i in 0..DISABLED_PAIRS {
            let _g = metron::scope!("disabled");
            metron::counter!("n", i);
            metron::mark!("m");
        }
        let ns_per_iteration = start.elapsed().as_nanos() as f64 / f64::from(DISABLED_PAIRS);
        assert!(metron::finish().is_none(), "a disabled run has nothing to finish");
        emit_data(&json!({ "ns_per_iteration": ns_per_iteration }));
    }
}

#[test]
fn metron_enabled_0_writes_no_run_folder_and_regions_cost_almost_nothing() {
    let run = Scenario::new("scenario_disabled")
        .env("METRON_ENABLED", "0")
        .run();
    assert!(
        !run.output_dir.exists(),
        "no run folder: {}",
        run.output_dir.display()
    );
    assert!(
        !run.stderr.contains("metron:"),
        "nothing printed:\n{}",
        run.stderr
    );
    // A scope, a counter and a mark: a relaxed load and a branch each, not a record.
    let ns = run.data()["ns_per_iteration"].as_f64().unwrap();
    let limit = if cfg!(debug_assertions) { 500.0 } else { 50.0 };
    assert!(ns < limit, "{ns:.1} ns per disabled scope+counter+mark");
}
