use crate::{clock, Component, Field, Unit};

/// Elapsed real time, in nanoseconds of `CLOCK_MONOTONIC`.
///
/// Cost: one `rdtsc` per start and stop (x86-64), no syscall; the tick-to-nanosecond conversion
/// happens in [`Component::value`], off the start/stop path.
#[derive(Clone, Copy, Debug, Default)]
pub struct WallClock {
    start_ticks: u64,
    elapsed_ticks: u64,
}

impl Component for WallClock {
    const NAME: &'static str = "wall_clock";
    const DESCRIPTION: &'static str = "elapsed real time (CLOCK_MONOTONIC)";
    const COST: &'static str = "one rdtsc per operation, no syscall";
    const FIELDS: &'static [Field] = &[Field::new("elapsed", Unit::Nanoseconds)];
    type Value = f64;

    #[inline(always)]
    fn start(&mut self) {
        self.start_ticks = clock::now_ticks();
    }
    #[inline(always)]
    fn stop(&mut self) {
        self.elapsed_ticks = clock::now_ticks().wrapping_sub(self.start_ticks);
    }
    #[inline(always)]
    fn sample(&mut self) {
        self.elapsed_ticks = clock::now_ticks().wrapping_sub(clock::reference().0);
    }
    fn value(&self) -> f64 {
        clock::calibration().ticks_to_ns(self.elapsed_ticks)
    }
    fn write_fields(&self, out: &mut [f64]) {
        out[0] = self.value();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wall_clock_measures_a_sleep() {
        let mut c = WallClock::default();
        c.start();
        std::thread::sleep(std::time::Duration::from_millis(10));
        c.stop();
        assert!((10e6..20e6).contains(&c.value()), "{}", c.value());
    }
}
