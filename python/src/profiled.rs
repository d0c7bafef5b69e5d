//! `@metron.profile` on a plain function: a callable that begins the region, calls the
//! function and ends the region, with no Python frame of its own.

use crate::binding::c_api;
use pyo3::prelude::*;
use pyo3::sync::GILOnceCell;
use pyo3::types::{PyDict, PyTuple};

/// A function whose every call is a region (made by `metron.profile`).
#[pyclass(module = "metron", frozen, dict)]
pub struct Profiled {
    function: Py<PyAny>,
    id: u32,
}

static METHOD_TYPE: GILOnceCell<Py<PyAny>> = GILOnceCell::new();

#[pymethods]
impl Profiled {
    #[new]
    fn new(function: Py<PyAny>, id: u32) -> Self {
        Profiled { function, id }
    }

    #[pyo3(signature = (*args, **kwargs))]
    fn __call__<'py>(
        &self,
        py: Python<'py>,
        args: &Bound<'py, PyTuple>,
        kwargs: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let api = c_api();
        // SAFETY: `id` came from region_id of the same C API.
        unsafe { (api.begin_id)(self.id) };
        let result = self.function.bind(py).call(args, kwargs);
        // SAFETY: as above; the function's own regions have ended (or were refused and counted).
        unsafe { (api.end_id)(self.id) };
        result
    }

    /// Binds to an instance as a function does, so a decorated method gets `self`.
    fn __get__<'py>(
        slf: &Bound<'py, Self>,
        instance: Option<&Bound<'py, PyAny>>,
        _owner: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let py = slf.py();
        match instance {
            None => Ok(slf.clone().into_any()),
            Some(obj) if obj.is_none() => Ok(slf.clone().into_any()),
            Some(obj) => {
                let method_type = METHOD_TYPE.get_or_try_init(py, || {
                    Ok::<_, PyErr>(py.import("types")?.getattr("MethodType")?.unbind())
                })?;
                method_type.bind(py).call1((slf, obj))
            }
        }
    }
}
