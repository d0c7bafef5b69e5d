//! The built-in sinks.

pub mod perfetto;
mod perfetto_encode;
mod perfetto_session;
mod stats;
pub mod summary;

pub use stats::Stats;
