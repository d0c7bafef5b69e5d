//! What to optimise in a CPU+GPU run, and what a change would gain.
//!
//! A run folder's trace holds, on one clock, every CPU thread's regions and GPU API calls and
//! every kernel, copy and set on its GPU stream. [`from_run`] turns them into a dependency
//! graph ([`graph::Graph`]): program order on each thread, each launch call → its device
//! work, stream order, and the synchronizations (a call that waited for device work, a kernel
//! held by work on another stream). [`replay::replay`] re-runs the graph as a discrete-event
//! simulation with chosen kernels, regions or API calls shortened ([`speedup::Speedups`]): a
//! wait is recomputed from what it waited for, never copied from the recording, so a sync that
//! shrinks or a launch gap that appears when the GPU gets faster are predicted.
//! [`critical::path`] walks back from the run's end along the constraints that decided each
//! time: the critical path, and the time each kernel, region, API and latency has on it.

pub mod answer;
pub mod critical;
pub mod file_names;
pub mod files;
pub mod from_run;
pub mod graph;
pub mod idle;
pub mod op_kind;
pub mod replay;
pub mod speedup;
pub mod summary;

pub use from_run::from_run;
