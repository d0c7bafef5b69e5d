//! The calls a `with metron.region(...)` block makes, as plain C functions.
//!
//! `region(name)`, `Region.__enter__` and `Region.__exit__` are registered with CPython
//! directly (a `PyMethodDef` each) rather than through `#[pyfunction]`/`#[pymethods]`: PyO3's
//! trampoline (its thread-local GIL count, the panic guard, the type check and the argument
//! parser) costs about 240 instructions a call on CPython 3.11 (callgrind), near a quarter of
//! a block, and these three calls have nothing to parse on their common path. CPython checks `self`'s type before calling a method
//! descriptor, so the functions below read the `Region` without checking again. None of them
//! can panic on the common path; the rare path (a new name, `gpu_metrics`, a wrong call) runs
//! under a panic guard and PyO3's error handling.

use crate::binding::c_api;
use crate::Region;
use pyo3::exceptions::{PyRuntimeError, PySystemError, PyTypeError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::sync::GILOnceCell;
use pyo3::types::{PyDict, PyString, PyTuple};
use std::ffi::CStr;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// One object per region name: `region(name)` for a known name is one dictionary lookup.
static REGIONS: GILOnceCell<Py<PyDict>> = GILOnceCell::new();

/// `metron._check_gpu_metrics`, registered by `metron/__init__.py` (one place for its rules
/// and messages).
static GPU_METRICS_CHECK: GILOnceCell<Py<PyAny>> = GILOnceCell::new();

/// A `PyMethodDef` in a `static`: CPython keeps the pointer for the life of the function or
/// descriptor made from it and never writes through it.
#[repr(transparent)]
struct MethodDef(ffi::PyMethodDef);

// SAFETY: the definition is immutable after construction (its pointers are to `'static`
// strings and functions), so sharing it between threads is sound.
unsafe impl Sync for MethodDef {}

impl MethodDef {
    fn as_ptr(&'static self) -> *mut ffi::PyMethodDef {
        std::ptr::from_ref(&self.0).cast_mut()
    }
}

const REGION_DOC: &CStr = c"region(name, gpu_metrics=None)
--

The region ``name``, for ``with metron.region(name):`` (one region per block).

The same object comes back for the same name. ``gpu_metrics`` asks for GPU counters over
the region (the region mode of C regions): the names must be among the run's
``METRON_GPU_METRICS`` (``metron run --gpu-metrics``) with
``METRON_GPU_COUNTER_MODE=region``; each outermost region instance is one CUPTI range and
its values annotate it as ``gpu.<metric>`` in the trace and the summary. Anything else
raises ``ValueError`` saying what is accepted.";

static REGION_DEF: MethodDef = MethodDef(ffi::PyMethodDef {
    ml_name: c"region".as_ptr(),
    ml_meth: ffi::PyMethodDefPointer {
        PyCFunctionFastWithKeywords: region,
    },
    ml_flags: ffi::METH_FASTCALL | ffi::METH_KEYWORDS,
    ml_doc: REGION_DOC.as_ptr(),
});

static ENTER_DEF: MethodDef = MethodDef(ffi::PyMethodDef {
    ml_name: c"__enter__".as_ptr(),
    ml_meth: ffi::PyMethodDefPointer {
        PyCFunction: region_enter,
    },
    ml_flags: ffi::METH_NOARGS,
    ml_doc: c"Begins the region on this thread.".as_ptr(),
});

static EXIT_DEF: MethodDef = MethodDef(ffi::PyMethodDef {
    ml_name: c"__exit__".as_ptr(),
    ml_meth: ffi::PyMethodDefPointer {
        PyCFunctionFast: region_exit,
    },
    ml_flags: ffi::METH_FASTCALL,
    ml_doc: c"__exit__($self, kind, value, traceback, /)\n--\n\nEnds the region on this thread; the block's exception, if any, goes on.".as_ptr(),
});

/// The C API id of the `Region` at `slf`.
///
/// # Safety
/// `slf` is a live `Region` and the GIL is held.
#[inline(always)]
unsafe fn id_at(slf: *mut ffi::PyObject) -> u32 {
    // SAFETY: per this function's contract; `Region` is frozen, so reading it needs no
    // borrow flag.
    unsafe {
        let py = Python::assume_gil_acquired();
        let any = pyo3::Borrowed::from_ptr(py, slf);
        any.downcast_unchecked::<Region>().get().id
    }
}

unsafe extern "C" fn region_enter(
    slf: *mut ffi::PyObject,
    _no_args: *mut ffi::PyObject,
) -> *mut ffi::PyObject {
    // SAFETY: CPython calls a METH_NOARGS method descriptor of `Region` only with a `Region`
    // (its descriptor checks the type), with the GIL held; `id` came from region_id of the
    // same C API.
    unsafe {
        (c_api().begin_id)(id_at(slf));
        ffi::Py_INCREF(slf);
    }
    slf
}

unsafe extern "C" fn region_exit(
    slf: *mut ffi::PyObject,
    _args: *mut *mut ffi::PyObject,
    nargs: ffi::Py_ssize_t,
) -> *mut ffi::PyObject {
    if nargs != 3 {
        return wrong_exit_call(nargs);
    }
    // A mismatched end (a region left open across an `await` while another task ran) is
    // refused and counted by the C API (`metadata.json` `c_api.errors`); raising here would
    // hide the block's own exception.
    // SAFETY: as in `region_enter` (the descriptor checks the type); `False` leaves with a
    // reference of its own, as CPython expects of a returned object.
    unsafe {
        (c_api().end_id)(id_at(slf));
        let no = ffi::Py_False();
        ffi::Py_INCREF(no);
        no
    }
}

#[cold]
fn wrong_exit_call(nargs: ffi::Py_ssize_t) -> *mut ffi::PyObject {
    // SAFETY: called by CPython with the GIL held.
    let py = unsafe { Python::assume_gil_acquired() };
    PyTypeError::new_err(format!(
        "Region.__exit__ takes 3 arguments (kind, value, traceback), {nargs} given"
    ))
    .restore(py);
    std::ptr::null_mut()
}

unsafe extern "C" fn region(
    _module: *mut ffi::PyObject,
    args: *const *mut ffi::PyObject,
    nargs: ffi::Py_ssize_t,
    kwnames: *mut ffi::PyObject,
) -> *mut ffi::PyObject {
    // SAFETY: called by CPython with the GIL held.
    let py = unsafe { Python::assume_gil_acquired() };
    if nargs == 1 && kwnames.is_null() {
        if let Some(cache) = REGIONS.get(py) {
            // SAFETY: `args` holds `nargs` borrowed references for the call; the dictionary
            // is alive (held by the static); the returned reference is borrowed and gets
            // its own before it leaves.
            unsafe {
                let found = ffi::PyDict_GetItemWithError(cache.as_ptr(), *args);
                if !found.is_null() {
                    ffi::Py_INCREF(found);
                    return found;
                }
                if !ffi::PyErr_Occurred().is_null() {
                    return std::ptr::null_mut();
                }
            }
        }
    }
    // SAFETY: as above: `nargs` borrowed references, then the keyword arguments' values, and
    // `kwnames` a tuple of their names (or NULL).
    let (positional, keywords) = unsafe {
        let count = usize::try_from(nargs).unwrap_or(0);
        let named = if kwnames.is_null() {
            None
        } else {
            Some(
                pyo3::Borrowed::from_ptr(py, kwnames)
                    .downcast_unchecked::<PyTuple>()
                    .clone(),
            )
        };
        let total = count + named.as_ref().map_or(0, |n| n.len());
        (
            std::slice::from_raw_parts(args, total),
            named.map(|n| (count, n)),
        )
    };
    guarded(py, || region_slow(py, positional, keywords))
}

/// `region(name, gpu_metrics=None)` with anything but one known name: argument checks,
/// `gpu_metrics`, a new `Region`.
#[cold]
fn region_slow<'py>(
    py: Python<'py>,
    all: &[*mut ffi::PyObject],
    keywords: Option<(usize, Bound<'py, PyTuple>)>,
) -> PyResult<Bound<'py, PyAny>> {
    // SAFETY: each pointer is a borrowed reference alive for the call (see `region`).
    let arg = |p: *mut ffi::PyObject| unsafe { pyo3::Borrowed::from_ptr(py, p) }.to_owned();
    let positional = keywords.as_ref().map_or(all.len(), |(count, _)| *count);
    if positional > 2 {
        return Err(PyTypeError::new_err(format!(
            "region() takes from 1 to 2 positional arguments but {positional} were given"
        )));
    }
    let mut slots: [Option<Bound<'py, PyAny>>; 2] = [None, None];
    for (slot, &p) in slots.iter_mut().zip(&all[..positional]) {
        *slot = Some(arg(p));
    }
    if let Some((_, names)) = &keywords {
        for (key, &p) in names.iter().zip(&all[positional..]) {
            let index = match key.downcast::<PyString>()?.to_cow()?.as_ref() {
                "name" => 0,
                "gpu_metrics" => 1,
                other => {
                    return Err(PyTypeError::new_err(format!(
                        "region() got an unexpected keyword argument '{other}'"
                    )))
                }
            };
            if slots[index].is_some() {
                return Err(PyTypeError::new_err(format!(
                    "region() got multiple values for argument '{key}'"
                )));
            }
            slots[index] = Some(arg(p));
        }
    }
    let [name, gpu_metrics] = slots;
    let name = name.ok_or_else(|| {
        PyTypeError::new_err("region() missing 1 required positional argument: 'name'")
    })?;
    if let Some(wanted) = gpu_metrics.filter(|g| !g.is_none()) {
        let check = GPU_METRICS_CHECK.get(py).ok_or_else(|| {
            PyRuntimeError::new_err("gpu_metrics needs the metron package (import metron)")
        })?;
        check.bind(py).call1((wanted,))?;
    }
    lookup(&name)
}

/// The region named `name` (one object per name, made at its first use).
pub fn lookup<'py>(name: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    let py = name.py();
    let cache = REGIONS
        .get_or_init(py, || PyDict::new(py).unbind())
        .bind(py);
    if let Some(found) = cache.get_item(name)? {
        return Ok(found);
    }
    let made = crate::new_region(name)?;
    cache.set_item(name, &made)?;
    Ok(made)
}

/// Runs `f` as PyO3's trampoline would: an error becomes the raised exception, a panic a
/// `SystemError`, and nothing unwinds into CPython.
fn guarded<'py>(
    py: Python<'py>,
    f: impl FnOnce() -> PyResult<Bound<'py, PyAny>>,
) -> *mut ffi::PyObject {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(made)) => made.into_ptr(),
        Ok(Err(why)) => {
            why.restore(py);
            std::ptr::null_mut()
        }
        Err(_) => {
            PySystemError::new_err("metron: a panic in region()").restore(py);
            std::ptr::null_mut()
        }
    }
}

/// Registers `metron._check_gpu_metrics` (called by `region` when `gpu_metrics` is given).
#[pyfunction]
#[pyo3(name = "_set_gpu_metrics_check")]
fn set_gpu_metrics_check(py: Python<'_>, check: Py<PyAny>) {
    // The package registers it once, at import; a second import reuses the first.
    let _ = GPU_METRICS_CHECK.set(py, check);
}

/// Adds `region` to the module and the raw `__enter__`/`__exit__` to `Region`.
pub fn add_to(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    REGIONS.get_or_init(py, || PyDict::new(py).unbind());
    let region_type = py.get_type::<Region>();
    for def in [&ENTER_DEF, &EXIT_DEF] {
        // SAFETY: the type is live and the definition is `'static`; the call returns a new
        // reference or NULL with an exception set.
        let descriptor = unsafe {
            Bound::from_owned_ptr_or_err(
                py,
                ffi::PyDescr_NewMethod(region_type.as_type_ptr(), def.as_ptr()),
            )?
        };
        // SAFETY: `ml_name` is a NUL-terminated `'static` string.
        let name = unsafe { CStr::from_ptr(def.0.ml_name) };
        region_type.setattr(name.to_str().expect("an ASCII name"), descriptor)?;
    }
    let module_name = PyString::new(py, "metron");
    // SAFETY: the definition is `'static`; `m` becomes the function's `self` and the module
    // name its `__module__` (both referenced, not stolen); a new reference or NULL comes back.
    let function = unsafe {
        Bound::from_owned_ptr_or_err(
            py,
            ffi::PyCFunction_NewEx(REGION_DEF.as_ptr(), m.as_ptr(), module_name.as_ptr()),
        )?
    };
    m.add("region", function)?;
    m.add_function(wrap_pyfunction!(set_gpu_metrics_check, m)?)?;
    Ok(())
}
