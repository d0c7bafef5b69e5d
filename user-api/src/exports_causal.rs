//! Exports: causal profiling's progress points (Metron's and Coz's) and the `pthread`
//! wrappers that make blocking calls safe points for its delays.
//!
//! **Coz compatibility.** A program built with Coz's `coz.h` finds `_coz_get_counter` (and,
//! with newer headers, `_coz_pre_block`, `_coz_post_block`, `_coz_add_delays`) at run time
//! with `dlsym(RTLD_DEFAULT, ...)`; this library defines them, so `COZ_PROGRESS`,
//! `COZ_PROGRESS_NAMED`, `COZ_BEGIN` and `COZ_END` count into Metron's progress points
//! unchanged. The counter handed out has Coz's `coz_counter_t` layout.
//!
//! **Blocking calls.** While a causal run is on (`metron::sampling::causal`), the wrappers
//! below follow Coz's rules: a thread about to wake another (unlock, signal, broadcast,
//! barrier) first pays the delays it owes; a thread that blocks (lock, wait, barrier, join)
//! is not delayed while blocked and, when another thread wakes it, is credited with the
//! delays inserted meanwhile. Otherwise (no causal run: the usual case) each wrapper costs
//! one relaxed load before calling the C library's own function, found once with
//! `dlsym(RTLD_NEXT)`. A lock that is free is taken with `trylock` first, so uncontended locks
//! do no accounting. `pthread_create` is wrapped as well: during a causal run the new thread
//! registers with the sampler as it starts and inherits its creator's delay count.

use super::*;
use metron::sampling::causal::{self, ProgressCounter, ProgressKind};

/// `_coz_get_counter(type, name)`: the progress counter Coz's header increments. NULL for an
/// unknown type or a NULL name.
///
/// # Safety
/// `name` is NULL or a valid NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn _coz_get_counter(kind: i32, name: *const c_char) -> *mut ProgressCounter {
    let found = catch_unwind(AssertUnwindSafe(|| {
        let kind = ProgressKind::from_coz(kind)?;
        if name.is_null() {
            return None;
        }
        // SAFETY: non-NULL and NUL-terminated per the contract.
        let name = unsafe { CStr::from_ptr(name) }.to_string_lossy();
        Some(causal::counter(kind, &name))
    }));
    match found {
        Ok(Some(c)) => c as *const ProgressCounter as *mut ProgressCounter,
        _ => std::ptr::null_mut(),
    }
}

/// `_coz_pre_block()`: the calling thread is about to block.
#[no_mangle]
pub extern "C" fn _coz_pre_block() {
    let _ = catch_unwind(causal::pre_block);
}

/// `_coz_post_block(skip_delays)`: the calling thread is back from a blocking call; nonzero
/// when another thread woke it.
#[no_mangle]
pub extern "C" fn _coz_post_block(skip_delays: i32) {
    let _ = catch_unwind(|| causal::post_block(skip_delays != 0));
}

/// `_coz_add_delays()`: pay the delays the calling thread owes now.
#[no_mangle]
pub extern "C" fn _coz_add_delays() {
    let _ = catch_unwind(causal::catch_up);
}

/// The progress counter of `kind` (`METRON_PROGRESS_THROUGHPUT` 1, `_BEGIN` 2, `_END` 3) named
/// `name`, for `METRON_PROGRESS` to cache; NULL (and an error) for a NULL name or an unknown
/// kind.
///
/// # Safety
/// `name` is NULL or a valid NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn metron_progress_counter(
    kind: i32,
    name: *const c_char,
) -> *mut ProgressCounter {
    if name.is_null() {
        fail(null("metron_progress_counter: the name"));
        return std::ptr::null_mut();
    }
    if ProgressKind::from_coz(kind).is_none() {
        fail(Failure::new(
            ERROR_INVALID_ARGUMENT,
            format!("metron_progress_counter: kind {kind} is not one of METRON_PROGRESS_THROUGHPUT (1), METRON_PROGRESS_BEGIN (2), METRON_PROGRESS_END (3)"),
        ));
        return std::ptr::null_mut();
    }
    // SAFETY: as for `_coz_get_counter`.
    unsafe { _coz_get_counter(kind, name) }
}

/// One visit of progress point `name` of `kind`, by name (a lookup under a lock; in a loop,
/// prefer the header's macros, which cache the counter).
///
/// # Safety
/// `name` is NULL or a valid NUL-terminated string.
unsafe fn visit(kind: ProgressKind, what: &str, name: *const c_char) -> Status {
    call(|| {
        if name.is_null() {
            return Err(null(&format!("{what}: the name")));
        }
        // SAFETY: non-NULL and NUL-terminated per the contract.
        let name = unsafe { CStr::from_ptr(name) }.to_string_lossy();
        causal::counter(kind, &name).visit();
        Ok(())
    })
}

/// One visit of throughput point `name`.
///
/// # Safety
/// `name` is NULL or a valid NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn metron_progress(name: *const c_char) -> Status {
    // SAFETY: forwarded contract.
    unsafe { visit(ProgressKind::Throughput, "metron_progress", name) }
}

/// The start of a transaction of latency point `name`.
///
/// # Safety
/// `name` is NULL or a valid NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn metron_progress_begin(name: *const c_char) -> Status {
    // SAFETY: forwarded contract.
    unsafe { visit(ProgressKind::Begin, "metron_progress_begin", name) }
}

/// The end of a transaction of latency point `name`.
///
/// # Safety
/// `name` is NULL or a valid NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn metron_progress_end(name: *const c_char) -> Status {
    // SAFETY: forwarded contract.
    unsafe { visit(ProgressKind::End, "metron_progress_end", name) }
}

/// The C library's own functions, found once.
mod real {
    use std::ffi::{c_int, c_void};
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// A function of the next library in the search order, cached.
    pub(super) struct Next {
        name: &'static std::ffi::CStr,
        /// Symbol version to ask for first (`pthread_cond_*` have two).
        version: Option<&'static std::ffi::CStr>,
        addr: AtomicUsize,
    }

    impl Next {
        pub(super) const fn new(
            name: &'static std::ffi::CStr,
            version: Option<&'static std::ffi::CStr>,
        ) -> Next {
            Next {
                name,
                version,
                addr: AtomicUsize::new(0),
            }
        }

        /// The address; aborts when the C library lacks the function (nothing sane to call).
        pub(super) fn get(&self) -> usize {
            let a = self.addr.load(Ordering::Relaxed);
            if a != 0 {
                return a;
            }
            let mut p: *mut c_void = std::ptr::null_mut();
            if let Some(v) = self.version {
                // SAFETY: both strings are NUL-terminated; RTLD_NEXT is a valid pseudo-handle.
                p = unsafe { libc::dlvsym(libc::RTLD_NEXT, self.name.as_ptr(), v.as_ptr()) };
            }
            if p.is_null() {
                // SAFETY: as above.
                p = unsafe { libc::dlsym(libc::RTLD_NEXT, self.name.as_ptr()) };
            }
            if p.is_null() {
                // SAFETY: the message is a valid buffer of the given length; abort has no
                // preconditions.
                unsafe {
                    let m = b"metron: the C library has no pthread function it wraps\n";
                    libc::write(2, m.as_ptr().cast(), m.len());
                    libc::abort();
                }
            }
            self.addr.store(p as usize, Ordering::Relaxed);
            p as usize
        }
    }

    pub(super) type Fn1 = unsafe extern "C" fn(*mut c_void) -> c_int;
    pub(super) type Fn2 = unsafe extern "C" fn(*mut c_void, *mut c_void) -> c_int;
    pub(super) type Fn3 = unsafe extern "C" fn(*mut c_void, *mut c_void, *const c_void) -> c_int;
    pub(super) type Join = unsafe extern "C" fn(libc::pthread_t, *mut *mut c_void) -> c_int;

    pub(super) static MUTEX_LOCK: Next = Next::new(c"pthread_mutex_lock", None);
    pub(super) static MUTEX_TRYLOCK: Next = Next::new(c"pthread_mutex_trylock", None);
    pub(super) static MUTEX_UNLOCK: Next = Next::new(c"pthread_mutex_unlock", None);
    pub(super) static COND_WAIT: Next = Next::new(c"pthread_cond_wait", Some(c"GLIBC_2.3.2"));
    pub(super) static COND_TIMEDWAIT: Next =
        Next::new(c"pthread_cond_timedwait", Some(c"GLIBC_2.3.2"));
    pub(super) static COND_SIGNAL: Next = Next::new(c"pthread_cond_signal", Some(c"GLIBC_2.3.2"));
    pub(super) static COND_BROADCAST: Next =
        Next::new(c"pthread_cond_broadcast", Some(c"GLIBC_2.3.2"));
    pub(super) static BARRIER_WAIT: Next = Next::new(c"pthread_barrier_wait", None);
    pub(super) static JOIN: Next = Next::new(c"pthread_join", None);
    pub(super) static CREATE: Next = Next::new(c"pthread_create", None);

    /// A thread's start routine.
    pub(super) type Start = extern "C" fn(*mut c_void) -> *mut c_void;
    type Create = unsafe extern "C" fn(
        *mut libc::pthread_t,
        *const libc::pthread_attr_t,
        Start,
        *mut c_void,
    ) -> c_int;

    /// Calls `pthread_create`.
    ///
    /// # Safety
    /// The arguments are what `pthread_create` expects.
    pub(super) unsafe fn create(
        t: *mut libc::pthread_t,
        attr: *const libc::pthread_attr_t,
        f: Start,
        arg: *mut c_void,
    ) -> c_int {
        // SAFETY: the address is libc's pthread_create.
        unsafe { std::mem::transmute::<usize, Create>(CREATE.get())(t, attr, f, arg) }
    }

    /// Calls a one-pointer function.
    ///
    /// # Safety
    /// `f` has the signature [`Fn1`] and `a` is what it expects.
    pub(super) unsafe fn call1(f: &Next, a: *mut c_void) -> c_int {
        // SAFETY: per the contract, the address is a function of this signature.
        unsafe { std::mem::transmute::<usize, Fn1>(f.get())(a) }
    }

    /// Calls a two-pointer function.
    ///
    /// # Safety
    /// `f` has the signature [`Fn2`] and the arguments are what it expects.
    pub(super) unsafe fn call2(f: &Next, a: *mut c_void, b: *mut c_void) -> c_int {
        // SAFETY: per the contract.
        unsafe { std::mem::transmute::<usize, Fn2>(f.get())(a, b) }
    }

    /// Calls a three-pointer function.
    ///
    /// # Safety
    /// `f` has the signature [`Fn3`] and the arguments are what it expects.
    pub(super) unsafe fn call3(
        f: &Next,
        a: *mut c_void,
        b: *mut c_void,
        c: *const c_void,
    ) -> c_int {
        // SAFETY: per the contract.
        unsafe { std::mem::transmute::<usize, Fn3>(f.get())(a, b, c) }
    }

    /// Calls `pthread_join`.
    ///
    /// # Safety
    /// The arguments are what `pthread_join` expects.
    pub(super) unsafe fn join(t: libc::pthread_t, ret: *mut *mut c_void) -> c_int {
        // SAFETY: the address is libc's pthread_join.
        unsafe { std::mem::transmute::<usize, Join>(JOIN.get())(t, ret) }
    }
}

use std::ffi::c_int;

/// `pthread_mutex_lock`, a safe point when it has to wait.
///
/// # Safety
/// As `pthread_mutex_lock`.
#[no_mangle]
pub unsafe extern "C" fn pthread_mutex_lock(m: *mut c_void) -> c_int {
    if !causal::is_engaged() {
        // SAFETY: the caller's arguments, to libc's own function.
        return unsafe { real::call1(&real::MUTEX_LOCK, m) };
    }
    // SAFETY: as above.
    if unsafe { real::call1(&real::MUTEX_TRYLOCK, m) } == 0 {
        return 0;
    }
    causal::pre_block();
    // SAFETY: as above.
    let rc = unsafe { real::call1(&real::MUTEX_LOCK, m) };
    causal::post_block(true);
    rc
}

/// `pthread_mutex_unlock`, after paying the caller's delays.
///
/// # Safety
/// As `pthread_mutex_unlock`.
#[no_mangle]
pub unsafe extern "C" fn pthread_mutex_unlock(m: *mut c_void) -> c_int {
    causal::catch_up();
    // SAFETY: the caller's arguments, to libc's own function.
    unsafe { real::call1(&real::MUTEX_UNLOCK, m) }
}

/// `pthread_cond_wait`: blocked while it waits.
///
/// # Safety
/// As `pthread_cond_wait`.
#[no_mangle]
pub unsafe extern "C" fn pthread_cond_wait(c: *mut c_void, m: *mut c_void) -> c_int {
    causal::pre_block();
    // SAFETY: the caller's arguments, to libc's own function.
    let rc = unsafe { real::call2(&real::COND_WAIT, c, m) };
    causal::post_block(true);
    rc
}

/// `pthread_cond_timedwait`: blocked while it waits; a timeout is not a wake-up by another
/// thread.
///
/// # Safety
/// As `pthread_cond_timedwait`.
#[no_mangle]
pub unsafe extern "C" fn pthread_cond_timedwait(
    c: *mut c_void,
    m: *mut c_void,
    t: *const c_void,
) -> c_int {
    causal::pre_block();
    // SAFETY: the caller's arguments, to libc's own function.
    let rc = unsafe { real::call3(&real::COND_TIMEDWAIT, c, m, t) };
    causal::post_block(rc == 0);
    rc
}

/// `pthread_cond_signal`, after paying the caller's delays.
///
/// # Safety
/// As `pthread_cond_signal`.
#[no_mangle]
pub unsafe extern "C" fn pthread_cond_signal(c: *mut c_void) -> c_int {
    causal::catch_up();
    // SAFETY: the caller's arguments, to libc's own function.
    unsafe { real::call1(&real::COND_SIGNAL, c) }
}

/// `pthread_cond_broadcast`, after paying the caller's delays.
///
/// # Safety
/// As `pthread_cond_broadcast`.
#[no_mangle]
pub unsafe extern "C" fn pthread_cond_broadcast(c: *mut c_void) -> c_int {
    causal::catch_up();
    // SAFETY: the caller's arguments, to libc's own function.
    unsafe { real::call1(&real::COND_BROADCAST, c) }
}

/// `pthread_barrier_wait`: pays the caller's delays (the last to arrive wakes the others),
/// then blocked while it waits.
///
/// # Safety
/// As `pthread_barrier_wait`.
#[no_mangle]
pub unsafe extern "C" fn pthread_barrier_wait(b: *mut c_void) -> c_int {
    causal::catch_up();
    causal::pre_block();
    // SAFETY: the caller's arguments, to libc's own function.
    let rc = unsafe { real::call1(&real::BARRIER_WAIT, b) };
    causal::post_block(true);
    rc
}

/// What the wrapped start routine needs: the program's routine, its argument, and the
/// creator's delay count.
struct Start {
    f: real::Start,
    arg: *mut c_void,
    inherited: u64,
}

/// The start routine of a thread created during a causal run: arm sampling, inherit the
/// creator's delays, then run the program's routine.
extern "C" fn start_sampled(p: *mut c_void) -> *mut c_void {
    // SAFETY: `p` is the `Box<Start>` that `pthread_create` leaked for this thread only.
    let start = unsafe { Box::from_raw(p.cast::<Start>()) };
    let _ = catch_unwind(|| causal::thread_started(start.inherited));
    (start.f)(start.arg)
}

/// `pthread_create`: during a causal run the new thread is sampled from its first
/// instruction and owes what its creator owes (Coz's rule); otherwise libc's own, untouched.
///
/// # Safety
/// As `pthread_create`.
#[no_mangle]
pub unsafe extern "C" fn pthread_create(
    t: *mut libc::pthread_t,
    attr: *const libc::pthread_attr_t,
    f: real::Start,
    arg: *mut c_void,
) -> c_int {
    if !causal::is_engaged() {
        // SAFETY: the caller's arguments, to libc's own function.
        return unsafe { real::create(t, attr, f, arg) };
    }
    let start = Box::into_raw(Box::new(Start {
        f,
        arg,
        inherited: causal::creator_delays(),
    }));
    // SAFETY: the caller's arguments, with our routine and its own leaked argument.
    let rc = unsafe { real::create(t, attr, start_sampled, start.cast()) };
    if rc != 0 {
        // SAFETY: the thread was not created, so `start` is still ours alone.
        drop(unsafe { Box::from_raw(start) });
    }
    rc
}

/// `pthread_join`: blocked while it waits.
///
/// # Safety
/// As `pthread_join`.
#[no_mangle]
pub unsafe extern "C" fn pthread_join(t: libc::pthread_t, ret: *mut *mut c_void) -> c_int {
    causal::pre_block();
    // SAFETY: the caller's arguments, to libc's own function.
    let rc = unsafe { real::join(t, ret) };
    causal::post_block(true);
    rc
}
