//! Metron's ground floor: what both sides of a thread's buffer agree on.
//!
//! - [`record`]: the byte layout of a record, written by the hot path, read by the back end.
//! - [`callsite`]: the static descriptors a record's id stands for, and the table that numbers
//!   them (forwarded to another copy of Metron's table when this copy joined one).
//! - [`annotation`]: the values a region can be annotated with.
//! - [`sink`]: what records decode into ([`Event`], the GPU records of [`sink::gpu`]) and the
//!   [`Sink`] trait every output implements.
//! - [`run_state`]: whether the run records now, read by the hot path, written by the runtime.
//!
//! Everything above depends on this crate and nothing here names anything above: the hot path
//! (`metron`), the outputs (`metron-sinks`) and the GPU backends meet here, and Cargo keeps the
//! direction.

pub mod annotation;
pub mod callsite;
pub mod record;
pub mod run_state;
pub mod sink;

pub use annotation::AnnotationValue;
pub use callsite::{Callsite, CallsiteKind};
pub use sink::{EmptyRegion, Event, MetadataNeed, RunInfo, SampleTrigger, Sink, ThreadInfo};
