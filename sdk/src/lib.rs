//! Metron: an embeddable instrumentation SDK for CPU and GPU applications.
//!
//! Mark regions with `#[metron::profile]` or `let _g = metron::scope!("name");`, add marks,
//! counters and annotations, and Metron records them into per-thread fixed-capacity buffers
//! that never allocate on the hot path. A background flusher thread decodes them onto one
//! clock (`CLOCK_MONOTONIC` ns) and writes a run folder: `summary.txt`, `summary.json` and
//! `metadata.json` (later: the Perfetto trace and CSV tables).
//!
//! ```no_run
//! #[metron::profile]
//! fn solve(n: u64) -> u64 {
//!     let _g = metron::scope!("inner");
//!     metron::counter!("n", n);
//!     (0..n).sum()
//! }
//! solve(1000);
//! // At exit: "metron: wrote metron-output/<exe>-<pid>-<time> (N records, 0 dropped)"
//! ```
//!
//! # Design constraints
//! - The hot path (region begin/end, marks, counters) takes no lock, makes no allocation and
//!   no syscall with the default bundle: a relaxed load of the global state, the call site's
//!   cached id, one `rdtsc`, and two stores into this thread's buffer.
//! - Every call site is a `static` [`Callsite`] interned once; records hold ids, not strings.
//! - Full buffers follow the [`buffer::Policy`]: lossless (swap in a fresh segment) or discard
//!   (drop and count). Drops are always reported.
//!
//! # Speed
//! Measured on a 2-core x86-64 VM (callgrind, exact): a `scope!` begin+end pair with the
//! default bundle costs 32 instructions (tracing with a minimal subscriber 184, tracy-client
//! 127, fastrace 191, puffin 904, perfetto-sdk 3,117), and 5 with collection disabled at run
//! time; in a tight loop it runs at 1.05x the time of two bare `rdtsc`. See the README's
//! Performance section for the full table and how to reproduce it.
//!
//! # Feature flags
//! - `enabled` (default): instrumentation on. Without it, every macro still parses and
//!   type-checks its arguments but emits no code, and guards are zero-sized.

// Without `enabled` the recording machinery stays compiled (the buffered-services API is
// public) but the region API does not reach it.
#![cfg_attr(not(feature = "enabled"), allow(dead_code, unused_imports))]

mod backend_threads;
pub mod buffer;
mod callsite;
pub mod counters;
mod crash;
mod first_use;
pub mod gpu;
pub mod info;
pub mod lifecycle;
mod metadata;
mod output_path;
mod pipeline;
pub mod ranks;
pub use metron_core::record;
mod region;
use metron_core::run_state;
mod run_report;
mod runtime;
pub mod sampling;
pub mod settings;
pub mod shared_runtime;
mod sys;
mod thread_buffer;

pub use callsite::{intern, resolve, Callsite, CallsiteKind};
pub use metadata::add_refusals;
pub use metadata::add_section as add_metadata_section;
pub use metron_components as components;
pub use metron_components::{clock, Bundle, Component, ComponentInfo, Field, Unit};
pub use metron_macros::{profile, Bundle};
pub use output_path::expand_for as expand_output_path_for;
pub use output_path::expand_now as expand_output_path;
pub use output_path::{claim as claim_run_folder, ClaimedFolder};
#[doc(hidden)]
pub use pipeline::DecodeBench;
pub use pipeline::ThreadStats;
pub use region::{
    annotate as annotate_with, async_begin, async_end, by_id, counter as counter_value,
    mark as mark_at, set_thread_name, AnnotationValue, BundleScope, NoBundle, Region, Scope,
};
pub use run_report::RunReport;
pub use sampling::Backtrace;
pub use shared_runtime::{process_runtime, ProcessRuntime};
pub use sink::{
    EmptyRegion, Event, MetadataNeed, Present, RunInfo, SampleTrigger, Sink, ThreadInfo,
};
// The decoding layer and the outputs live in their own crate, below the runtime.
use metron_core::sink;
pub use metron_sinks::sinks;
pub use thread_buffer::{pause_thread, resume_thread, thread_paused};

/// Makes sure the runtime is up (it normally starts before `main`: settings read, clock
/// calibrated, flusher running) and marks the run as used, so that it is written at exit even
/// if nothing is recorded. Returns false when `METRON_ENABLED` is off.
pub fn init() -> bool {
    if cfg!(feature = "enabled") {
        runtime::mark_used();
    }
    cfg!(feature = "enabled") && runtime::started_and_collecting()
}

/// Sets the run folder from a template with the keys of `METRON_OUTPUT_PATH` (`%pid%`, `%exe%`,
/// `%hostname%`, `%time%`, `%rank%`, `%size%`, `%env{NAME}%`), overriding the setting. The
/// runtime starts before `main` with the setting's folder; this moves it, which is possible
/// until the flusher first hands records to the outputs (call it first thing in `main`).
/// Returns the folder, or why it cannot be changed; an unknown key is kept as written and
/// reported on stderr.
pub fn set_output_path(template: &str) -> Result<std::path::PathBuf, String> {
    runtime::set_output_path_reporting(template)
}

/// True when recording is on (starts the runtime if needed; always false when instrumentation
/// is compiled out).
pub fn collecting() -> bool {
    cfg!(feature = "enabled") && runtime::started_and_collecting()
}

/// Delivers everything recorded so far, on every thread, to the sinks; returns when done.
pub fn flush() {
    runtime::flush();
}

/// Ends the run now: drains every buffer, writes the run folder and prints where it went.
/// Runs automatically at normal exit; only the first call does anything.
pub fn finish() -> Option<RunReport> {
    runtime::mark_used();
    runtime::finish()
}

/// Turns recording on or off for the whole process.
pub fn set_collecting(on: bool) {
    runtime::set_collecting(on);
    gpu::collecting_changed(on);
}

/// Adds a sink that receives every event flushed from now on (register it before recording
/// to see everything).
pub fn add_sink(sink: Box<dyn Sink>) {
    runtime::add_sink(sink);
}

/// Items the macros expand to. Not a public API.
#[doc(hidden)]
pub mod __private {
    pub use crate::callsite::{Callsite, CallsiteKind};
    pub use crate::record::MAX_BUNDLE_WORDS;
    pub use crate::region::{
        annotate, counter, mark, AnnotationValue, BundleScope, Instrumented, NoBundle, Region,
        Scope, WithBundle,
    };
    pub use crate::{profile_future, profile_future_bundle, scope as profile_scope};
    pub use metron_components::{total_fields, Bundle, Component, ComponentInfo};
    pub use static_assertions::const_assert;

    /// Lets threads record into this copy's runtime (what Metron's first constructor does).
    /// For bindings linked from a static archive, whose linker may have left out the archive
    /// member that holds the constructor: they call it on a thread's first use.
    pub fn let_threads_record() {
        crate::lifecycle::let_threads_record();
    }
}

/// Declares the `static` call site of a macro invocation.
#[doc(hidden)]
#[macro_export]
macro_rules! __callsite {
    ($name:expr, $kind:ident) => {
        $crate::__callsite!($name, $kind, &[])
    };
    ($name:expr, $kind:ident, $components:expr) => {{
        static CALLSITE: $crate::__private::Callsite = $crate::__private::Callsite::new(
            $name,
            ::core::file!(),
            ::core::line!(),
            ::core::module_path!(),
            $crate::__private::CallsiteKind::$kind,
            $components,
        );
        &CALLSITE
    }};
}

/// Begins a region and returns its guard; the region ends when the guard is dropped.
///
/// `scope!("name")` measures the wall clock; `scope!("name", MyBundle)` also measures the
/// components of a `#[derive(metron::Bundle)]` struct.
///
/// ```no_run
/// let _load = metron::scope!("load");
/// ```
#[cfg(feature = "enabled")]
#[macro_export]
macro_rules! scope {
    ($name:expr) => {
        $crate::__private::Scope::enter($crate::__callsite!($name, Region))
    };
    ($name:expr, $bundle:ty) => {
        $crate::__private::BundleScope::<$bundle>::enter($crate::__callsite!(
            $name,
            Region,
            <$bundle as $crate::__private::Bundle>::COMPONENTS
        ))
    };
}

/// Begins a region and returns its guard (instrumentation compiled out: records nothing).
#[cfg(not(feature = "enabled"))]
#[macro_export]
macro_rules! scope {
    ($name:expr) => {{
        let _: &'static str = $name;
        $crate::__private::Scope::disabled()
    }};
    ($name:expr, $bundle:ty) => {{
        let _: &'static str = $name;
        $crate::__private::BundleScope::<$bundle>::disabled()
    }};
}

/// Begins a region that is ended explicitly with `.end()` (it may cross function boundaries
/// on the same thread). `begin!("name", MyBundle)` measures a bundle too.
///
/// ```no_run
/// let r = metron::begin!("phase 1");
/// // ...
/// r.end();
/// ```
#[cfg(feature = "enabled")]
#[macro_export]
macro_rules! begin {
    ($name:expr) => {
        $crate::__private::Region::begin($crate::__callsite!($name, Region))
    };
    ($name:expr, $bundle:ty) => {
        $crate::__private::Region::<$bundle>::begin_bundle($crate::__callsite!(
            $name,
            Region,
            <$bundle as $crate::__private::Bundle>::COMPONENTS
        ))
    };
}

/// Begins an explicit region (instrumentation compiled out: records nothing).
#[cfg(not(feature = "enabled"))]
#[macro_export]
macro_rules! begin {
    ($name:expr) => {{
        let _: &'static str = $name;
        $crate::__private::Region::begin($crate::__callsite!("", Region))
    }};
    ($name:expr, $bundle:ty) => {{
        let _: &'static str = $name;
        $crate::__private::Region::<$bundle>::begin_bundle($crate::__callsite!("", Region))
    }};
}

/// Records an instant mark: `mark!("checkpoint")`.
#[cfg(feature = "enabled")]
#[macro_export]
macro_rules! mark {
    ($name:expr) => {
        $crate::__private::mark($crate::__callsite!($name, Instant))
    };
}

/// Records an instant mark (instrumentation compiled out: records nothing).
#[cfg(not(feature = "enabled"))]
#[macro_export]
macro_rules! mark {
    ($name:expr) => {{
        let _: &'static str = $name;
    }};
}

/// Records a value of a named counter: `counter!("queue_depth", 17)`. Any numeric value is
/// accepted and stored as `f64`.
#[cfg(feature = "enabled")]
#[macro_export]
macro_rules! counter {
    ($name:expr, $value:expr) => {
        $crate::__private::counter($crate::__callsite!($name, Counter), ($value) as f64)
    };
}

/// Records a counter value (instrumentation compiled out: the value is type-checked, not
/// evaluated).
#[cfg(not(feature = "enabled"))]
#[macro_export]
macro_rules! counter {
    ($name:expr, $value:expr) => {{
        let _: &'static str = $name;
        if false {
            let _ = ($value) as f64;
        }
    }};
}

/// Annotates the innermost open region of this thread: `annotate!("rows", 1024)`. Values:
/// integers, floats, `bool`, `&str` (cut to 240 bytes).
#[cfg(feature = "enabled")]
#[macro_export]
macro_rules! annotate {
    ($key:expr, $value:expr) => {
        $crate::__private::annotate(
            $crate::__callsite!($key, AnnotationKey),
            $crate::__private::AnnotationValue::from($value),
        )
    };
}

/// Annotates the open region (instrumentation compiled out: the value is type-checked, not
/// evaluated).
#[cfg(not(feature = "enabled"))]
#[macro_export]
macro_rules! annotate {
    ($key:expr, $value:expr) => {{
        let _: &'static str = $key;
        if false {
            let _ = $crate::__private::AnnotationValue::from($value);
        }
    }};
}

/// Wraps a future so that each poll is a region (used by `#[profile]` on `async fn`).
#[doc(hidden)]
#[macro_export]
macro_rules! profile_future {
    ($name:expr, $future:expr) => {
        $crate::__private::Instrumented::<_, $crate::__private::NoBundle>::new(
            $crate::__callsite!($name, Region),
            $future,
        )
    };
}

/// [`profile_future!`] with a bundle.
#[doc(hidden)]
#[macro_export]
macro_rules! profile_future_bundle {
    ($name:expr, $bundle:ty, $future:expr) => {
        $crate::__private::Instrumented::<_, $crate::__private::WithBundle<$bundle>>::new(
            $crate::__callsite!(
                $name,
                Region,
                <$bundle as $crate::__private::Bundle>::COMPONENTS
            ),
            $future,
        )
    };
}
