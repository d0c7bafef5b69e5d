//! Region mode for the C API's regions: the outermost region begun while region mode is on
//! opens a user range and its end annotates the region with its range number (the values
//! join it in the summary once its image is evaluated: `gpu.<metric>` per region there), or
//! `gpu.counters_error` with the reason. Lent to the C API through the SDK's hook
//! (`metron::gpu::RegionCounters`), so that its hot path reads one flag of the SDK.

use super::*;
use std::sync::atomic::AtomicU32;

static C_RANGE_KEY: AtomicU32 = AtomicU32::new(0);
static C_REASON_KEY: AtomicU32 = AtomicU32::new(0);

/// Region mode is on for the C API's regions: the backend started with metrics and
/// `METRON_GPU_COUNTER_MODE=region` (two relaxed loads: the C API's hot path asks it).
#[inline]
pub fn c_region_mode() -> bool {
    region_requested()
}

/// Lends [`c_region_begin`]/[`c_region_end`] to the C API through the SDK's hook
/// ([`metron::gpu::set_region_counters`]), on while region mode is ([`c_region_mode`]): the C
/// API's hot path reads the SDK's flag and never calls this crate.
pub(super) fn set_c_hooks(on: bool) {
    let hooks = metron::gpu::RegionCounters {
        begin: c_region_begin,
        end: c_region_end,
    };
    metron::gpu::set_region_counters(hooks, on);
}

/// The C API opened region number `depth` (1 = outermost) of call site `site` on this thread:
/// opens a user range when region mode is on and none is open.
pub fn c_region_begin(depth: usize, site: u32) {
    if !c_region_mode() || crate::per_thread::THREAD.with(|t| t.c_open_depth.get()) != 0 {
        return;
    }
    match region_begin(site) {
        Ok(range) => {
            crate::per_thread::THREAD.with(|t| t.c_open_depth.set(depth as u32));
            crate::per_thread::THREAD.with(|t| t.c_range.set(range));
        }
        Err(e) => {
            let reason = refuse(e);
            annotate_reason(&reason);
        }
    }
}

/// The C API is about to close region number `depth` (still open, so annotations go to it):
/// when it opened the user range, closes it and annotates the region with its range number
/// (`gpu.counters_range`), by which the values join it once evaluated; or with
/// `gpu.counters_error` and the reason.
pub fn c_region_end(depth: usize) {
    if crate::per_thread::THREAD.with(|t| t.c_open_depth.get()) as usize != depth || depth == 0 {
        return;
    }
    crate::per_thread::THREAD.with(|t| t.c_open_depth.set(0));
    match region_end() {
        Ok(()) => {
            let mut key = C_RANGE_KEY.load(Ordering::Relaxed);
            if key == 0 {
                key = metron::intern(
                    metron::sinks::gpu_region_ranges::RANGE_KEY,
                    metron::CallsiteKind::AnnotationKey,
                );
                C_RANGE_KEY.store(key, Ordering::Relaxed);
            }
            let range = crate::per_thread::THREAD.with(|t| t.c_range.get());
            metron::by_id::annotate(key, metron::AnnotationValue::U64(range));
        }
        Err(e) => {
            let reason = refuse(e);
            annotate_reason(&reason);
        }
    }
}

fn annotate_reason(reason: &str) {
    let mut key = C_REASON_KEY.load(Ordering::Relaxed);
    if key == 0 {
        key = metron::intern("gpu.counters_error", metron::CallsiteKind::AnnotationKey);
        C_REASON_KEY.store(key, Ordering::Relaxed);
    }
    metron::by_id::annotate(key, metron::AnnotationValue::Str(reason));
}
