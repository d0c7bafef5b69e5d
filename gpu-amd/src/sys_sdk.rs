//! ROCprofiler-SDK as Metron sees it: the C types it passes, the entry points Metron calls,
//! and every `unsafe` of the SDK path.
//!
//! Nothing is linked: when the SDK calls `rocprofiler_configure` its library is already loaded,
//! and every function is looked up with `dlsym(RTLD_DEFAULT, ..)` ([`Api::load`]). The callbacks
//! the SDK calls (tool initialize/finalize, the buffer callback, the callback-tracing callback)
//! are the `extern "C"` trampolines here: they turn the SDK's pointers into plain Rust values and
//! hand those to `rocprofiler_sdk.rs`, which holds no `unsafe`.
//!
//! Transcribed by hand from ROCm/rocprofiler-sdk, `source/include/rocprofiler-sdk/`:
//! `fwd.h`, `buffer_tracing.h`, `callback_tracing.h`, `agent.h` at commit
//! d2cd02cf96136f27eae3b33e02ea42f700b10d78; `registration.h` at
//! 13db6e1a4a97f00b14e78bb2926c0c9dd89c257e; `buffer.h` at
//! 2695e8368eeadb96b9f3379db759d54d9fa0a69a; `context.h` at
//! a20774b61613735a2fdddc63cad8468c0f8dde43; the clock of `rocprofiler_get_timestamp`
//! (`CLOCK_BOOTTIME`, `default_clock_id`) from `source/lib/common/utility.hpp` at a20774b6.
//! The HIP API buffer record (`rocprofiler_buffer_tracing_hip_api_record_t`),
//! `ROCPROFILER_BUFFER_TRACING_HIP_RUNTIME_API`, `rocprofiler_correlation_id_t`,
//! `rocprofiler_query_buffer_tracing_kind_operation_name` and
//! `rocprofiler_iterate_buffer_tracing_kind_operations` from `buffer_tracing.h` and `fwd.h` at
//! d2cd02cf96136f27eae3b33e02ea42f700b10d78 too.
//! Layouts are for x86-64 / AArch64 Linux (LP64); C enums are 32-bit `int`s.
//!
//! **ABI note.** `rocprofiler_correlation_id_t` gained its `ancestor` field in a later release
//! of the SDK, which moves `kind`, `operation`, `phase` and `payload` of the callback-tracing
//! record (passed by value). Metron checks each callback record's `kind` against the service it
//! configured and ignores (and counts) records that do not match, rather than misreading them.
//! The kernel dispatch and memory copy buffer records use `rocprofiler_async_correlation_id_t`,
//! whose layout did not change. The HIP API buffer record, though, holds a
//! `rocprofiler_correlation_id_t`: with `ancestor` it is 64 bytes ([`ApiRecord`]), before it
//! 56 ([`ApiRecordNoAncestor`], times 8 bytes earlier). Metron reads the record's own `size`
//! to tell them apart and counts (and skips) a HIP API record of any other size.

use std::ffi::{c_char, c_int, c_void, CStr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

pub use crate::sys_sdk_records::*;
use crate::sys_sdk_records::{buffer_callback, tracing_callback};
pub use crate::sys_sdk_types::*;

type BufferCallback =
    unsafe extern "C" fn(ContextId, BufferId, *mut *mut RecordHeader, usize, *mut c_void, u64);
type TracingCallback = unsafe extern "C" fn(CallbackRecord, *mut u64, *mut c_void);
type AgentsCallback = unsafe extern "C" fn(c_int, *mut *const c_void, usize, *mut c_void) -> Status;

type CreateContextFn = unsafe extern "C" fn(*mut ContextId) -> Status;
type StartContextFn = unsafe extern "C" fn(ContextId) -> Status;
type CreateBufferFn = unsafe extern "C" fn(
    ContextId,
    usize,
    usize,
    c_int,
    BufferCallback,
    *mut c_void,
    *mut BufferId,
) -> Status;
type FlushBufferFn = unsafe extern "C" fn(BufferId) -> Status;
type ConfigureBufferTracingFn =
    unsafe extern "C" fn(ContextId, c_int, *const c_int, usize, BufferId) -> Status;
type ConfigureCallbackTracingFn = unsafe extern "C" fn(
    ContextId,
    c_int,
    *const c_int,
    usize,
    TracingCallback,
    *mut c_void,
) -> Status;
type GetTimestampFn = unsafe extern "C" fn(*mut u64) -> Status;
type QueryAgentsFn = unsafe extern "C" fn(c_int, AgentsCallback, usize, *mut c_void) -> Status;
type CreateCallbackThreadFn = unsafe extern "C" fn(*mut Handle) -> Status;
type AssignCallbackThreadFn = unsafe extern "C" fn(BufferId, Handle) -> Status;
type StatusStringFn = unsafe extern "C" fn(Status) -> *const c_char;
type CountersCallback = unsafe extern "C" fn(Handle, *mut Handle, usize, *mut c_void) -> Status;
type CountingCallback =
    unsafe extern "C" fn(DispatchCountingData, *mut Handle, *mut u64, *mut c_void);
type IterateCountersFn = unsafe extern "C" fn(Handle, CountersCallback, *mut c_void) -> Status;
type CounterInfoFn = unsafe extern "C" fn(Handle, c_int, *mut c_void) -> Status;
type CreateCounterConfigFn =
    unsafe extern "C" fn(Handle, *mut Handle, usize, *mut Handle) -> Status;
type ConfigureCountingFn =
    unsafe extern "C" fn(ContextId, BufferId, CountingCallback, *mut c_void) -> Status;
type RecordCounterIdFn = unsafe extern "C" fn(u64, *mut Handle) -> Status;
/// `rocprofiler_query_buffer_tracing_kind_operation_name`.
type OperationNameFn = unsafe extern "C" fn(c_int, c_int, *mut *const c_char, *mut u64) -> Status;
/// `rocprofiler_buffer_tracing_kind_operation_cb_t` (0: go on).
type OperationCallback = unsafe extern "C" fn(c_int, c_int, *mut c_void) -> c_int;
/// `rocprofiler_iterate_buffer_tracing_kind_operations`.
type IterateOperationsFn = unsafe extern "C" fn(c_int, OperationCallback, *mut c_void) -> Status;

/// The dispatch counting service's entry points (`counters.h`, `counter_config.h`,
/// `dispatch_counting_service.h`; experimental in the SDK).
#[derive(Clone, Copy)]
struct CountingApi {
    iterate_agent_supported_counters: IterateCountersFn,
    query_counter_info: CounterInfoFn,
    /// `rocprofiler_create_counter_config` (`rocprofiler_create_profile_config` before).
    create_counter_config: CreateCounterConfigFn,
    configure_buffer_dispatch_counting_service: ConfigureCountingFn,
    query_record_counter_id: RecordCounterIdFn,
}

/// The SDK's entry points Metron calls (looked up, never linked).
#[derive(Clone, Copy)]
pub struct Api {
    create_context: CreateContextFn,
    start_context: StartContextFn,
    create_buffer: CreateBufferFn,
    flush_buffer: FlushBufferFn,
    configure_buffer_tracing_service: ConfigureBufferTracingFn,
    configure_callback_tracing_service: ConfigureCallbackTracingFn,
    get_timestamp: GetTimestampFn,
    query_available_agents: QueryAgentsFn,
    create_callback_thread: Option<CreateCallbackThreadFn>,
    assign_callback_thread: Option<AssignCallbackThreadFn>,
    get_status_string: Option<StatusStringFn>,
    operation_name: Option<OperationNameFn>,
    iterate_operations: Option<IterateOperationsFn>,
    counting: Option<CountingApi>,
}

fn lookup(name: &CStr) -> Option<*mut c_void> {
    // SAFETY: a valid C string; RTLD_DEFAULT searches the global scope, which holds the SDK
    // library that is calling Metron.
    let p = unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) };
    (!p.is_null()).then_some(p)
}

macro_rules! required {
    ($name:literal, $ty:ty) => {{
        let p = lookup($name).ok_or_else(|| {
            format!(
                "{} not found in the loaded ROCprofiler-SDK",
                $name.to_string_lossy()
            )
        })?;
        // SAFETY: the symbol is the SDK's function of that name; the field's type is its C
        // prototype as transcribed above.
        unsafe { std::mem::transmute::<*mut c_void, $ty>(p) }
    }};
}

macro_rules! optional {
    ($name:literal, $ty:ty) => {
        // SAFETY: as for `required!`.
        lookup($name).map(|p| unsafe { std::mem::transmute::<*mut c_void, $ty>(p) })
    };
}

/// An agent as Metron keeps it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Agent {
    /// `rocprofiler_agent_id_t` handle.
    pub id: u64,
    pub gpu: bool,
    /// Index among agents of its type (`logical_node_type_id`).
    pub type_index: u32,
    /// Architecture (`name`, e.g. `gfx90a`).
    pub arch: String,
    /// Marketing name (`product_name`).
    pub product: String,
}

impl Api {
    /// Looks the SDK's functions up in the process.
    pub fn load() -> Result<Api, String> {
        Ok(Api {
            create_context: required!(c"rocprofiler_create_context", CreateContextFn),
            start_context: required!(c"rocprofiler_start_context", StartContextFn),
            create_buffer: required!(c"rocprofiler_create_buffer", CreateBufferFn),
            flush_buffer: required!(c"rocprofiler_flush_buffer", FlushBufferFn),
            configure_buffer_tracing_service: required!(
                c"rocprofiler_configure_buffer_tracing_service",
                ConfigureBufferTracingFn
            ),
            configure_callback_tracing_service: required!(
                c"rocprofiler_configure_callback_tracing_service",
                ConfigureCallbackTracingFn
            ),
            get_timestamp: required!(c"rocprofiler_get_timestamp", GetTimestampFn),
            query_available_agents: required!(c"rocprofiler_query_available_agents", QueryAgentsFn),
            create_callback_thread: optional!(
                c"rocprofiler_create_callback_thread",
                CreateCallbackThreadFn
            ),
            assign_callback_thread: optional!(
                c"rocprofiler_assign_callback_thread",
                AssignCallbackThreadFn
            ),
            get_status_string: optional!(c"rocprofiler_get_status_string", StatusStringFn),
            operation_name: optional!(
                c"rocprofiler_query_buffer_tracing_kind_operation_name",
                OperationNameFn
            ),
            iterate_operations: optional!(
                c"rocprofiler_iterate_buffer_tracing_kind_operations",
                IterateOperationsFn
            ),
            counting: CountingApi::load(),
        })
    }

    /// `Err` with the SDK's description of `status` unless it is success.
    fn check(&self, status: Status, what: &str) -> Result<(), String> {
        if status == STATUS_SUCCESS {
            return Ok(());
        }
        let text = self
            .get_status_string
            // SAFETY: takes a status by value; returns a static string or null.
            .and_then(|f| unsafe { c_str(f(status)) })
            .unwrap_or_default();
        Err(format!("{what} failed: status {status} {text}")
            .trim_end()
            .to_string())
    }

    /// `rocprofiler_create_context`.
    pub fn create_context(&self) -> Result<ContextId, String> {
        let mut id = ContextId::default();
        // SAFETY: a valid out-pointer, zero as the SDK requires.
        let s = unsafe { (self.create_context)(&mut id) };
        self.check(s, "rocprofiler_create_context").map(|_| id)
    }

    /// `rocprofiler_start_context`.
    pub fn start_context(&self, context: ContextId) -> Result<(), String> {
        // SAFETY: plain values.
        let s = unsafe { (self.start_context)(context) };
        self.check(s, "rocprofiler_start_context")
    }

    /// `rocprofiler_create_buffer`, delivering to [`crate::rocprofiler_sdk::on_buffer`].
    pub fn create_buffer(
        &self,
        context: ContextId,
        size: usize,
        watermark: usize,
        policy: c_int,
    ) -> Result<BufferId, String> {
        let mut id = BufferId::default();
        // SAFETY: a valid out-pointer; the callback is a `'static` function with the SDK's
        // prototype; no callback data.
        let s = unsafe {
            (self.create_buffer)(
                context,
                size,
                watermark,
                policy,
                buffer_callback,
                std::ptr::null_mut(),
                &mut id,
            )
        };
        self.check(s, "rocprofiler_create_buffer").map(|_| id)
    }

    /// A callback thread of Metron's own for `buffer` (so that Metron's conversion never delays
    /// another tool's buffers). `false` when the SDK has no such functions or refused.
    pub fn own_callback_thread(&self, buffer: BufferId) -> bool {
        let (Some(create), Some(assign)) =
            (self.create_callback_thread, self.assign_callback_thread)
        else {
            return false;
        };
        let mut thread = Handle::default();
        // SAFETY: a valid out-pointer; then plain values.
        unsafe { create(&mut thread) == STATUS_SUCCESS && assign(buffer, thread) == STATUS_SUCCESS }
    }

    /// `rocprofiler_flush_buffer`.
    pub fn flush_buffer(&self, buffer: BufferId) -> Result<(), String> {
        // SAFETY: plain values.
        let s = unsafe { (self.flush_buffer)(buffer) };
        self.check(s, "rocprofiler_flush_buffer")
    }

    /// `rocprofiler_configure_buffer_tracing_service` (`operations` empty: all of them).
    pub fn configure_buffer_tracing(
        &self,
        context: ContextId,
        kind: c_int,
        operations: &[c_int],
        buffer: BufferId,
    ) -> Result<(), String> {
        let ops = if operations.is_empty() {
            std::ptr::null()
        } else {
            operations.as_ptr()
        };
        // SAFETY: `ops` is null or `operations.len()` values, read during the call.
        let s = unsafe {
            (self.configure_buffer_tracing_service)(context, kind, ops, operations.len(), buffer)
        };
        self.check(
            s,
            &format!("rocprofiler_configure_buffer_tracing_service({kind})"),
        )
    }

    /// `rocprofiler_configure_callback_tracing_service`, calling
    /// [`crate::rocprofiler_sdk::on_callback`] with `kind` as the callback data.
    pub fn configure_callback_tracing(
        &self,
        context: ContextId,
        kind: c_int,
        operations: &[c_int],
    ) -> Result<(), String> {
        let ops = if operations.is_empty() {
            std::ptr::null()
        } else {
            operations.as_ptr()
        };
        // SAFETY: `ops` is null or `operations.len()` values, read during the call; the
        // callback is a `'static` function with the SDK's prototype; the data is the kind as an
        // integer, never dereferenced.
        let s = unsafe {
            (self.configure_callback_tracing_service)(
                context,
                kind,
                ops,
                operations.len(),
                tracing_callback,
                kind as usize as *mut c_void,
            )
        };
        self.check(
            s,
            &format!("rocprofiler_configure_callback_tracing_service({kind})"),
        )
    }

    /// `rocprofiler_get_timestamp`: ns on the SDK's clock (`CLOCK_BOOTTIME` in the SDK's
    /// sources; Metron does not rely on which).
    pub fn timestamp(&self) -> Option<u64> {
        let mut ts = 0u64;
        // SAFETY: a valid out-pointer.
        let s = unsafe { (self.get_timestamp)(&mut ts) };
        (s == STATUS_SUCCESS && ts != 0).then_some(ts)
    }

    /// The agents (`rocprofiler_query_available_agents`, version 0).
    pub fn agents(&self) -> Result<Vec<Agent>, String> {
        let mut out: Vec<Agent> = Vec::new();
        // SAFETY: the callback is a `'static` function with the SDK's prototype; the data is
        // `&mut out`, alive for the call (the SDK calls back synchronously).
        let s = unsafe {
            (self.query_available_agents)(
                AGENT_INFO_VERSION_0,
                agents_callback,
                std::mem::size_of::<AgentV0>(),
                (&mut out as *mut Vec<Agent>).cast(),
            )
        };
        self.check(s, "rocprofiler_query_available_agents")
            .map(|_| out)
    }

    /// The name of buffer tracing `kind`'s `operation`
    /// (`rocprofiler_query_buffer_tracing_kind_operation_name`): `None` when the SDK has no such
    /// function, does not know the operation or gives no constant name.
    pub fn operation_name(&self, kind: c_int, operation: c_int) -> Option<String> {
        let query = self.operation_name?;
        let mut name: *const c_char = std::ptr::null();
        let mut len = 0u64;
        // SAFETY: valid out-pointers, written during the call.
        let s = unsafe { query(kind, operation, &mut name, &mut len) };
        if s != STATUS_SUCCESS || name.is_null() {
            return None;
        }
        // SAFETY: the SDK's name: a string literal of its library (NUL-terminated, never
        // freed); copied.
        let name = unsafe { c_str(name) }?;
        (!name.is_empty()).then_some(name)
    }

    /// Every operation of buffer tracing `kind`
    /// (`rocprofiler_iterate_buffer_tracing_kind_operations`); `None` when the SDK has no such
    /// function or refused.
    pub fn operations(&self, kind: c_int) -> Option<Vec<c_int>> {
        let iterate = self.iterate_operations?;
        let mut out: Vec<c_int> = Vec::new();
        // SAFETY: the callback is a `'static` function with the SDK's prototype; the data is
        // `&mut out`, alive for the call (the SDK calls back synchronously).
        let s = unsafe {
            iterate(
                kind,
                operations_callback,
                (&mut out as *mut Vec<c_int>).cast(),
            )
        };
        (s == STATUS_SUCCESS).then_some(out)
    }
}

unsafe extern "C" fn operations_callback(
    _kind: c_int,
    operation: c_int,
    data: *mut c_void,
) -> c_int {
    if !data.is_null() {
        // SAFETY: `data` is the `&mut Vec<c_int>` of `Api::operations`, alive and not aliased
        // during the synchronous call.
        unsafe { &mut *data.cast::<Vec<c_int>>() }.push(operation);
    }
    0
}

impl CountingApi {
    fn load() -> Option<CountingApi> {
        let create = optional!(c"rocprofiler_create_counter_config", CreateCounterConfigFn).or(
            optional!(c"rocprofiler_create_profile_config", CreateCounterConfigFn),
        )?;
        Some(CountingApi {
            iterate_agent_supported_counters: optional!(
                c"rocprofiler_iterate_agent_supported_counters",
                IterateCountersFn
            )?,
            query_counter_info: optional!(c"rocprofiler_query_counter_info", CounterInfoFn)?,
            create_counter_config: create,
            configure_buffer_dispatch_counting_service: optional!(
                c"rocprofiler_configure_buffer_dispatch_counting_service",
                ConfigureCountingFn
            )?,
            query_record_counter_id: optional!(
                c"rocprofiler_query_record_counter_id",
                RecordCounterIdFn
            )?,
        })
    }
}

impl Api {
    fn counting(&self) -> Result<&CountingApi, String> {
        self.counting
            .as_ref()
            .ok_or_else(|| "this ROCprofiler-SDK has no dispatch counting service".to_string())
    }

    /// The counters `agent` offers: `(counter id, name)`.
    pub fn agent_counters(&self, agent: u64) -> Result<Vec<(u64, String)>, String> {
        let c = self.counting()?;
        let mut ids: Vec<u64> = Vec::new();
        // SAFETY: the callback is a `'static` function with the SDK's prototype; the data is
        // `&mut ids`, alive for the call (the SDK calls back synchronously).
        let s = unsafe {
            (c.iterate_agent_supported_counters)(
                Handle { handle: agent },
                counters_callback,
                (&mut ids as *mut Vec<u64>).cast(),
            )
        };
        self.check(s, "rocprofiler_iterate_agent_supported_counters")?;
        Ok(ids
            .into_iter()
            .filter_map(|id| {
                let mut info = std::mem::MaybeUninit::<CounterInfoV0>::zeroed();
                // SAFETY: `info` is a writable `rocprofiler_counter_info_v0_t`, as version 0
                // asks.
                let s = unsafe {
                    (c.query_counter_info)(
                        Handle { handle: id },
                        COUNTER_INFO_VERSION_0,
                        info.as_mut_ptr().cast(),
                    )
                };
                if s != STATUS_SUCCESS {
                    return None;
                }
                // SAFETY: filled by the SDK (zeroed before: all fields valid either way).
                let info = unsafe { info.assume_init() };
                // SAFETY: the SDK's NUL-terminated name (or null), alive for the call; copied.
                Some((id, unsafe { c_str(info.name) }?))
            })
            .collect())
    }

    /// `rocprofiler_create_counter_config` for `agent` with `counters`.
    pub fn create_counter_config(&self, agent: u64, counters: &[u64]) -> Result<u64, String> {
        let c = self.counting()?;
        let mut list: Vec<Handle> = counters.iter().map(|&handle| Handle { handle }).collect();
        let mut config = Handle::default();
        // SAFETY: `list` holds `list.len()` counter ids for the call; a valid out-pointer, zero
        // (a new configuration, not a copy of one).
        let s = unsafe {
            (c.create_counter_config)(
                Handle { handle: agent },
                list.as_mut_ptr(),
                list.len(),
                &mut config,
            )
        };
        self.check(s, "rocprofiler_create_counter_config")
            .map(|_| config.handle)
    }

    /// `rocprofiler_configure_buffer_dispatch_counting_service`: each dispatch gets the counter
    /// configuration [`crate::rocprofiler_sdk::counter_config_for`] gives its agent.
    pub fn configure_dispatch_counting(
        &self,
        context: ContextId,
        buffer: BufferId,
    ) -> Result<(), String> {
        let c = self.counting()?;
        // SAFETY: the callback is a `'static` function with the SDK's prototype; no data.
        let s = unsafe {
            (c.configure_buffer_dispatch_counting_service)(
                context,
                buffer,
                counting_callback,
                std::ptr::null_mut(),
            )
        };
        self.check(s, "rocprofiler_configure_buffer_dispatch_counting_service")
    }

    /// The counter of a counter record's instance id.
    pub fn record_counter_id(&self, instance: u64) -> Option<u64> {
        let c = self.counting.as_ref()?;
        let mut id = Handle::default();
        // SAFETY: a valid out-pointer.
        let s = unsafe { (c.query_record_counter_id)(instance, &mut id) };
        (s == STATUS_SUCCESS).then_some(id.handle)
    }
}

unsafe extern "C" fn counters_callback(
    _agent: Handle,
    counters: *mut Handle,
    count: usize,
    data: *mut c_void,
) -> Status {
    if counters.is_null() || data.is_null() {
        return STATUS_SUCCESS;
    }
    // SAFETY: `data` is the `&mut Vec<u64>` of `Api::agent_counters`, alive and not aliased
    // during the synchronous call.
    let out = unsafe { &mut *data.cast::<Vec<u64>>() };
    // SAFETY: the SDK passes `count` counter ids.
    out.extend(
        unsafe { std::slice::from_raw_parts(counters, count) }
            .iter()
            .map(|c| c.handle),
    );
    STATUS_SUCCESS
}

/// The dispatch counting callback: runs on the launching thread before the kernel is enqueued;
/// sets the counter configuration for the dispatch's agent (none: not counted).
unsafe extern "C" fn counting_callback(
    data: DispatchCountingData,
    config: *mut Handle,
    _user: *mut u64,
    _args: *mut c_void,
) {
    if config.is_null() {
        return;
    }
    let agent = data.dispatch_info.agent_id.handle;
    if let Some(handle) = crate::rocprofiler_sdk::counter_config_for(agent) {
        // SAFETY: the SDK's out-parameter for this dispatch's configuration.
        unsafe { *config = Handle { handle } };
    }
}

unsafe extern "C" fn agents_callback(
    version: c_int,
    agents: *mut *const c_void,
    count: usize,
    data: *mut c_void,
) -> Status {
    if version != AGENT_INFO_VERSION_0 || agents.is_null() || data.is_null() {
        return STATUS_SUCCESS;
    }
    // SAFETY: `data` is the `&mut Vec<Agent>` passed by `Api::agents`, alive and not aliased
    // during the synchronous call.
    let out = unsafe { &mut *data.cast::<Vec<Agent>>() };
    for i in 0..count {
        // SAFETY: the SDK passes `count` agent pointers.
        let p = unsafe { *agents.add(i) }.cast::<AgentV0>();
        if p.is_null() {
            continue;
        }
        // SAFETY: every agent starts with its `size`.
        let size = unsafe { std::ptr::addr_of!((*p).size).read_unaligned() };
        if size < AGENT_BYTES_READ {
            continue;
        }
        // SAFETY: the agent holds at least the fields read (its size says so); its strings
        // live until the tool is finalized and are copied here.
        let agent = unsafe {
            Agent {
                id: (*p).id.handle,
                gpu: (*p).agent_type == AGENT_TYPE_GPU,
                type_index: u32::try_from((*p).logical_node_type_id).unwrap_or(0),
                arch: c_str((*p).name).unwrap_or_default(),
                product: c_str((*p).product_name).unwrap_or_default(),
            }
        };
        out.push(agent);
    }
    STATUS_SUCCESS
}

unsafe extern "C" fn tool_initialize(_finalize: ClientFinalize, _data: *mut c_void) -> c_int {
    std::panic::catch_unwind(crate::rocprofiler_sdk::initialize).unwrap_or(-1)
}

unsafe extern "C" fn tool_finalize(_data: *mut c_void) {
    let _ = std::panic::catch_unwind(crate::rocprofiler_sdk::finalize);
}

/// The configuration `rocprofiler_configure` returns (read by the SDK, never written).
struct Configuration(ToolConfigureResult);

// SAFETY: immutable after construction; `tool_data` is null and never dereferenced.
unsafe impl Sync for Configuration {}

static CONFIGURATION: Configuration = Configuration(ToolConfigureResult {
    size: std::mem::size_of::<ToolConfigureResult>(),
    initialize: Some(tool_initialize),
    finalize: Some(tool_finalize),
    tool_data: std::ptr::null_mut(),
});

/// The pointer `rocprofiler_configure` returns.
pub fn configure_result() -> *mut c_void {
    (&CONFIGURATION.0 as *const ToolConfigureResult)
        .cast_mut()
        .cast()
}

static CLIENT_HANDLE: AtomicU64 = AtomicU64::new(u64::MAX);

/// Names Metron in the SDK's client id (for the SDK's diagnostics) and keeps its handle.
/// `client` is the pointer `rocprofiler_configure` received (or null).
pub fn name_client(client: *mut c_void) {
    let client = client.cast::<ClientId>();
    if client.is_null() {
        return;
    }
    static NAME: &CStr = c"metron";
    // SAFETY: the SDK's `rocprofiler_client_id_t`, writable during `rocprofiler_configure`
    // (the call this runs in); `name` is set to a static string, as the SDK asks.
    unsafe {
        (*client).name = NAME.as_ptr();
        CLIENT_HANDLE.store(u64::from((*client).handle), Ordering::Relaxed);
    }
}

/// The client handle the SDK gave Metron (`None` before `rocprofiler_configure`).
pub fn client_handle() -> Option<u32> {
    u32::try_from(CLIENT_HANDLE.load(Ordering::Relaxed)).ok()
}

/// A C string of the SDK's, or `None`.
///
/// # Safety
/// `p` is null or a NUL-terminated string alive for the call.
pub unsafe fn c_str(p: *const c_char) -> Option<String> {
    if p.is_null() {
        return None;
    }
    // SAFETY: the caller's contract.
    Some(unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
}

/// The runtime version string `rocprofiler_configure` received.
pub fn runtime_version(p: *const c_char) -> Option<String> {
    // SAFETY: the SDK passes null or its version string, alive during `rocprofiler_configure`
    // (the call this runs in).
    unsafe { c_str(p) }
}

static API: OnceLock<Api> = OnceLock::new();

/// Keeps the SDK's entry points (first call wins).
pub fn set_api(api: Api) -> &'static Api {
    API.get_or_init(|| api)
}

/// The SDK's entry points, once loaded.
pub fn api() -> Option<&'static Api> {
    API.get()
}

/// The layouts Metron assumes, `("C.field", offset)` / `("sizeof C", size)`, for checking
/// against the SDK's headers (with `layouts` of the crate, once it lists them).
#[allow(dead_code)]
pub fn layouts() -> Vec<(&'static str, usize)> {
    use std::mem::{offset_of, size_of};
    vec![
        (
            "sizeof rocprofiler_tool_configure_result_t",
            size_of::<ToolConfigureResult>(),
        ),
        ("sizeof rocprofiler_client_id_t", size_of::<ClientId>()),
        (
            "sizeof rocprofiler_record_header_t",
            size_of::<RecordHeader>(),
        ),
        (
            "sizeof rocprofiler_kernel_dispatch_info_t",
            size_of::<KernelDispatchInfo>(),
        ),
        (
            "rocprofiler_kernel_dispatch_info_t.grid_size",
            offset_of!(KernelDispatchInfo, grid_size),
        ),
        (
            "rocprofiler_kernel_dispatch_info_t.reserved_padding",
            offset_of!(KernelDispatchInfo, reserved_padding),
        ),
        (
            "sizeof rocprofiler_buffer_tracing_kernel_dispatch_record_t",
            size_of::<KernelDispatchRecord>(),
        ),
        (
            "rocprofiler_buffer_tracing_kernel_dispatch_record_t.start_timestamp",
            offset_of!(KernelDispatchRecord, start_timestamp),
        ),
        (
            "rocprofiler_buffer_tracing_kernel_dispatch_record_t.dispatch_info",
            offset_of!(KernelDispatchRecord, dispatch_info),
        ),
        (
            "sizeof rocprofiler_buffer_tracing_memory_copy_record_t",
            size_of::<MemoryCopyRecord>(),
        ),
        (
            "rocprofiler_buffer_tracing_memory_copy_record_t.bytes",
            offset_of!(MemoryCopyRecord, bytes),
        ),
        (
            "sizeof rocprofiler_buffer_tracing_hip_api_record_t",
            size_of::<ApiRecord>(),
        ),
        (
            "rocprofiler_buffer_tracing_hip_api_record_t.start_timestamp",
            offset_of!(ApiRecord, start_timestamp),
        ),
        (
            "rocprofiler_buffer_tracing_hip_api_record_t.thread_id",
            offset_of!(ApiRecord, thread_id),
        ),
        (
            "sizeof rocprofiler_buffer_tracing_hip_api_record_t (no ancestor)",
            size_of::<ApiRecordNoAncestor>(),
        ),
        (
            "sizeof rocprofiler_callback_tracing_record_t",
            size_of::<CallbackRecord>(),
        ),
        (
            "rocprofiler_callback_tracing_record_t.kind",
            offset_of!(CallbackRecord, kind),
        ),
        (
            "rocprofiler_callback_tracing_record_t.payload",
            offset_of!(CallbackRecord, payload),
        ),
        (
            "sizeof rocprofiler_callback_tracing_code_object_kernel_symbol_register_data_t",
            size_of::<KernelSymbolData>(),
        ),
        (
            "rocprofiler_callback_tracing_code_object_kernel_symbol_register_data_t.sgpr_count",
            offset_of!(KernelSymbolData, sgpr_count),
        ),
        (
            "rocprofiler_callback_tracing_code_object_kernel_symbol_register_data_t.kernel_address",
            offset_of!(KernelSymbolData, kernel_address),
        ),
        (
            "sizeof rocprofiler_counter_info_v0_t",
            size_of::<CounterInfoV0>(),
        ),
        (
            "sizeof rocprofiler_dispatch_counting_service_data_t",
            size_of::<DispatchCountingData>(),
        ),
        (
            "sizeof rocprofiler_dispatch_counting_service_record_t",
            size_of::<DispatchCountingRecord>(),
        ),
        (
            "sizeof rocprofiler_counter_record_t",
            size_of::<CounterRecord>(),
        ),
        ("sizeof rocprofiler_agent_v0_t", size_of::<AgentV0>()),
        ("rocprofiler_agent_v0_t.name", offset_of!(AgentV0, name)),
        (
            "rocprofiler_agent_v0_t.product_name",
            offset_of!(AgentV0, product_name),
        ),
        (
            "rocprofiler_agent_v0_t.logical_node_type_id",
            offset_of!(AgentV0, logical_node_type_id),
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts_match_the_transcribed_headers() {
        let l: std::collections::HashMap<_, _> = layouts().into_iter().collect();
        // fwd.h: static_assert(sizeof(rocprofiler_kernel_dispatch_info_t) == 128).
        assert_eq!(l["sizeof rocprofiler_kernel_dispatch_info_t"], 128);
        assert_eq!(l["rocprofiler_kernel_dispatch_info_t.reserved_padding"], 72);
        assert_eq!(
            l["sizeof rocprofiler_buffer_tracing_kernel_dispatch_record_t"],
            56 + 128
        );
        assert_eq!(
            l["sizeof rocprofiler_buffer_tracing_memory_copy_record_t"],
            96
        );
        assert_eq!(l["sizeof rocprofiler_buffer_tracing_hip_api_record_t"], 64);
        assert_eq!(
            l["rocprofiler_buffer_tracing_hip_api_record_t.start_timestamp"],
            40
        );
        assert_eq!(
            l["rocprofiler_buffer_tracing_hip_api_record_t.thread_id"],
            56
        );
        assert_eq!(
            l["sizeof rocprofiler_buffer_tracing_hip_api_record_t (no ancestor)"],
            56
        );
        assert_eq!(l["sizeof rocprofiler_callback_tracing_record_t"], 64);
        assert_eq!(l["rocprofiler_callback_tracing_record_t.kind"], 40);
        assert_eq!(l["rocprofiler_callback_tracing_record_t.payload"], 56);
        assert_eq!(
            l["sizeof rocprofiler_callback_tracing_code_object_kernel_symbol_register_data_t"],
            88
        );
        assert_eq!(l["rocprofiler_agent_v0_t.name"], 248);
        assert_eq!(l["rocprofiler_agent_v0_t.logical_node_type_id"], 288);
        assert_eq!(l["sizeof rocprofiler_agent_v0_t"], 304);
        assert_eq!(l["sizeof rocprofiler_tool_configure_result_t"], 32);
        assert_eq!(l["sizeof rocprofiler_record_header_t"], 16);
        assert_eq!(l["sizeof rocprofiler_counter_info_v0_t"], 48);
        assert_eq!(
            l["sizeof rocprofiler_dispatch_counting_service_data_t"],
            168
        );
        assert_eq!(
            l["sizeof rocprofiler_dispatch_counting_service_record_t"],
            176
        );
        assert_eq!(l["sizeof rocprofiler_counter_record_t"], 40);
    }

    #[test]
    fn api_records_are_read_by_their_size() {
        let mut new = ApiRecord {
            size: 64,
            kind: BUFFER_TRACING_HIP_RUNTIME_API,
            operation: 7,
            correlation_id: CorrelationId {
                internal: 1001,
                external: 5,
                ancestor: 1000,
            },
            start_timestamp: 100,
            end_timestamp: 250,
            thread_id: 4242,
        };
        let mut old = ApiRecordNoAncestor {
            size: 56,
            kind: BUFFER_TRACING_HIP_RUNTIME_API,
            operation: 7,
            correlation_id: AsyncCorrelationId {
                internal: 1001,
                external: 5,
            },
            start_timestamp: 100,
            end_timestamp: 250,
            thread_id: 4242,
        };
        let want = Record::Api(ApiCall {
            kind: BUFFER_TRACING_HIP_RUNTIME_API,
            correlation: 1001,
            thread: 4242,
            operation: 7,
            start: 100,
            end: 250,
        });
        let read = |payload: *mut c_void| {
            let h = RecordHeader {
                category: BUFFER_CATEGORY_TRACING,
                kind: BUFFER_TRACING_HIP_RUNTIME_API as u32,
                payload,
            };
            // SAFETY: the header and its payload live on this stack for the call.
            unsafe { read_record(&h) }
        };
        assert_eq!(read((&mut new as *mut ApiRecord).cast()), want);
        assert_eq!(read((&mut old as *mut ApiRecordNoAncestor).cast()), want);
        old.size = 48;
        assert_eq!(
            read((&mut old as *mut ApiRecordNoAncestor).cast()),
            Record::UnknownApi
        );
        // An HSA API record: the same layout, under its own kind.
        new.kind = BUFFER_TRACING_HSA_AMD_EXT_API;
        let h = RecordHeader {
            category: BUFFER_CATEGORY_TRACING,
            kind: BUFFER_TRACING_HSA_AMD_EXT_API as u32,
            payload: (&mut new as *mut ApiRecord).cast(),
        };
        // SAFETY: the header and its payload live on this stack for the call.
        let Record::Api(call) = (unsafe { read_record(&h) }) else {
            panic!("an HSA API record was not read as one");
        };
        assert_eq!(
            (call.kind, call.operation, call.start),
            (BUFFER_TRACING_HSA_AMD_EXT_API, 7, 100)
        );
    }

    #[test]
    fn callback_records_of_another_kind_are_not_read() {
        let r = CallbackRecord {
            context_id: ContextId { handle: 1 },
            thread_id: 7,
            correlation_id: CorrelationId {
                internal: 42,
                ..CorrelationId::default()
            },
            kind: CALLBACK_TRACING_KERNEL_DISPATCH,
            operation: KERNEL_DISPATCH_ENQUEUE,
            phase: PHASE_ENTER,
            payload: std::ptr::null_mut(),
        };
        let read = |r: &CallbackRecord, kind| {
            // SAFETY: the payload (null) is only read for a kernel symbol, never asked here.
            unsafe { read_callback(r, kind) }
        };
        assert_eq!(
            read(&r, CALLBACK_TRACING_KERNEL_DISPATCH),
            Callback::Enqueue { correlation: 42 }
        );
        assert_eq!(
            read(&r, CALLBACK_TRACING_CODE_OBJECT),
            Callback::Unrecognized
        );
        let exit = CallbackRecord { phase: 2, ..r };
        assert_eq!(
            read(&exit, CALLBACK_TRACING_KERNEL_DISPATCH),
            Callback::Ignored
        );
    }
}
