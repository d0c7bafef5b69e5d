//! Time windows: `METRON_TRACE_PERIODS`, `METRON_TRACE_DELAY`, `METRON_TRACE_DURATION`.
//!
//! A period `[clock:]delay:duration[:repeat]` waits `delay` seconds, records for `duration`
//! seconds, and does that `repeat` times (default 1; 0 repeats forever). Periods run one after
//! the other; after the last one recording stays off. `clock` is `realtime` (wall time, the
//! default) or `cputime` (CPU time of the whole process), both counted from the start of the
//! run. `METRON_TRACE_DELAY`/`_DURATION` add one realtime period after those of the list
//! (a duration of 0 means "until the end").
//!
//! A `metron-window` thread turns the process-wide collecting flag on and off at the
//! boundaries (the same flag as [`crate::set_collecting`], which the region hot path and the
//! sample handler already check), so regions and samples outside every window are not
//! recorded; regions open when a window closes still end. Realtime boundaries are met by
//! sleeping until them; cputime ones by polling the process CPU clock every millisecond.

use super::sys;
use std::fmt;
use std::time::Duration;

/// The grammar, as error messages and `metron avail` show it.
pub(crate) const PERIODS_GRAMMAR: &str = "none, or a comma list of periods [clock:]delay:duration[:repeat], where clock is realtime (default) or cputime, delay and duration are seconds (decimals allowed; duration 0 = until the end) and repeat is how many times (default 1, 0 = forever); e.g. realtime:10:1:5 or cputime:2.5:1";

/// Which clock a period counts on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WindowClock {
    /// Wall time since the run started.
    Realtime,
    /// CPU time of the whole process since the run started.
    Cputime,
}

/// One period of a time window.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Period {
    /// The clock.
    pub clock: WindowClock,
    /// Time before each recording interval.
    pub delay: Duration,
    /// Length of each recording interval (`None`: until the end).
    pub duration: Option<Duration>,
    /// How many times (`None`: forever).
    pub repeat: Option<u32>,
}

impl Period {
    pub(crate) fn realtime(delay: Option<Duration>, duration: Option<Duration>) -> Period {
        Period {
            clock: WindowClock::Realtime,
            delay: delay.unwrap_or_default(),
            duration,
            repeat: Some(1),
        }
    }
}

/// A period spec that does not parse.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PeriodError {
    /// The offending period.
    pub period: String,
    /// What is wrong with it.
    pub reason: &'static str,
}

impl fmt::Display for PeriodError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "period {:?}: {}; accepted: {PERIODS_GRAMMAR}",
            self.period, self.reason
        )
    }
}

/// Parses a `METRON_TRACE_PERIODS` value.
pub fn parse_periods(raw: &str) -> Result<Vec<Period>, PeriodError> {
    let raw = raw.trim();
    if raw.is_empty() || raw.eq_ignore_ascii_case("none") {
        return Ok(Vec::new());
    }
    raw.split(',').map(|p| parse_period(p.trim())).collect()
}

fn parse_period(text: &str) -> Result<Period, PeriodError> {
    let err = |reason| PeriodError {
        period: text.to_string(),
        reason,
    };
    let mut parts: Vec<&str> = text.split(':').map(str::trim).collect();
    let clock = match parts.first().map(|p| p.to_ascii_lowercase()) {
        Some(c) if c == "realtime" => {
            parts.remove(0);
            WindowClock::Realtime
        }
        Some(c) if c == "cputime" => {
            parts.remove(0);
            WindowClock::Cputime
        }
        Some(c) if c.chars().next().is_some_and(|ch| ch.is_ascii_alphabetic()) => {
            return Err(err("unknown clock (realtime or cputime)"))
        }
        _ => WindowClock::Realtime,
    };
    if !(2..=3).contains(&parts.len()) {
        return Err(err("expected delay:duration or delay:duration:repeat"));
    }
    let seconds = |s: &str| -> Result<Duration, PeriodError> {
        let v: f64 = s
            .parse()
            .map_err(|_| err("delay and duration are seconds"))?;
        if !(v.is_finite() && v >= 0.0) {
            return Err(err("delay and duration are seconds ≥ 0"));
        }
        Ok(Duration::from_secs_f64(v))
    };
    let delay = seconds(parts[0])?;
    let duration = seconds(parts[1])?;
    let repeat = match parts.get(2) {
        None => Some(1),
        Some(r) => match r.parse::<u32>() {
            Ok(0) => None,
            Ok(n) => Some(n),
            Err(_) => return Err(err("repeat is a whole number (0 = forever)")),
        },
    };
    Ok(Period {
        clock,
        delay,
        duration: (!duration.is_zero()).then_some(duration),
        repeat,
    })
}

/// True when recording is on at the start of `periods` (no window, or a first delay of 0).
pub(crate) fn open_at_start(periods: &[Period]) -> bool {
    periods.first().is_none_or(|p| p.delay.is_zero())
}

/// Starts the `metron-window` thread that follows `periods` (none: nothing to do).
/// `set_collecting` turns recording on and off (the runtime's, lent at start).
pub(crate) fn start(periods: Vec<Period>, set_collecting: fn(bool)) {
    if periods.is_empty() {
        return;
    }
    let spawned = super::spawn_own_thread("metron-window", move || run(&periods, set_collecting));
    if let Err(e) = spawned {
        eprintln!("metron: time windows not applied (cannot start their thread: {e})");
    }
}

fn now(clock: WindowClock) -> u64 {
    match clock {
        WindowClock::Realtime => sys::monotonic_ns(),
        WindowClock::Cputime => sys::process_cputime_ns(),
    }
}

/// Waits until `clock` reads `target` ns.
fn wait_until(clock: WindowClock, target: u64) {
    loop {
        let t = now(clock);
        if t >= target {
            return;
        }
        let left = Duration::from_nanos(target - t);
        std::thread::sleep(match clock {
            WindowClock::Realtime => left,
            WindowClock::Cputime => left.min(Duration::from_millis(1)),
        });
    }
}

fn run(periods: &[Period], set_collecting: fn(bool)) {
    let origin_real = sys::monotonic_ns();
    let origin_cpu = sys::process_cputime_ns();
    // Each period starts where the previous ended, on its own clock.
    let mut at_real = origin_real;
    let mut at_cpu = origin_cpu;
    for p in periods {
        let mut at = match p.clock {
            WindowClock::Realtime => at_real.max(now(WindowClock::Realtime)),
            WindowClock::Cputime => at_cpu.max(now(WindowClock::Cputime)),
        };
        let mut round = 0u32;
        while p.repeat.is_none_or(|r| round < r) {
            at += p.delay.as_nanos() as u64;
            wait_until(p.clock, at);
            set_collecting(true);
            let Some(duration) = p.duration else {
                return; // on until the end
            };
            at += duration.as_nanos() as u64;
            wait_until(p.clock, at);
            set_collecting(false);
            round += 1;
        }
        at_real = now(WindowClock::Realtime);
        at_cpu = now(WindowClock::Cputime);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn periods_parse_with_and_without_clock_and_repeat() {
        let p = parse_periods("realtime:10:1:5, cputime:2.5:1, 3:0").unwrap();
        assert_eq!(p.len(), 3);
        assert_eq!(p[0].clock, WindowClock::Realtime);
        assert_eq!(p[0].delay, Duration::from_secs(10));
        assert_eq!(p[0].duration, Some(Duration::from_secs(1)));
        assert_eq!(p[0].repeat, Some(5));
        assert_eq!(p[1].clock, WindowClock::Cputime);
        assert_eq!(p[1].delay, Duration::from_millis(2500));
        assert_eq!(p[2].duration, None);
        assert!(parse_periods("none").unwrap().is_empty());
    }

    #[test]
    fn bad_periods_say_what_is_wrong_and_show_the_grammar() {
        for bad in ["walltime:1:2", "1", "1:2:3:4", "a:b", "-1:2", "1:2:x"] {
            let e = parse_periods(bad).unwrap_err();
            let text = e.to_string();
            assert!(text.contains("[clock:]delay:duration[:repeat]"), "{text}");
        }
        assert_eq!(
            parse_periods("walltime:1:2").unwrap_err().reason,
            "unknown clock (realtime or cputime)"
        );
    }
}
