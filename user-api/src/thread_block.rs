//! Per-thread state on the heap, one block per thread, so that `libmetron.so`'s thread-local
//! block stays small: glibc gives a `dlopen`ed library whose thread-locals fit its spare static
//! TLS (512 bytes by default, `glibc.rtld.optional_static_tls`) a static offset, and the TLS
//! descriptor call of the fast paths ([`crate::fast_tls`]) then costs 2 instructions instead of
//! the 17 of glibc's dynamic resolver. NVTX loads Metron with `dlopen`.
//!
//! # Lifetime
//! A block must stay valid while its thread can still run code: the C header's inline path
//! keeps its address in the program's own thread-local, and thread-local destructors that run
//! after Metron's may still call Metron. So a block is given back when its holder's
//! thread-local is destroyed, but reused only once that thread is gone (`tgkill(pid, tid, 0)`
//! fails with `ESRCH`; a thread being destroyed still exists). A thread keeps using its block
//! after giving it back; the pool frees it when another thread takes a block after that. The
//! pool's lock is only tried, never waited for (a forked child may find it held by a thread
//! that no longer exists): without it, nothing is freed, or a block given back is leaked.

use std::cell::Cell;
use std::ptr::NonNull;
use std::sync::Mutex;

/// Blocks given back, with the thread each belonged to.
pub(crate) struct Pool<T: 'static> {
    retired: Mutex<Vec<Retired<T>>>,
}

struct Retired<T> {
    tid: u32,
    block: NonNull<T>,
}

// SAFETY: a retired block is used by no thread but its own, and handed to another only once
// that thread is gone (the module's comment); `T` is only ever reached from one thread at a
// time.
unsafe impl<T> Send for Retired<T> {}

impl<T: 'static> Pool<T> {
    pub(crate) const fn new() -> Pool<T> {
        Pool {
            retired: Mutex::new(Vec::new()),
        }
    }

    /// A new block for the calling thread; frees the blocks of threads that are gone.
    pub(crate) fn take(&'static self, fresh: fn() -> Box<T>) -> NonNull<T> {
        if let Ok(mut retired) = self.retired.try_lock() {
            retired.retain(|r| {
                if !crate::sys::thread_gone(r.tid) {
                    return true;
                }
                // SAFETY: the block's thread is gone and the pool held the only pointer to it,
                // made by `Box::leak` below.
                drop(unsafe { Box::from_raw(r.block.as_ptr()) });
                false
            });
        }
        NonNull::from(Box::leak(fresh()))
    }

    /// Gives back the block of thread `tid`, reusable once that thread is gone.
    pub(crate) fn give_back(&self, tid: u32, block: NonNull<T>) {
        if let Ok(mut retired) = self.retired.try_lock() {
            retired.push(Retired { tid, block });
        }
        // Without the lock (a forked child whose parent held it): the block stays leaked.
    }

    /// How many blocks wait for their thread to be gone (for tests).
    #[cfg(test)]
    fn waiting(&self) -> usize {
        self.retired.lock().map_or(0, |r| r.len())
    }
}

/// A type of per-thread block: its pool and how a new one is made.
pub(crate) trait Block: Sized + 'static {
    fn pool() -> &'static Pool<Self>;
    fn fresh() -> Box<Self>;
}

/// A thread's block, in a thread-local (8 bytes, and the thread-local's own state): made on
/// the thread's first use, given back to the pool when the thread-local is destroyed.
pub(crate) struct Held<T: Block> {
    block: Cell<Option<NonNull<T>>>,
}

impl<T: Block> Held<T> {
    pub(crate) const fn new() -> Held<T> {
        Held {
            block: Cell::new(None),
        }
    }

    /// This thread's block (made on the first call); valid for the rest of the thread's life.
    pub(crate) fn get(&self) -> &'static T {
        let block = match self.block.get() {
            Some(b) => b,
            None => {
                let b = T::pool().take(T::fresh);
                self.block.set(Some(b));
                b
            }
        };
        // SAFETY: the block is this thread's until the thread is gone (the pool frees it
        // only then); only shared references are made.
        unsafe { block.as_ref() }
    }
}

impl<T: Block> Drop for Held<T> {
    fn drop(&mut self) {
        if let Some(block) = self.block.take() {
            // Thread-local destructors run on their own thread.
            T::pool().give_back(crate::sys::gettid(), block);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};

    struct Counter(AtomicU32);

    static POOL: Pool<Counter> = Pool::new();

    impl Block for Counter {
        fn pool() -> &'static Pool<Counter> {
            &POOL
        }
        fn fresh() -> Box<Counter> {
            Box::new(Counter(AtomicU32::new(7)))
        }
    }

    thread_local! {
        static HELD: Held<Counter> = const { Held::new() };
    }

    #[test]
    fn a_block_is_freed_only_after_its_thread_is_gone() {
        let first = std::thread::spawn(|| {
            let b = &HELD.with(|h| h.get()).0;
            assert_eq!(b.load(Ordering::Relaxed), 7, "made fresh");
            b.store(99, Ordering::Relaxed);
            crate::sys::gettid()
        })
        .join()
        .unwrap();
        while !crate::sys::thread_gone(first) {
            std::thread::yield_now();
        }
        // The first thread's block waits in the pool until the next take frees it.
        assert_eq!(POOL.waiting(), 1);
        // A block of a live thread (this one) is kept.
        POOL.give_back(
            crate::sys::gettid(),
            NonNull::from(Box::leak(Box::new(Counter(AtomicU32::new(1))))),
        );
        let second = std::thread::spawn(|| HELD.with(|h| h.get()).0.load(Ordering::Relaxed))
            .join()
            .unwrap();
        assert_eq!(second, 7, "a new block, made fresh");
        // The second thread's block is given back, the first one freed, the live one kept.
        assert_eq!(POOL.waiting(), 2);
    }
}
