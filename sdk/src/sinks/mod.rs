//! The built-in sinks.

mod stats;
pub mod summary;

pub use stats::Stats;
