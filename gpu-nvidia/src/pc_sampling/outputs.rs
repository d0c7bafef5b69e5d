//! The end of the run: the sink that joins the collected samples with the kernel records and
//! hands the rows to the writers (`metron::sinks::gpu_pc_samples`), the replay of recorded
//! buffers without a GPU, `metadata.json`'s section, and the CUPTI look-ups tools use
//! (cubin CRC, source line, stall reasons).

use super::*;

/// Collects kernel records for the join and writes the outputs at the end.
#[derive(Default)]
pub(super) struct PcSink {
    /// The kernel records of the run.
    pub(super) kernels: Vec<metron::gpu::GpuRecord>,
    /// Recorded CUPTI records to use instead of CUPTI's ([`replay`]).
    pub(super) replay: Option<Replay>,
}

/// What [`replay`] decoded: the table CUPTI's buffers would have filled.
pub(super) struct Replay {
    pub(super) mode: Mode,
    pub(super) reasons: Vec<(u32, String)>,
    pub(super) table: Table,
    pub(super) functions: Functions,
    pub(super) lines: HashMap<(String, u64), (String, u32)>,
}

/// One PC record as CUPTI hands it over (`CUpti_PCSamplingPCData`), for [`replay`].
#[derive(Clone, Debug, PartialEq)]
pub struct RecordedPc {
    /// The cubin's CRC.
    pub crc: u64,
    /// Function (mangled).
    pub function: String,
    /// Function index in the cubin.
    pub function_index: u32,
    /// PC offset in the function.
    pub pc_offset: u64,
    /// Correlation id (0 in continuous mode).
    pub correlation: u32,
    /// (stall reason index, samples).
    pub stalls: Vec<(u32, u32)>,
}

/// One CUPTI buffer (`CUpti_PCSamplingData`) as recorded, for [`replay`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RecordedBuffer {
    /// `totalSamples`.
    pub total_samples: u64,
    /// `droppedSamples`.
    pub dropped_samples: u64,
    /// The PC records.
    pub pcs: Vec<RecordedPc>,
}

/// Lays `buffer` out as CUPTI fills a `CUpti_PCSamplingData` and decodes it with [`ingest`].
pub fn ingest_recorded(
    buffer: &RecordedBuffer,
    table: &mut Table,
    functions: &mut Functions,
    stats: &mut Stats,
) {
    let names: Vec<CString> = buffer
        .pcs
        .iter()
        .map(|p| CString::new(p.function.as_str()).unwrap_or_default())
        .collect();
    let mut stalls: Vec<Vec<StallReason>> = buffer
        .pcs
        .iter()
        .map(|p| {
            p.stalls
                .iter()
                .map(|&(index, samples)| StallReason { index, samples })
                .collect()
        })
        .collect();
    let mut pcs: Vec<PcData> = buffer
        .pcs
        .iter()
        .zip(stalls.iter_mut())
        .zip(&names)
        .map(|((p, st), name)| PcData {
            size: std::mem::size_of::<PcData>(),
            cubin_crc: p.crc,
            pc_offset: p.pc_offset,
            function_index: p.function_index,
            pad: 0,
            function_name: name.as_ptr().cast_mut(),
            stall_reason_count: st.len(),
            stall_reason: st.as_mut_ptr(),
            correlation_id: p.correlation,
        })
        .collect();
    let data = SamplingData {
        size: std::mem::size_of::<SamplingData>(),
        collect_num_pcs: pcs.len(),
        total_samples: buffer.total_samples,
        dropped_samples: buffer.dropped_samples,
        total_num_pcs: pcs.len(),
        remaining_num_pcs: 0,
        range_id: 0,
        p_pc_data: pcs.as_mut_ptr(),
        non_usr_kernels_total_samples: 0,
        hardware_buffer_full: 0,
    };
    // SAFETY: `data` points at `pcs`, each with its `stalls` and a NUL-terminated name in
    // `names`, all alive through the call.
    unsafe { ingest(&data, table, functions, stats) };
}

/// Registers PC sampling's end-of-run outputs (files, summary sections, trace notes) fed by
/// recorded CUPTI buffers instead of a GPU, decoded as Metron decodes CUPTI's ([`ingest`]);
/// `reasons` are CUPTI's (index, name); `lines` maps (function, PC offset) to (file, line).
/// For testing the outputs without a GPU: call it after `metron::init` (the summary sink
/// comes first). Does nothing when PC sampling is on for real.
pub fn replay(
    mode: Mode,
    reasons: Vec<(u32, String)>,
    buffers: &[RecordedBuffer],
    lines: HashMap<(String, u64), (String, u32)>,
) {
    if on() {
        return;
    }
    let mut table = Table::with_capacity(TABLE_PCS);
    let mut functions = Functions::default();
    let mut stats = Stats::default();
    for buffer in buffers {
        ingest_recorded(buffer, &mut table, &mut functions, &mut stats);
    }
    metron::add_sink(Box::new(PcSink {
        kernels: Vec::new(),
        replay: Some(Replay {
            mode,
            reasons,
            table,
            functions,
            lines,
        }),
    }));
}

/// What the end of the run joins.
pub(super) struct Collected<'a> {
    mode: Mode,
    reasons: &'a [(u32, String)],
    table: &'a Table,
    functions: &'a Functions,
}

/// Joins, writes the files and summary sections, hands the trace its notes and keeps the
/// `attribution` report for `metadata.json`.
pub(super) fn finish_outputs(
    run: &metron::RunInfo,
    kernels: &[metron::gpu::GpuRecord],
    c: Collected<'_>,
    source: &mut SourceOf<'_>,
) -> std::io::Result<Vec<PathBuf>> {
    let launches: Vec<Launch> = kernels
        .iter()
        .map(|k| Launch {
            kernel: k.name.to_string(),
            correlation: k.correlation,
            region: metron::gpu::region_of(k.correlation)
                .map_or("(no region)", |(r, _)| r)
                .to_string(),
            duration_ns: k.duration_ns(),
        })
        .collect();
    let mut no_lines: Vec<String> = Vec::new();
    let rows = {
        let mut src = |crc: u64, f: &CString, pc: u64| {
            let r = source(crc, f, pc);
            if r.is_none() {
                let n = f.to_string_lossy().into_owned();
                if !no_lines.contains(&n) {
                    no_lines.push(n);
                }
            }
            r
        };
        attribute(c.table, c.functions, c.reasons, &launches, &mut src)
    };
    let files = write_outputs(&run.output_dir, c.mode, &rows, no_lines.len())?;
    let notes = notes(&rows, kernels);
    let note_count = notes.len();
    metron::gpu::add_notes(notes);
    let note = no_line_note(no_lines.len());
    let attributed: u64 = rows.iter().map(|r| r.samples).sum();
    let _ = REPORT.set(json!({
        "samples_attributed": attributed,
        "rows": rows.len(),
        "functions_without_line_info": no_lines,
        "line_info_note": note,
        "kernel_launches_joined": launches.len(),
        "trace_notes": note_count,
    }));
    Ok(files)
}

impl metron::Sink for PcSink {
    fn name(&self) -> &str {
        "gpu_pc_sampling"
    }

    fn events(&mut self, _thread: &metron::ThreadInfo, _events: &[metron::Event<'_>]) {}

    fn gpu_records(&mut self, records: &[metron::gpu::GpuRecord]) {
        self.kernels.extend(
            records
                .iter()
                .filter(|r| r.kind == metron::gpu::GpuKind::Kernel)
                .cloned(),
        );
    }

    fn finish(&mut self, run: &metron::RunInfo) -> std::io::Result<Vec<PathBuf>> {
        if let Some(r) = &self.replay {
            let c = Collected {
                mode: r.mode,
                reasons: &r.reasons,
                table: &r.table,
                functions: &r.functions,
            };
            let mut src = |_crc: u64, f: &CString, pc: u64| {
                r.lines
                    .get(&(f.to_string_lossy().into_owned(), pc))
                    .map(|(file, line)| (file.clone(), *line, Vec::new()))
            };
            return finish_outputs(run, &self.kernels, c, &mut src);
        }
        finish_collection();
        let g = STATE.lock().unwrap_or_else(|e| e.into_inner());
        let Some(st) = g.as_ref() else {
            return Ok(Vec::new());
        };
        let c = Collected {
            mode: st.config.mode,
            reasons: &st.reasons,
            table: &st.table,
            functions: &st.functions,
        };
        let mut chains = HashMap::new();
        let mut src = |crc: u64, f: &CString, pc: u64| source_of(st, &mut chains, crc, f, pc);
        finish_outputs(run, &self.kernels, c, &mut src)
    }
}

/// Writes `pc_samples.csv` and `gpu_stalls.folded` into `dir` and adds the breakdowns to the
/// summary files there (`metron::sinks::gpu_pc_samples::write_outputs`); `no_lines`: functions
/// without line information. Returns the files written.
pub fn write_outputs(
    dir: &std::path::Path,
    mode: Mode,
    rows: &[Row],
    no_lines: usize,
) -> std::io::Result<Vec<PathBuf>> {
    metron::sinks::gpu_pc_samples::write_outputs(dir, mode.as_str(), rows, no_lines)
}

/// The `gpu_pc_sampling` section of `metadata.json`.
pub fn metadata() -> Value {
    let refused = REFUSED.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let g = STATE.lock().unwrap_or_else(|e| e.into_inner());
    let Some(st) = g.as_ref() else {
        return json!({"enabled": false, "reason": refused});
    };
    let mut v = json!({
        "enabled": true,
        "mode": st.config.mode.as_str(),
        "period_exponent": st.config.period,
        "period": st.config.period.map_or_else(|| "CUPTI default".to_string(), |p| format!("2^{p} cycles")),
        "contexts": st.contexts.len(),
        "cubins": st.cubins.len(),
        "stall_reasons": st.reasons.iter().map(|(i, n)| json!([i, n])).collect::<Vec<_>>(),
        "cupti_total_samples": st.stats.total_samples,
        "cupti_dropped_samples": st.stats.dropped_samples,
        "cupti_non_user_kernel_samples": st.stats.non_user_samples,
        "hardware_buffer_full": st.stats.hardware_buffer_full,
        "pc_records": st.stats.records,
        "buffers": st.stats.buffers,
        "drains": DRAINS.load(Ordering::Relaxed),
        "launches": LAUNCHES.load(Ordering::Relaxed),
        "distinct_pcs": st.table.len(),
        "table_capacity": TABLE_PCS,
        "samples_lost_table_full": st.table.lost_samples,
        "samples_unknown_reason": st.table.unknown_reason_samples,
        "get_data_errors": st.get_data_errors,
        "host_ns": {"context_setup": st.setup_ns, "drains": st.drain_ns},
        "errors": st.errors,
    });
    if let Some(r) = REPORT.get() {
        v["attribution"] = r.clone();
    }
    v
}

pub(super) fn api_at(cupti_path: &str) -> Result<PcSamplingApi, String> {
    let handle = crate::sys::dlopen(cupti_path, false)?;
    PcSamplingApi::load(handle)
}

/// CUPTI's CRC of a cubin (`cuptiGetCubinCrc`), through the libcupti at `cupti_path`; needs no
/// GPU or driver.
pub fn cubin_crc(cupti_path: &str, cubin: &[u8]) -> Result<u64, String> {
    api_at(cupti_path)?
        .crc(cubin)
        .ok_or_else(|| "cuptiGetCubinCrc failed".to_string())
}

/// The CUDA source `(dir, file, line)` of the SASS instruction at `pc_offset` in `function`
/// (mangled) of `cubin`, as Metron resolves sampled PCs (`cuptiGetSassToSourceCorrelation`),
/// through the libcupti at `cupti_path`; `Ok(None)` without line information. Needs no GPU.
pub fn cubin_source_line(
    cupti_path: &str,
    cubin: &[u8],
    function: &str,
    pc_offset: u64,
) -> Result<Option<(String, String, u32)>, String> {
    let api = api_at(cupti_path)?;
    let f = CString::new(function).map_err(|_| format!("{function}: NUL in name"))?;
    Ok(api.source_line(cubin, &f, pc_offset))
}

/// The PC-sampling stall reasons of GPU `device` (CUPTI's names, by index), read on its primary
/// context (enable, list, disable); `Err` with the reason when there is no driver, GPU or CUPTI.
pub fn stall_reasons(device: u32) -> Result<Vec<(u32, String)>, String> {
    let (driver, _) = crate::load_driver()?;
    let r = driver.cu_init();
    if r != 0 {
        return Err(format!(
            "cuInit failed with CUDA error {r}: the driver found no usable GPU"
        ));
    }
    let (cupti, path, _) = crate::load_cupti()?;
    let api = api_at(&path)?;
    driver.with_primary_context(device as i32, |ctx| {
        api.ctx_call(&cupti, "cuptiPCSamplingEnable", api.enable, ctx)?;
        let names = api.stall_reason_names(&cupti, ctx);
        let _ = api.ctx_call(&cupti, "cuptiPCSamplingDisable", api.disable, ctx);
        names
    })?
}
