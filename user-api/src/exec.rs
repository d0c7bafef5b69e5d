//! The `exec` family. No exit handler runs when a process replaces its image, so without this
//! everything the old program recorded would be lost. `libmetron.so` defines `execve`,
//! `execv`, `execvp`, `execvpe` and `fexecve`; each ends the program's region (preload mode),
//! writes the run folder ([`metron::finish`]) and then calls the real function, found with
//! `dlsym(RTLD_NEXT)`. The new program starts Metron afresh (under `metron run` the preload is
//! inherited) and writes its own folder (`<dir>-2` when the name would be the same: same pid,
//! same second).
//!
//! `execl`, `execlp` and `execle` are variadic, and glibc implements them with an internal call
//! to `execve` that no library can interpose, so they are not covered: a program that uses them
//! loses what it recorded before the `exec`. If an `exec` fails after the run was written, the
//! process goes on unrecorded, and Metron says so on stderr.

use std::ffi::{c_char, c_int, c_void, CStr};
use std::sync::atomic::{AtomicBool, Ordering};

type Argv = *const *const c_char;

/// Set when an `exec` wrote the run: a failed `exec` then reports that recording stopped.
static WRITTEN_FOR_EXEC: AtomicBool = AtomicBool::new(false);

/// Writes the run before the image is replaced. Never unwinds.
fn before_exec() {
    // A (v)fork child that execs: the run is the parent's, and a vfork child shares its memory.
    if !crate::preload::in_starting_process() {
        return;
    }
    let _ = std::panic::catch_unwind(|| {
        crate::preload::end_program_region();
        if metron::finish().is_some() {
            WRITTEN_FOR_EXEC.store(true, Ordering::Relaxed);
        }
    });
}

/// The `exec` returned: it failed, and the process continues.
fn after_failed_exec(name: &str) {
    if WRITTEN_FOR_EXEC.swap(false, Ordering::Relaxed) {
        eprintln!(
            "metron: {name} failed after Metron wrote this process's run folder; what the process records from now on is not kept"
        );
    }
}

/// The next definition of `name` after this library (libc's), or null.
fn next_symbol(name: &CStr) -> *mut c_void {
    // SAFETY: `name` is NUL-terminated; RTLD_NEXT is a valid pseudo-handle for dlsym.
    unsafe { libc::dlsym(libc::RTLD_NEXT, name.as_ptr()) }
}

/// Fails like a missing libc function would.
fn not_found() -> c_int {
    // SAFETY: errno is thread-local; writing it is always allowed.
    unsafe { *libc::__errno_location() = libc::ENOSYS };
    -1
}

macro_rules! forward_exec {
    ($(#[$doc:meta])* fn $name:ident($($arg:ident: $ty:ty),*)) => {
        $(#[$doc])*
        ///
        /// # Safety
        /// The same contract as the libc function of this name.
        #[no_mangle]
        pub unsafe extern "C" fn $name($($arg: $ty),*) -> c_int {
            type Real = unsafe extern "C" fn($($ty),*) -> c_int;
            let real = next_symbol(concat_cstr!($name));
            if real.is_null() {
                return not_found();
            }
            before_exec();
            // SAFETY: `real` is libc's definition of this very function, whose signature
            // `Real` repeats; the caller upholds its contract.
            let rc = unsafe { std::mem::transmute::<*mut c_void, Real>(real)($($arg),*) };
            after_failed_exec(stringify!($name));
            rc
        }
    };
}

macro_rules! concat_cstr {
    ($name:ident) => {
        match CStr::from_bytes_with_nul(concat!(stringify!($name), "\0").as_bytes()) {
            Ok(name) => name,
            Err(_) => unreachable!(),
        }
    };
}

forward_exec!(
    /// `execve(2)`, after writing Metron's run folder.
    fn execve(path: *const c_char, argv: Argv, envp: Argv)
);
forward_exec!(
    /// `execv(3)`, after writing Metron's run folder.
    fn execv(path: *const c_char, argv: Argv)
);
forward_exec!(
    /// `execvp(3)`, after writing Metron's run folder.
    fn execvp(file: *const c_char, argv: Argv)
);
forward_exec!(
    /// `execvpe(3)`, after writing Metron's run folder.
    fn execvpe(file: *const c_char, argv: Argv, envp: Argv)
);
forward_exec!(
    /// `fexecve(3)`, after writing Metron's run folder.
    fn fexecve(fd: c_int, argv: Argv, envp: Argv)
);
