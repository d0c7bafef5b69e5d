//! Causal profiling: which lines, if made faster, would make the program faster (Coz's
//! virtual speedups, `METRON_CAUSAL=on`, `metron causal`).
//!
//! A normal profile says where the time goes; a causal profile says what would happen to a
//! *progress point* (a throughput counter, or the latency between a begin and an end) if one
//! line ran s % faster. Metron cannot make a line faster, so it makes everything else slower:
//! during an experiment each sample that lands in the selected line makes every other thread
//! owe a delay of s × the sampling period ([`delays`] has the rules), and the experiment's
//! duration minus the delays inserted is the time the program would have taken. Many short
//! experiments, each a (line, speedup) pair, give one curve per line: program speedup
//! against line speedup.
//!
//! The pieces, one per file:
//! - `progress`: the progress counters (Coz's counter layout; the `progress!` macros);
//! - `lines`: the address → line table the signal handler reads;
//! - `delays`: the delay accounting, in the handler and around blocking calls;
//! - `controller`: the `metron-causal` thread that runs the experiments and logs them;
//! - `regions`: Metron regions named as latency points (`--latency REGION`), counted from
//!   the recorded region events, off the hot path.
//!
//! The output is `profile.coz` in the run folder, in Coz's own format (`coz plot` reads it);
//! `metron causal` adds the summary and the curves (`metron_report::causal`).
//!
//! What it needs: CPU-time sampling (the sampler's per-thread `task-clock` events, 1 kHz by
//! default: the delay per sample is s × 1 ms), and the program's lines in its debug
//! information. The `pthread` wrappers that make blocking calls safe points are in the C
//! library (`libmetron.so`, `exports_causal.rs`); a Rust program's own `std::sync` waits use
//! futexes directly and are not seen (see the user guide's *Causal profiling* chapter).

mod controller;
pub use controller::schedule;
mod delays;
mod lines;
mod progress;
mod regions;

pub(crate) use delays::ThreadDelays;
pub use delays::{catch_up, creator_delays, post_block, pre_block, thread_started};
pub use progress::{counter, ProgressCounter, ProgressKind, ProgressSite};

use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Mutex;
use std::time::Duration;

/// Speedups tried when none are given: 0 to 100 % in steps of 5.
pub const DEFAULT_SPEEDUPS: &str = "0-100/5";

/// The causal settings (`METRON_CAUSAL*`).
#[derive(Clone, Debug, PartialEq)]
pub struct CausalConfig {
    /// `METRON_CAUSAL`.
    pub enabled: bool,
    /// `METRON_CAUSAL_LINES`: fixed lines `FILE:LINE` (empty: chosen from the samples).
    pub lines: Vec<String>,
    /// `METRON_CAUSAL_PROGRESS`: sampled progress points `FILE:LINE`.
    pub progress_lines: Vec<String>,
    /// `METRON_CAUSAL_LATENCY`: Metron regions, by name, that are latency points.
    pub latency_regions: Vec<String>,
    /// `METRON_CAUSAL_SOURCE_SCOPE`: source file patterns (`%` any text).
    pub source_scope: Vec<String>,
    /// `METRON_CAUSAL_BINARY_SCOPE`: module patterns, `MAIN` the executable.
    pub binary_scope: Vec<String>,
    /// `METRON_CAUSAL_SPEEDUPS`: line speedups tried, percent.
    pub speedups: Vec<u32>,
    /// `METRON_CAUSAL_EXPERIMENT`: the shortest experiment.
    pub experiment: Duration,
}

impl Default for CausalConfig {
    fn default() -> Self {
        CausalConfig {
            enabled: false,
            lines: Vec::new(),
            progress_lines: Vec::new(),
            latency_regions: Vec::new(),
            source_scope: vec!["%".into()],
            binary_scope: vec!["MAIN".into()],
            speedups: parse_speedups(DEFAULT_SPEEDUPS).unwrap_or_default(),
            experiment: Duration::from_millis(200),
        }
    }
}

/// What `METRON_CAUSAL_LINES` and `METRON_CAUSAL_PROGRESS` accept, in words.
pub const LINES_GRAMMAR: &str = "a comma list of FILE:LINE (the file's name or the end of its path, e.g. main.c:42,src/queue.c:17), or empty";
/// What `METRON_CAUSAL_SPEEDUPS` accepts, in words.
pub const SPEEDUPS_GRAMMAR: &str = "percentages from 0 to 100: a comma list (0,10,20,30,40) or a range with a step (0-100/5, the default); a 0 % baseline is always added";

/// Parses a list of `FILE:LINE`.
pub fn parse_lines(raw: &str) -> Option<Vec<String>> {
    let mut out = Vec::new();
    for item in raw.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let (file, line) = item.rsplit_once(':')?;
        if file.is_empty() || line.parse::<u32>().ok().filter(|l| *l > 0).is_none() {
            return None;
        }
        out.push(item.to_string());
    }
    Some(out)
}

/// Parses `METRON_CAUSAL_SPEEDUPS`.
pub fn parse_speedups(raw: &str) -> Option<Vec<u32>> {
    let mut out = Vec::new();
    for item in raw.split(',').map(str::trim) {
        if let Some((range, step)) = item.split_once('/') {
            let (lo, hi) = range.split_once('-')?;
            let (lo, hi, step): (u32, u32, u32) = (
                lo.trim().parse().ok()?,
                hi.trim().parse().ok()?,
                step.trim().parse().ok()?,
            );
            if step == 0 || lo > hi || hi > 100 {
                return None;
            }
            out.extend((lo..=hi).step_by(step as usize));
        } else {
            let v: u32 = item.parse().ok()?;
            if v > 100 {
                return None;
            }
            out.push(v);
        }
    }
    if !out.contains(&0) {
        out.push(0);
    }
    out.sort_unstable();
    out.dedup();
    Some(out)
}

/// Splits `METRON_CAUSAL_LATENCY`, a comma list of region names (any text but a comma).
pub fn parse_regions(raw: &str) -> Vec<String> {
    let mut v: Vec<String> = raw
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(String::from)
        .collect();
    v.dedup();
    v
}

/// Splits a comma list of scope patterns (empty: `default`).
pub fn parse_scopes(raw: &str, default: &str) -> Vec<String> {
    let v: Vec<String> = raw
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(String::from)
        .collect();
    if v.is_empty() {
        vec![default.to_string()]
    } else {
        v
    }
}

static THREAD: Mutex<Option<std::thread::JoinHandle<()>>> = Mutex::new(None);

/// Starts causal profiling (the sampler is running). Called by `sampling::start`.
pub(crate) fn start(config: &CausalConfig, period_ns: u64) {
    *controller::LOG.lock().unwrap_or_else(|e| e.into_inner()) = Some(controller::Log {
        text: format!("startup\ttime={}\n", super::sys::monotonic_ns()),
        experiments: Vec::new(),
        closing: String::new(),
        lines: Vec::new(),
        start_ns: super::sys::monotonic_ns(),
    });
    delays::ENGAGED.store(true, Ordering::Release);
    let config = config.clone();
    match super::spawn_own_thread("metron-causal", move || controller::run(config, period_ns)) {
        Ok(handle) => *THREAD.lock().unwrap_or_else(|e| e.into_inner()) = Some(handle),
        Err(e) => {
            delays::ENGAGED.store(false, Ordering::Release);
            eprintln!("metron: causal profiling off: cannot start its thread: {e}");
        }
    }
}

/// Ends the experiments (before the sampler stops) and closes the log.
pub(crate) fn finish() {
    let handle = THREAD.lock().unwrap_or_else(|e| e.into_inner()).take();
    let Some(handle) = handle else {
        return;
    };
    controller::STOP.store(true, Ordering::Relaxed);
    let _ = handle.join();
    delays::ACTIVE.store(false, Ordering::Release);
    delays::ENGAGED.store(false, Ordering::Release);
    if let Some(log) = controller::LOG
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .as_mut()
    {
        log.closing = controller::closing_lines(log);
    }
    // An empty profile says why.
    if controller::LOGGED.load(Ordering::Relaxed) == 0 {
        let why = if progress::Snapshot::take().is_empty() {
            "no progress point was visited (add metron::progress!, METRON_PROGRESS or COZ_PROGRESS to the program, or use --progress FILE:LINE)"
        } else if controller::RUN.load(Ordering::Relaxed) == 0 {
            "no line in scope was sampled (check --line, --source-scope and --binary-scope, that the program has debug line information (-g), and that it runs long enough)"
        } else {
            "every experiment saw fewer than 5 visits of some progress point (run longer, or count progress more often)"
        };
        eprintln!("metron: causal profiling logged no experiment: {why}");
    }
}

/// Writes `profile.coz` into `dir` when this run was a causal one. `Some(Err)` says why it
/// could not be written.
pub fn write_profile(dir: &Path) -> Option<Result<PathBuf, String>> {
    let guard = controller::LOG.lock().unwrap_or_else(|e| e.into_inner());
    let log = guard.as_ref()?;
    let path = dir.join("profile.coz");
    // The regions named as latency points have all reached their sink by now (the last
    // flush came first).
    let (text, written) = log.compose();
    if !log.experiments.is_empty() && written == 0 {
        eprintln!(
            "metron: causal profiling logged no experiment: every one saw fewer than 5 begins or 5 ends of a region named with --latency (lengthen --experiment)"
        );
    }
    controller::LOGGED.store(written, Ordering::Relaxed);
    Some(
        std::fs::write(&path, text)
            .map(|()| path.clone())
            .map_err(|e| format!("cannot write {}: {e}", path.display())),
    )
}

/// The `causal` part of the sampling section of `metadata.json`.
pub(crate) fn metadata(config: &CausalConfig) -> Value {
    json!({
        "enabled": config.enabled,
        "lines": config.lines,
        "progress_lines": config.progress_lines,
        "latency_regions": config.latency_regions,
        "experiments_short_of_transactions": regions::SHORT.load(Ordering::Relaxed),
        "source_scope": config.source_scope,
        "binary_scope": config.binary_scope,
        "speedups_percent": config.speedups,
        "experiment_min_ms": config.experiment.as_millis() as u64,
        "experiments_run": controller::RUN.load(Ordering::Relaxed),
        "experiments_logged": controller::LOGGED.load(Ordering::Relaxed),
        "delays_inserted_ns": delays::GLOBAL.load(Ordering::Relaxed),
        "sleeps": delays::SLEEPS.load(Ordering::Relaxed),
        "slept_ns": delays::SLEPT_NS.load(Ordering::Relaxed),
        "samples_unattributed_first_sight": lines::UNATTRIBUTED.load(Ordering::Relaxed),
        "samples_unattributed_table_full": lines::TABLE_FULL.load(Ordering::Relaxed),
        "note": "experiments_logged counts those where every progress point saw at least 5 visits (a region named as a latency point at least 5 begins and 5 ends: experiments_short_of_transactions were not logged for that); slept_ns is the time threads really slept to take their delays",
    })
}

pub(in crate::sampling) use delays::{after_fork_in_child, engaged, in_handler, on_sample};

/// Is a causal run going on in this process? One relaxed load (what the `pthread` wrappers
/// check first).
#[inline]
pub fn is_engaged() -> bool {
    engaged()
}
