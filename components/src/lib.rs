//! The measurements Metron records, as composable components.
//!
//! A [`Component`] is one kind of measurement (wall clock, CPU time, page faults, ...). It may
//! `start`, `stop` and `sample`; the operations it lacks are the trait's empty default methods,
//! which inline away. Its result is one or more [`Field`]s of `f64` with a [`Unit`], written by
//! [`Component::write_fields`] into a record slot the storage layer reserves at compile time.
//!
//! A [`Bundle`] is a struct of components whose operations call each member's in field order;
//! `#[derive(metron::Bundle)]` (crate `metron-macros`) writes it.
//!
//! # Cost of each component (x86-64, Linux)
//! | component | unit | hot-path cost |
//! | --- | --- | --- |
//! | [`WallClock`] | ns | one `rdtsc` per start/stop, no syscall |
//! | [`ThreadCpuClock`] | ns | `clock_gettime(CLOCK_THREAD_CPUTIME_ID)`: vDSO falls back to a syscall (~200 ns) |
//! | [`CpuClock`] | ns | `clock_gettime(CLOCK_PROCESS_CPUTIME_ID)`: syscall |
//! | [`UserClock`], [`SystemClock`] | ns | `getrusage(RUSAGE_THREAD)`: syscall |
//! | [`PageFaults`], [`ContextSwitches`] | count | `getrusage(RUSAGE_THREAD)`: syscall |
//! | [`PeakRss`] | bytes | `getrusage(RUSAGE_SELF)`: syscall |
//! | [`PageRss`] | bytes | `pread` of `/proc/self/statm` on a cached descriptor: syscall |
//! | [`PerfCounters`] | count, ns | one `read` of the thread's perf event group: syscall |
//!
//! None of them allocates or locks after its first use.

pub mod clock;
mod cpu;
mod memory;
mod os_events;
pub mod perf;
mod sys;
mod wall;

pub use cpu::{CpuClock, SystemClock, ThreadCpuClock, UserClock};
pub use memory::{PageRss, PeakRss};
pub use os_events::{ContextSwitches, PageFaults};
pub use perf::PerfCounters;
pub use wall::WallClock;

/// The unit of a [`Field`], printed in summaries and used to scale values for display.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    /// Nanoseconds of some clock.
    Nanoseconds,
    /// Bytes of memory.
    Bytes,
    /// A plain count of events.
    Count,
    /// A dimensionless number (ratios, user values).
    Number,
}

impl Unit {
    /// Short suffix used in reports, e.g. `ns`.
    pub const fn symbol(self) -> &'static str {
        match self {
            Unit::Nanoseconds => "ns",
            Unit::Bytes => "B",
            Unit::Count => "count",
            Unit::Number => "",
        }
    }
}

/// One value a component reports, e.g. the `minor` page faults of [`PageFaults`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Field {
    /// Stable name inside the component, e.g. `minor`.
    pub name: &'static str,
    /// What the value measures.
    pub unit: Unit,
}

impl Field {
    /// A field named `name` measured in `unit`.
    pub const fn new(name: &'static str, unit: Unit) -> Self {
        Field { name, unit }
    }
}

/// Static description of a component, as stored in bundle layouts and printed by `metron avail`.
#[derive(Clone, Copy, Debug)]
pub struct ComponentInfo {
    /// [`Component::NAME`].
    pub name: &'static str,
    /// [`Component::DESCRIPTION`].
    pub description: &'static str,
    /// [`Component::COST`].
    pub cost: &'static str,
    /// [`Component::FIELDS`].
    pub fields: &'static [Field],
    /// [`Component::active_fields`].
    pub active_fields: fn() -> &'static [Field],
}

impl ComponentInfo {
    /// The fields with the names they have in this run (see [`Component::active_fields`]);
    /// as many as [`ComponentInfo::fields`]. Not for the hot path.
    pub fn named_fields(&self) -> &'static [Field] {
        let named = (self.active_fields)();
        if named.len() == self.fields.len() {
            named
        } else {
            self.fields
        }
    }
}

/// One kind of measurement.
///
/// `start` and `stop` bracket a region; `sample` reads the value at a point in time (for
/// continuous tracks). An operation a component does not have keeps the empty default.
/// All three are hot-path operations: they must not allocate, lock or block. State the cost
/// (syscall or not) in [`Component::COST`].
///
/// # Example: a user-written component
/// ```
/// use metron_components::{Component, Field, Unit};
/// use std::sync::atomic::{AtomicU64, Ordering};
///
/// static BYTES_SENT: AtomicU64 = AtomicU64::new(0);
///
/// /// Bytes this program sent while the region was open.
/// #[derive(Default)]
/// struct BytesSent { at_start: u64, delta: u64 }
///
/// impl Component for BytesSent {
///     const NAME: &'static str = "bytes_sent";
///     const DESCRIPTION: &'static str = "bytes sent on the network";
///     const COST: &'static str = "one relaxed atomic load";
///     const FIELDS: &'static [Field] = &[Field::new("bytes", Unit::Bytes)];
///     type Value = u64;
///     fn start(&mut self) { self.at_start = BYTES_SENT.load(Ordering::Relaxed); }
///     fn stop(&mut self) { self.delta = BYTES_SENT.load(Ordering::Relaxed) - self.at_start; }
///     fn value(&self) -> u64 { self.delta }
///     fn write_fields(&self, out: &mut [f64]) { out[0] = self.delta as f64; }
/// }
///
/// let mut c = BytesSent::default();
/// c.start();
/// BYTES_SENT.fetch_add(512, Ordering::Relaxed);
/// c.stop();
/// assert_eq!(c.value(), 512);
/// ```
pub trait Component: Default + Send + 'static {
    /// Stable id written into outputs, e.g. `wall_clock`.
    const NAME: &'static str;
    /// One line for `metron avail`.
    const DESCRIPTION: &'static str;
    /// What one operation costs (syscall or not), for `metron avail` and the docs.
    const COST: &'static str;
    /// The values this component reports, in the order [`Component::write_fields`] writes them.
    const FIELDS: &'static [Field];
    /// The typed result of the last start/stop pair (or sample).
    type Value: Copy + Default + core::fmt::Debug;

    /// Begins a measurement. Hot path.
    #[inline(always)]
    fn start(&mut self) {}
    /// Ends a measurement; afterwards [`Component::value`] is the region's delta. Hot path.
    #[inline(always)]
    fn stop(&mut self) {}
    /// Reads the current absolute value (for sampled tracks). Hot path.
    #[inline(always)]
    fn sample(&mut self) {}
    /// The result of the last operation.
    fn value(&self) -> Self::Value;
    /// Writes [`Component::value`] as `FIELDS.len()` numbers into `out`. A NaN means "not
    /// measured" (e.g. an unused slot): outputs leave it out.
    fn write_fields(&self, out: &mut [f64]);
    /// The fields as this run names them, for components whose fields depend on run-time
    /// configuration (e.g. [`PerfCounters`]: one field per configured event). Same length as
    /// [`Component::FIELDS`]. Called by outputs, off the hot path.
    fn active_fields() -> &'static [Field] {
        Self::FIELDS
    }

    /// This component's static description.
    const INFO: ComponentInfo = ComponentInfo {
        name: Self::NAME,
        description: Self::DESCRIPTION,
        cost: Self::COST,
        fields: Self::FIELDS,
        active_fields: Self::active_fields,
    };
}

/// A set of components measured together, written by `#[derive(metron::Bundle)]`.
///
/// `start`, `stop` and `sample` call each member's operation in field order, except where a
/// field attribute excludes it. [`Bundle::WORDS`] is the number of `f64` values the bundle
/// writes per record; the storage layer checks at compile time that they fit one record.
pub trait Bundle: Default + Send + 'static {
    /// The members, in field order.
    const COMPONENTS: &'static [ComponentInfo];
    /// Total number of fields over all members.
    const WORDS: usize;
    /// Starts every member (field order).
    fn start(&mut self);
    /// Stops every member (field order).
    fn stop(&mut self);
    /// Samples every member (field order).
    fn sample(&mut self);
    /// Writes all members' fields, member after member, into `out[..WORDS]`.
    fn write_fields(&self, out: &mut [f64]);
}

/// Sum of the field counts of `components` (usable in `const` context).
pub const fn total_fields(components: &[ComponentInfo]) -> usize {
    let mut total = 0;
    let mut i = 0;
    while i < components.len() {
        total += components[i].fields.len();
        i += 1;
    }
    total
}
