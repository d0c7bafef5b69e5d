//! Buffered delivery: fixed-capacity per-thread buffers whose records reach a callback in
//! batches, on a callback thread (the model of ROCprofiler's buffered services).
//!
//! A [`BufferedService`] has a size, a watermark and a [`Policy`]. Each producing thread gets
//! a [`Producer`] that writes into its own memory-mapped segment: no lock, no allocation, no
//! syscall per record. When a segment reaches the watermark it is handed to the callback thread
//! and the producer continues in another one:
//!
//! - [`Policy::Lossless`] always continues, mapping a new segment if no free one is left
//!   (memory grows when the callback is slower than the producers; nothing is lost);
//! - [`Policy::Discard`] has two segments per producer; when both are full, records are
//!   dropped and counted until the callback frees one. The count arrives with the next batch.
//!
//! A lossless service may have a **backlog limit** ([`BufferedService::set_backlog_limit`]): the
//! bytes of segments handed over and not yet delivered, over all producers. A producer that
//! would pass it applies the [`BacklogPolicy`]: [`BacklogPolicy::Block`] waits (in the cold
//! path, on a condition variable the reader signals when it frees a segment) until the
//! callback has caught up, and the time it waited is counted; [`BacklogPolicy::Drop`] drops and
//! counts its records until a segment is free. Either way memory stays bounded, and
//! [`BufferedService::backlog_stats`] says what happened. Metron's own threads (the callback
//! thread included) never wait: they map past the limit, counted.
//!
//! The callback receives [`Batch`]es: records of one producer in the order they were written,
//! and how many of that producer's records were dropped since its previous batch. Services
//! share the default callback thread ([`CallbackThread::shared`]) unless given a dedicated one;
//! [`BufferedService::flush`] delivers everything published so far before it returns.
//! Metron's own region storage is a `BufferedService` of 16-byte slots.
//!
//! ```
//! use metron::buffer::{BufferConfig, BufferedService, CallbackThread, Policy};
//! use std::sync::{Arc, Mutex};
//!
//! let seen = Arc::new(Mutex::new(Vec::new()));
//! let sink = Arc::clone(&seen);
//! let service = BufferedService::<u64>::new(
//!     "my-events",
//!     BufferConfig { bytes: 4096, watermark_percent: 50, policy: Policy::Lossless },
//!     CallbackThread::shared(),
//!     move |batch| sink.lock().unwrap().extend_from_slice(batch.records),
//! );
//! let mut producer = service.producer();
//! for i in 0..10_000u64 {
//!     producer.push(i);
//! }
//! service.flush();
//! assert_eq!(seen.lock().unwrap().len(), 10_000);
//! ```

mod callback_thread;
pub(crate) mod producer;
mod sealed;
mod segment;
pub(crate) mod service;
mod soon_threads;

pub use callback_thread::{CallbackThread, FLUSHER_THREAD_NAME};
pub use service::{BufferedService, Producer, KEEP_FREE_BY_CPUS};
pub(crate) use soon_threads::spawn_own_thread_soon;

/// True on a callback thread (which must never wait for itself at a backlog limit).
pub(crate) fn on_callback_thread() -> bool {
    callback_thread::ON_CALLBACK_THREAD.with(std::cell::Cell::get)
}

/// What happens when a producer's buffer is full.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Policy {
    /// Continue in a fresh segment; never drop.
    Lossless,
    /// Drop and count until the callback thread frees a segment.
    Discard,
}

/// What a producer of a lossless service does when the backlog limit is reached.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum BacklogPolicy {
    /// Wait until the callback thread has freed a segment (nothing is lost; the recording
    /// thread is slowed to the back end's rate). The time waited is counted.
    Block,
    /// Drop and count records until the callback thread has freed a segment (the recording
    /// thread is never held).
    Drop,
}

/// The backlog limit of a lossless service.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BacklogLimit {
    /// Bytes of handed-over, undelivered segments over all producers (0: no limit).
    pub bytes: usize,
    /// What a producer does at the limit.
    pub policy: BacklogPolicy,
}

/// What the backlog limit did, for `metadata.json` and the run's last stderr line.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct BacklogStats {
    /// The limit in bytes (0: none).
    pub limit_bytes: u64,
    /// The most bytes of backlog seen (handed-over segments not yet delivered).
    pub peak_bytes: u64,
    /// Times a producer waited at the limit (policy `block`).
    pub blocked_times: u64,
    /// Nanoseconds producers waited at the limit, over all threads.
    pub blocked_ns: u64,
    /// Times a producer dropped records at the limit (policy `drop`; the records are counted
    /// with the producer's other drops).
    pub drops_at_limit: u64,
    /// Segments Metron's own threads took past the limit (they never wait).
    pub own_threads_past_limit: u64,
    /// Times a waiting producer went past the limit because the callback thread freed no
    /// segment for 10 s (a callback that never returns): the program is never hung.
    pub past_limit_stalled_reader: u64,
}

/// Size, watermark and policy of a [`BufferedService`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BufferConfig {
    /// Bytes per segment (rounded down to whole records; at least one record).
    pub bytes: usize,
    /// Fill level, in percent of the segment, at which it is handed to the callback thread.
    pub watermark_percent: u8,
    /// Behaviour when full.
    pub policy: Policy,
}

/// A [`BufferConfig`] converted to record counts for a record type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SlotConfig {
    pub(crate) capacity: usize,
    pub(crate) watermark: usize,
    pub(crate) policy: Policy,
}

impl BufferConfig {
    /// This configuration in record counts for records of type `R`.
    pub(crate) fn slots<R>(self) -> SlotConfig {
        let capacity = (self.bytes / std::mem::size_of::<R>().max(1)).max(1);
        let percent = self.watermark_percent.clamp(1, 100) as usize;
        let watermark = (capacity * percent / 100).clamp(1, capacity);
        SlotConfig {
            capacity,
            watermark,
            policy: self.policy,
        }
    }
}

/// Who produced a batch.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct ProducerInfo {
    /// Kernel thread id of the thread that created the producer.
    pub tid: u32,
    /// Its name when the producer was created (may be empty).
    pub thread_name: String,
    /// Registration order within the process, from 0.
    pub index: u64,
}

impl ProducerInfo {
    pub(crate) fn of_current_thread() -> ProducerInfo {
        ProducerInfo {
            tid: crate::sys::gettid(),
            thread_name: crate::sys::current_thread_name(),
            index: ProducerInfo::next_index(),
        }
    }

    /// A fresh registration index (also for threads the sampler sees before they record).
    pub(crate) fn next_index() -> u64 {
        use std::sync::atomic::{AtomicU64, Ordering};
        static NEXT: AtomicU64 = AtomicU64::new(0);
        NEXT.fetch_add(1, Ordering::Relaxed)
    }
}

/// Records delivered to a service's callback.
pub struct Batch<'a, R> {
    /// The producer they come from.
    pub producer: &'a ProducerInfo,
    /// Consecutive records of that producer, oldest first (may be empty when only `dropped`
    /// changed).
    pub records: &'a [R],
    /// That producer's records dropped since its previous batch.
    pub dropped: u64,
}
