//! `metron avail`, `--version`, `--help` and usage errors.

mod c_api_support;
use c_api_support::*;
use std::process::{Command, Output};

fn metron(args: &[&str]) -> Output {
    Command::new(artifacts().metron())
        .args(args)
        .output()
        .expect("run metron")
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn avail_json_lists_every_registry_setting_component_and_counter_kind() {
    let out = metron(&["avail", "--json"]);
    assert_success(&out, "metron avail --json");
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let names: Vec<&str> = report["settings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    let registry: Vec<&str> = metron::settings::REGISTRY.iter().map(|s| s.name).collect();
    assert_eq!(names, registry);
    for s in report["settings"].as_array().unwrap() {
        for key in ["default", "accepted", "description"] {
            assert!(
                s[key]
                    .as_str()
                    .is_some_and(|v| !v.is_empty() || key == "default"),
                "{s}"
            );
        }
    }
    let components: Vec<&str> = report["components"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert!(components.contains(&"wall_clock") && components.contains(&"page_faults"));
    let counters = &report["counters"];
    for kind in ["software", "hardware"] {
        let any = counters[kind]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["available"] == true);
        let reason = counters[format!("{kind}_unavailable_reason")].as_str();
        assert!(
            any != reason.is_some(),
            "{kind}: either some counters or a reason, not both or neither: {counters}"
        );
    }
    // Per GPU: its metrics (count and list) or why none; no GPU here: an empty list and a
    // reason for the whole backend.
    let gpus = counters["gpu"].as_array().unwrap();
    let gpu_metrics = counters["gpu_metrics"].as_array().unwrap();
    assert_eq!(gpus.len(), gpu_metrics.len(), "{counters}");
    if gpus.is_empty() {
        assert!(counters["gpu_unavailable_reason"].is_string(), "{counters}");
    }
    for g in gpu_metrics {
        let listed = g["metrics"].as_array().unwrap().len();
        assert_eq!(g["count"].as_u64(), Some(listed as u64), "{g}");
        assert!(listed > 0 || g["reason"].is_string(), "{g}");
        // PC sampling's stall reasons (40 on an H100), or why none.
        let stalls = &g["stall_reasons"];
        let names = stalls["names"].as_array().unwrap().len();
        assert!(names > 0 || stalls["reason"].is_string(), "{g}");
    }
    // AMD: what is installed (the HSA runtime library, /dev/kfd) and why a run would not be
    // traced; the runtime itself is never started by avail.
    let amd = &counters["gpu_amd"];
    assert_eq!(amd["backend"], "hsa", "{amd}");
    assert_eq!(
        amd["kfd"],
        std::path::Path::new("/dev/kfd").exists(),
        "{amd}"
    );
    let reason = amd["reason"].as_str().unwrap();
    match amd["hsa_runtime"].as_str() {
        None => assert!(reason.contains("ROCm is not installed"), "{reason}"),
        Some(_) if !std::path::Path::new("/dev/kfd").exists() => {
            assert!(reason.contains("no /dev/kfd"), "{reason}")
        }
        Some(_) => assert!(reason.contains("HSA_TOOLS_LIB"), "{reason}"),
    }
    // The AMD counter tables of the built-in file, per architecture.
    let tables = &counters["gpu_amd_counters"];
    let gfx90a = tables["architectures"]["gfx90a"]
        .as_array()
        .expect("gfx90a");
    let waves = gfx90a
        .iter()
        .find(|c| c["name"] == "SQ_WAVES")
        .expect("SQ_WAVES");
    assert_eq!(
        (waves["block"].as_str(), waves["event"].as_u64()),
        (Some("SQ"), Some(4))
    );
    assert!(tables["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .any(|m| m["name"] == "GPU_BUSY"));
    // The HSA API calls METRON_GPU_AMD_HSA_API can name: hsa.h's, then hsa_ext_amd.h's.
    let calls = counters["gpu_amd_hsa_api"]
        .as_array()
        .expect("gpu_amd_hsa_api");
    assert_eq!(calls.len(), 173);
    assert_eq!(calls[0], "hsa_init");
    assert!(calls.iter().any(|c| c == "hsa_amd_memory_pool_allocate"));
}

#[test]
fn avail_text_shows_each_setting_with_default_accepted_values_and_flag() {
    let out = metron(&["avail", "--settings"]);
    assert_success(&out, "metron avail --settings");
    let text = stdout(&out);
    for spec in metron::settings::REGISTRY {
        assert!(text.contains(spec.name), "{} missing", spec.name);
        assert!(text.contains(spec.description), "{} description", spec.name);
        assert!(
            text.contains(&spec.kind.accepted()),
            "{} accepted",
            spec.name
        );
    }
    assert!(text.contains("--buffer-size"));
    let counters = stdout(&metron(&["avail", "--counters"]));
    assert!(counters.contains("software:") && counters.contains("hardware:"));
}

#[test]
fn version_and_help_print_and_succeed() {
    let out = metron(&["--version"]);
    assert_success(&out, "metron --version");
    assert_eq!(
        stdout(&out).trim(),
        format!("metron {} (C ABI 1)", env!("CARGO_PKG_VERSION"))
    );
    let help = stdout(&metron(&["--help"]));
    assert!(
        help.contains("metron run") && help.contains("Examples:"),
        "{help}"
    );
    let run_help = metron(&["run", "--help"]);
    assert_success(&run_help, "metron run --help");
    assert!(stdout(&run_help).contains("--flush-interval"));
}

#[test]
fn unknown_commands_and_arguments_exit_with_status_2_and_say_what_is_accepted() {
    for args in [
        &["frobnicate"][..],
        &["avail", "--bogus"],
        &["run", "--bogus", "--", "true"],
        &["run", "--buffer-size", "12Q", "--", "true"],
        &["run", "--buffer-policy", "sometimes", "--", "true"],
        &["run", "--signals"],
        &["run"],
        &[],
    ] {
        let out = metron(args);
        assert_eq!(out.status.code(), Some(2), "metron {args:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!stderr.trim().is_empty(), "metron {args:?} says why");
    }
    let out = metron(&["run", "--buffer-policy", "sometimes", "--", "true"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("METRON_BUFFER_POLICY") && stderr.contains("lossless, discard"),
        "{stderr}"
    );
}
