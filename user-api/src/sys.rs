//! Thread identity from the kernel.

/// The calling thread's kernel id.
pub(crate) fn gettid() -> u32 {
    // SAFETY: gettid has no preconditions and cannot fail.
    unsafe { libc::gettid() as u32 }
}

/// True when thread `tid` of this process has exited: `tgkill(pid, tid, 0)` (which sends
/// nothing) fails with `ESRCH`. A thread that is running its thread-local destructors still
/// exists. In a forked child, the parent's threads are gone.
pub(crate) fn thread_gone(tid: u32) -> bool {
    // SAFETY: signal 0 performs only the existence and permission checks; no signal is sent.
    let rc = unsafe { libc::syscall(libc::SYS_tgkill, libc::getpid(), tid as libc::pid_t, 0) };
    rc != 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_joined_thread_is_gone_and_a_running_one_is_not() {
        assert!(!thread_gone(gettid()));
        let tid = std::thread::spawn(gettid).join().unwrap();
        // The kernel reaps an exited thread asynchronously after join returns on some kernels:
        // wait for it rather than time it.
        while !thread_gone(tid) {
            std::thread::yield_now();
        }
        assert!(thread_gone(tid));
    }
}
