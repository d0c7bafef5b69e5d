//! The FFI boundary every export goes through: `catch_unwind`, failures turned into status
//! codes (counted and kept as the last error), and access to the calling thread's C API state.

use super::*;

/// Runs an export's body: catches panics, counts failures and records their message.
#[inline(always)]
pub(crate) fn call(f: impl FnOnce() -> Result<(), Failure>) -> Status {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(())) => OK,
        Ok(Err(failure)) => fail(failure),
        Err(_) => internal(),
    }
}

/// Runs a hot-path export's body, which reports its own failures ([`fail_in`]): catches
/// panics. The body returns a plain status, so the success path moves no error value around.
#[inline(always)]
pub(crate) fn call_fast(f: impl FnOnce() -> Status) -> Status {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(status) => status,
        Err(_) => internal(),
    }
}

#[cold]
#[inline(never)]
pub(crate) fn internal() -> Status {
    fail(Failure::new(
        ERROR_INTERNAL,
        "internal error in Metron (a panic, reported above on stderr); the call did nothing",
    ))
}

/// Counts a failure and records its message (unless [`fail_in`] already did).
#[cold]
#[inline(never)]
pub(crate) fn fail(failure: Failure) -> Status {
    if failure.reported {
        return failure.status;
    }
    count(failure.status);
    let _ = catch_unwind(AssertUnwindSafe(|| {
        thread_state::with(|st| st.set_error(&failure.message))
    }));
    failure.status
}

/// [`fail`] for a failure found while this thread's state is borrowed.
#[cold]
#[inline(never)]
pub(crate) fn fail_in(st: &mut ThreadState, failure: Failure) -> Status {
    count(failure.status);
    st.set_error(&failure.message);
    failure.status
}

/// Runs `f` with this thread's state.
#[inline(always)]
pub(crate) fn with_state(
    what: &'static str,
    f: impl FnOnce(&mut ThreadState) -> Result<(), Failure>,
) -> Result<(), Failure> {
    thread_state::with(f).unwrap_or_else(|| Err(reentrant(what)))
}

/// Runs `f` with this thread's state (hot path: `f` reports its failures with [`fail_in`]).
#[inline(always)]
pub(crate) fn with_state_fast(
    what: &'static str,
    f: impl FnOnce(&mut ThreadState) -> Status,
) -> Status {
    match thread_state::with(f) {
        Some(status) => status,
        None => reentrant_failure(what),
    }
}

/// The calling thread's state was in use: counted and reported (cold).
#[cold]
#[inline(never)]
fn reentrant_failure(what: &str) -> Status {
    fail(reentrant(what))
}

#[cold]
#[inline(never)]
pub(crate) fn reentrant(what: &str) -> Failure {
    Failure::new(
        ERROR_REENTRANT,
        format!("{what}: called from a signal handler while this thread was inside Metron"),
    )
}

/// Turns a status already reported by a hot-path helper into a `Result`.
#[inline(always)]
pub(crate) fn reported(status: Status) -> Result<(), Failure> {
    if status == OK {
        Ok(())
    } else {
        Err(Failure::reported(status))
    }
}

/// True in a forked child whose Metron was turned off (every call is then a no-op).
#[inline(always)]
pub(crate) fn off_in_child() -> bool {
    metron::lifecycle::disabled_in_child()
}

#[cold]
pub(crate) fn null(what: &str) -> Failure {
    Failure::new(ERROR_NULL_ARGUMENT, format!("{what} is NULL"))
}

/// The text of a C string for messages.
///
/// # Safety
/// `ptr` is NULL or a valid NUL-terminated string.
pub(crate) unsafe fn text_of<'a>(ptr: *const c_char) -> std::borrow::Cow<'a, str> {
    if ptr.is_null() {
        return "(NULL)".into();
    }
    // SAFETY: non-NULL and NUL-terminated per the contract.
    unsafe { CStr::from_ptr(ptr) }.to_string_lossy()
}
