//! Metron's one clock: `CLOCK_MONOTONIC` nanoseconds in every output.
//!
//! The hot path reads raw *ticks*: the TSC on x86-64 (one instruction, no syscall), the
//! monotonic clock in nanoseconds elsewhere. [`Calibration`] maps ticks to monotonic
//! nanoseconds from a [`reference`] point read when Metron starts: a first rate is measured
//! over [`CALIBRATION_WINDOW_NS`] from it, the first time a rate is asked for, and the flusher
//! refines it over the whole run ([`Calibration::refined`]) so the error shrinks as the run gets
//! longer. Both calibrations, and the measured drift, go into `metadata.json`.

use crate::sys;
use std::sync::OnceLock;

/// The shortest span from the reference point over which the first rate is measured, in ns.
pub const CALIBRATION_WINDOW_NS: u64 = 2_000_000;

/// The shortest span over which a rate is measured at all, in ns: over less, the two reads'
/// own uncertainty (tens of ns) would be a large part of it.
pub const SHORTEST_RATE_SPAN_NS: u64 = 20_000;

/// Reads the hot-path clock in ticks. No syscall on x86-64.
#[inline(always)]
pub fn now_ticks() -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        sys::read_tsc()
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        monotonic_ns()
    }
}

/// [`now_ticks`] as its low and high 32-bit halves (`(lo, hi)`, `ticks == hi << 32 | lo`):
/// what `rdtsc` gives, for a hot path that stores the halves as they come.
#[inline(always)]
pub fn now_ticks_halves() -> (u32, u32) {
    #[cfg(target_arch = "x86_64")]
    {
        sys::read_tsc_halves()
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let t = monotonic_ns();
        (t as u32, (t >> 32) as u32)
    }
}

/// `CLOCK_MONOTONIC` in nanoseconds (vDSO, no syscall on Linux).
#[inline]
pub fn monotonic_ns() -> u64 {
    sys::clock_ns(libc::CLOCK_MONOTONIC)
}

/// `CLOCK_REALTIME` in nanoseconds since the Unix epoch.
#[inline]
pub fn realtime_ns() -> u64 {
    sys::clock_ns(libc::CLOCK_REALTIME)
}

/// `CLOCK_BOOTTIME` in nanoseconds (Perfetto's default trace clock).
#[inline]
pub fn boottime_ns() -> u64 {
    sys::clock_ns(libc::CLOCK_BOOTTIME)
}

/// What the hot-path ticks are.
pub const TICK_SOURCE: &str = if cfg!(target_arch = "x86_64") {
    "tsc"
} else {
    "clock_monotonic"
};

/// A linear map from ticks to `CLOCK_MONOTONIC` nanoseconds: `mono = mono0 + (ticks - ticks0) * ns_per_tick`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Calibration {
    /// Ticks at the reference point.
    pub ticks0: u64,
    /// Monotonic nanoseconds at the reference point.
    pub mono0: u64,
    /// Nanoseconds per tick.
    pub ns_per_tick: f64,
}

impl Calibration {
    /// Converts absolute ticks to monotonic nanoseconds.
    #[inline]
    pub fn to_monotonic_ns(&self, ticks: u64) -> u64 {
        let delta = ticks.wrapping_sub(self.ticks0) as i64 as f64;
        (self.mono0 as f64 + delta * self.ns_per_tick)
            .round()
            .max(0.0) as u64
    }

    /// Converts a tick difference to nanoseconds.
    #[inline]
    pub fn ticks_to_ns(&self, ticks: u64) -> f64 {
        ticks as f64 * self.ns_per_tick
    }

    /// The same reference point with the rate re-measured from it to now. The longer the run,
    /// the more exact the rate.
    pub fn refined(&self) -> Calibration {
        let (ticks1, mono1) = paired_reading();
        if ticks1 <= self.ticks0 || mono1 <= self.mono0 {
            return *self;
        }
        // The span only grows, so a rate measured now is never less exact than the one held
        // (which may be `calibration_now`'s, over less than the window).
        let span = (mono1 - self.mono0) as f64;
        if span < SHORTEST_RATE_SPAN_NS as f64 {
            return *self;
        }
        Calibration {
            ns_per_tick: span / (ticks1 - self.ticks0) as f64,
            ..*self
        }
    }

    /// How far this calibration's prediction of "now" is from the monotonic clock, in ns.
    pub fn error_now_ns(&self) -> i64 {
        let (ticks, mono) = paired_reading();
        self.to_monotonic_ns(ticks) as i64 - mono as i64
    }
}

/// Reads ticks and the monotonic clock as close together as possible (the pair with the
/// shortest tick bracket out of a few tries).
fn paired_reading() -> (u64, u64) {
    let mut best = (u64::MAX, 0, 0);
    for _ in 0..5 {
        let before = now_ticks();
        let mono = monotonic_ns();
        let after = now_ticks();
        let width = after.wrapping_sub(before);
        if width < best.0 {
            best = (width, before + width / 2, mono);
        }
    }
    (best.1, best.2)
}

/// The process's reference point, `(ticks, CLOCK_MONOTONIC ns)` read together the first time
/// it is asked for (a few clock reads): Metron's start-up reads it, so that the first rate's
/// window runs while the program does.
pub fn reference() -> (u64, u64) {
    static REFERENCE: OnceLock<(u64, u64)> = OnceLock::new();
    *REFERENCE.get_or_init(paired_reading)
}

/// The process-wide calibration, measured from [`reference`] the first time it is asked for.
/// Asked for sooner than [`CALIBRATION_WINDOW_NS`] after the reference, it waits out the rest
/// asleep: the flusher asks first, with its first batch, so the program's threads do not wait
/// (a 2 ms spin on the program's first thread used to be part of every run's start).
pub fn calibration() -> &'static Calibration {
    CALIBRATION.get_or_init(measure)
}

static CALIBRATION: OnceLock<Calibration> = OnceLock::new();

/// The calibration without waiting: [`calibration`] once it is measured or its window has
/// passed; before that, a rate over the span from the reference to now (at least
/// [`SHORTEST_RATE_SPAN_NS`]), not kept. For a run that ends within the window: everything it
/// converts lies inside that span, where the error is the reads' (tens of ns), not the rate's,
/// so waiting out the window (up to 2 ms of a short process's exit) would buy nothing.
pub fn calibration_now() -> Calibration {
    if let Some(cal) = CALIBRATION.get() {
        return *cal;
    }
    let (ticks0, mono0) = reference();
    if TICK_SOURCE != "tsc" {
        return *calibration();
    }
    loop {
        let (ticks1, mono1) = paired_reading();
        let span = mono1.saturating_sub(mono0);
        if span >= CALIBRATION_WINDOW_NS {
            return *calibration();
        }
        if span >= SHORTEST_RATE_SPAN_NS && ticks1 > ticks0 {
            return Calibration {
                ticks0,
                mono0,
                ns_per_tick: span as f64 / (ticks1 - ticks0) as f64,
            };
        }
        std::hint::spin_loop();
    }
}

fn measure() -> Calibration {
    let (ticks0, mono0) = reference();
    if TICK_SOURCE != "tsc" {
        return Calibration {
            ticks0,
            mono0,
            ns_per_tick: 1.0,
        };
    }
    loop {
        let now = monotonic_ns();
        let Some(left) = (mono0 + CALIBRATION_WINDOW_NS)
            .checked_sub(now)
            .filter(|&l| l > 0)
        else {
            break;
        };
        std::thread::sleep(std::time::Duration::from_nanos(left));
    }
    let (ticks1, mono1) = paired_reading();
    let ns_per_tick = if ticks1 > ticks0 {
        (mono1 - mono0) as f64 / (ticks1 - ticks0) as f64
    } else {
        1.0
    };
    Calibration {
        ticks0,
        mono0,
        ns_per_tick,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_halves_are_the_ticks_between_two_reads() {
        let before = now_ticks();
        let (lo, hi) = now_ticks_halves();
        let after = now_ticks();
        let t = u64::from(hi) << 32 | u64::from(lo);
        assert!(before <= t && t <= after, "{before} <= {t} <= {after}");
    }

    #[test]
    fn ticks_convert_to_the_monotonic_clock_within_ten_microseconds() {
        let cal = calibration();
        std::thread::sleep(std::time::Duration::from_millis(20));
        let refined = cal.refined();
        let err = refined.error_now_ns().abs();
        assert!(err < 10_000, "calibration error {err} ns");
    }

    /// Ticks over a sleep agree with the monotonic clock over the same interval: the tick
    /// reads are bracketed by monotonic reads (outer: before the first and after the last;
    /// inner: after the first and before the last), so a preempted test only widens the
    /// bracket, and the only tolerance is the calibration's rate error (1 %, plus 50 µs).
    #[test]
    fn a_sleep_measured_in_ticks_matches_the_monotonic_clock() {
        use std::time::Instant;
        let cal = calibration();
        let outer0 = Instant::now();
        let t0 = now_ticks();
        let inner0 = Instant::now();
        std::thread::sleep(std::time::Duration::from_millis(30));
        let inner1 = Instant::now();
        let t1 = now_ticks();
        let outer1 = Instant::now();
        let ns = cal.ticks_to_ns(t1 - t0);
        let inner = (inner1 - inner0).as_nanos() as f64;
        let outer = (outer1 - outer0).as_nanos() as f64;
        assert!(inner >= 30e6, "slept {inner} ns for 30 ms");
        let low = inner * 0.99 - 50e3;
        let high = outer * 1.01 + 50e3;
        assert!(
            (low..=high).contains(&ns),
            "ticks say {ns} ns, the monotonic clock {inner}..{outer} ns"
        );
    }
}
