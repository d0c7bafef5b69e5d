//! `dlclose`, bracketed so that the sampler's signal handler never reads the unwind data of a
//! module being unmapped (see `metron::sampling::around_module_unload`). Programs that dlopen
//! and dlclose plugins while sampled (Open MPI's component probing in `MPI_Init`, Python
//! extension loaders) faulted in the handler without it. The real function is libc's, found
//! with `dlsym(RTLD_NEXT)`.

use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicPtr, Ordering};

type DlcloseFn = unsafe extern "C" fn(*mut c_void) -> c_int;

static REAL: AtomicPtr<c_void> = AtomicPtr::new(std::ptr::null_mut());

fn real_dlclose() -> Option<DlcloseFn> {
    let mut p = REAL.load(Ordering::Acquire);
    if p.is_null() {
        // SAFETY: the name is NUL-terminated; RTLD_NEXT is a valid pseudo-handle for dlsym.
        p = unsafe { libc::dlsym(libc::RTLD_NEXT, c"dlclose".as_ptr()) };
        REAL.store(p, Ordering::Release);
    }
    // SAFETY: a non-null result of dlsym("dlclose") is libc's dlclose, of this signature.
    (!p.is_null()).then(|| unsafe { std::mem::transmute::<*mut c_void, DlcloseFn>(p) })
}

/// Unloads `handle` like libc's `dlclose`, with the sampler kept off the module meanwhile.
///
/// # Safety
/// The same contract as libc's `dlclose`.
#[no_mangle]
pub unsafe extern "C" fn dlclose(handle: *mut c_void) -> c_int {
    let Some(real) = real_dlclose() else {
        // No libc dlclose after this library: leave the module loaded, as a failed dlclose.
        return -1;
    };
    // SAFETY: the caller's contract is libc's, passed through unchanged.
    let unload = || unsafe { real(handle) };
    // Never unwinds into C; the bracket cannot panic before or after the call in practice.
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        metron::sampling::around_module_unload(unload)
    }))
    .unwrap_or(-1)
}
