//! `kernels.csv`: one row per kernel dispatch, in the columns of the classic GPU profiler
//! output (`Method, ExecutionOrder, ThreadID, GlobalWorkSize, WorkGroupSize, LocalMemSize,
//! VGPRs, SGPRs, ScratchRegs, KernelOccupancy, Time`), then Metron's own columns.
//!
//! On NVIDIA: `Method` is the demangled kernel name with the device name; `LocalMemSize` is
//! shared memory per block (static + dynamic, the LDS equivalent); `VGPRs` is registers per
//! thread; `SGPRs` has no NVIDIA counterpart (empty); `ScratchRegs` is local memory per thread
//! in bytes; `KernelOccupancy` is the theoretical occupancy in percent from the device limits;
//! `Time` is the kernel's duration in ms. Written only when the run had kernels.
//!
//! On AMD: `LocalMemSize` is the dispatch's LDS (group segment) in bytes, `VGPRs` and `SGPRs`
//! come from the kernel descriptor, `ScratchRegs` is the private segment per work-item in
//! bytes, `KernelOccupancy` is empty (no occupancy model), `Stream` is the HSA queue id.
//!
//! GPU counters (`METRON_GPU_METRICS`): the backend declares the metric names
//! ([`set_counter_metrics`]) and gives each profiled kernel its values by correlation id
//! ([`record_kernel_counters`]); each metric becomes one more column, after `EndNs`, empty for
//! a kernel that was not profiled.

use crate::sink::gpu::GpuContext;
use crate::sink::{Event, RunInfo, Sink, ThreadInfo};
use crate::sink::{GpuKind, GpuRecord};
use std::collections::HashMap;
use std::fmt::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

/// GPU counter values per kernel (by correlation id), in the order of `metrics`.
#[derive(Clone, Debug, Default)]
pub struct KernelCounters {
    /// The metric names (one column each): the hardware metrics, then the derived ones.
    pub metrics: Vec<String>,
    /// The derived metrics, `(name, expression)` in the metric layer's language
    /// (`metron_metrics::Expr`); their names are the last entries of `metrics`.
    pub derived: Vec<(String, String)>,
    /// correlation id → one value per metric.
    pub values: HashMap<u32, Vec<f64>>,
    /// correlation id → why the kernels of that launch have no values (they read NaN).
    pub reasons: HashMap<u32, String>,
    /// correlation id → the ranges of a launch that ran several kernels (a CUDA graph): one
    /// `(range name, values)` per kernel, in the order the kernels ran.
    pub ranges: HashMap<u32, Vec<(String, Vec<f64>)>>,
    /// correlation id → the sum over the kernels of a graph launch counted as one range
    /// (kernel mode with a single-pass metric set).
    pub sums: HashMap<u32, Vec<f64>>,
}

/// A kernel's counter values, as resolved for `kernels.csv` and the summary.
#[derive(Clone, Debug, PartialEq)]
pub enum Counted {
    /// One value per metric.
    Values(Vec<f64>),
    /// NaN, and why.
    Nan(String),
    /// The first kernel of a graph launch counted as one range: the sum over the launch's
    /// kernels (how many).
    LaunchSum(Vec<f64>, usize),
    /// Another kernel of such a launch: its counts are in the sum on the launch's first
    /// kernel (the index of that kernel).
    InLaunchSum(usize),
}

impl KernelCounters {
    /// The values of each of `kernels` (in the order the backend delivered them, which for
    /// profiled kernels is the order they ran: kernel replay serializes them), by index.
    /// A launch with several kernels (a graph) gives its ranges to its kernels in order; when
    /// the counts differ its kernels read NaN with the reason. A graph launch counted as one
    /// range puts its sum on its first kernel.
    pub fn resolve(&self, kernels: &[&GpuRecord]) -> HashMap<usize, Counted> {
        let mut out = HashMap::new();
        let mut by_launch: HashMap<u32, Vec<usize>> = HashMap::new();
        let mut summed: HashMap<u32, Vec<usize>> = HashMap::new();
        for (i, r) in kernels.iter().enumerate() {
            if let Some(v) = self.values.get(&r.correlation) {
                out.insert(i, Counted::Values(v.clone()));
            } else if self.sums.contains_key(&r.correlation) {
                summed.entry(r.correlation).or_default().push(i);
            } else if self.ranges.contains_key(&r.correlation) {
                by_launch.entry(r.correlation).or_default().push(i);
            } else if let Some(why) = self.reasons.get(&r.correlation) {
                out.insert(i, Counted::Nan(why.clone()));
            }
        }
        for (corr, idx) in by_launch {
            let ranges = &self.ranges[&corr];
            if ranges.len() == idx.len() {
                for (i, (_, v)) in idx.into_iter().zip(ranges) {
                    out.insert(i, Counted::Values(v.clone()));
                }
            } else {
                let why = format!(
                    "CUPTI returned {} ranges for the {} kernels of this graph launch: they \
                     cannot be matched kernel by kernel",
                    ranges.len(),
                    idx.len()
                );
                for i in idx {
                    out.insert(i, Counted::Nan(why.clone()));
                }
            }
        }
        for (corr, idx) in summed {
            let first = idx[0];
            out.insert(
                first,
                Counted::LaunchSum(self.sums[&corr].clone(), idx.len()),
            );
            for &i in &idx[1..] {
                out.insert(i, Counted::InLaunchSum(first));
            }
        }
        out
    }
}

static COUNTERS: Mutex<Option<KernelCounters>> = Mutex::new(None);
/// Metrics were declared: kernel records are kept until the end, for their counter values.
static DECLARED: AtomicBool = AtomicBool::new(false);

/// True once the backend declared GPU metrics counted per kernel ([`set_counter_metrics`]).
pub fn counters_declared() -> bool {
    DECLARED.load(Ordering::Relaxed)
}

/// Declares the GPU metrics counted per kernel (the extra `kernels.csv` columns): `metrics`
/// ends with the names of `derived`.
pub fn set_counter_metrics(metrics: Vec<String>, derived: Vec<(String, String)>) {
    let mut c = COUNTERS.lock().unwrap_or_else(|e| e.into_inner());
    let c = c.get_or_insert_with(KernelCounters::default);
    DECLARED.store(!metrics.is_empty(), Ordering::Relaxed);
    c.metrics = metrics;
    c.derived = derived;
}

/// The counter values of the kernel launched with `correlation`.
pub fn record_kernel_counters(correlation: u32, values: Vec<f64>) {
    let mut c = COUNTERS.lock().unwrap_or_else(|e| e.into_inner());
    c.get_or_insert_with(KernelCounters::default)
        .values
        .insert(correlation, values);
}

/// The kernels of the launch with `correlation` read NaN, for `reason`.
pub fn record_kernel_nan(correlation: u32, reason: String) {
    let mut c = COUNTERS.lock().unwrap_or_else(|e| e.into_inner());
    c.get_or_insert_with(KernelCounters::default)
        .reasons
        .insert(correlation, reason);
}

/// The sum over the kernels of the graph launch with `correlation`, counted as one range.
pub fn record_launch_sum(correlation: u32, values: Vec<f64>) {
    let mut c = COUNTERS.lock().unwrap_or_else(|e| e.into_inner());
    c.get_or_insert_with(KernelCounters::default)
        .sums
        .insert(correlation, values);
}

/// The ranges of a launch that ran several kernels (a CUDA graph launch): one
/// `(range name, values)` per kernel, in the order they ran.
pub fn record_launch_ranges(correlation: u32, ranges: Vec<(String, Vec<f64>)>) {
    let mut c = COUNTERS.lock().unwrap_or_else(|e| e.into_inner());
    c.get_or_insert_with(KernelCounters::default)
        .ranges
        .insert(correlation, ranges);
}

/// The counters recorded so far (`None` when no metric was declared).
pub fn kernel_counters() -> Option<KernelCounters> {
    COUNTERS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone()
        .filter(|c| !c.metrics.is_empty())
}

/// A counter value as CSV text: integers without a fraction.
pub fn counter_text(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        format!("{v}")
    }
}

/// The `kernels.csv` sink (added when a GPU backend registers). Rows are written as the
/// kernels' records come (each delivery in start order; `ExecutionOrder` counts the rows), so
/// the sink keeps no record. With GPU counters declared ([`set_counter_metrics`]) the kernels
/// are kept to the end instead, where their counter values are resolved launch by launch.
#[derive(Default)]
pub struct KernelsCsvSink {
    /// Kernels kept for their counter values (only with counters declared).
    kernels: Vec<GpuRecord>,
    /// correlation id → host tid of the API call, for the latest [`TID_SLOTS`] calls.
    api_tid: Vec<(u32, u32)>,
    rows: u64,
    /// Device names and the launch → region join (filled by the GPU glue).
    gpu: GpuContext,
    output_dir: PathBuf,
    /// The file being written, once the first row came.
    file: Option<std::io::BufWriter<std::fs::File>>,
    error: Option<String>,
    line: String,
    order: Vec<usize>,
}

/// API calls whose thread the sink remembers (slot `correlation % TID_SLOTS`).
const TID_SLOTS: usize = 1 << 16;

impl KernelsCsvSink {
    /// An empty sink (no device names, no launch regions known).
    pub fn new() -> KernelsCsvSink {
        KernelsCsvSink::default()
    }

    /// An empty sink that names devices and launch regions from `gpu`.
    pub fn with_context(gpu: GpuContext) -> KernelsCsvSink {
        KernelsCsvSink {
            gpu,
            ..KernelsCsvSink::default()
        }
    }

    /// The host thread of the API call with `correlation`, when it was seen.
    fn tid_of(&self, correlation: u32) -> Option<u32> {
        self.api_tid
            .get(correlation as usize % TID_SLOTS)
            .filter(|s| s.0 == correlation && correlation != 0)
            .map(|s| s.1)
    }

    /// Writes the rows of `kernels` (indexes into `records`) now.
    fn stream(&mut self, records: &[GpuRecord]) {
        if self.error.is_some() {
            return;
        }
        if self.file.is_none() {
            let path = self.output_dir.join("kernels.csv");
            match std::fs::File::create(&path) {
                Ok(f) => {
                    let mut file = std::io::BufWriter::with_capacity(1 << 20, f);
                    let exe = std::env::current_exe()
                        .ok()
                        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
                        .unwrap_or_else(|| "unknown".into());
                    self.line.clear();
                    write_header(&mut self.line, &exe, std::process::id(), None);
                    if let Err(e) = std::io::Write::write_all(&mut file, self.line.as_bytes()) {
                        self.error = Some(format!("cannot write {}: {e}", path.display()));
                        return;
                    }
                    self.file = Some(file);
                }
                Err(e) => {
                    self.error = Some(format!("cannot create {}: {e}", path.display()));
                    return;
                }
            }
        }
        let mut order = std::mem::take(&mut self.order);
        order.clear();
        order.extend((0..records.len()).filter(|&i| records[i].kind == GpuKind::Kernel));
        order.sort_by_key(|&i| {
            let r = &records[i];
            (r.start_ns, r.correlation, r.graph_node)
        });
        for &i in &order {
            let r = &records[i];
            let tid = self
                .tid_of(r.correlation)
                .or(self.gpu.region_of(r.correlation).map(|j| j.1));
            let mut line = std::mem::take(&mut self.line);
            line.clear();
            write_row(&mut line, self.rows, r, &self.gpu, tid);
            line.push('\n');
            self.line = line;
            let Some(file) = self.file.as_mut() else {
                break;
            };
            if let Err(e) = std::io::Write::write_all(file, self.line.as_bytes()) {
                self.error = Some(format!("cannot write kernels.csv: {e}"));
                break;
            }
            self.rows += 1;
        }
        self.order = order;
    }
}

/// CSV quoting: always quoted, quotes doubled.
fn quote(s: &str) -> String {
    format!("\"{}\"", s.replace('"', "\"\""))
}

/// The comment lines and the column names.
fn write_header(out: &mut String, exe: &str, pid: u32, counters: Option<&KernelCounters>) {
    let _ = writeln!(out, "# Metron {} kernels.csv", env!("CARGO_PKG_VERSION"));
    let _ = writeln!(out, "# Application: {exe} (pid {pid})");
    let _ = writeln!(
        out,
        "# Time: ms; LocalMemSize: shared memory per block (bytes); VGPRs: registers per thread; \
         SGPRs: scalar registers per wavefront (AMD); ScratchRegs: local memory per thread (bytes); KernelOccupancy: theoretical, percent"
    );
    out.push_str(
        "Method,ExecutionOrder,ThreadID,GlobalWorkSize,WorkGroupSize,LocalMemSize,VGPRs,SGPRs,\
         ScratchRegs,KernelOccupancy,Time,Region,Device,Stream,CorrelationId,StartNs,EndNs,\
         GraphId,GraphNodeId",
    );
    for m in counters.map_or(&[][..], |c| &c.metrics[..]) {
        out.push(',');
        out.push_str(&quote(m));
    }
    if counters.is_some() {
        out.push_str(",CounterNote");
    }
    out.push('\n');
}

/// The row of kernel `r`, number `order`, up to its graph columns (no counters, no newline).
fn write_row(out: &mut String, order: u64, r: &GpuRecord, gpu: &GpuContext, tid: Option<u32>) {
    let joined = gpu.region_of(r.correlation);
    let tid = tid.map_or(String::new(), |t| t.to_string());
    let global = [
        i64::from(r.grid[0]) * i64::from(r.block[0]),
        i64::from(r.grid[1]) * i64::from(r.block[1]),
        i64::from(r.grid[2]) * i64::from(r.block[2]),
    ];
    let _ = write!(
        out,
        "{},{},{},{},{},{},{},{},{},{},{:.6},{},{},{},{},{},{}",
        quote(&format!("{} [{}]", r.name, gpu.device_name(r.device))),
        order,
        tid,
        quote(&format!("{{{},{},{}}}", global[0], global[1], global[2])),
        quote(&format!("{{{},{},{}}}", r.block[0], r.block[1], r.block[2])),
        i64::from(r.static_shared) + i64::from(r.dynamic_shared),
        r.registers,
        if r.scalar_registers == 0 {
            String::new()
        } else {
            r.scalar_registers.to_string()
        },
        r.local_per_thread,
        r.occupancy
            .map_or(String::new(), |o| format!("{:.2}", f64::from(o) * 100.0)),
        r.duration_ns() as f64 / 1e6,
        quote(joined.map_or("", |j| j.0)),
        r.device,
        r.stream,
        r.correlation,
        r.start_ns,
        r.end_ns,
    );
    if r.graph_id != 0 || r.graph_node != 0 {
        let _ = write!(out, ",{},{}", r.graph_id, r.graph_node);
    } else {
        out.push_str(",,");
    }
}

/// The CSV text for `kernels` (with `api_tid` for the launching thread, device names and launch
/// regions from `gpu`).
pub fn render(
    gpu: &GpuContext,
    kernels: &[GpuRecord],
    api_tid: &HashMap<u32, u32>,
    run: &RunInfo,
    counters: Option<&KernelCounters>,
) -> String {
    let delivered: Vec<&GpuRecord> = kernels.iter().collect();
    let counted = counters.map(|c| c.resolve(&delivered)).unwrap_or_default();
    let mut sorted: Vec<(usize, &GpuRecord)> = delivered.iter().copied().enumerate().collect();
    sorted.sort_by_key(|(_, r)| (r.start_ns, r.correlation, r.graph_node));
    let mut out = String::new();
    write_header(&mut out, &run.exe, run.pid, counters);
    for (i, (at, r)) in sorted.into_iter().enumerate() {
        let tid = api_tid
            .get(&r.correlation)
            .copied()
            .or(gpu.region_of(r.correlation).map(|j| j.1));
        write_row(&mut out, i as u64, r, gpu, tid);
        if let Some(c) = counters {
            let cell = counted.get(&at);
            let values = match cell {
                Some(Counted::Values(v)) | Some(Counted::LaunchSum(v, _)) => Some(v),
                _ => None,
            };
            for i in 0..c.metrics.len() {
                out.push(',');
                if let Some(v) = values.and_then(|v| v.get(i)) {
                    out.push_str(&counter_text(*v));
                } else if let Some(Counted::Nan(_)) = cell {
                    out.push_str("nan");
                }
            }
            out.push(',');
            match cell {
                Some(Counted::Nan(why)) => out.push_str(&quote(why)),
                Some(Counted::LaunchSum(_, n)) => out.push_str(&quote(&format!(
                    "sum over the {n} kernels of this CUDA graph launch (CUPTI counts a graph \
                     launch as one range)"
                ))),
                Some(Counted::InLaunchSum(first)) => out.push_str(&quote(&format!(
                    "counted in its graph launch's sum, on the row of CorrelationId {} GraphNodeId {}",
                    delivered[*first].correlation, delivered[*first].graph_node
                ))),
                _ => {}
            }
        }
        out.push('\n');
    }
    out
}

impl Sink for KernelsCsvSink {
    fn name(&self) -> &str {
        "kernels_csv"
    }

    fn empty_regions(&mut self, _thread: &ThreadInfo, _regions: &[crate::sink::EmptyRegion]) {
        // Regions are not this output's.
    }

    fn events(&mut self, _thread: &ThreadInfo, _events: &[Event<'_>]) {}

    fn gpu_records(&mut self, records: &[GpuRecord]) {
        // A sink never told its run folder (made by hand) writes at the end, into the run's.
        let keep = counters_declared() || self.output_dir.as_os_str().is_empty();
        for r in records {
            if let GpuKind::RuntimeApi | GpuKind::DriverApi | GpuKind::HsaApi | GpuKind::HipApi =
                r.kind
            {
                if self.api_tid.is_empty() {
                    self.api_tid.resize(TID_SLOTS, (0, 0));
                }
                let slot = &mut self.api_tid[r.correlation as usize % TID_SLOTS];
                // The first call of a correlation id (a runtime call before its driver calls).
                if slot.0 != r.correlation {
                    *slot = (r.correlation, r.tid);
                }
            }
        }
        if keep {
            self.kernels.extend(
                records
                    .iter()
                    .filter(|r| r.kind == GpuKind::Kernel)
                    .cloned(),
            );
        } else if records.iter().any(|r| r.kind == GpuKind::Kernel) {
            self.stream(records);
        }
    }

    fn writes_while_running(&self) -> bool {
        true
    }

    fn output_dir_changed(&mut self, dir: &std::path::Path) {
        if self.file.is_none() {
            self.output_dir = dir.to_path_buf();
        }
    }

    fn finish(&mut self, run: &RunInfo) -> std::io::Result<Vec<PathBuf>> {
        let path = run.output_dir.join("kernels.csv");
        if let Some(mut file) = self.file.take() {
            // Kept kernels (counters declared after rows were written) follow, without values.
            let kept = std::mem::take(&mut self.kernels);
            if !kept.is_empty() {
                self.file = Some(file);
                self.stream(&kept);
                file = self.file.take().expect("open above");
            }
            std::io::Write::flush(&mut file)?;
            if let Some(e) = self.error.take() {
                return Err(std::io::Error::other(e));
            }
            return Ok(vec![self.output_dir.join("kernels.csv")]);
        }
        if let Some(e) = self.error.take() {
            return Err(std::io::Error::other(e));
        }
        if self.kernels.is_empty() {
            return Ok(Vec::new());
        }
        let api_tid: HashMap<u32, u32> =
            self.api_tid.iter().filter(|s| s.0 != 0).copied().collect();
        std::fs::write(
            &path,
            render(
                &self.gpu,
                &self.kernels,
                &api_tid,
                run,
                kernel_counters().as_ref(),
            ),
        )?;
        self.rows = self.kernels.len() as u64;
        Ok(vec![path])
    }

    fn metadata(&self) -> Option<serde_json::Value> {
        (self.rows > 0).then(|| serde_json::json!({"file": "kernels.csv", "rows": self.rows}))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run_info() -> RunInfo {
        RunInfo {
            output_dir: PathBuf::new(),
            pid: 1,
            exe: "x".into(),
            argv: vec![],
            hostname: "h".into(),
            start_realtime_ns: 0,
            start_ns: 0,
            end_ns: 0,
        }
    }

    /// A graph launch's ranges go to its kernels in the order they were delivered; when the
    /// counts differ, every kernel of that launch reads NaN with the reason.
    #[test]
    fn graph_ranges_go_to_their_kernels_in_order_or_all_nan() {
        let mut ks = Vec::new();
        for (corr, node) in [(7, 1), (7, 2), (8, 1), (7, 3), (8, 2), (9, 0)] {
            let mut k = GpuRecord::new(GpuKind::Kernel, "k".into());
            k.correlation = corr;
            k.graph_node = node;
            ks.push(k);
        }
        let c = KernelCounters {
            metrics: vec!["m".into()],
            ranges: HashMap::from([
                (
                    7,
                    vec![
                        ("0".into(), vec![1.0]),
                        ("1".into(), vec![2.0]),
                        ("2".into(), vec![3.0]),
                    ],
                ),
                (8, vec![("0".into(), vec![5.0])]),
            ]),
            reasons: HashMap::from([(9, "why".to_string())]),
            ..KernelCounters::default()
        };
        let refs: Vec<&GpuRecord> = ks.iter().collect();
        let got = c.resolve(&refs);
        assert_eq!(got[&0], Counted::Values(vec![1.0]));
        assert_eq!(got[&1], Counted::Values(vec![2.0]));
        assert_eq!(got[&3], Counted::Values(vec![3.0]));
        assert!(matches!(&got[&2], Counted::Nan(w) if w.contains("1 ranges for the 2 kernels")));
        assert!(matches!(&got[&4], Counted::Nan(_)));
        assert_eq!(got[&5], Counted::Nan("why".into()));
    }

    /// A graph launch counted as one range: the sum on its first kernel's row, the other rows
    /// empty with a note naming that row; the summary counts the sum once, for all its kernels.
    #[test]
    fn a_graph_launch_sum_is_on_its_first_kernel_and_named_on_the_others() {
        let mut ks = Vec::new();
        for (node, start) in [(11, 100), (12, 200), (13, 300)] {
            let mut k = GpuRecord::new(GpuKind::Kernel, format!("k{node}").into());
            k.correlation = 21;
            k.graph_id = 4;
            k.graph_node = node;
            k.start_ns = start;
            k.end_ns = start + 50;
            ks.push(k);
        }
        let c = KernelCounters {
            metrics: vec!["m".into()],
            sums: HashMap::from([(21, vec![600.0])]),
            ..KernelCounters::default()
        };
        let refs: Vec<&GpuRecord> = ks.iter().collect();
        let got = c.resolve(&refs);
        assert_eq!(got[&0], Counted::LaunchSum(vec![600.0], 3));
        assert_eq!(got[&1], Counted::InLaunchSum(0));
        assert_eq!(got[&2], Counted::InLaunchSum(0));
        let run = run_info();
        let text = render(&GpuContext::default(), &ks, &HashMap::new(), &run, Some(&c));
        let rows: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
        assert_eq!(rows.len(), 4);
        assert!(
            rows[1].contains(",4,11,600,\"sum over the 3 kernels of this CUDA graph launch"),
            "{}",
            rows[1]
        );
        for row in &rows[2..] {
            assert!(
                row.contains(",,\"counted in its graph launch's sum, on the row of CorrelationId 21 GraphNodeId 11\""),
                "{row}"
            );
        }
    }

    #[test]
    fn one_row_per_kernel_in_start_order() {
        let mut a = GpuRecord::new(GpuKind::Kernel, "vec_add(float const*, float*, int)".into());
        a.start_ns = 2_000_000;
        a.end_ns = 3_500_000;
        a.grid = [4, 1, 1];
        a.block = [256, 1, 1];
        a.registers = 16;
        a.static_shared = 1024;
        a.occupancy = Some(0.5);
        a.correlation = 5;
        let mut b = a.clone();
        b.start_ns = 1_000_000;
        b.end_ns = 1_000_500;
        b.correlation = 4;
        let run = run_info();
        let tids = HashMap::from([(5, 77)]);
        let text = render(
            &GpuContext::default(),
            &[a.clone(), b.clone()],
            &tids,
            &run,
            None,
        );
        let rows: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
        assert!(rows[0].starts_with("Method,ExecutionOrder,ThreadID,GlobalWorkSize"));
        assert_eq!(rows.len(), 3);
        assert!(rows[1].contains(",0,,"), "{}", rows[1]);
        assert!(
            rows[2].contains(",1,77,\"{1024,1,1}\",\"{256,1,1}\",1024,16,,0,50.00,1.500000"),
            "{}",
            rows[2]
        );
        let counters = KernelCounters {
            metrics: vec![
                "smsp__inst_executed.sum".into(),
                "dram__bytes_read.sum".into(),
            ],
            derived: Vec::new(),
            values: HashMap::from([(5, vec![9961472.0, 134228992.5])]),
            ..KernelCounters::default()
        };
        let text = render(
            &GpuContext::default(),
            &[a, b],
            &tids,
            &run,
            Some(&counters),
        );
        let rows: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
        assert!(
            rows[0].ends_with(
                ",EndNs,GraphId,GraphNodeId,\"smsp__inst_executed.sum\",\"dram__bytes_read.sum\",CounterNote"
            ),
            "{}",
            rows[0]
        );
        assert!(rows[1].ends_with(",1000500,,,,,"), "{}", rows[1]);
        assert!(
            rows[2].ends_with(",3500000,,,9961472,134228992.5,"),
            "{}",
            rows[2]
        );
    }
}
