//! Threads that drain services: the shared default one (`metron-flusher`) or dedicated ones.
//!
//! Producers wake a callback thread with [`std::thread::Thread::unpark`] (an atomic and a
//! futex wake: no lock, no allocation); the thread also drains on its interval.

use super::service::Drainable;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::thread::{JoinHandle, Thread};
use std::time::Duration;

thread_local! {
    /// Set on callback threads.
    pub(crate) static ON_CALLBACK_THREAD: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

struct Inner {
    services: Mutex<Vec<Weak<dyn Drainable>>>,
    thread: OnceLock<Thread>,
    interval: Mutex<Option<Duration>>,
    stop: AtomicBool,
    handle: Mutex<Option<JoinHandle<()>>>,
}

/// A thread on which service callbacks run. Cloning shares the thread.
#[derive(Clone)]
pub struct CallbackThread {
    inner: Arc<Inner>,
}

/// The name of the shared callback thread; outputs mark it as Metron's own.
pub const FLUSHER_THREAD_NAME: &str = "metron-flusher";

impl CallbackThread {
    /// The shared callback thread every service uses unless given a dedicated one. Its
    /// interval is set by the runtime from `METRON_FLUSH_INTERVAL`.
    pub fn shared() -> CallbackThread {
        static SHARED: OnceLock<CallbackThread> = OnceLock::new();
        SHARED
            .get_or_init(|| {
                CallbackThread::spawn(FLUSHER_THREAD_NAME, Some(Duration::from_secs(1)))
            })
            .clone()
    }

    /// A dedicated callback thread named `name` that also drains every `interval`.
    pub fn spawn(name: &str, interval: Option<Duration>) -> CallbackThread {
        let inner = Arc::new(Inner {
            services: Mutex::new(Vec::new()),
            thread: OnceLock::new(),
            interval: Mutex::new(interval),
            stop: AtomicBool::new(false),
            handle: Mutex::new(None),
        });
        let worker = Arc::clone(&inner);
        let handle = crate::sys::spawn_own_thread(name, move || run(worker))
            .expect("spawn a Metron callback thread");
        let _ = inner.thread.set(handle.thread().clone());
        *inner.handle.lock().unwrap_or_else(|e| e.into_inner()) = Some(handle);
        CallbackThread { inner }
    }

    /// Changes how often the thread drains on its own (`None`: only when woken).
    pub fn set_interval(&self, interval: Option<Duration>) {
        *self
            .inner
            .interval
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = interval;
        self.wake();
    }

    pub(crate) fn register(&self, service: Weak<dyn Drainable>) {
        self.inner
            .services
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(service);
    }

    /// The thread's handle, to wake it from code that may not clone an `Arc` (a signal
    /// handler keeps a copy).
    pub(crate) fn thread_handle(&self) -> Option<Thread> {
        self.inner.thread.get().cloned()
    }

    /// Asks the thread to drain now.
    #[inline]
    pub fn wake(&self) {
        if let Some(thread) = self.inner.thread.get() {
            thread.unpark();
        }
    }

    /// Drains every service once more and ends the thread (dedicated threads; the shared one
    /// lives as long as the process).
    pub fn stop(&self) {
        self.inner.stop.store(true, Ordering::Release);
        self.wake();
        let handle = self
            .inner
            .handle
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some(handle) = handle {
            if handle.thread().id() != std::thread::current().id() {
                let _ = handle.join();
            }
        }
    }
}

fn run(inner: Arc<Inner>) {
    ON_CALLBACK_THREAD.with(|c| c.set(true));
    loop {
        let interval = *inner.interval.lock().unwrap_or_else(|e| e.into_inner());
        match interval {
            Some(d) => std::thread::park_timeout(d),
            None => std::thread::park(),
        }
        super::soon_threads::start_soon_threads();
        let services: Vec<Arc<dyn Drainable>> = {
            let mut list = inner.services.lock().unwrap_or_else(|e| e.into_inner());
            list.retain(|w| w.strong_count() > 0);
            list.iter().filter_map(Weak::upgrade).collect()
        };
        for service in services {
            service.drain();
        }
        if inner.stop.load(Ordering::Acquire) {
            return;
        }
    }
}
