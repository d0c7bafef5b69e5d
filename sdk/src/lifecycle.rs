//! Process lifecycle: `fork`, `SIGINT`/`SIGTERM`, and what happens at exit (crash signals,
//! `SIGABRT` included, are `crate::crash`'s).
//!
//! This layer starts the process's run: its ELF constructor ([`START_BEFORE_MAIN`]) registers
//! [`install`] with the runtime (`runtime::on_start`), then starts the runtime, which calls it
//! once when it starts enabled (or at registration, when a record made by another library's
//! constructor started the runtime first). All the `unsafe` calls of this module are the
//! operating-system calls in [`sys`] at the bottom.
//!
//! # fork
//! A `pthread_atfork` child handler runs in the child right after `fork`, where only the
//! forking thread exists and any lock another parent thread held is held forever. With
//! `METRON_FORK=disable` (the only policy so far) it turns Metron off in the child without
//! touching a lock: recording stops (one atomic store), the run is marked finished (so the
//! child's `exit` writes nothing and the parent's run folder is never written twice), the
//! forking thread's buffer is forgotten (never handed to a flusher that does not exist in the
//! child), and the signal handlers go back to the default action. Every later Metron call in the
//! child is a no-op; a child that `exec`s starts afresh (the new program loads Metron again).
//! The parent is not affected.
//!
//! # Signals
//! With `METRON_SIGNALS=on` (`auto`, the default, means on under `metron run`), `SIGINT` and
//! `SIGTERM` get a handler — only where the program left the default action in place. Writing
//! the outputs is not async-signal-safe (it allocates, locks and does file I/O), so the handler
//! only records the signal and writes one byte to a pipe; a dedicated thread (`metron-signals`)
//! waiting on that pipe runs [`crate::finish`] once, restores the default action and re-raises
//! the signal, so the process still dies by it (exit status and core dump as without Metron).
//! A second signal while the first is handled is ignored.
//!
//! # exit
//! The runtime's `atexit` handler finishes the run at `exit` or a return from `main`.
//! `_exit`, `SIGKILL` and a crash skip it: nothing is written for that process. `exec` runs no
//! exit handler either: the C library (`libmetron.so`) interposes the non-variadic `exec`
//! functions to write the run first; under `metron run` the new program gets its own folder.

use crate::settings::Settings;
// The operating-system calls of this module (the pipe and errno helpers also serve `crash`).
use crate::sys::process as sys;
use std::ffi::c_int;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

/// True in a forked child where Metron was turned off (`METRON_FORK=disable`): every call is
/// then a no-op. Bindings (the C API) check it before taking any lock. (The flag lives in
/// `sys::process`, below the modules that check it.)
pub use crate::sys::process::disabled_in_child;

/// Runs first of all this copy's constructors (priority 100 sorts before the default and before
/// programs' `constructor(101)`): lets threads record (see [`let_threads_record`]), so that a record from a program's own
/// constructor that runs before [`START_BEFORE_MAIN`] still starts the runtime. It only stores
/// a pointer: nothing it needs is initialised later.
#[cfg(target_os = "linux")]
#[used]
#[link_section = ".init_array.00100"]
static LET_THREADS_RECORD: extern "C" fn() = first_constructor;

#[cfg(target_os = "linux")]
extern "C" fn first_constructor() {
    let_threads_record();
}

/// What Metron's first constructor does (and the C API again on a thread's first call): lets
/// threads record into this copy's runtime, and lends the table other copies call should this
/// copy own the process. Allocation-free: it only stores pointers.
pub(crate) fn let_threads_record() {
    crate::shared_runtime::serve(&crate::shared_runtime::serving::API);
    crate::runtime::install_recording_hooks();
}

/// Runs before `main`: registers [`install`] with the runtime and starts it. `.init_array`
/// entries of the default priority run after the standard library's own (which records `argv`
/// at priority 99), so `std::env::args` works. Without the `enabled` feature the runtime starts
/// only when the program calls Metron; `install` still runs then.
#[cfg(target_os = "linux")]
#[used]
#[link_section = ".init_array"]
static START_BEFORE_MAIN: extern "C" fn() = start_before_main;

#[cfg(target_os = "linux")]
extern "C" fn start_before_main() {
    // Must not unwind into the dynamic loader. A copy that joins another starts nothing.
    let _ = std::panic::catch_unwind(|| {
        // A copy that joins another forwards its call-site registrations from here on, before
        // any call site of the program registers (`shared_runtime::joined`).
        let _ = crate::shared_runtime::process_runtime();
        crate::runtime::on_start(install);
        #[cfg(feature = "enabled")]
        crate::runtime::get();
    });
}

/// Installs the fork handler and, if the settings say so, the signal handlers. Called once,
/// when the runtime starts enabled (later calls do nothing).
fn install(settings: &Settings) {
    static INSTALLED: AtomicBool = AtomicBool::new(false);
    if INSTALLED.swap(true, Ordering::AcqRel) {
        return;
    }
    sys::at_fork_child(after_fork_in_child);
    if settings.signals {
        if let Err(e) = signals::install() {
            eprintln!("metron: signal handlers not installed ({e}); a run ended by a signal writes no output");
        }
    }
}

/// `pthread_atfork` child handler. Runs in the child, where only this thread exists: touches
/// no lock and allocates nothing (atomics, this thread's buffer cells, `sigaction`).
extern "C" fn after_fork_in_child() {
    sys::set_disabled_in_child();
    crate::runtime::disable_after_fork();
    crate::thread_buffer::forget_after_fork();
    crate::sampling::after_fork_in_child();
    signals::reset_in_child();
    crate::crash::uninstall_in_child();
}

mod signals {
    use super::*;

    /// The signals Metron handles.
    /// (`SIGABRT` is a crash signal: see `crate::crash`.)
    pub(super) const HANDLED: [c_int; 2] = [libc::SIGINT, libc::SIGTERM];

    /// Write end of the wake-up pipe (-1: not installed).
    static WAKE_WRITE: AtomicI32 = AtomicI32::new(-1);
    /// The signal being handled (0: none).
    static PENDING: AtomicI32 = AtomicI32::new(0);
    /// Which of [`HANDLED`] got our handler.
    static INSTALLED: [AtomicBool; 2] = [const { AtomicBool::new(false) }; 2];

    pub(super) fn install() -> std::io::Result<()> {
        let (wake_read, wake_write) = sys::pipe()?;
        WAKE_WRITE.store(wake_write, Ordering::Relaxed);
        // Started here, not by the flusher: a flusher busy with a large backlog would start it
        // late, and the signal's outputs (and the process's death by it) would wait.
        crate::sys::spawn_own_thread("metron-signals", move || wait_for_signals(wake_read))?;
        for (i, sig) in HANDLED.iter().enumerate() {
            if sys::install_if_default(*sig, on_signal) {
                INSTALLED[i].store(true, Ordering::Relaxed);
            }
        }
        Ok(())
    }

    /// Puts back the default action of every signal we handle (fork child; async-signal-safe).
    pub(super) fn reset_in_child() {
        for (i, sig) in HANDLED.iter().enumerate() {
            if INSTALLED[i].swap(false, Ordering::Relaxed) {
                sys::set_default(*sig);
            }
        }
    }

    /// The handler. Async-signal-safe: atomics and `write` only; no
    /// allocation, no lock, no panic; saves and restores `errno`.
    extern "C" fn on_signal(sig: c_int) {
        let saved = sys::errno();
        if PENDING
            .compare_exchange(0, sig, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
        {
            sys::write_byte(WAKE_WRITE.load(Ordering::Relaxed), sig as u8);
        }
        sys::set_errno(saved);
    }

    /// The `metron-signals` thread: finishes the run once per process, then lets the signal
    /// take its default course.
    fn wait_for_signals(wake_read: c_int) {
        let Some(sig) = sys::read_byte(wake_read) else {
            return;
        };
        let sig = c_int::from(sig);
        if !super::disabled_in_child() {
            let _ = std::panic::catch_unwind(crate::runtime::finish);
        }
        sys::set_default(sig);
        sys::raise_in_process(sig);
    }
}
