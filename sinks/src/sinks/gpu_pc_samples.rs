//! PC sampling's outputs (the NVIDIA backend's `METRON_GPU_PC_SAMPLING`): `pc_samples.csv`,
//! `gpu_stalls.folded`, the "GPU stall reasons" section of `summary.txt` and `gpu_pc_sampling`
//! in `summary.json`, and the trace's `PC sampling` notes. The backend collects the samples
//! and attributes them to kernel, region and source line ([`Row`]s); this module writes them.
//!
//! Stall reasons come in pairs: `X` and `X_not_issued` (a subset of `X`). The rows carry only
//! the plain reasons (the twin as [`Row::not_issued`]), so totals and shares add up to CUPTI's
//! `totalSamples`.

use crate::sink::gpu::GpuNote;
use crate::sink::{GpuKind, GpuRecord};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::PathBuf;

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
pub fn notes(rows: &[Row], kernels: &[GpuRecord]) -> Vec<GpuNote> {
    use crate::sink::gpu::NoteValue::{Str, F64, U64};
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
    for k in kernels.iter().filter(|k| k.kind == GpuKind::Kernel) {
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
        out.push(GpuNote {
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

/// The note for functions without line information (`summary.txt`, `metadata.json`).
pub fn no_line_note(n: usize) -> String {
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
    mode: &str,
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
                "mode": mode,
                "by_kernel": breakdowns_json(&kernels),
                "by_region": breakdowns_json(&regions),
            });
            std::fs::write(&js, serde_json::to_string_pretty(&v)? + "\n")?;
        }
    }
    Ok(files)
}
