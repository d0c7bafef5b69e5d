//! The implementations the hot-path benchmarks compare, shared by the criterion benches
//! (`benches/*.rs`) and the instruction-count harness (`src/bin/pairs.rs`,
//! `scripts/bench-callgrind.sh`).
//!
//! Every implementation is one [`Impl`]: a `setup` run once, a begin/end *pair* (one region
//! opened and closed, nothing inside), and the housekeeping it needs between chunks of pairs so
//! that a long run stays bounded in memory (Metron: [`metron::flush`]; fastrace: a new root
//! span; puffin: a new frame). The benches time only the chunks; the housekeeping runs
//! outside the timed part and outside the instruction count of the hot path.

use std::hint::black_box;

/// Installs the environment the benches want, unless the caller set it: Metron's run folder
/// under the system temporary folder and no Perfetto trace (its session would share the
/// process with the perfetto-sdk peer). Call first thing in `main`.
pub fn configure_env() {
    configure_env_with(&[]);
}

/// [`configure_env`] plus `extra` settings. Metron reads its settings before `main` (its
/// runtime starts from an ELF constructor), so when the environment lacks any of them the
/// program sets them and re-executes itself once; the second run finds them and goes on.
pub fn configure_env_with(extra: &[(&str, &str)]) {
    use std::os::unix::process::CommandExt;
    let defaults = [
        (
            "METRON_OUTPUT_PATH",
            std::env::temp_dir()
                .join("metron-bench/%exe%-%pid%-%time%")
                .to_string_lossy()
                .into_owned(),
        ),
        ("METRON_TRACE", "0".to_string()),
        ("TRACY_NO_INVARIANT_CHECK", "1".to_string()),
    ];
    let mut changed = false;
    for (name, value) in defaults {
        if std::env::var_os(name).is_none() {
            std::env::set_var(name, value);
            changed = true;
        }
    }
    for (name, value) in extra {
        if std::env::var(name).ok().as_deref() != Some(*value) {
            std::env::set_var(name, value);
            changed = true;
        }
    }
    if changed {
        let exe = std::env::current_exe().expect("the bench's own path");
        let err = std::process::Command::new(exe)
            .args(std::env::args_os().skip(1))
            .exec();
        panic!("cannot re-execute the bench with its settings: {err}");
    }
}

/// One implementation of a region begin/end pair.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Impl {
    /// Nothing but the loop (its counter update and branch): the overhead every other row
    /// includes.
    Empty,
    /// Two `rdtsc`, each result `black_box`ed: the bare floor.
    Floor,
    /// Two `rdtsc` plus two 16-byte stores into a thread-local ring: the floor of any design
    /// that records a timestamp per begin and per end.
    FloorTls,
    /// `metron::scope!` with the default bundle (wall clock).
    Metron,
    /// `metron::scope!` with collection turned off at run time (`metron::set_collecting(false)`).
    MetronDisabled,
    /// `metron::scope!` in a process started with `METRON_ENABLED=0` (harness only: the setting
    /// is read once per process).
    MetronEnvOff,
    /// `metron::scope!` with a bundle of four syscall components (wall clock, thread CPU
    /// clock, page faults, context switches).
    MetronBundle4,
    /// `metron::scope!` with a bundle of four cheap user components (a relaxed atomic load on
    /// start and on stop each).
    MetronBundle4Cheap,
    /// A call of a `#[metron::profile]` function with an empty body.
    MetronProfile,
    /// One `metron::counter!` (a single record, not a pair).
    MetronCounter,
    /// `tracing::info_span!(..).entered()` under a minimal subscriber (see [`peers::tracing_impl`]).
    #[cfg(feature = "peers")]
    Tracing,
    /// `tracy_client::span!` with a running client and no profiler connected.
    #[cfg(feature = "peers")]
    Tracy,
    /// `fastrace::local::LocalSpan::enter_with_local_parent` under a root span.
    #[cfg(feature = "peers")]
    Fastrace,
    /// `puffin::profile_scope!` with scopes on.
    #[cfg(feature = "peers")]
    Puffin,
    /// perfetto-sdk `track_event_begin!` / `track_event_end!` with an in-process session.
    #[cfg(feature = "peers")]
    Perfetto,
}

impl Impl {
    /// Every implementation, in table order.
    pub const ALL: &'static [Impl] = &[
        Impl::Empty,
        Impl::Floor,
        Impl::FloorTls,
        Impl::Metron,
        Impl::MetronDisabled,
        Impl::MetronEnvOff,
        Impl::MetronBundle4,
        Impl::MetronBundle4Cheap,
        Impl::MetronProfile,
        Impl::MetronCounter,
        #[cfg(feature = "peers")]
        Impl::Tracing,
        #[cfg(feature = "peers")]
        Impl::Tracy,
        #[cfg(feature = "peers")]
        Impl::Fastrace,
        #[cfg(feature = "peers")]
        Impl::Puffin,
        #[cfg(feature = "peers")]
        Impl::Perfetto,
    ];

    /// The name used on the command line and in tables.
    pub fn name(self) -> &'static str {
        match self {
            Impl::Empty => "empty",
            Impl::Floor => "floor",
            Impl::FloorTls => "floor-tls",
            Impl::Metron => "metron",
            Impl::MetronDisabled => "metron-disabled",
            Impl::MetronEnvOff => "metron-env-off",
            Impl::MetronBundle4 => "metron-bundle4",
            Impl::MetronBundle4Cheap => "metron-bundle4-cheap",
            Impl::MetronProfile => "metron-profile",
            Impl::MetronCounter => "metron-counter",
            #[cfg(feature = "peers")]
            Impl::Tracing => "tracing",
            #[cfg(feature = "peers")]
            Impl::Tracy => "tracy",
            #[cfg(feature = "peers")]
            Impl::Fastrace => "fastrace",
            #[cfg(feature = "peers")]
            Impl::Puffin => "puffin",
            #[cfg(feature = "peers")]
            Impl::Perfetto => "perfetto",
        }
    }

    /// The implementation called `name`.
    pub fn parse(name: &str) -> Option<Impl> {
        Impl::ALL.iter().copied().find(|i| i.name() == name)
    }

    /// Pairs per chunk: housekeeping runs between chunks. `METRON_BENCH_CHUNK=<pairs>` sets
    /// it for every implementation but fastrace (whose roots hold at most 10,240 spans).
    pub fn chunk(self) -> u64 {
        static OVERRIDE: std::sync::OnceLock<Option<u64>> = std::sync::OnceLock::new();
        let forced = *OVERRIDE.get_or_init(|| {
            std::env::var("METRON_BENCH_CHUNK")
                .ok()
                .and_then(|v| v.parse::<u64>().ok())
                .filter(|&n| n > 0)
        });
        #[cfg(feature = "peers")]
        let forced = forced.filter(|_| self != Impl::Fastrace);
        if let Some(n) = forced {
            return n;
        }
        match self {
            // Half of Metron's default 1 MiB segment (65,536 slots), so a flush per chunk keeps
            // the buffer from outrunning the flusher while still crossing segment swaps.
            Impl::Metron | Impl::MetronProfile | Impl::MetronCounter => 16_384,
            // 4 slots per pair (begin, end with 4 payload slots would be more: 1 + 4 words ...).
            Impl::MetronBundle4 | Impl::MetronBundle4Cheap => 4_096,
            // fastrace keeps at most 10,240 local spans per root; stay well below.
            #[cfg(feature = "peers")]
            Impl::Fastrace => 1_000,
            // One puffin frame per 1,000 scopes.
            #[cfg(feature = "peers")]
            Impl::Puffin => 1_000,
            _ => 16_384,
        }
    }

    /// Prepares the process for this implementation (once).
    pub fn setup(self) {
        match self {
            Impl::Empty | Impl::Floor | Impl::FloorTls => {}
            Impl::Metron
            | Impl::MetronBundle4
            | Impl::MetronBundle4Cheap
            | Impl::MetronProfile
            | Impl::MetronCounter => {
                metron::init();
                metron::set_collecting(true);
            }
            Impl::MetronDisabled => {
                metron::init();
                metron::set_collecting(false);
            }
            Impl::MetronEnvOff => {
                // METRON_ENABLED=0 is in the environment (`configure_env_with`, see `pairs`).
                assert!(
                    !metron::init(),
                    "metron-env-off needs METRON_ENABLED=0 in the environment before main"
                );
            }
            #[cfg(feature = "peers")]
            Impl::Tracing => peers::tracing_impl::setup(),
            #[cfg(feature = "peers")]
            Impl::Tracy => peers::tracy_impl::setup(),
            #[cfg(feature = "peers")]
            Impl::Fastrace => peers::fastrace_impl::setup(),
            #[cfg(feature = "peers")]
            Impl::Puffin => peers::puffin_impl::setup(),
            #[cfg(feature = "peers")]
            Impl::Perfetto => peers::perfetto_impl::setup(),
        }
    }

    /// Runs between two chunks of pairs (not timed, not in the hot-path instruction count).
    pub fn housekeeping(self) {
        match self {
            Impl::Metron
            | Impl::MetronBundle4
            | Impl::MetronBundle4Cheap
            | Impl::MetronProfile
            | Impl::MetronCounter => metron::flush(),
            #[cfg(feature = "peers")]
            Impl::Fastrace => peers::fastrace_impl::new_root(),
            #[cfg(feature = "peers")]
            Impl::Puffin => peers::puffin_impl::new_frame(),
            _ => {}
        }
    }

    /// Undoes what [`Impl::setup`] changed that other implementations would see.
    pub fn teardown(self) {
        match self {
            Impl::MetronDisabled => metron::set_collecting(true),
            #[cfg(feature = "peers")]
            Impl::Fastrace => peers::fastrace_impl::end_root(),
            _ => {}
        }
    }

    /// Runs `n` pairs in chunks with housekeeping between them; returns the time spent in the
    /// chunks only.
    pub fn run_timed(self, n: u64) -> std::time::Duration {
        self.run_timed_with(n, Impl::run_chunk)
    }

    /// Runs `n` regions around [`work`] in chunks with housekeeping between them; returns the
    /// time spent in the chunks only.
    pub fn run_work_timed(self, n: u64) -> std::time::Duration {
        self.run_timed_with(n, Impl::run_work_chunk)
    }

    /// [`work`] `n` times with no region around it, timed the same way.
    pub fn run_bare_work_timed(n: u64) -> std::time::Duration {
        Impl::Floor.run_timed_with(n, |_, k| {
            black_box(bare_work_chunk(k, black_box(1)));
        })
    }

    fn run_timed_with(self, n: u64, chunk_fn: impl Fn(Impl, u64)) -> std::time::Duration {
        let chunk = self.chunk();
        let mut left = n;
        let mut total = std::time::Duration::ZERO;
        while left > 0 {
            let k = left.min(chunk);
            let t0 = std::time::Instant::now();
            chunk_fn(self, k);
            total += t0.elapsed();
            left -= k;
            self.housekeeping();
        }
        total
    }

    /// Runs `k` pairs back to back.
    #[inline(never)]
    pub fn run_chunk(self, k: u64) {
        macro_rules! pairs {
            ($around:path) => {
                for _ in 0..k {
                    $around(|| ());
                }
            };
        }
        match self {
            Impl::MetronProfile => repeat(k, metron_profiled),
            Impl::MetronCounter => repeat(k, metron_counter),
            _ => dispatch!(self, pairs),
        }
    }

    /// Runs `k` regions, each around one [`work`] that depends on the previous one.
    #[inline(never)]
    pub fn run_work_chunk(self, k: u64) {
        macro_rules! around_work {
            ($around:path) => {{
                let mut acc = black_box(1u64);
                for _ in 0..k {
                    acc = $around(|| work(acc));
                }
                black_box(acc);
            }};
        }
        match self {
            Impl::MetronProfile => {
                let mut acc = black_box(1u64);
                for _ in 0..k {
                    acc = metron_profiled_work(acc);
                }
                black_box(acc);
            }
            Impl::MetronCounter => around_work!(counter_then),
            _ => dispatch!(self, around_work),
        }
    }
}

/// Expands `$body!(around_fn)` for the `around` function of `$imp` (the implementations that
/// are a guard around a closure).
macro_rules! dispatch {
    ($imp:expr, $body:ident) => {
        match $imp {
            Impl::Empty => $body!(empty_around),
            Impl::Floor => $body!(floor_around),
            Impl::FloorTls => $body!(floor_tls_around),
            Impl::Metron | Impl::MetronDisabled | Impl::MetronEnvOff => $body!(metron_around),
            Impl::MetronBundle4 => $body!(metron_bundle4_around),
            Impl::MetronBundle4Cheap => $body!(metron_bundle4_cheap_around),
            Impl::MetronProfile | Impl::MetronCounter => unreachable!(),
            #[cfg(feature = "peers")]
            Impl::Tracing => $body!(peers::tracing_impl::around),
            #[cfg(feature = "peers")]
            Impl::Tracy => $body!(peers::tracy_impl::around),
            #[cfg(feature = "peers")]
            Impl::Fastrace => $body!(peers::fastrace_impl::around),
            #[cfg(feature = "peers")]
            Impl::Puffin => $body!(peers::puffin_impl::around),
            #[cfg(feature = "peers")]
            Impl::Perfetto => $body!(peers::perfetto_impl::around),
        }
    };
}
use dispatch;

/// [`work`] `k` times in a dependent chain, no region.
#[inline(never)]
pub fn bare_work_chunk(k: u64, seed: u64) -> u64 {
    let mut acc = seed;
    for _ in 0..k {
        acc = work(acc);
    }
    acc
}

/// Calls `f` `k` times.
#[inline(always)]
pub fn repeat(k: u64, mut f: impl FnMut()) {
    for _ in 0..k {
        f();
    }
}

/// Reads the time-stamp counter (the same instruction Metron's clock uses).
#[inline(always)]
pub fn rdtsc() -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: `rdtsc` has no preconditions; it only reads the time-stamp counter.
        unsafe { core::arch::x86_64::_rdtsc() }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        std::time::Instant::now().elapsed().as_nanos() as u64
    }
}

/// Nothing around `f` but an optimisation barrier (so that the loop stays).
#[inline(always)]
pub fn empty_around<R>(f: impl FnOnce() -> R) -> R {
    black_box(());
    f()
}

/// The bare floor: two `rdtsc`, each result `black_box`ed, around `f`.
#[inline(always)]
pub fn floor_around<R>(f: impl FnOnce() -> R) -> R {
    black_box(rdtsc());
    let r = f();
    black_box(rdtsc());
    r
}

/// A thread-local ring of 16-byte records (a timestamp and a tag), the shape Metron writes.
pub struct Ring {
    next: std::cell::Cell<usize>,
    slots: [std::cell::Cell<[u64; 2]>; RING_SLOTS],
}

/// Slots of a [`Ring`] (a power of two).
pub const RING_SLOTS: usize = 4096;

impl Ring {
    /// An empty ring.
    pub const fn new() -> Ring {
        Ring {
            next: std::cell::Cell::new(0),
            slots: [const { std::cell::Cell::new([0; 2]) }; RING_SLOTS],
        }
    }

    /// Stores one record.
    #[inline(always)]
    pub fn push(&self, ticks: u64, tag: u64) {
        let i = self.next.get();
        self.slots[i & (RING_SLOTS - 1)].set([ticks, tag]);
        self.next.set(i.wrapping_add(1));
    }
}

impl Default for Ring {
    fn default() -> Self {
        Ring::new()
    }
}

thread_local! {
    static FLOOR_RING: Ring = const { Ring::new() };
}

/// The design's floor: two `rdtsc` and two stores into a thread-local buffer, around `f`.
#[inline(always)]
pub fn floor_tls_around<R>(f: impl FnOnce() -> R) -> R {
    FLOOR_RING.with(|ring| ring.push(rdtsc(), 1));
    let r = f();
    FLOOR_RING.with(|ring| ring.push(rdtsc(), 2));
    r
}

/// One Metron region with the default bundle around `f`.
#[inline(always)]
pub fn metron_around<R>(f: impl FnOnce() -> R) -> R {
    let _g = metron::scope!("pair");
    f()
}

/// The four syscall components of the design's example bundle.
#[derive(metron::Bundle, Default)]
pub struct Bundle4 {
    wall: metron::components::WallClock,
    cpu: metron::components::ThreadCpuClock,
    faults: metron::components::PageFaults,
    switches: metron::components::ContextSwitches,
}

/// One Metron region measured with [`Bundle4`] around `f`.
#[inline(always)]
pub fn metron_bundle4_around<R>(f: impl FnOnce() -> R) -> R {
    let _g = metron::scope!("pair_bundle4", Bundle4);
    f()
}

/// A cheap user component: the change of a process-wide atomic counter over the region.
macro_rules! cheap_component {
    ($ty:ident, $counter:ident, $name:literal) => {
        static $counter: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

        /// A cheap user component (one relaxed atomic load per start and per stop).
        #[derive(Default)]
        pub struct $ty {
            at_start: u64,
            delta: u64,
        }

        impl metron::Component for $ty {
            const NAME: &'static str = $name;
            const DESCRIPTION: &'static str = "benchmark counter";
            const COST: &'static str = "one relaxed atomic load";
            const FIELDS: &'static [metron::Field] =
                &[metron::Field::new("count", metron::Unit::Count)];
            type Value = u64;
            #[inline(always)]
            fn start(&mut self) {
                self.at_start = $counter.load(std::sync::atomic::Ordering::Relaxed);
            }
            #[inline(always)]
            fn stop(&mut self) {
                self.delta = $counter
                    .load(std::sync::atomic::Ordering::Relaxed)
                    .wrapping_sub(self.at_start);
            }
            fn value(&self) -> u64 {
                self.delta
            }
            #[inline(always)]
            fn write_fields(&self, out: &mut [f64]) {
                out[0] = self.delta as f64;
            }
        }
    };
}

cheap_component!(CheapA, CHEAP_A, "cheap_a");
cheap_component!(CheapB, CHEAP_B, "cheap_b");
cheap_component!(CheapC, CHEAP_C, "cheap_c");
cheap_component!(CheapD, CHEAP_D, "cheap_d");

/// Four cheap user components.
#[derive(metron::Bundle, Default)]
pub struct Bundle4Cheap {
    a: CheapA,
    b: CheapB,
    c: CheapC,
    d: CheapD,
}

/// One Metron region measured with [`Bundle4Cheap`] around `f`.
#[inline(always)]
pub fn metron_bundle4_cheap_around<R>(f: impl FnOnce() -> R) -> R {
    let _g = metron::scope!("pair_bundle4_cheap", Bundle4Cheap);
    f()
}

/// An empty profiled function (not inlined, as a real function would not be).
#[metron::profile]
#[inline(never)]
pub fn metron_profiled() {
    black_box(());
}

/// A profiled function that does [`work`].
#[metron::profile]
#[inline(never)]
pub fn metron_profiled_work(seed: u64) -> u64 {
    work(seed)
}

/// One counter value, then `f`.
#[inline(always)]
pub fn counter_then<R>(f: impl FnOnce() -> R) -> R {
    metron_counter();
    f()
}

/// One counter value.
#[inline(always)]
pub fn metron_counter() {
    metron::counter!("pair_counter", black_box(7u64));
}

/// Steps of dependent arithmetic in [`work`] (about 100 ns here: 5 cycles of latency each).
pub const WORK_STEPS: u32 = 64;

/// About 100 ns of dependent integer arithmetic (a xorshift-multiply chain that the compiler
/// cannot fold), the "real work" that the overhead benches put inside each region.
#[inline(always)]
pub fn work(seed: u64) -> u64 {
    let mut x = seed;
    for _ in 0..WORK_STEPS {
        x = (x ^ (x >> 29)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    }
    x
}

#[cfg(feature = "peers")]
pub mod peers;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_implementation_is_named_once() {
        for &imp in Impl::ALL {
            assert_eq!(Impl::parse(imp.name()), Some(imp));
        }
        assert_eq!(Impl::parse("nothing"), None);
    }

    #[test]
    fn the_harness_runs_pairs_and_work_in_chunks() {
        configure_env();
        for imp in [Impl::Empty, Impl::Floor, Impl::FloorTls, Impl::Metron] {
            imp.setup();
            let _ = imp.run_timed(imp.chunk() + 3);
            let _ = imp.run_work_timed(10);
            imp.teardown();
        }
        assert_ne!(bare_work_chunk(4, 1), 1, "the work is not folded away");
    }
}
