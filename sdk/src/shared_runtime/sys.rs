//! The system calls of the process claim: a page at a fixed address, a fault-free read of
//! memory that may not be mapped, and pinning this copy's code in memory.

use std::ffi::c_void;

/// What happened when this copy tried to map the claim page.
pub(crate) enum Mapped {
    /// This copy mapped it: it is the first, and the page is zero-filled and writable.
    Ours(*mut u8),
    /// Something is already mapped there (another copy's claim, or, very unlikely, anything
    /// else: the caller checks with [`read_bytes`]).
    Taken,
    /// The kernel cannot map a fixed address without replacing (Linux before 4.17 treats the
    /// flag as a hint) or refused for another reason.
    Unsupported(String),
}

/// Maps `len` bytes at exactly `address`, never replacing an existing mapping.
pub(crate) fn map_fixed_noreplace(address: usize, len: usize) -> Mapped {
    // SAFETY: MAP_FIXED_NOREPLACE never replaces an existing mapping (it fails with EEXIST),
    // so no memory anyone uses can be affected; an anonymous private mapping has no other
    // preconditions.
    let got = unsafe {
        libc::mmap(
            address as *mut c_void,
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED_NOREPLACE,
            -1,
            0,
        )
    };
    if got == libc::MAP_FAILED {
        let err = std::io::Error::last_os_error();
        return match err.raw_os_error() {
            Some(libc::EEXIST) => Mapped::Taken,
            _ => Mapped::Unsupported(format!("mmap at {address:#x}: {err}")),
        };
    }
    if got as usize != address {
        // An old kernel took the address as a hint and put the page elsewhere.
        // SAFETY: `got` is the mapping of `len` bytes this call just made; nobody else knows it.
        unsafe { libc::munmap(got, len) };
        return Mapped::Unsupported(format!(
            "the kernel does not support MAP_FIXED_NOREPLACE (mapped at {got:p} instead of {address:#x})"
        ));
    }
    Mapped::Ours(got.cast())
}

/// Copies `out.len()` bytes from `address` in this process, or returns false when that memory
/// is not mapped readable, without faulting (`process_vm_readv` on our own pid).
pub(crate) fn read_bytes(address: usize, out: &mut [u8]) -> bool {
    let local = libc::iovec {
        iov_base: out.as_mut_ptr().cast(),
        iov_len: out.len(),
    };
    let remote = libc::iovec {
        iov_base: address as *mut c_void,
        iov_len: out.len(),
    };
    // SAFETY: `local` describes `out`, writable for its length; the kernel checks `remote`
    // and returns EFAULT instead of faulting when it is not readable.
    let n = unsafe { libc::process_vm_readv(libc::getpid(), &local, 1, &remote, 1, 0) };
    n == out.len() as isize
}

/// Keeps the shared object holding `code` loaded for the life of the process (`RTLD_NODELETE`):
/// other copies of Metron call into this one, and a `dlclose` must not unmap it under them.
/// Does nothing for the main program, which is never unloaded.
pub(crate) fn pin_shared_object_of(code: *const c_void) {
    // SAFETY: an all-zero Dl_info is a valid out-value.
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: `code` is an address in this copy's code; dladdr only reads the loader's tables
    // and fills `info`.
    if unsafe { libc::dladdr(code, &mut info) } == 0 || info.dli_fname.is_null() {
        return;
    }
    // SAFETY: `dli_fname` is a NUL-terminated path owned by the loader. RTLD_NOLOAD never
    // loads anything: it finds the object already loaded and sets RTLD_NODELETE on it. The
    // handle is deliberately never closed.
    unsafe {
        libc::dlopen(
            info.dli_fname,
            libc::RTLD_LAZY | libc::RTLD_NOLOAD | libc::RTLD_NODELETE,
        )
    };
}
