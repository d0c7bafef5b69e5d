//! What Metron can measure on a device: counters, derived metrics and traces, with name,
//! description and whether this machine offers them (in the spirit of ROCprofiler's
//! `rocprofiler_iterate_info`). `metron avail` and the C function `metron_info_iterate`
//! are built on it.
//!
//! ```
//! use metron::info::{self, InfoKind};
//! let mut metrics = Vec::new();
//! info::iterate("cpu", InfoKind::Metric, |item| {
//!     metrics.push(item.name.clone());
//!     std::ops::ControlFlow::Continue(())
//! })
//! .unwrap();
//! assert!(metrics.contains(&"IPC".to_string()));
//! ```

use metron_components::perf::{self, events};
use metron_metrics::MetricSet;
use std::ops::ControlFlow;

/// What an [`InfoItem`] describes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum InfoKind {
    /// A counter the device counts (a `perf` event on the CPU).
    Counter,
    /// A metric derived from counters by an expression.
    Metric,
    /// A kind of trace record Metron collects on the device.
    Trace,
}

impl InfoKind {
    /// Every kind, in listing order.
    pub const ALL: [InfoKind; 3] = [InfoKind::Counter, InfoKind::Metric, InfoKind::Trace];
}

/// One counter, metric or trace.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct InfoItem {
    /// What it is.
    pub kind: InfoKind,
    /// The device it belongs to (`cpu`).
    pub device: String,
    /// Name as settings accept it (`instructions`, `IPC`, `regions`).
    pub name: String,
    /// One line of description.
    pub description: String,
    /// For counters, the group: `hardware`, `software` or `hw-cache`; for metrics, the unit
    /// (may be empty); for traces, the setting that turns it on.
    pub detail: String,
    /// For metrics, the expression; empty otherwise.
    pub expression: String,
    /// True when this machine offers it now.
    pub available: bool,
    /// Why not, when `available` is false.
    pub reason: Option<String>,
}

/// What a GPU backend (the `metron-gpu-nvidia` crate) lends [`devices`] and [`iterate`]: the SDK
/// does not depend on it, so it registers these functions itself ([`set_gpu_provider`]).
#[derive(Clone, Copy, Debug)]
pub struct GpuInfoProvider {
    /// The GPU device names on this machine (`gpu0`, ...); empty without a driver.
    pub devices: fn() -> Vec<String>,
    /// The items of `kind` on a GPU device; `None` when the device is not one of this
    /// machine's.
    pub items: fn(&str, InfoKind) -> Option<Vec<InfoItem>>,
}

static GPU_PROVIDER: std::sync::OnceLock<GpuInfoProvider> = std::sync::OnceLock::new();

/// Registers the GPU backend's info functions (first call wins; false when one was already
/// registered).
pub fn set_gpu_provider(provider: GpuInfoProvider) -> bool {
    GPU_PROVIDER.set(provider).is_ok()
}

/// The devices Metron knows on this machine: `cpu`, then the GPUs of a registered GPU
/// backend (`gpu0`, ...) when a driver finds them.
pub fn devices() -> Vec<String> {
    let mut out = vec!["cpu".to_string()];
    if let Some(p) = GPU_PROVIDER.get() {
        out.extend((p.devices)());
    }
    out
}

/// Why [`iterate`] could not list a device.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownDevice {
    /// The device asked for.
    pub device: String,
}

impl std::fmt::Display for UnknownDevice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "unknown device {:?}; devices on this machine: {}",
            self.device,
            devices().join(", ")
        )
    }
}

impl std::error::Error for UnknownDevice {}

/// Calls `visit` for each item of `kind` on `device` until it returns `Break`.
pub fn iterate(
    device: &str,
    kind: InfoKind,
    mut visit: impl FnMut(&InfoItem) -> ControlFlow<()>,
) -> Result<(), UnknownDevice> {
    let items = if device == "cpu" {
        cpu_items(kind)
    } else {
        match GPU_PROVIDER.get().and_then(|p| (p.items)(device, kind)) {
            Some(items) => items,
            None => {
                return Err(UnknownDevice {
                    device: device.to_string(),
                })
            }
        }
    };
    for item in items {
        if visit(&item).is_break() {
            break;
        }
    }
    Ok(())
}

/// Every item of `kind` on `device`, collected.
pub fn list(device: &str, kind: InfoKind) -> Result<Vec<InfoItem>, UnknownDevice> {
    let mut out = Vec::new();
    iterate(device, kind, |item| {
        out.push(item.clone());
        ControlFlow::Continue(())
    })?;
    Ok(out)
}

fn cpu_items(kind: InfoKind) -> Vec<InfoItem> {
    match kind {
        InfoKind::Counter => cpu_counters(),
        InfoKind::Metric => cpu_metrics(),
        InfoKind::Trace => cpu_traces(),
    }
}

/// Each perf event name once (aliases left out), probed on the calling thread.
fn cpu_counters() -> Vec<InfoItem> {
    let mut names: Vec<&str> = Vec::new();
    let mut push_unique = |table: &[(&'static str, u64)]| {
        let mut seen = Vec::new();
        for (name, config) in table {
            if !seen.contains(config) {
                seen.push(*config);
                names.push(name);
            }
        }
    };
    push_unique(events::SOFTWARE);
    push_unique(events::HARDWARE);
    let mut cache_names = Vec::new();
    for (cache, _) in events::CACHES {
        for op in ["loads", "load-misses", "stores", "store-misses"] {
            cache_names.push(format!("{cache}-{op}"));
        }
    }
    let descriptions = MetricSet::default_cpu();
    let description_of = |name: &str| -> String {
        descriptions
            .arches()
            .values()
            .find_map(|a| a.counters.get(name))
            .and_then(|c| c.description.clone())
            .unwrap_or_else(|| default_description(name))
    };
    names
        .into_iter()
        .map(str::to_string)
        .chain(cache_names)
        .filter_map(|name| {
            let spec = perf::parse_event(&name).ok()?;
            let probe = probe_once(&spec);
            Some(InfoItem {
                kind: InfoKind::Counter,
                device: "cpu".into(),
                description: description_of(&name),
                detail: spec.kind_name().into(),
                expression: String::new(),
                available: probe.is_ok(),
                reason: probe.err(),
                name,
            })
        })
        .collect()
}

fn default_description(name: &str) -> String {
    match name {
        "cpu-clock" => "CPU time of the thread by a per-CPU timer, ns".into(),
        "minor-faults" => "page faults served without I/O".into(),
        "major-faults" => "page faults that needed I/O".into(),
        "alignment-faults" => "alignment faults fixed up by the kernel".into(),
        "emulation-faults" => "instructions emulated by the kernel".into(),
        "bus-cycles" => "bus cycles".into(),
        "stalled-cycles-frontend" => "cycles the front end delivered no instruction".into(),
        "stalled-cycles-backend" => "cycles the back end accepted no instruction".into(),
        "ref-cycles" => "reference cycles (unaffected by frequency scaling)".into(),
        _ => {
            if let Some((cache, op)) = events::CACHES
                .iter()
                .find_map(|(c, _)| name.strip_prefix(c).map(|rest| (*c, rest)))
            {
                format!(
                    "{cache} cache: {}",
                    op.trim_start_matches('-').replace('-', " ")
                )
            } else {
                name.replace('-', " ")
            }
        }
    }
}

/// `perf::probe`, remembered per event for the process: listing counters and then metrics (as
/// `metron avail --counters` does) opens each event once, not once per list and metric.
fn probe_once(spec: &perf::events::EventSpec) -> Result<(), String> {
    use std::collections::HashMap;
    use std::sync::Mutex;
    type Probes = HashMap<(u32, u64, perf::events::Privilege), Result<(), String>>;
    static PROBES: Mutex<Option<Probes>> = Mutex::new(None);
    let key = (spec.kind, spec.config, spec.privilege);
    let mut probes = PROBES.lock().unwrap_or_else(|e| e.into_inner());
    probes
        .get_or_insert_with(HashMap::new)
        .entry(key)
        .or_insert_with(|| perf::probe(spec))
        .clone()
}

/// The built-in metrics plus `METRON_METRICS_FILE`; available when every counter they need
/// opens here.
fn cpu_metrics() -> Vec<InfoItem> {
    let mut set = MetricSet::default_cpu();
    let mut file_error = None;
    if let Ok(path) = std::env::var("METRON_METRICS_FILE") {
        if !path.trim().is_empty() {
            match MetricSet::default_cpu_with_user_file(path.trim()) {
                Ok(merged) => set = merged,
                Err(e) => file_error = Some(e.to_string()),
            }
        }
    }
    let mut out: Vec<InfoItem> = set
        .metrics()
        .values()
        .map(|m| {
            let needed = set.needed_counters([&m.name]).unwrap_or_default();
            let missing: Vec<String> = needed
                .iter()
                .filter(|c| {
                    perf::parse_event(c)
                        .map(|spec| probe_once(&spec).is_err())
                        .unwrap_or(true)
                })
                .cloned()
                .collect();
            InfoItem {
                kind: InfoKind::Metric,
                device: "cpu".into(),
                name: m.name.clone(),
                description: m.description.clone().unwrap_or_default(),
                detail: m.unit.clone().unwrap_or_default(),
                expression: m.expr.source().to_string(),
                available: missing.is_empty(),
                reason: (!missing.is_empty()).then(|| {
                    format!(
                        "needs counters this machine cannot count: {}",
                        missing.join(", ")
                    )
                }),
            }
        })
        .collect();
    if let Some(e) = file_error {
        for item in &mut out {
            item.reason
                .get_or_insert_with(|| format!("(METRON_METRICS_FILE not loaded: {e})"));
        }
    }
    out
}

fn cpu_traces() -> Vec<InfoItem> {
    let trace = |name: &str, description: &str, detail: &str| InfoItem {
        kind: InfoKind::Trace,
        device: "cpu".into(),
        name: name.into(),
        description: description.into(),
        detail: detail.into(),
        expression: String::new(),
        available: true,
        reason: None,
    };
    vec![
        trace(
            "regions",
            "user-marked regions (scope!, #[profile], C begin/end) with their bundle values",
            "METRON_ENABLED",
        ),
        trace("marks", "instant marks", "METRON_TRACE_CATEGORIES"),
        trace("counters", "user counter tracks", "METRON_TRACE_CATEGORIES"),
        trace(
            "annotations",
            "key/value annotations of regions",
            "METRON_TRACE_CATEGORIES",
        ),
        trace(
            "perf_counters",
            "perf_event counter groups per region (PerfCounters component)",
            "METRON_PERF_EVENTS",
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists_counters_metrics_and_traces() {
        let counters = list("cpu", InfoKind::Counter).unwrap();
        let task = counters.iter().find(|c| c.name == "task-clock").unwrap();
        assert_eq!(task.detail, "software");
        assert!(counters.iter().any(|c| c.name == "instructions"));
        assert!(counters.iter().any(|c| c.name == "L1-dcache-load-misses"));
        // Aliases are listed once.
        assert!(!counters.iter().any(|c| c.name == "cs"));
        for c in counters.iter().filter(|c| !c.available) {
            assert!(c.reason.as_deref().is_some_and(|r| !r.is_empty()), "{c:?}");
        }
        let metrics = list("cpu", InfoKind::Metric).unwrap();
        let ipc = metrics.iter().find(|m| m.name == "IPC").unwrap();
        assert_eq!(ipc.expression, "instructions / cycles");
        assert!(!list("cpu", InfoKind::Trace).unwrap().is_empty());
    }

    #[test]
    fn iteration_stops_when_asked_and_unknown_devices_are_named() {
        let mut seen = 0;
        iterate("cpu", InfoKind::Counter, |_| {
            seen += 1;
            ControlFlow::Break(())
        })
        .unwrap();
        assert_eq!(seen, 1);
        let err = iterate("gpu7", InfoKind::Metric, |_| ControlFlow::Continue(())).unwrap_err();
        assert!(
            err.to_string().contains("devices on this machine: cpu"),
            "{err}"
        );
    }
}
