//! Metron's outputs ([`sinks`]): the summary, the Perfetto trace, `kernels.csv`, the sampled
//! profiles, the pictures and exports at the end of a run. Each is a [`Sink`] over the decoded
//! [`Event`]s of `metron-core`, re-exported here so that a sink names one crate.
//!
//! A separate crate so that the compiler keeps the direction: nothing here can name the
//! runtime, the sources or the lifecycle of the `metron` crate. A sink gets what it needs as
//! plain values and hooks when the runtime makes it (`docs/src/architecture.md`, "Layers").
//! Users name `metron`, which re-exports all of this.

pub use metron_core::{annotation, callsite, sink};
pub mod sinks;
mod sys;

pub use metron_core::{AnnotationValue, Callsite, CallsiteKind};
pub use metron_core::{Event, RunInfo, SampleTrigger, Sink, ThreadInfo};
