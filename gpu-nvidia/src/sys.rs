//! Everything unsafe about loading and calling CUDA and CUPTI: `dlopen` of the driver and
//! CUPTI, the hand-written declarations of the few functions Metron calls, and the Callback
//! API's `CUpti_CallbackData` (CUPTI 13, `CUPTI_API_VERSION` 130001). The activity records
//! are `sys_activity.rs`'s (re-exported here).

pub use crate::sys_activity::*;
use std::ffi::{c_char, c_int, c_void, CStr, CString};

/// `CUPTI_PROFILER_STRUCT_SIZE(type, lastfield)` (and the PC- and PM-sampling APIs' `*Size`
/// constants): the struct's size up to its last field, the value CUPTI's `structSize` expects.
macro_rules! struct_size {
    ($t:ty, $f:ident) => {{
        // The size of the field, through a function of the field's type (no value needed).
        const fn size_of_field<T, F>(_: fn(&T) -> &F) -> usize {
            std::mem::size_of::<F>()
        }
        std::mem::offset_of!($t, $f) + size_of_field::<$t, _>(|s: &$t| &s.$f)
    }};
}
pub(crate) use struct_size;

/// `CUptiResult`.
pub type CuptiResult = c_int;
/// `CUresult`.
pub type CuResult = c_int;
/// `CUPTI_SUCCESS`.
pub const CUPTI_SUCCESS: CuptiResult = 0;

/// `CUPTI_CB_DOMAIN_DRIVER_API`.
pub const DOMAIN_DRIVER: i32 = 1;
/// `CUPTI_CB_DOMAIN_RUNTIME_API`.
pub const DOMAIN_RUNTIME: i32 = 2;

/// Runtime API callback ids of kernel launches (`cupti_runtime_cbid.h`).
pub const RUNTIME_LAUNCH_CBIDS: &[u32] = &[211, 214, 269, 270, 430, 431];
/// Driver API callback ids of kernel launches (`cupti_driver_cbid.h`).
pub const DRIVER_LAUNCH_CBIDS: &[u32] = &[307, 442, 477, 478, 652, 653];
/// Runtime API callback ids that begin a stream capture (`cudaStreamBeginCapture`,
/// `...ToGraph`, `_ptsz` variants).
pub const RUNTIME_CAPTURE_BEGIN_CBIDS: &[u32] = &[315, 316, 452, 453];
/// Runtime API callback ids that end a stream capture.
pub const RUNTIME_CAPTURE_END_CBIDS: &[u32] = &[319, 320];
/// Driver API callback ids that begin a stream capture.
pub const DRIVER_CAPTURE_BEGIN_CBIDS: &[u32] = &[495, 496, 539, 540, 720, 721];
/// Driver API callback ids that end a stream capture.
pub const DRIVER_CAPTURE_END_CBIDS: &[u32] = &[497, 498];
/// Runtime API callback ids of graph launches: `cudaGraphLaunch_v10000`, `_ptsz`.
pub const RUNTIME_GRAPH_LAUNCH_CBIDS: &[u32] = &[311, 312];
/// Driver API callback ids of graph launches: `cuGraphLaunch`, `cuGraphLaunch_ptsz`.
pub const DRIVER_GRAPH_LAUNCH_CBIDS: &[u32] = &[514, 515];

/// `CUpti_CallbackData` (72 bytes).
#[repr(C)]
pub struct CallbackData {
    /// `callbackSite`: 0 enter, 1 exit.
    pub callback_site: i32,
    /// `functionName`.
    pub function_name: *const c_char,
    /// `functionParams`.
    pub function_params: *const c_void,
    /// `functionReturnValue`.
    pub function_return_value: *mut c_void,
    /// `symbolName`.
    pub symbol_name: *const c_char,
    /// `context`.
    pub context: *mut c_void,
    /// `contextUid`.
    pub context_uid: u32,
    /// `correlationData`.
    pub correlation_data: *mut u64,
    /// `correlationId`.
    pub correlation_id: u32,
}

/// Buffer-requested callback.
pub type BufferRequested = extern "C" fn(*mut *mut u8, *mut usize, *mut usize);
/// Buffer-completed callback.
pub type BufferCompleted = extern "C" fn(*mut c_void, u32, *mut u8, usize, usize);
/// Callback API subscriber callback.
pub type CallbackFn = extern "C" fn(*mut c_void, i32, u32, *const c_void);
/// Timestamp callback.
pub type TimestampFn = extern "C" fn() -> u64;

/// The CUPTI functions Metron calls.
#[derive(Clone, Copy)]
pub struct Cupti {
    /// `cuptiGetVersion`.
    pub get_version: unsafe extern "C" fn(*mut u32) -> CuptiResult,
    /// `cuptiGetResultString`.
    pub get_result_string: unsafe extern "C" fn(CuptiResult, *mut *const c_char) -> CuptiResult,
    /// `cuptiActivityEnable`.
    pub activity_enable: unsafe extern "C" fn(i32) -> CuptiResult,
    /// `cuptiActivityDisable`.
    pub activity_disable: unsafe extern "C" fn(i32) -> CuptiResult,
    /// `cuptiActivityRegisterCallbacks`.
    pub register_callbacks: unsafe extern "C" fn(BufferRequested, BufferCompleted) -> CuptiResult,
    /// `cuptiActivityRegisterTimestampCallback`.
    pub register_timestamp: unsafe extern "C" fn(TimestampFn) -> CuptiResult,
    /// `cuptiActivityFlushAll`.
    pub flush_all: unsafe extern "C" fn(u32) -> CuptiResult,
    /// `cuptiActivityGetNextRecord`.
    pub get_next_record: unsafe extern "C" fn(*mut u8, usize, *mut *mut u8) -> CuptiResult,
    /// `cuptiActivityGetNumDroppedRecords`.
    pub get_num_dropped: unsafe extern "C" fn(*mut c_void, u32, *mut usize) -> CuptiResult,
    /// `cuptiSubscribe`.
    pub subscribe: unsafe extern "C" fn(*mut *mut c_void, CallbackFn, *mut c_void) -> CuptiResult,
    /// `cuptiEnableCallback`.
    pub enable_callback: unsafe extern "C" fn(u32, *mut c_void, i32, u32) -> CuptiResult,
    /// `cuptiEnableDomain`.
    pub enable_domain: unsafe extern "C" fn(u32, *mut c_void, i32) -> CuptiResult,
    /// `cuptiGetCallbackName`.
    pub get_callback_name: unsafe extern "C" fn(i32, u32, *mut *const c_char) -> CuptiResult,
    /// `cuptiSetThreadIdType`.
    pub set_thread_id_type: unsafe extern "C" fn(i32) -> CuptiResult,
    /// `cuptiActivityEnableCudaEventDeviceTimestamps` (CUPTI 12.8 and later).
    pub enable_event_timestamps: Option<unsafe extern "C" fn(u8) -> CuptiResult>,
    /// `cuptiActivityEnableAllSyncRecords`.
    pub enable_all_sync_records: Option<unsafe extern "C" fn(u8) -> CuptiResult>,
}

/// The CUDA driver functions Metron calls.
#[derive(Clone, Copy)]
pub struct Driver {
    /// `cuInit`.
    pub init: unsafe extern "C" fn(u32) -> CuResult,
    /// `cuDriverGetVersion`.
    pub driver_get_version: unsafe extern "C" fn(*mut c_int) -> CuResult,
    /// `cuDeviceGetCount`.
    pub device_get_count: unsafe extern "C" fn(*mut c_int) -> CuResult,
    /// `cuDeviceGet`.
    pub device_get: unsafe extern "C" fn(*mut c_int, c_int) -> CuResult,
    /// `cuDeviceGetName`.
    pub device_get_name: unsafe extern "C" fn(*mut c_char, c_int, c_int) -> CuResult,
    /// `cuDeviceGetAttribute`.
    pub device_get_attribute: unsafe extern "C" fn(*mut c_int, c_int, c_int) -> CuResult,
    /// `cuCtxGetCurrent`.
    pub ctx_get_current: unsafe extern "C" fn(*mut *mut c_void) -> CuResult,
    /// `cuCtxGetDevice`.
    pub ctx_get_device: unsafe extern "C" fn(*mut c_int) -> CuResult,
    /// `cuDevicePrimaryCtxRetain`.
    pub primary_ctx_retain: unsafe extern "C" fn(*mut *mut c_void, c_int) -> CuResult,
    /// `cuDevicePrimaryCtxRelease_v2`.
    pub primary_ctx_release: unsafe extern "C" fn(c_int) -> CuResult,
    /// `cuCtxPushCurrent_v2`.
    pub ctx_push_current: unsafe extern "C" fn(*mut c_void) -> CuResult,
    /// `cuCtxPopCurrent_v2`.
    pub ctx_pop_current: unsafe extern "C" fn(*mut *mut c_void) -> CuResult,
    /// `cuModuleLoadData`.
    pub module_load_data: unsafe extern "C" fn(*mut *mut c_void, *const c_void) -> CuResult,
    /// `cuModuleGetFunction`.
    pub module_get_function:
        unsafe extern "C" fn(*mut *mut c_void, *mut c_void, *const c_char) -> CuResult,
    /// `cuLaunchKernel`.
    pub launch_kernel: LaunchKernelFn,
    /// `cuCtxSynchronize`.
    pub ctx_synchronize: unsafe extern "C" fn() -> CuResult,
}

/// `cuLaunchKernel(f, grid xyz, block xyz, shared bytes, stream, params, extra)`.
pub type LaunchKernelFn = unsafe extern "C" fn(
    *mut c_void,
    u32,
    u32,
    u32,
    u32,
    u32,
    u32,
    u32,
    *mut c_void,
    *mut *mut c_void,
    *mut *mut c_void,
) -> CuResult;

/// A kernel that does nothing, as PTX the driver compiles for any GPU.
const WARM_UP_PTX: &[u8] = b".version 7.0\n.target sm_70\n.address_size 64\n.visible .entry metron_warm_up()\n{\n\tret;\n}\n\0";

/// The warm-up kernel's name (its records are Metron's own, not the program's).
pub const WARM_UP_KERNEL: &str = "metron_warm_up";

/// `dlerror()` as text.
fn dl_error() -> String {
    // SAFETY: dlerror returns null or a NUL-terminated string owned by libc, valid until the
    // next dl* call on this thread; it is copied at once.
    unsafe {
        let e = libc::dlerror();
        if e.is_null() {
            "unknown error".into()
        } else {
            CStr::from_ptr(e).to_string_lossy().into_owned()
        }
    }
}

/// `dlopen(name, flags)`; `Err(dlerror())` on failure.
pub fn dlopen(name: &str, noload: bool) -> Result<*mut c_void, String> {
    let c = CString::new(name).map_err(|_| format!("{name}: NUL in path"))?;
    let flags = libc::RTLD_NOW | libc::RTLD_GLOBAL | if noload { libc::RTLD_NOLOAD } else { 0 };
    // SAFETY: `c` is a valid NUL-terminated string; dlopen has no other preconditions.
    let h = unsafe { libc::dlopen(c.as_ptr(), flags) };
    if h.is_null() {
        Err(dl_error())
    } else {
        Ok(h)
    }
}

/// The path of the library behind `handle` (through a symbol it defines), if known.
pub fn library_path(handle: *mut c_void, symbol: &str) -> Option<String> {
    let c = CString::new(symbol).ok()?;
    // SAFETY: `handle` came from a successful dlopen and is never closed; `c` is NUL-terminated.
    let addr = unsafe { libc::dlsym(handle, c.as_ptr()) };
    if addr.is_null() {
        return None;
    }
    // SAFETY: Dl_info is plain data (pointers and integers); all-zero is a valid value.
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: `addr` is an address inside a loaded object and `info` is a valid out-pointer.
    if unsafe { libc::dladdr(addr, &mut info) } == 0 || info.dli_fname.is_null() {
        return None;
    }
    // SAFETY: dli_fname is a NUL-terminated string owned by the loader, copied at once.
    Some(
        unsafe { CStr::from_ptr(info.dli_fname) }
            .to_string_lossy()
            .into_owned(),
    )
}

/// `dlsym` of `name`, as a function pointer of type `T`.
///
/// # Safety
/// `T` must be an `unsafe extern "C" fn` type whose signature matches the symbol's, and
/// `handle` must come from a successful [`dlopen`] that is never closed.
pub(crate) unsafe fn sym<T: Copy>(handle: *mut c_void, name: &str) -> Result<T, String> {
    assert_eq!(std::mem::size_of::<T>(), std::mem::size_of::<*mut c_void>());
    let c = CString::new(name).map_err(|_| name.to_string())?;
    // SAFETY: handle is valid (caller), `c` is NUL-terminated.
    let p = unsafe { libc::dlsym(handle, c.as_ptr()) };
    if p.is_null() {
        return Err(format!("symbol {name} not found"));
    }
    // SAFETY: T is a function pointer type of pointer size whose signature matches (caller).
    Ok(unsafe { std::mem::transmute_copy::<*mut c_void, T>(&p) })
}

impl Cupti {
    /// Resolves every function from a libcupti handle.
    pub fn load(handle: *mut c_void) -> Result<Cupti, String> {
        // SAFETY: each type below is the C signature of the named function in cupti_activity.h
        // / cupti_callbacks.h / cupti_result.h / cupti_version.h (CUPTI 13); the handle is a
        // successful dlopen of libcupti that is never closed.
        unsafe {
            Ok(Cupti {
                get_version: sym(handle, "cuptiGetVersion")?,
                get_result_string: sym(handle, "cuptiGetResultString")?,
                activity_enable: sym(handle, "cuptiActivityEnable")?,
                activity_disable: sym(handle, "cuptiActivityDisable")?,
                register_callbacks: sym(handle, "cuptiActivityRegisterCallbacks")?,
                register_timestamp: sym(handle, "cuptiActivityRegisterTimestampCallback")?,
                flush_all: sym(handle, "cuptiActivityFlushAll")?,
                get_next_record: sym(handle, "cuptiActivityGetNextRecord")?,
                get_num_dropped: sym(handle, "cuptiActivityGetNumDroppedRecords")?,
                subscribe: sym(handle, "cuptiSubscribe")?,
                enable_callback: sym(handle, "cuptiEnableCallback")?,
                enable_domain: sym(handle, "cuptiEnableDomain")?,
                get_callback_name: sym(handle, "cuptiGetCallbackName")?,
                set_thread_id_type: sym(handle, "cuptiSetThreadIdType")?,
                enable_event_timestamps: sym(
                    handle,
                    "cuptiActivityEnableCudaEventDeviceTimestamps",
                )
                .ok(),
                enable_all_sync_records: sym(handle, "cuptiActivityEnableAllSyncRecords").ok(),
            })
        }
    }

    /// CUPTI's text for `r`.
    pub fn result_string(&self, r: CuptiResult) -> String {
        let mut s: *const c_char = std::ptr::null();
        // SAFETY: a valid out-pointer; CUPTI returns a static NUL-terminated string.
        let ok = unsafe { (self.get_result_string)(r, &mut s) } == CUPTI_SUCCESS;
        if ok && !s.is_null() {
            // SAFETY: non-null static string from CUPTI.
            format!("{} ({r})", unsafe { CStr::from_ptr(s) }.to_string_lossy())
        } else {
            format!("CUPTI error {r}")
        }
    }

    /// `cuptiGetVersion`.
    pub fn version(&self) -> Option<u32> {
        let mut v = 0u32;
        // SAFETY: a valid out-pointer.
        (unsafe { (self.get_version)(&mut v) } == CUPTI_SUCCESS).then_some(v)
    }

    /// `cuptiGetCallbackName(domain, cbid)`.
    pub fn callback_name(&self, domain: i32, cbid: u32) -> Option<String> {
        let mut s: *const c_char = std::ptr::null();
        // SAFETY: a valid out-pointer; CUPTI returns a static NUL-terminated string.
        let ok = unsafe { (self.get_callback_name)(domain, cbid, &mut s) } == CUPTI_SUCCESS;
        // SAFETY: non-null static string from CUPTI.
        (ok && !s.is_null()).then(|| unsafe { CStr::from_ptr(s) }.to_string_lossy().into_owned())
    }

    /// Calls `f` with a checked result: `Err(text)` unless it is `CUPTI_SUCCESS`.
    pub fn check(&self, what: &str, r: CuptiResult) -> Result<(), String> {
        if r == CUPTI_SUCCESS {
            Ok(())
        } else {
            Err(format!("{what} failed: {}", self.result_string(r)))
        }
    }

    /// `cuptiActivityFlushAll(flag)`.
    pub fn flush(&self, forced: bool) -> CuptiResult {
        // SAFETY: no pointers; CUPTI is initialized (the activity API was enabled).
        unsafe { (self.flush_all)(u32::from(forced)) }
    }

    /// Walks the records of a completed buffer, calling `f(kind, record pointer)`.
    ///
    /// # Safety
    /// `buffer` must be a buffer CUPTI completed, with `valid` bytes of records.
    pub unsafe fn each_record(&self, buffer: *mut u8, valid: usize, mut f: impl FnMut(*const u8)) {
        let mut record: *mut u8 = std::ptr::null_mut();
        loop {
            // SAFETY: buffer/valid as CUPTI gave them (caller); record is an in/out pointer
            // CUPTI advances through the buffer.
            let r = unsafe { (self.get_next_record)(buffer, valid, &mut record) };
            if r != CUPTI_SUCCESS || record.is_null() {
                break;
            }
            f(record);
        }
    }

    /// `cuptiActivityGetNumDroppedRecords(ctx, stream)`.
    pub fn dropped(&self, ctx: *mut c_void, stream: u32) -> usize {
        let mut n = 0usize;
        // SAFETY: ctx/stream are the values CUPTI passed to the completion callback; a valid
        // out-pointer.
        if unsafe { (self.get_num_dropped)(ctx, stream, &mut n) } == CUPTI_SUCCESS {
            n
        } else {
            0
        }
    }
}

/// A C string owned by CUPTI, copied (empty when null).
///
/// # Safety
/// `p` must be null or a NUL-terminated string valid for the call.
pub unsafe fn c_str(p: *const c_char) -> String {
    if p.is_null() {
        String::new()
    } else {
        // SAFETY: non-null, NUL-terminated (caller).
        unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
    }
}

/// Registers the Metron callbacks with CUPTI; API records name threads by their kernel tid
/// (`CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM`), as Metron does.
pub fn register(
    c: &Cupti,
    req: BufferRequested,
    done: BufferCompleted,
    ts: Option<TimestampFn>,
    system_tids: bool,
) -> Result<(), String> {
    if system_tids {
        // SAFETY: no pointers; 1 is CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM.
        c.check("cuptiSetThreadIdType(SYSTEM)", unsafe {
            (c.set_thread_id_type)(1)
        })?;
    }
    if let Some(ts) = ts {
        // SAFETY: plain function pointers with the signatures CUPTI declares.
        c.check("cuptiActivityRegisterTimestampCallback", unsafe {
            (c.register_timestamp)(ts)
        })?;
    }
    // SAFETY: as above.
    c.check("cuptiActivityRegisterCallbacks", unsafe {
        (c.register_callbacks)(req, done)
    })
}

/// `cuptiActivityEnable(kind)`.
pub fn enable(c: &Cupti, kind: i32) -> Result<(), String> {
    // SAFETY: no pointers.
    c.check(&format!("cuptiActivityEnable({kind})"), unsafe {
        (c.activity_enable)(kind)
    })
}

/// `cuptiActivityEnableCudaEventDeviceTimestamps(on)`.
pub fn enable_event_timestamps(c: &Cupti, on: bool) -> Result<(), String> {
    switch_optional(
        c,
        "cuptiActivityEnableCudaEventDeviceTimestamps",
        c.enable_event_timestamps,
        on,
    )
}

/// `cuptiActivityEnableAllSyncRecords(on)`: off leaves out the queries (`cudaEventQuery`,
/// `cudaStreamQuery`) that found the work unfinished, which a polling loop makes by the
/// thousand.
pub fn enable_all_sync_records(c: &Cupti, on: bool) -> Result<(), String> {
    switch_optional(
        c,
        "cuptiActivityEnableAllSyncRecords",
        c.enable_all_sync_records,
        on,
    )
}

/// Calls `name(on)`, a CUPTI switch that an older CUPTI may lack (`f` is `None` then).
fn switch_optional(
    c: &Cupti,
    name: &str,
    f: Option<unsafe extern "C" fn(u8) -> CuptiResult>,
    on: bool,
) -> Result<(), String> {
    let f = f.ok_or_else(|| format!("this CUPTI has no {name}"))?;
    // SAFETY: a CUPTI function of this signature taking no pointers.
    c.check(name, unsafe { f(u8::from(on)) })
}

/// `cuptiActivityDisable(kind)`.
pub fn disable(c: &Cupti, kind: i32) -> Result<(), String> {
    // SAFETY: no pointers.
    c.check(&format!("cuptiActivityDisable({kind})"), unsafe {
        (c.activity_disable)(kind)
    })
}

/// `cuptiSubscribe`, `cuptiEnableDomain` for each of `domains`, then `cuptiEnableCallback` for
/// each `(domain, cbid)`.
/// Subscribes `cb` to `domains` (every callback) and to the single callbacks `ids`; returns the
/// subscriber handle (for [`set_callbacks`]).
pub fn subscribe(
    c: &Cupti,
    cb: CallbackFn,
    domains: &[i32],
    ids: &[(i32, u32)],
) -> Result<usize, String> {
    let mut sub: *mut c_void = std::ptr::null_mut();
    // SAFETY: a valid out-pointer, a callback with CUPTI's signature, null user data.
    c.check("cuptiSubscribe", unsafe {
        (c.subscribe)(&mut sub, cb, std::ptr::null_mut())
    })?;
    for &domain in domains {
        // SAFETY: `sub` was returned by cuptiSubscribe.
        c.check("cuptiEnableDomain", unsafe {
            (c.enable_domain)(1, sub, domain)
        })?;
    }
    for &(domain, cbid) in ids {
        // SAFETY: `sub` was returned by cuptiSubscribe.
        c.check("cuptiEnableCallback", unsafe {
            (c.enable_callback)(1, sub, domain, cbid)
        })?;
    }
    Ok(sub as usize)
}

/// Switches a subscriber's `domains` and single callbacks `ids` on or off (a domain switched
/// off silences its single callbacks too, so they are switched on again after their domain).
pub fn set_callbacks(
    c: &Cupti,
    sub: usize,
    domains: &[i32],
    ids: &[(i32, u32)],
    on: bool,
) -> Result<(), String> {
    let sub = sub as *mut c_void;
    let flag = u32::from(on);
    for &domain in domains {
        // SAFETY: `sub` was returned by cuptiSubscribe and is never unsubscribed.
        c.check("cuptiEnableDomain", unsafe {
            (c.enable_domain)(flag, sub, domain)
        })?;
    }
    for &(domain, cbid) in ids {
        // SAFETY: as above.
        c.check("cuptiEnableCallback", unsafe {
            (c.enable_callback)(flag, sub, domain, cbid)
        })?;
    }
    Ok(())
}

impl CallbackData {
    /// The `CUpti_CallbackData` CUPTI passed to a runtime- or driver-API callback.
    ///
    /// # Safety
    /// `data` must be the non-null `cbdata` CUPTI passed for the runtime or driver API domain.
    pub unsafe fn from_raw<'a>(data: *const c_void) -> &'a CallbackData {
        // SAFETY: for these domains CUPTI passes a CUpti_CallbackData valid for the callback.
        unsafe { &*data.cast::<CallbackData>() }
    }

    /// Keeps `v` in the call's `correlationData` (the same slot at enter and exit).
    #[inline]
    pub fn stash(&self, v: u64) {
        if !self.correlation_data.is_null() {
            // SAFETY: CUPTI passes a pointer to a u64 owned by this enter/exit pair.
            unsafe { *self.correlation_data = v };
        }
    }

    /// What [`CallbackData::stash`] kept at the enter of this call (0 if none).
    #[inline]
    pub fn stashed(&self) -> u64 {
        if self.correlation_data.is_null() {
            0
        } else {
            // SAFETY: as in `stash`.
            unsafe { *self.correlation_data }
        }
    }

    /// The call's return code at exit (`cudaError_t` / `CUresult`; 0 if unknown).
    #[inline]
    pub fn return_code(&self) -> u32 {
        if self.callback_site != 1 || self.function_return_value.is_null() {
            return 0;
        }
        // SAFETY: at exit CUPTI points functionReturnValue at the call's int-sized result.
        unsafe { self.function_return_value.cast::<i32>().read_unaligned() as u32 }
    }
}

/// The calling thread's kernel id.
pub fn gettid() -> u32 {
    // SAFETY: gettid has no preconditions.
    unsafe { libc::gettid() as u32 }
}

impl Driver {
    /// Resolves every function from a libcuda handle.
    pub fn load(handle: *mut c_void) -> Result<Driver, String> {
        // SAFETY: each type below is the C signature of the named function in cuda.h (these
        // have had the same signature since CUDA 2); the handle is never closed.
        unsafe {
            Ok(Driver {
                init: sym(handle, "cuInit")?,
                driver_get_version: sym(handle, "cuDriverGetVersion")?,
                device_get_count: sym(handle, "cuDeviceGetCount")?,
                device_get: sym(handle, "cuDeviceGet")?,
                device_get_name: sym(handle, "cuDeviceGetName")?,
                device_get_attribute: sym(handle, "cuDeviceGetAttribute")?,
                ctx_get_current: sym(handle, "cuCtxGetCurrent")?,
                ctx_get_device: sym(handle, "cuCtxGetDevice")?,
                primary_ctx_retain: sym(handle, "cuDevicePrimaryCtxRetain")?,
                primary_ctx_release: sym(handle, "cuDevicePrimaryCtxRelease_v2")?,
                ctx_push_current: sym(handle, "cuCtxPushCurrent_v2")?,
                ctx_pop_current: sym(handle, "cuCtxPopCurrent_v2")?,
                module_load_data: sym(handle, "cuModuleLoadData")?,
                module_get_function: sym(handle, "cuModuleGetFunction")?,
                launch_kernel: sym(handle, "cuLaunchKernel")?,
                ctx_synchronize: sym(handle, "cuCtxSynchronize")?,
            })
        }
    }

    /// Loads a one-instruction kernel into the current context, launches it once on the
    /// default stream and waits for it: the first launch's lazy work of CUPTI's tracing,
    /// sampling and profiling then happens here rather than in the program's first kernel.
    pub fn warm_up_launch(&self) -> Result<(), String> {
        let mut module: *mut c_void = std::ptr::null_mut();
        // SAFETY: a valid out-pointer and a NUL-terminated PTX image.
        let r = unsafe { (self.module_load_data)(&mut module, WARM_UP_PTX.as_ptr().cast()) };
        if r != 0 {
            return Err(format!("cuModuleLoadData failed ({r})"));
        }
        let mut f: *mut c_void = std::ptr::null_mut();
        let name = b"metron_warm_up\0";
        // SAFETY: the module just loaded, a NUL-terminated name, a valid out-pointer.
        let mut r = unsafe { (self.module_get_function)(&mut f, module, name.as_ptr().cast()) };
        if r == 0 {
            // SAFETY: a kernel with no parameters: null parameter and extra arrays.
            r = unsafe {
                (self.launch_kernel)(
                    f,
                    1,
                    1,
                    1,
                    1,
                    1,
                    1,
                    0,
                    std::ptr::null_mut(),
                    std::ptr::null_mut(),
                    std::ptr::null_mut(),
                )
            };
        }
        if r == 0 {
            // SAFETY: no arguments.
            r = unsafe { (self.ctx_synchronize)() };
        }
        // The module stays loaded: unloaded, its function's handle was reused for the
        // program's next kernel and CUPTI named that kernel `metron_warm_up` (seen on the H200
        // in kernel-mode counters).
        if r == 0 {
            Ok(())
        } else {
            Err(format!("the warm-up launch failed ({r})"))
        }
    }

    /// `cuInit(0)`.
    pub fn cu_init(&self) -> CuResult {
        // SAFETY: no pointers.
        unsafe { (self.init)(0) }
    }

    /// `cuCtxGetCurrent`: the calling thread's context (`None` when there is none).
    pub fn current_context(&self) -> Option<*mut c_void> {
        let mut ctx: *mut c_void = std::ptr::null_mut();
        // SAFETY: a valid out-pointer.
        let r = unsafe { (self.ctx_get_current)(&mut ctx) };
        (r == 0 && !ctx.is_null()).then_some(ctx)
    }

    /// `cuCtxGetDevice`: the device of the calling thread's current context.
    pub fn current_device(&self) -> Option<i32> {
        let mut dev: c_int = 0;
        // SAFETY: a valid out-pointer.
        (unsafe { (self.ctx_get_device)(&mut dev) } == 0).then_some(dev)
    }

    /// `cuDriverGetVersion`.
    pub fn version(&self) -> Option<i32> {
        let mut v = 0;
        // SAFETY: a valid out-pointer.
        (unsafe { (self.driver_get_version)(&mut v) } == 0).then_some(v)
    }

    /// `cuDeviceGetCount` (needs cuInit).
    pub fn device_count(&self) -> Result<i32, CuResult> {
        let mut n = 0;
        // SAFETY: a valid out-pointer.
        match unsafe { (self.device_get_count)(&mut n) } {
            0 => Ok(n),
            e => Err(e),
        }
    }

    /// `cuDeviceGet` then `cuDeviceGetName`.
    pub fn device_name(&self, ordinal: i32) -> Option<String> {
        let mut dev = 0;
        // SAFETY: a valid out-pointer.
        if unsafe { (self.device_get)(&mut dev, ordinal) } != 0 {
            return None;
        }
        let mut buf = [0 as c_char; 256];
        // SAFETY: buf has room for 256 bytes including the NUL, as passed.
        if unsafe { (self.device_get_name)(buf.as_mut_ptr(), 256, dev) } != 0 {
            return None;
        }
        // SAFETY: the driver NUL-terminated the name inside buf.
        Some(unsafe { c_str(buf.as_ptr()) })
    }

    /// Runs `f` with `ctx` current on this thread (pushed, then popped).
    pub fn with_context<T>(&self, ctx: *mut c_void, f: impl FnOnce() -> T) -> Result<T, String> {
        // SAFETY: `ctx` is a context the caller got from the driver; a destroyed one makes the
        // push fail with an error code, nothing worse.
        let r = unsafe { (self.ctx_push_current)(ctx) };
        if r != 0 {
            return Err(format!("cuCtxPushCurrent failed with CUDA error {r}"));
        }
        let out = f();
        let mut popped: *mut c_void = std::ptr::null_mut();
        // SAFETY: a valid out-pointer; pops the context pushed above.
        unsafe { (self.ctx_pop_current)(&mut popped) };
        Ok(out)
    }

    /// Runs `f` with device `ordinal`'s primary context current on this thread (retained,
    /// pushed, then popped and released).
    pub fn with_primary_context<T>(
        &self,
        ordinal: i32,
        f: impl FnOnce(*mut c_void) -> T,
    ) -> Result<T, String> {
        let mut dev = 0;
        // SAFETY: a valid out-pointer.
        let r = unsafe { (self.device_get)(&mut dev, ordinal) };
        if r != 0 {
            return Err(format!("cuDeviceGet({ordinal}) failed with CUDA error {r}"));
        }
        let mut ctx: *mut c_void = std::ptr::null_mut();
        // SAFETY: a valid out-pointer and a device handle from cuDeviceGet.
        let r = unsafe { (self.primary_ctx_retain)(&mut ctx, dev) };
        if r != 0 || ctx.is_null() {
            return Err(format!(
                "cuDevicePrimaryCtxRetain({ordinal}) failed with CUDA error {r}"
            ));
        }
        // SAFETY: ctx is the retained primary context.
        let r = unsafe { (self.ctx_push_current)(ctx) };
        let out = if r == 0 {
            let out = f(ctx);
            let mut popped: *mut c_void = std::ptr::null_mut();
            // SAFETY: a valid out-pointer; pops the context pushed above.
            unsafe { (self.ctx_pop_current)(&mut popped) };
            Ok(out)
        } else {
            Err(format!("cuCtxPushCurrent failed with CUDA error {r}"))
        };
        // SAFETY: releases the retain above, on the same device.
        unsafe { (self.primary_ctx_release)(dev) };
        out
    }

    /// `cuDeviceGetAttribute(attr)` of device `ordinal`.
    pub fn attribute(&self, ordinal: i32, attr: c_int) -> Option<i32> {
        let mut dev = 0;
        // SAFETY: a valid out-pointer.
        if unsafe { (self.device_get)(&mut dev, ordinal) } != 0 {
            return None;
        }
        let mut v = 0;
        // SAFETY: a valid out-pointer.
        (unsafe { (self.device_get_attribute)(&mut v, attr, dev) } == 0).then_some(v)
    }
}

/// Allocates a CUPTI activity buffer: `bytes`, 8-byte aligned, never freed (the pool keeps it).
pub fn alloc_buffer(bytes: usize) -> *mut u8 {
    let layout = std::alloc::Layout::from_size_align(bytes.max(8), 8).expect("valid layout");
    // SAFETY: the layout has a non-zero size.
    unsafe { std::alloc::alloc(layout) }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn a_missing_library_is_an_error_not_a_panic() {
        let e = dlopen("libmetron-does-not-exist.so.9", false).unwrap_err();
        assert!(e.contains("libmetron-does-not-exist"), "{e}");
    }
}
