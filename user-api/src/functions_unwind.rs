//! Functions left by `longjmp`, or by a C++ exception caught above them in code whose compiler
//! calls no exit hook while unwinding (Clang), end at that moment: libmetron wraps `longjmp`,
//! `_longjmp`, `siglongjmp`, `__longjmp_chk` and `__cxa_begin_catch`, ends the calling
//! thread's function regions whose frames the jump or the catch throws away, and hands over to
//! the C library's or libstdc++'s own function with the same arguments. Without this, such a
//! region would end later, when the shadow stack notices the frame is gone.
//!
//! Where each frame is: the shadow stack keeps the stack pointer the entry hook read inside
//! itself, at a fixed distance from the instrumented function's own, measured once by calling
//! the hook from a known stack pointer (`metron_functions::stack_pointer_at_call`); the catch
//! wrapper measures its own distance the same way. A `longjmp`'s target is read from its
//! `jmp_buf` (`metron_functions::longjmp_stack_pointer`), checked once against a `setjmp` of
//! our own. If a measurement is not plausible, the wrappers only hand over, and the shadow
//! stack's own checks remain.
//!
//! In a run that selects no function (`METRON_FUNCTIONS` empty, or no function decided yet)
//! the wrappers only hand over: the real functions are found when the library is loaded, so a
//! `longjmp` out of a signal handler calls nothing that is not async-signal-safe. A `longjmp`
//! out of a signal handler that interrupted one of the hooks changes nothing (the hooks are
//! busy); one that interrupted Metron's own region writing elsewhere on the thread is not
//! protected (none of Metron's paths calls `longjmp`).

use std::ffi::{c_int, c_void, CStr};
use std::sync::atomic::{AtomicPtr, AtomicU8, AtomicUsize, Ordering};

const UNKNOWN: u8 = 0;
const READY: u8 = 1;
const UNUSABLE: u8 = 2;
static STATE: AtomicU8 = AtomicU8::new(UNKNOWN);
/// The instrumented function's stack pointer minus the one the entry hook reads.
static ENTER_DISTANCE: AtomicUsize = AtomicUsize::new(0);
/// The catching function's stack pointer minus the one `__cxa_begin_catch`'s wrapper reads.
static CATCH_DISTANCE: AtomicUsize = AtomicUsize::new(0);
/// What a hook called in measuring mode (null arguments) read.
static MEASURED: AtomicUsize = AtomicUsize::new(0);

#[used]
#[link_section = ".init_array"]
static FIND_REAL_FUNCTIONS: extern "C" fn() = find_real_functions;

/// Runs when the library is loaded: finds the functions the wrappers hand over to, so that no
/// wrapper calls `dlsym` later (a `longjmp` may come from a signal handler).
extern "C" fn find_real_functions() {
    let _ = std::panic::catch_unwind(|| {
        for name in REAL_NAMES {
            let _ = real(name);
        }
    });
}

/// The hooks' measuring mode: they call this with the stack pointer they read, and return.
pub(crate) fn measured(stack_pointer: usize) {
    MEASURED.store(stack_pointer, Ordering::Relaxed);
}

/// The distance from `hook`'s caller's stack pointer to the one `hook` reads inside itself.
fn distance(hook: unsafe extern "C" fn(*mut c_void, *mut c_void)) -> Option<usize> {
    MEASURED.store(0, Ordering::Relaxed);
    // SAFETY: both hooks accept two null pointers (their measuring mode) and return.
    let at_call = unsafe { metron_functions::stack_pointer_at_call(hook) }?;
    let inside = MEASURED.load(Ordering::Relaxed);
    let d = at_call.checked_sub(inside)?;
    (inside != 0 && (8..4096).contains(&d)).then_some(d)
}

/// Measures the distances, checks the `jmp_buf` reading and finds the real functions, once:
/// the engine calls it with its entry hook when it first selects a function.
pub(crate) fn prepare(enter_hook: unsafe extern "C" fn(*mut c_void, *mut c_void)) {
    if STATE.load(Ordering::Acquire) != UNKNOWN {
        return;
    }
    for name in REAL_NAMES {
        let _ = real(name);
    }
    let enter = distance(enter_hook);
    let catch = distance(catch_hook_for_measuring);
    let state = match (enter, catch, metron_functions::setjmp_layout_is_known()) {
        (Some(e), Some(c), true) => {
            ENTER_DISTANCE.store(e, Ordering::Relaxed);
            CATCH_DISTANCE.store(c, Ordering::Relaxed);
            READY
        }
        _ => UNUSABLE,
    };
    STATE.store(state, Ordering::Release);
}

/// `__cxa_begin_catch` in measuring mode, with the hooks' two-pointer signature.
unsafe extern "C" fn catch_hook_for_measuring(_: *mut c_void, _: *mut c_void) {
    // SAFETY: a null exception is the wrapper's measuring mode; nothing is dereferenced.
    let _ = unsafe { __cxa_begin_catch(std::ptr::null_mut()) };
}

/// Ends the regions of the thread's functions whose frames are below `stack_pointer` (a stack
/// pointer of the instrumented code, not of a hook).
/// Nothing happens until the engine selected a function (which prepared the measurements).
fn end_frames_below(stack_pointer: usize) {
    if STATE.load(Ordering::Acquire) != READY {
        return;
    }
    let as_hook_reads = stack_pointer.wrapping_sub(ENTER_DISTANCE.load(Ordering::Relaxed));
    crate::functions_thread::end_frames_below(as_hook_reads);
}

const REAL_NAMES: [&CStr; 5] = [
    c"longjmp",
    c"_longjmp",
    c"siglongjmp",
    c"__longjmp_chk",
    c"__cxa_begin_catch",
];

static REAL: [AtomicPtr<c_void>; 5] = [const { AtomicPtr::new(std::ptr::null_mut()) }; 5];

/// The next definition of `name` after libmetron's (the C library's, libstdc++'s).
fn real(name: &CStr) -> *mut c_void {
    let i = REAL_NAMES.iter().position(|n| *n == name).unwrap_or(0);
    let known = REAL[i].load(Ordering::Relaxed);
    if !known.is_null() {
        return known;
    }
    // SAFETY: `name` is NUL-terminated; RTLD_NEXT is a valid pseudo-handle for dlsym.
    let found = unsafe { libc::dlsym(libc::RTLD_NEXT, name.as_ptr()) };
    REAL[i].store(found, Ordering::Relaxed);
    found
}

macro_rules! wrap_longjmp {
    ($(#[$doc:meta])* fn $name:ident) => {
        $(#[$doc])*
        ///
        /// # Safety
        /// The same contract as the C library's function of this name.
        #[no_mangle]
        pub unsafe extern "C" fn $name(env: *mut c_void, value: c_int) -> ! {
            type Real = unsafe extern "C" fn(*mut c_void, c_int) -> !;
            // SAFETY: `env` was filled by setjmp on this thread (the caller's contract).
            if let Some(target) = unsafe { metron_functions::longjmp_stack_pointer(env as *const u64) } {
                let _ = std::panic::catch_unwind(|| end_frames_below(target));
            }
            let real = real(match CStr::from_bytes_with_nul(concat!(stringify!($name), "\0").as_bytes()) {
                Ok(name) => name,
                Err(_) => unreachable!(),
            });
            if real.is_null() {
                // SAFETY: abort has no preconditions.
                unsafe { libc::abort() };
            }
            // SAFETY: `real` is the C library's definition of this very function, whose
            // signature `Real` repeats.
            unsafe { std::mem::transmute::<*mut c_void, Real>(real)(env, value) }
        }
    };
}

wrap_longjmp!(
    /// `longjmp(3)`, after ending the function regions of the frames it throws away.
    fn longjmp
);
wrap_longjmp!(
    /// `_longjmp(3)`, as [`longjmp`].
    fn _longjmp
);
wrap_longjmp!(
    /// `siglongjmp(3)`, as [`longjmp`].
    fn siglongjmp
);
wrap_longjmp!(
    /// glibc's `__longjmp_chk` (`longjmp` under `_FORTIFY_SOURCE`), as [`longjmp`].
    fn __longjmp_chk
);

/// libstdc++'s `__cxa_begin_catch`, called by the catching function's handler: ends the
/// function regions of the frames the exception unwound (none in GCC-built code, whose exit
/// hooks ran while unwinding), then hands over. A null exception is the measuring mode.
///
/// # Safety
/// The same contract as libstdc++'s `__cxa_begin_catch`.
#[no_mangle]
pub unsafe extern "C" fn __cxa_begin_catch(exception: *mut c_void) -> *mut c_void {
    type Real = unsafe extern "C" fn(*mut c_void) -> *mut c_void;
    let here = metron_functions::stack_pointer();
    if exception.is_null() {
        measured(here);
        return std::ptr::null_mut();
    }
    let catcher = here.wrapping_add(CATCH_DISTANCE.load(Ordering::Relaxed));
    if STATE.load(Ordering::Acquire) == READY {
        let _ = std::panic::catch_unwind(|| end_frames_below(catcher));
    }
    let real = real(c"__cxa_begin_catch");
    if real.is_null() {
        // SAFETY: abort has no preconditions.
        unsafe { libc::abort() };
    }
    // SAFETY: `real` is libstdc++'s definition of this very function, whose signature `Real`
    // repeats.
    unsafe { std::mem::transmute::<*mut c_void, Real>(real)(exception) }
}
