//! The HSA API calls Metron records: which table entries `METRON_GPU_AMD_HSA_API` selected,
//! and the record of one finished call. The table wrappers (`sys_api_trace.rs`) and Metron's
//! own hooks (`sys_hooks.rs`) call [`record`] after the runtime's entry returns; it costs one
//! relaxed load when the entry is not selected, and never allocates or locks.

use crate::api_table::ENTRIES;
use crate::clock::monotonic_ns;
use crate::records::{self, ApiCall, RawKind, RawRecord};
use crate::sys;
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, Ordering};

static ENABLED: [AtomicBool; ENTRIES] = [const { AtomicBool::new(false) }; ENTRIES];

/// Records calls of the entries `enabled` marks (by index), and no others.
pub fn select(enabled: &[bool]) {
    for (flag, &on) in ENABLED.iter().zip(enabled) {
        flag.store(on, Ordering::Relaxed);
    }
}

/// Whether calls of entry `id` are recorded.
pub fn enabled(id: usize) -> bool {
    ENABLED.get(id).is_some_and(|e| e.load(Ordering::Relaxed))
}

thread_local! {
    static TID: Cell<u32> = const { Cell::new(0) };
}

/// The calling thread's kernel tid (one `gettid` per thread).
pub fn tid() -> u32 {
    TID.try_with(|t| {
        if t.get() == 0 {
            t.set(sys::gettid());
        }
        t.get()
    })
    .unwrap_or(0)
}

/// Records a finished HSA API call, when `METRON_GPU_AMD_HSA_API` selected it.
pub fn record(call: ApiCall, start: u64, status: sys::Status, correlation: u32) {
    if !enabled(call.index()) {
        return;
    }
    let mut r = RawRecord::new(RawKind::Api(call));
    r.start = start;
    r.end = monotonic_ns();
    r.tid = tid();
    r.status = status;
    r.correlation = correlation;
    records::push(r);
}
