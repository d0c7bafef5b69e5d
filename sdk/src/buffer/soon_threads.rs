//! Metron's threads that only wait and may start late (the trace session's set-up, which waits
//! 200 ms anyway), started by the flusher instead of the program's thread that starts Metron.
//! Not the crash and signal threads: a flusher busy with a large backlog would start them late.

/// A thread of Metron's own to start, waiting for the flusher.
type SoonThread = (&'static str, Box<dyn FnOnce() + Send>);

static SOON: std::sync::Mutex<Vec<SoonThread>> = std::sync::Mutex::new(Vec::new());
static SOON_PENDING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// [`crate::sys::spawn_own_thread`], done by the flusher at its next wake-up (right after Metron's start)
/// instead of on the calling thread: a thread start costs the caller a `clone` and a stack
/// mapping (50–100 µs on the development VM), which at Metron's start is the program's first
/// thread. For threads whose work can wait for the flusher's next wake-up.
pub(crate) fn spawn_own_thread_soon(name: &'static str, f: impl FnOnce() + Send + 'static) {
    SOON.lock()
        .unwrap_or_else(|e| e.into_inner())
        .push((name, Box::new(f)));
    SOON_PENDING.store(true, std::sync::atomic::Ordering::Release);
    super::CallbackThread::shared().wake();
}

/// Starts the threads [`spawn_own_thread_soon`] left (the flusher, after each wake-up; one
/// atomic load when there are none).
pub(crate) fn start_soon_threads() {
    if !SOON_PENDING.swap(false, std::sync::atomic::Ordering::AcqRel) {
        return;
    }
    let soon = std::mem::take(&mut *SOON.lock().unwrap_or_else(|e| e.into_inner()));
    for (name, f) in soon {
        if let Err(e) = crate::sys::spawn_own_thread(name, f) {
            eprintln!("metron: cannot start the {name} thread: {e}");
        }
    }
}
