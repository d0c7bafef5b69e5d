//! HSA's system timestamps on Metron's clock. The runtime reports dispatch and copy times in
//! its "system domain" (`hsa_system_get_info(HSA_SYSTEM_INFO_TIMESTAMP)`, at
//! `HSA_SYSTEM_INFO_TIMESTAMP_FREQUENCY`), which is a host clock of the runtime's choosing
//! (`CLOCK_MONOTONIC_RAW` or `CLOCK_BOOTTIME` depending on the ROCm release). Metron pairs it
//! with `CLOCK_MONOTONIC` (the system read between two monotonic reads, the tightest of a few
//! tries) and converts with the frequency; the drain thread re-pairs before each batch, so the
//! two clocks' drift only acts over one drain period.

/// One pairing of the runtime's system clock with `CLOCK_MONOTONIC`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Calibration {
    /// System ticks at the pairing.
    pub system: u64,
    /// `CLOCK_MONOTONIC` ns at the pairing.
    pub monotonic_ns: u64,
    /// System ticks per second.
    pub frequency: u64,
    /// Width of the best pairing's window, ns (its uncertainty).
    pub window_ns: u64,
}

impl Calibration {
    /// Pairs the clocks: `read_system` is called between two `CLOCK_MONOTONIC` reads, five
    /// times; the narrowest window wins. `None` if the system clock cannot be read.
    pub fn measure(
        frequency: u64,
        mut read_system: impl FnMut() -> Option<u64>,
    ) -> Option<Calibration> {
        if frequency == 0 {
            return None;
        }
        let mut best: Option<Calibration> = None;
        for _ in 0..5 {
            let before = monotonic_ns();
            let system = read_system()?;
            let after = monotonic_ns();
            let c = Calibration {
                system,
                monotonic_ns: before + (after - before) / 2,
                frequency,
                window_ns: after - before,
            };
            if best.is_none_or(|b| c.window_ns < b.window_ns) {
                best = Some(c);
            }
        }
        best
    }

    /// A system tick as `CLOCK_MONOTONIC` ns.
    pub fn to_monotonic(self, system: u64) -> u64 {
        let scale =
            |ticks: u64| (u128::from(ticks) * 1_000_000_000 / u128::from(self.frequency)) as u64;
        if system >= self.system {
            self.monotonic_ns + scale(system - self.system)
        } else {
            self.monotonic_ns
                .saturating_sub(scale(self.system - system))
        }
    }
}

/// `CLOCK_MONOTONIC` in ns: Metron's one clock.
pub use metron::clock::monotonic_ns;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn converts_at_the_clocks_frequency_on_both_sides_of_the_pairing() {
        let c = Calibration {
            system: 1_000,
            monotonic_ns: 5_000_000,
            frequency: 100_000_000, // 10 ns per tick
            window_ns: 40,
        };
        assert_eq!(c.to_monotonic(1_000), 5_000_000);
        assert_eq!(c.to_monotonic(1_250), 5_002_500);
        assert_eq!(c.to_monotonic(900), 4_999_000);
    }

    #[test]
    fn measuring_pairs_a_clock_that_runs_with_monotonic() {
        // A "system clock" that is CLOCK_MONOTONIC / 10 + 777 (100 MHz, another origin).
        let c = Calibration::measure(100_000_000, || Some(monotonic_ns() / 10 + 777)).unwrap();
        let now = monotonic_ns();
        let converted = c.to_monotonic(now / 10 + 777);
        assert!(
            converted.abs_diff(now) <= c.window_ns + 20,
            "{converted} vs {now}: {c:?}"
        );
        assert!(Calibration::measure(0, || Some(1)).is_none());
        assert!(Calibration::measure(1, || None).is_none());
    }
}
