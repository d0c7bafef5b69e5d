//! The sampling and time-window settings: their grammars (for the settings registry and its
//! error messages) and the parsed configuration.

use super::window::{parse_periods, Period, PERIODS_GRAMMAR};
use std::time::Duration;

/// A setting value with a grammar of its own; [`crate::settings::Kind::Grammar`] wraps it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Grammar {
    /// Samples per second per thread.
    Frequency,
    /// `all` or thread indices.
    ThreadList,
    /// The sampling signal.
    Signal,
    /// Time windows, `[clock:]delay:duration[:repeat]`.
    Periods,
    /// Causal profiling's lines, `FILE:LINE,...`.
    CausalLines,
    /// Causal profiling's speedups, `0,10,20` or `0-100/5`.
    Speedups,
}

/// Highest sampling frequency accepted, in Hz.
pub const MAX_FREQ_HZ: u32 = 20_000;

impl Grammar {
    /// What the grammar accepts, in words.
    pub fn accepted(self) -> String {
        match self {
            Grammar::Frequency => {
                format!("a frequency in Hz, an integer from 1 to {MAX_FREQ_HZ} (e.g. 1000)")
            }
            Grammar::ThreadList => "all, or a comma list of thread indices in the order the sampler first sees the threads, 0 being the main thread (e.g. 0,2,3)".into(),
            Grammar::Signal => "auto (the first real-time signal from SIGRTMIN+4 up whose action is the default), SIGPROF, or SIGRTMIN+N with N from 0 to SIGRTMAX-SIGRTMIN".into(),
            Grammar::Periods => PERIODS_GRAMMAR.into(),
            Grammar::CausalLines => super::causal::LINES_GRAMMAR.into(),
            Grammar::Speedups => super::causal::SPEEDUPS_GRAMMAR.into(),
        }
    }

    /// True when `raw` is accepted.
    pub fn check(self, raw: &str) -> bool {
        match self {
            Grammar::Frequency => parse_frequency(raw).is_some(),
            Grammar::ThreadList => parse_threads(raw).is_some(),
            Grammar::Signal => parse_signal(raw).is_some(),
            Grammar::Periods => parse_periods(raw).is_ok(),
            Grammar::CausalLines => super::causal::parse_lines(raw).is_some(),
            Grammar::Speedups => super::causal::parse_speedups(raw).is_some(),
        }
    }
}

/// Which signal the sampler uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SignalChoice {
    /// The first real-time signal from `SIGRTMIN+4` up whose action is the default.
    Auto,
    /// `SIGPROF`.
    Prof,
    /// `SIGRTMIN + n`.
    RealTime(i32),
}

/// The sampler's configuration (`METRON_SAMPLING*`) and the time windows
/// (`METRON_TRACE_PERIODS`, `_DELAY`, `_DURATION`).
#[derive(Clone, Debug, PartialEq)]
pub struct SamplingConfig {
    /// `METRON_SAMPLING`.
    pub enabled: bool,
    /// `METRON_SAMPLING_FREQ`, Hz.
    pub freq_hz: u32,
    /// `METRON_SAMPLING_CPUTIME`.
    pub cputime: bool,
    /// `METRON_SAMPLING_REALTIME`.
    pub realtime: bool,
    /// `METRON_SAMPLING_DELAY` (`None`: start at once).
    pub delay: Option<Duration>,
    /// `METRON_SAMPLING_DURATION` (`None`: until the end).
    pub duration: Option<Duration>,
    /// `METRON_SAMPLING_TIDS` (`None`: all threads).
    pub threads: Option<Vec<u64>>,
    /// `METRON_SAMPLING_SIGNAL`.
    pub signal: SignalChoice,
    /// `METRON_TRACE_PERIODS`, then `METRON_TRACE_DELAY`/`_DURATION` as one more period.
    pub periods: Vec<Period>,
    /// `METRON_CAUSAL*`: causal profiling, which runs on this sampler.
    pub causal: super::causal::CausalConfig,
}

impl SamplingConfig {
    /// Builds the configuration from the registry's values (already checked by their
    /// grammars: a rejected value was replaced by its default).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn from_values(
        enabled: bool,
        freq: &str,
        cputime: bool,
        realtime: bool,
        delay: Option<Duration>,
        duration: Option<Duration>,
        threads: &str,
        signal: &str,
        periods: &str,
        trace_delay: Option<Duration>,
        trace_duration: Option<Duration>,
    ) -> SamplingConfig {
        let mut windows = parse_periods(periods).unwrap_or_default();
        if trace_delay.is_some() || trace_duration.is_some() {
            windows.push(Period::realtime(trace_delay, trace_duration));
        }
        SamplingConfig {
            enabled,
            freq_hz: parse_frequency(freq).unwrap_or(1000),
            cputime,
            realtime,
            delay,
            duration,
            threads: parse_threads(threads).unwrap_or(None),
            signal: parse_signal(signal).unwrap_or(SignalChoice::Auto),
            periods: windows,
            causal: super::causal::CausalConfig::default(),
        }
    }

    /// The sampling period, ns.
    pub fn period_ns(&self) -> u64 {
        1_000_000_000 / u64::from(self.freq_hz.max(1))
    }
}

fn parse_frequency(raw: &str) -> Option<u32> {
    raw.trim()
        .parse::<u32>()
        .ok()
        .filter(|f| (1..=MAX_FREQ_HZ).contains(f))
}

/// `Some(None)`: all threads.
fn parse_threads(raw: &str) -> Option<Option<Vec<u64>>> {
    let raw = raw.trim();
    if raw.eq_ignore_ascii_case("all") {
        return Some(None);
    }
    let list: Option<Vec<u64>> = raw.split(',').map(|t| t.trim().parse().ok()).collect();
    list.filter(|l| !l.is_empty()).map(Some)
}

fn parse_signal(raw: &str) -> Option<SignalChoice> {
    let upper = raw.trim().to_ascii_uppercase();
    match upper.as_str() {
        "AUTO" => Some(SignalChoice::Auto),
        "SIGPROF" | "PROF" => Some(SignalChoice::Prof),
        _ => {
            let n = upper.strip_prefix("SIGRTMIN+")?.parse::<i32>().ok()?;
            let (min, max) = super::sys::realtime_signals();
            (0..=max - min)
                .contains(&n)
                .then_some(SignalChoice::RealTime(n))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grammars_accept_what_they_say() {
        assert!(Grammar::Frequency.check("1000"));
        assert!(!Grammar::Frequency.check("0"));
        assert!(!Grammar::Frequency.check("fast"));
        assert!(Grammar::ThreadList.check("all"));
        assert!(Grammar::ThreadList.check("0, 2,3"));
        assert!(!Grammar::ThreadList.check("main"));
        assert!(Grammar::Signal.check("auto"));
        assert!(Grammar::Signal.check("SIGPROF"));
        assert!(Grammar::Signal.check("SIGRTMIN+5"));
        assert!(!Grammar::Signal.check("SIGRTMIN+500"));
        assert!(!Grammar::Signal.check("SIGUSR1"));
        assert!(Grammar::CausalLines.check("main.c:42, src/q.c:7"));
        assert!(Grammar::CausalLines.check(""));
        assert!(!Grammar::CausalLines.check("main.c"));
        assert!(!Grammar::CausalLines.check("main.c:0"));
        assert!(Grammar::Speedups.check("0-100/5"));
        assert!(Grammar::Speedups.check("10,20,30"));
        assert!(!Grammar::Speedups.check("0-150/5"));
        assert!(!Grammar::Speedups.check("fast"));
        assert_eq!(
            super::super::causal::parse_speedups("40,10").unwrap(),
            vec![0, 10, 40]
        );
        assert_eq!(
            super::super::causal::parse_speedups("0-100/5")
                .unwrap()
                .len(),
            21
        );
    }
}
