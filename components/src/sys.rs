//! The operating-system and CPU calls the components make. All `unsafe` of this crate lives here.

use std::mem::MaybeUninit;

/// Reads the time-stamp counter. On x86-64 this is one `rdtsc` instruction; the Linux machines
/// Metron targets have an invariant TSC (`constant_tsc`, `nonstop_tsc`), checked by
/// [`crate::clock::calibration`] against `CLOCK_MONOTONIC`.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(crate) fn read_tsc() -> u64 {
    // SAFETY: `rdtsc` has no preconditions; it only reads the time-stamp counter.
    unsafe { core::arch::x86_64::_rdtsc() }
}

/// [`read_tsc`] as `rdtsc` leaves it: the low and the high half, for a caller that stores them
/// as they are (two 32-bit stores instead of a shift, an or and a store).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(crate) fn read_tsc_halves() -> (u32, u32) {
    let (lo, hi): (u32, u32);
    // SAFETY: `rdtsc` has no preconditions; it only reads the time-stamp counter into edx:eax.
    unsafe {
        std::arch::asm!(
            "rdtsc",
            out("eax") lo,
            out("edx") hi,
            options(nomem, nostack, preserves_flags),
        );
    }
    (lo, hi)
}

/// `clock_gettime(clock)` in nanoseconds; 0 if the clock is not supported.
#[inline]
pub(crate) fn clock_ns(clock: libc::clockid_t) -> u64 {
    let mut ts = MaybeUninit::<libc::timespec>::uninit();
    // SAFETY: `ts` is a valid out-pointer for one timespec; it is read only when the call
    // returns 0, which means the kernel filled it.
    let rc = unsafe { libc::clock_gettime(clock, ts.as_mut_ptr()) };
    if rc != 0 {
        return 0;
    }
    // SAFETY: rc == 0, so `ts` was initialised.
    let ts = unsafe { ts.assume_init() };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// `getrusage(who)`; all zeros if it fails.
#[inline]
pub(crate) fn rusage(who: libc::c_int) -> libc::rusage {
    let mut usage = MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: `usage` is a valid, zero-initialised out-pointer for one rusage; on failure it
    // stays all zeros, which is a valid rusage.
    unsafe { libc::getrusage(who, usage.as_mut_ptr()) };
    // SAFETY: zero-initialised above and possibly overwritten by the kernel: always initialised.
    unsafe { usage.assume_init() }
}

/// `pread` of up to `buf.len()` bytes at offset 0; returns the bytes read (0 on error).
#[inline]
pub(crate) fn pread_start(fd: libc::c_int, buf: &mut [u8]) -> usize {
    // SAFETY: `buf` is a valid writable region of `buf.len()` bytes for the whole call.
    let n = unsafe { libc::pread(fd, buf.as_mut_ptr().cast(), buf.len(), 0) };
    n.max(0) as usize
}

/// Opens `path` (NUL-terminated) read-only and close-on-exec; -1 on failure.
pub(crate) fn open_read_only(path: &std::ffi::CStr) -> libc::c_int {
    // SAFETY: `path` is a valid NUL-terminated string for the duration of the call.
    unsafe { libc::open(path.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) }
}

/// The system page size in bytes.
pub(crate) fn page_size() -> u64 {
    // SAFETY: sysconf has no preconditions.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if size > 0 {
        size as u64
    } else {
        4096
    }
}

/// `perf_event_open` for the calling thread on any CPU, joining `group_fd` (-1: a new group
/// whose leader reads the whole group). Returns the descriptor or the errno.
pub(crate) fn perf_open(
    kind: u32,
    config: u64,
    exclude_user: bool,
    exclude_kernel: bool,
    group_fd: libc::c_int,
) -> Result<libc::c_int, i32> {
    use perf_event_open_sys::bindings as b;
    let mut attr = b::perf_event_attr {
        type_: kind,
        size: std::mem::size_of::<b::perf_event_attr>() as u32,
        config,
        read_format: (b::PERF_FORMAT_GROUP
            | b::PERF_FORMAT_TOTAL_TIME_ENABLED
            | b::PERF_FORMAT_TOTAL_TIME_RUNNING) as u64,
        ..Default::default()
    };
    attr.set_exclude_user(exclude_user as u64);
    attr.set_exclude_kernel(exclude_kernel as u64);
    attr.set_exclude_hv(1);
    // SAFETY: `attr` is a fully initialised perf_event_attr whose `size` is its own size; it
    // asks for a counting (non-sampling) event of the calling thread (pid 0, cpu -1), which
    // maps no memory and sends no signal. The kernel only reads `attr` during the call.
    let fd = unsafe {
        perf_event_open_sys::perf_event_open(
            &mut attr,
            0,
            -1,
            group_fd,
            b::PERF_FLAG_FD_CLOEXEC as libc::c_ulong,
        )
    };
    if fd < 0 {
        Err(std::io::Error::last_os_error().raw_os_error().unwrap_or(0))
    } else {
        Ok(fd)
    }
}

/// `read` of a perf group leader into `buf` (PERF_FORMAT_GROUP layout); the words read, 0 on
/// error. One syscall; no allocation.
#[inline]
pub(crate) fn perf_read(fd: libc::c_int, buf: &mut [u64]) -> usize {
    // SAFETY: `buf` is a valid writable region of `size_of_val(buf)` bytes for the whole call.
    let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), std::mem::size_of_val(buf)) };
    if n <= 0 {
        0
    } else {
        n as usize / 8
    }
}

/// Closes a descriptor this crate opened (errors ignored: nothing to do about them).
pub(crate) fn close(fd: libc::c_int) {
    // SAFETY: callers pass a descriptor they own and never use again.
    unsafe { libc::close(fd) };
}
