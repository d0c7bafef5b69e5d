//! The tracer's engine before Python 3.12: a C-level profile function (`PyEval_SetProfile`),
//! called by the interpreter at every Python call and return of the threads it is set on,
//! with no Python frame of its own.
//!
//! A thread started after tracing began gets it from `threading.setprofile(_profile_bootstrap)`:
//! the bootstrap's first call swaps itself for the C function and hands it that first event.

use crate::sys::{PyFrameObject, PyObject};
use crate::tracer::{enter, exit, tracer};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use std::ffi::c_int;

const PY_TRACE_CALL: c_int = 0;
const PY_TRACE_RETURN: c_int = 3;

/// The profile function. Runs with the GIL held, between two Python instructions; never
/// raises (returns 0).
extern "C" fn on_profile(
    _obj: *mut PyObject,
    frame: *mut PyFrameObject,
    what: c_int,
    _arg: *mut PyObject,
) -> c_int {
    if what != PY_TRACE_CALL && what != PY_TRACE_RETURN {
        return 0;
    }
    let Some(t) = tracer() else { return 0 };
    // SAFETY: `frame` is the live frame of this event; the result is a new reference.
    let code = unsafe { (t.python.frame_code)(frame) };
    // SAFETY: the GIL is held; `code` is `frame`'s live code object.
    let info = unsafe { t.info(code, frame) };
    if info.call_id != 0 {
        let key = frame as usize;
        if what == PY_TRACE_RETURN {
            exit(key);
        } else {
            let first = info.first_resume < 0
                || t.python.frame_lasti.is_none_or(|lasti| {
                    // SAFETY: `frame` is live.
                    let at = unsafe { lasti(frame) };
                    at == info.first_resume
                });
            enter(key, if first { info.call_id } else { info.resumed_id });
        }
    }
    // SAFETY: the reference PyFrame_GetCode returned, released once.
    unsafe { pyo3::ffi::Py_DecRef(code) };
    0
}

/// Sets the profile function on this thread.
#[pyfunction]
#[pyo3(name = "_profile_on")]
fn profile_on() -> PyResult<()> {
    let t = tracer().ok_or_else(|| PyValueError::new_err("_tracer_init first"))?;
    // SAFETY: the GIL is held; `on_profile` has the Py_tracefunc signature.
    unsafe { (t.python.set_profile)(Some(on_profile), std::ptr::null_mut()) };
    Ok(())
}

/// Removes the profile function from this thread.
#[pyfunction]
#[pyo3(name = "_profile_off")]
fn profile_off() {
    if let Some(t) = tracer() {
        // SAFETY: the GIL is held.
        unsafe { (t.python.set_profile)(None, std::ptr::null_mut()) };
    }
}

/// `threading.setprofile` hook: installs the C function on the new thread and gives it the
/// event that brought the thread here.
#[pyfunction]
#[pyo3(name = "_profile_bootstrap")]
fn profile_bootstrap(
    frame: &Bound<'_, PyAny>,
    event: &str,
    _arg: &Bound<'_, PyAny>,
) -> PyResult<()> {
    profile_on()?;
    if event == "call" {
        on_profile(
            std::ptr::null_mut(),
            frame.as_ptr().cast(),
            PY_TRACE_CALL,
            std::ptr::null_mut(),
        );
    }
    Ok(())
}

pub fn add_to(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(profile_on, m)?)?;
    m.add_function(wrap_pyfunction!(profile_off, m)?)?;
    m.add_function(wrap_pyfunction!(profile_bootstrap, m)?)?;
    Ok(())
}
