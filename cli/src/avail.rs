//! `metron avail [--json] [--components] [--settings] [--counters]`.

use crate::perf;
use crate::run::flag_of;
use crate::usage_error;
use metron::components::{
    ContextSwitches, CpuClock, PageFaults, PageRss, PeakRss, PerfCounters, SystemClock,
    ThreadCpuClock, UserClock, WallClock,
};
use metron::settings::REGISTRY;
use metron::{Component, ComponentInfo};
use serde_json::{json, Value};
use std::process::ExitCode;

/// Every built-in component.
const COMPONENTS: [ComponentInfo; 10] = [
    WallClock::INFO,
    CpuClock::INFO,
    ThreadCpuClock::INFO,
    UserClock::INFO,
    SystemClock::INFO,
    PeakRss::INFO,
    PageRss::INFO,
    PageFaults::INFO,
    ContextSwitches::INFO,
    PerfCounters::INFO,
];

const HELP: &str = "\
Usage: metron avail [--json] [--components] [--settings] [--counters]

Lists the components Metron can measure, every METRON_* setting (default, accepted values,
description, the `metron run` flag), and the perf_event counters this machine offers (or why
none) with, per NVIDIA GPU, its name, CUPTI version and metrics (the first 20 in text, all in
--json). With no section flag, all three. --json prints one JSON object.
";

pub(crate) fn main(args: &[String]) -> ExitCode {
    let mut as_json = false;
    let mut sections = Vec::new();
    for arg in args {
        match arg.as_str() {
            "--json" => as_json = true,
            "--components" | "--settings" | "--counters" => sections.push(&arg[2..]),
            "-h" | "--help" => {
                print!("{HELP}");
                return ExitCode::SUCCESS;
            }
            other => {
                return usage_error(&format!(
                    "avail: unknown argument {other:?}; accepted: --json, --components, --settings, --counters"
                ))
            }
        }
    }
    if sections.is_empty() {
        sections = vec!["components", "settings", "counters"];
    }
    let report = report(&sections);
    if as_json {
        println!(
            "{}",
            serde_json::to_string_pretty(&report).unwrap_or_default()
        );
    } else {
        print!("{}", text(&report));
    }
    ExitCode::SUCCESS
}

fn report(sections: &[&str]) -> Value {
    let mut out = serde_json::Map::new();
    out.insert("metron_version".into(), env!("CARGO_PKG_VERSION").into());
    if sections.contains(&"components") {
        out.insert(
            "components".into(),
            COMPONENTS
                .iter()
                .map(|c| {
                    json!({
                        "name": c.name,
                        "description": c.description,
                        "cost": c.cost,
                        "fields": c.fields.iter().map(|f| json!({"name": f.name, "unit": f.unit.symbol()})).collect::<Vec<_>>(),
                    })
                })
                .collect(),
        );
    }
    if sections.contains(&"settings") {
        out.insert(
            "settings".into(),
            REGISTRY
                .iter()
                .map(|s| {
                    json!({
                        "name": s.name,
                        "default": s.default,
                        "accepted": s.kind.accepted(),
                        "description": s.description,
                        "flag": (s.name != "METRON_PRELOAD").then(|| flag_of(s.name)),
                    })
                })
                .collect(),
        );
    }
    if sections.contains(&"counters") {
        let (counters, metrics) = perf::probe_all();
        let gpu_probe = metron_gpu_nvidia::probe();
        let list = |kind: &str| -> Vec<Value> {
            counters
                .iter()
                .filter(|c| perf::of_kind(c, kind))
                .map(|c| json!({"name": c.name, "group": c.detail, "description": c.description, "available": c.available, "error": c.reason}))
                .collect()
        };
        out.insert(
            "counters".into(),
            json!({
                "source": "perf_event_open (this process, user space)",
                "perf_event_paranoid": perf::paranoid(),
                "software": list("software"),
                "software_unavailable_reason": perf::reason_none(&counters, "software"),
                "hardware": list("hardware"),
                "hardware_unavailable_reason": perf::reason_none(&counters, "hardware"),
                "metrics": metrics.iter().map(|m| json!({
                    "name": m.name, "expression": m.expression, "unit": m.detail,
                    "description": m.description, "available": m.available, "error": m.reason,
                })).collect::<Vec<_>>(),
                "gpu": gpu_probe.devices,
                "gpu_metrics": gpu_metrics(&gpu_probe),
                "gpu_unavailable_reason": gpu_probe.reason,
                "gpu_backend": gpu_probe.to_json(),
                "gpu_amd": metron_gpu_amd::probe().to_json(),
                "gpu_amd_counters": metron_gpu_amd::counter_tables(),
                "gpu_amd_hsa_api": metron_gpu_amd::hsa_api_functions(),
            }),
        );
    }
    Value::Object(out)
}

/// Per GPU: name, CUPTI version and its metrics (from the CUPTI profiler host API), or why
/// none.
fn gpu_metrics(probe: &metron_gpu_nvidia::Status) -> Vec<Value> {
    probe
        .devices
        .iter()
        .map(|d| {
            let mut entry = gpu_metrics_of(probe, d);
            // What METRON_GPU_PC_SAMPLING attributes samples to (CUPTI's PC sampling names).
            entry["stall_reasons"] = match metron_gpu_nvidia::stall_reasons(d.index) {
                Ok(reasons) => json!({
                    "names": reasons.iter().map(|(_, name)| name).collect::<Vec<_>>(),
                    "reason": Value::Null,
                }),
                Err(e) => json!({ "names": [], "reason": e }),
            };
            entry
        })
        .collect()
}

fn gpu_metrics_of(probe: &metron_gpu_nvidia::Status, d: &metron::gpu::GpuDevice) -> Value {
    match metron_gpu_nvidia::metrics(d.index) {
        Ok(list) => {
            let full: usize = list.iter().map(|m| m.submetrics.len().max(1)).sum();
            json!({
                "device": format!("gpu{}", d.index),
                "index": d.index,
                "name": d.name,
                "cupti_version": probe.cupti_version,
                "count": list.len(),
                "full_name_count": full,
                "metrics": list,
                "reason": Value::Null,
            })
        }
        Err(e) => json!({
            "device": format!("gpu{}", d.index),
            "index": d.index,
            "name": d.name,
            "cupti_version": probe.cupti_version,
            "count": 0,
            "metrics": [],
            "reason": e,
        }),
    }
}

/// Metrics shown per GPU in text; `--json` has all.
const TEXT_METRICS: usize = 20;

fn text(report: &Value) -> String {
    let mut out = String::new();
    if let Some(components) = report["components"].as_array() {
        out.push_str(&format!("Components ({})\n", components.len()));
        for c in components {
            let fields: Vec<String> = c["fields"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|f| {
                    format!(
                        "{} [{}]",
                        f["name"].as_str().unwrap_or(""),
                        f["unit"].as_str().unwrap_or("")
                    )
                })
                .collect();
            out.push_str(&format!(
                "  {:<18} {}\n  {:<18} fields: {}; cost: {}\n",
                c["name"].as_str().unwrap_or(""),
                c["description"].as_str().unwrap_or(""),
                "",
                fields.join(", "),
                c["cost"].as_str().unwrap_or("")
            ));
        }
        out.push('\n');
    }
    if let Some(settings) = report["settings"].as_array() {
        out.push_str(&format!(
            "Settings ({}): environment variables, or `metron run` flags\n",
            settings.len()
        ));
        for s in settings {
            let flag = s["flag"]
                .as_str()
                .map_or(String::from("(set by metron run)"), |f| f.to_string());
            out.push_str(&format!(
                "  {:<28} default {:?}  flag {}\n      {}\n      accepts {}\n",
                s["name"].as_str().unwrap_or(""),
                s["default"].as_str().unwrap_or(""),
                flag,
                s["description"].as_str().unwrap_or(""),
                s["accepted"].as_str().unwrap_or("")
            ));
        }
        out.push('\n');
    }
    if report["counters"].is_object() {
        let c = &report["counters"];
        out.push_str(&format!(
            "Counters ({}; perf_event_paranoid {})\n",
            c["source"].as_str().unwrap_or(""),
            c["perf_event_paranoid"]
        ));
        for kind in ["software", "hardware"] {
            let list = c[kind].as_array().cloned().unwrap_or_default();
            let available: Vec<&str> = list
                .iter()
                .filter(|p| p["available"].as_bool() == Some(true))
                .filter_map(|p| p["name"].as_str())
                .collect();
            match c[format!("{kind}_unavailable_reason")].as_str() {
                Some(reason) => out.push_str(&format!("  {kind}: none: {reason}\n")),
                None => {
                    out.push_str(&format!("  {kind}: {}\n", available.join(", ")));
                    for p in list
                        .iter()
                        .filter(|p| p["available"].as_bool() == Some(false))
                    {
                        out.push_str(&format!(
                            "    {} unavailable: {}\n",
                            p["name"].as_str().unwrap_or(""),
                            p["error"].as_str().unwrap_or("")
                        ));
                    }
                }
            }
        }
        let metrics = c["metrics"].as_array().cloned().unwrap_or_default();
        out.push_str(&format!(
            "  derived metrics ({}; METRON_METRICS):\n",
            metrics.len()
        ));
        for m in &metrics {
            out.push_str(&format!(
                "    {:<20} = {:<44} {}\n",
                m["name"].as_str().unwrap_or(""),
                m["expression"].as_str().unwrap_or(""),
                match m["error"].as_str() {
                    Some(why) => format!("(unavailable: {why})"),
                    None => String::new(),
                }
            ));
        }
        let b = &c["gpu_backend"];
        match c["gpu"].as_array().filter(|d| !d.is_empty()) {
            Some(devices) => {
                out.push_str(&format!(
                    "  gpu (CUPTI {}, {}, driver {}): {}\n",
                    b["cupti_version"],
                    b["cupti"].as_str().unwrap_or("no CUPTI"),
                    b["driver_version"],
                    c["gpu_unavailable_reason"].as_str().unwrap_or("available")
                ));
                for d in devices {
                    out.push_str(&format!(
                        "    GPU {}: {}\n",
                        d["index"],
                        d["name"].as_str().unwrap_or("")
                    ));
                    let Some(m) = c["gpu_metrics"]
                        .as_array()
                        .and_then(|all| all.iter().find(|m| m["index"] == d["index"]))
                    else {
                        continue;
                    };
                    match m["reason"].as_str() {
                        Some(why) => out.push_str(&format!("      metrics: none: {why}\n")),
                        None => {
                            let list = m["metrics"].as_array().cloned().unwrap_or_default();
                            out.push_str(&format!(
                                "      metrics ({} base metrics, {} with submetrics; CUPTI {}; METRON_GPU_METRICS takes base + submetric, e.g. smsp__inst_executed.sum):\n",
                                m["count"], m["full_name_count"], m["cupti_version"]
                            ));
                            for x in list.iter().take(TEXT_METRICS) {
                                out.push_str(&format!(
                                    "        {:<44} {:<10} {}\n",
                                    x["name"].as_str().unwrap_or(""),
                                    x["kind"].as_str().unwrap_or(""),
                                    x["description"].as_str().unwrap_or("")
                                ));
                            }
                            if list.len() > TEXT_METRICS {
                                out.push_str(&format!(
                                    "        … ({} more; --json for all)\n",
                                    list.len() - TEXT_METRICS
                                ));
                            }
                        }
                    }
                    let stalls = &m["stall_reasons"];
                    match stalls["reason"].as_str() {
                        Some(why) => {
                            out.push_str(&format!("      PC sampling stall reasons: none: {why}\n"))
                        }
                        None => {
                            let names: Vec<&str> = stalls["names"]
                                .as_array()
                                .into_iter()
                                .flatten()
                                .filter_map(Value::as_str)
                                .collect();
                            out.push_str(&format!(
                                "      PC sampling stall reasons ({}; METRON_GPU_PC_SAMPLING=on): {}\n",
                                names.len(),
                                names.join(", ")
                            ));
                        }
                    }
                }
            }
            None => out.push_str(&format!(
                "  gpu: none: {}\n",
                c["gpu_unavailable_reason"].as_str().unwrap_or("")
            )),
        }
        let amd = &c["gpu_amd"];
        out.push_str(&format!(
            "  gpu (AMD, HSA tools interface): {}\n",
            amd["reason"].as_str().unwrap_or("available")
        ));
        let tables = &c["gpu_amd_counters"];
        out.push_str(
            "    AMD counters for METRON_GPU_METRICS (metrics/data/amd_gpu.xml, per architecture):\n",
        );
        if let Some(arches) = tables["architectures"].as_object() {
            for (arch, counters) in arches {
                let names: Vec<&str> = counters
                    .as_array()
                    .map(|a| a.iter().filter_map(|c| c["name"].as_str()).collect())
                    .unwrap_or_default();
                out.push_str(&format!("      {arch:<8} {}\n", names.join(" ")));
            }
        }
        if let Some(metrics) = tables["metrics"].as_array() {
            for m in metrics {
                out.push_str(&format!(
                    "      {:<16} = {}\n",
                    m["name"].as_str().unwrap_or(""),
                    m["expression"].as_str().unwrap_or("")
                ));
            }
        }
        if let Some(calls) = c["gpu_amd_hsa_api"].as_array() {
            out.push_str(&format!(
                "    AMD HSA API calls for METRON_GPU_AMD_HSA_API ({} in all):\n",
                calls.len()
            ));
            let mut line = String::from("     ");
            for name in calls.iter().filter_map(Value::as_str) {
                if line.len() + 1 + name.len() > 100 {
                    out.push_str(&line);
                    out.push('\n');
                    line = String::from("     ");
                }
                line.push(' ');
                line.push_str(name);
            }
            out.push_str(&line);
            out.push('\n');
        }
    }
    out
}
