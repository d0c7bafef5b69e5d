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

/// Bytes an unprivileged process may still write on the filesystem holding `path`.
pub(crate) fn available_bytes(path: &std::path::Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).ok()?;
    // SAFETY: an all-zero statvfs is a valid out-value.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: `c` is NUL-terminated and `st` a writable statvfs.
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return None;
    }
    Some(st.f_bavail as u64 * st.f_frsize as u64)
}
