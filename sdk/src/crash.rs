//! Crashes: `SIGSEGV`, `SIGBUS`, `SIGFPE`, `SIGILL` and `SIGABRT` write the run before the
//! process dies.
//!
//! # How
//! When the runtime starts, a `metron-crash` thread is made that waits on a pipe. At the run's
//! first use (a thread's first record, `init`), a handler is installed for each crash signal,
//! keeping the action it replaces (the program's own handler, or Rust's stack-overflow handler,
//! which the standard library installs before `main`). On a crash the handler, on the faulting
//! thread:
//! 1. claims the crash (the first crashing thread wins; a second one waits for the outputs);
//! 2. stores the signal, the faulting address, the thread id and the interrupted registers in
//!    statics, and writes a `crash` instant into the thread's own buffer when there is room
//!    (no cold path: the buffer is never grown from a signal handler);
//! 3. wakes the `metron-crash` thread and waits for it, at most [`WAIT_MS`];
//! 4. puts back the replaced action and hands the signal to it: the program's handler is
//!    called with the same arguments; the default action is re-raised (a fault from the
//!    kernel simply re-executes the faulting instruction), so the process dies by the same
//!    signal with the same exit status and core dump as without Metron.
//!
//! The `metron-crash` thread does what a handler may not: it unwinds the faulting thread's
//! stack from the stored registers (the thread is parked in the handler, so its stack is
//! intact), symbolizes it, and finishes the run with the crash time as the end of every region
//! still open (counted as `open_at_crash`) and a `died` section in `metadata.json` and
//! `summary.txt`.
//!
//! The handler is async-signal-safe: atomics, `write`, `poll`, `gettid`, `sigaction`,
//! `tgkill`, and stores into the thread's preallocated buffer; no allocation, no lock, no
//! panic; `errno` is saved and restored.
//!
//! # What cannot be done
//! A crash inside Metron's flusher while it holds the pipeline's lock, or a heap so corrupted
//! that the `metron-crash` thread's allocations fault, leaves the outputs unwritten after the
//! bounded wait; the process still dies by its signal. `SIGKILL` cannot be caught. `_exit`
//! runs no handler at all (see `lifecycle`).

use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, AtomicU64, Ordering};
use std::sync::Mutex;

/// The signals handled, and their names.
const SIGNALS: [(c_int, &str); 5] = [
    (libc::SIGSEGV, "SIGSEGV"),
    (libc::SIGBUS, "SIGBUS"),
    (libc::SIGFPE, "SIGFPE"),
    (libc::SIGILL, "SIGILL"),
    (libc::SIGABRT, "SIGABRT"),
];
/// How long the crashing thread waits for the outputs.
const WAIT_MS: c_int = 10_000;

/// Write end of the wake-up pipe and read end of the "outputs written" pipe (-1: none).
static WAKE_WRITE: AtomicI32 = AtomicI32::new(-1);
static DONE_READ: AtomicI32 = AtomicI32::new(-1);
/// Kernel id of the `metron-crash` thread (it must not wait for itself).
static THREAD_TID: AtomicU32 = AtomicU32::new(0);
static INSTALLED: AtomicBool = AtomicBool::new(false);

/// What the handler saw; written once, by the thread that claimed the crash.
static SIGNAL: AtomicI32 = AtomicI32::new(0);
static ADDRESS: AtomicU64 = AtomicU64::new(0);
static TID: AtomicU32 = AtomicU32::new(0);
static TICKS: AtomicU64 = AtomicU64::new(0);
static REGS: [AtomicU64; 3] = [const { AtomicU64::new(0) }; 3];
static HAVE_REGS: AtomicBool = AtomicBool::new(false);
/// The `crash` instant's call-site id (interned when the handlers are installed).
static CRASH_SITE: AtomicU32 = AtomicU32::new(0);

// The run's death is plain data of the decoding layer (`sink::Died`), which the summary is
// handed; re-exported here where the crash thread fills it.
pub(crate) use crate::sink::Died;

static DIED: Mutex<Option<Died>> = Mutex::new(None);
/// Set by the `metron-crash` thread once the crashed run is written (or it gave up).
static WRITTEN: AtomicBool = AtomicBool::new(false);
/// How long a thread that exits normally gives a crashing thread, after the run is written,
/// to hand its signal on (it does so at once; this only bounds a wait that should not end).
const HAND_ON_MS: u64 = 2_000;

/// How the run died, if it crashed (for metadata and the summary).
pub(crate) fn died() -> Option<Died> {
    DIED.lock().unwrap_or_else(|e| e.into_inner()).clone()
}

/// What the runtime lends the crash handling when it starts it, so that this module does not
/// reach up into the runtime.
#[derive(Clone, Copy)]
pub(crate) struct CrashHooks {
    /// A tick count on the run's timeline (`CLOCK_MONOTONIC` ns).
    pub ticks_to_ns: fn(u64) -> u64,
    /// Ends the run after a crash at the given time (`CLOCK_MONOTONIC` ns).
    pub finish_at_crash: fn(u64),
}

static HOOKS: std::sync::OnceLock<CrashHooks> = std::sync::OnceLock::new();

/// Makes the `metron-crash` thread (runtime start, off the application's threads); `hooks`
/// are how it finishes the run.
pub(crate) fn start(hooks: CrashHooks) {
    let _ = HOOKS.set(hooks);
    let (Ok((wake_read, wake_write)), Ok((done_read, done_write))) = (sys::pipe(), sys::pipe())
    else {
        eprintln!("metron: crash handling off (no pipe); a crash writes no output");
        return;
    };
    // Started here, not by the flusher: a flusher busy with a large backlog would start it
    // late, and a crash meanwhile would wait for it.
    if crate::sys::spawn_own_thread("metron-crash", move || {
        wait_for_crash(wake_read, done_write)
    })
    .is_err()
    {
        eprintln!("metron: crash handling off (no thread); a crash writes no output");
        return;
    }
    WAKE_WRITE.store(wake_write, Ordering::Release);
    DONE_READ.store(done_read, Ordering::Release);
}

/// Installs the handlers once (the run's first use; cold, a few `sigaction` calls).
/// `crash_site` is the id of the instant a crash records (the runtime interns it).
pub(crate) fn install_handlers(crash_site: u32) {
    if WAKE_WRITE.load(Ordering::Acquire) < 0 || INSTALLED.swap(true, Ordering::AcqRel) {
        return;
    }
    CRASH_SITE.store(crash_site, Ordering::Relaxed);
    for (i, (sig, _)) in SIGNALS.iter().enumerate() {
        sys::install(i, *sig, on_crash);
    }
}

/// Puts back every replaced action (a forked child, where no `metron-crash` thread exists).
pub(crate) fn uninstall_in_child() {
    if INSTALLED.swap(false, Ordering::AcqRel) {
        for (i, (sig, _)) in SIGNALS.iter().enumerate() {
            sys::restore(i, *sig);
        }
    }
}

/// The handler. Async-signal-safe (see the module documentation).
extern "C" fn on_crash(sig: c_int, info: *mut libc::siginfo_t, ctx: *mut c_void) {
    let saved = sys::errno();
    let me = sys::gettid();
    let waiting_helps = me != THREAD_TID.load(Ordering::Relaxed);
    if SIGNAL
        .compare_exchange(0, sig, Ordering::AcqRel, Ordering::Relaxed)
        .is_ok()
    {
        let ticks = metron_components::clock::now_ticks();
        ADDRESS.store(sys::fault_address(sig, info), Ordering::Relaxed);
        TID.store(me, Ordering::Relaxed);
        TICKS.store(ticks, Ordering::Relaxed);
        if let Some(regs) = sys::interrupted_registers(ctx) {
            for (slot, value) in REGS.iter().zip([regs.0, regs.1, regs.2]) {
                slot.store(value, Ordering::Relaxed);
            }
            HAVE_REGS.store(true, Ordering::Release);
        }
        crate::thread_buffer::write_in_signal_handler(
            ticks,
            crate::record::header(
                CRASH_SITE.load(Ordering::Relaxed),
                crate::record::kind::INSTANT,
                0,
                0,
            ),
        );
        sys::write_byte(WAKE_WRITE.load(Ordering::Acquire), 1);
    }
    if waiting_helps {
        sys::wait_readable(DONE_READ.load(Ordering::Acquire), WAIT_MS);
    }
    if let Some(i) = SIGNALS.iter().position(|(s, _)| *s == sig) {
        sys::chain(i, sig, info, ctx);
    }
    sys::set_errno(saved);
}

/// The `metron-crash` thread: on a crash, finishes the run with the crash's story.
fn wait_for_crash(wake_read: c_int, done_write: c_int) {
    THREAD_TID.store(sys::gettid(), Ordering::Relaxed);
    if sys::read_byte(wake_read).is_none() {
        return;
    }
    if !crate::sys::process::disabled_in_child() {
        let _ = std::panic::catch_unwind(|| {
            let died = describe();
            let ts_ns = died.ts_ns;
            *DIED.lock().unwrap_or_else(|e| e.into_inner()) = Some(died);
            if let Some(hooks) = HOOKS.get() {
                (hooks.finish_at_crash)(ts_ns);
            }
        });
    }
    WRITTEN.store(true, Ordering::Release);
    sys::write_byte(done_write, 1);
}

/// On the way out of a normal exit (`exit`, a return from `main`), before the run is
/// finished: when another thread has crashed, waits until the crashed run (with how it died) is
/// written, then for that thread to hand its signal on, so that the process neither ends under
/// the writing (nothing on disk) nor writes an ordinary run and exits with 0 instead of dying
/// by the signal. True when it waited for a written run (the caller must not finish it again);
/// false at once when nothing crashed or this is the crashing thread itself (a program's own
/// crash handler that calls `exit`, which Metron runs after writing the run), and false after
/// [`WAIT_MS`] when the run was never written (the caller then writes what it can).
pub(crate) fn wait_for_a_crash_elsewhere() -> bool {
    if SIGNAL.load(Ordering::Acquire) == 0 {
        return false;
    }
    let me = sys::gettid();
    if me == TID.load(Ordering::Relaxed) || me == THREAD_TID.load(Ordering::Relaxed) {
        return false;
    }
    let start = std::time::Instant::now();
    let written_by = std::time::Duration::from_millis(WAIT_MS as u64);
    while !WRITTEN.load(Ordering::Acquire) {
        if start.elapsed() > written_by {
            return false;
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    // The crashing thread now restores the replaced action and re-raises (or calls the
    // program's handler): the process ends by it while this thread sleeps.
    std::thread::sleep(std::time::Duration::from_millis(HAND_ON_MS));
    true
}

/// What the handler stored, with the stack unwound and symbolized.
fn describe() -> Died {
    let sig = SIGNAL.load(Ordering::Relaxed);
    let tid = TID.load(Ordering::Relaxed);
    let name = SIGNALS
        .iter()
        .find(|(s, _)| *s == sig)
        .map_or_else(|| format!("signal {sig}"), |(_, n)| (*n).to_string());
    let addresses = if HAVE_REGS.load(Ordering::Acquire) {
        let regs = (
            REGS[0].load(Ordering::Relaxed),
            REGS[1].load(Ordering::Relaxed),
            REGS[2].load(Ordering::Relaxed),
        );
        crate::sampling::unwind_parked_thread(regs)
    } else {
        Vec::new()
    };
    let frames = symbolize(&addresses);
    let ticks = TICKS.load(Ordering::Relaxed);
    let ts_ns = HOOKS.get().map_or_else(
        || metron_components::clock::calibration().to_monotonic_ns(ticks),
        |hooks| (hooks.ticks_to_ns)(ticks),
    );
    Died {
        signal: name,
        address: format!("{:#x}", ADDRESS.load(Ordering::Relaxed)),
        thread: tid,
        thread_name: std::fs::read_to_string(format!("/proc/self/task/{tid}/comm"))
            .map(|s| s.trim().to_string())
            .unwrap_or_default(),
        ts_ns,
        frames,
    }
}

/// `function (file:line)` per frame, inlined frames expanded, innermost first.
fn symbolize(addresses: &[u64]) -> Vec<String> {
    let mut symbolizer = metron_symbols::shared()
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    let mut out = Vec::new();
    for a in metron_symbols::Symbolizer::lookup_addresses(addresses) {
        for f in symbolizer.symbolize(a) {
            out.push(match f.location() {
                Some(at) => format!("{} ({at})", f.function),
                None => format!("{} ({a:#x} in {})", f.function, f.module),
            });
        }
    }
    out
}

/// The operating-system calls of this module.
mod sys {
    use super::SIGNALS;
    pub(super) use crate::sampling::interrupted_registers;
    pub(super) use crate::sys::process::{
        errno, gettid, pipe, read_byte, set_default, set_errno, wait_readable, write_byte,
    };
    use std::ffi::{c_int, c_void};
    use std::sync::atomic::{AtomicPtr, Ordering};

    /// The actions replaced by ours, by index into [`SIGNALS`] (leaked once at install).
    static PREVIOUS: [AtomicPtr<libc::sigaction>; SIGNALS.len()] =
        [const { AtomicPtr::new(std::ptr::null_mut()) }; SIGNALS.len()];

    use super::Handler;

    /// Installs `handler` for `sig`, keeping the replaced action as `PREVIOUS[i]`.
    pub(super) fn install(i: usize, sig: c_int, handler: Handler) {
        // SAFETY: an all-zero sigaction is valid (SIG_DFL, empty mask, no flags).
        let mut new: libc::sigaction = unsafe { std::mem::zeroed() };
        new.sa_sigaction = handler as usize;
        // SA_ONSTACK: a stack overflow can only be handled on the alternate stack that Rust
        // (and many runtimes) set up; SA_SIGINFO for the faulting address and registers.
        new.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK | libc::SA_RESTART;
        let old = Box::into_raw(Box::new(new));
        // SAFETY: `new` is fully initialised and its handler is async-signal-safe; `old`
        // points to a writable sigaction that we own (leaked: a handler may read it any time).
        if unsafe { libc::sigaction(sig, &new, old) } == 0 {
            PREVIOUS[i].store(old, Ordering::Release);
        } else {
            // SAFETY: from Box::into_raw above and never published.
            drop(unsafe { Box::from_raw(old) });
        }
    }

    /// Puts back the action replaced at `install` (async-signal-safe).
    pub(super) fn restore(i: usize, sig: c_int) {
        let old = PREVIOUS[i].load(Ordering::Acquire);
        if old.is_null() {
            set_default(sig);
        } else {
            // SAFETY: `old` is the leaked, never-freed action saved by `install`.
            unsafe { libc::sigaction(sig, old, std::ptr::null_mut()) };
        }
    }

    /// Hands the signal to the replaced action: the program's handler is called; the default
    /// (or ignore, which the kernel does not honour for a fault) is re-raised.
    /// Async-signal-safe.
    pub(super) fn chain(i: usize, sig: c_int, info: *mut libc::siginfo_t, ctx: *mut c_void) {
        restore(i, sig);
        let old = PREVIOUS[i].load(Ordering::Acquire);
        // SAFETY: a non-null `old` is the leaked action saved by `install`, never freed.
        let action = (!old.is_null()).then(|| unsafe { *old });
        match action {
            Some(a) if a.sa_sigaction != libc::SIG_DFL && a.sa_sigaction != libc::SIG_IGN => {
                if a.sa_flags & libc::SA_SIGINFO != 0 {
                    // SAFETY: with SA_SIGINFO the program installed a three-argument handler
                    // at this address; we call it as the kernel would have.
                    let f: Handler = unsafe { std::mem::transmute(a.sa_sigaction) };
                    f(sig, info, ctx);
                } else {
                    // SAFETY: without SA_SIGINFO it is a one-argument handler.
                    let f: extern "C" fn(c_int) = unsafe { std::mem::transmute(a.sa_sigaction) };
                    f(sig);
                }
            }
            _ => {
                set_default(sig);
                // A fault from the kernel re-executes the faulting instruction when the handler
                // returns and dies by the default action; a signal sent by a process (`kill`,
                // `raise`, `abort`) must be sent again: it is blocked while we run and is
                // delivered as soon as the handler returns.
                // SAFETY: reading si_code of the siginfo the kernel passed.
                let sent = info.is_null() || unsafe { (*info).si_code } <= 0;
                if sent {
                    // SAFETY: tgkill to our own thread has no memory preconditions.
                    unsafe { libc::syscall(libc::SYS_tgkill, libc::getpid(), libc::gettid(), sig) };
                }
            }
        }
    }

    /// The faulting address of a fault; 0 for a signal sent by a process.
    pub(super) fn fault_address(sig: c_int, info: *const libc::siginfo_t) -> u64 {
        if info.is_null() || sig == libc::SIGABRT {
            return 0;
        }
        // SAFETY: the kernel's siginfo for a fault signal carries si_addr.
        unsafe {
            if (*info).si_code <= 0 {
                return 0;
            }
            (*info).si_addr() as u64
        }
    }
}

/// The handler's type (also the type of a program's SA_SIGINFO handler).
type Handler = extern "C" fn(c_int, *mut libc::siginfo_t, *mut c_void);
