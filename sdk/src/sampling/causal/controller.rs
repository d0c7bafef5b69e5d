//! The `metron-causal` thread: resolves sampled addresses to lines, runs the experiments one
//! after another and logs them in Coz's `profile.coz` format.
//!
//! Order is deterministic: the candidate lines (the fixed `--line`s, or the lines with the
//! most samples in scope, at most [`MAX_CANDIDATES`], each with at least 1 % of the samples)
//! are sorted by name and taken in turn; each line walks its own fixed schedule of speedups
//! (the configured speedups in a fixed shuffled order, a 0 % baseline before every third),
//! so the same program gives the same sequence of experiments.
//!
//! An experiment lasts the configured minimum (doubled, up to 16×, while some progress
//! point sees fewer than 5 visits in one, halved again when every point sees more than 10)
//! and is logged only when every point saw at least 5 visits, as Coz does.

use super::delays::{
    ACTIVE, DELAY_NS, GLOBAL, MAX_SAMPLED_POINTS, SAMPLED_POINT_COUNTER, SAMPLED_POINT_LINE,
    SELECTED, SELECTED_SAMPLES,
};
use super::lines::{self, FIRST_LINE, OUT_OF_SCOPE};
use super::progress::{self, ProgressKind, Snapshot};
use super::CausalConfig;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

/// Most lines experimented on when the lines come from the samples.
pub(crate) const MAX_CANDIDATES: usize = 12;
/// Visits every progress point needs in one experiment for it to count.
const TARGET_DELTA: usize = 5;
/// Pause between experiments.
const COOL_OFF: Duration = Duration::from_millis(10);

/// Asks the thread to stop.
pub(crate) static STOP: AtomicBool = AtomicBool::new(false);
/// Experiments run, logged.
pub(crate) static RUN: AtomicU64 = AtomicU64::new(0);
pub(crate) static LOGGED: AtomicU64 = AtomicU64::new(0);

/// What the thread wrote so far (`profile.coz`), and the line names.
pub(crate) struct Log {
    /// The `startup` line.
    pub(crate) text: String,
    /// The experiments logged, in order.
    pub(crate) experiments: Vec<Logged>,
    /// The `runtime` and `samples` lines, once the run is over.
    pub(crate) closing: String,
    pub(crate) lines: Vec<String>,
    pub(crate) start_ns: u64,
}

/// One logged experiment: its lines, and its window (for the latency points of regions,
/// counted when the profile is written).
pub(crate) struct Logged {
    pub(crate) text: String,
    pub(crate) start_ns: u64,
    pub(crate) end_ns: u64,
}

impl Log {
    /// The whole `profile.coz`: each experiment with its regions' `latency-point` lines; an
    /// experiment that saw fewer than 5 transactions of a named region is left out (counted).
    /// Returns the text and the experiments written.
    pub(crate) fn compose(&self) -> (String, u64) {
        let windows = super::regions::Windows::take();
        let mut text = self.text.clone();
        let (mut written, mut short) = (0, 0);
        for e in &self.experiments {
            match windows.lines(e.start_ns, e.end_ns) {
                Some(latency) => {
                    text.push_str(&e.text);
                    text.push_str(&latency);
                    written += 1;
                }
                None => short += 1,
            }
        }
        super::regions::SHORT.store(short, Ordering::Relaxed);
        text.push_str(&self.closing);
        (text, written)
    }
}

pub(crate) static LOG: Mutex<Option<Log>> = Mutex::new(None);

fn log() -> std::sync::MutexGuard<'static, Option<Log>> {
    LOG.lock().unwrap_or_else(|e| e.into_inner())
}

/// A deterministic generator (xorshift64*), for the fixed speedup order.
struct Xorshift(u64);

impl Xorshift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
}

/// The order of speedups (percent) each line walks: the non-zero speedups shuffled with a
/// fixed seed, a 0 before every third.
pub fn schedule(speedups: &[u32]) -> Vec<u32> {
    let mut nonzero: Vec<u32> = speedups.iter().copied().filter(|s| *s > 0).collect();
    nonzero.sort_unstable();
    nonzero.dedup();
    let mut rng = Xorshift(0x00C0_FFEE_D00D_F00D);
    for i in (1..nonzero.len()).rev() {
        let j = (rng.next() % (i as u64 + 1)) as usize;
        nonzero.swap(i, j);
    }
    let mut out = Vec::with_capacity(nonzero.len() * 4 / 3 + 1);
    for (i, s) in nonzero.iter().enumerate() {
        if i % 3 == 0 {
            out.push(0);
        }
        out.push(*s);
    }
    if out.is_empty() {
        out.push(0);
    }
    out
}

/// Does `name` (`/path/file.c:12`) match `wanted` (`file.c:12`, `dir/file.c:12`, or the full
/// path)?
pub(crate) fn line_matches(name: &str, wanted: &str) -> bool {
    name == wanted || name.ends_with(&format!("/{wanted}"))
}

/// `%` matches any run of characters (Coz's scope patterns); anything else matches itself.
pub(crate) fn scope_matches(pattern: &str, text: &str) -> bool {
    metron_export::wildcard::wildcard_match(pattern, text, '%')
}

/// Resolves addresses to line ids within the scopes, and names them.
struct Resolver<'a> {
    config: &'a CausalConfig,
    names: Vec<String>,
}

impl Resolver<'_> {
    fn id_of(&mut self, addr: u64) -> u32 {
        let mut sym = metron_symbols::shared()
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let in_binary = match sym.module_at(addr) {
            Some(m) => {
                let main = m.path.as_os_str() == "/proc/self/exe";
                let path = m.path.to_string_lossy();
                self.config.binary_scope.iter().any(|p| {
                    (p == "MAIN" && main) || scope_matches(p, &path) || scope_matches(p, &m.name)
                })
            }
            None => false,
        };
        if !in_binary {
            return OUT_OF_SCOPE;
        }
        let Some(frame) = sym.symbolize(addr).first() else {
            return OUT_OF_SCOPE;
        };
        let (Some(file), Some(line)) = (&frame.file, frame.line) else {
            return OUT_OF_SCOPE;
        };
        if !self
            .config
            .source_scope
            .iter()
            .any(|p| scope_matches(p, file))
        {
            return OUT_OF_SCOPE;
        }
        let name = format!("{file}:{line}");
        drop(sym);
        let i = match self.names.iter().position(|n| *n == name) {
            Some(i) => i,
            None => {
                self.names.push(name);
                self.names.len() - 1
            }
        };
        i as u32 + FIRST_LINE
    }

    fn name(&self, id: u32) -> &str {
        &self.names[(id - FIRST_LINE) as usize]
    }

    /// Resolves what the handlers inserted; binds the sampled progress points to their lines.
    fn pass(&mut self) {
        lines::resolve_pending(|addr| self.id_of(addr));
        for (i, wanted) in self
            .config
            .progress_lines
            .iter()
            .take(MAX_SAMPLED_POINTS)
            .enumerate()
        {
            if SAMPLED_POINT_LINE[i].load(Ordering::Relaxed) != 0 {
                continue;
            }
            if let Some(j) = self.names.iter().position(|n| line_matches(n, wanted)) {
                SAMPLED_POINT_LINE[i].store(j as u32 + FIRST_LINE, Ordering::Relaxed);
            }
        }
    }

    /// The lines to experiment on now, sorted by name.
    fn candidates(&self) -> Vec<u32> {
        let mut ids: Vec<u32> = if self.config.lines.is_empty() {
            let counts = lines::samples_per_line(self.names.len());
            let total: u64 = counts.iter().sum();
            let mut ranked: Vec<(u64, u32)> = counts
                .iter()
                .enumerate()
                .skip(FIRST_LINE as usize)
                .filter(|(_, c)| **c > 0 && **c * 100 >= total)
                .filter(|(i, _)| {
                    // A sampled progress point's own line is never sped up.
                    !self
                        .config
                        .progress_lines
                        .iter()
                        .any(|w| line_matches(self.name(*i as u32), w))
                })
                .map(|(i, c)| (*c, i as u32))
                .collect();
            ranked.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
            ranked.truncate(MAX_CANDIDATES);
            ranked.into_iter().map(|(_, id)| id).collect()
        } else {
            self.config
                .lines
                .iter()
                .filter_map(|w| self.names.iter().position(|n| line_matches(n, w)))
                .map(|i| i as u32 + FIRST_LINE)
                .collect()
        };
        ids.sort_by(|a, b| self.name(*a).cmp(self.name(*b)));
        ids.dedup();
        ids
    }
}

/// Sleeps `d` in short steps; false when asked to stop meanwhile.
fn wait(d: Duration) -> bool {
    let step = Duration::from_millis(2);
    let end = std::time::Instant::now() + d;
    loop {
        if STOP.load(Ordering::Relaxed) {
            return false;
        }
        let now = std::time::Instant::now();
        if now >= end {
            return true;
        }
        std::thread::sleep(step.min(end - now));
    }
}

fn now_ns() -> u64 {
    super::super::sys::monotonic_ns()
}

/// The thread's body.
pub(crate) fn run(config: CausalConfig, period_ns: u64, add_sink: fn(Box<dyn crate::sink::Sink>)) {
    for (i, _) in config
        .progress_lines
        .iter()
        .take(MAX_SAMPLED_POINTS)
        .enumerate()
    {
        let c = progress::counter(ProgressKind::Throughput, &config.progress_lines[i]);
        SAMPLED_POINT_COUNTER[i].store(c as *const _ as *mut _, Ordering::Release);
    }
    if !config.latency_regions.is_empty() {
        super::regions::watch(&config.latency_regions, add_sink);
    }
    let mut resolver = Resolver {
        config: &config,
        names: Vec::new(),
    };
    let schedule = schedule(&config.speedups);
    // Experiments run so far per line name.
    let mut per_line: Vec<(String, usize)> = Vec::new();
    let mut length = config.experiment;
    let mut turn = 0usize;
    loop {
        resolver.pass();
        publish_names(&resolver.names);
        let candidates = resolver.candidates();
        if candidates.is_empty()
            || (Snapshot::take().is_empty() && config.latency_regions.is_empty())
        {
            if !wait(Duration::from_millis(10)) {
                return;
            }
            continue;
        }
        let line = candidates[turn % candidates.len()];
        turn += 1;
        let name = resolver.name(line).to_string();
        let k = match per_line.iter_mut().find(|(n, _)| *n == name) {
            Some(entry) => {
                entry.1 += 1;
                entry.1 - 1
            }
            None => {
                per_line.push((name.clone(), 1));
                0
            }
        };
        let speedup = schedule[k % schedule.len()];
        let delay = period_ns * u64::from(speedup) / 100;
        SELECTED.store(line, Ordering::Relaxed);
        DELAY_NS.store(delay, Ordering::Relaxed);
        let before = Snapshot::take();
        let start = now_ns();
        let global_start = GLOBAL.load(Ordering::Relaxed);
        let samples_start = SELECTED_SAMPLES.load(Ordering::Relaxed);
        ACTIVE.store(true, Ordering::Release);
        let finished = wait(length);
        let global_end = GLOBAL.load(Ordering::Relaxed);
        let end = now_ns();
        let after = Snapshot::take();
        let selected_samples = SELECTED_SAMPLES.load(Ordering::Relaxed) - samples_start;
        ACTIVE.store(false, Ordering::Release);
        SELECTED.store(0, Ordering::Relaxed);
        RUN.fetch_add(1, Ordering::Relaxed);
        let elapsed = end.saturating_sub(start);
        let inserted = global_end.saturating_sub(global_start);
        let duration = elapsed.saturating_sub(inserted);
        let mut text = format!(
            "experiment\tselected={name}\tspeedup={:.2}\tduration={duration}\tselected-samples={selected_samples}\n",
            f64::from(speedup) / 100.0
        );
        let mut min_delta = usize::MAX;
        for (point, v) in &after.throughput {
            let v0 = before
                .throughput
                .iter()
                .find(|(n, _)| n == point)
                .map_or(0, |p| p.1);
            let delta = v - v0;
            min_delta = min_delta.min(delta);
            let _ = writeln!(text, "throughput-point\tname={point}\tdelta={delta}");
        }
        for (point, b, e) in &after.latency {
            let (b0, e0) = before
                .latency
                .iter()
                .find(|(n, _, _)| n == point)
                .map_or((0, 0), |p| (p.1, p.2));
            let (arrivals, departures) = (b - b0, e - e0);
            min_delta = min_delta.min(arrivals).min(departures);
            let _ = writeln!(
                text,
                "latency-point\tname={point}\tarrivals={arrivals}\tdepartures={departures}\tdifference={}",
                b.saturating_sub(*e)
            );
        }
        // An experiment cut short by the end of the run is not logged: its visits are partial.
        if finished && min_delta >= TARGET_DELTA {
            if let Some(log) = log().as_mut() {
                log.experiments.push(Logged {
                    text,
                    start_ns: start,
                    end_ns: end,
                });
            }
            LOGGED.fetch_add(1, Ordering::Relaxed);
        }
        if min_delta < TARGET_DELTA {
            length = (length * 2).min(config.experiment * 16);
        } else if min_delta > TARGET_DELTA * 2 && length >= config.experiment * 2 {
            length /= 2;
        }
        if !finished || !wait(COOL_OFF) {
            return;
        }
    }
}

fn publish_names(names: &[String]) {
    if let Some(log) = log().as_mut() {
        if log.lines.len() != names.len() {
            log.lines = names.to_vec();
        }
    }
}

/// The `runtime` and `samples` lines that end a run's log.
pub(crate) fn closing_lines(log: &Log) -> String {
    let mut text = format!("runtime\ttime={}\n", now_ns().saturating_sub(log.start_ns));
    let counts = lines::samples_per_line(log.lines.len());
    for (i, name) in log.lines.iter().enumerate() {
        let c = counts[i + FIRST_LINE as usize];
        if c > 0 {
            let _ = writeln!(text, "samples\tlocation={name}\tcount={c}");
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_schedule_is_fixed_and_puts_a_baseline_before_every_third_speedup() {
        let s = schedule(&[0, 10, 20, 30, 40]);
        assert_eq!(s, schedule(&[40, 30, 20, 10]));
        assert_eq!(s.iter().filter(|v| **v == 0).count(), 2);
        let mut nonzero: Vec<u32> = s.iter().copied().filter(|v| *v > 0).collect();
        nonzero.sort_unstable();
        assert_eq!(nonzero, vec![10, 20, 30, 40]);
        assert_eq!(s[0], 0);
        assert_eq!(s[4], 0);
    }

    #[test]
    fn scopes_and_lines_match_as_documented() {
        assert!(scope_matches("%", "/src/a.c"));
        assert!(scope_matches(
            "%/tests/causal/%",
            "/w/tests/causal/barrier.c"
        ));
        assert!(!scope_matches("%/tests/causal/%", "/usr/include/stdio.h"));
        assert!(scope_matches("%.c", "x/y.c"));
        assert!(!scope_matches("%.c", "x/y.h"));
        assert!(line_matches("/w/tests/causal/barrier.c:42", "barrier.c:42"));
        assert!(line_matches(
            "/w/tests/causal/barrier.c:42",
            "causal/barrier.c:42"
        ));
        assert!(!line_matches(
            "/w/tests/causal/xbarrier.c:42",
            "barrier.c:42"
        ));
        assert!(!line_matches(
            "/w/tests/causal/barrier.c:421",
            "barrier.c:42"
        ));
    }
}
