//! CUDA API calls recorded from the Callback API into Metron's own per-thread buffers (instead
//! of CUPTI's RUNTIME/DRIVER activity records, which cost the most per launch).
//!
//! - **Hot path** ([`record`], called at each traced API call's exit, on the application
//!   thread): one relaxed store per word of a 32-byte slot of the thread's current chunk and a
//!   release store of the chunk's length. No allocation, no lock, no formatting, no unsafe code.
//!   Only when a chunk of [`CHUNK_RECORDS`] calls is full does the thread take the next chunk:
//!   from a pool (one uncontended lock per [`CHUNK_RECORDS`] calls), allocating one only when
//!   the pool is empty, and never past [`MAX_CHUNKS`]: then calls are dropped and counted.
//! - **Draining** ([`drain`], on CUPTI's completion thread and at flush): one reader at a time
//!   reads each chunk from where it stopped up to its published length, so records of a chunk
//!   still being written are read in pieces; a full chunk that the writer has left goes back
//!   to the pool.
//!
//! A record: `start`, `end` (TSC ticks on x86-64, converted to Metron's clock when drained), `correlation | cbid << 32 | domain << 48`,
//! `tid | status << 32`.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// Calls per chunk (32 bytes each: 256 KiB).
pub const CHUNK_RECORDS: usize = 8192;
/// Chunks in the whole process at most (64 MiB); past it calls are dropped and counted.
pub const MAX_CHUNKS: usize = 256;
/// Chunks allocated at start.
const PREALLOCATED: usize = 4;

/// One decoded API call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ApiCall {
    /// Enter: hot-path ticks (`metron::clock::now_ticks`).
    pub start: u64,
    /// Exit: hot-path ticks.
    pub end: u64,
    /// CUPTI's correlation id.
    pub correlation: u32,
    /// Callback id.
    pub cbid: u32,
    /// Callback domain (1 driver, 2 runtime).
    pub domain: i32,
    /// Kernel thread id of the caller.
    pub tid: u32,
    /// The call's return code.
    pub status: u32,
}

struct Chunk {
    slots: Box<[[AtomicU64; 4]]>,
    /// Records written (published with Release by the writer).
    len: AtomicUsize,
    /// Records already read (the reader's own).
    read: AtomicUsize,
}

impl Chunk {
    fn new() -> Chunk {
        Chunk {
            slots: (0..CHUNK_RECORDS)
                .map(|_| [const { AtomicU64::new(0) }; 4])
                .collect(),
            len: AtomicUsize::new(0),
            read: AtomicUsize::new(0),
        }
    }
}

/// The chunks one thread filled or is filling.
#[derive(Default)]
struct ThreadLog {
    chunks: Mutex<Vec<Arc<Chunk>>>,
}

static THREADS: Mutex<Vec<Arc<ThreadLog>>> = Mutex::new(Vec::new());
static POOL: Mutex<Vec<Arc<Chunk>>> = Mutex::new(Vec::new());
static CHUNKS: AtomicUsize = AtomicUsize::new(0);
static DROPPED: AtomicU64 = AtomicU64::new(0);
/// Calls read by [`drain`] (the writers count nothing: a shared counter per call would bounce
/// one cache line between every launching thread).
static RECORDED: AtomicU64 = AtomicU64::new(0);
/// One reader at a time.
static READER: Mutex<()> = Mutex::new(());

thread_local! {
    /// This thread's log and the chunk it writes into (boxed: `libmetron.so` keeps its
    /// thread-local block small, see `user-api/src/thread_block.rs`).
    static CURRENT: Cell<Option<Box<Current>>> = const { Cell::new(None) };
}

/// Allocates the first chunks (at start, off the hot path).
pub fn preallocate() {
    let mut pool = POOL.lock().unwrap_or_else(|e| e.into_inner());
    while CHUNKS.load(Ordering::Relaxed) < PREALLOCATED {
        pool.push(Arc::new(Chunk::new()));
        CHUNKS.fetch_add(1, Ordering::Relaxed);
    }
}

/// A chunk from the pool, or a new one under [`MAX_CHUNKS`].
fn take_chunk() -> Option<Arc<Chunk>> {
    if let Some(c) = POOL.lock().unwrap_or_else(|e| e.into_inner()).pop() {
        return Some(c);
    }
    if CHUNKS.fetch_add(1, Ordering::Relaxed) >= MAX_CHUNKS {
        CHUNKS.fetch_sub(1, Ordering::Relaxed);
        return None;
    }
    Some(Arc::new(Chunk::new()))
}

#[inline]
fn pack(c: &ApiCall) -> [u64; 4] {
    [
        c.start,
        c.end,
        u64::from(c.correlation)
            | u64::from(c.cbid & 0xffff) << 32
            | (c.domain as u64 & 0xff) << 48,
        u64::from(c.tid) | u64::from(c.status) << 32,
    ]
}

fn unpack(w: [u64; 4]) -> ApiCall {
    ApiCall {
        start: w[0],
        end: w[1],
        correlation: w[2] as u32,
        cbid: (w[2] >> 32) as u32 & 0xffff,
        domain: (w[2] >> 48) as i32 & 0xff,
        tid: w[3] as u32,
        status: (w[3] >> 32) as u32,
    }
}

/// Records one call on the calling thread (hot path).
#[inline]
pub fn record(call: &ApiCall) {
    let words = pack(call);
    let ok = CURRENT.try_with(|cell| {
        // Taken out and put back: a call recorded from inside this one (none is expected)
        // would find no chunk and start one of its own rather than share this one.
        let mut cur = cell.take();
        let ok = loop {
            if let Some((_, chunk)) = cur.as_deref() {
                let i = chunk.len.load(Ordering::Relaxed);
                if i < CHUNK_RECORDS {
                    for (slot, w) in chunk.slots[i].iter().zip(words) {
                        slot.store(w, Ordering::Relaxed);
                    }
                    chunk.len.store(i + 1, Ordering::Release);
                    break true;
                }
            }
            // First call on this thread, or the chunk is full: the next chunk (cold).
            if !next_chunk(&mut cur) {
                break false;
            }
        };
        cell.set(cur);
        ok
    });
    if ok != Ok(true) {
        DROPPED.fetch_add(1, Ordering::Relaxed);
    }
}

/// A thread's log and the chunk it writes into.
type Current = (Arc<ThreadLog>, Arc<Chunk>);

#[cold]
fn next_chunk(cur: &mut Option<Box<Current>>) -> bool {
    let Some(chunk) = take_chunk() else {
        return false;
    };
    let log = match cur.take().map(|c| *c) {
        Some((log, _full)) => log,
        None => {
            let log = Arc::new(ThreadLog::default());
            THREADS
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(log.clone());
            log
        }
    };
    log.chunks
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(chunk.clone());
    *cur = Some(Box::new((log, chunk)));
    true
}

/// Reads every call recorded since the last drain, in each thread's order.
pub fn drain(mut f: impl FnMut(ApiCall)) {
    let _reader = READER.lock().unwrap_or_else(|e| e.into_inner());
    let threads: Vec<Arc<ThreadLog>> = THREADS.lock().unwrap_or_else(|e| e.into_inner()).clone();
    for t in threads {
        let mut chunks = t.chunks.lock().unwrap_or_else(|e| e.into_inner());
        for c in chunks.iter() {
            let len = c.len.load(Ordering::Acquire);
            let from = c.read.load(Ordering::Relaxed);
            for slot in &c.slots[from..len] {
                f(unpack([
                    slot[0].load(Ordering::Relaxed),
                    slot[1].load(Ordering::Relaxed),
                    slot[2].load(Ordering::Relaxed),
                    slot[3].load(Ordering::Relaxed),
                ]));
            }
            c.read.store(len, Ordering::Relaxed);
            RECORDED.fetch_add(len.saturating_sub(from) as u64, Ordering::Relaxed);
        }
        // Read chunks no writer holds (a full one the writer left, or the last one of a thread
        // that ended: this list holds the only reference): back to the pool.
        let mut keep = Vec::with_capacity(chunks.len());
        for c in chunks.drain(..) {
            let done = c.len.load(Ordering::Acquire) == c.read.load(Ordering::Relaxed);
            if done && Arc::strong_count(&c) == 1 {
                c.len.store(0, Ordering::Relaxed);
                c.read.store(0, Ordering::Relaxed);
                POOL.lock().unwrap_or_else(|e| e.into_inner()).push(c);
            } else {
                keep.push(c);
            }
        }
        *chunks = keep;
    }
    // Threads that ended with nothing left to read.
    THREADS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .retain(|t| {
            Arc::strong_count(t) > 1
                || !t
                    .chunks
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .is_empty()
        });
}

/// `(recorded, dropped, chunks allocated)` so far: recorded counts the calls drained and
/// those still waiting in the threads' chunks.
pub fn counts() -> (u64, u64, usize) {
    let _reader = READER.lock().unwrap_or_else(|e| e.into_inner());
    let threads: Vec<Arc<ThreadLog>> = THREADS.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let waiting: usize = threads
        .iter()
        .map(|t| {
            t.chunks
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .iter()
                .map(|c| {
                    c.len
                        .load(Ordering::Acquire)
                        .saturating_sub(c.read.load(Ordering::Relaxed))
                })
                .sum::<usize>()
        })
        .sum();
    (
        RECORDED.load(Ordering::Relaxed) + waiting as u64,
        DROPPED.load(Ordering::Relaxed),
        CHUNKS.load(Ordering::Relaxed),
    )
}

/// The tests that drain (here and in the callbacks' tests): one at a time, since a drain takes
/// every thread's calls.
#[cfg(test)]
pub(crate) static DRAINING: Mutex<()> = Mutex::new(());

#[cfg(test)]
mod tests {
    use super::*;

    fn call(i: u32, tid: u32) -> ApiCall {
        ApiCall {
            start: u64::from(i) * 10,
            end: u64::from(i) * 10 + 5,
            correlation: i,
            cbid: 211,
            domain: 2,
            tid,
            status: if i % 7 == 0 { 700 } else { 0 },
        }
    }

    #[test]
    fn records_round_trip() {
        let c = ApiCall {
            start: u64::MAX - 3,
            end: u64::MAX,
            correlation: u32::MAX,
            cbid: 652,
            domain: 1,
            tid: 123_456,
            status: 999,
        };
        assert_eq!(unpack(pack(&c)), c);
    }

    /// Several threads, more calls than a chunk holds, drained while they write: every call
    /// is read exactly once, in each thread's order, and full chunks are reused.

    #[test]
    fn many_threads_many_chunks_nothing_lost_or_doubled() {
        let _one = DRAINING.lock().unwrap_or_else(|e| e.into_inner());
        preallocate();
        let per_thread = CHUNK_RECORDS as u32 * 2 + 100;
        let threads: Vec<_> = (0..3u32)
            .map(|t| {
                std::thread::spawn(move || {
                    for i in 0..per_thread {
                        record(&call(i, 1000 + t));
                    }
                })
            })
            .collect();
        let mut seen: std::collections::HashMap<u32, Vec<u32>> = Default::default();
        let mut collect = |c: ApiCall| {
            if (1000..1003).contains(&c.tid) {
                assert_eq!(c.end, c.start + 5);
                assert_eq!(c.status, if c.correlation % 7 == 0 { 700 } else { 0 });
                seen.entry(c.tid).or_default().push(c.correlation);
            }
        };
        while !threads.iter().all(|t| t.is_finished()) {
            drain(&mut collect);
        }
        for t in threads {
            t.join().unwrap();
        }
        drain(&mut collect);
        for t in 1000..1003 {
            let v = &seen[&t];
            assert_eq!(v.len(), per_thread as usize, "thread {t}");
            assert!(v.iter().enumerate().all(|(i, &c)| c == i as u32));
        }
        // The full chunks of the finished threads went back to the pool (or are kept by
        // the threads that still hold them): the process did not allocate one per chunk read.
        assert!(CHUNKS.load(Ordering::Relaxed) <= MAX_CHUNKS);
        assert!(!POOL.lock().unwrap().is_empty());
    }

    /// `counts()` reports every recorded call, drained or still waiting in a chunk (the
    /// writers count nothing themselves).
    #[test]
    fn counts_include_waiting_and_drained_calls() {
        let _one = DRAINING.lock().unwrap_or_else(|e| e.into_inner());
        preallocate();
        let before = counts().0;
        let n = 300u32;
        std::thread::spawn(move || {
            for i in 0..n {
                record(&call(i, 2000));
            }
        })
        .join()
        .unwrap();
        // Other tests of this binary may record meanwhile: at least ours are counted.
        assert!(counts().0 >= before + u64::from(n), "waiting calls counted");
        let mut ours = 0;
        drain(|c| ours += u32::from(c.tid == 2000));
        assert_eq!(ours, n);
        assert!(counts().0 >= before + u64::from(n), "drained calls counted");
    }
}
