//! The system calls of the sinks (all of this crate's `unsafe`).

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

/// Allocates `bytes` of disk blocks to `file` without writing them (`fallocate`, mode 0: real
/// blocks, not a sparse hole). False where the file system cannot (the caller then writes).
pub(crate) fn allocate(file: &std::fs::File, bytes: u64) -> bool {
    use std::os::fd::AsRawFd;
    let Ok(len) = libc::off_t::try_from(bytes) else {
        return false;
    };
    // SAFETY: a valid open file descriptor, offset 0 and a non-negative length.
    unsafe { libc::fallocate(file.as_raw_fd(), 0, 0, len) == 0 }
}
