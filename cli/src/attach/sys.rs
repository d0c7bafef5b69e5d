//! Everything `unsafe` of `metron sample --pid`: `perf_event_open` on another process's
//! threads, the ring buffers the kernel writes samples into, and the SIGINT handler. Each
//! block states its contract.

use perf_event_open_sys::bindings as b;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};

/// Registers copied with each sample: BP, SP, IP (x86-64 `perf_regs.h` numbering), in that
/// order in the record (ascending bit order).
pub(crate) const REGS_MASK: u64 = (1 << 6) | (1 << 7) | (1 << 8);
/// Bytes of user stack copied with each sample (the kernel copies what is there, up to this).
pub(crate) const STACK_BYTES: u32 = 16 * 1024;
/// Data pages of each ring (a power of two): 1 MiB, about 60 samples with their stacks.
const RING_PAGES: usize = 256;

/// What the sampling asks for.
pub(crate) struct EventSpec {
    /// Samples per second of each thread's CPU time.
    pub(crate) freq: u64,
}

/// Opens a task-clock sampling event on thread `tid` (any process the caller may trace) while
/// it runs on `cpu`, inherited by the threads it creates. Per CPU, because the kernel refuses
/// to map the ring of an inherited event that follows a thread on every CPU (`cpu = -1`).
/// `Err(errno)` on failure.
pub(crate) fn open_thread_event(tid: i32, cpu: i32, spec: &EventSpec) -> Result<OwnedFd, i32> {
    let mut attr = b::perf_event_attr {
        type_: b::PERF_TYPE_SOFTWARE,
        size: std::mem::size_of::<b::perf_event_attr>() as u32,
        config: u64::from(b::PERF_COUNT_SW_TASK_CLOCK),
        sample_type: u64::from(
            b::PERF_SAMPLE_IP
                | b::PERF_SAMPLE_TID
                | b::PERF_SAMPLE_TIME
                | b::PERF_SAMPLE_CALLCHAIN
                | b::PERF_SAMPLE_REGS_USER
                | b::PERF_SAMPLE_STACK_USER,
        ),
        sample_regs_user: REGS_MASK,
        sample_stack_user: STACK_BYTES,
        clockid: libc::CLOCK_MONOTONIC,
        ..Default::default()
    };
    attr.__bindgen_anon_1.sample_freq = spec.freq;
    attr.set_freq(1);
    attr.set_disabled(1);
    attr.set_inherit(1);
    attr.set_exclude_kernel(1);
    attr.set_exclude_hv(1);
    attr.set_exclude_callchain_kernel(1);
    attr.set_comm(1);
    attr.set_task(1);
    attr.set_use_clockid(1);
    attr.set_sample_id_all(1);
    // SAFETY:
    // - `attr` is a fully initialised `perf_event_attr` whose `size` is its own size.
    // - pid = tid, a CPU, no group; the flags are valid.
    let fd = unsafe {
        perf_event_open_sys::perf_event_open(
            &mut attr,
            tid,
            cpu,
            -1,
            b::PERF_FLAG_FD_CLOEXEC.into(),
        )
    };
    if fd < 0 {
        return Err(std::io::Error::last_os_error().raw_os_error().unwrap_or(0));
    }
    // SAFETY: `fd` was just returned by the kernel and is owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Sends the samples of `fd` into the ring of `ring_fd` (an event on the same CPU).
/// `Err(errno)` on failure.
pub(crate) fn set_output(fd: &OwnedFd, ring_fd: &OwnedFd) -> Result<(), i32> {
    // SAFETY: both are perf events of ours; SET_OUTPUT takes the other descriptor.
    let rc =
        unsafe { perf_event_open_sys::ioctls::SET_OUTPUT(fd.as_raw_fd(), ring_fd.as_raw_fd()) };
    if rc < 0 {
        return Err(std::io::Error::last_os_error().raw_os_error().unwrap_or(0));
    }
    Ok(())
}

/// The CPUs that may run threads (`/sys/devices/system/cpu/possible`, e.g. `0-63`).
pub(crate) fn possible_cpus() -> Vec<i32> {
    let text = std::fs::read_to_string("/sys/devices/system/cpu/possible").unwrap_or_default();
    let mut cpus = Vec::new();
    for part in text.trim().split(',').filter(|p| !p.is_empty()) {
        let (lo, hi) = part.split_once('-').unwrap_or((part, part));
        if let (Ok(lo), Ok(hi)) = (lo.parse::<i32>(), hi.parse::<i32>()) {
            cpus.extend(lo..=hi);
        }
    }
    if cpus.is_empty() {
        // SAFETY: sysconf has no memory-safety preconditions.
        let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_CONF) }.max(1);
        cpus.extend(0..n as i32);
    }
    cpus
}

/// Raises this process's open-file limit to its hard limit (one event per thread and CPU).
pub(crate) fn raise_fd_limit() {
    // SAFETY: `limit` is a valid out-pointer, then a valid in-pointer.
    unsafe {
        let mut limit: libc::rlimit = std::mem::zeroed();
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0 && limit.rlim_cur < limit.rlim_max
        {
            limit.rlim_cur = limit.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
        }
    }
}

/// Enables a counting event.
pub(crate) fn enable(fd: &OwnedFd) {
    // SAFETY: `fd` is a perf event; ENABLE takes no pointer argument.
    unsafe { perf_event_open_sys::ioctls::ENABLE(fd.as_raw_fd(), 0) };
}

/// Disables a counting event.
pub(crate) fn disable(fd: &OwnedFd) {
    // SAFETY: as in `enable`.
    unsafe { perf_event_open_sys::ioctls::DISABLE(fd.as_raw_fd(), 0) };
}

/// The ring buffer of one event: a metadata page and `RING_PAGES` data pages.
pub(crate) struct Ring {
    base: *mut u8,
    len: usize,
    data_offset: usize,
    data_size: usize,
    _fd: OwnedFd,
}

// SAFETY: the mapping is owned by this value and used by one thread at a time (`&mut self`).
unsafe impl Send for Ring {}

impl Ring {
    /// Maps the ring of `fd`. `Err(errno)` on failure.
    pub(crate) fn map(fd: OwnedFd) -> Result<Ring, i32> {
        let page = page_size();
        let len = page * (1 + RING_PAGES);
        // SAFETY: a new shared read-write mapping of the event's ring; the kernel checks the
        // size (1 + 2^n pages). The result is checked before use.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error().raw_os_error().unwrap_or(0));
        }
        let base = base.cast::<u8>();
        let meta = base.cast::<b::perf_event_mmap_page>();
        // SAFETY: `meta` is the mapped metadata page; `data_offset`/`data_size` are set by
        // kernels since 4.1 (0 before: then the data starts after the first page).
        let (data_offset, data_size) = unsafe {
            (
                std::ptr::addr_of!((*meta).data_offset).read_volatile() as usize,
                std::ptr::addr_of!((*meta).data_size).read_volatile() as usize,
            )
        };
        let (data_offset, data_size) = if data_size == 0 {
            (page, page * RING_PAGES)
        } else {
            (data_offset, data_size)
        };
        Ok(Ring {
            base,
            len,
            data_offset,
            data_size,
            _fd: fd,
        })
    }

    /// Appends the records the kernel wrote since the last call to `out` (whole records: the
    /// kernel publishes `data_head` after complete records) and frees their space.
    pub(crate) fn drain(&mut self, out: &mut Vec<u8>) {
        let meta = self.base.cast::<b::perf_event_mmap_page>();
        // SAFETY: `meta` points into our live mapping; `data_head` is written by the kernel,
        // read with acquire ordering so the records before it are visible.
        let head = unsafe {
            let p = std::ptr::addr_of!((*meta).data_head).cast::<std::sync::atomic::AtomicU64>();
            (*p).load(Ordering::Acquire)
        };
        // SAFETY: `data_tail` is written only by us.
        let tail = unsafe { std::ptr::addr_of!((*meta).data_tail).read_volatile() };
        let size = self.data_size as u64;
        let mut at = tail;
        while at < head {
            let offset = (at % size) as usize;
            let n = ((head - at) as usize).min(self.data_size - offset);
            // SAFETY: `[data_offset + offset, + n)` lies inside the data area of the mapping.
            let bytes =
                unsafe { std::slice::from_raw_parts(self.base.add(self.data_offset + offset), n) };
            out.extend_from_slice(bytes);
            at += n as u64;
        }
        // SAFETY: publishing the new tail (release: our reads are done) frees the space.
        unsafe {
            let p =
                std::ptr::addr_of_mut!((*meta).data_tail).cast::<std::sync::atomic::AtomicU64>();
            (*p).store(head, Ordering::Release);
        }
    }
}

impl Drop for Ring {
    fn drop(&mut self) {
        // SAFETY: `base`/`len` are our mapping, unmapped once, here.
        unsafe { libc::munmap(self.base.cast(), self.len) };
    }
}

fn page_size() -> usize {
    // SAFETY: sysconf has no memory-safety preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if n > 0 {
        n as usize
    } else {
        4096
    }
}

/// Set by the SIGINT handler.
pub(crate) static INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// SIGINT handler. Async-signal-safe: one atomic store.
extern "C" fn on_sigint(_: libc::c_int) {
    INTERRUPTED.store(true, Ordering::Relaxed);
}

/// Makes Ctrl-C (SIGINT) end the sampling cleanly instead of killing this process.
pub(crate) fn catch_sigint() {
    // SAFETY: a zeroed `sigaction` is valid; the handler is async-signal-safe and lives for
    // the whole program; SA_RESTART keeps our blocking reads going.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = on_sigint as extern "C" fn(libc::c_int) as usize;
        action.sa_flags = libc::SA_RESTART;
        libc::sigemptyset(&mut action.sa_mask);
        libc::sigaction(libc::SIGINT, &action, std::ptr::null_mut());
    }
}

/// The message of `errno`.
pub(crate) fn strerror(errno: i32) -> String {
    std::io::Error::from_raw_os_error(errno).to_string()
}
