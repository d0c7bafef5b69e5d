//! The system calls of the process-tree launcher: becoming the tree's reaper, forwarding
//! signals to the program, waiting for any descendant.

use std::ffi::c_int;
use std::sync::atomic::{AtomicI32, Ordering};

/// The program's pid, for the forwarding handler (0: none yet).
static PROGRAM: AtomicI32 = AtomicI32::new(0);

/// Signals a user or batch system sends to stop or poke a job; forwarded to the program.
const FORWARDED: &[c_int] = &[
    libc::SIGINT,
    libc::SIGTERM,
    libc::SIGHUP,
    libc::SIGQUIT,
    libc::SIGUSR1,
    libc::SIGUSR2,
];

/// Makes this process the reaper of every orphaned descendant, so that it can wait for the
/// whole tree and learn how each orphan ended.
pub(super) fn become_subreaper() -> bool {
    // SAFETY: PR_SET_CHILD_SUBREAPER takes an integer flag; no memory is passed.
    unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0 }
}

/// Async-signal-safe: one atomic load and `kill`. A signal the terminal sent (Ctrl-C) already
/// reached the program, which is in the same foreground process group; only signals sent to
/// this process alone (`kill`, a batch system) are passed on, so the program never gets two.
extern "C" fn forward(signal: c_int, info: *mut libc::siginfo_t, _ctx: *mut libc::c_void) {
    // SAFETY: the kernel passes a valid siginfo for SA_SIGINFO handlers.
    let code = unsafe { (*info).si_code };
    let pid = PROGRAM.load(Ordering::Relaxed);
    if pid > 0 && code != libc::SI_KERNEL {
        // SAFETY: kill is async-signal-safe; a stale pid only makes it fail.
        unsafe { libc::kill(pid, signal) };
    }
}

/// Forwards [`FORWARDED`] signals to `pid` from now on.
pub(super) fn forward_signals_to(pid: u32) {
    PROGRAM.store(pid as i32, Ordering::Relaxed);
    for &signal in FORWARDED {
        // SAFETY: a zeroed sigaction is a valid starting value; the handler has the
        // SA_SIGINFO signature and is async-signal-safe.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = forward as *const () as usize;
            action.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART;
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(signal, &action, std::ptr::null_mut());
        }
    }
}

/// How a process ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Ended {
    Exited(i32),
    Signaled(i32),
}

/// Waits for any child (the program, or an orphan reparented here). `block`: wait until one
/// ends; else return `None` at once when none has. `Err` when there is no child left.
pub(super) fn wait_any(block: bool) -> Result<Option<(u32, Ended)>, ()> {
    let mut status: c_int = 0;
    let flags = if block { 0 } else { libc::WNOHANG };
    loop {
        // SAFETY: status is a valid out-pointer.
        let pid = unsafe { libc::waitpid(-1, &mut status, flags) };
        if pid > 0 {
            let ended = if libc::WIFSIGNALED(status) {
                Ended::Signaled(libc::WTERMSIG(status))
            } else {
                Ended::Exited(libc::WEXITSTATUS(status))
            };
            return Ok(Some((pid as u32, ended)));
        }
        if pid == 0 {
            return Ok(None);
        }
        if std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            return Err(());
        }
    }
}

/// Ends this process the way the program ended: the same exit code, or the same signal
/// (default action restored first), so a shell or batch system sees what it would have seen
/// without Metron.
pub(super) fn end_like(ended: Ended) -> std::process::ExitCode {
    match ended {
        Ended::Exited(code) => std::process::ExitCode::from(code as u8),
        Ended::Signaled(signal) => {
            // SAFETY: restoring the default action and raising the signal on ourselves;
            // a core-dumping signal still ends the process; the fallback exit follows the
            // shell's 128+N convention if it does not.
            unsafe {
                libc::signal(signal, libc::SIG_DFL);
                let mut set: libc::sigset_t = std::mem::zeroed();
                libc::sigemptyset(&mut set);
                libc::sigaddset(&mut set, signal);
                libc::sigprocmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
                libc::raise(signal);
            }
            std::process::ExitCode::from((128 + signal) as u8)
        }
    }
}
