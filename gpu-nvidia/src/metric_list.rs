//! The metrics a GPU offers, from the CUPTI profiler host API (`cupti_profiler_host.h`): the
//! chip name and counter availability of the device (its primary context), a host object, the
//! base metrics of each type (counter, ratio, throughput) with their submetrics and properties.
//! Off the hot path: `metron avail` and `metron::info` call it, never a measured program.

use crate::sys::{self, Cupti};
use crate::sys_profiler::{Object, Profiler};
use std::sync::Mutex;

/// One base metric the device offers. `METRON_GPU_METRICS` takes it with one of its
/// submetrics: `smsp__inst_executed` + `.sum` = `smsp__inst_executed.sum`.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct GpuMetric {
    /// The base metric (`smsp__inst_executed`).
    pub name: String,
    /// `counter`, `ratio` or `throughput`.
    pub kind: &'static str,
    /// CUPTI's description.
    pub description: String,
    /// The dimension unit (`instruction`, `byte`, ...), may be empty.
    pub unit: String,
    /// The hardware unit that counts it (`smsp`, `dram`, ...), may be empty.
    pub hw_unit: String,
    /// The submetric suffixes CUPTI lists for it (`.sum`, `.avg.per_second`, ...).
    pub submetrics: Vec<String>,
}

impl GpuMetric {
    /// The full names: the base with each submetric (the base alone when it has none).
    pub fn full_names(&self) -> Vec<String> {
        if self.submetrics.is_empty() {
            return vec![self.name.clone()];
        }
        self.submetrics
            .iter()
            .map(|s| full_name(&self.name, s))
            .collect()
    }
}

const TYPES: [(i32, &str); 3] = [(0, "counter"), (1, "ratio"), (2, "throughput")];

/// Device ordinal → its metrics (or why none), listed once per process.
static CACHE: Mutex<Vec<(u32, Listed)>> = Mutex::new(Vec::new());

/// A device's metrics, or why none.
type Listed = Result<Vec<GpuMetric>, String>;

/// The base metrics of GPU `device` (ordinal), sorted by name; `Err(reason)` when there is no
/// driver, no such GPU, no CUPTI, or the profiler refuses. Cached per device.
pub fn metrics(device: u32) -> Result<Vec<GpuMetric>, String> {
    let mut cache = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, r)) = cache.iter().find(|(d, _)| *d == device) {
        return r.clone();
    }
    let r = list(device);
    cache.push((device, r.clone()));
    r
}

fn list(device: u32) -> Result<Vec<GpuMetric>, String> {
    let (driver, _) = crate::load_driver()?;
    let r = driver.cu_init();
    if r != 0 {
        return Err(format!(
            "cuInit failed with CUDA error {r}: the driver found no usable GPU"
        ));
    }
    let count = driver.device_count().unwrap_or(0);
    if device as i64 >= count as i64 {
        return Err(format!(
            "no GPU {device}: the CUDA driver reports {count} GPU(s)"
        ));
    }
    let (cupti, path, _) = crate::load_cupti()?;
    let handle = sys::dlopen(&path, true).or_else(|_| sys::dlopen("libcupti.so.13", true))?;
    let p =
        Profiler::load(handle).map_err(|e| format!("the profiler API is not in {path}: {e}"))?;
    p.initialize(&cupti)?;
    let chip = p.chip_name(&cupti, device as usize)?;
    let availability =
        driver.with_primary_context(device as i32, |ctx| p.counter_availability(&cupti, ctx))??;
    // Both outlive the host object (see `Profiler::host_init`).
    let chip_c =
        std::ffi::CString::new(chip.as_str()).map_err(|_| "chip name with NUL".to_string())?;
    let host = p.host_init(&cupti, &chip_c, &availability)?;
    let out = enumerate(&p, &cupti, host);
    let _ = p.host_deinit(&cupti, host);
    drop((chip_c, availability));
    out.map_err(|e| format!("{chip}: {e}"))
}

fn enumerate(p: &Profiler, cupti: &Cupti, host: Object) -> Result<Vec<GpuMetric>, String> {
    let mut out = Vec::new();
    for (ty, kind) in TYPES {
        for base in p.base_metrics(cupti, host, ty)? {
            let props = p.metric_properties(cupti, host, &base).unwrap_or_default();
            let submetrics = p
                .sub_metrics(cupti, host, ty, &base)
                .unwrap_or_default()
                .into_iter()
                .map(|sub| {
                    if sub.starts_with('.') {
                        sub
                    } else {
                        format!(".{sub}")
                    }
                })
                .collect();
            out.push(GpuMetric {
                name: base,
                kind,
                description: props.description,
                unit: props.dim_unit,
                hw_unit: props.hw_unit,
                submetrics,
            });
        }
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out.dedup_by(|a, b| a.name == b.name);
    Ok(out)
}

/// `base` + submetric (`.sum` or `sum`: one dot between).
fn full_name(base: &str, sub: &str) -> String {
    if sub.starts_with('.') {
        format!("{base}{sub}")
    } else {
        format!("{base}.{sub}")
    }
}

/// `metron::info` for GPUs: `gpu<N>` per GPU the driver reports (none without a driver).
fn info_devices() -> Vec<String> {
    let Ok((driver, _)) = crate::load_driver() else {
        return Vec::new();
    };
    if driver.cu_init() != 0 {
        return Vec::new();
    }
    (0..driver.device_count().unwrap_or(0).max(0))
        .map(|i| format!("gpu{i}"))
        .collect()
}

/// `metron::info` items of `device` (`gpu<N>`): `None` when it is not one of this machine's.
fn info_items(device: &str, kind: metron::info::InfoKind) -> Option<Vec<metron::info::InfoItem>> {
    use metron::info::{InfoItem, InfoKind};
    let index: u32 = device.strip_prefix("gpu")?.parse().ok()?;
    if !info_devices().iter().any(|d| d == device) {
        return None;
    }
    let item = |name: String, description: String, detail: String| InfoItem {
        kind,
        device: device.to_string(),
        name,
        description,
        detail,
        expression: String::new(),
        available: true,
        reason: None,
    };
    Some(match kind {
        InfoKind::Counter => Vec::new(),
        InfoKind::Metric => match metrics(index) {
            Ok(list) => list
                .into_iter()
                .map(|m| {
                    let description = match m.submetrics.first() {
                        Some(first) => format!(
                            "{} ({}; {} submetrics, e.g. {}{first})",
                            m.description,
                            m.kind,
                            m.submetrics.len(),
                            m.name
                        ),
                        None => format!("{} ({})", m.description, m.kind),
                    };
                    item(m.name, description, m.unit)
                })
                .collect(),
            Err(e) => vec![InfoItem {
                available: false,
                reason: Some(e),
                ..item(
                    "metrics".into(),
                    "the device's CUPTI metrics".into(),
                    String::new(),
                )
            }],
        },
        InfoKind::Trace => vec![
            item(
                "kernels".into(),
                "CUDA kernels, copies and sets (CUPTI activity)".into(),
                "METRON_GPU".into(),
            ),
            item(
                "gpu_counters".into(),
                "CUPTI Range Profiler metrics per kernel or region".into(),
                "METRON_GPU_METRICS".into(),
            ),
        ],
    })
}

/// Registers the GPU devices with `metron::info` (first call wins; cheap, loads nothing).
pub fn register_info() {
    metron::info::set_gpu_provider(metron::info::GpuInfoProvider {
        devices: info_devices,
        items: info_items,
    });
}

/// Registers at load, so that every program linking metron-gpu-nvidia (the C library, the CLI) lists
/// its GPUs in `metron::info` without a call of its own.
#[used]
#[link_section = ".init_array"]
static REGISTER_AT_LOAD: extern "C" fn() = register_at_load;

/// Runs when the binary is loaded. Must not unwind into the loader.
extern "C" fn register_at_load() {
    let _ = std::panic::catch_unwind(register_info);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn submetric_names_join_with_one_dot() {
        assert_eq!(
            full_name("smsp__inst_executed", ".sum"),
            "smsp__inst_executed.sum"
        );
        assert_eq!(full_name("dram__bytes_read", "sum"), "dram__bytes_read.sum");
        let m = GpuMetric {
            name: "dram__bytes_read".into(),
            kind: "counter",
            description: String::new(),
            unit: "byte".into(),
            hw_unit: "dram".into(),
            submetrics: vec![".sum".into(), ".max".into()],
        };
        assert_eq!(
            m.full_names(),
            ["dram__bytes_read.sum", "dram__bytes_read.max"]
        );
    }
}
