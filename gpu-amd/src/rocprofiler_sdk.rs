//! Metron as a ROCprofiler-SDK tool. Where the SDK is installed it finds
//! `rocprofiler_configure` in `libmetron.so` and Metron lets it do the tracing, with the SDK's
//! buffered services; the HSA interception (`OnLoad`) then stays off for the process.
//!
//! - **Configure** ([`configure`]): claims the SDK path ([`crate::claim`]; declines with null
//!   when `OnLoad` already traces, or `METRON_GPU` is off) and returns the tool's
//!   configuration.
//! - **Initialize** (the SDK calls it once every tool is configured): one context; one buffer
//!   (`METRON_GPU_AMD_BUFFER_BYTES`, default 4 MiB; flushed at 7/8 full; policy
//!   `METRON_GPU_AMD_BUFFER_POLICY` = `lossless` (default) or `discard`, the SDK's drop count
//!   kept for `metadata.json`) on a callback thread of Metron's own where the SDK has them;
//!   buffer tracing of `KERNEL_DISPATCH`, `MEMORY_COPY` and (unless `METRON_GPU_API=none`)
//!   `HIP_RUNTIME_API` and the HSA API kinds `METRON_GPU_AMD_HSA_API` names, whose operation
//!   names are looked up once here; callback tracing of
//!   `CODE_OBJECT` (kernel symbols: name, static LDS, scratch, VGPRs, SGPRs) and of the
//!   `KERNEL_DISPATCH`
//!   enqueue, which runs on the launching thread: there Metron records the launch annotation
//!   ([`metron::gpu::LAUNCH_KEY`]) with the dispatch's correlation id, which joins the kernel
//!   with the region open at its launch. Then the context starts.
//! - **Records** ([`on_buffer`], on the SDK's callback thread): kernel dispatches and copies
//!   become [`GpuRecord`]s for [`metron::gpu::submit`], and HIP runtime API calls
//!   [`GpuKind::HipApi`] records (the call's name, its thread, and the internal correlation id
//!   that its kernels and copies carry too, which joins them in the trace). The SDK's
//!   timestamps are ns on its own clock (`rocprofiler_get_timestamp`, `CLOCK_BOOTTIME` in the SDK's sources): each batch
//!   pairs that clock with `CLOCK_MONOTONIC` ([`crate::clock::Calibration`]) and converts.
//! - **Flush**: Metron's flush hook calls `rocprofiler_flush_buffer`; the SDK's finalize (at
//!   exit) flushes too, and no SDK function is called after it.
//! - **Counters** (`METRON_GPU_METRICS`: the SDK's counter names, comma-separated, and derived
//!   metrics written `name=expression` in the metric layer's language): the dispatch counting
//!   service on the same buffer, one counter configuration per GPU; each dispatch's values
//!   (summed over the counter's instances) become its `kernels.csv` columns, then the derived
//!   ones evaluated on them. A counter the GPU does not offer reads NaN and is listed in
//!   `metadata.json` (`not_traced`); the SDK's own derived counters can be named directly.

use crate::clock::Calibration;
use crate::descriptor::KernelInfo;
use crate::kernels::Kernel;
use crate::sys_sdk::{
    self as sdk, Agent, ApiCall, Callback, Dispatch, KernelSymbol, MemoryCopy, Record,
};
use metron::gpu::{GpuDevice, GpuKind, GpuRecord};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::ffi::{c_char, c_void};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

/// What the SDK path found and did (for `metadata.json`).
#[derive(Clone, Debug, Default)]
struct State {
    /// Tracing is on.
    enabled: bool,
    /// Why it is off, or what is missing.
    reason: Option<String>,
    /// `rocprofiler_configure`'s `version`: `10000 * major + 100 * minor + patch`.
    version: u32,
    /// `rocprofiler_configure`'s `runtime_version`.
    runtime_version: Option<String>,
    /// `rocprofiler_configure`'s `priority` (tools configured before Metron).
    priority: u32,
    buffer_bytes: usize,
    watermark: usize,
    policy: &'static str,
    own_callback_thread: bool,
    /// Services that could not be configured (the rest still traces).
    missing: Vec<String>,
    /// HIP runtime API calls are traced.
    hip_api: bool,
    /// HSA API operations traced (`METRON_GPU_AMD_HSA_API`): per table, the count, 0 = none,
    /// `None` = every one.
    hsa_api: Vec<(&'static str, Option<usize>)>,
    /// What `METRON_GPU_AMD_HSA_API` named that is not traced, and why.
    hsa_api_problems: Vec<String>,
}

static STATE: Mutex<Option<State>> = Mutex::new(None);

fn update(f: impl FnOnce(&mut State)) {
    let mut s = STATE.lock().unwrap_or_else(|e| e.into_inner());
    f(s.get_or_insert_with(State::default));
}

/// The buffer, once made.
static BUFFER: OnceLock<sdk::BufferId> = OnceLock::new();
/// Set by the SDK's finalize: no SDK function may be called after it.
static FINALIZED: AtomicBool = AtomicBool::new(false);
static LAUNCH_KEY_ID: AtomicU32 = AtomicU32::new(0);
static DROPPED: AtomicU64 = AtomicU64::new(0);
static KERNEL_RECORDS: AtomicU64 = AtomicU64::new(0);
static COPY_RECORDS: AtomicU64 = AtomicU64::new(0);
static UNKNOWN_KERNELS: AtomicU64 = AtomicU64::new(0);
static UNRECOGNIZED_CALLBACKS: AtomicU64 = AtomicU64::new(0);
static LAUNCHES: AtomicU64 = AtomicU64::new(0);
static HIP_API_RECORDS: AtomicU64 = AtomicU64::new(0);
static HSA_API_RECORDS: AtomicU64 = AtomicU64::new(0);
static UNKNOWN_API_RECORDS: AtomicU64 = AtomicU64::new(0);

/// HIP and HSA API names by (buffer tracing kind, operation id), filled at initialize; an
/// operation missing there is asked for once, on the buffer thread.
static API_NAMES: Mutex<Option<ApiNames>> = Mutex::new(None);

/// Operation names by (buffer tracing kind, operation id).
type ApiNames = HashMap<(i32, i32), Arc<str>>;

/// Whether `METRON_GPU_API` asks for API records (everything but `none`, as on the HSA path).
fn api_records_wanted(setting: Option<&str>) -> bool {
    setting.is_none_or(|v| v.trim() != "none")
}

/// `rocprofiler_configure`: the tool's configuration, or null to decline.
pub fn configure(
    version: u32,
    runtime_version: *const c_char,
    priority: u32,
    client_id: *mut c_void,
) -> *mut c_void {
    let runtime_version = sdk::runtime_version(runtime_version);
    update(|s| {
        s.version = version;
        s.runtime_version = runtime_version;
        s.priority = priority;
    });
    if !metron::settings::env_bool("METRON_GPU", true) {
        update(|s| s.reason = Some("METRON_GPU is off".into()));
        return std::ptr::null_mut();
    }
    if crate::preference() == crate::Preference::Hsa {
        update(|s| {
            s.reason = Some("METRON_GPU_AMD_BACKEND=hsa: ROCprofiler-SDK is not used".into())
        });
        return std::ptr::null_mut();
    }
    if let Err(other) = crate::claim(crate::Path::RocprofilerSdk) {
        update(|s| {
            s.reason = Some(format!(
                "{other:?} already traces this process; ROCprofiler-SDK is not used"
            ))
        });
        return std::ptr::null_mut();
    }
    sdk::name_client(client_id);
    sdk::configure_result()
}

/// The tool's initialize (the SDK calls it once): 0 when tracing, -1 to have the SDK drop
/// Metron's contexts.
pub(crate) fn initialize() -> i32 {
    match start() {
        Ok(()) => {
            update(|s| {
                s.enabled = true;
                s.reason = None;
            });
            0
        }
        Err(why) => {
            eprintln!("metron: AMD GPU tracing (ROCprofiler-SDK) is off: {why}");
            update(|s| s.reason = Some(why));
            crate::unclaim(crate::Path::RocprofilerSdk);
            -1
        }
    }
}

/// What `METRON_GPU_AMD_BUFFER_POLICY` asks for: the SDK's policy and its name.
fn policy(setting: Option<&str>) -> (i32, &'static str) {
    match setting.map(|v| v.trim().to_ascii_lowercase()) {
        Some(v) if v == "discard" => (sdk::BUFFER_POLICY_DISCARD, "discard"),
        _ => (sdk::BUFFER_POLICY_LOSSLESS, "lossless"),
    }
}

/// The buffer's size and watermark (7/8 of it) for `METRON_GPU_AMD_BUFFER_BYTES`.
fn buffer_sizes(bytes: usize) -> (usize, usize) {
    let size = bytes.max(4096);
    (size, size - size / 8)
}

fn start() -> Result<(), String> {
    let api = sdk::set_api(sdk::Api::load()?);
    if !metron::init() {
        return Err("Metron is off (METRON_ENABLED=0 or not started)".into());
    }
    calibrate().ok_or("rocprofiler_get_timestamp gives no time")?;
    let agents = AGENTS.get_or_init(|| api.agents().unwrap_or_default());
    let devices = devices_of(agents);
    LAUNCH_KEY_ID.store(
        metron::intern(metron::gpu::LAUNCH_KEY, metron::CallsiteKind::AnnotationKey),
        Ordering::Release,
    );

    let context = api.create_context()?;
    let (size, watermark) = buffer_sizes(metron::settings::env_size(
        "METRON_GPU_AMD_BUFFER_BYTES",
        4 << 20,
    ));
    let (policy, policy_name) = policy(
        std::env::var("METRON_GPU_AMD_BUFFER_POLICY")
            .ok()
            .as_deref(),
    );
    let buffer = api.create_buffer(context, size, watermark, policy)?;
    let _ = BUFFER.set(buffer);
    let own_thread = api.own_callback_thread(buffer);
    update(|s| {
        s.buffer_bytes = size;
        s.watermark = watermark;
        s.policy = policy_name;
        s.own_callback_thread = own_thread;
    });

    api.configure_buffer_tracing(context, sdk::BUFFER_TRACING_KERNEL_DISPATCH, &[], buffer)?;
    api.configure_callback_tracing(
        context,
        sdk::CALLBACK_TRACING_CODE_OBJECT,
        &[sdk::CODE_OBJECT_DEVICE_KERNEL_SYMBOL_REGISTER],
    )?;
    let mut missing = Vec::new();
    if let Err(why) =
        api.configure_buffer_tracing(context, sdk::BUFFER_TRACING_MEMORY_COPY, &[], buffer)
    {
        missing.push(format!("memory copies: {why}"));
    }
    let mut hip_api = false;
    let metron_gpu_api = std::env::var("METRON_GPU_API").ok();
    if api_records_wanted(metron_gpu_api.as_deref()) {
        match api.configure_buffer_tracing(
            context,
            sdk::BUFFER_TRACING_HIP_RUNTIME_API,
            &[],
            buffer,
        ) {
            Ok(()) => {
                hip_api = true;
                cache_api_names(api, sdk::BUFFER_TRACING_HIP_RUNTIME_API);
            }
            Err(why) => missing.push(format!("HIP API calls: {why}")),
        }
    }
    // HSA API calls only when asked for: the HIP calls above are what a HIP program makes.
    let mut hsa_api = Vec::new();
    let mut hsa_api_problems = Vec::new();
    let hsa_setting = std::env::var(crate::hsa_api::SETTING).ok();
    if let Some(value) = hsa_setting.filter(|_| api_records_wanted(metron_gpu_api.as_deref())) {
        let selection = crate::hsa_api::parse(Some(&value));
        hsa_api_problems.extend(selection.problems.iter().cloned());
        for table in [crate::hsa_api::Table::Core, crate::hsa_api::Table::Amd] {
            let (wanted, whole) = crate::hsa_api::selected_in(&selection, table);
            if wanted.is_empty() {
                continue;
            }
            let kind = match table {
                crate::hsa_api::Table::Core => sdk::BUFFER_TRACING_HSA_CORE_API,
                crate::hsa_api::Table::Amd => sdk::BUFFER_TRACING_HSA_AMD_EXT_API,
            };
            match configure_hsa_api(api, context, buffer, kind, &wanted, whole) {
                Ok((traced, not_traced)) => {
                    hsa_api.push((table.name(), traced));
                    hsa_api_problems.extend(not_traced);
                }
                Err(why) => missing.push(format!("HSA API calls ({}): {why}", table.name())),
            }
        }
        for problem in &hsa_api_problems {
            eprintln!("metron: {problem}");
        }
    }
    if let Err(why) = api.configure_callback_tracing(
        context,
        sdk::CALLBACK_TRACING_KERNEL_DISPATCH,
        &[sdk::KERNEL_DISPATCH_ENQUEUE],
    ) {
        missing.push(format!("kernel ↔ region join: {why}"));
    }
    if let Ok(raw) = std::env::var("METRON_GPU_METRICS") {
        if !raw.trim().is_empty() {
            setup_counters(api, context, buffer, agents, &raw, &mut missing);
        }
    }
    update(|s| {
        s.missing = missing;
        s.hip_api = hip_api;
        s.hsa_api = hsa_api;
        s.hsa_api_problems = hsa_api_problems;
    });

    metron::gpu::set_backend(
        metron::gpu::Backend {
            flush,
            metadata,
            stream_word: "queue",
        },
        devices,
    );
    api.start_context(context)
}

static AGENTS: OnceLock<Vec<Agent>> = OnceLock::new();

/// Names every operation of `kind` the SDK lists (off the buffer thread's path); returns them.
fn cache_api_names(api: &sdk::Api, kind: i32) -> Vec<(i32, Arc<str>)> {
    let names: Vec<(i32, Arc<str>)> = api
        .operations(kind)
        .unwrap_or_default()
        .into_iter()
        .filter_map(|op| {
            api.operation_name(kind, op)
                .map(|name| (op, Arc::from(name)))
        })
        .collect();
    let mut guard = API_NAMES.lock().unwrap_or_else(|e| e.into_inner());
    let cache = guard.get_or_insert_with(HashMap::new);
    for (op, name) in &names {
        cache.insert((kind, *op), name.clone());
    }
    names
}

/// Buffer tracing of the HSA API operations of `kind` named in `wanted` (all of them when
/// `whole`). Returns how many operations are traced (`None`: every one) and a message for
/// each wanted name this SDK does not list.
fn configure_hsa_api(
    api: &sdk::Api,
    context: sdk::ContextId,
    buffer: sdk::BufferId,
    kind: i32,
    wanted: &[&str],
    whole: bool,
) -> Result<(Option<usize>, Vec<String>), String> {
    let listed = cache_api_names(api, kind);
    let not_traced: Vec<String> = wanted
        .iter()
        .filter(|w| !whole && !listed.iter().any(|(_, n)| &**n == **w))
        .map(|w| {
            format!(
                "{}: `{w}` is not among the HSA operations this ROCprofiler-SDK traces",
                crate::hsa_api::SETTING
            )
        })
        .collect();
    if whole {
        api.configure_buffer_tracing(context, kind, &[], buffer)?;
        return Ok((None, not_traced));
    }
    let ops: Vec<i32> = listed
        .iter()
        .filter(|(_, n)| wanted.contains(&&**n))
        .map(|(op, _)| *op)
        .collect();
    if !ops.is_empty() {
        api.configure_buffer_tracing(context, kind, &ops, buffer)?;
    }
    Ok((Some(ops.len()), not_traced))
}

/// The name of operation `operation` of API `kind`: from the cache, else asked of the SDK once
/// (and kept, `api#K.N` when it has none).
fn api_name(kind: i32, operation: i32) -> Arc<str> {
    let mut guard = API_NAMES.lock().unwrap_or_else(|e| e.into_inner());
    let names = guard.get_or_insert_with(HashMap::new);
    names
        .entry((kind, operation))
        .or_insert_with(|| {
            sdk::api()
                .and_then(|a| a.operation_name(kind, operation))
                .unwrap_or_else(|| format!("api#{kind}.{operation}"))
                .into()
        })
        .clone()
}

/// The GPUs as Metron's devices (index: the SDK's index among GPUs).
fn devices_of(agents: &[Agent]) -> Vec<GpuDevice> {
    agents
        .iter()
        .filter(|a| a.gpu)
        .map(|a| GpuDevice {
            index: a.type_index,
            name: if a.product.is_empty() {
                a.arch.clone()
            } else {
                a.product.clone()
            },
        })
        .collect()
}

/// The device index of an agent (0 when unknown), and whether it is a GPU.
fn device_of(agents: &[Agent], id: u64) -> (u32, bool) {
    agents
        .iter()
        .find(|a| a.id == id)
        .map_or((0, false), |a| (a.type_index, a.gpu))
}

/// Pairs the SDK's clock with `CLOCK_MONOTONIC` now.
fn calibrate() -> Option<Calibration> {
    let api = sdk::api()?;
    Calibration::measure(1_000_000_000, || api.timestamp())
}

/// The tool's finalize (the SDK's exit handler): delivers what is buffered, then never calls
/// the SDK again.
pub(crate) fn finalize() {
    if let (Some(api), Some(buffer)) = (sdk::api(), BUFFER.get()) {
        if !FINALIZED.swap(true, Ordering::AcqRel) {
            let _ = api.flush_buffer(*buffer);
        }
    }
}

/// Metron's flush hook: the SDK delivers its buffer (to [`on_buffer`]) before this returns.
fn flush(_at_end: bool) {
    if FINALIZED.load(Ordering::Acquire) {
        return;
    }
    if let (Some(api), Some(buffer)) = (sdk::api(), BUFFER.get()) {
        let _ = api.flush_buffer(*buffer);
    }
}

/// The counters Metron asked the SDK for.
#[derive(Debug)]
struct Counting {
    /// `METRON_GPU_METRICS`: the counters (`list.hardware`, the first `kernels.csv` columns, in
    /// its order) and the derived metrics evaluated on them.
    list: metron_metrics::MetricList,
    /// SDK counter id → index in `list.hardware`.
    index: HashMap<u64, usize>,
    /// Agent id → counter configuration.
    configs: HashMap<u64, u64>,
}

static COUNTING: OnceLock<Counting> = OnceLock::new();

/// Sets up the dispatch counting service for `raw` (`METRON_GPU_METRICS`); what cannot be
/// counted goes to `missing`.
fn setup_counters(
    api: &sdk::Api,
    context: sdk::ContextId,
    buffer: sdk::BufferId,
    agents: &[Agent],
    raw: &str,
    missing: &mut Vec<String>,
) {
    let list = match metron_metrics::MetricList::parse(raw) {
        Ok(list) => list,
        Err(why) => {
            missing.push(format!("GPU counters: {why}"));
            return;
        }
    };
    let mut counting = Counting {
        list,
        index: HashMap::new(),
        configs: HashMap::new(),
    };
    let wanted = counting.list.hardware.clone();
    for agent in agents.iter().filter(|a| a.gpu) {
        let offered = match api.agent_counters(agent.id) {
            Ok(o) => o,
            Err(why) => {
                missing.push(format!("GPU counters on {}: {why}", agent.arch));
                continue;
            }
        };
        let mut ids = Vec::new();
        for (index, name) in wanted.iter().enumerate() {
            match offered.iter().find(|(_, n)| n == name) {
                Some(&(id, _)) => {
                    counting.index.insert(id, index);
                    ids.push(id);
                }
                None => missing.push(format!("{name}: not a counter of {}", agent.arch)),
            }
        }
        if ids.is_empty() {
            continue;
        }
        match api.create_counter_config(agent.id, &ids) {
            Ok(config) => {
                counting.configs.insert(agent.id, config);
            }
            Err(why) => missing.push(format!("GPU counters on {}: {why}", agent.arch)),
        }
    }
    if counting.configs.is_empty() {
        return;
    }
    if let Err(why) = api.configure_dispatch_counting(context, buffer) {
        missing.push(format!("GPU counters: {why}"));
        return;
    }
    let derived = counting
        .list
        .derived
        .iter()
        .map(|(n, source, _)| (n.clone(), source.clone()))
        .collect();
    metron::sinks::kernels_csv::set_counter_metrics(counting.list.columns(), derived);
    let _ = COUNTING.set(counting);
}

/// The counter configuration for a dispatch on `agent` (the launching thread, before the
/// enqueue): `None` leaves the dispatch uncounted.
pub(crate) fn counter_config_for(agent: u64) -> Option<u64> {
    COUNTING.get()?.configs.get(&agent).copied()
}

/// Counter values waiting for their dispatch's correlation id, and the ids known: by dispatch.
#[derive(Default)]
struct CounterValues {
    correlation: HashMap<u64, u32>,
    values: HashMap<u64, Vec<f64>>,
}

static COUNTER_VALUES: Mutex<Option<CounterValues>> = Mutex::new(None);
static COUNTER_RECORDS: AtomicU64 = AtomicU64::new(0);

/// Adds a batch's counter records to each dispatch's sums and hands every dispatch whose
/// correlation id is known to `kernels.csv` (again after each batch that adds to it).
fn take_counters(records: &[Record]) {
    let Some(counting) = COUNTING.get() else {
        return;
    };
    let api = sdk::api();
    let mut guard = COUNTER_VALUES.lock().unwrap_or_else(|e| e.into_inner());
    let state = guard.get_or_insert_with(CounterValues::default);
    let mut touched = Vec::new();
    for r in records {
        match *r {
            Record::Dispatch(d) => {
                state
                    .correlation
                    .insert(d.dispatch_id, d.correlation as u32);
                touched.push(d.dispatch_id);
            }
            Record::CounterHeader {
                dispatch_id,
                correlation,
            } => {
                state.correlation.insert(dispatch_id, correlation as u32);
                touched.push(dispatch_id);
            }
            Record::CounterValue {
                instance,
                value,
                dispatch_id,
            } => {
                COUNTER_RECORDS.fetch_add(1, Ordering::Relaxed);
                let Some(&i) = api
                    .and_then(|a| a.record_counter_id(instance))
                    .and_then(|id| counting.index.get(&id))
                else {
                    continue;
                };
                let sums = state
                    .values
                    .entry(dispatch_id)
                    .or_insert_with(|| vec![f64::NAN; counting.list.hardware.len()]);
                sums[i] = if sums[i].is_nan() {
                    value
                } else {
                    sums[i] + value
                };
                touched.push(dispatch_id);
            }
            _ => {}
        }
    }
    touched.sort_unstable();
    touched.dedup();
    for dispatch in touched {
        if let (Some(&corr), Some(values)) = (
            state.correlation.get(&dispatch),
            state.values.get(&dispatch),
        ) {
            let mut row = values.clone();
            row.extend(counting.list.derive(values));
            metron::sinks::kernels_csv::record_kernel_counters(corr, row);
        }
    }
}

/// A kernel as its code object describes it, for the kernel table shared with the HSA path.
fn kernel_of(symbol: &KernelSymbol) -> Kernel {
    Kernel {
        name: crate::kernels::display_name(&symbol.name).into(),
        info: KernelInfo {
            static_lds: symbol.group_segment,
            scratch: symbol.private_segment,
            vgprs: u16::try_from(symbol.arch_vgprs).unwrap_or(u16::MAX),
            sgprs: u16::try_from(symbol.sgprs).unwrap_or(u16::MAX),
            ..KernelInfo::default()
        },
    }
}

/// A callback-tracing record (code object loads; kernel enqueues, on the launching thread).
pub(crate) fn on_callback(what: Callback) {
    match what {
        Callback::Enqueue { correlation } => {
            LAUNCHES.fetch_add(1, Ordering::Relaxed);
            metron::by_id::annotate(
                LAUNCH_KEY_ID.load(Ordering::Relaxed),
                metron::AnnotationValue::U64(u64::from(correlation as u32)),
            );
        }
        Callback::KernelSymbol(symbol) => {
            crate::kernels::insert(symbol.kernel_id, kernel_of(&symbol));
        }
        Callback::Unrecognized => {
            UNRECOGNIZED_CALLBACKS.fetch_add(1, Ordering::Relaxed);
        }
        Callback::Ignored => {}
    }
}

/// Queue handles → small numbers, in the order Metron first saw them (for the trace's tracks).
static QUEUES: Mutex<Option<HashMap<u64, u32>>> = Mutex::new(None);

fn queue_number(handle: u64) -> u32 {
    let mut q = QUEUES.lock().unwrap_or_else(|e| e.into_inner());
    let map = q.get_or_insert_with(HashMap::new);
    let next = map.len() as u32;
    *map.entry(handle).or_insert(next)
}

/// A batch of buffered records (the SDK's callback thread).
pub(crate) fn on_buffer(records: &[Record], drop_count: u64) {
    DROPPED.fetch_add(drop_count, Ordering::Relaxed);
    if records.is_empty() {
        return;
    }
    take_counters(records);
    let Some(calibration) = calibrate() else {
        return;
    };
    let agents = AGENTS.get().map_or(&[][..], Vec::as_slice);
    let batch: Vec<GpuRecord> = records
        .iter()
        .filter_map(|r| match r {
            Record::Dispatch(d) => {
                KERNEL_RECORDS.fetch_add(1, Ordering::Relaxed);
                let kernel = crate::kernels::get(d.kernel_id);
                if kernel.is_none() {
                    UNKNOWN_KERNELS.fetch_add(1, Ordering::Relaxed);
                }
                let device = device_of(agents, d.agent).0;
                Some(kernel_record(
                    d,
                    kernel.as_ref(),
                    &calibration,
                    device,
                    queue_number(d.queue),
                ))
            }
            Record::Copy(c) => {
                COPY_RECORDS.fetch_add(1, Ordering::Relaxed);
                let (src, src_gpu) = device_of(agents, c.src_agent);
                let (dst, dst_gpu) = device_of(agents, c.dst_agent);
                let device = if dst_gpu || !src_gpu { dst } else { src };
                Some(copy_record(c, &calibration, device))
            }
            Record::Api(call) => {
                if call.kind == sdk::BUFFER_TRACING_HIP_RUNTIME_API {
                    HIP_API_RECORDS.fetch_add(1, Ordering::Relaxed);
                } else {
                    HSA_API_RECORDS.fetch_add(1, Ordering::Relaxed);
                }
                Some(api_record(
                    call,
                    api_name(call.kind, call.operation),
                    &calibration,
                ))
            }
            Record::UnknownApi => {
                UNKNOWN_API_RECORDS.fetch_add(1, Ordering::Relaxed);
                None
            }
            Record::CounterHeader { .. } | Record::CounterValue { .. } | Record::Other => None,
        })
        .collect();
    metron::gpu::submit(&batch);
}

/// A kernel dispatch record as the sinks see it (times on `CLOCK_MONOTONIC`; the grid in
/// work-groups, as Metron's records count it).
fn kernel_record(
    d: &Dispatch,
    kernel: Option<&Kernel>,
    calibration: &Calibration,
    device: u32,
    stream: u32,
) -> GpuRecord {
    let name: Arc<str> = match kernel {
        Some(k) => k.name.clone(),
        None => format!("kernel#{}", d.kernel_id).into(),
    };
    let mut r = GpuRecord::new(GpuKind::Kernel, name);
    r.start_ns = calibration.to_monotonic(d.start);
    r.end_ns = calibration.to_monotonic(d.end);
    r.device = device;
    r.stream = stream;
    r.correlation = d.correlation as u32;
    r.tid = d.thread as u32;
    crate::kernels::describe_dispatch(
        &mut r,
        d.grid,
        d.workgroup,
        d.group_segment,
        d.private_segment,
        &kernel.map_or_else(KernelInfo::default, |k| k.info),
    );
    r
}

/// The name of a copy direction (`rocprofiler_memory_copy_operation_t`).
fn copy_name(direction: i32) -> &'static str {
    match direction {
        sdk::MEMORY_COPY_HOST_TO_DEVICE => "HtoD",
        sdk::MEMORY_COPY_DEVICE_TO_HOST => "DtoH",
        sdk::MEMORY_COPY_DEVICE_TO_DEVICE => "DtoD",
        sdk::MEMORY_COPY_HOST_TO_HOST => "HtoH",
        _ => "Copy",
    }
}

/// A memory copy record as the sinks see it.
fn copy_record(c: &MemoryCopy, calibration: &Calibration, device: u32) -> GpuRecord {
    let mut r = GpuRecord::new(GpuKind::Memcpy, copy_name(c.direction).into());
    r.start_ns = calibration.to_monotonic(c.start);
    r.end_ns = calibration.to_monotonic(c.end);
    r.device = device;
    r.stream = metron::gpu::NO_STREAM;
    r.correlation = c.correlation as u32;
    r.tid = c.thread as u32;
    r.bytes = c.bytes;
    r
}

/// A HIP runtime or HSA API call as the sinks see it (on its thread's "HIP API" or "HSA API"
/// track; a HIP call's correlation id is its kernels' and copies').
fn api_record(h: &ApiCall, name: Arc<str>, calibration: &Calibration) -> GpuRecord {
    let kind = if h.kind == sdk::BUFFER_TRACING_HIP_RUNTIME_API {
        GpuKind::HipApi
    } else {
        GpuKind::HsaApi
    };
    let mut r = GpuRecord::new(kind, name);
    r.start_ns = calibration.to_monotonic(h.start);
    r.end_ns = calibration.to_monotonic(h.end);
    r.stream = metron::gpu::NO_STREAM;
    r.correlation = h.correlation as u32;
    r.tid = h.thread as u32;
    r
}

/// The `gpu` section of `metadata.json` (the backend's metadata hook; also what the `gpu_amd`
/// section could show when this path was claimed).
pub(crate) fn metadata() -> Value {
    let s = STATE
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone()
        .unwrap_or_default();
    let agents = AGENTS.get().map_or(&[][..], Vec::as_slice);
    let kernels_known = crate::kernels::count();
    json!({
        "backend": "rocprofiler-sdk",
        "enabled": s.enabled,
        "reason": s.reason,
        "sdk_version": format!("{}.{}.{}", s.version / 10000, s.version / 100 % 100, s.version % 100),
        "sdk_runtime_version": s.runtime_version,
        "tool_priority": s.priority,
        "client_handle": sdk::client_handle(),
        "devices": devices_of(agents),
        "architectures": agents.iter().filter(|a| a.gpu).map(|a| a.arch.clone()).collect::<Vec<_>>(),
        "buffer": {
            "bytes": s.buffer_bytes,
            "watermark": s.watermark,
            "policy": s.policy,
            "own_callback_thread": s.own_callback_thread,
        },
        "not_traced": s.missing,
        "hip_api": s.hip_api,
        "hsa_api": {
            "setting": std::env::var(crate::hsa_api::SETTING).ok(),
            "operations_traced": s.hsa_api.iter().map(|(table, n)| (table.to_string(), json!(n))).collect::<serde_json::Map<_, _>>(),
            "problems": s.hsa_api_problems,
        },
        "records": {
            "kernels": KERNEL_RECORDS.load(Ordering::Relaxed),
            "copies": COPY_RECORDS.load(Ordering::Relaxed),
            "hip_api": HIP_API_RECORDS.load(Ordering::Relaxed),
            "hsa_api": HSA_API_RECORDS.load(Ordering::Relaxed),
            "api_unknown_layout": UNKNOWN_API_RECORDS.load(Ordering::Relaxed),
        },
        "dropped": DROPPED.load(Ordering::Relaxed),
        "counters": COUNTING.get().map(|c| json!({
            "metrics": c.list.columns(),
            "configured_gpus": c.configs.len(),
            "records": COUNTER_RECORDS.load(Ordering::Relaxed),
        })),
        "launches_seen": LAUNCHES.load(Ordering::Relaxed),
        "kernels_known": kernels_known,
        "kernels_unknown": UNKNOWN_KERNELS.load(Ordering::Relaxed),
        "unrecognized_callback_records": UNRECOGNIZED_CALLBACKS.load(Ordering::Relaxed),
        "hsa_interception": crate::intercept::tracing(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn calibration() -> Calibration {
        // The SDK's clock read 9_000_000_000 ns when CLOCK_MONOTONIC read 1_000_000 ns.
        Calibration {
            system: 9_000_000_000,
            monotonic_ns: 1_000_000,
            frequency: 1_000_000_000,
            window_ns: 0,
        }
    }

    fn symbol() -> KernelSymbol {
        KernelSymbol {
            kernel_id: 3,
            name: "_Z10vector_addPKfS0_Pfi".into(),
            group_segment: 1024,
            private_segment: 16,
            sgprs: 24,
            arch_vgprs: 32,
            accum_vgprs: 8,
        }
    }

    #[test]
    fn dispatches_become_kernels_on_the_monotonic_clock_in_work_groups() {
        let d = Dispatch {
            correlation: (7 << 32) | 41,
            thread: 1234,
            start: 9_000_500_000,
            end: 9_000_750_000,
            agent: 0x2000,
            queue: 0xdead,
            kernel_id: 3,
            dispatch_id: 1,
            private_segment: 16,
            group_segment: 4096,
            workgroup: [256, 1, 1],
            grid: [1000, 4, 1],
        };
        let k = kernel_of(&symbol());
        let r = kernel_record(&d, Some(&k), &calibration(), 1, 2);
        assert_eq!((r.start_ns, r.end_ns), (1_500_000, 1_750_000));
        assert_eq!(
            &*r.name,
            "vector_add(float const*, float const*, float*, int)"
        );
        assert_eq!(
            r.grid,
            [4, 4, 1],
            "1000 work-items in groups of 256 → 4 groups"
        );
        assert_eq!(r.block, [256, 1, 1]);
        assert_eq!((r.static_shared, r.dynamic_shared), (1024, 3072));
        assert_eq!(
            (r.registers, r.scalar_registers, r.local_per_thread),
            (32, 24, 16)
        );
        assert_eq!((r.device, r.stream, r.correlation, r.tid), (1, 2, 41, 1234));
        let unknown = kernel_record(&d, None, &calibration(), 0, 0);
        assert_eq!(&*unknown.name, "kernel#3");
        assert_eq!((unknown.static_shared, unknown.dynamic_shared), (0, 4096));
    }

    #[test]
    fn times_before_the_pairing_convert_too() {
        let c = MemoryCopy {
            correlation: 9,
            thread: 5,
            direction: sdk::MEMORY_COPY_DEVICE_TO_HOST,
            start: 8_999_999_000,
            end: 9_000_001_000,
            src_agent: 0x2000,
            dst_agent: 0x1000,
            bytes: 1 << 20,
        };
        let r = copy_record(&c, &calibration(), 0);
        assert_eq!(
            (r.kind, &*r.name, r.bytes),
            (GpuKind::Memcpy, "DtoH", 1 << 20)
        );
        assert_eq!((r.start_ns, r.end_ns), (999_000, 1_001_000));
        assert_eq!(copy_name(sdk::MEMORY_COPY_HOST_TO_DEVICE), "HtoD");
        assert_eq!(copy_name(sdk::MEMORY_COPY_DEVICE_TO_DEVICE), "DtoD");
        assert_eq!(copy_name(0), "Copy");
    }

    #[test]
    fn hip_api_calls_convert_like_kernels_and_keep_their_correlation() {
        let h = ApiCall {
            kind: sdk::BUFFER_TRACING_HIP_RUNTIME_API,
            correlation: (3 << 32) | 1001,
            thread: 4242,
            operation: 7,
            start: 9_000_100_000,
            end: 9_000_130_000,
        };
        let r = api_record(&h, "hipLaunchKernel".into(), &calibration());
        assert_eq!((r.kind, &*r.name), (GpuKind::HipApi, "hipLaunchKernel"));
        assert_eq!((r.start_ns, r.end_ns), (1_100_000, 1_130_000));
        assert_eq!((r.correlation, r.tid), (1001, 4242));
        assert!(!r.on_device());
        assert!(api_records_wanted(None));
        assert!(api_records_wanted(Some("both")));
        assert!(!api_records_wanted(Some(" none ")));
    }

    #[test]
    fn buffer_settings_and_devices() {
        assert_eq!(policy(None), (sdk::BUFFER_POLICY_LOSSLESS, "lossless"));
        assert_eq!(
            policy(Some(" Discard ")),
            (sdk::BUFFER_POLICY_DISCARD, "discard")
        );
        assert_eq!(buffer_sizes(4 << 20), (4 << 20, (4 << 20) - (1 << 19)));
        assert_eq!(buffer_sizes(10), (4096, 3584));
        let agents = [
            Agent {
                id: 0x1000,
                gpu: false,
                type_index: 0,
                arch: "cpu".into(),
                product: "EPYC".into(),
            },
            Agent {
                id: 0x2000,
                gpu: true,
                type_index: 0,
                arch: "gfx90a".into(),
                product: String::new(),
            },
        ];
        assert_eq!(
            devices_of(&agents),
            [GpuDevice {
                index: 0,
                name: "gfx90a".into()
            }]
        );
        assert_eq!(device_of(&agents, 0x2000), (0, true));
        assert_eq!(device_of(&agents, 0x3000), (0, false));
    }
}
