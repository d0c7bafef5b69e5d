//! `metron._metron`: the native half of the `metron` Python package.
//!
//! Every call goes to the C API of the one libmetron that records for the process
//! ([`binding`]): a libmetron already in the process's global scope (`metron run` preloads
//! one; a C extension may link one) or else the copy linked into this extension, which then
//! starts the runtime itself — or joins one a static copy started, through the shared-runtime
//! claim. Either way the process has one runtime, one set of buffers and one run folder.
//!
//! The hot calls (`Region.__enter__`/`__exit__`, `_begin`/`_end`, the function tracer's
//! callbacks) take no lock and allocate nothing: a region's name is interned once when its
//! `Region` is made (and `region(name)` returns the same object for the same name), names of
//! marks and counters go to C through a stack buffer.

mod binding;
mod hot;
mod names;
mod profiled;
mod sys;
mod tracer;
mod tracer_monitoring;
mod tracer_profile;

use binding::{c_api, check};
use names::with_c_name;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyFloat, PyInt, PyString};

// The C API is linked in whole: its exports are the runtime this package starts alone.
use metron_c as _;

/// A named region: `with metron.region("step"):` records one region per block.
///
/// The same object serves every block of that name, nested or on several threads (each
/// thread keeps its own stack of open regions).
#[pyclass(module = "metron", frozen)]
struct Region {
    id: sys::Id,
    #[pyo3(get)]
    name: Py<PyString>,
}

// `__enter__` and `__exit__` are C functions added by `hot::add_to`.
#[pymethods]
impl Region {
    /// The region's id in the C API (the same for equal names, in every thread).
    #[getter]
    fn id(&self) -> u32 {
        self.id
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        format!("metron.region({:?})", self.name.bind(py).to_string())
    }
}

/// A new `Region` for `name` (a str), not yet in `region`'s cache.
#[cold]
fn new_region<'py>(name: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    let py = name.py();
    let text = name.downcast::<PyString>().map_err(|_| {
        PyTypeError::new_err(format!(
            "a region's name is a str, not {}",
            name.get_type()
                .name()
                .map_or_else(|_| "?".into(), |n| n.to_string())
        ))
    })?;
    let id = region_id(&text.to_cow()?)?;
    let made = Bound::new(
        py,
        Region {
            id,
            name: text.clone().unbind(),
        },
    )?
    .into_any();
    Ok(made)
}

/// The C API's id of a region name (interned once per name for the whole process).
#[pyfunction]
#[pyo3(name = "_region_id")]
fn region_id(name: &str) -> PyResult<u32> {
    let id = with_c_name(name, |c| {
        // SAFETY: `c` is NUL-terminated and lives for the call.
        unsafe { (c_api().region_id)(c) }
    })?;
    if id == 0 {
        return Err(binding::error("region name refused"));
    }
    Ok(id)
}

/// Begins region `id` (from `_region_id`) on this thread: `@metron.profile`'s wrapper.
#[pyfunction]
#[pyo3(name = "_begin")]
fn begin(id: u32) {
    // SAFETY: the C API checks the id.
    unsafe { (c_api().begin_id)(id) };
}

/// Ends region `id`, the innermost open on this thread.
#[pyfunction]
#[pyo3(name = "_end")]
fn end(id: u32) {
    // SAFETY: the C API checks the id.
    unsafe { (c_api().end_id)(id) };
}

/// Records an instant mark named `name`.
#[pyfunction]
fn mark(name: &str) -> PyResult<()> {
    // SAFETY: `c` is NUL-terminated and lives for the call.
    check(with_c_name(name, |c| unsafe { (c_api().mark)(c) })?)
}

/// Records a value of counter `name`.
#[pyfunction]
fn counter(name: &str, value: f64) -> PyResult<()> {
    // SAFETY: `c` is NUL-terminated and lives for the call.
    check(with_c_name(name, |c| unsafe {
        (c_api().counter)(c, value)
    })?)
}

/// Annotates the innermost open region of this thread with `key = value` (str, int or float).
#[pyfunction]
fn annotate(key: &str, value: &Bound<'_, PyAny>) -> PyResult<()> {
    let api = c_api();
    let status = if value.is_instance_of::<PyString>() {
        let text: String = value.extract()?;
        with_c_name(key, |k| {
            with_c_name(&text, |v| {
                // SAFETY: both strings are NUL-terminated and live for the call.
                unsafe { (api.annotate_string)(k, v) }
            })
        })??
    } else if value.is_instance_of::<PyInt>() {
        let number: i64 = value
            .extract()
            .map_err(|_| PyValueError::new_err("an int annotation must fit in 64 bits (signed)"))?;
        // SAFETY: `k` is NUL-terminated and lives for the call.
        with_c_name(key, |k| unsafe { (api.annotate_int64)(k, number) })?
    } else if value.is_instance_of::<PyFloat>() {
        let number: f64 = value.extract()?;
        // SAFETY: `k` is NUL-terminated and lives for the call.
        with_c_name(key, |k| unsafe { (api.annotate_double)(k, number) })?
    } else {
        return Err(PyTypeError::new_err(format!(
            "an annotation's value is a str, an int or a float, not {}",
            value.get_type().name()?
        )));
    };
    check(status)
}

/// Delivers everything recorded so far to the outputs.
#[pyfunction]
fn flush() -> PyResult<()> {
    // SAFETY: no arguments.
    check(unsafe { (c_api().flush)() })
}

/// Which libmetron records for this process: `("embedded", path)` for the copy inside this
/// package, `("process", path)` for one loaded before it (`metron run`, a C extension).
#[pyfunction]
#[pyo3(name = "binding")]
fn which_binding() -> (&'static str, String) {
    let b = binding::get();
    (b.kind, b.library.clone())
}

#[pymodule]
fn _metron(m: &Bound<'_, PyModule>) -> PyResult<()> {
    binding::get();
    m.add_class::<Region>()?;
    m.add_class::<profiled::Profiled>()?;
    hot::add_to(m)?;
    m.add_function(wrap_pyfunction!(region_id, m)?)?;
    m.add_function(wrap_pyfunction!(begin, m)?)?;
    m.add_function(wrap_pyfunction!(end, m)?)?;
    m.add_function(wrap_pyfunction!(mark, m)?)?;
    m.add_function(wrap_pyfunction!(counter, m)?)?;
    m.add_function(wrap_pyfunction!(annotate, m)?)?;
    m.add_function(wrap_pyfunction!(flush, m)?)?;
    m.add_function(wrap_pyfunction!(which_binding, m)?)?;
    m.add("MetronError", m.py().get_type::<binding::MetronError>())?;
    tracer::add_to(m)?;
    Ok(())
}
