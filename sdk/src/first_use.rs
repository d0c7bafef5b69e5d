//! Whether the run was used, and the start-up messages held until its first use.
//!
//! A process that links Metron and never records (the `metron` launcher itself, which then
//! `exec`s the program that prints them) says nothing and writes nothing: bad settings,
//! output-path keys and counter plans wait for the run's first use (a thread's first record, a
//! sink added, `init` or `finish`), which the runtime notes here; the exit handler writes the
//! run folder only for a used run.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

static USED: AtomicBool = AtomicBool::new(false);

static HELD_MESSAGES: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// Prints `message` (prefixed `metron: `) on stderr now if the run is used (or this copy
/// records into another's run, which prints its own), else at its first use.
pub(crate) fn say(message: String) {
    if crate::shared_runtime::owner().is_some() {
        eprintln!("metron: {message}");
        return;
    }
    let mut held = HELD_MESSAGES.lock().unwrap_or_else(|e| e.into_inner());
    if USED.load(Ordering::Acquire) {
        drop(held);
        eprintln!("metron: {message}");
    } else {
        held.push(message);
    }
}

/// Whether the run was used.
pub(crate) fn used() -> bool {
    USED.load(Ordering::Relaxed)
}

/// Notes the run's use and prints the held messages; true the first time. One relaxed load
/// once used.
pub(crate) fn note_use() -> bool {
    if USED.load(Ordering::Relaxed) || USED.swap(true, Ordering::AcqRel) {
        return false;
    }
    for message in std::mem::take(&mut *HELD_MESSAGES.lock().unwrap_or_else(|e| e.into_inner())) {
        eprintln!("metron: {message}");
    }
    true
}
