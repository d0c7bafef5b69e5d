//! What the NVIDIA backend keeps per thread, in one thread-local: in the preloaded library every
//! thread-local costs a `__tls_get_addr` call (a launch passes through four callbacks), and
//! `libmetron.so`'s thread-local block must stay within glibc's spare static TLS when it is
//! `dlopen`ed (`user-api/src/thread_block.rs`): one struct packs what separate cells would pad.

use std::cell::Cell;

/// The backend's per-thread state.
pub(crate) struct GpuThread {
    /// Depth of runtime-API calls in progress on this thread: a driver call inside one (cudart
    /// calling the driver) is not a launch of its own (the work carries the runtime call's
    /// correlation id).
    pub(crate) in_runtime: Cell<u32>,
    /// This thread's kernel tid (0 until read).
    tid: Cell<u32>,
    /// The correlation id and stream of the launch whose callbacks are in progress (region
    /// kernels).
    pub(crate) pending_correlation: Cell<u32>,
    pub(crate) pending_stream: Cell<usize>,
    /// Depth of the C region that holds this thread's counted range (region mode), 0 when none.
    pub(crate) c_open_depth: Cell<u32>,
    /// The counted range of that C region.
    pub(crate) c_range: Cell<u64>,
    /// The context of this thread's open counted region (region mode), 0 when none.
    pub(crate) region_ctx: Cell<usize>,
    /// Launches this thread made under PC sampling.
    pub(crate) pc_launches: Cell<u64>,
    /// This thread's graph launch turned CUPTI's KERNEL kind on (a counted range is open).
    pub(crate) graph_kind_on: Cell<bool>,
    /// This thread's first PC-sampled launch is open inside a set-up slice.
    pub(crate) pc_first_launch_open: Cell<bool>,
    /// This thread is launching Metron's warm-up kernel (its callbacks are Metron's own).
    pub(crate) warming_up: Cell<bool>,
    /// This thread is in a CUDA call of Metron's own (region kernels).
    pub(crate) own_call: Cell<bool>,
}

impl GpuThread {
    /// This thread's kernel tid (one system call, the first time).
    #[inline]
    pub(crate) fn tid(&self) -> u32 {
        let v = self.tid.get();
        if v != 0 {
            return v;
        }
        let v = crate::sys::gettid();
        self.tid.set(v);
        v
    }
}

thread_local! {
    pub(crate) static THREAD: GpuThread = const {
        GpuThread {
            in_runtime: Cell::new(0),
            tid: Cell::new(0),
            pending_correlation: Cell::new(0),
            pending_stream: Cell::new(0),
            c_open_depth: Cell::new(0),
            c_range: Cell::new(0),
            region_ctx: Cell::new(0),
            pc_launches: Cell::new(0),
            graph_kind_on: Cell::new(false),
            pc_first_launch_open: Cell::new(false),
            warming_up: Cell::new(false),
            own_call: Cell::new(false),
        }
    };
}
