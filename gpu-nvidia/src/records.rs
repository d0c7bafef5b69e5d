//! Activity records: the pool of buffers CUPTI fills (preallocated at start, 8 ×
//! `METRON_GPU_ACTIVITY_BUFFER`), the completion callback that decodes them on CUPTI's own
//! thread (kernels, copies, sets with graph ids, on `CLOCK_MONOTONIC`) and hands them to
//! [`metron::gpu::submit`], never on an application thread; the API calls recorded by the
//! callback hub, drained into records; and the flush.

use super::*;

/// Copies the fields that place a device-side record (kernel, memcpy, memset: CUPTI's structs
/// of each kind name them alike) into a `GpuRecord`: device, context, stream, the launch's
/// correlation id and its graph and graph node.
macro_rules! placed_on_stream {
    ($r:ident, $rec:ident) => {
        $r.device = $rec.device_id;
        $r.context = $rec.context_id;
        $r.stream = $rec.stream_id;
        $r.correlation = $rec.correlation_id;
        $r.graph_id = $rec.graph_id;
        $r.graph_node = $rec.graph_node_id;
    };
}

/// Ticks on Metron's timeline (the start calibration: host spans of profiled launches and
/// kernels of counted regions; API calls use the refined one when drained).
#[inline]
pub(crate) fn tick_ns(ticks: u64) -> u64 {
    if ticks == 0 {
        return 0;
    }
    metron::clock::calibration().to_monotonic_ns(ticks)
}

pub(crate) extern "C" fn buffer_requested(
    buffer: *mut *mut u8,
    size: *mut usize,
    max_records: *mut usize,
) {
    let bytes = BUFFER_BYTES.load(Ordering::Relaxed) as usize;
    let free = POOL.lock().unwrap_or_else(|e| e.into_inner()).pop();
    let (p, n) = match free {
        Some(p) => (p as *mut u8, bytes),
        None if BUFFERS_ALLOCATED.load(Ordering::Relaxed) < MAX_BUFFERS => {
            BUFFERS_ALLOCATED.fetch_add(1, Ordering::Relaxed);
            (sys::alloc_buffer(bytes), bytes)
        }
        None => {
            BUFFERS_REFUSED.fetch_add(1, Ordering::Relaxed);
            (std::ptr::null_mut(), 0)
        }
    };
    // SAFETY: CUPTI passes three valid out-pointers.
    unsafe {
        *buffer = p;
        *size = n;
        *max_records = 0;
    }
}

/// Decoding state: names already seen.
#[derive(Default)]
pub(crate) struct Names {
    kernels: HashMap<String, Arc<str>>,
    apis: HashMap<(i32, u32), Arc<str>>,
    copies: HashMap<u8, Arc<str>>,
}

pub(crate) static NAMES: Mutex<Option<Names>> = Mutex::new(None);

/// `cudaLaunchKernel_v7000` → `cudaLaunchKernel`.
pub(crate) fn api_name(raw: &str) -> String {
    if let Some(at) = raw.rfind("_v") {
        if raw[at + 2..].chars().all(|c| c.is_ascii_digit()) && at + 2 < raw.len() {
            return raw[..at].to_string();
        }
    }
    raw.to_string()
}

pub(crate) fn copy_kind(k: u8) -> &'static str {
    match k {
        1 => "HtoD",
        2 => "DtoH",
        3 => "HtoA",
        4 => "AtoH",
        5 => "AtoA",
        6 => "AtoD",
        7 => "DtoA",
        8 => "DtoD",
        9 => "HtoH",
        10 => "PtoP",
        _ => "unknown",
    }
}

pub(crate) extern "C" fn buffer_completed(
    ctx: *mut c_void,
    stream: u32,
    buffer: *mut u8,
    _size: usize,
    valid: usize,
) {
    let Some(loaded) = LOADED.get() else { return };
    let cupti = &loaded.cupti;
    let mut records = Vec::new();
    if !buffer.is_null() && valid > 0 {
        let mut names = NAMES.lock().unwrap_or_else(|e| e.into_inner());
        let names = names.get_or_insert_with(Names::default);
        // SAFETY: CUPTI completed this buffer with `valid` bytes of records.
        unsafe {
            cupti.each_record(buffer, valid, |p| {
                // SAFETY: p points at a record; its kind selects the layout read.
                if let Some(r) = decode(loaded, names, p) {
                    records.push(r);
                }
            })
        };
    }
    let dropped = cupti.dropped(ctx, stream);
    CUPTI_DROPPED.fetch_add(dropped as u64, Ordering::Relaxed);
    if !buffer.is_null() {
        POOL.lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(buffer as usize);
    }
    region_kernels::fill_graph_spans(&mut records);
    for r in &records {
        let i = match r.kind {
            GpuKind::Kernel => 0,
            GpuKind::Memcpy => 1,
            GpuKind::Memset => 2,
            GpuKind::RuntimeApi => 3,
            // CUPTI never produces HSA records.
            GpuKind::DriverApi | GpuKind::HsaApi | GpuKind::HipApi => 4,
            GpuKind::Sync => 5,
            GpuKind::EventRecord => 6,
            GpuKind::Counter => continue,
        };
        COUNTS[i].fetch_add(1, Ordering::Relaxed);
    }
    metron::gpu::submit(&records);
    drain_api(loaded);
}

/// One record as a [`GpuRecord`] (`None` for kinds Metron does not read).
///
/// # Safety
/// `p` must point at a CUPTI 13 activity record.
pub(crate) unsafe fn decode(loaded: &Loaded, names: &mut Names, p: *const u8) -> Option<GpuRecord> {
    // SAFETY: p points at a record (caller).
    let kind = unsafe { sys::record_kind(p) };
    match kind {
        sys::kind::CONCURRENT_KERNEL | sys::kind::KERNEL => {
            // SAFETY: the kind says CUpti_ActivityKernel10.
            let k: sys::ActivityKernel = unsafe { sys::read_record(p) };
            // SAFETY: the name is CUPTI's NUL-terminated string, valid during the callback.
            let raw = unsafe { sys::c_str(k.name) };
            if raw == sys::WARM_UP_KERNEL {
                // Metron's own warm-up launch at context creation.
                WARM_UP_KERNELS.fetch_add(1, Ordering::Relaxed);
                return None;
            }
            if is_cupti_internal(&raw) {
                // CUPTI's own kernel (user replay launches one after each user range): not
                // the application's work.
                CUPTI_INTERNAL.fetch_add(1, Ordering::Relaxed);
                let mut seen = INTERNAL_NAMES.lock().unwrap_or_else(|e| e.into_inner());
                if seen.len() < 4 && !seen.contains(&raw) {
                    seen.push(raw);
                }
                return None;
            }
            let name = names
                .kernels
                .entry(raw)
                .or_insert_with_key(|raw| metron::gpu::demangle_kernel(raw).into())
                .clone();
            let mut r = GpuRecord::new(GpuKind::Kernel, name);
            r.start_ns = k.start;
            r.end_ns = k.end;
            if k.start == 0 {
                // Kernel replay (GPU counters) zeroes the device timestamps: the launch's host
                // span stands in (counted in metadata.json).
                if let Some((s, e)) = range_profiler::host_span(k.correlation_id) {
                    r.start_ns = s;
                    r.end_ns = e;
                }
            }
            placed_on_stream!(r, k);
            r.grid = k.grid;
            r.block = k.block;
            r.registers = k.registers_per_thread;
            r.static_shared = k.static_shared_memory;
            r.dynamic_shared = k.dynamic_shared_memory as i32;
            r.local_per_thread = k.local_memory_per_thread;
            let limits =
                device_info().and_then(|d| d.limits.get(k.device_id as usize).copied().flatten());
            r.occupancy = limits.and_then(|l| {
                occupancy(
                    &l,
                    i64::from(k.block[0]) * i64::from(k.block[1]) * i64::from(k.block[2]),
                    k.registers_per_thread,
                    i64::from(k.static_shared_memory) + i64::from(k.dynamic_shared_memory),
                )
            });
            Some(r)
        }
        sys::kind::MEMCPY => {
            // SAFETY: the kind says CUpti_ActivityMemcpy6.
            let m: sys::ActivityMemcpy = unsafe { sys::read_record(p) };
            let name = names
                .copies
                .entry(m.copy_kind)
                .or_insert_with(|| copy_kind(m.copy_kind).into())
                .clone();
            let mut r = GpuRecord::new(GpuKind::Memcpy, name);
            r.start_ns = m.start;
            r.end_ns = m.end;
            placed_on_stream!(r, m);
            r.bytes = m.bytes;
            Some(r)
        }
        sys::kind::MEMSET => {
            // SAFETY: the kind says CUpti_ActivityMemset4.
            let m: sys::ActivityMemset = unsafe { sys::read_record(p) };
            let mut r = GpuRecord::new(GpuKind::Memset, "Memset".into());
            r.start_ns = m.start;
            r.end_ns = m.end;
            placed_on_stream!(r, m);
            r.bytes = m.bytes;
            Some(r)
        }
        sys::kind::SYNCHRONIZATION => {
            // SAFETY: the kind says CUpti_ActivitySynchronization2.
            let y: sys::ActivitySynchronization = unsafe { sys::read_record(p) };
            let name = sync_name(y.sync_type)?;
            let mut r = GpuRecord::new(GpuKind::Sync, name.into());
            r.start_ns = y.start;
            r.end_ns = y.end;
            r.context = y.context_id;
            r.correlation = y.correlation_id;
            r.stream = y.stream_id;
            r.status = y.return_value;
            if y.event_id != sys::SYNC_INVALID && y.sync_id != u64::from(sys::SYNC_INVALID) {
                r.event_record = y.sync_id;
            }
            Some(r)
        }
        sys::kind::CUDA_EVENT => {
            // SAFETY: the kind says CUpti_ActivityCudaEvent2.
            let v: sys::ActivityCudaEvent = unsafe { sys::read_record(p) };
            if v.device_timestamp == 0 {
                COUNTS[7].fetch_add(1, Ordering::Relaxed);
                return None;
            }
            let mut r = GpuRecord::new(GpuKind::EventRecord, "Event record".into());
            r.start_ns = v.device_timestamp;
            r.end_ns = v.device_timestamp;
            r.device = v.device_id;
            r.context = v.context_id;
            r.correlation = v.correlation_id;
            r.stream = v.stream_id;
            r.event_record = v.sync_id;
            Some(r)
        }
        sys::kind::RUNTIME | sys::kind::DRIVER => {
            // SAFETY: the kind says CUpti_ActivityAPI.
            let a: sys::ActivityApi = unsafe { sys::read_record(p) };
            let domain = if kind == sys::kind::RUNTIME {
                sys::DOMAIN_RUNTIME
            } else {
                sys::DOMAIN_DRIVER
            };
            let name = names
                .apis
                .entry((domain, a.cbid))
                .or_insert_with(|| {
                    loaded
                        .cupti
                        .callback_name(domain, a.cbid)
                        .map_or_else(|| format!("cbid {}", a.cbid), |n| api_name(&n))
                        .into()
                })
                .clone();
            let gk = if kind == sys::kind::RUNTIME {
                GpuKind::RuntimeApi
            } else {
                GpuKind::DriverApi
            };
            let mut r = GpuRecord::new(gk, name);
            r.start_ns = a.start;
            r.end_ns = a.end;
            r.tid = a.thread_id;
            r.correlation = a.correlation_id;
            r.status = a.return_value;
            Some(r)
        }
        _ => None,
    }
}

/// The slice name of a synchronization record of type `t` (`None` for a type Metron does not
/// know: left out rather than guessed).
pub(crate) fn sync_name(t: u32) -> Option<&'static str> {
    Some(match t {
        sys::sync_type::EVENT_SYNCHRONIZE => "Event synchronize",
        sys::sync_type::STREAM_WAIT_EVENT => "Stream wait event",
        sys::sync_type::STREAM_SYNCHRONIZE => "Stream synchronize",
        sys::sync_type::CONTEXT_SYNCHRONIZE => "Context synchronize",
        _ => return None,
    })
}

/// The API calls recorded since the last drain, as records for the sinks (CUPTI's completion
/// thread or the flush: never an application thread).
pub(crate) fn drain_api(loaded: &Loaded) {
    let mut records = Vec::new();
    // The calls carry TSC ticks: converted with the start calibration's rate re-measured up to
    // now, as the runtime converts region ticks (same reference point).
    let cal = metron::clock::calibration().refined();
    {
        let mut names = NAMES.lock().unwrap_or_else(|e| e.into_inner());
        let names = names.get_or_insert_with(Names::default);
        api_log::drain(|c| {
            let name = names
                .apis
                .entry((c.domain, c.cbid))
                .or_insert_with(|| {
                    loaded
                        .cupti
                        .callback_name(c.domain, c.cbid)
                        .map_or_else(|| format!("cbid {}", c.cbid), |n| api_name(&n))
                        .into()
                })
                .clone();
            let kind = if c.domain == sys::DOMAIN_RUNTIME {
                GpuKind::RuntimeApi
            } else {
                GpuKind::DriverApi
            };
            let mut r = GpuRecord::new(kind, name);
            r.start_ns = cal.to_monotonic_ns(c.start);
            r.end_ns = cal.to_monotonic_ns(c.end);
            r.tid = c.tid;
            r.correlation = c.correlation;
            r.status = c.status;
            records.push(r);
        });
    }
    for r in &records {
        COUNTS[if r.kind == GpuKind::RuntimeApi { 3 } else { 4 }].fetch_add(1, Ordering::Relaxed);
    }
    metron::gpu::submit(&records);
}

/// Kernels CUPTI itself launches while a user range is open (seen on the H100 as `WaitNs`
/// after each range; gpu-machine notes §3), told apart by name. User ranges are open in region
/// mode and, with a single-pass metric set, around every launch in kernel mode.
pub(crate) fn is_cupti_internal(raw: &str) -> bool {
    range_profiler::active() && raw.contains("WaitNs")
}

pub(crate) static CUPTI_INTERNAL: AtomicU64 = AtomicU64::new(0);
/// Records of Metron's warm-up kernel left out of the run's kernels.
pub(crate) static WARM_UP_KERNELS: AtomicU64 = AtomicU64::new(0);
pub(crate) static INTERNAL_NAMES: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// Flushes CUPTI's buffers through the completion callback, and Metron's API-call buffers.
pub(crate) fn flush(at_end: bool) {
    let Some(loaded) = LOADED.get() else { return };
    if at_end {
        pc_sampling::finish_collection();
        pm_sampling::finish();
    }
    crate::range_profiler::flush_regions(at_end);
    region_kernels::resolve(at_end);
    let _ = loaded.cupti.flush(at_end);
    drain_api(loaded);
    if at_end && device_info().is_none_or(|d| d.devices.is_empty()) {
        // No launch read them (copies only?): the driver may still answer.
        read_device_info();
    }
}
