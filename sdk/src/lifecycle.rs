//! Process lifecycle: `fork`, `SIGINT`/`SIGTERM`, and what happens at exit (crash signals,
//! `SIGABRT` included, are `crate::crash`'s).
//!
//! Installed once when the runtime starts. All the `unsafe` calls of this module are the
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
use std::ffi::c_int;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

/// Set in a forked child whose Metron was turned off.
static CHILD_DISABLED: AtomicBool = AtomicBool::new(false);

/// True in a forked child where Metron was turned off (`METRON_FORK=disable`): every call is
/// then a no-op. Bindings (the C API) check it before taking any lock.
#[inline(always)]
pub fn disabled_in_child() -> bool {
    CHILD_DISABLED.load(Ordering::Relaxed)
}

/// Installs the fork handler and, if the settings say so, the signal handlers. Called once,
/// by the runtime's start.
pub(crate) fn install(settings: &Settings) {
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
    CHILD_DISABLED.store(true, Ordering::Relaxed);
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
        crate::sampling::spawn_own_thread("metron-signals", move || wait_for_signals(wake_read))?;
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

/// The operating-system calls of this module (the pipe and errno helpers also serve `crash`).
pub(crate) mod sys {
    use std::ffi::c_int;

    /// Registers `child` to run in the child after every `fork`.
    pub(super) fn at_fork_child(child: extern "C" fn()) {
        // SAFETY: `child` is a plain `extern "C" fn()` with static lifetime; no prepare or
        // parent handler is registered.
        unsafe { libc::pthread_atfork(None, None, Some(child)) };
    }

    /// A close-on-exec pipe: (read end, write end).
    pub(crate) fn pipe() -> std::io::Result<(c_int, c_int)> {
        let mut fds = [-1 as c_int; 2];
        // SAFETY: `fds` is a writable array of two ints, as pipe2 requires.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok((fds[0], fds[1]))
    }

    /// Installs `handler` for `sig` if the program left the default action; true if installed.
    pub(super) fn install_if_default(sig: c_int, handler: extern "C" fn(c_int)) -> bool {
        // SAFETY: an all-zero sigaction is a valid value (SIG_DFL, empty mask, no flags).
        let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
        // SAFETY: a NULL new action only queries; `old` is a valid out-pointer.
        if unsafe { libc::sigaction(sig, std::ptr::null(), &mut old) } != 0
            || old.sa_sigaction != libc::SIG_DFL
        {
            return false;
        }
        // SAFETY: as above.
        let mut new: libc::sigaction = unsafe { std::mem::zeroed() };
        new.sa_sigaction = handler as usize;
        new.sa_flags = libc::SA_RESTART;
        // SAFETY: `new` is fully initialised (zeroed mask, handler, flags); the handler is a
        // static `extern "C" fn(c_int)` that is async-signal-safe.
        unsafe { libc::sigaction(sig, &new, std::ptr::null_mut()) == 0 }
    }

    /// Restores the default action of `sig` (async-signal-safe).
    pub(crate) fn set_default(sig: c_int) {
        // SAFETY: an all-zero sigaction is SIG_DFL with an empty mask and no flags.
        let new: libc::sigaction = unsafe { std::mem::zeroed() };
        // SAFETY: `new` is a valid action; the old one is not asked for.
        unsafe { libc::sigaction(sig, &new, std::ptr::null_mut()) };
    }

    /// Sends `sig` to the whole process.
    pub(super) fn raise_in_process(sig: c_int) {
        // SAFETY: kill with our own pid has no memory preconditions.
        unsafe { libc::kill(libc::getpid(), sig) };
    }

    /// Writes one byte, retrying on EINTR (async-signal-safe).
    pub(crate) fn write_byte(fd: c_int, byte: u8) {
        if fd < 0 {
            return;
        }
        loop {
            // SAFETY: `byte` is a readable 1-byte buffer for the call.
            let n = unsafe { libc::write(fd, (&byte as *const u8).cast(), 1) };
            if n >= 0 || errno() != libc::EINTR {
                return;
            }
        }
    }

    /// Blocks until one byte arrives; None at end of file or on error.
    pub(crate) fn read_byte(fd: c_int) -> Option<u8> {
        let mut byte = 0u8;
        loop {
            // SAFETY: `byte` is a writable 1-byte buffer for the call.
            let n = unsafe { libc::read(fd, (&mut byte as *mut u8).cast(), 1) };
            match n {
                1 => return Some(byte),
                -1 if errno() == libc::EINTR => continue,
                _ => return None,
            }
        }
    }

    /// Waits until `fd` is readable or `timeout_ms` passed (async-signal-safe).
    pub(crate) fn wait_readable(fd: c_int, timeout_ms: c_int) {
        if fd < 0 {
            return;
        }
        let mut pfd = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: `pfd` is one valid pollfd for the call.
        unsafe { libc::poll(&mut pfd, 1, timeout_ms) };
    }

    /// The calling thread's kernel id (async-signal-safe).
    pub(crate) fn gettid() -> u32 {
        // SAFETY: gettid has no preconditions.
        unsafe { libc::gettid() as u32 }
    }

    /// This thread's errno.
    pub(crate) fn errno() -> c_int {
        // SAFETY: __errno_location returns this thread's errno slot, valid for the thread.
        unsafe { *libc::__errno_location() }
    }

    /// Sets this thread's errno.
    pub(crate) fn set_errno(value: c_int) {
        // SAFETY: as in `errno`.
        unsafe { *libc::__errno_location() = value };
    }
}
