//! A Metron run folder in the output formats of the GPU profilers Metron's design started from
//! (CodeXL / the Radeon Compute Profiler), for the scripts and tools written against them:
//!
//! - [`Format::Atp`], `session.atp`: the application trace: a `key=value` header, then per
//!   API family (`cuda` — Metron's extension —, `hsa`, `hip`) the API Trace and Timestamp
//!   sections per thread and the Kernel Timestamp section, the Stack Trace (source code)
//!   section of the region backtraces, and the Perfmarker section of the regions;
//! - [`Format::Occupancy`], `session.occupancy`: one row per kernel with the inputs of the
//!   occupancy computation and the occupancy, in the reference profiler's columns;
//! - [`Format::ApiLog`], `api.log`: one `TID … START TIME … DURATION …` line per GPU API call.
//!
//! Everything comes from files the run already wrote: `metadata.json`, `kernels.csv` and the
//! Perfetto trace (`trace.pftrace`, decoded by [`trace`]). Nothing is recorded for it, so it
//! costs the run nothing until the end (`METRON_EXPORT`) or until `metron export` runs.
//!
//! Strings that hold whitespace (demangled kernel names, region names) are written between
//! double quotes, with `\"` and `\\` escaped; [`split_fields`] reads such a line back.
//!
//! [`wildcard`] is the name-pattern matcher of `metron whatif --faster` and of the causal
//! profiler's scopes: this crate is the one both depend on.

use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt::Write as _;
use std::io;
use std::path::{Path, PathBuf};

pub mod args;
mod atp;
pub mod occupancy;
pub mod trace;
pub mod wildcard;

pub use atp::atp;
use atp::write_atp;
use trace::Trace;

/// The `.atp` file.
pub const ATP: &str = "session.atp";
/// The occupancy file.
pub const OCCUPANCY: &str = "session.occupancy";
/// The API log.
pub const API_LOG: &str = "api.log";

/// The `TraceFileVersion` of the `.atp` header: the last version of the reference's format.
pub const TRACE_FILE_VERSION: &str = "3.3";

/// One of the formats.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// `session.atp`.
    Atp,
    /// `session.occupancy`.
    Occupancy,
    /// `api.log`.
    ApiLog,
}

impl Format {
    /// Every format, in the order `all` lists them.
    pub const ALL: [Format; 3] = [Format::Atp, Format::Occupancy, Format::ApiLog];

    /// The format named `name` (`atp`, `occupancy`, `apilog`).
    pub fn parse(name: &str) -> Option<Format> {
        match name.trim().to_ascii_lowercase().as_str() {
            "atp" => Some(Format::Atp),
            "occupancy" => Some(Format::Occupancy),
            "apilog" | "api-log" | "api_log" => Some(Format::ApiLog),
            _ => None,
        }
    }

    /// Its name, as [`Format::parse`] takes it.
    pub fn name(self) -> &'static str {
        match self {
            Format::Atp => "atp",
            Format::Occupancy => "occupancy",
            Format::ApiLog => "apilog",
        }
    }

    /// The file it is written to in the run folder.
    pub fn file_name(self) -> &'static str {
        match self {
            Format::Atp => ATP,
            Format::Occupancy => OCCUPANCY,
            Format::ApiLog => API_LOG,
        }
    }
}

/// A comma-separated list of formats (`atp,occupancy,apilog`, `all`; `off`, `none` or empty:
/// none), or why it is not one.
pub fn parse_list(list: &str) -> Result<Vec<Format>, String> {
    let mut out = Vec::new();
    for name in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        match name.to_ascii_lowercase().as_str() {
            "off" | "none" | "false" | "0" => {}
            "all" => out.extend(Format::ALL),
            _ => out.push(Format::parse(name).ok_or_else(|| {
                format!("unknown export format {name:?}: the formats are atp, occupancy, apilog (or all, off)")
            })?),
        }
    }
    out.dedup();
    Ok(out)
}

/// Which files of a run folder [`Run::read_only`] reads beside `metadata.json`.
#[derive(Clone, Copy, Debug)]
pub struct Parts {
    /// `kernels.csv` ([`Run::kernels`]).
    pub kernels: bool,
    /// The trace ([`Run::trace`]).
    pub trace: bool,
    /// `summary.json`'s call sites ([`Run::sites`]).
    pub sites: bool,
}

impl Parts {
    /// Every part.
    pub const ALL: Parts = Parts {
        kernels: true,
        trace: true,
        sites: true,
    };
    /// The trace alone (what a reader of the timeline needs).
    pub const TRACE: Parts = Parts {
        kernels: false,
        trace: true,
        sites: false,
    };
}

/// What the exporters read from a run folder.
pub struct Run {
    /// `metadata.json` (`Null` when missing).
    pub metadata: Value,
    /// The rows of `kernels.csv` (empty when the run had no kernels), column name → text.
    pub kernels: Vec<BTreeMap<String, String>>,
    /// The decoded trace (empty when the run wrote none).
    pub trace: Trace,
    /// Region name → its call sites `(file, line)` from `summary.json` (where the run wrote
    /// one), for the Stack Trace section.
    pub sites: HashMap<String, BTreeSet<(String, u64)>>,
}

impl Run {
    /// Reads the run folder `dir`.
    pub fn read(dir: &Path) -> io::Result<Run> {
        Run::read_parts(dir, true)
    }

    /// Reads the run folder `dir`; the trace only when `with_trace` (the occupancy file
    /// needs `metadata.json` and `kernels.csv` only).
    pub fn read_parts(dir: &Path, with_trace: bool) -> io::Result<Run> {
        Run::read_only(
            dir,
            Parts {
                trace: with_trace,
                ..Parts::ALL
            },
        )
    }

    /// Reads `metadata.json` and the parts of the run folder `dir` that `parts` names (the
    /// others are left empty: a reader of the trace alone does not hold a row of `kernels.csv`
    /// per kernel beside it).
    pub fn read_only(dir: &Path, parts: Parts) -> io::Result<Run> {
        let metadata_path = dir.join("metadata.json");
        let metadata: Value = match std::fs::read(&metadata_path) {
            Ok(b) => serde_json::from_slice(&b).map_err(|e| {
                io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("{}: {e}", metadata_path.display()),
                )
            })?,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                if !dir.is_dir() {
                    return Err(io::Error::new(
                        io::ErrorKind::NotFound,
                        format!("{} is not a folder", dir.display()),
                    ));
                }
                Value::Null
            }
            Err(e) => return Err(e),
        };
        let kernels = match std::fs::read_to_string(dir.join("kernels.csv")) {
            Ok(_) if !parts.kernels => Vec::new(),
            Ok(t) => read_csv(&t),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(e),
        };
        let trace_name = setting(&metadata, "METRON_TRACE_FILE").unwrap_or("trace.pftrace");
        let trace = match std::fs::File::open(dir.join(trace_name)) {
            Ok(_) if !parts.trace => Trace::default(),
            Ok(f) => trace::decode_from(f).map_err(|e| {
                io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("{}: {e}", dir.join(trace_name).display()),
                )
            })?,
            Err(e) if e.kind() == io::ErrorKind::NotFound => Trace::default(),
            Err(e) => return Err(e),
        };
        if metadata.is_null()
            && kernels.is_empty()
            && !dir.join("kernels.csv").is_file()
            && trace.tracks.is_empty()
            && !dir.join(trace_name).is_file()
        {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!(
                    "{} holds none of metadata.json, kernels.csv, {trace_name}: not a Metron run folder",
                    dir.display()
                ),
            ));
        }
        let mut sites = HashMap::new();
        let summary = if parts.sites {
            std::fs::read(dir.join("summary.json")).ok()
        } else {
            None
        };
        if let Some(b) = summary {
            if let Ok(summary) = serde_json::from_slice::<Value>(&b) {
                collect_sites(&summary, &mut sites);
            }
        }
        Ok(Run {
            metadata,
            kernels,
            trace,
            sites,
        })
    }

    /// The GPU API calls of the trace.
    pub fn api_calls(&self) -> Vec<ApiCall> {
        let mut out = Vec::new();
        for (uuid, track) in &self.trace.tracks {
            let Some((family, kind, tid)) = api_track(&track.name) else {
                continue;
            };
            for s in self.trace.slices.iter().filter(|s| s.track == *uuid) {
                out.push(ApiCall {
                    family,
                    kind,
                    tid,
                    name: s.name.to_string(),
                    start_ns: s.start_ns,
                    end_ns: s.end_ns.unwrap_or(s.start_ns),
                    status: s.args.get("status").and_then(|a| a.as_u64()).unwrap_or(0),
                    correlation: s.args.get("correlation_id").and_then(|a| a.as_u64()),
                });
            }
        }
        out.sort_by_key(|c| (c.start_ns, std::cmp::Reverse(c.end_ns), c.tid));
        out
    }

    /// Correlation ids of the device work (kernels, copies, sets) of the trace.
    fn device_correlations(&self) -> std::collections::HashSet<u64> {
        let gpu: std::collections::HashSet<u64> = self
            .trace
            .tracks
            .iter()
            .filter(|(_, t)| t.name.starts_with("GPU ") && t.thread.is_none())
            .map(|(u, _)| *u)
            .collect();
        self.trace
            .slices
            .iter()
            .filter(|s| gpu.contains(&s.track))
            .filter_map(|s| s.args.get("correlation_id").and_then(|a| a.as_u64()))
            .collect()
    }

    /// The API family of the run's kernels: `hsa` for the AMD backends, else `cuda`.
    pub fn kernel_family(&self) -> &'static str {
        let backend = self.metadata["gpu"]["backend"].as_str().unwrap_or("");
        if backend == "hsa" || backend.starts_with("rocprofiler") {
            return "hsa";
        }
        let calls = self.api_calls();
        if !calls.iter().any(|c| c.family == "cuda") && calls.iter().any(|c| c.family != "cuda") {
            "hsa"
        } else {
            "cuda"
        }
    }

    fn device_name(&self, index: u64) -> Option<String> {
        self.metadata["gpu"]["devices"]
            .as_array()?
            .iter()
            .find(|d| d["index"].as_u64() == Some(index))
            .and_then(|d| d["name"].as_str())
            .map(str::to_string)
    }

    /// The limits of device `index` as the NVIDIA backend wrote them
    /// (`metadata.json` `gpu.devices[i].limits`).
    fn device_limits(&self, index: u64) -> Option<DeviceLimits> {
        let l = self.metadata["gpu"]["devices"]
            .as_array()?
            .iter()
            .find(|d| d["index"].as_u64() == Some(index))?
            .get("limits")?;
        let int = |k: &str| l[k].as_i64();
        Some(DeviceLimits {
            threads_per_sm: int("threads_per_sm")?,
            blocks_per_sm: int("blocks_per_sm")?,
            registers_per_sm: int("registers_per_sm")?,
            shared_per_sm: int("shared_per_sm")?,
            reserved_shared_per_block: int("reserved_shared_per_block").unwrap_or(0),
            sm_count: int("sm_count"),
            max_threads_per_block: int("max_threads_per_block"),
            compute_capability: l["compute_capability"].as_str().map(str::to_string),
        })
    }
}

/// A device's limits from `metadata.json` (the NVIDIA backend's `Limits` and a few more).
#[derive(Clone, Debug, PartialEq)]
pub struct DeviceLimits {
    /// Max resident threads per SM.
    pub threads_per_sm: i64,
    /// Max resident blocks per SM.
    pub blocks_per_sm: i64,
    /// 32-bit registers per SM.
    pub registers_per_sm: i64,
    /// Shared memory per SM, bytes.
    pub shared_per_sm: i64,
    /// Shared memory the driver reserves per block, bytes.
    pub reserved_shared_per_block: i64,
    /// SMs.
    pub sm_count: Option<i64>,
    /// Max threads per block.
    pub max_threads_per_block: Option<i64>,
    /// `major.minor`.
    pub compute_capability: Option<String>,
}

/// The warps per SM each limit allows a launch, as the occupancy file's limited-wave columns
/// give them: blocks that fit by that limit (and by the threads per SM) times warps per block.
/// The arithmetic is [`occupancy::block_limits`], from which the NVIDIA backend computes
/// `KernelOccupancy`, so `min(registers, shared, blocks) / max_warps` is the occupancy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LimitedWaves {
    /// Max resident warps per SM.
    pub max_warps: i64,
    /// Warps per block.
    pub warps_per_block: i64,
    /// Limited by registers ("Nbr VGPR-limited waves").
    pub registers: i64,
    /// Limited by shared memory ("Nbr LDS-limited waves").
    pub shared: i64,
    /// Limited by the blocks per SM ("Nbr of WG-limited waves").
    pub blocks: i64,
}

/// The limited waves of a launch of `block_threads` threads, `registers` per thread and
/// `shared_per_block` bytes of shared memory on a device with limits `l` (`None` without
/// threads).
pub fn limited_waves(
    l: &DeviceLimits,
    block_threads: i64,
    registers: i64,
    shared_per_block: i64,
) -> Option<LimitedWaves> {
    let sm = occupancy::SmLimits {
        threads_per_sm: l.threads_per_sm,
        blocks_per_sm: l.blocks_per_sm,
        registers_per_sm: l.registers_per_sm,
        shared_per_sm: l.shared_per_sm,
        reserved_shared_per_block: l.reserved_shared_per_block,
    };
    let b = occupancy::block_limits(&sm, block_threads, registers, shared_per_block)?;
    let waves = |blocks: i64| blocks.min(b.by_threads).max(0) * b.warps_per_block;
    Some(LimitedWaves {
        max_warps: b.max_warps,
        warps_per_block: b.warps_per_block,
        registers: waves(b.by_registers),
        shared: waves(b.by_shared),
        blocks: waves(b.by_blocks),
    })
}

/// Every `{"name", "file", "line"}` object of `summary.json` (the region nodes), with a line.
fn collect_sites(v: &Value, out: &mut HashMap<String, BTreeSet<(String, u64)>>) {
    match v {
        Value::Object(m) => {
            if let (Some(name), Some(file), Some(line)) = (
                m.get("name").and_then(Value::as_str),
                m.get("file").and_then(Value::as_str),
                m.get("line").and_then(Value::as_u64),
            ) {
                if line > 0 && !file.is_empty() {
                    out.entry(name.to_string())
                        .or_default()
                        .insert((file.to_string(), line));
                }
            }
            for x in m.values() {
                collect_sites(x, out);
            }
        }
        Value::Array(a) => {
            for x in a {
                collect_sites(x, out);
            }
        }
        _ => {}
    }
}

/// One GPU API call (a slice of a `CUDA runtime API tid N`, `CUDA driver API tid N`,
/// `HSA API tid N` or `HIP API tid N` track).
#[derive(Clone, Debug)]
pub struct ApiCall {
    /// `cuda`, `hsa` or `hip`.
    pub family: &'static str,
    /// 0: runtime (or the family's only API), 1: CUDA driver API.
    pub kind: u32,
    /// The calling thread.
    pub tid: u32,
    /// The API's name.
    pub name: String,
    /// Start, ns.
    pub start_ns: u64,
    /// End, ns.
    pub end_ns: u64,
    /// Its return code.
    pub status: u64,
    /// Its correlation id (the same on the device work it launched).
    pub correlation: Option<u64>,
}

impl ApiCall {
    /// The return value as the API names it (`cudaSuccess`, `CUDA_SUCCESS`,
    /// `HSA_STATUS_SUCCESS`, `hipSuccess`), or the number.
    pub fn return_value(&self) -> String {
        match (self.status, self.family, self.kind) {
            (0, "cuda", 0) => "cudaSuccess".into(),
            (0, "cuda", _) => "CUDA_SUCCESS".into(),
            (0, "hsa", _) => "HSA_STATUS_SUCCESS".into(),
            (0, "hip", _) => "hipSuccess".into(),
            (n, _, _) => n.to_string(),
        }
    }
}

/// `(family, kind, tid)` of an API track's name.
fn api_track(name: &str) -> Option<(&'static str, u32, u32)> {
    let (prefix, tid) = name.rsplit_once(" API tid ")?;
    let tid = tid.parse().ok()?;
    match prefix {
        "CUDA runtime" => Some(("cuda", 0, tid)),
        "CUDA driver" => Some(("cuda", 1, tid)),
        "HSA" => Some(("hsa", 0, tid)),
        "HIP" => Some(("hip", 0, tid)),
        _ => None,
    }
}

/// The value of setting `name` in `metadata.json`'s `settings`.
fn setting<'a>(metadata: &'a Value, name: &str) -> Option<&'a str> {
    metadata["settings"]
        .as_array()?
        .iter()
        .find(|s| s["name"] == name)
        .and_then(|s| s["value"].as_str())
}

/// The rows of a CSV text with `#` comment lines and a header line.
pub fn read_csv(text: &str) -> Vec<BTreeMap<String, String>> {
    let mut lines = text.lines().filter(|l| !l.starts_with('#'));
    let Some(header) = lines.next() else {
        return Vec::new();
    };
    let header = csv_fields(header);
    lines
        .filter(|l| !l.is_empty())
        .map(|l| header.iter().cloned().zip(csv_fields(l)).collect())
        .collect()
}

/// The fields of one CSV line (`"` quotes, `""` inside them).
pub fn csv_fields(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' if quoted && chars.peek() == Some(&'"') => {
                cur.push('"');
                chars.next();
            }
            '"' => quoted = !quoted,
            ',' if !quoted => out.push(std::mem::take(&mut cur)),
            c => cur.push(c),
        }
    }
    out.push(cur);
    out
}

fn csv_quote(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// A string field of the `.atp` file: bare when it is a non-empty run of non-space
/// characters without quotes, else quoted.
pub fn field(s: &str) -> String {
    if !s.is_empty() && !s.contains(|c: char| c.is_whitespace() || c == '"' || c == '\\') {
        return s.to_string();
    }
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The fields of an `.atp` line: separated by whitespace, strings possibly quoted
/// ([`field`]).
pub fn split_fields(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut chars = line.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        let Some(&first) = chars.peek() else {
            return out;
        };
        let mut cur = String::new();
        if first == '"' {
            chars.next();
            while let Some(c) = chars.next() {
                match c {
                    '\\' => match chars.next() {
                        Some('n') => cur.push('\n'),
                        Some(c) => cur.push(c),
                        None => {}
                    },
                    '"' => break,
                    c => cur.push(c),
                }
            }
        } else {
            while let Some(&c) = chars.peek() {
                if c.is_whitespace() {
                    break;
                }
                cur.push(c);
                chars.next();
            }
        }
        out.push(cur);
    }
}

/// The application and its arguments, from `metadata.json`.
fn application(run: &Run) -> (String, String) {
    let argv: Vec<String> = run.metadata["run"]["argv"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default();
    let app = argv
        .first()
        .cloned()
        .or_else(|| run.metadata["run"]["exe"].as_str().map(String::from))
        .unwrap_or_default();
    (
        app,
        argv.iter().skip(1).cloned().collect::<Vec<_>>().join(" "),
    )
}

fn version(run: &Run) -> String {
    run.metadata["metron_version"]
        .as_str()
        .unwrap_or(env!("CARGO_PKG_VERSION"))
        .to_string()
}

/// The header lines shared by the `.atp` (bare) and `.occupancy` (`# `) files.
fn header(run: &Run, out: &mut Out<'_>, prefix: &str) {
    let (app, args) = application(run);
    let _ = writeln!(out, "{prefix}ProfilerVersion=Metron {}", version(run));
    let _ = writeln!(out, "{prefix}Application={app}");
    let _ = writeln!(out, "{prefix}ApplicationArgs={args}");
    if let Some(pid) = run.metadata["run"]["pid"].as_u64() {
        let _ = writeln!(out, "{prefix}ProcessID={pid}");
    }
    if let Some(host) = run.metadata["run"]["hostname"].as_str() {
        let _ = writeln!(out, "{prefix}Host={host}");
    }
    let _ = writeln!(out, "{prefix}OS Version={}", std::env::consts::OS);
}

/// A kernel row of `kernels.csv`, with the name and device split.
struct Kernel<'a> {
    row: &'a BTreeMap<String, String>,
    name: String,
    device_name: String,
    device: u64,
}

impl Kernel<'_> {
    fn get(&self, column: &str) -> &str {
        self.row.get(column).map_or("", String::as_str)
    }
    fn num(&self, column: &str) -> u64 {
        self.get(column).trim().parse().unwrap_or(0)
    }
    /// The product of a `{x,y,z}` column.
    fn size(&self, column: &str) -> u64 {
        self.get(column)
            .trim_matches(|c| c == '{' || c == '}')
            .split(',')
            .map(|v| v.trim().parse::<u64>().unwrap_or(0))
            .product()
    }
}

fn kernels(run: &Run) -> Vec<Kernel<'_>> {
    run.kernels
        .iter()
        .map(|row| {
            let device: u64 = row.get("Device").and_then(|d| d.parse().ok()).unwrap_or(0);
            let method = row.get("Method").cloned().unwrap_or_default();
            let known = run.device_name(device);
            let (name, device_name) = match &known {
                Some(d) if method.ends_with(&format!(" [{d}]")) => {
                    (method[..method.len() - d.len() - 3].to_string(), d.clone())
                }
                _ => match method.rsplit_once(" [") {
                    Some((n, d)) if d.ends_with(']') => {
                        (n.to_string(), d.trim_end_matches(']').to_string())
                    }
                    _ => (method.clone(), known.unwrap_or_default()),
                },
            };
            Kernel {
                row,
                name,
                device_name,
                device,
            }
        })
        .collect()
}

/// The columns of the occupancy file, named as the reference profiler named them.
pub const OCCUPANCY_COLUMNS: [&str; 26] = [
    "Thread ID",
    "Kernel Name",
    "Device Name",
    "Number of compute units",
    "Max. number of wavefronts per CU",
    "Max. number of work-group per CU",
    "Max. number of VGPR",
    "Max. number of SGPR",
    "Max. amount of LDS",
    "Number of VGPR used",
    "Number of SGPR used",
    "Amount of LDS used",
    "Size of wavefront",
    "Work-group size",
    "Wavefronts per work-group",
    "Max work-group size",
    "Max wavefronts per work-group",
    "Global work size",
    "Maximum global work size",
    "Nbr VGPR-limited waves",
    "Nbr SGPR-limited waves",
    "Nbr LDS-limited waves",
    "Nbr of WG-limited waves",
    "Kernel occupancy",
    "Graphics IP Version",
    "Number of SIMDs per CU",
];

/// The `.occupancy` text of `run`.
pub fn occupancy(run: &Run) -> String {
    let mut out = Out::new(None);
    write_occupancy(run, &mut out);
    out.buf
}

fn write_occupancy(run: &Run, out: &mut Out<'_>) {
    header(run, out, "# ");
    let cuda = run.kernel_family() == "cuda";
    let _ = writeln!(
        out,
        "# Metron: from kernels.csv. On NVIDIA a wavefront is a warp (32 threads), VGPRs are registers per thread and LDS is shared memory per block (static + dynamic, bytes); on AMD the wavefront size is not recorded. Kernel occupancy is the theoretical occupancy in percent. Device limits are per SM, from metadata.json (NVIDIA); a limited-wave count is the warps per SM that limit (and the threads per SM) allows, so the smallest over max wavefronts per CU is the occupancy. Empty cells: not recorded by the run."
    );
    let _ = writeln!(out, "{}", OCCUPANCY_COLUMNS.join(","));
    for k in kernels(run) {
        let wg = k.size("WorkGroupSize");
        let wave = if cuda { Some(32u64) } else { None };
        let mut cells: HashMap<&str, String> = HashMap::new();
        cells.insert("Thread ID", k.get("ThreadID").to_string());
        cells.insert("Kernel Name", csv_quote(&k.name));
        cells.insert("Device Name", csv_quote(&k.device_name));
        cells.insert("Number of VGPR used", k.get("VGPRs").to_string());
        cells.insert("Number of SGPR used", k.get("SGPRs").to_string());
        cells.insert("Amount of LDS used", k.get("LocalMemSize").to_string());
        if let Some(w) = wave {
            cells.insert("Size of wavefront", w.to_string());
            cells.insert("Wavefronts per work-group", wg.div_ceil(w).to_string());
        }
        cells.insert("Work-group size", wg.to_string());
        cells.insert("Global work size", k.size("GlobalWorkSize").to_string());
        cells.insert("Kernel occupancy", k.get("KernelOccupancy").to_string());
        if let Some(l) = run.device_limits(k.device).filter(|_| cuda) {
            let opt = |v: Option<i64>| v.map_or(String::new(), |v| v.to_string());
            cells.insert("Number of compute units", opt(l.sm_count));
            cells.insert(
                "Max. number of wavefronts per CU",
                (l.threads_per_sm / 32).to_string(),
            );
            cells.insert(
                "Max. number of work-group per CU",
                l.blocks_per_sm.to_string(),
            );
            cells.insert("Max. number of VGPR", l.registers_per_sm.to_string());
            cells.insert("Max. amount of LDS", l.shared_per_sm.to_string());
            cells.insert("Max work-group size", opt(l.max_threads_per_block));
            cells.insert(
                "Max wavefronts per work-group",
                opt(l.max_threads_per_block.map(|t| (t + 31) / 32)),
            );
            cells.insert(
                "Graphics IP Version",
                l.compute_capability.clone().unwrap_or_default(),
            );
            if let Some(w) = limited_waves(
                &l,
                wg as i64,
                k.num("VGPRs") as i64,
                k.num("LocalMemSize") as i64,
            ) {
                cells.insert("Nbr VGPR-limited waves", w.registers.to_string());
                cells.insert("Nbr LDS-limited waves", w.shared.to_string());
                cells.insert("Nbr of WG-limited waves", w.blocks.to_string());
            }
        }
        let row: Vec<String> = OCCUPANCY_COLUMNS
            .iter()
            .map(|c| cells.remove(c).unwrap_or_default())
            .collect();
        let _ = writeln!(out, "{}", row.join(","));
    }
}

/// Converts `CLOCK_MONOTONIC` ns to the run's tick counter (`metadata.json`'s `clock`: the
/// reference tick and ns pair and the initial ns per tick); ns when the run has none.
pub fn ticks_of(metadata: &Value, ns: u64) -> u64 {
    let c = &metadata["clock"];
    match (
        c["reference_ticks"].as_u64(),
        c["reference_monotonic_ns"].as_u64(),
        c["initial_ns_per_tick"].as_f64(),
    ) {
        (Some(t0), Some(ns0), Some(per)) if per > 0.0 => {
            let d = (ns as f64 - ns0 as f64) / per;
            (t0 as f64 + d).round().max(0.0) as u64
        }
        _ => ns,
    }
}

/// The API log text of `run`: one line per GPU API call, by start time.
pub fn api_log(run: &Run) -> String {
    let mut out = Out::new(None);
    write_api_log(run, &mut out);
    out.buf
}

fn write_api_log(run: &Run, out: &mut Out<'_>) {
    let work = run.device_correlations();
    for c in run.api_calls() {
        let _ = write!(
            out,
            "TID {:>8}    START TIME 0x{:016x}    DURATION 0x{:016x}    ",
            c.tid,
            ticks_of(&run.metadata, c.start_ns),
            (c.end_ns - c.start_ns) / 1000
        );
        if let Some(id) = c.correlation.filter(|id| work.contains(id)) {
            let _ = write!(out, "CMD ID {id}    ");
        }
        let _ = writeln!(out, "{}() = {}", c.name, c.return_value());
    }
}

/// Writes `format` of the run folder `dir` to `out` (default: its file in `dir`).
pub fn export(dir: &Path, format: Format, out: Option<&Path>) -> io::Result<PathBuf> {
    let run = Run::read_parts(dir, format != Format::Occupancy)?;
    write_one(&run, dir, format, out)
}

fn write_one(run: &Run, dir: &Path, format: Format, out: Option<&Path>) -> io::Result<PathBuf> {
    let path = out.map_or_else(|| dir.join(format.file_name()), Path::to_path_buf);
    let mut file = io::BufWriter::new(std::fs::File::create(&path)?);
    let mut o = Out::new(Some(&mut file));
    match format {
        Format::Atp => write_atp(run, &mut o),
        Format::Occupancy => write_occupancy(run, &mut o),
        Format::ApiLog => write_api_log(run, &mut o),
    }
    o.finish()?;
    io::Write::flush(&mut file)?;
    Ok(path)
}

/// Where the writers write: a `String`, or a file it is moved into every MiB (so a large
/// export never holds the whole text); the first I/O error is kept for [`Out::finish`].
struct Out<'a> {
    buf: String,
    to: Option<&'a mut dyn io::Write>,
    err: Option<io::Error>,
}

impl<'a> Out<'a> {
    fn new(to: Option<&'a mut dyn io::Write>) -> Out<'a> {
        Out {
            buf: String::new(),
            to,
            err: None,
        }
    }

    fn spill(&mut self) {
        if let Some(w) = self.to.as_mut() {
            if self.err.is_none() {
                if let Err(e) = w.write_all(self.buf.as_bytes()) {
                    self.err = Some(e);
                }
            }
            self.buf.clear();
        }
    }

    fn finish(mut self) -> io::Result<()> {
        self.spill();
        self.err.map_or(Ok(()), Err)
    }
}

impl std::fmt::Write for Out<'_> {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.buf.push_str(s);
        if self.buf.len() >= 1 << 20 {
            self.spill();
        }
        Ok(())
    }
}

/// Writes each of `formats` into the run folder `dir` (reading the folder once).
pub fn write_formats(dir: &Path, formats: &[Format]) -> io::Result<Vec<PathBuf>> {
    if formats.is_empty() {
        return Ok(Vec::new());
    }
    let run = Run::read_parts(dir, formats.iter().any(|f| *f != Format::Occupancy))?;
    formats
        .iter()
        .map(|f| write_one(&run, dir, *f, None))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limited_waves_follow_the_occupancy_arithmetic() {
        // H100: limited waves from the occupancy model (its own test checks it against CUDA's calculator).
        let h100 = DeviceLimits {
            threads_per_sm: 2048,
            blocks_per_sm: 32,
            registers_per_sm: 65536,
            shared_per_sm: 233472,
            reserved_shared_per_block: 1024,
            sm_count: Some(132),
            max_threads_per_block: Some(1024),
            compute_capability: None,
        };
        let w = |t, r, s| {
            let w = limited_waves(&h100, t, r, s).unwrap();
            (w.registers, w.shared, w.blocks, w.max_warps)
        };
        assert_eq!(w(256, 16, 0), (64, 64, 64, 64));
        assert_eq!(w(256, 128, 0), (16, 64, 64, 64));
        assert_eq!(w(256, 16, 100 * 1024), (64, 16, 64, 64));
        // 32 blocks of one warp: the block count limits to 32 of 64.
        assert_eq!(w(32, 0, 0), (64, 64, 32, 64));
        assert_eq!(limited_waves(&h100, 0, 16, 0), None);
    }

    #[test]
    fn quoted_fields_read_back() {
        let line = format!(
            "{} {} 12 {}",
            field("a b(float const*, int)"),
            field("x\"y\\z"),
            field("")
        );
        assert_eq!(
            split_fields(&line),
            vec!["a b(float const*, int)", "x\"y\\z", "12", ""]
        );
    }

    #[test]
    fn format_lists() {
        assert_eq!(
            parse_list("atp, apilog").unwrap(),
            vec![Format::Atp, Format::ApiLog]
        );
        assert_eq!(parse_list("all").unwrap(), Format::ALL.to_vec());
        assert!(parse_list("off").unwrap().is_empty());
        assert!(parse_list("atp,csv")
            .unwrap_err()
            .contains("atp, occupancy, apilog"));
    }

    #[test]
    fn api_tracks() {
        assert_eq!(api_track("CUDA runtime API tid 12"), Some(("cuda", 0, 12)));
        assert_eq!(api_track("HSA API tid 3"), Some(("hsa", 0, 3)));
        assert_eq!(api_track("GPU 0 x stream 7"), None);
    }
}
