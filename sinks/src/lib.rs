//! The layer of Metron below its runtime: what a record decodes into ([`Event`], the
//! [`Callsite`] a record's id stands for, [`AnnotationValue`], the GPU records of
//! [`sink::gpu`]), the [`Sink`] trait, and the outputs that implement it ([`sinks`]: the
//! summary, the Perfetto trace, `kernels.csv`, the sampled profiles, the pictures and exports
//! at the end of a run).
//!
//! A separate crate so that the compiler keeps the direction: nothing here can name the
//! runtime, the sources or the lifecycle of the `metron` crate. A sink gets what it needs as
//! plain values and hooks when the runtime makes it (`docs/src/architecture.md`, "Layers").
//! Users name `metron`, which re-exports all of this; only the call-site registration is
//! provided from above, by the symbol `metron::callsite` defines (see [`Callsite`]).

pub mod annotation;
pub mod callsite;
pub mod sink;
pub mod sinks;
mod sys;

pub use annotation::AnnotationValue;
pub use callsite::{Callsite, CallsiteKind};
pub use sink::{Event, RunInfo, SampleTrigger, Sink, ThreadInfo};
