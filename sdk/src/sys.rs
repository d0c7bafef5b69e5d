//! The operating-system calls of the runtime. All `unsafe` of this crate's runtime lives here
//! and in the segment module's memory access.

/// The kernel thread id of the calling thread.
pub(crate) fn gettid() -> u32 {
    // SAFETY: gettid has no preconditions and cannot fail.
    unsafe { libc::gettid() as u32 }
}

/// The process id.
pub(crate) fn getpid() -> u32 {
    std::process::id()
}

/// The calling thread's name as the kernel knows it (`pthread_setname_np`, `prctl`), which is
/// what `std::thread::Builder::name`, C programs and `ps` agree on.
pub(crate) fn current_thread_name() -> String {
    let mut buf = [0u8; 16];
    // SAFETY: PR_GET_NAME writes at most 16 bytes, NUL-terminated, into `buf`, which is 16
    // bytes long and lives for the call.
    let rc = unsafe {
        libc::prctl(
            libc::PR_GET_NAME,
            buf.as_mut_ptr() as libc::c_ulong,
            0,
            0,
            0,
        )
    };
    if rc != 0 {
        return String::new();
    }
    let len = buf.iter().position(|b| *b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..len]).into_owned()
}

/// Sets the calling thread's kernel name (truncated to 15 bytes).
pub(crate) fn set_current_thread_name(name: &str) {
    let mut buf = [0u8; 16];
    let bytes = name.as_bytes();
    let len = bytes.len().min(15);
    buf[..len].copy_from_slice(&bytes[..len]);
    // SAFETY: `buf` is NUL-terminated (at most 15 bytes copied into 16 zeroed ones) and
    // lives for the call; PR_SET_NAME only reads it.
    unsafe { libc::prctl(libc::PR_SET_NAME, buf.as_ptr() as libc::c_ulong, 0, 0, 0) };
}

/// The host name, or `unknown-host`.
pub(crate) fn hostname() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: `buf` is writable for its full length; gethostname NUL-terminates on success
    // when the name fits, and we look for the NUL ourselves.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    if rc != 0 {
        return "unknown-host".into();
    }
    let len = buf.iter().position(|b| *b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..len]).into_owned()
}

/// Registers `f` to run at normal process exit (`exit()` or return from `main`).
pub(crate) fn at_exit(f: extern "C" fn()) {
    // SAFETY: `f` is a plain `extern "C" fn()` with static lifetime, as atexit requires.
    unsafe { libc::atexit(f) };
}

/// Metron's own threads spawned but not yet running (so possibly not yet named).
static OWN_THREADS_STARTING: std::sync::atomic::AtomicUsize =
    std::sync::atomic::AtomicUsize::new(0);

/// What a non-blocking exclusive lock of a file came to.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum TryLock {
    /// This open file holds the lock (until it is closed).
    Held,
    /// Another open file holds it.
    Taken,
    /// The file system has no such locks (or another error): nothing is known.
    Unsupported,
}

/// A non-blocking exclusive `flock` of `file` (a folder opened for reading works too): held
/// until the file is closed, also across `fork` by the children that keep it open.
pub(crate) fn try_lock_exclusive(file: &std::fs::File) -> TryLock {
    use std::os::fd::AsRawFd;
    // SAFETY: `flock` on a descriptor this `File` owns and keeps open for the call; it reads
    // no memory of ours.
    let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    if rc == 0 {
        TryLock::Held
    } else if std::io::Error::last_os_error().raw_os_error() == Some(libc::EWOULDBLOCK) {
        TryLock::Taken
    } else {
        TryLock::Unsupported
    }
}

/// Starts one of Metron's own threads, named `name`, so that the sampler never mistakes it for
/// a program thread. The sampler leaves Metron's threads out of `METRON_SAMPLING_TIDS`'s
/// numbering by their name, which the standard library sets only once the new thread runs; a
/// scan in the moment between `clone` and then would number it like a program thread and shift
/// every later number. So while one of Metron's threads is starting, the sampler numbers no
/// new thread (it takes them at its next scan). The spawning thread never waits for the new
/// one: it may be a constructor holding the dynamic loader's lock, which the new thread may
/// need to set up its thread-locals.
pub(crate) fn spawn_own_thread<T: Send + 'static>(
    name: &str,
    f: impl FnOnce() -> T + Send + 'static,
) -> std::io::Result<std::thread::JoinHandle<T>> {
    OWN_THREADS_STARTING.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let spawned = std::thread::Builder::new()
        .name(name.to_string())
        .spawn(move || {
            block_program_timer_signals();
            OWN_THREADS_STARTING.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
            f()
        });
    if spawned.is_err() {
        OWN_THREADS_STARTING.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
    }
    spawned
}

/// Whether an object already in the process has a file name starting with `prefix`
/// (`libcuda.so` matches `libcuda.so.1` and `libcuda.so.550.54`). Walks the loaded objects
/// (`dl_iterate_phdr`): no file is opened, where `dlopen(RTLD_NOLOAD)` of a library that is not
/// loaded searches every library folder (tens of failed `open`s at each run's end).
pub(crate) fn object_loaded(prefix: &str) -> bool {
    unsafe extern "C" fn each(
        info: *mut libc::dl_phdr_info,
        _size: usize,
        data: *mut std::ffi::c_void,
    ) -> std::ffi::c_int {
        // SAFETY: `dl_iterate_phdr` passes a valid `info` for the call, and `data` is the
        // `(&[u8], bool)` that `object_loaded` passed, alive and not otherwise borrowed.
        let (prefix, found) = unsafe { &mut *(data as *mut (&[u8], bool)) };
        // SAFETY: as above; `dlpi_name` is null or a NUL-terminated string owned by the loader.
        let name = unsafe { (*info).dlpi_name };
        if name.is_null() {
            return 0;
        }
        // SAFETY: non-null and NUL-terminated (above).
        let path = unsafe { std::ffi::CStr::from_ptr(name) }.to_bytes();
        let file = path.rsplit(|&b| b == b'/').next().unwrap_or(path);
        if file.starts_with(prefix) {
            *found = true;
            return 1;
        }
        0
    }
    let mut data: (&[u8], bool) = (prefix.as_bytes(), false);
    // SAFETY: `each` only reads what the loader passes and writes `data`, which outlives the
    // call.
    unsafe {
        libc::dl_iterate_phdr(
            Some(each),
            &mut data as *mut (&[u8], bool) as *mut std::ffi::c_void,
        )
    };
    data.1
}

/// Blocks, on the calling thread (one of Metron's own), the timer signals a program arms for
/// itself (`setitimer`'s `SIGPROF`, `SIGVTALRM` and `SIGALRM`, `alarm`): they are
/// process-directed, so the kernel may deliver them to any thread that does not block them,
/// and the program's handler would then run on Metron's flusher or sampler (seen in CI: a
/// `SIGPROF` handler's NVTX range recorded on the flusher while the program's own unguarded
/// counter lost the increment). Signals Metron directs at a thread are not affected.
fn block_program_timer_signals() {
    // SAFETY: `set` is initialised by sigemptyset before sigaddset reads it; pthread_sigmask
    // changes only the calling thread's mask and does not keep the pointer.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for sig in [libc::SIGPROF, libc::SIGVTALRM, libc::SIGALRM] {
            libc::sigaddset(&mut set, sig);
        }
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
    }
}

/// True while one of Metron's threads is starting (see [`spawn_own_thread`]), or the thread a
/// library inside Metron starts (see [`library_thread_starting`]) has not been seen yet.
pub(crate) fn own_threads_starting() -> bool {
    if OWN_THREADS_STARTING.load(std::sync::atomic::Ordering::SeqCst) != 0 {
        return true;
    }
    let until = LIBRARY_THREAD_UNTIL_NS.load(std::sync::atomic::Ordering::SeqCst);
    until != 0 && metron_components::clock::monotonic_ns() < until
}

/// The thread the Perfetto SDK starts inside Metron (its "TracingMuxer"). Like Metron's own
/// threads it is never sampled and takes no `METRON_SAMPLING_TIDS` number; it names itself only
/// once it runs, and until then carries the program's name, so a scan in that moment numbered it
/// like a program thread and shifted every later number (seen once in CI).
pub(crate) const LIBRARY_THREAD_NAME: &str = "TracingMuxer";

/// Until when (`CLOCK_MONOTONIC` ns) new threads are not numbered because the library thread
/// may be starting; 0: not waiting.
static LIBRARY_THREAD_UNTIL_NS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// How long numbering waits for the library thread to name itself at most (a program that
/// already runs the Perfetto SDK has its muxer already, and none starts).
const LIBRARY_THREAD_WAIT_NS: u64 = 2_000_000_000;

/// Called before the Perfetto SDK is initialized: new threads are numbered only once its thread
/// has been seen with its name (or after [`LIBRARY_THREAD_WAIT_NS`]).
pub(crate) fn library_thread_starting() {
    LIBRARY_THREAD_UNTIL_NS.store(
        metron_components::clock::monotonic_ns() + LIBRARY_THREAD_WAIT_NS,
        std::sync::atomic::Ordering::SeqCst,
    );
}

/// The sampler saw the library thread with its name.
pub(crate) fn library_thread_seen() {
    LIBRARY_THREAD_UNTIL_NS.store(0, std::sync::atomic::Ordering::SeqCst);
}

/// The process-level calls of `lifecycle` and `crash`: fork handlers, signal dispositions, the
/// self-pipe and errno; and the flag a forked child turned off by `METRON_FORK=disable` sets.
pub(crate) mod process {
    use std::ffi::c_int;
    use std::sync::atomic::{AtomicBool, Ordering};

    /// Set in a forked child whose Metron was turned off.
    static CHILD_DISABLED: AtomicBool = AtomicBool::new(false);

    /// True in a forked child where Metron was turned off (`METRON_FORK=disable`): every call
    /// is then a no-op. Bindings (the C API) check it before taking any lock.
    #[inline(always)]
    pub fn disabled_in_child() -> bool {
        CHILD_DISABLED.load(Ordering::Relaxed)
    }

    /// Marks this process as a forked child with Metron turned off (the fork handler).
    pub(crate) fn set_disabled_in_child() {
        CHILD_DISABLED.store(true, Ordering::Relaxed);
    }

    /// Registers `child` to run in the child after every `fork`.
    pub(crate) fn at_fork_child(child: extern "C" fn()) {
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
    pub(crate) fn install_if_default(sig: c_int, handler: extern "C" fn(c_int)) -> bool {
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
    pub(crate) fn raise_in_process(sig: c_int) {
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

#[cfg(test)]
mod tests {
    /// Metron's threads block the program's timer signals (so a program's `SIGPROF` handler
    /// never runs on them); the spawning thread's own mask is left as it was.
    #[test]
    fn own_threads_block_the_programs_timer_signals() {
        fn blocked(sig: libc::c_int) -> bool {
            // SAFETY: `now` is written by pthread_sigmask (query only: no set given) before
            // sigismember reads it.
            unsafe {
                let mut now: libc::sigset_t = std::mem::zeroed();
                libc::pthread_sigmask(libc::SIG_BLOCK, std::ptr::null(), &mut now);
                libc::sigismember(&now, sig) == 1
            }
        }
        let inside = super::spawn_own_thread("metron-test-mask", || {
            [libc::SIGPROF, libc::SIGVTALRM, libc::SIGALRM, libc::SIGSEGV].map(blocked)
        })
        .unwrap()
        .join()
        .unwrap();
        assert_eq!(inside, [true, true, true, false]);
        assert!(
            !blocked(libc::SIGPROF),
            "the spawning thread keeps its mask"
        );
    }
}
