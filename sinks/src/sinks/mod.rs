//! The built-in sinks.

mod async_ranges;
pub mod folded;
pub mod gpu_join;
pub mod gpu_pc_samples;
pub mod gpu_pm_sampling;
pub mod gpu_region_ranges;
#[doc(hidden)]
pub mod gpu_summary;
pub mod kernels_csv;
pub mod late_files;
pub mod perfetto;
mod perfetto_async;
mod perfetto_encode;
mod perfetto_gpu;
mod perfetto_samples;
mod perfetto_session;
mod profile;
#[doc(hidden)]
pub mod space;
mod stats;
pub mod summary;

pub use stats::Stats;
