//! A CPU workload with a known split between two functions, for the sampling tests.
//!
//! Each step calls the first function for `3n` iterations and the second for `n`, so about
//! 75 % of the time goes to the first; the step times both calls, because the two need not
//! run at the same speed per iteration on every CPU, and tests compare sampled shares with
//! [`Split::first_share`]. `n` varies along a fixed sequence: with constant lengths the loop
//! has a period, and a period close to a divisor of the 1 ms sampling interval puts every
//! sample at nearly the same phase, which skewed a 75 % share to 81.8 % once in CI.

use std::time::Instant;

/// Time spent in each of the two functions so far.
#[derive(Clone, Copy, Debug, Default)]
pub struct Split {
    steps: u64,
    /// Nanoseconds (wall clock) inside the first function.
    pub first_ns: u64,
    /// Nanoseconds (wall clock) inside the second function.
    pub second_ns: u64,
}

impl Split {
    /// One step: `first(3n)` then `second(n)`, both timed; returns their results xor-ed.
    #[inline(always)]
    pub fn step(&mut self, first: impl FnOnce(u64) -> u64, second: impl FnOnce(u64) -> u64) -> u64 {
        self.steps += 1;
        let n = 7_000 + (self.steps * 7_919) % 6_007;
        let t0 = Instant::now();
        let x = first(3 * n);
        let t1 = Instant::now();
        let y = second(n);
        let t2 = Instant::now();
        self.first_ns += (t1 - t0).as_nanos() as u64;
        self.second_ns += (t2 - t1).as_nanos() as u64;
        x ^ y
    }

    /// The first function's share of the time spent in both.
    pub fn first_share(&self) -> f64 {
        self.first_ns as f64 / (self.first_ns + self.second_ns).max(1) as f64
    }
}

/// The calling thread's CPU time in nanoseconds.
pub fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec for the duration of the call.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID)");
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}
