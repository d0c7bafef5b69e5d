//! `stacks.folded`: the timer samples in Brendan Gregg's folded-stacks format, one line per
//! distinct stack: `root;outermost;...;innermost count`, inlined frames expanded (each inlined
//! callee is a frame of its own). The input of flame graph tools: inferno
//! (`inferno-flamegraph < stacks.folded > flame.svg`), `flamegraph.pl`, speedscope.
//!
//! Threads are merged, as `stackcollapse-perf.pl` and `py-spy` merge them: the root frame is
//! the program's name, so a program of 200 threads running one function draws one tower, not
//! 200 slivers. Metron's own threads (the flusher) are rooted apart, at `metron:name`, so
//! Metron's work never passes for the program's. With `METRON_SAMPLING_PER_THREAD` the root
//! is the thread, `name-tid` (`main-4711`), as `--tid`/`--threads` give. Function names with `;` (Rust array types,
//! `[u8; 4]`) have it replaced by `,` so the separator stays unambiguous; line breaks become
//! spaces. CPU-time samples go to `stacks.folded`; when the run has only real-time samples
//! they go there instead, and when it has both, the real-time ones go to
//! `stacks.realtime.folded`. Backtraces taken at region starts are not samples and are left
//! out. No samples, no file.
//!
//! Frames of JIT code are named from the process's perf map and jitdump (`metron-symbols`);
//! Python functions (CPython ≥ 3.12 with `PYTHONPERFSUPPORT=1`, which `metron sample` sets)
//! are `py::function (file.py:line)`. What was read is reported under `outputs.stacks.jit`
//! in `metadata.json`, with the `PYTHONPERFSUPPORT` the program ran with.

use super::profile::{Clock, Names, SampleCollector};
use crate::sink::{Event, Present, RunInfo, Sink, ThreadInfo};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;

/// The folded-stacks sink.
#[derive(Default)]
pub struct FoldedSink {
    samples: SampleCollector,
    report: Option<Value>,
}

impl FoldedSink {
    /// An empty sink, threads merged.
    pub fn new() -> FoldedSink {
        FoldedSink::default()
    }

    /// An empty sink; `per_thread`: each stack rooted at its thread rather than at the
    /// program (`METRON_SAMPLING_PER_THREAD`).
    pub fn per_thread(per_thread: bool) -> FoldedSink {
        FoldedSink {
            samples: SampleCollector::new(per_thread),
            report: None,
        }
    }
}

/// One frame name, safe for the format.
fn clean(name: &str) -> String {
    name.replace(';', ",").replace(['\n', '\r'], " ")
}

/// [`clean`], appended to `line` without a string of its own when the name needs nothing
/// changed (nearly always: this runs for every frame of every stack).
fn push_clean(line: &mut String, name: &str) {
    if name.contains([';', '\n', '\r']) {
        line.push_str(&clean(name));
    } else {
        line.push_str(name);
    }
}

/// The folded lines of one clock's samples, sorted (equal runs give equal files): rooted at
/// `program` (Metron's threads at `metron:name`), or at each thread with `per_thread`.
pub(crate) fn folded_lines(
    threads: &BTreeMap<u64, (ThreadInfo, super::profile::StackCounts)>,
    names: &Names,
    program: &str,
    per_thread: bool,
) -> String {
    let mut lines: BTreeMap<String, u64> = BTreeMap::new();
    let mut expanded = Vec::new();
    let program = clean(program).replace(' ', "_");
    for (info, counts) in threads.values() {
        let thread = if per_thread {
            clean(&format!("{}-{}", info.name, info.tid)).replace(' ', "_")
        } else if info.is_metron {
            clean(&format!("metron:{}", info.name)).replace(' ', "_")
        } else {
            program.clone()
        };
        for (stack, &n) in counts {
            names.expand(stack, &mut expanded);
            let mut line = thread.clone();
            for f in expanded.iter().rev() {
                line.push(';');
                push_clean(&mut line, &f.function);
            }
            *lines.entry(line).or_default() += n;
        }
    }
    let mut out = String::new();
    for (line, n) in lines {
        let _ = writeln!(out, "{line} {n}");
    }
    out
}

impl Sink for FoldedSink {
    fn name(&self) -> &str {
        "stacks"
    }

    fn empty_regions(&mut self, _thread: &ThreadInfo, _regions: &[crate::sink::EmptyRegion]) {
        // Regions are not this output's.
    }

    fn events(&mut self, thread: &ThreadInfo, events: &[Event<'_>]) {
        for e in events {
            if let Event::Sample {
                frames, trigger, ..
            } = *e
            {
                if !matches!(trigger, crate::sink::SampleTrigger::RegionBegin(_)) {
                    self.samples.add(thread, frames, trigger);
                }
            }
        }
    }

    fn batch(&mut self, thread: &ThreadInfo, events: &[Event<'_>], present: Present) {
        // Only samples make stacks: a batch of regions is not looked at.
        if present.samples {
            self.events(thread, events);
        }
    }

    fn finish(&mut self, run: &RunInfo) -> std::io::Result<Vec<PathBuf>> {
        let timer = &self.samples.timer;
        if timer.is_empty() {
            return Ok(Vec::new());
        }
        let names = Names::of(
            timer
                .values()
                .flat_map(|t| t.values())
                .flat_map(|(_, c)| c.keys())
                .map(|s| &**s),
        );
        let primary = if timer.contains_key(&Clock::CpuTime) {
            Clock::CpuTime
        } else {
            Clock::RealTime
        };
        let program = std::path::Path::new(&run.exe)
            .file_name()
            .map_or_else(|| run.exe.clone(), |n| n.to_string_lossy().into_owned());
        let mut files = Vec::new();
        let mut report = serde_json::Map::new();
        for (clock, threads) in timer {
            let file = if *clock == primary {
                "stacks.folded"
            } else {
                "stacks.realtime.folded"
            };
            let path = run.output_dir.join(file);
            let text = folded_lines(threads, &names, &program, self.samples.per_thread);
            std::fs::write(&path, &text)?;
            report.insert(
                clock.name().into(),
                json!({
                    "file": file,
                    "distinct_stacks": text.lines().count(),
                    "roots": if self.samples.per_thread { "thread" } else { "program" },
                }),
            );
            files.push(path);
        }
        let stats = metron_symbols::shared()
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .stats();
        report.insert(
            "jit".into(),
            json!({
                "frames": stats.jit,
                "perf_map_entries": stats.perf_map_entries,
                "jitdump_entries": stats.jitdump_entries,
                "python_perf_support": std::env::var("PYTHONPERFSUPPORT").ok(),
            }),
        );
        self.report = Some(Value::Object(report));
        Ok(files)
    }

    fn metadata(&self) -> Option<Value> {
        self.report.clone()
    }
}
