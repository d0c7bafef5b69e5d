use crate::{sys, Component, Field, Unit};

/// Defines a component whose value is the difference of one reading between start and stop.
macro_rules! delta_component {
    ($(#[$doc:meta])* $ty:ident, $name:literal, $desc:literal, $cost:literal, $field:literal, $unit:expr, $read:expr) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, Default)]
        pub struct $ty {
            at_start: u64,
            value: u64,
        }

        impl Component for $ty {
            const NAME: &'static str = $name;
            const DESCRIPTION: &'static str = $desc;
            const COST: &'static str = $cost;
            const FIELDS: &'static [Field] = &[Field::new($field, $unit)];
            type Value = u64;

            #[inline]
            fn start(&mut self) {
                self.at_start = $read();
            }
            #[inline]
            fn stop(&mut self) {
                self.value = $read().saturating_sub(self.at_start);
            }
            #[inline]
            fn sample(&mut self) {
                self.value = $read();
            }
            fn value(&self) -> u64 {
                self.value
            }
            fn write_fields(&self, out: &mut [f64]) {
                out[0] = self.value as f64;
            }
        }
    };
}

fn timeval_ns(tv: libc::timeval) -> u64 {
    tv.tv_sec as u64 * 1_000_000_000 + tv.tv_usec as u64 * 1_000
}

delta_component!(
    /// CPU time consumed by the whole process (all threads), in nanoseconds.
    ///
    /// Cost: `clock_gettime(CLOCK_PROCESS_CPUTIME_ID)`, a syscall per operation.
    CpuClock, "cpu_clock", "CPU time of the process, all threads (CLOCK_PROCESS_CPUTIME_ID)",
    "clock_gettime(CLOCK_PROCESS_CPUTIME_ID): one syscall per operation",
    "time", Unit::Nanoseconds, || sys::clock_ns(libc::CLOCK_PROCESS_CPUTIME_ID)
);

delta_component!(
    /// CPU time consumed by the calling thread, in nanoseconds.
    ///
    /// Cost: `clock_gettime(CLOCK_THREAD_CPUTIME_ID)`, a syscall per operation.
    ThreadCpuClock, "thread_cpu_clock", "CPU time of the calling thread (CLOCK_THREAD_CPUTIME_ID)",
    "clock_gettime(CLOCK_THREAD_CPUTIME_ID): one syscall per operation",
    "time", Unit::Nanoseconds, || sys::clock_ns(libc::CLOCK_THREAD_CPUTIME_ID)
);

delta_component!(
    /// User-mode CPU time of the calling thread, in nanoseconds (microsecond resolution).
    ///
    /// Cost: `getrusage(RUSAGE_THREAD)`, a syscall per operation.
    UserClock, "user_clock", "user-mode CPU time of the calling thread (getrusage)",
    "getrusage(RUSAGE_THREAD): one syscall per operation",
    "time", Unit::Nanoseconds, || timeval_ns(sys::rusage(libc::RUSAGE_THREAD).ru_utime)
);

delta_component!(
    /// Kernel-mode CPU time of the calling thread, in nanoseconds (microsecond resolution).
    ///
    /// Cost: `getrusage(RUSAGE_THREAD)`, a syscall per operation.
    SystemClock, "system_clock", "kernel-mode CPU time of the calling thread (getrusage)",
    "getrusage(RUSAGE_THREAD): one syscall per operation",
    "time", Unit::Nanoseconds, || timeval_ns(sys::rusage(libc::RUSAGE_THREAD).ru_stime)
);

#[cfg(test)]
mod tests {
    use super::*;

    /// This thread's CPU time by `getrusage(RUSAGE_THREAD)`, in ns: a source independent of
    /// `CLOCK_THREAD_CPUTIME_ID`.
    fn rusage_cpu_ns() -> u64 {
        let usage = sys::rusage(libc::RUSAGE_THREAD);
        timeval_ns(usage.ru_utime) + timeval_ns(usage.ru_stime)
    }

    /// Spins in user space until this thread has used `ms` of CPU time (by `getrusage`),
    /// however long that takes on a loaded machine: spinning by wall time gives less CPU time
    /// when other threads share the cores. The clock is read only every ~10^5 multiplications,
    /// so the time is user time, not the system time of the `getrusage` calls.
    fn spin_ms(ms: u64) {
        let end = rusage_cpu_ns() + ms * 1_000_000;
        let mut x = 1u64;
        while rusage_cpu_ns() < end {
            for _ in 0..100_000 {
                x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
            }
        }
    }

    #[test]
    fn thread_cpu_clock_counts_spinning_but_not_sleeping() {
        let mut c = ThreadCpuClock::default();
        c.start();
        spin_ms(20);
        std::thread::sleep(std::time::Duration::from_millis(50));
        c.stop();
        let ms = c.value() as f64 / 1e6;
        assert!((15.0..45.0).contains(&ms), "{ms} ms");
    }

    #[test]
    fn user_clock_counts_user_time() {
        let mut c = UserClock::default();
        c.start();
        spin_ms(30);
        c.stop();
        assert!(c.value() > 5_000_000, "{}", c.value());
    }
}
