//! `_exit` and `_Exit`. They end the process without running `atexit` handlers, so a program
//! that leaves through them (dash ends every script with `_exit`; servers and forked workers
//! often do) lost everything it recorded. `libmetron.so` defines both: each ends the
//! program's region (preload mode) and writes the run folder ([`metron::finish`]) before
//! calling the real function, found with `dlsym(RTLD_NEXT)`. In a forked child, or a
//! `vfork` child leaving after a failed `exec`, `finish` does nothing (the run is the
//! parent's). `exit` reaches the kernel through libc's internal `_exit`, which no library can
//! interpose, so a normal exit is not written twice.

use std::ffi::{c_int, c_void, CStr};

/// Writes the run before the process ends. Never unwinds.
fn before_quick_exit() {
    // A (v)fork child leaving (say after a failed exec): the run is the parent's.
    if !crate::preload::in_starting_process() {
        return;
    }
    let _ = std::panic::catch_unwind(|| {
        crate::preload::end_program_region();
        let _ = metron::finish();
    });
}

fn next_symbol(name: &CStr) -> *mut c_void {
    // SAFETY: `name` is NUL-terminated; RTLD_NEXT is a valid pseudo-handle for dlsym.
    unsafe { libc::dlsym(libc::RTLD_NEXT, name.as_ptr()) }
}

/// Ends the process by the system call when libc's function cannot be found.
fn exit_group(status: c_int) -> ! {
    // SAFETY: exit_group takes the status and does not return.
    unsafe { libc::syscall(libc::SYS_exit_group, status) };
    unreachable!("exit_group returned")
}

macro_rules! forward_quick_exit {
    ($(#[$doc:meta])* fn $name:ident) => {
        $(#[$doc])*
        ///
        /// # Safety
        /// The same contract as the libc function of this name.
        #[no_mangle]
        pub unsafe extern "C" fn $name(status: c_int) -> ! {
            type Real = unsafe extern "C" fn(c_int) -> !;
            before_quick_exit();
            let real = next_symbol(match CStr::from_bytes_with_nul(
                concat!(stringify!($name), "\0").as_bytes(),
            ) {
                Ok(name) => name,
                Err(_) => unreachable!(),
            });
            if real.is_null() {
                exit_group(status);
            }
            // SAFETY: `real` is libc's definition of this very function, whose signature
            // `Real` repeats.
            unsafe { std::mem::transmute::<*mut c_void, Real>(real)(status) }
        }
    };
}

forward_quick_exit!(
    /// `_exit(2)`, after writing Metron's run folder.
    fn _exit
);
forward_quick_exit!(
    /// `_Exit(3)`, after writing Metron's run folder.
    fn _Exit
);
