//! The HSA interception itself: agents, intercepted queues, the pool of completion signals, and
//! what happens to each packet and each completion.
//!
//! **Per dispatch** (application thread, inside the queue's doorbell write): a free signal is
//! taken from a preallocated pool (lock-free), the dispatch's fields and the application's own
//! completion signal are stored in that signal's slot, the packet is copied with Metron's
//! signal as its completion signal, and the runtime is asked to call [`completed`] when the
//! signal drops below 1. The launch annotation (correlation id) goes into Metron's per-thread
//! buffer, as for CUDA launches. No allocation, no lock of Metron's; when no signal is free the
//! packet passes unchanged and is counted (`untimed`).
//!
//! **Per completion** (the runtime's signal thread): the dispatch's start and end ticks
//! (`hsa_amd_profiling_get_dispatch_time`) in the system domain
//! (`hsa_amd_profiling_convert_tick_to_system_domain`) go into the record queue; then the
//! application's completion signal is decremented as the packet processor would have, and the
//! slot is free again.

pub use crate::agent::Agent;
use crate::records::{self, CopyKind, RawKind, RawRecord};
use crate::sys::{
    self, DispatchPacket, Handle, InterceptHandler, PacketWriter, Runtime, SignalHandler,
};
use crossbeam_queue::ArrayQueue;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::OnceLock;

static RUNTIME: OnceLock<Runtime> = OnceLock::new();
static AGENTS: OnceLock<Vec<Agent>> = OnceLock::new();
static TRACING: AtomicBool = AtomicBool::new(false);
static LAUNCH_KEY_ID: AtomicU32 = AtomicU32::new(0);
static NEXT_CORRELATION: AtomicU32 = AtomicU32::new(1);

/// Counters for `metadata.json`.
pub struct Counts {
    pub queues: AtomicU64,
    pub dispatches: AtomicU64,
    pub copies: AtomicU64,
    /// Dispatches and copies passed on without timing: no free signal.
    pub untimed_no_signal: AtomicU64,
    /// Completions whose timestamps the runtime did not give.
    pub untimed_no_timestamp: AtomicU64,
    /// Queues the runtime would not intercept (created without tracing).
    pub queues_not_intercepted: AtomicU64,
}

pub static COUNTS: Counts = Counts {
    queues: AtomicU64::new(0),
    dispatches: AtomicU64::new(0),
    copies: AtomicU64::new(0),
    untimed_no_signal: AtomicU64::new(0),
    untimed_no_timestamp: AtomicU64::new(0),
    queues_not_intercepted: AtomicU64::new(0),
};

/// The C entry points the runtime calls back into. The crate root hands them over with the
/// runtime: this module never names `sys_hooks`, whose entry points call into it.
#[derive(Clone, Copy)]
pub struct Handlers {
    /// Receives the packets written to every queue Metron intercepts.
    pub on_packets: InterceptHandler,
    /// Runs when one of Metron's completion signals drops below 1.
    pub on_completion: SignalHandler,
}

static HANDLERS: OnceLock<Handlers> = OnceLock::new();

/// Keeps the runtime's entries and Metron's callbacks (first call wins).
pub fn set_runtime(rt: Runtime, handlers: Handlers) -> &'static Runtime {
    let _ = HANDLERS.set(handlers);
    RUNTIME.get_or_init(|| rt)
}

/// The runtime's own entries (set in `OnLoad` before any wrapper can run).
pub fn runtime() -> Option<&'static Runtime> {
    RUNTIME.get()
}

/// Turns recording on or off (off: every wrapper passes through).
pub fn set_tracing(on: bool) {
    TRACING.store(on, Ordering::Release);
}

/// Whether wrappers record.
pub fn tracing() -> bool {
    TRACING.load(Ordering::Acquire)
}

/// Sets the interned launch-annotation key.
pub fn set_launch_key(id: u32) {
    LAUNCH_KEY_ID.store(id, Ordering::Release);
}

/// Reads the agents once (GPUs numbered in the runtime's order).
pub fn agents(rt: &Runtime) -> &'static [Agent] {
    AGENTS.get_or_init(|| {
        let mut next_gpu = 0;
        rt.agents()
            .into_iter()
            .map(|handle| {
                let gpu = rt.agent_device_type(handle) == Some(sys::DEVICE_TYPE_GPU);
                let arch = rt
                    .agent_string(handle, sys::AGENT_INFO_NAME)
                    .unwrap_or_default();
                let name = rt
                    .agent_string(handle, sys::AMD_AGENT_INFO_PRODUCT_NAME)
                    .filter(|n| !n.is_empty())
                    .unwrap_or_else(|| arch.clone());
                let device = if gpu {
                    next_gpu += 1;
                    next_gpu - 1
                } else {
                    u32::MAX
                };
                Agent {
                    handle,
                    gpu,
                    device,
                    arch,
                    name,
                }
            })
            .collect()
    })
}

fn agent(handle: Handle) -> Option<&'static Agent> {
    AGENTS.get()?.iter().find(|a| a.handle == handle)
}

/// The architecture of the first GPU (for kernel descriptors of executables).
pub fn first_gpu_arch() -> String {
    AGENTS
        .get()
        .and_then(|a| a.iter().find(|a| a.gpu))
        .map_or_else(String::new, |a| a.arch.clone())
}

const MAX_QUEUES: usize = 1024;
static QUEUE_AGENT: [AtomicU64; MAX_QUEUES] = [const { AtomicU64::new(0) }; MAX_QUEUES];
static QUEUE_ID: [AtomicU64; MAX_QUEUES] = [const { AtomicU64::new(0) }; MAX_QUEUES];
static QUEUE_DEVICE: [AtomicU32; MAX_QUEUES] = [const { AtomicU32::new(0) }; MAX_QUEUES];
static NEXT_QUEUE: AtomicUsize = AtomicUsize::new(0);

/// A completion signal of Metron's and what it stands in for.
struct Slot {
    signal: AtomicU64,
    /// The application's completion signal (0: none).
    original: AtomicU64,
    agent: AtomicU64,
    /// 0: a dispatch; 1 + CopyKind index: a copy.
    kind: AtomicU8,
    queue_slot: AtomicU32,
    device: AtomicU32,
    correlation: AtomicU32,
    kernel_object: AtomicU64,
    grid: [AtomicU32; 3],
    /// Work-group x | y << 16 | z << 32.
    workgroup: AtomicU64,
    /// Group segment | private segment << 32 (dispatches); bytes (copies).
    sizes: AtomicU64,
    /// The counter profile of the dispatch (`u32::MAX`: not counted).
    counter: AtomicU32,
}

impl Slot {
    fn new(signal: Handle) -> Slot {
        Slot {
            signal: AtomicU64::new(signal),
            original: AtomicU64::new(0),
            agent: AtomicU64::new(0),
            kind: AtomicU8::new(0),
            queue_slot: AtomicU32::new(0),
            device: AtomicU32::new(0),
            correlation: AtomicU32::new(0),
            kernel_object: AtomicU64::new(0),
            grid: [const { AtomicU32::new(0) }; 3],
            workgroup: AtomicU64::new(0),
            sizes: AtomicU64::new(0),
            counter: AtomicU32::new(u32::MAX),
        }
    }
}

struct Pool {
    slots: Box<[Slot]>,
    free: ArrayQueue<u32>,
}

static POOL: OnceLock<Pool> = OnceLock::new();
static POOL_SIZE: AtomicUsize = AtomicUsize::new(1024);

/// Sets how many completion signals the pool makes (before its first use).
pub fn set_pool_size(n: usize) {
    POOL_SIZE.store(n.clamp(1, 1 << 16), Ordering::Relaxed);
}

/// Makes the signals (once; on the first queue or copy, an application call, never a packet).
fn pool(rt: &Runtime) -> &'static Pool {
    POOL.get_or_init(|| {
        let want = POOL_SIZE.load(Ordering::Relaxed);
        let slots: Box<[Slot]> = (0..want)
            .map_while(|_| rt.create_signal())
            .map(Slot::new)
            .collect();
        let free = ArrayQueue::new(slots.len().max(1));
        for i in 0..slots.len() {
            let _ = free.push(i as u32);
        }
        Pool { slots, free }
    })
}

/// (signals made, signals in use now).
pub fn pool_usage() -> (usize, usize) {
    POOL.get()
        .map_or((0, 0), |p| (p.slots.len(), p.slots.len() - p.free.len()))
}

/// A queue the runtime created for the application: dispatch timestamps on, and its packets
/// routed through [`packets_written`] (the intercept's `data` is the queue's slot here).
pub fn queue_created(rt: &Runtime, agent_handle: Handle, queue: *mut sys::Queue, queue_id: u64) {
    let slot = NEXT_QUEUE.fetch_add(1, Ordering::Relaxed);
    if slot >= MAX_QUEUES {
        COUNTS
            .queues_not_intercepted
            .fetch_add(1, Ordering::Relaxed);
        return;
    }
    let _ = pool(rt);
    QUEUE_AGENT[slot].store(agent_handle, Ordering::Relaxed);
    QUEUE_ID[slot].store(queue_id, Ordering::Relaxed);
    QUEUE_DEVICE[slot].store(
        agent(agent_handle).map_or(0, |a| a.device),
        Ordering::Release,
    );
    let profiled = rt.enable_queue_profiling(queue);
    if profiled
        && HANDLERS
            .get()
            .is_some_and(|h| rt.intercept(queue, h.on_packets, slot))
    {
        COUNTS.queues.fetch_add(1, Ordering::Relaxed);
    } else {
        COUNTS
            .queues_not_intercepted
            .fetch_add(1, Ordering::Relaxed);
    }
}

/// Packets the application wrote to an intercepted queue: each kernel dispatch gets one of
/// Metron's completion signals; all go on to the queue through `writer`, in order.
/// Hot path: no allocation, no lock.
pub fn packets_written(queue_slot: usize, packets: &[DispatchPacket], writer: PacketWriter) {
    let (Some(rt), Some(pool)) = (RUNTIME.get(), POOL.get()) else {
        sys::write_packets(writer, packets);
        return;
    };
    if !tracing() || queue_slot >= MAX_QUEUES {
        sys::write_packets(writer, packets);
        return;
    }
    // 96 packets: at least 32 counted dispatches (three packets each) per writer call.
    let mut out = sys::PacketBuf::<96>::new(writer);
    let counters = crate::counters::get();
    for p in packets {
        if sys::packet_type(p.header) != sys::PACKET_TYPE_KERNEL_DISPATCH {
            out.push(std::slice::from_ref(p));
            continue;
        }
        COUNTS.dispatches.fetch_add(1, Ordering::Relaxed);
        let device = QUEUE_DEVICE[queue_slot].load(Ordering::Relaxed) as usize;
        let gpu = counters.and_then(|c| c.gpus.get(device));
        let counted = gpu.and_then(|g| {
            let i = g.free.pop();
            if i.is_none() {
                crate::counters::uncounted();
            }
            i.map(|i| (i, &g.slots[i as usize]))
        });
        let mut dispatch = *p;
        match take_slot_for_dispatch(rt, pool, queue_slot, p, counted.map(|c| (c.0, c.1.signal))) {
            Some(signal) => {
                dispatch.completion_signal = signal;
                if let Some((_, slot)) = counted {
                    let mut stop = slot.stop;
                    stop.completion_signal = slot.signal;
                    out.push(&[slot.start, dispatch, stop]);
                    continue;
                }
            }
            None => {
                if let (Some(g), Some((i, _))) = (gpu, counted) {
                    let _ = g.free.push(i);
                }
            }
        }
        out.push(&[dispatch]);
    }
    out.flush();
}

/// A signal of Metron's for the dispatch `p` (its slot filled), or `None` when it goes untimed.
/// With `counter` (the profile's index and its stop packet's signal), the completion handler
/// runs on the stop packet's signal, once the counters are written.
fn take_slot_for_dispatch(
    rt: &Runtime,
    pool: &Pool,
    queue_slot: usize,
    p: &DispatchPacket,
    counter: Option<(u32, Handle)>,
) -> Option<Handle> {
    let Some(index) = pool.free.pop() else {
        COUNTS.untimed_no_signal.fetch_add(1, Ordering::Relaxed);
        return None;
    };
    let slot = &pool.slots[index as usize];
    let correlation = NEXT_CORRELATION.fetch_add(1, Ordering::Relaxed);
    slot.original.store(p.completion_signal, Ordering::Relaxed);
    slot.agent.store(
        QUEUE_AGENT[queue_slot].load(Ordering::Relaxed),
        Ordering::Relaxed,
    );
    slot.kind.store(0, Ordering::Relaxed);
    slot.queue_slot.store(queue_slot as u32, Ordering::Relaxed);
    slot.device.store(
        QUEUE_DEVICE[queue_slot].load(Ordering::Relaxed),
        Ordering::Relaxed,
    );
    slot.kernel_object.store(p.kernel_object, Ordering::Relaxed);
    slot.grid[0].store(p.grid_size_x, Ordering::Relaxed);
    slot.grid[1].store(p.grid_size_y, Ordering::Relaxed);
    slot.grid[2].store(p.grid_size_z, Ordering::Relaxed);
    slot.workgroup.store(
        u64::from(p.workgroup_size_x)
            | u64::from(p.workgroup_size_y) << 16
            | u64::from(p.workgroup_size_z) << 32,
        Ordering::Relaxed,
    );
    slot.sizes.store(
        u64::from(p.group_segment_size) | u64::from(p.private_segment_size) << 32,
        Ordering::Relaxed,
    );
    slot.counter
        .store(counter.map_or(u32::MAX, |c| c.0), Ordering::Relaxed);
    slot.correlation.store(correlation, Ordering::Release);
    let signal = slot.signal.load(Ordering::Relaxed);
    let wait_on = counter.map_or(signal, |c| c.1);
    if !HANDLERS
        .get()
        .is_some_and(|h| rt.on_signal_below_one(wait_on, h.on_completion, index as usize))
    {
        let _ = pool.free.push(index);
        COUNTS.untimed_no_signal.fetch_add(1, Ordering::Relaxed);
        return None;
    }
    metron::by_id::annotate(
        LAUNCH_KEY_ID.load(Ordering::Relaxed),
        metron::AnnotationValue::U64(u64::from(correlation)),
    );
    Some(signal)
}

/// A timed copy: Metron's signal given to the runtime, the copy's correlation id, and the
/// signal's slot in the pool.
#[derive(Clone, Copy, Debug)]
pub struct TimedCopy {
    pub signal: Handle,
    pub correlation: u32,
    slot: u32,
}

/// An async copy about to be submitted: the signal to give the runtime in place of the
/// application's `completion` (which Metron decrements when the copy is done), or `None`
/// when it goes untimed.
pub fn copy_submitted(
    rt: &Runtime,
    src_agent: Handle,
    dst_agent: Handle,
    bytes: usize,
    completion: Handle,
) -> Option<TimedCopy> {
    let pool = pool(rt);
    COUNTS.copies.fetch_add(1, Ordering::Relaxed);
    let Some(index) = pool.free.pop() else {
        COUNTS.untimed_no_signal.fetch_add(1, Ordering::Relaxed);
        return None;
    };
    let (src, dst) = (agent(src_agent), agent(dst_agent));
    let kind = CopyKind::of(src.is_some_and(|a| a.gpu), dst.is_some_and(|a| a.gpu));
    let device = dst
        .filter(|a| a.gpu)
        .or(src.filter(|a| a.gpu))
        .map_or(0, |a| a.device);
    let slot = &pool.slots[index as usize];
    let correlation = NEXT_CORRELATION.fetch_add(1, Ordering::Relaxed);
    slot.original.store(completion, Ordering::Relaxed);
    slot.kind.store(1 + kind as u8, Ordering::Relaxed);
    slot.counter.store(u32::MAX, Ordering::Relaxed);
    slot.device.store(device, Ordering::Relaxed);
    slot.sizes.store(bytes as u64, Ordering::Relaxed);
    slot.correlation.store(correlation, Ordering::Release);
    let signal = slot.signal.load(Ordering::Relaxed);
    if !HANDLERS
        .get()
        .is_some_and(|h| rt.on_signal_below_one(signal, h.on_completion, index as usize))
    {
        let _ = pool.free.push(index);
        COUNTS.untimed_no_signal.fetch_add(1, Ordering::Relaxed);
        return None;
    }
    Some(TimedCopy {
        signal,
        correlation,
        slot: index,
    })
}

/// A copy the runtime refused: its signal goes back to the pool unused.
pub fn copy_refused(rt: &Runtime, copy: &TimedCopy) {
    if let Some(pool) = POOL.get() {
        rt.store_signal(copy.signal, 1);
        let _ = pool.free.push(copy.slot);
    }
}

/// The counters of a counted dispatch (its stop packet completed): into the record, then the
/// profile is free again.
fn read_counters(rt: &Runtime, slot: &Slot, counter: u32, r: &mut RawRecord) {
    let Some(c) = crate::counters::get() else {
        return;
    };
    let device = slot.device.load(Ordering::Relaxed);
    if let Some((values, n)) = c.read(device, counter) {
        r.counters = values;
        r.counter_count = n as u8;
    }
    if let Some(g) = c.gpus.get(device as usize) {
        rt.store_signal(g.slots[counter as usize].signal, 1);
        let _ = g.free.push(counter);
    }
}

/// The runtime's signal thread: Metron's signal `slot_index` dropped below 1, so its dispatch
/// or copy is done.
pub fn completed(slot_index: usize) {
    let (Some(rt), Some(pool)) = (RUNTIME.get(), POOL.get()) else {
        return;
    };
    let Some(slot) = pool.slots.get(slot_index) else {
        return;
    };
    let correlation = slot.correlation.load(Ordering::Acquire);
    let signal = slot.signal.load(Ordering::Relaxed);
    let kind = slot.kind.load(Ordering::Relaxed);
    let mut r = if kind == 0 {
        let agent = slot.agent.load(Ordering::Relaxed);
        let mut r = RawRecord::new(RawKind::Dispatch);
        let times = rt.dispatch_time(agent, signal).and_then(|t| {
            Some((
                rt.system_tick(agent, t.start)?,
                rt.system_tick(agent, t.end)?,
            ))
        });
        match times {
            Some((start, end)) => (r.start, r.end) = (start, end),
            None => {
                COUNTS.untimed_no_timestamp.fetch_add(1, Ordering::Relaxed);
            }
        }
        let queue_slot = slot.queue_slot.load(Ordering::Relaxed) as usize;
        r.queue = QUEUE_ID
            .get(queue_slot)
            .map_or(0, |q| q.load(Ordering::Relaxed));
        r.kernel_object = slot.kernel_object.load(Ordering::Relaxed);
        r.grid = [0, 1, 2].map(|d| slot.grid[d].load(Ordering::Relaxed));
        let wg = slot.workgroup.load(Ordering::Relaxed);
        r.workgroup = [wg as u16, (wg >> 16) as u16, (wg >> 32) as u16];
        let sizes = slot.sizes.load(Ordering::Relaxed);
        r.group_segment = sizes as u32;
        r.private_segment = (sizes >> 32) as u32;
        let counter = slot.counter.load(Ordering::Relaxed);
        if counter != u32::MAX {
            read_counters(rt, slot, counter, &mut r);
        }
        r
    } else {
        let copy = match kind - 1 {
            0 => CopyKind::HtoD,
            1 => CopyKind::DtoH,
            2 => CopyKind::DtoD,
            _ => CopyKind::HtoH,
        };
        let mut r = RawRecord::new(RawKind::Copy(copy));
        match rt.copy_time(signal) {
            Some(t) => (r.start, r.end) = (t.start, t.end),
            None => {
                COUNTS.untimed_no_timestamp.fetch_add(1, Ordering::Relaxed);
            }
        }
        r.bytes = slot.sizes.load(Ordering::Relaxed);
        r
    };
    r.device = slot.device.load(Ordering::Relaxed);
    r.correlation = correlation;
    records::push(r);
    let original = slot.original.load(Ordering::Relaxed);
    rt.store_signal(signal, 1);
    if original != 0 {
        rt.subtract_signal(original, 1);
    }
    let _ = pool.free.push(slot_index as u32);
}
