//! The tracer's engine on Python 3.12 and later: `sys.monitoring` (PEP 669) callbacks, one
//! per event kind, registered by `metron._functions` for the profiler tool id. A code object
//! that is not selected answers `DISABLE` at its first event, so the interpreter stops
//! calling for it: an unselected function costs nothing after its first call. Events carry a
//! code object, not a frame, so the key a region's exit must match is the code object.

use crate::tracer::{enter, exit, tracer, CodeInfo};
use pyo3::prelude::*;
use pyo3::sync::GILOnceCell;

static DISABLE: GILOnceCell<Py<PyAny>> = GILOnceCell::new();

/// The info of `code` (a live code object), or `None` when tracing is not set up.
#[inline(always)]
fn info<'a>(code: &Bound<'a, PyAny>) -> Option<&'static CodeInfo> {
    let t = tracer()?;
    // SAFETY: the GIL is held (a Bound proves it); `code` is a live code object; NULL frame:
    // the callback runs in the monitored frame, which the decision reads if needed. The info
    // lives as long as the code object, which outlives this event.
    Some(unsafe { &*std::ptr::from_ref(t.info(code.as_ptr(), std::ptr::null_mut())) })
}

fn disable(py: Python<'_>) -> Py<PyAny> {
    DISABLE
        .get(py)
        .map_or_else(|| py.None(), |d| d.clone_ref(py))
}

fn started(code: &Bound<'_, PyAny>, resumed: bool) -> Py<PyAny> {
    let py = code.py();
    match info(code) {
        Some(i) if i.call_id != 0 => {
            let id = if resumed { i.resumed_id } else { i.call_id };
            enter(code.as_ptr() as usize, id);
            py.None()
        }
        _ => disable(py),
    }
}

fn stopped(code: &Bound<'_, PyAny>) -> Py<PyAny> {
    let py = code.py();
    match info(code) {
        Some(i) if i.call_id != 0 => {
            exit(code.as_ptr() as usize);
            py.None()
        }
        _ => disable(py),
    }
}

/// `PY_START(code, offset)`.
#[pyfunction]
#[pyo3(name = "_on_py_start")]
fn on_start(code: &Bound<'_, PyAny>, _offset: &Bound<'_, PyAny>) -> Py<PyAny> {
    started(code, false)
}

/// `PY_RESUME(code, offset)` and `PY_THROW(code, offset, exception)`: a generator or coroutine
/// runs again.
#[pyfunction]
#[pyo3(name = "_on_py_resume", signature = (code, _offset, _exception = None))]
fn on_resume(
    code: &Bound<'_, PyAny>,
    _offset: &Bound<'_, PyAny>,
    _exception: Option<&Bound<'_, PyAny>>,
) -> Py<PyAny> {
    started(code, true)
}

/// `PY_RETURN` and `PY_YIELD(code, offset, value)`.
#[pyfunction]
#[pyo3(name = "_on_py_return")]
fn on_return(
    code: &Bound<'_, PyAny>,
    _offset: &Bound<'_, PyAny>,
    _value: &Bound<'_, PyAny>,
) -> Py<PyAny> {
    stopped(code)
}

/// `PY_UNWIND(code, offset, exception)`: an exception leaves the frame (this event cannot be
/// disabled, so it answers None).
#[pyfunction]
#[pyo3(name = "_on_py_unwind")]
fn on_unwind(code: &Bound<'_, PyAny>, _offset: &Bound<'_, PyAny>, _exception: &Bound<'_, PyAny>) {
    if info(code).is_some_and(|i| i.call_id != 0) {
        exit(code.as_ptr() as usize);
    }
}

/// Keeps `sys.monitoring.DISABLE` for the callbacks.
#[pyfunction]
#[pyo3(name = "_monitoring_disable_is")]
fn set_disable(value: Py<PyAny>, py: Python<'_>) {
    let _ = DISABLE.set(py, value);
}

pub fn add_to(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(on_start, m)?)?;
    m.add_function(wrap_pyfunction!(on_resume, m)?)?;
    m.add_function(wrap_pyfunction!(on_return, m)?)?;
    m.add_function(wrap_pyfunction!(on_unwind, m)?)?;
    m.add_function(wrap_pyfunction!(set_disable, m)?)?;
    Ok(())
}
