use crate::{sys, Component, Field, Unit};

/// Two counters of `getrusage(RUSAGE_THREAD)` read as a pair.
macro_rules! rusage_pair_component {
    ($(#[$doc:meta])* $ty:ident, $name:literal, $desc:literal, $a:ident : $fa:literal, $b:ident : $fb:literal) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, Default)]
        pub struct $ty {
            at_start: [u64; 2],
            value: [u64; 2],
        }

        impl $ty {
            fn read() -> [u64; 2] {
                let usage = sys::rusage(libc::RUSAGE_THREAD);
                [usage.$a as u64, usage.$b as u64]
            }
        }

        impl Component for $ty {
            const NAME: &'static str = $name;
            const DESCRIPTION: &'static str = $desc;
            const COST: &'static str = "getrusage(RUSAGE_THREAD): one syscall per operation";
            const FIELDS: &'static [Field] = &[Field::new($fa, Unit::Count), Field::new($fb, Unit::Count)];
            /// `[first field, second field]`.
            type Value = [u64; 2];
            fn start(&mut self) {
                self.at_start = Self::read();
            }
            fn stop(&mut self) {
                let now = Self::read();
                self.value = [now[0].saturating_sub(self.at_start[0]), now[1].saturating_sub(self.at_start[1])];
            }
            fn sample(&mut self) {
                self.value = Self::read();
            }
            fn value(&self) -> [u64; 2] {
                self.value
            }
            fn write_fields(&self, out: &mut [f64]) {
                out[0] = self.value[0] as f64;
                out[1] = self.value[1] as f64;
            }
        }
    };
}

rusage_pair_component!(
    /// Page faults of the calling thread: `[minor, major]`.
    PageFaults, "page_faults", "page faults of the calling thread (minor, major)",
    ru_minflt: "minor", ru_majflt: "major"
);

rusage_pair_component!(
    /// Context switches of the calling thread: `[voluntary, involuntary]`.
    ContextSwitches, "context_switches", "context switches of the calling thread (voluntary, involuntary)",
    ru_nvcsw: "voluntary", ru_nivcsw: "involuntary"
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn touching_fresh_pages_counts_minor_faults() {
        let mut c = PageFaults::default();
        let mut v: Vec<u8> = Vec::with_capacity(16 << 20);
        c.start();
        for i in (0..(16 << 20)).step_by(4096) {
            v.spare_capacity_mut()[i].write(1);
        }
        c.stop();
        std::hint::black_box(&v);
        assert!(c.value()[0] >= 1000, "{:?}", c.value());
    }

    #[test]
    fn sleeping_is_a_voluntary_context_switch() {
        let mut c = ContextSwitches::default();
        c.start();
        for _ in 0..5 {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        c.stop();
        assert!(c.value()[0] >= 5, "{:?}", c.value());
    }
}
