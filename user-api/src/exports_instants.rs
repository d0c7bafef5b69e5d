//! Exports: instant marks and counters.

use super::*;

/// Records instant mark `name`.
///
/// # Safety
/// `name` is NULL or a valid NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn metron_mark(name: *const c_char) -> Status {
    call_fast(|| {
        if name.is_null() {
            return fail(null("metron_mark: the name"));
        }
        if off_in_child() {
            return OK;
        }
        with_state_fast("metron_mark", |st| {
            // SAFETY: non-NULL and NUL-terminated per the contract.
            let (id, _) = unsafe { st.lookup(name, CallsiteKind::Instant) };
            by_id::mark(id);
            OK
        })
    })
}

/// Records `value` for counter `name`.
///
/// # Safety
/// `name` is NULL or a valid NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn metron_counter(name: *const c_char, value: f64) -> Status {
    call_fast(|| {
        if name.is_null() {
            return fail(null("metron_counter: the name"));
        }
        if off_in_child() {
            return OK;
        }
        with_state_fast("metron_counter", |st| {
            // SAFETY: non-NULL and NUL-terminated per the contract.
            let (id, _) = unsafe { st.lookup(name, CallsiteKind::Counter) };
            by_id::counter(id, value);
            OK
        })
    })
}
