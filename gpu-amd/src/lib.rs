//! Metron's AMD GPU backend: kernel dispatches, async copies and HSA API calls on Metron's
//! clock, handed to Metron's sinks (Perfetto trace, `kernels.csv`, summary) through
//! [`metron::gpu`], as the NVIDIA backend does.
//!
//! - **Loading**: nothing is linked. The HSA runtime loads `libmetron.so` as a tool library
//!   (`HSA_TOOLS_LIB`, set by `metron run`) and calls its `OnLoad` with the runtime's API table
//!   ([`on_load`]). Metron copies the entries it needs, checks each against the size the
//!   runtime filled in, and replaces `hsa_queue_create`, `hsa_queue_destroy`,
//!   `hsa_executable_freeze`, `hsa_memory_copy` and `hsa_amd_memory_async_copy` with its own
//!   (and, as `METRON_GPU_AMD_HSA_API` selects, any other entry with a recording pass-through,
//!   `hsa_api.rs`).
//!   Without ROCm the runtime never calls `OnLoad`; `metron avail` and `metadata.json` say why
//!   ([`probe`]).
//! - **Dispatches** (`intercept.rs`): queues are created with
//!   `hsa_amd_queue_intercept_create`, with dispatch timestamps on; each kernel dispatch packet
//!   gets a completion signal of Metron's from a preallocated pool, whose async handler reads
//!   the dispatch's start and end, converts them to the system domain, queues the record and
//!   then completes the application's own signal.
//! - **Names and resources** (`kernels.rs`, `descriptor.rs`): at `hsa_executable_freeze`, the
//!   kernel symbols give name → kernel object; the kernel descriptor (through the loader
//!   extension's host copy) gives static LDS, scratch, VGPRs and SGPRs.
//! - **Clock** (`clock.rs`): the runtime's system timestamps paired with `CLOCK_MONOTONIC`.
//! - **Delivery** (`records.rs`): a lock-free record queue, drained every 10 ms by the
//!   `metron-hsa` thread and at every flush.
//! - **ROCprofiler-SDK** (`rocprofiler_sdk.rs`): when the SDK is installed and loads Metron as
//!   a tool (`rocprofiler_configure`), it does the tracing and HSA interception stays off.

mod agent;
mod api_calls;
mod api_table;
mod clock;
mod counters;
mod descriptor;
mod hsa_api;
mod intercept;
mod kernels;
mod records;
mod rocprofiler_sdk;
mod sys;
mod sys_api_trace;
mod sys_aqlprofile;
#[allow(dead_code)]
mod sys_fake_runtime;
mod sys_hooks;
mod sys_sdk;
mod sys_sdk_records;
mod sys_sdk_types;
#[allow(dead_code)]
mod sys_tables;

pub use descriptor::{decode as decode_kernel_descriptor, KernelInfo};

/// An in-process stand-in for the HSA runtime, for Metron's benchmarks and allocation test
/// (not for tools: it answers for one fake GPU).
#[doc(hidden)]
pub mod fake_runtime {
    pub use crate::sys_fake_runtime::{
        dispatch, install, signal_store_relaxed, signal_subtract_screlease,
    };
}
pub use rocprofiler_sdk::configure as rocprofiler_configure;

use metron::gpu::GpuDevice;
use metron::settings::{env_bool, env_count};
use serde_json::{json, Value};
use std::ffi::c_char;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Mutex;

/// Which AMD tracing path a process uses (at most one).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Path {
    /// The HSA tools interface (`OnLoad`).
    HsaIntercept = 1,
    /// ROCprofiler-SDK (`rocprofiler_configure`).
    RocprofilerSdk = 2,
}

static CLAIMED: AtomicU8 = AtomicU8::new(0);

/// `METRON_GPU_AMD_BACKEND`: which path may trace (`auto`: the first to start, except that
/// `OnLoad` steps aside when ROCprofiler-SDK is already loaded in the process).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Preference {
    /// Either; ROCprofiler-SDK when it is loaded before `OnLoad`.
    Auto,
    /// Only the HSA tools interface.
    Hsa,
    /// Only ROCprofiler-SDK.
    RocprofilerSdk,
}

/// The `METRON_GPU_AMD_BACKEND` setting (`auto` for anything else, as the registry reports).
pub fn preference() -> Preference {
    match std::env::var("METRON_GPU_AMD_BACKEND")
        .map(|v| v.trim().to_ascii_lowercase())
        .as_deref()
    {
        Ok("hsa") => Preference::Hsa,
        Ok("rocprofiler-sdk") => Preference::RocprofilerSdk,
        _ => Preference::Auto,
    }
}

/// The ROCprofiler-SDK library names looked for (already loaded only: Metron never loads it).
pub const ROCPROFILER_SDK: &[&str] = &["librocprofiler-sdk.so.1", "librocprofiler-sdk.so"];

/// Whether ROCprofiler-SDK is loaded in this process now.
pub fn rocprofiler_sdk_loaded() -> bool {
    ROCPROFILER_SDK.iter().any(|l| sys::library_loaded(l))
}

/// Makes `path` the process's AMD tracing path; `Err` with the path already chosen.
pub fn claim(path: Path) -> Result<(), Path> {
    match CLAIMED.compare_exchange(0, path as u8, Ordering::AcqRel, Ordering::Acquire) {
        Ok(_) => Ok(()),
        Err(x) if x == path as u8 => Ok(()),
        Err(1) => Err(Path::HsaIntercept),
        Err(_) => Err(Path::RocprofilerSdk),
    }
}

/// Gives the claim of `path` up (its start failed), so the other path may still trace.
pub(crate) fn unclaim(path: Path) {
    let _ = CLAIMED.compare_exchange(path as u8, 0, Ordering::AcqRel, Ordering::Acquire);
}

/// The path that claimed the process, if any.
fn claimed() -> Option<Path> {
    match CLAIMED.load(Ordering::Acquire) {
        1 => Some(Path::HsaIntercept),
        2 => Some(Path::RocprofilerSdk),
        _ => None,
    }
}

/// What the backend found and did.
#[derive(Clone, Debug, Default)]
pub struct Status {
    /// Tracing is on.
    pub enabled: bool,
    /// Why it is off (`None` when on).
    pub reason: Option<String>,
    /// The runtime's version as `OnLoad` gave it.
    pub runtime_version: Option<u64>,
    /// The HSA runtime library, when found.
    pub runtime_library: Option<String>,
    /// `/dev/kfd` exists (the AMD GPU kernel driver).
    pub kfd: bool,
    /// The GPUs.
    pub devices: Vec<GpuDevice>,
    /// GPU architectures, by device index.
    pub architectures: Vec<String>,
    /// Tool libraries the runtime said failed to load before Metron.
    pub failed_tools: Vec<String>,
    /// What `METRON_GPU_AMD_HSA_API` named but Metron could not trace.
    pub hsa_api_problems: Vec<String>,
}

impl Status {
    fn off(reason: String) -> Status {
        let mut s = probe();
        s.enabled = false;
        s.reason = Some(reason);
        s
    }

    /// As JSON (for `metron avail` and `metadata.json`).
    pub fn to_json(&self) -> Value {
        let counts = &intercept::COUNTS;
        let (signals, in_flight) = intercept::pool_usage();
        let [dispatches, copies, api_calls] = records::delivered();
        json!({
            "backend": "hsa",
            "enabled": self.enabled,
            "reason": self.reason,
            "hsa_runtime": self.runtime_library,
            "hsa_runtime_version": self.runtime_version,
            "kfd": self.kfd,
            "devices": self.devices,
            "architectures": self.architectures,
            "failed_tools": self.failed_tools,
            "queues_intercepted": counts.queues.load(Ordering::Relaxed),
            "queues_not_intercepted": counts.queues_not_intercepted.load(Ordering::Relaxed),
            "dispatches_seen": counts.dispatches.load(Ordering::Relaxed),
            "copies_seen": counts.copies.load(Ordering::Relaxed),
            "records": {"kernels": dispatches, "copies": copies, "api_calls": api_calls},
            "dropped_queue_full": records::dropped(),
            "untimed_no_free_signal": counts.untimed_no_signal.load(Ordering::Relaxed),
            "untimed_no_timestamp": counts.untimed_no_timestamp.load(Ordering::Relaxed),
            "completion_signals": signals,
            "in_flight": in_flight,
            "kernels_known": kernels::count(),
            "counters": counters::metadata(),
            "hsa_api": {
                "setting": std::env::var(hsa_api::SETTING).ok(),
                "functions_traced": hsa_api::traced_count(),
                "wrappers_installed": hsa_api::wrapped_count(),
                "problems": self.hsa_api_problems,
            },
        })
    }
}

/// Where the HSA runtime is looked for (probe only: the runtime loads Metron, not the other
/// way round).
pub const HSA_RUNTIME: &str = "libhsa-runtime64.so.1";

/// What is installed, without loading anything: the HSA runtime library and the AMD GPU driver
/// (`/dev/kfd`).
pub fn probe() -> Status {
    let runtime_library = sys::find_library(HSA_RUNTIME);
    let kfd = std::path::Path::new("/dev/kfd").exists();
    let reason = match (&runtime_library, kfd) {
        (None, _) => format!("{HSA_RUNTIME} not found: ROCm is not installed"),
        (Some(_), false) => "no /dev/kfd: no AMD GPU driver (the HSA runtime is installed \
                             but cannot start)"
            .into(),
        (Some(_), true) => "the HSA runtime did not load Metron (HSA_TOOLS_LIB not set to \
                            libmetron.so, or the process never initialised HSA)"
            .into(),
    };
    Status {
        reason: Some(reason),
        runtime_library,
        kfd,
        ..Status::default()
    }
}

static STATUS: Mutex<Option<Status>> = Mutex::new(None);

/// What the backend did in this process (`None` before `OnLoad`).
pub fn status() -> Option<Status> {
    STATUS.lock().unwrap_or_else(|e| e.into_inner()).clone()
}

fn set_status(s: Status) {
    *STATUS.lock().unwrap_or_else(|e| e.into_inner()) = Some(s);
}

/// The `gpu` section of `metadata.json` when the HSA runtime loaded Metron (else the probe's
/// reason).
pub fn metadata() -> Value {
    if claimed() == Some(Path::RocprofilerSdk) {
        return rocprofiler_sdk::metadata();
    }
    status().unwrap_or_else(probe).to_json()
}

/// `OnLoad`: takes over the runtime's table entries. Returns why it stays off.
///
/// # Safety
/// `table` is the runtime's `HsaApiTable` (or null), alive and not yet used by the application;
/// `failed_tool_names` holds `failed_tool_count` C strings (or is null).
pub unsafe fn on_load(
    table: *mut std::ffi::c_void,
    runtime_version: u64,
    failed_tool_count: u64,
    failed_tool_names: *const *const c_char,
) -> Result<(), String> {
    let failed: Vec<String> = (0..failed_tool_count as usize)
        .filter(|_| !failed_tool_names.is_null())
        // SAFETY: the runtime passes `failed_tool_count` C strings (caller's contract).
        .filter_map(|i| unsafe { sys::c_str(*failed_tool_names.add(i)) })
        .collect();
    let table = table.cast::<sys::HsaApiTable>();
    // SAFETY: the caller's contract.
    let result = unsafe { start(table, runtime_version) };
    let mut status = match &result {
        Ok(s) => s.clone(),
        Err(why) => Status::off(why.clone()),
    };
    status.failed_tools = failed;
    status.runtime_version = Some(runtime_version);
    set_status(status);
    result.map(|_| ())
}

/// # Safety
/// As [`on_load`].
unsafe fn start(table: *mut sys::HsaApiTable, _runtime_version: u64) -> Result<Status, String> {
    if !env_bool("METRON_GPU", true) {
        return Err("METRON_GPU is off".into());
    }
    match preference() {
        Preference::RocprofilerSdk => {
            return Err("METRON_GPU_AMD_BACKEND=rocprofiler-sdk: HSA interception stays off".into())
        }
        Preference::Auto if rocprofiler_sdk_loaded() => {
            return Err(
                "ROCprofiler-SDK is loaded in this process: it traces (through \
                        rocprofiler_configure), HSA interception stays off"
                    .into(),
            )
        }
        _ => {}
    }
    // A tool library named in HSA_TOOLS_LIB by hand (not under `metron run`) starts the
    // runtime here, so the records have somewhere to go.
    if !metron::init() {
        return Err("Metron is off (METRON_ENABLED=0)".into());
    }
    if let Err(other) = claim(Path::HsaIntercept) {
        return Err(format!(
            "{other:?} already traces this process; HSA interception stays off"
        ));
    }
    let checked = sys::check_table(table).and_then(|()| {
        // SAFETY: check_table passed; the caller's contract.
        unsafe { sys::read_runtime(table) }
    });
    let rt = match checked {
        Ok(rt) => intercept::set_runtime(
            rt,
            intercept::Handlers {
                on_packets: sys_hooks::on_packets,
                on_completion: sys_hooks::on_completion,
            },
        ),
        Err(why) => {
            unclaim(Path::HsaIntercept);
            return Err(why);
        }
    };
    rt.system_u64(sys::SYSTEM_INFO_TIMESTAMP_FREQUENCY)
        .filter(|&f| f > 0)
        .ok_or("the runtime gives no system timestamp frequency")?;
    calibrate().ok_or("the runtime's system timestamp cannot be read")?;
    let agents = intercept::agents(rt);
    let gpus: Vec<&intercept::Agent> = agents.iter().filter(|a| a.gpu).collect();
    let devices: Vec<GpuDevice> = gpus
        .iter()
        .map(|a| GpuDevice {
            index: a.device,
            name: a.name.clone(),
        })
        .collect();
    records::init(env_count("METRON_GPU_AMD_RECORDS", 1 << 16));
    intercept::set_pool_size(env_count("METRON_GPU_AMD_SIGNALS", 1024));
    intercept::set_launch_key(metron::intern(
        metron::gpu::LAUNCH_KEY,
        metron::CallsiteKind::AnnotationKey,
    ));
    let copies = rt.async_copy.is_some() && rt.enable_copy_profiling();
    let metrics = std::env::var("METRON_GPU_METRICS").unwrap_or_default();
    if !metron_metrics::split_list(&metrics).is_empty() {
        // SAFETY: check_table passed; the AMD table is read before Metron replaces entries.
        let pools = unsafe { sys_aqlprofile::read_pool_calls((*table).amd_ext) };
        counters::setup(rt, pools, agents, &metrics);
    }
    let wrappers = sys::Wrappers {
        queue_create: sys_hooks::queue_create,
        queue_destroy: sys_hooks::queue_destroy,
        executable_freeze: sys_hooks::executable_freeze,
        memory_copy: sys_hooks::memory_copy,
        async_copy: sys_hooks::async_copy,
    };
    // SAFETY: check_table passed; OnLoad runs before the application uses the table.
    unsafe { sys::install(table, &wrappers, copies) };
    let api_records = std::env::var("METRON_GPU_API").map_or(true, |v| v.trim() != "none");
    let mut api = hsa_api::parse(std::env::var(hsa_api::SETTING).ok().as_deref());
    for problem in &api.problems {
        eprintln!("metron: {problem}");
    }
    if !api_records {
        api.enabled.iter_mut().for_each(|e| *e = false);
    }
    // SAFETY: check_table passed; Metron's own entries were copied above (read_runtime,
    // read_pool_calls), so its calls into the runtime are never recorded.
    unsafe { hsa_api::install(table, &api, copies) };
    intercept::set_tracing(true);
    metron::gpu::set_backend(
        metron::gpu::Backend {
            flush,
            metadata,
            stream_word: "queue",
        },
        devices.clone(),
    );
    records::start_drain();
    Ok(Status {
        enabled: true,
        reason: None,
        runtime_library: Some(HSA_RUNTIME.into()),
        kfd: std::path::Path::new("/dev/kfd").exists(),
        devices,
        architectures: gpus.iter().map(|a| a.arch.clone()).collect(),
        hsa_api_problems: api.problems,
        ..Status::default()
    })
}

/// Pairs the runtime's system clock with `CLOCK_MONOTONIC` now.
/// Once the runtime's `OnUnload` ran, nothing may call into it: the last pairing is kept.
pub(crate) fn calibrate() -> Option<clock::Calibration> {
    static LAST: Mutex<Option<clock::Calibration>> = Mutex::new(None);
    let mut last = LAST.lock().unwrap_or_else(|e| e.into_inner());
    if !RUNTIME_GONE.load(Ordering::Acquire) {
        let fresh = intercept::runtime().and_then(|rt| {
            let frequency = rt.system_u64(sys::SYSTEM_INFO_TIMESTAMP_FREQUENCY)?;
            clock::Calibration::measure(frequency, || rt.system_u64(sys::SYSTEM_INFO_TIMESTAMP))
        });
        if fresh.is_some() {
            *last = fresh;
        }
    }
    *last
}

/// Set by `OnUnload`: the runtime is shutting down.
static RUNTIME_GONE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// The SDK's flush hook: delivers what completed; at the end of the run, first waits (up to
/// 1 s) for dispatches and copies still in flight.
fn flush(at_end: bool) {
    if at_end {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(1);
        while !RUNTIME_GONE.load(Ordering::Acquire)
            && intercept::pool_usage().1 > 0
            && std::time::Instant::now() < deadline
        {
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        records::stop();
    } else {
        records::drain();
    }
}

/// Learns the kernels of a frozen executable (names and descriptors).
fn learn_kernels(rt: &sys::Runtime, executable: sys::Handle) {
    let loader = rt.loader();
    let symbols = rt
        .kernel_symbols(executable)
        .into_iter()
        .map(|(name, object)| {
            let bytes = loader.as_ref().and_then(|l| l.host_bytes::<64>(object));
            (name, object, bytes)
        })
        .collect();
    kernels::add(symbols, &intercept::first_gpu_arch());
}

/// `OnUnload`: the runtime is shutting down; deliver what completed.
pub fn on_unload() {
    if intercept::tracing() {
        records::drain();
    }
    RUNTIME_GONE.store(true, Ordering::Release);
}

/// The AMD GPU counters Metron knows (`metrics/data/amd_gpu.xml`), for `metron avail`:
/// per architecture its counters (name, AQLprofile block, counter id, description), and the
/// derived metrics (name, expression, description).
pub fn counter_tables() -> Value {
    let set = match metron_metrics::MetricSet::from_xml(
        metron_metrics::DEFAULT_AMD_GPU_FILE,
        metron_metrics::DEFAULT_AMD_GPU_XML,
    ) {
        Ok(set) => set,
        Err(e) => return json!({ "error": e.to_string() }),
    };
    let arches: serde_json::Map<String, Value> = set
        .arches()
        .iter()
        .map(|(name, arch)| {
            let counters: Vec<Value> = arch
                .counters
                .values()
                .map(|c| {
                    json!({"name": c.name, "block": c.block, "event": c.event,
                           "description": c.description})
                })
                .collect();
            (name.clone(), Value::Array(counters))
        })
        .collect();
    let metrics: Vec<Value> = set
        .metrics()
        .values()
        .map(|m| {
            json!({"name": m.name, "expression": m.expr.to_string(),
                   "description": m.description, "unit": m.unit})
        })
        .collect();
    json!({
        "file": "metrics/data/amd_gpu.xml",
        "architectures": arches,
        "metrics": metrics,
        "note": "another gfx9xx uses the gfx9 table; counted per dispatch through AQLprofile",
    })
}

/// The layouts Metron assumes, `("C.field", offset)` / `("sizeof C", size)`, for checking
/// against `hsa.h`, `hsa_api_trace.h` and `hsa_ven_amd_loader.h`.
pub fn layouts() -> Vec<(&'static str, usize)> {
    let mut all = sys::layouts();
    all.extend(sys_aqlprofile::layouts());
    all.extend(sys_tables::table_layouts());
    all
}

/// Every HSA API function `METRON_GPU_AMD_HSA_API` can trace (`hsa.h` ones first, then
/// `hsa_ext_amd.h`), for `metron avail`.
pub fn hsa_api_functions() -> &'static [&'static str] {
    &api_table::NAMES
}

/// The signature of each HSA API wrapper, `(function, "args->ret")` in the ABI classes it
/// passes (`P` pointer, `u64` handle or 64-bit integer, `u32` enum, ...), for checking against
/// the headers' prototypes.
pub fn hsa_api_signatures() -> Vec<(&'static str, &'static str)> {
    sys_api_trace::SIGNATURES
        .iter()
        .map(|&(i, sig)| (api_table::NAMES[i], sig))
        .collect()
}

/// The constants Metron assumes, `("NAME", value)`, for the same check.
pub fn constants() -> Vec<(&'static str, u64)> {
    let mut all = sys::constants();
    all.extend(sys_aqlprofile::constants());
    all
}
