//! Collection: the per-context set-up through CUPTI's PC Sampling API (enable, stall reasons,
//! configuration), the launch path, the drains into the table, and the end of collection.

use super::*;

// ---------------------------------------------------------------------------------------------
// Runtime state (CUPTI).

pub(super) struct Context {
    pub(super) ctx: usize,
    /// The configuration buffer CUPTI fills at module loads and at disable (stable address).
    pub(super) config: Box<SamplingData>,
    pub(super) _config_pcs: Vec<PcData>,
    pub(super) _config_reasons: Vec<StallReason>,
    /// The GetData buffer.
    pub(super) drain: Box<SamplingData>,
    pub(super) _drain_pcs: Vec<PcData>,
    pub(super) _drain_reasons: Vec<StallReason>,
    /// The stall-reason indices handed to CUPTI in the configuration (kept, as CUPTI's sample
    /// keeps them, for the context's life).
    pub(super) _indices: Vec<u32>,
    pub(super) disabled: bool,
}

// SAFETY: the raw pointers inside point into the Vecs owned alongside; used under STATE's lock.
unsafe impl Send for Context {}

pub(super) struct State {
    pub(super) api: PcSamplingApi,
    pub(super) cupti: Cupti,
    pub(super) config: Config,
    pub(super) contexts: Vec<Context>,
    pub(super) reasons: Vec<(u32, String)>,
    pub(super) table: Table,
    pub(super) functions: Functions,
    pub(super) stats: Stats,
    /// Cubins by CRC (copied at module load).
    pub(super) cubins: HashMap<u64, Vec<u8>>,
    pub(super) errors: Vec<String>,
    pub(super) get_data_errors: u64,
    pub(super) too_many_contexts: bool,
    /// Time spent enabling and configuring contexts, ns (Metron's calls into CUPTI).
    pub(super) setup_ns: u64,
    /// Time spent draining (GetData, ingest, disable), ns.
    pub(super) drain_ns: u64,
}

pub(super) static STATE: Mutex<Option<State>> = Mutex::new(None);
pub(super) static ON: AtomicBool = AtomicBool::new(false);
pub(super) static SERIALIZED: AtomicBool = AtomicBool::new(false);
/// Configured contexts (for the launch path's lock-free check) and their configuration
/// buffers.
pub(super) static CTX_KEYS: [AtomicUsize; MAX_CONTEXTS] =
    [const { AtomicUsize::new(0) }; MAX_CONTEXTS];
pub(super) static CTX_BUFS: [AtomicPtr<SamplingData>; MAX_CONTEXTS] =
    [const { AtomicPtr::new(std::ptr::null_mut()) }; MAX_CONTEXTS];
/// Slots taken (under `STATE`'s lock).
pub(super) static NEXT_SLOT: AtomicUsize = AtomicUsize::new(0);
pub(super) static LAUNCHES: AtomicU64 = AtomicU64::new(0);
pub(super) static DRAINS: AtomicU64 = AtomicU64::new(0);
pub(super) static REFUSED: Mutex<Option<String>> = Mutex::new(None);
pub(super) static REPORT: OnceLock<Value> = OnceLock::new();

/// PC sampling is on (settings accepted, CUPTI functions found).
#[inline]
pub fn on() -> bool {
    ON.load(Ordering::Relaxed)
}

/// Launches this thread made while sampling was on.
pub fn thread_launches() -> u64 {
    crate::per_thread::THREAD
        .try_with(|t| t.pc_launches.get())
        .unwrap_or(0)
}

/// Reads the settings and prepares (no CUDA call): returns the resource callback ids to
/// subscribe when on. `Err` with what was wrong (kept for `metadata.json`).
pub fn configure(
    cupti: &Cupti,
    cupti_path: &str,
    counters_on: bool,
) -> Result<Option<Config>, String> {
    let cfg = parse_settings(
        std::env::var("METRON_GPU_PC_SAMPLING").ok().as_deref(),
        std::env::var("METRON_GPU_PC_SAMPLING_MODE").ok().as_deref(),
    );
    let refuse = |why: String| {
        *REFUSED.lock().unwrap_or_else(|e| e.into_inner()) = Some(why.clone());
        why
    };
    let cfg = match cfg {
        Ok(Some(c)) => c,
        Ok(None) => return Ok(None),
        Err(e) => return Err(refuse(e)),
    };
    if counters_on {
        return Err(refuse(
            "PC sampling is off: METRON_GPU_METRICS is set, and CUPTI's range profiler and PC sampling cannot share a context".into(),
        ));
    }
    let handle = crate::sys::dlopen(cupti_path, true)
        .or_else(|_| crate::sys::dlopen("libcupti.so.13", true))
        .map_err(|e| refuse(format!("PC sampling is off: libcupti not reachable ({e})")))?;
    let api =
        PcSamplingApi::load(handle).map_err(|e| refuse(format!("PC sampling is off: {e}")))?;
    *STATE.lock().unwrap_or_else(|e| e.into_inner()) = Some(State {
        api,
        cupti: *cupti,
        config: cfg,
        contexts: Vec::with_capacity(MAX_CONTEXTS),
        reasons: Vec::new(),
        table: Table::with_capacity(TABLE_PCS),
        functions: Functions::with_capacity(1024),
        stats: Stats::default(),
        cubins: HashMap::new(),
        errors: Vec::new(),
        get_data_errors: 0,
        too_many_contexts: false,
        setup_ns: 0,
        drain_ns: 0,
    });
    SERIALIZED.store(cfg.mode == Mode::Serialized, Ordering::Relaxed);
    ON.store(true, Ordering::Release);
    Ok(Some(cfg))
}

/// Registers the outputs (after `metron::init`, so the summary sink comes first); the
/// metadata section is registered either way, so a refusal is reported.
pub fn register() {
    if on() {
        metron::add_sink(Box::new(PcSink::default()));
    }
    let asked = std::env::var("METRON_GPU_PC_SAMPLING").is_ok_and(|v| !v.trim().is_empty());
    if on() || asked {
        metron::add_metadata_section("gpu_pc_sampling", metadata);
    }
}

/// The resource callbacks PC sampling needs.
pub fn resource_cbids() -> [(i32, u32); 4] {
    [
        (ps::DOMAIN_RESOURCE, ps::CBID_CONTEXT_CREATED),
        (ps::DOMAIN_RESOURCE, ps::CBID_CONTEXT_DESTROY_STARTING),
        (ps::DOMAIN_RESOURCE, ps::CBID_MODULE_LOADED),
        (ps::DOMAIN_RESOURCE, ps::CBID_MODULE_UNLOAD_STARTING),
    ]
}

pub(super) fn new_buffer(
    pcs: usize,
    reasons: usize,
) -> (Box<SamplingData>, Vec<PcData>, Vec<StallReason>) {
    let mut rs = vec![StallReason::default(); pcs * reasons];
    let mut pc: Vec<PcData> = (0..pcs)
        .map(|i| PcData {
            size: std::mem::size_of::<PcData>(),
            cubin_crc: 0,
            pc_offset: 0,
            function_index: 0,
            pad: 0,
            function_name: std::ptr::null_mut(),
            stall_reason_count: reasons,
            // SAFETY: i * reasons < rs.len(); the Vec is never resized (stable address).
            stall_reason: unsafe { rs.as_mut_ptr().add(i * reasons) },
            correlation_id: 0,
        })
        .collect();
    let data = Box::new(SamplingData {
        size: std::mem::size_of::<SamplingData>(),
        collect_num_pcs: pcs,
        total_samples: 0,
        dropped_samples: 0,
        total_num_pcs: 0,
        remaining_num_pcs: 0,
        range_id: 0,
        p_pc_data: pc.as_mut_ptr(),
        non_usr_kernels_total_samples: 0,
        hardware_buffer_full: 0,
    });
    (data, pc, rs)
}

/// Enables and configures sampling on `ctx` (once per context).
pub(super) fn setup_context(st: &mut State, ctx: *mut c_void) {
    if ctx.is_null() || slot_of(ctx).is_some() {
        return;
    }
    // The context takes a slot whether or not sampling starts on it, so the launch path never
    // tries it again.
    let slot = NEXT_SLOT.load(Ordering::Relaxed);
    if slot >= MAX_CONTEXTS {
        if !st.too_many_contexts {
            st.too_many_contexts = true;
            st.errors.push(format!(
                "more than {MAX_CONTEXTS} contexts: later ones are not sampled"
            ));
        }
        return;
    }
    NEXT_SLOT.store(slot + 1, Ordering::Relaxed);
    CTX_KEYS[slot].store(ctx as usize, Ordering::Release);
    let t0 = metron::clock::monotonic_ns();
    configure_context(st, ctx, slot);
    st.setup_ns += metron::clock::monotonic_ns().saturating_sub(t0);
}

/// [`setup_context`]'s CUPTI part for a context that took `slot`.
pub(super) fn configure_context(st: &mut State, ctx: *mut c_void, slot: usize) {
    let (api, cupti) = (st.api, st.cupti);
    if let Err(e) = api.ctx_call(&cupti, "cuptiPCSamplingEnable", api.enable, ctx) {
        st.errors.push(e);
        return;
    }
    let reasons = match api.stall_reason_names(&cupti, ctx) {
        Ok(r) => r,
        Err(e) => {
            st.errors.push(e);
            return;
        }
    };
    let n = reasons.len().max(1);
    let (mut config, config_pcs, config_reasons) = new_buffer(DRAIN_PCS, n);
    let (drain, drain_pcs, drain_reasons) = new_buffer(DRAIN_PCS, n);
    let mut indices: Vec<u32> = reasons.iter().map(|(i, _)| *i).collect();
    let mut attrs = vec![
        ConfigInfo {
            attribute_type: ps::attr::STALL_REASON,
            attribute_status: 0,
            data: [indices.len() as u64, indices.as_mut_ptr() as u64, 0],
        },
        ConfigInfo::word(ps::attr::SCRATCH_BUFFER_SIZE, SCRATCH_BYTES),
        ConfigInfo::word(
            ps::attr::COLLECTION_MODE,
            u64::from(match st.config.mode {
                Mode::Continuous => ps::mode::CONTINUOUS,
                Mode::Serialized => ps::mode::KERNEL_SERIALIZED,
            }),
        ),
        ConfigInfo::word(ps::attr::OUTPUT_DATA_FORMAT, 1),
        ConfigInfo::word(
            ps::attr::SAMPLING_DATA_BUFFER,
            (&mut *config as *mut SamplingData) as u64,
        ),
    ];
    if let Some(p) = st.config.period {
        attrs.push(ConfigInfo::word(ps::attr::SAMPLING_PERIOD, u64::from(p)));
    }
    let mut params = ps::ConfigInfoParams {
        size: ps::CONFIG_INFO_PARAMS_SIZE,
        p_priv: std::ptr::null_mut(),
        ctx,
        num_attributes: attrs.len(),
        info: attrs.as_mut_ptr(),
    };
    // SAFETY: params of the declared size; attrs, indices and the configuration buffer live
    // through the call (the buffer for the whole run: it is kept in `st.contexts`).
    let r = unsafe { (api.set_config)(&mut params) };
    if r != CUPTI_SUCCESS {
        let bad: Vec<String> = attrs
            .iter()
            .filter(|a| a.attribute_status != CUPTI_SUCCESS)
            .map(|a| {
                format!(
                    "attribute {}: {}",
                    a.attribute_type,
                    cupti.result_string(a.attribute_status)
                )
            })
            .collect();
        st.errors.push(format!(
            "cuptiPCSamplingSetConfigurationAttribute failed: {} {}",
            cupti.result_string(r),
            bad.join(", ")
        ));
        let _ = api.ctx_call(&cupti, "cuptiPCSamplingDisable", api.disable, ctx);
        return;
    }
    if st.reasons.is_empty() {
        st.reasons = reasons;
    }
    CTX_BUFS[slot].store(&mut *config as *mut SamplingData, Ordering::Release);
    st.contexts.push(Context {
        ctx: ctx as usize,
        config,
        _config_pcs: config_pcs,
        _config_reasons: config_reasons,
        drain,
        _drain_pcs: drain_pcs,
        _drain_reasons: drain_reasons,
        _indices: indices,
        disabled: false,
    });
}

/// Reads what CUPTI holds for context `i` (GetData until empty) and the configuration
/// buffer; with `disable`, disables sampling on it first-then-last (CUPTI flushes the rest into
/// the configuration buffer).
pub(super) fn drain_context(st: &mut State, i: usize, disable: bool) {
    if st.contexts[i].disabled {
        return;
    }
    let t0 = metron::clock::monotonic_ns();
    drain_context_inner(st, i, disable);
    st.drain_ns += metron::clock::monotonic_ns().saturating_sub(t0);
}

pub(super) fn drain_context_inner(st: &mut State, i: usize, disable: bool) {
    let State {
        api,
        cupti,
        contexts,
        table,
        functions,
        stats,
        errors,
        get_data_errors,
        ..
    } = st;
    let c = &mut contexts[i];
    if c.disabled {
        return;
    }
    DRAINS.fetch_add(1, Ordering::Relaxed);
    let ctx = c.ctx as *mut c_void;
    // The configuration buffer first (filled at module loads).
    take_config(c, table, functions, stats);
    for _ in 0..10_000 {
        c.drain.total_num_pcs = 0;
        c.drain.remaining_num_pcs = 0;
        let mut p = ps::GetDataParams {
            size: ps::GET_DATA_PARAMS_SIZE,
            p_priv: std::ptr::null_mut(),
            ctx,
            data: (&mut *c.drain as *mut SamplingData).cast(),
        };
        // SAFETY: params of the declared size; the drain buffer was built for DRAIN_PCS
        // records with room for every configured reason, and lives in `c`.
        let r = unsafe { (api.get_data)(&mut p) };
        if r != CUPTI_SUCCESS {
            *get_data_errors += 1;
            stats.hardware_buffer_full |= c.drain.hardware_buffer_full != 0;
            if errors.len() < 8 {
                errors.push(format!(
                    "cuptiPCSamplingGetData failed: {}",
                    cupti.result_string(r)
                ));
            }
            break;
        }
        // SAFETY: CUPTI filled the buffer as the layout says.
        unsafe { ingest(&c.drain, table, functions, stats) };
        if c.drain.total_num_pcs == 0 && c.drain.remaining_num_pcs == 0 {
            break;
        }
    }
    if disable {
        c.disabled = true;
        if let Err(e) = api.ctx_call(cupti, "cuptiPCSamplingDisable", api.disable, ctx) {
            errors.push(e);
        }
        take_config(c, table, functions, stats);
    }
}

pub(super) fn take_config(
    c: &mut Context,
    table: &mut Table,
    functions: &mut Functions,
    stats: &mut Stats,
) {
    if c.config.total_num_pcs > 0 {
        // SAFETY: CUPTI filled the configuration buffer as the layout says.
        unsafe { ingest(&c.config, table, functions, stats) };
        c.config.total_num_pcs = 0;
        c.config.total_samples = 0;
        c.config.dropped_samples = 0;
        c.config.non_usr_kernels_total_samples = 0;
    }
}

pub(super) fn with_state(f: impl FnOnce(&mut State)) {
    let mut g = STATE.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(st) = g.as_mut() {
        f(st);
    }
}

/// Resource callbacks (contexts, modules): called from the backend's subscriber.
///
/// # Safety
/// `data` must be the `CUpti_ResourceData` CUPTI passed for the resource domain.
pub unsafe fn on_resource(cbid: u32, data: *const c_void) {
    if !on() || data.is_null() {
        return;
    }
    // SAFETY: resource-domain callback data (caller).
    let rd = unsafe { &*data.cast::<ps::ResourceData>() };
    match cbid {
        ps::CBID_CONTEXT_CREATED => with_state(|st| setup_context(st, rd.context)),
        ps::CBID_CONTEXT_DESTROY_STARTING => with_state(|st| {
            // A later context at the same address is a new one: it takes a new slot.
            if let Some(slot) = slot_of(rd.context) {
                CTX_BUFS[slot].store(std::ptr::null_mut(), Ordering::Release);
                CTX_KEYS[slot].store(usize::MAX, Ordering::Release);
            }
            if let Some(i) = st
                .contexts
                .iter()
                .position(|c| c.ctx == rd.context as usize && !c.disabled)
            {
                drain_context(st, i, true);
            }
        }),
        ps::CBID_MODULE_LOADED | ps::CBID_MODULE_UNLOAD_STARTING => {
            let m = rd.resource_descriptor.cast::<ps::ModuleResourceData>();
            with_state(|st| {
                if cbid == ps::CBID_MODULE_LOADED && !m.is_null() {
                    // SAFETY: for module callbacks the descriptor is a CUpti_ModuleResourceData
                    // whose cubin is valid during the callback; copied.
                    let cubin = unsafe {
                        let m = &*m;
                        if m.cubin.is_null() || m.cubin_size == 0 {
                            None
                        } else {
                            Some(
                                std::slice::from_raw_parts(m.cubin.cast::<u8>(), m.cubin_size)
                                    .to_vec(),
                            )
                        }
                    };
                    if let Some(cubin) = cubin {
                        if let Some(crc) = st.api.crc(&cubin) {
                            st.cubins.entry(crc).or_insert(cubin);
                        }
                    }
                }
                // CUPTI flushes the records of earlier modules into the configuration buffer.
                if let Some(i) = st
                    .contexts
                    .iter()
                    .position(|c| c.ctx == rd.context as usize && !c.disabled)
                {
                    let State {
                        contexts,
                        table,
                        functions,
                        stats,
                        ..
                    } = st;
                    take_config(&mut contexts[i], table, functions, stats);
                }
            });
        }
        _ => {}
    }
}

/// A launch's enter on the application thread: sets up a context Metron has not seen (Metron
/// started after it was created), counts the launch.
#[inline]
pub fn before_launch(ctx: *mut c_void) {
    if !on() {
        return;
    }
    let _ = crate::per_thread::THREAD.try_with(|t| t.pc_launches.set(t.pc_launches.get() + 1));
    LAUNCHES.fetch_add(1, Ordering::Relaxed);
    if slot_of(ctx).is_none() {
        with_state(|st| setup_context(st, ctx));
    }
}

/// The slot a context took (`None` for null or a context not seen yet).
pub(super) fn slot_of(ctx: *mut c_void) -> Option<usize> {
    if ctx.is_null() {
        return None;
    }
    (0..MAX_CONTEXTS).find(|&i| CTX_KEYS[i].load(Ordering::Acquire) == ctx as usize)
}

/// A launch's exit: drains when CUPTI holds half a buffer of PCs (continuous) or after each
/// launch (serialized).
#[inline]
pub fn after_launch(ctx: *mut c_void) {
    if !on() {
        return;
    }
    let Some(slot) = slot_of(ctx) else { return };
    let serialized = SERIALIZED.load(Ordering::Relaxed);
    let buf = CTX_BUFS[slot].load(Ordering::Acquire);
    if buf.is_null() {
        return; // sampling did not start on this context
    }
    // SAFETY: a non-null configuration buffer lives for the run; CUPTI updates this count, a
    // racy read of a word is enough to decide whether to drain.
    let remaining =
        unsafe { std::ptr::read_volatile(std::ptr::addr_of!((*buf).remaining_num_pcs)) };
    if serialized || remaining >= DRAIN_PCS / 2 {
        with_state(|st| {
            if let Some(i) = st
                .contexts
                .iter()
                .position(|c| c.ctx == ctx as usize && !c.disabled)
            {
                drain_context(st, i, false);
            }
        });
    }
}

/// The end of the run (the backend's flush): drains and disables every context.
pub fn finish_collection() {
    if !on() {
        return;
    }
    with_state(|st| {
        for i in 0..st.contexts.len() {
            drain_context(st, i, true);
        }
    });
}

/// The source line of a PC through the captured cubin (CUPTI's SASS-to-source correlation),
/// with its inlined-at chain from the cubin's line table (`metron_symbols::cubin`, parsed once
/// per cubin into `chains`) when that table gives the PC the same line.
pub(super) fn source_of(
    st: &State,
    chains: &mut HashMap<u64, Option<CubinLines>>,
    crc: u64,
    function: &CString,
    pc: u64,
) -> Option<Source> {
    let cubin = st.cubins.get(&crc)?;
    let (dir, file, line) = st.api.source_line(cubin, function, pc)?;
    let path = if dir.is_empty() || file.starts_with('/') {
        file
    } else {
        format!("{}/{file}", dir.trim_end_matches('/'))
    };
    let lines = chains
        .entry(crc)
        .or_insert_with(|| CubinLines::parse(cubin).ok());
    let chain = lines
        .as_ref()
        .map(|l| l.chain(&function.to_string_lossy(), pc))
        .unwrap_or_default();
    let inlined_at = match chain.split_first() {
        Some(((_, l), rest)) if *l == line => rest.to_vec(),
        _ => Vec::new(),
    };
    Some((path, line, inlined_at))
}
