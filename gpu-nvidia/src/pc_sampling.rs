//! GPU PC sampling with stall reasons (CUPTI PC Sampling API, `METRON_GPU_PC_SAMPLING`).
//!
//! - **Collection.** At each context's creation (resource callback; or at its first launch when
//!   Metron started after the context) `cuptiPCSamplingEnable`, then the device's stall reasons,
//!   then one `SetConfigurationAttribute` call: every stall reason, the period (2^N cycles),
//!   `continuous` or `serialized` (`METRON_GPU_PC_SAMPLING_MODE`), parsed output, a 16 MiB
//!   scratch buffer, and a configuration buffer Metron owns. The SMs then sample warp PCs for
//!   the whole run.
//! - **Drain.** `cuptiPCSamplingGetData` into a buffer allocated per context at start-up
//!   ([`DRAIN_PCS`] records, each with room for every stall reason); records are added into a
//!   fixed-capacity table keyed by (cubin CRC, function, PC offset, correlation id): no
//!   allocation per record (a function's name is copied once, the first time it is seen).
//!   The configuration buffer is read at each module load (CUPTI flushes into it then); drains
//!   happen at a launch's exit when CUPTI holds at least half a buffer of PCs (continuous) or
//!   after every launch (serialized), at context destruction, and at the end of the run (then
//!   `cuptiPCSamplingDisable` flushes the rest). Samples CUPTI dropped, samples the table had
//!   no room for, and a full hardware buffer are counted for `metadata.json`.
//! - **Launch path** (the backend's launch callbacks): a thread-local count, a relaxed atomic
//!   add, a scan of the 16 context slots and one read of the configuration buffer's pending
//!   count; the lock is taken only to drain, or once per new context.
//! - **Not with counters**: with `METRON_GPU_METRICS` set, sampling is refused with the reason
//!   (the range profiler and PC sampling cannot share a context).
//! - **Attribution** (at the end of the run, [`attribute`]): a sample's PC → its function
//!   (kernel) → the Metron region open at the launch. Kernel-serialized records carry the
//!   launch's correlation id, so the region is exact; continuous records carry none (CUPTI
//!   sets 0), so a kernel launched from several regions has its samples shared among them in
//!   proportion to its GPU time in each (integer shares, largest remainder). The PC goes to a
//!   source file:line through `cuptiGetSassToSourceCorrelation` on the cubin captured at module
//!   load (needs `-lineinfo`; otherwise function + PC offset, said once in `metadata.json`),
//!   with the line's inlined-at chain from the cubin's own line table
//!   (`metron_symbols::cubin`) when that table gives the PC the same line.
//! - **Outputs**: `pc_samples.csv` (kernel, region, function, pc offset, file, line, stall
//!   reason, samples, of them not issued, inlined at), `gpu_stalls.folded`
//!   (`region;kernel;file:line;reason count`), a "GPU stall reasons" section in `summary.txt`
//!   and `gpu_pc_sampling` in `summary.json` (per kernel and per region: samples and % per
//!   reason, top source lines with their dominant stall), the section `gpu_pc_sampling` of
//!   `metadata.json`, and [`notes`] for the trace: a `PC sampling` track under each stream with
//!   each sampled launch's breakdown (handed over as `metron::gpu::GpuNote`s before the trace
//!   finishes). [`replay`] feeds recorded CUPTI buffers to the same outputs without a GPU.
//!
//! Stall reasons come in pairs: `X` and `X_not_issued` (a subset of `X`). Totals and shares use
//! only the plain reasons, whose sum is CUPTI's `totalSamples` (H100 notes, §1).

use crate::sys::{Cupti, CUPTI_SUCCESS};
use crate::sys_pcsampling::{
    self as ps, ConfigInfo, PcData, PcSamplingApi, SamplingData, StallReason,
};
use metron_symbols::cubin::CubinLines;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::ffi::{c_void, CString};
use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

/// Stall-reason indices Metron keeps per PC (the H100 reports 40: 0..=39).
pub const MAX_REASON_INDEX: usize = 64;
/// PC records per `GetData` call (and in the configuration buffer).
pub const DRAIN_PCS: usize = 4096;
/// Distinct (function, PC, correlation) entries the table holds; more are counted as lost.
pub const TABLE_PCS: usize = 16384;
/// Contexts sampled at most.
const MAX_CONTEXTS: usize = 16;
/// CUPTI's scratch buffer.
const SCRATCH_BYTES: u64 = 16 << 20;
/// Prefix of CUPTI's stall-reason names.
const REASON_PREFIX: &str = "smsp__pcsamp_warps_issue_stalled_";

/// `METRON_GPU_PC_SAMPLING_MODE`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Kernels run concurrently as usual; records carry no correlation id.
    Continuous,
    /// CUPTI serializes kernels; each record carries its launch's correlation id.
    Serialized,
}

impl Mode {
    /// The setting's word.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Continuous => "continuous",
            Mode::Serialized => "serialized",
        }
    }
}

/// What the settings ask for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    /// Sampling period as CUPTI's exponent (2^N cycles); `None`: CUPTI's default.
    pub period: Option<u32>,
    /// Collection mode.
    pub mode: Mode,
}

/// Parses `METRON_GPU_PC_SAMPLING` and `METRON_GPU_PC_SAMPLING_MODE`: `Ok(None)` when off.
pub fn parse_settings(raw: Option<&str>, raw_mode: Option<&str>) -> Result<Option<Config>, String> {
    let mode = match raw_mode.map(str::trim).unwrap_or("") {
        "" | "continuous" => Mode::Continuous,
        "serialized" | "kernel_serialized" => Mode::Serialized,
        other => {
            return Err(format!(
                "METRON_GPU_PC_SAMPLING_MODE={}: accepted: continuous, serialized",
                metron_metrics::cut_input(other)
            ))
        }
    };
    let period = match raw.map(str::trim).unwrap_or("") {
        "" | "off" | "0" | "false" | "no" => return Ok(None),
        "on" | "1" | "true" | "yes" => None,
        n => match n.parse::<u32>() {
            Ok(p) if (5..=31).contains(&p) => Some(p),
            _ => {
                return Err(format!(
                    "METRON_GPU_PC_SAMPLING={}: accepted: off, on, or a sampling period exponent 5..31 (one sample per SM every 2^N cycles)",
                    metron_metrics::cut_input(n)
                ))
            }
        },
    };
    Ok(Some(Config { period, mode }))
}

/// The short name of a stall reason: `smsp__pcsamp_warps_issue_stalled_long_scoreboard` →
/// `long_scoreboard`.
pub fn short_reason(name: &str) -> &str {
    name.strip_prefix(REASON_PREFIX).unwrap_or(name)
}

/// A reason that counts in totals: not a `_not_issued` detail and not the two bookkeeping
/// entries (`smsp__pcsamp_sample_count`, `smsp__pcsamp_samples_data_dropped`).
pub fn is_plain_reason(name: &str) -> bool {
    name.starts_with(REASON_PREFIX) && !name.ends_with("_not_issued")
}

// ---------------------------------------------------------------------------------------------
// The table (no allocation after construction).

/// One sampled PC: where, and (serialized mode) which launch.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct PcKey {
    /// The cubin's CRC (`cuptiGetCubinCrc`).
    pub crc: u64,
    /// PC offset in the function.
    pub pc_offset: u64,
    /// Function index in the cubin.
    pub function_index: u32,
    /// Correlation id (0 in continuous mode).
    pub correlation: u32,
}

/// Samples per (PC, stall-reason index), open addressing, fixed capacity.
pub struct Table {
    keys: Vec<PcKey>,
    used: Vec<bool>,
    counts: Vec<u64>,
    len: usize,
    limit: usize,
    /// Samples of new PCs that found the table full.
    pub lost_samples: u64,
    /// Samples whose reason index was beyond [`MAX_REASON_INDEX`].
    pub unknown_reason_samples: u64,
}

impl Table {
    /// A table for `pcs` entries (all memory taken now).
    pub fn with_capacity(pcs: usize) -> Table {
        let slots = (pcs * 2).next_power_of_two().max(16);
        Table {
            keys: vec![PcKey::default(); slots],
            used: vec![false; slots],
            counts: vec![0; slots * MAX_REASON_INDEX],
            len: 0,
            limit: pcs,
            lost_samples: 0,
            unknown_reason_samples: 0,
        }
    }

    fn slot(&self, k: &PcKey) -> usize {
        let mut h = k.crc
            ^ k.pc_offset.rotate_left(17)
            ^ u64::from(k.function_index).rotate_left(33)
            ^ u64::from(k.correlation).rotate_left(47);
        h = h.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        (h >> 20) as usize & (self.keys.len() - 1)
    }

    /// Adds `samples` of reason `index` at `key`; false when the table was full (counted).
    pub fn add(&mut self, key: PcKey, index: u32, samples: u64) -> bool {
        if index as usize >= MAX_REASON_INDEX {
            self.unknown_reason_samples += samples;
            return true;
        }
        let mask = self.keys.len() - 1;
        let mut s = self.slot(&key);
        loop {
            if !self.used[s] {
                if self.len >= self.limit {
                    self.lost_samples += samples;
                    return false;
                }
                self.used[s] = true;
                self.keys[s] = key;
                self.len += 1;
                break;
            }
            if self.keys[s] == key {
                break;
            }
            s = (s + 1) & mask;
        }
        self.counts[s * MAX_REASON_INDEX + index as usize] += samples;
        true
    }

    /// Entries in use.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Every entry with its samples by reason index.
    pub fn entries(&self) -> impl Iterator<Item = (PcKey, &[u64])> + '_ {
        (0..self.keys.len())
            .filter(|&s| self.used[s])
            .map(move |s| {
                (
                    self.keys[s],
                    &self.counts[s * MAX_REASON_INDEX..(s + 1) * MAX_REASON_INDEX],
                )
            })
    }
}

/// Totals over every drain.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Sum of `totalSamples`.
    pub total_samples: u64,
    /// Sum of `droppedSamples`.
    pub dropped_samples: u64,
    /// Sum of `nonUsrKernelsTotalSamples`.
    pub non_user_samples: u64,
    /// Some buffer had `hardwareBufferFull` set.
    pub hardware_buffer_full: bool,
    /// PC records read.
    pub records: u64,
    /// Buffers read (GetData calls with records, configuration buffers).
    pub buffers: u64,
}

/// Function names by (cubin CRC, function index), copied once each.
#[derive(Default)]
pub struct Functions {
    names: HashMap<(u64, u32), CString>,
}

impl Functions {
    /// With room for `n` functions.
    pub fn with_capacity(n: usize) -> Functions {
        Functions {
            names: HashMap::with_capacity(n),
        }
    }

    /// The mangled name of a function.
    pub fn name(&self, crc: u64, index: u32) -> Option<&CString> {
        self.names.get(&(crc, index))
    }

    /// Records a name (tests, and the first sight of a function).
    pub fn insert(&mut self, crc: u64, index: u32, name: CString) {
        self.names.entry((crc, index)).or_insert(name);
    }
}

/// Adds the records of one CUPTI buffer to `table`, `functions` and `stats`.
///
/// # Safety
/// `data.p_pc_data` must hold `data.total_num_pcs` records (capped at `collect_num_pcs`),
/// each with `stall_reason_count` entries at `stall_reason` and a null or NUL-terminated
/// `function_name`, as CUPTI fills them.
pub unsafe fn ingest(
    data: &SamplingData,
    table: &mut Table,
    functions: &mut Functions,
    stats: &mut Stats,
) {
    let n = data.total_num_pcs.min(data.collect_num_pcs);
    stats.total_samples += data.total_samples;
    stats.dropped_samples += data.dropped_samples;
    stats.non_user_samples += data.non_usr_kernels_total_samples;
    stats.hardware_buffer_full |= data.hardware_buffer_full != 0;
    if n == 0 || data.p_pc_data.is_null() {
        return;
    }
    stats.buffers += 1;
    for i in 0..n {
        // SAFETY: i < total_num_pcs records (caller).
        let pc: &PcData = unsafe { &*data.p_pc_data.add(i) };
        stats.records += 1;
        let key = PcKey {
            crc: pc.cubin_crc,
            pc_offset: pc.pc_offset,
            function_index: pc.function_index,
            correlation: pc.correlation_id,
        };
        if functions.name(key.crc, key.function_index).is_none() && !pc.function_name.is_null() {
            // SAFETY: CUPTI's NUL-terminated name (caller); copied, not freed (CUPTI shares
            // it with other records until post-processing is over).
            let name = unsafe { std::ffi::CStr::from_ptr(pc.function_name) }.to_owned();
            functions.insert(key.crc, key.function_index, name);
        }
        if pc.stall_reason.is_null() {
            continue;
        }
        for r in 0..pc.stall_reason_count {
            // SAFETY: r < stall_reason_count entries (caller).
            let sr: StallReason = unsafe { *pc.stall_reason.add(r) };
            if sr.samples > 0 {
                table.add(key, sr.index, u64::from(sr.samples));
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Attribution and outputs (pure: tested without a GPU).

/// A kernel launch as the kernel records saw it.
#[derive(Clone, Debug, PartialEq)]
pub struct Launch {
    /// Demangled kernel name (as in `kernels.csv`).
    pub kernel: String,
    /// Correlation id.
    pub correlation: u32,
    /// The region open at the launch (`(no region)` when none).
    pub region: String,
    /// GPU time, ns.
    pub duration_ns: u64,
}

/// One output row: samples of one reason at one PC in one region.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// Kernel (demangled).
    pub kernel: String,
    /// Region open at the launch.
    pub region: String,
    /// Function (mangled, as in the cubin).
    pub function: String,
    /// PC offset in the function.
    pub pc_offset: u64,
    /// Source file (empty without line information).
    pub file: String,
    /// Source line (0 without line information).
    pub line: u32,
    /// The `(file, line)`s the line is inlined at, innermost first (empty when not inlined).
    pub inlined_at: Vec<(String, u32)>,
    /// Stall reason (short name).
    pub reason: String,
    /// Samples.
    pub samples: u64,
    /// Of them, samples whose warp issued nothing (`<reason>_not_issued`).
    pub not_issued: u64,
    /// The launch's correlation id when the samples carried it (serialized mode), else 0.
    pub correlation: u32,
}

/// Splits `total` among `weights` in proportion, integers summing to `total` (largest
/// remainder; ties to the earlier weight). All-zero weights split evenly.
pub fn apportion(total: u64, weights: &[u64]) -> Vec<u64> {
    if weights.is_empty() {
        return Vec::new();
    }
    let sum: u128 = weights.iter().map(|&w| u128::from(w)).sum();
    let w: Vec<u128> = if sum == 0 {
        vec![1; weights.len()]
    } else {
        weights.iter().map(|&w| u128::from(w)).collect()
    };
    let sum: u128 = w.iter().sum();
    let mut out: Vec<u64> = w
        .iter()
        .map(|&x| (u128::from(total) * x / sum) as u64)
        .collect();
    let mut rest = total - out.iter().sum::<u64>();
    let mut order: Vec<usize> = (0..w.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(u128::from(total) * w[i] % sum));
    for i in order {
        if rest == 0 {
            break;
        }
        out[i] += 1;
        rest -= 1;
    }
    out
}

/// A PC's source: file, line, and the `(file, line)`s it is inlined at, innermost first
/// (empty when not inlined).
pub type Source = (String, u32, Vec<(String, u32)>);

/// Resolves a PC (cubin CRC, function, offset) to its [`Source`]; `None` without line
/// information.
pub type SourceOf<'a> = dyn FnMut(u64, &CString, u64) -> Option<Source> + 'a;

/// The rows of a run: each table entry's samples by plain reason (its `_not_issued` twin as
/// detail), in its kernel's region(s), at its source line. `reasons`: CUPTI's (index, name).
pub fn attribute(
    table: &Table,
    functions: &Functions,
    reasons: &[(u32, String)],
    launches: &[Launch],
    source: &mut SourceOf<'_>,
) -> Vec<Row> {
    let mut name_of: Vec<Option<&str>> = vec![None; MAX_REASON_INDEX];
    for (i, n) in reasons {
        if (*i as usize) < MAX_REASON_INDEX {
            name_of[*i as usize] = Some(n);
        }
    }
    // plain index → not-issued index
    let mut twin: Vec<Option<usize>> = vec![None; MAX_REASON_INDEX];
    for (i, n) in reasons {
        if is_plain_reason(n) {
            let ni = format!("{n}_not_issued");
            twin[*i as usize % MAX_REASON_INDEX] = reasons
                .iter()
                .find(|(_, m)| *m == ni)
                .map(|(j, _)| *j as usize);
        }
    }
    let by_corr: HashMap<u32, &Launch> = launches.iter().map(|l| (l.correlation, l)).collect();
    // kernel → [(region, GPU time)] in first-seen order
    let mut regions_of: HashMap<&str, Vec<(&str, u64)>> = HashMap::new();
    for l in launches {
        let v = regions_of.entry(l.kernel.as_str()).or_default();
        match v.iter_mut().find(|(r, _)| *r == l.region) {
            Some(e) => e.1 += l.duration_ns,
            None => v.push((l.region.as_str(), l.duration_ns)),
        }
    }
    let mut demangled: HashMap<(u64, u32), String> = HashMap::new();
    let mut lines: HashMap<(u64, u32, u64), Option<Source>> = HashMap::new();
    let mut rows = Vec::new();
    let mut entries: Vec<(PcKey, &[u64])> = table.entries().collect();
    entries.sort_by_key(|(k, _)| (k.crc, k.function_index, k.pc_offset, k.correlation));
    for (key, counts) in entries {
        let fname = functions.name(key.crc, key.function_index);
        let function = fname.map_or_else(
            || format!("function#{}", key.function_index),
            |c| c.to_string_lossy().into_owned(),
        );
        let kernel = demangled
            .entry((key.crc, key.function_index))
            .or_insert_with(|| metron::gpu::demangle_kernel(&function))
            .clone();
        let (file, line, inlined_at) = match fname {
            Some(c) => lines
                .entry((key.crc, key.function_index, key.pc_offset))
                .or_insert_with(|| source(key.crc, c, key.pc_offset))
                .clone()
                .unwrap_or_default(),
            None => Source::default(),
        };
        // The region shares of this entry.
        let joined = key.correlation != 0 && by_corr.contains_key(&key.correlation);
        let shares: Vec<(String, u64)> = match by_corr.get(&key.correlation) {
            Some(l) if joined => vec![(l.region.clone(), 1)],
            _ => match regions_of.get(kernel.as_str()) {
                Some(v) => v.iter().map(|(r, d)| (r.to_string(), *d)).collect(),
                None => vec![("(no region)".to_string(), 1)],
            },
        };
        let weights: Vec<u64> = shares.iter().map(|(_, w)| *w).collect();
        for (i, &n) in counts.iter().enumerate() {
            let Some(name) = name_of[i] else { continue };
            if n == 0 || !is_plain_reason(name) {
                continue;
            }
            let ni = twin[i].map_or(0, |j| counts[j]);
            let parts = apportion(n, &weights);
            let ni_parts = apportion(ni, &weights);
            for ((region, _), (s, q)) in shares.iter().zip(parts.into_iter().zip(ni_parts)) {
                if s == 0 {
                    continue;
                }
                rows.push(Row {
                    kernel: kernel.clone(),
                    region: region.clone(),
                    function: function.clone(),
                    pc_offset: key.pc_offset,
                    file: file.clone(),
                    line,
                    inlined_at: inlined_at.clone(),
                    reason: short_reason(name).to_string(),
                    samples: s,
                    not_issued: q,
                    correlation: if joined { key.correlation } else { 0 },
                });
            }
        }
    }
    rows
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// `pc_samples.csv`.
pub fn csv(rows: &[Row]) -> String {
    let mut out = String::from(
        "kernel,region,function,pc_offset,file,line,stall_reason,samples,not_issued,inlined_at\n",
    );
    for r in rows {
        let _ = writeln!(
            out,
            "{},{},{},0x{:x},{},{},{},{},{},{}",
            csv_field(&r.kernel),
            csv_field(&r.region),
            csv_field(&r.function),
            r.pc_offset,
            csv_field(&r.file),
            if r.line > 0 {
                r.line.to_string()
            } else {
                String::new()
            },
            r.reason,
            r.samples,
            r.not_issued,
            csv_field(
                &r.inlined_at
                    .iter()
                    .map(|(f, l)| format!("{f}:{l}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        );
    }
    out
}

fn base(file: &str) -> &str {
    file.rsplit('/').next().unwrap_or(file)
}

/// `file:line`, with ` (inlined at file:line, ...)` when inlined; `function+0xoffset` without
/// line information.
fn location(r: &Row) -> String {
    if r.line > 0 {
        let mut s = format!("{}:{}", base(&r.file), r.line);
        if !r.inlined_at.is_empty() {
            let at: Vec<String> = r
                .inlined_at
                .iter()
                .map(|(f, l)| format!("{}:{l}", base(f)))
                .collect();
            let _ = write!(s, " (inlined at {})", at.join(", "));
        }
        s
    } else {
        format!("{}+0x{:x}", r.function, r.pc_offset)
    }
}

/// `gpu_stalls.folded`: `region;kernel;file:line;reason count` (`;` in names becomes `:`).
pub fn folded(rows: &[Row]) -> String {
    let mut agg: Vec<(String, u64)> = Vec::new();
    let mut at: HashMap<String, usize> = HashMap::new();
    for r in rows {
        let clean = |s: &str| s.replace(';', ":");
        let k = format!(
            "{};{};{};{}",
            clean(&r.region),
            clean(&r.kernel),
            clean(&location(r)),
            r.reason
        );
        match at.get(&k) {
            Some(&i) => agg[i].1 += r.samples,
            None => {
                at.insert(k.clone(), agg.len());
                agg.push((k, r.samples));
            }
        }
    }
    agg.iter().map(|(k, n)| format!("{k} {n}\n")).collect()
}

/// Per-group breakdown: samples by reason (descending) and the top lines with their dominant
/// reason.
#[derive(Clone, Debug, PartialEq)]
pub struct Breakdown {
    /// Kernel or region name.
    pub name: String,
    /// All samples (plain reasons).
    pub samples: u64,
    /// (reason, samples), most first.
    pub reasons: Vec<(String, u64)>,
    /// (location, samples, dominant reason), most first, at most 5.
    pub lines: Vec<(String, u64, String)>,
}

/// (name, samples) pairs in first-seen order.
type Counts = Vec<(String, u64)>;

/// Breakdowns grouped by kernel (`by_region == false`) or by region.
pub fn breakdowns(rows: &[Row], by_region: bool) -> Vec<Breakdown> {
    let mut groups: Vec<(String, Vec<&Row>)> = Vec::new();
    for r in rows {
        let g = if by_region { &r.region } else { &r.kernel };
        match groups.iter_mut().find(|(n, _)| n == g) {
            Some((_, v)) => v.push(r),
            None => groups.push((g.clone(), vec![r])),
        }
    }
    let mut out: Vec<Breakdown> = groups
        .into_iter()
        .map(|(name, rs)| {
            let mut reasons: Vec<(String, u64)> = Vec::new();
            let mut lines: Vec<(String, u64, Counts)> = Vec::new();
            for r in &rs {
                match reasons.iter_mut().find(|(n, _)| *n == r.reason) {
                    Some(e) => e.1 += r.samples,
                    None => reasons.push((r.reason.clone(), r.samples)),
                }
                let loc = if by_region {
                    format!("{} {}", r.kernel, location(r))
                } else {
                    location(r)
                };
                let e = match lines.iter_mut().position(|(l, _, _)| *l == loc) {
                    Some(i) => &mut lines[i],
                    None => {
                        lines.push((loc, 0, Vec::new()));
                        lines.last_mut().expect("pushed")
                    }
                };
                e.1 += r.samples;
                match e.2.iter_mut().find(|(n, _)| *n == r.reason) {
                    Some(x) => x.1 += r.samples,
                    None => e.2.push((r.reason.clone(), r.samples)),
                }
            }
            reasons.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
            let samples = reasons.iter().map(|(_, n)| n).sum();
            let mut lines: Vec<(String, u64, String)> = lines
                .into_iter()
                .map(|(l, n, rs)| {
                    let top = rs
                        .iter()
                        .max_by(|a, b| a.1.cmp(&b.1).then(b.0.cmp(&a.0)))
                        .map(|(r, _)| r.clone())
                        .unwrap_or_default();
                    (l, n, top)
                })
                .collect();
            lines.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
            lines.truncate(5);
            Breakdown {
                name,
                samples,
                reasons,
                lines,
            }
        })
        .collect();
    out.sort_by(|a, b| b.samples.cmp(&a.samples).then(a.name.cmp(&b.name)));
    out
}

fn pct(n: u64, of: u64) -> f64 {
    if of == 0 {
        0.0
    } else {
        100.0 * n as f64 / of as f64
    }
}

/// The summary.txt section.
pub fn summary_text(kernels: &[Breakdown], regions: &[Breakdown], note: &str) -> String {
    let mut s = String::from("\nGPU stall reasons (PC sampling)\n");
    if !note.is_empty() {
        let _ = writeln!(s, "  {note}");
    }
    for (title, groups) in [("by kernel", kernels), ("by region", regions)] {
        let _ = writeln!(s, "  {title}:");
        for b in groups {
            let _ = writeln!(s, "    {}  {} samples", b.name, b.samples);
            let top: Vec<String> = b
                .reasons
                .iter()
                .take(6)
                .map(|(r, n)| format!("{r} {:.1}%", pct(*n, b.samples)))
                .collect();
            let _ = writeln!(s, "      stalls: {}", top.join(", "));
            for (l, n, r) in b.lines.iter().take(3) {
                let _ = writeln!(s, "      {:5.1}%  {l}  ({r})", pct(*n, b.samples));
            }
        }
    }
    s
}

/// The track of the trace's notes (one under each GPU stream that ran sampled kernels).
pub const NOTE_TRACK: &str = "PC sampling";

/// The trace's notes: one slice per launch of a sampled kernel, with the kernel slice's
/// times, on the `PC sampling` track under its stream, named after its top stall
/// (`long_scoreboard 61.3%`). Arguments: `kernel`, `scope` (`launch` when the samples carried
/// the launch's correlation id, serialized mode; else `kernel, all launches`: continuous
/// samples are not told apart by launch, so every launch shows its kernel's breakdown, the
/// summary's), `samples`, `stall_1..3` with `stall_N_percent` (as summary.json rounds them),
/// `hottest_line` with `hottest_line_percent` and `hottest_line_stall`.
pub fn notes(rows: &[Row], kernels: &[metron::gpu::GpuRecord]) -> Vec<metron::gpu::GpuNote> {
    use metron::gpu::NoteValue::{Str, F64, U64};
    let by_kernel: HashMap<String, Breakdown> = breakdowns(rows, false)
        .into_iter()
        .map(|b| (b.name.clone(), b))
        .collect();
    let mut launch_rows: HashMap<(u32, &str), Vec<Row>> = HashMap::new();
    for r in rows.iter().filter(|r| r.correlation != 0) {
        launch_rows
            .entry((r.correlation, r.kernel.as_str()))
            .or_default()
            .push(r.clone());
    }
    let by_launch: HashMap<(u32, &str), Breakdown> = launch_rows
        .into_iter()
        .filter_map(|(c, rs)| breakdowns(&rs, false).pop().map(|b| (c, b)))
        .collect();
    let serialized = !by_launch.is_empty();
    let mut out = Vec::new();
    for k in kernels
        .iter()
        .filter(|k| k.kind == metron::gpu::GpuKind::Kernel)
    {
        let (b, scope) = match by_launch.get(&(k.correlation, &*k.name)) {
            Some(b) => (b, "launch"),
            None if serialized => continue,
            None => match by_kernel.get(&*k.name) {
                Some(b) => (b, "kernel, all launches"),
                None => continue,
            },
        };
        let percent = |n: u64| (pct(n, b.samples) * 100.0).round() / 100.0;
        let mut args = vec![
            ("kernel".to_string(), Str(k.name.to_string())),
            ("scope".to_string(), Str(scope.to_string())),
            ("samples".to_string(), U64(b.samples)),
        ];
        for (i, (r, n)) in b.reasons.iter().take(3).enumerate() {
            args.push((format!("stall_{}", i + 1), Str(r.clone())));
            args.push((format!("stall_{}_percent", i + 1), F64(percent(*n))));
        }
        if let Some((l, n, r)) = b.lines.first() {
            args.push(("hottest_line".to_string(), Str(l.clone())));
            args.push(("hottest_line_percent".to_string(), F64(percent(*n))));
            args.push(("hottest_line_stall".to_string(), Str(r.clone())));
        }
        let name = b.reasons.first().map_or_else(
            || "no samples".to_string(),
            |(r, n)| format!("{r} {:.1}%", pct(*n, b.samples)),
        );
        out.push(metron::gpu::GpuNote {
            track: NOTE_TRACK.into(),
            device: k.device,
            stream: k.stream,
            start_ns: k.start_ns,
            end_ns: k.end_ns,
            name: name.into(),
            correlation: k.correlation,
            args,
        });
    }
    out
}

/// Breakdowns as JSON.
pub fn breakdowns_json(groups: &[Breakdown]) -> Value {
    Value::Array(
        groups
            .iter()
            .map(|b| {
                json!({
                    "name": b.name,
                    "samples": b.samples,
                    "stall_reasons": b.reasons.iter().map(|(r, n)| json!({"reason": r, "samples": n, "percent": (pct(*n, b.samples) * 100.0).round() / 100.0})).collect::<Vec<_>>(),
                    "top_lines": b.lines.iter().map(|(l, n, r)| json!({"location": l, "samples": n, "dominant_stall": r})).collect::<Vec<_>>(),
                })
            })
            .collect(),
    )
}

// ---------------------------------------------------------------------------------------------
// Runtime state (CUPTI).

struct Context {
    ctx: usize,
    /// The configuration buffer CUPTI fills at module loads and at disable (stable address).
    config: Box<SamplingData>,
    _config_pcs: Vec<PcData>,
    _config_reasons: Vec<StallReason>,
    /// The GetData buffer.
    drain: Box<SamplingData>,
    _drain_pcs: Vec<PcData>,
    _drain_reasons: Vec<StallReason>,
    /// The stall-reason indices handed to CUPTI in the configuration (kept, as CUPTI's sample
    /// keeps them, for the context's life).
    _indices: Vec<u32>,
    disabled: bool,
}

// SAFETY: the raw pointers inside point into the Vecs owned alongside; used under STATE's lock.
unsafe impl Send for Context {}

struct State {
    api: PcSamplingApi,
    cupti: Cupti,
    config: Config,
    contexts: Vec<Context>,
    reasons: Vec<(u32, String)>,
    table: Table,
    functions: Functions,
    stats: Stats,
    /// Cubins by CRC (copied at module load).
    cubins: HashMap<u64, Vec<u8>>,
    errors: Vec<String>,
    get_data_errors: u64,
    too_many_contexts: bool,
    /// Time spent enabling and configuring contexts, ns (Metron's calls into CUPTI).
    setup_ns: u64,
    /// Time spent draining (GetData, ingest, disable), ns.
    drain_ns: u64,
}

static STATE: Mutex<Option<State>> = Mutex::new(None);
static ON: AtomicBool = AtomicBool::new(false);
static SERIALIZED: AtomicBool = AtomicBool::new(false);
/// Configured contexts (for the launch path's lock-free check) and their configuration
/// buffers.
static CTX_KEYS: [AtomicUsize; MAX_CONTEXTS] = [const { AtomicUsize::new(0) }; MAX_CONTEXTS];
static CTX_BUFS: [AtomicPtr<SamplingData>; MAX_CONTEXTS] =
    [const { AtomicPtr::new(std::ptr::null_mut()) }; MAX_CONTEXTS];
/// Slots taken (under `STATE`'s lock).
static NEXT_SLOT: AtomicUsize = AtomicUsize::new(0);
static LAUNCHES: AtomicU64 = AtomicU64::new(0);
static DRAINS: AtomicU64 = AtomicU64::new(0);
static REFUSED: Mutex<Option<String>> = Mutex::new(None);
static REPORT: OnceLock<Value> = OnceLock::new();

thread_local! {
    /// Launches this thread made while sampling was on ([`crate::GpuPcSampling`]).
    static THREAD_LAUNCHES: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// PC sampling is on (settings accepted, CUPTI functions found).
#[inline]
pub fn on() -> bool {
    ON.load(Ordering::Relaxed)
}

/// Launches this thread made while sampling was on.
pub fn thread_launches() -> u64 {
    THREAD_LAUNCHES.try_with(|c| c.get()).unwrap_or(0)
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

fn new_buffer(pcs: usize, reasons: usize) -> (Box<SamplingData>, Vec<PcData>, Vec<StallReason>) {
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
fn setup_context(st: &mut State, ctx: *mut c_void) {
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
fn configure_context(st: &mut State, ctx: *mut c_void, slot: usize) {
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
fn drain_context(st: &mut State, i: usize, disable: bool) {
    if st.contexts[i].disabled {
        return;
    }
    let t0 = metron::clock::monotonic_ns();
    drain_context_inner(st, i, disable);
    st.drain_ns += metron::clock::monotonic_ns().saturating_sub(t0);
}

fn drain_context_inner(st: &mut State, i: usize, disable: bool) {
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

fn take_config(c: &mut Context, table: &mut Table, functions: &mut Functions, stats: &mut Stats) {
    if c.config.total_num_pcs > 0 {
        // SAFETY: CUPTI filled the configuration buffer as the layout says.
        unsafe { ingest(&c.config, table, functions, stats) };
        c.config.total_num_pcs = 0;
        c.config.total_samples = 0;
        c.config.dropped_samples = 0;
        c.config.non_usr_kernels_total_samples = 0;
    }
}

fn with_state(f: impl FnOnce(&mut State)) {
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
    let _ = THREAD_LAUNCHES.try_with(|c| c.set(c.get() + 1));
    LAUNCHES.fetch_add(1, Ordering::Relaxed);
    if slot_of(ctx).is_none() {
        with_state(|st| setup_context(st, ctx));
    }
}

/// The slot a context took (`None` for null or a context not seen yet).
fn slot_of(ctx: *mut c_void) -> Option<usize> {
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
fn source_of(
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

/// Collects kernel records for the join and writes the outputs at the end.
#[derive(Default)]
struct PcSink {
    /// The kernel records of the run.
    kernels: Vec<metron::gpu::GpuRecord>,
    /// Recorded CUPTI records to use instead of CUPTI's ([`replay`]).
    replay: Option<Replay>,
}

/// What [`replay`] decoded: the table CUPTI's buffers would have filled.
struct Replay {
    mode: Mode,
    reasons: Vec<(u32, String)>,
    table: Table,
    functions: Functions,
    lines: HashMap<(String, u64), (String, u32)>,
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
struct Collected<'a> {
    mode: Mode,
    reasons: &'a [(u32, String)],
    table: &'a Table,
    functions: &'a Functions,
}

/// Joins, writes the files and summary sections, hands the trace its notes and keeps the
/// `attribution` report for `metadata.json`.
fn finish_outputs(
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

fn no_line_note(n: usize) -> String {
    if n == 0 {
        String::new()
    } else {
        format!("{n} function(s) without line information (build with -lineinfo): shown as function+offset")
    }
}

/// Writes `pc_samples.csv` and `gpu_stalls.folded` into `dir`, and adds the breakdowns to the
/// `summary.txt` / `summary.json` the summary sink wrote there before (it is registered first);
/// `no_lines`: functions without line information. Returns the files written.
pub fn write_outputs(
    dir: &std::path::Path,
    mode: Mode,
    rows: &[Row],
    no_lines: usize,
) -> std::io::Result<Vec<PathBuf>> {
    let kernels = breakdowns(rows, false);
    let regions = breakdowns(rows, true);
    let mut files = Vec::new();
    let csv_path = dir.join("pc_samples.csv");
    std::fs::write(&csv_path, csv(rows))?;
    files.push(csv_path);
    let folded_path = dir.join("gpu_stalls.folded");
    std::fs::write(&folded_path, folded(rows))?;
    files.push(folded_path);
    let txt = dir.join("summary.txt");
    if txt.is_file() {
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new().append(true).open(&txt)?;
        f.write_all(summary_text(&kernels, &regions, &no_line_note(no_lines)).as_bytes())?;
    }
    let js = dir.join("summary.json");
    if let Ok(text) = std::fs::read_to_string(&js) {
        if let Ok(mut v) = serde_json::from_str::<Value>(&text) {
            v["gpu_pc_sampling"] = json!({
                "mode": mode.as_str(),
                "by_kernel": breakdowns_json(&kernels),
                "by_region": breakdowns_json(&regions),
            });
            std::fs::write(&js, serde_json::to_string_pretty(&v)? + "\n")?;
        }
    }
    Ok(files)
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

fn api_at(cupti_path: &str) -> Result<PcSamplingApi, String> {
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

/// GPU PC sampling seen from a region (a bundle member): `sampled_launches` is the number of
/// kernels this thread launched inside the region while PC sampling
/// (`METRON_GPU_PC_SAMPLING`) was on, NaN when it is off. The samples themselves arrive after
/// the kernels ran and are attributed to the region open at each launch (`pc_samples.csv`,
/// the summary's "GPU stall reasons").
#[derive(Clone, Copy, Debug, Default)]
pub struct GpuPcSampling {
    at_start: u64,
    value: f64,
}

const PC_FIELDS: [metron::Field; 1] =
    [metron::Field::new("sampled_launches", metron::Unit::Number)];

impl metron::Component for GpuPcSampling {
    const NAME: &'static str = "gpu_pc_sampling";
    const DESCRIPTION: &'static str =
        "kernels launched in the region while CUPTI PC sampling (METRON_GPU_PC_SAMPLING) was on; their stall-reason samples go to pc_samples.csv and the summary";
    const COST: &'static str = "two thread-local reads";
    const FIELDS: &'static [metron::Field] = &PC_FIELDS;
    type Value = f64;

    fn start(&mut self) {
        self.at_start = thread_launches();
        self.value = f64::NAN;
    }

    fn stop(&mut self) {
        self.value = if on() {
            (thread_launches() - self.at_start) as f64
        } else {
            f64::NAN
        };
    }

    fn value(&self) -> f64 {
        self.value
    }

    fn write_fields(&self, out: &mut [f64]) {
        out[0] = self.value;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reasons() -> Vec<(u32, String)> {
        [
            (0, "smsp__pcsamp_sample_count"),
            (2, "smsp__pcsamp_warps_issue_stalled_barrier"),
            (3, "smsp__pcsamp_warps_issue_stalled_barrier_not_issued"),
            (14, "smsp__pcsamp_warps_issue_stalled_long_scoreboard"),
            (
                15,
                "smsp__pcsamp_warps_issue_stalled_long_scoreboard_not_issued",
            ),
            (36, "smsp__pcsamp_warps_issue_stalled_wait"),
            (37, "smsp__pcsamp_warps_issue_stalled_wait_not_issued"),
        ]
        .iter()
        .map(|(i, n)| (*i, n.to_string()))
        .collect()
    }

    #[test]
    fn settings_accept_off_on_period_and_modes() {
        assert_eq!(parse_settings(None, None), Ok(None));
        assert_eq!(parse_settings(Some("off"), Some("serialized")), Ok(None));
        assert_eq!(
            parse_settings(Some("on"), None),
            Ok(Some(Config {
                period: None,
                mode: Mode::Continuous
            }))
        );
        assert_eq!(
            parse_settings(Some(" 12 "), Some("serialized")),
            Ok(Some(Config {
                period: Some(12),
                mode: Mode::Serialized
            }))
        );
        let e = parse_settings(Some("4"), None).unwrap_err();
        assert!(e.contains("5..31") && e.contains("off, on"), "{e}");
        let e = parse_settings(Some("on"), Some("fast")).unwrap_err();
        assert!(e.contains("continuous, serialized"), "{e}");
    }

    /// A buffer as CUPTI fills it: 3 PCs of two functions, with stall reasons (index 99 is
    /// beyond what Metron keeps).
    fn fixture(correlation: u32) -> RecordedBuffer {
        let pc = |function: &str, function_index, pc_offset, stalls: &[(u32, u32)]| RecordedPc {
            crc: 0x193e_71a6,
            function: function.into(),
            function_index,
            pc_offset,
            correlation,
            stalls: stalls.to_vec(),
        };
        RecordedBuffer {
            total_samples: 1020,
            dropped_samples: 2,
            pcs: vec![
                pc("_Z5chasePKjPj", 0, 0x6f0, &[(14, 900), (15, 850), (36, 10)]),
                pc("_Z5chasePKjPj", 0, 0x700, &[(36, 40), (2, 0)]),
                pc("_Z3fmaPf", 1, 0x170, &[(36, 70), (37, 5), (99, 3)]),
            ],
        }
    }

    /// The fixture decoded into a fresh table.
    fn decoded(correlation: u32) -> (Table, Functions) {
        let mut t = Table::with_capacity(16);
        let mut fun = Functions::default();
        ingest_recorded(
            &fixture(correlation),
            &mut t,
            &mut fun,
            &mut Stats::default(),
        );
        (t, fun)
    }

    /// Launches of chase (correlation 5 in `memory`, 9 in `again`, 3:1 GPU time).
    fn chase_launches() -> Vec<Launch> {
        let chase = |correlation, region: &str, duration_ns| Launch {
            kernel: "chase(unsigned int const*, unsigned int*)".into(),
            correlation,
            region: region.into(),
            duration_ns,
        };
        vec![chase(5, "memory", 300), chase(9, "again", 100)]
    }

    #[test]
    fn records_decode_into_the_table() {
        let f = fixture(0);
        let mut t = Table::with_capacity(16);
        let mut fun = Functions::default();
        let mut st = Stats::default();
        // Twice: counts add up per PC.
        ingest_recorded(&f, &mut t, &mut fun, &mut st);
        ingest_recorded(&f, &mut t, &mut fun, &mut st);
        assert_eq!(st.total_samples, 2040);
        assert_eq!(st.dropped_samples, 4);
        assert_eq!(st.records, 6);
        assert_eq!(t.len(), 3);
        assert_eq!(t.unknown_reason_samples, 6);
        let e: HashMap<u64, Vec<u64>> = t
            .entries()
            .map(|(k, c)| (k.pc_offset, c.to_vec()))
            .collect();
        assert_eq!(e[&0x6f0][14], 1800);
        assert_eq!(e[&0x6f0][15], 1700);
        assert_eq!(e[&0x6f0][36], 20);
        assert_eq!(e[&0x170][37], 10);
        assert_eq!(
            fun.name(0x193e_71a6, 1).unwrap().to_str().unwrap(),
            "_Z3fmaPf"
        );
    }

    #[test]
    fn a_full_table_counts_what_it_loses() {
        let mut t = Table::with_capacity(2);
        let k = |o| PcKey {
            crc: 1,
            pc_offset: o,
            function_index: 0,
            correlation: 0,
        };
        assert!(t.add(k(0), 1, 5));
        assert!(t.add(k(16), 1, 5));
        assert!(!t.add(k(32), 1, 7));
        assert!(t.add(k(0), 2, 1));
        assert_eq!(t.lost_samples, 7);
        assert_eq!(t.len(), 2);
    }

    #[test]
    fn apportion_keeps_the_total() {
        assert_eq!(apportion(10, &[1, 1, 1]), vec![4, 3, 3]);
        assert_eq!(apportion(7, &[300, 100]), vec![5, 2]);
        assert_eq!(apportion(5, &[0, 0]), vec![3, 2]);
        assert_eq!(apportion(0, &[1]), vec![0]);
    }

    fn lines(_crc: u64, f: &CString, pc: u64) -> Option<Source> {
        (f.to_str().unwrap() == "_Z5chasePKjPj").then(|| {
            (
                "/src/pc_stalls.cu".to_string(),
                if pc == 0x6f0 { 56 } else { 57 },
                Vec::new(),
            )
        })
    }

    #[test]
    fn continuous_samples_join_kernels_regions_and_lines() {
        let (t, fun) = decoded(0);
        let mut launches = chase_launches();
        launches.insert(
            1,
            Launch {
                kernel: "fma(float*)".into(),
                correlation: 6,
                region: "compute".into(),
                duration_ns: 50,
            },
        );
        let rows = attribute(&t, &fun, &reasons(), &launches, &mut lines);
        // chase's 900 long_scoreboard at 0x6f0 split 3:1 by GPU time between its two regions.
        let ls: Vec<(&str, u64, u64)> = rows
            .iter()
            .filter(|r| r.reason == "long_scoreboard")
            .map(|r| (r.region.as_str(), r.samples, r.not_issued))
            .collect();
        assert_eq!(ls, vec![("memory", 675, 638), ("again", 225, 212)]);
        let fma: Vec<&Row> = rows.iter().filter(|r| r.kernel == "fma(float*)").collect();
        assert_eq!(fma.len(), 1);
        assert_eq!(
            (
                fma[0].region.as_str(),
                fma[0].reason.as_str(),
                fma[0].samples,
                fma[0].not_issued
            ),
            ("compute", "wait", 70, 5)
        );
        assert_eq!((fma[0].file.as_str(), fma[0].line), ("", 0));
        let total: u64 = rows.iter().map(|r| r.samples).sum();
        assert_eq!(
            total,
            900 + 10 + 40 + 70,
            "plain reasons only, nothing lost in the split"
        );
        let kernels = breakdowns(&rows, false);
        assert_eq!(kernels[0].name, "chase(unsigned int const*, unsigned int*)");
        assert_eq!(kernels[0].reasons[0], ("long_scoreboard".to_string(), 900));
        assert_eq!(
            kernels[0].lines[0],
            (
                "pc_stalls.cu:56".to_string(),
                910,
                "long_scoreboard".to_string()
            )
        );
        let regions = breakdowns(&rows, true);
        let names: Vec<&str> = regions.iter().map(|b| b.name.as_str()).collect();
        assert_eq!(names, vec!["memory", "again", "compute"]);
        let text = summary_text(&kernels, &regions, "");
        assert!(text.contains("long_scoreboard 94.7%, wait 5.3%"), "{text}");
    }

    #[test]
    fn serialized_samples_join_their_launch() {
        let (t, fun) = decoded(9);
        let rows = attribute(&t, &fun, &reasons(), &chase_launches(), &mut lines);
        assert!(rows.iter().all(|r| r.region == "again"), "{rows:?}");
    }

    #[test]
    fn trace_notes_per_launch_when_serialized_else_per_kernel() {
        let chase = "chase(unsigned int const*, unsigned int*)";
        let kernel = |corr: u32, start: u64| {
            let mut k = metron::gpu::GpuRecord::new(metron::gpu::GpuKind::Kernel, chase.into());
            k.correlation = corr;
            k.start_ns = start;
            k.end_ns = start + 50;
            k.stream = 3;
            k
        };
        let kernels = [kernel(5, 100), kernel(9, 500)];
        let arg = |n: &metron::gpu::GpuNote, key: &str| {
            n.args
                .iter()
                .find(|(k, _)| k == key)
                .map(|(_, v)| v.clone())
                .unwrap_or_else(|| panic!("{key} in {:?}", n.args))
        };
        use metron::gpu::NoteValue::{Str, F64, U64};
        for (corr, expect) in [
            (9u32, vec![(9u32, "launch")]),
            (
                0,
                vec![(5, "kernel, all launches"), (9, "kernel, all launches")],
            ),
        ] {
            let (t, fun) = decoded(corr);
            let rows = attribute(&t, &fun, &reasons(), &chase_launches(), &mut lines);
            let notes = notes(&rows, &kernels);
            let got: Vec<(u32, metron::gpu::NoteValue)> = notes
                .iter()
                .map(|n| (n.correlation, arg(n, "scope")))
                .collect();
            let want: Vec<(u32, metron::gpu::NoteValue)> = expect
                .iter()
                .map(|(c, s)| (*c, Str(s.to_string())))
                .collect();
            assert_eq!(got, want, "samples with correlation {corr}");
            for n in &notes {
                // 900 long_scoreboard + 10 wait at line 56, 40 wait at line 57.
                assert_eq!(arg(n, "samples"), U64(950));
                assert_eq!(arg(n, "stall_1"), Str("long_scoreboard".into()));
                assert_eq!(arg(n, "stall_1_percent"), F64(94.74));
                assert_eq!(arg(n, "stall_2"), Str("wait".into()));
                assert_eq!(arg(n, "stall_2_percent"), F64(5.26));
                assert!(n.args.iter().all(|(k, _)| k != "stall_3"));
                assert_eq!(arg(n, "hottest_line"), Str("pc_stalls.cu:56".into()));
                assert_eq!(arg(n, "hottest_line_percent"), F64(95.79));
                assert_eq!(arg(n, "hottest_line_stall"), Str("long_scoreboard".into()));
                assert_eq!(&*n.name, "long_scoreboard 94.7%");
                assert_eq!(&*n.track, NOTE_TRACK);
                assert_eq!((n.stream, n.end_ns - n.start_ns), (3, 50));
            }
        }
    }

    #[test]
    fn csv_and_folded_outputs() {
        let rows = vec![
            Row {
                kernel: "k<1, 2>(float*)".into(),
                region: "r;1".into(),
                function: "_Z1kILi1ELi2EEvPf".into(),
                pc_offset: 0x6f0,
                file: "/a/b.cu".into(),
                line: 56,
                reason: "long_scoreboard".into(),
                samples: 10,
                not_issued: 9,
                correlation: 0,
                inlined_at: vec![("/a/inl.h".into(), 9), ("/a/b.cu".into(), 70)],
            },
            Row {
                kernel: "k<1, 2>(float*)".into(),
                region: "r;1".into(),
                function: "_Z1kILi1ELi2EEvPf".into(),
                pc_offset: 0x700,
                file: "/a/b.cu".into(),
                line: 56,
                reason: "long_scoreboard".into(),
                samples: 5,
                not_issued: 0,
                correlation: 0,
                inlined_at: vec![("/a/inl.h".into(), 9), ("/a/b.cu".into(), 70)],
            },
            Row {
                kernel: "f".into(),
                region: "(no region)".into(),
                function: "f".into(),
                pc_offset: 0x10,
                file: String::new(),
                line: 0,
                reason: "wait".into(),
                samples: 3,
                not_issued: 1,
                correlation: 0,
                inlined_at: Vec::new(),
            },
        ];
        let c = csv(&rows);
        let mut lines = c.lines();
        assert_eq!(
            lines.next(),
            Some("kernel,region,function,pc_offset,file,line,stall_reason,samples,not_issued,inlined_at")
        );
        assert_eq!(
            lines.next(),
            Some("\"k<1, 2>(float*)\",r;1,_Z1kILi1ELi2EEvPf,0x6f0,/a/b.cu,56,long_scoreboard,10,9,\"/a/inl.h:9, /a/b.cu:70\"")
        );
        assert_eq!(lines.nth(1), Some("f,(no region),f,0x10,,,wait,3,1,"));
        let fo = folded(&rows);
        assert_eq!(
            fo,
            "r:1;k<1, 2>(float*);b.cu:56 (inlined at inl.h:9, b.cu:70);long_scoreboard 15\n(no region);f;f+0x10;wait 3\n"
        );
    }

    #[test]
    fn the_component_reads_nan_when_sampling_is_off() {
        use metron::Component;
        let mut c = GpuPcSampling::default();
        c.start();
        c.stop();
        assert!(c.value().is_nan());
        let mut out = [0.0];
        c.write_fields(&mut out);
        assert!(out[0].is_nan());
        assert_eq!(GpuPcSampling::FIELDS[0].name, "sampled_launches");
    }

    #[test]
    fn outputs_join_the_summary_files() {
        let dir = std::env::temp_dir().join(format!("metron-pcs-out-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("summary.txt"), "Regions\n").unwrap();
        std::fs::write(dir.join("summary.json"), "{\"schema\": 1}\n").unwrap();
        let row = |region: &str, reason: &str, n: u64| Row {
            kernel: "chase(unsigned int const*, unsigned int*, int)".into(),
            region: region.into(),
            function: "_Z5chasePKjPji".into(),
            pc_offset: 0x1d0,
            file: "/w/pc_stalls.cu".into(),
            line: 43,
            reason: reason.into(),
            samples: n,
            not_issued: n / 2,
            correlation: 0,
            inlined_at: Vec::new(),
        };
        let rows = vec![
            row("memory", "long_scoreboard", 996),
            row("memory", "wait", 4),
            row("memory_short", "long_scoreboard", 250),
        ];
        let files = write_outputs(&dir, Mode::Continuous, &rows, 1).unwrap();
        assert_eq!(files.len(), 2);
        let txt = std::fs::read_to_string(dir.join("summary.txt")).unwrap();
        assert!(txt.starts_with("Regions\n\nGPU stall reasons (PC sampling)\n  1 function(s) without line information"), "{txt}");
        assert!(txt.contains("    memory  1000 samples\n      stalls: long_scoreboard 99.6%, wait 0.4%\n      100.0%  chase(unsigned int const*, unsigned int*, int) pc_stalls.cu:43  (long_scoreboard)"), "{txt}");
        let v: Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap())
                .unwrap();
        assert_eq!(v["schema"], 1);
        assert_eq!(v["gpu_pc_sampling"]["mode"], "continuous");
        assert_eq!(v["gpu_pc_sampling"]["by_kernel"][0]["samples"], 1250);
        assert_eq!(v["gpu_pc_sampling"]["by_region"][1]["name"], "memory_short");
        assert_eq!(
            v["gpu_pc_sampling"]["by_region"][0]["stall_reasons"][0]["percent"],
            99.6
        );
        assert_eq!(
            v["gpu_pc_sampling"]["by_kernel"][0]["top_lines"][0]["dominant_stall"],
            "long_scoreboard"
        );
        let csv = std::fs::read_to_string(dir.join("pc_samples.csv")).unwrap();
        assert_eq!(csv.lines().count(), 4);
        let folded = std::fs::read_to_string(dir.join("gpu_stalls.folded")).unwrap();
        assert!(folded.contains("memory_short;chase(unsigned int const*, unsigned int*, int);pc_stalls.cu:43;long_scoreboard 250\n"), "{folded}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn reason_names() {
        assert_eq!(
            short_reason("smsp__pcsamp_warps_issue_stalled_long_scoreboard"),
            "long_scoreboard"
        );
        assert!(is_plain_reason("smsp__pcsamp_warps_issue_stalled_wait"));
        assert!(!is_plain_reason(
            "smsp__pcsamp_warps_issue_stalled_wait_not_issued"
        ));
        assert!(!is_plain_reason("smsp__pcsamp_sample_count"));
    }
}
