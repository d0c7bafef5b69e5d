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
use metron::sinks::gpu_pc_samples::no_line_note;

mod attribute;
mod collect;
mod outputs;
mod table;
pub use attribute::*;
pub use collect::*;
pub use metron::sinks::gpu_pc_samples::{
    breakdowns, breakdowns_json, csv, folded, notes, summary_text, Breakdown, Row, NOTE_TRACK,
};
use metron_symbols::cubin::CubinLines;
pub use outputs::*;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::ffi::{c_void, CString};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};
pub use table::*;

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
