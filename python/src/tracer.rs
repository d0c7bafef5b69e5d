//! Every selected Python function a region (`metron run --functions REGEX [--exclude REGEX]`).
//!
//! Two engines feed one recorder: [`crate::tracer_profile`] (a C-level `PyEval_SetProfile`
//! function, Python before 3.12) and [`crate::tracer_monitoring`] (`sys.monitoring`, PEP 669,
//! 3.12 and later). Both ask [`decide`] about a code object at its first event, once: the
//! answer (its region ids, or "not selected") is kept in the code object's extra slot and freed
//! with it, so the filters' regular expressions never run per call and memory grows with the
//! program's code, not with its calls.
//!
//! A call is one region named `module.qualname`. A generator or coroutine is one region per
//! call too: its first running stretch is the call (`module.qualname`), each later stretch
//! (after a `yield` or `await`) is a region `module.qualname (resumed)`, so counts are calls
//! and time is time while running. An exception leaving a frame ends its region as a return
//! does. Each thread keeps a fixed stack of the regions it opened (a frame or code key and an
//! id): an exit that does not match the top (a frame that began before tracing did) is ignored,
//! and a call deeper than the stack, or one the C API refuses (more than 256 regions open on a
//! thread), is counted and said at exit, never lost silently.

use crate::binding::c_api;
use crate::sys::{self, PyObject, PythonPrivate, OK};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use regex::Regex;
use std::cell::UnsafeCell;
use std::ffi::c_void;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

/// What the tracer knows of a code object.
pub struct CodeInfo {
    /// The region of a call (0: not selected).
    pub call_id: u32,
    /// The region of a generator's or coroutine's later stretches (0 for plain functions).
    pub resumed_id: u32,
    /// Byte offset of the first `RESUME` of a generator or coroutine (-1 otherwise): a
    /// profile `call` event there is the call, anywhere else a resumption.
    pub first_resume: i32,
}

/// The answer for every code object that is not selected (never freed).
static NOT_SELECTED: CodeInfo = CodeInfo {
    call_id: 0,
    resumed_id: 0,
    first_resume: -1,
};

/// The filters, the interpreter's calls and the code objects' extra slot, set at start.
pub struct Tracer {
    include: Regex,
    exclude: Option<Regex>,
    pub python: PythonPrivate,
    extra_index: isize,
    /// `dis.opmap["RESUME"]` of the running interpreter (0 where it has none).
    resume_opcode: u8,
}

static TRACER: OnceLock<Tracer> = OnceLock::new();

/// The tracer, once started.
#[inline(always)]
pub fn tracer() -> Option<&'static Tracer> {
    TRACER.get()
}

static SELECTED: AtomicU64 = AtomicU64::new(0);
static SKIPPED: AtomicU64 = AtomicU64::new(0);
static REFUSED: AtomicU64 = AtomicU64::new(0);
static TOO_DEEP: AtomicU64 = AtomicU64::new(0);

extern "C" fn free_info(info: *mut c_void) {
    if !info.is_null() && !std::ptr::eq(info.cast_const().cast(), &NOT_SELECTED) {
        // SAFETY: every other pointer in the slot came from Box::into_raw in `decide`, and the
        // interpreter calls this once, when the code object dies.
        drop(unsafe { Box::from_raw(info.cast::<CodeInfo>()) });
    }
}

const CO_GENERATOR: u32 = 0x20;
const CO_COROUTINE: u32 = 0x80;
const CO_ASYNC_GENERATOR: u32 = 0x200;

impl Tracer {
    /// The decision for `code` (seen in `frame`, which may be NULL: then the current frame).
    ///
    /// # Safety
    /// The GIL is held; `code` is a live code object; `frame` is NULL or its live frame.
    #[inline(always)]
    pub unsafe fn info(&self, code: *mut PyObject, frame: *mut sys::PyFrameObject) -> &CodeInfo {
        let mut slot: *mut c_void = std::ptr::null_mut();
        // SAFETY: the caller's contract; `slot` is a valid out-pointer.
        unsafe { (self.python.code_get_extra)(code, self.extra_index, &mut slot) };
        if slot.is_null() {
            // SAFETY: the caller's contract.
            slot = unsafe { self.decide(code, frame) };
        }
        // SAFETY: the slot holds NOT_SELECTED or a live Box<CodeInfo> freed with the code.
        unsafe { &*slot.cast::<CodeInfo>() }
    }

    /// Looks at a code object once and keeps the answer in its extra slot.
    #[cold]
    #[inline(never)]
    unsafe fn decide(&self, code: *mut PyObject, frame: *mut sys::PyFrameObject) -> *mut c_void {
        // SAFETY: the caller holds the GIL.
        let py = unsafe { Python::assume_gil_acquired() };
        // SAFETY: `code` is a live object (borrowed for this call).
        let code_obj = unsafe { Bound::from_borrowed_ptr(py, code) };
        let info = self.describe(py, &code_obj, frame).unwrap_or(None);
        let slot: *mut c_void = match info {
            Some(info) => {
                SELECTED.fetch_add(1, Ordering::Relaxed);
                Box::into_raw(Box::new(info)).cast()
            }
            None => {
                SKIPPED.fetch_add(1, Ordering::Relaxed);
                std::ptr::from_ref(&NOT_SELECTED).cast_mut().cast()
            }
        };
        // SAFETY: the caller's contract; the slot index came from request_extra_index.
        if unsafe { (self.python.code_set_extra)(code, self.extra_index, slot) } != 0 {
            // The slot could not be set (out of memory): this event goes unrecorded.
            // SAFETY: the caller holds the GIL.
            unsafe { pyo3::ffi::PyErr_Clear() };
            free_info(slot);
            return std::ptr::from_ref(&NOT_SELECTED).cast_mut().cast();
        }
        slot
    }

    fn describe(
        &self,
        py: Python<'_>,
        code: &Bound<'_, PyAny>,
        frame: *mut sys::PyFrameObject,
    ) -> PyResult<Option<CodeInfo>> {
        let qualname: String = match code.getattr("co_qualname") {
            Ok(q) => q.extract()?,
            Err(_) => code.getattr("co_name")?.extract()?,
        };
        let file: String = code.getattr("co_filename")?.extract()?;
        let module = module_of(py, frame).unwrap_or_default();
        if module == "metron" || module.starts_with("metron.") {
            return Ok(None);
        }
        let name = if module.is_empty() {
            qualname
        } else {
            format!("{module}.{qualname}")
        };
        let chosen = |re: &Regex| re.is_match(&name) || re.is_match(&file);
        if !chosen(&self.include) || self.exclude.as_ref().is_some_and(chosen) {
            return Ok(None);
        }
        let flags: u32 = code.getattr("co_flags")?.extract()?;
        let suspends = flags & (CO_GENERATOR | CO_COROUTINE | CO_ASYNC_GENERATOR) != 0;
        let call_id = crate::region_id(&name)?;
        let (resumed_id, first_resume) = if suspends {
            let resumed = crate::region_id(&format!("{name} (resumed)"))?;
            (resumed, self.first_resume_offset(code)?)
        } else {
            (0, -1)
        };
        Ok(Some(CodeInfo {
            call_id,
            resumed_id,
            first_resume,
        }))
    }

    /// Byte offset of the first `RESUME` instruction (code units are two bytes).
    fn first_resume_offset(&self, code: &Bound<'_, PyAny>) -> PyResult<i32> {
        if self.resume_opcode == 0 {
            return Ok(-1);
        }
        let bytes = code.getattr("co_code")?;
        let bytes = bytes.downcast::<PyBytes>()?.as_bytes();
        Ok(bytes
            .chunks_exact(2)
            .position(|unit| unit[0] == self.resume_opcode)
            .map_or(-1, |i| (2 * i) as i32))
    }
}

/// `__name__` of the frame's globals (the current frame when `frame` is NULL).
fn module_of(py: Python<'_>, frame: *mut sys::PyFrameObject) -> Option<String> {
    let frame = if frame.is_null() {
        // SAFETY: the GIL is held; the result is borrowed (or NULL).
        unsafe { pyo3::ffi::PyEval_GetFrame() }.cast::<PyObject>()
    } else {
        frame.cast::<PyObject>()
    };
    if frame.is_null() {
        return None;
    }
    // SAFETY: `frame` is a live frame object, borrowed for this call.
    let frame = unsafe { Bound::from_borrowed_ptr(py, frame) };
    let globals = frame.getattr("f_globals").ok()?;
    let globals = globals.downcast::<PyDict>().ok()?;
    globals.get_item("__name__").ok()??.extract().ok()
}

/// A region this thread's tracer opened: the key its exit must match and the id to end.
#[derive(Clone, Copy)]
struct Open {
    key: usize,
    /// 0 when the C API refused the begin: the exit ends nothing.
    id: u32,
}

/// Regions one thread's tracer may hold open at once (the C API holds at most 256 per thread;
/// the rest are refused and counted).
const STACK_CAPACITY: usize = 512;

struct ThreadStack {
    open: [Open; STACK_CAPACITY],
    len: usize,
    /// Entries past the capacity, each counted in TOO_DEEP, popped before `open`.
    beyond: usize,
}

thread_local! {
    static STACK: UnsafeCell<ThreadStack> = const {
        UnsafeCell::new(ThreadStack { open: [Open { key: 0, id: 0 }; STACK_CAPACITY], len: 0, beyond: 0 })
    };
}

/// Opens region `id` for the frame or code `key` on this thread.
#[inline(always)]
pub fn enter(key: usize, id: u32) {
    STACK.with(|s| {
        // SAFETY: only this thread touches its stack, and never re-entrantly (the GIL is held
        // and nothing here runs Python code).
        let s = unsafe { &mut *s.get() };
        if s.len == STACK_CAPACITY {
            s.beyond += 1;
            TOO_DEEP.fetch_add(1, Ordering::Relaxed);
            return;
        }
        // SAFETY: `id` came from region_id of the same C API.
        let begun = unsafe { (c_api().begin_id)(id) } == OK;
        if !begun {
            REFUSED.fetch_add(1, Ordering::Relaxed);
        }
        s.open[s.len] = Open {
            key,
            id: if begun { id } else { 0 },
        };
        s.len += 1;
    });
}

/// Closes the region this thread opened for `key`, if it is the innermost.
#[inline(always)]
pub fn exit(key: usize) {
    STACK.with(|s| {
        // SAFETY: as in `enter`.
        let s = unsafe { &mut *s.get() };
        if s.beyond > 0 {
            s.beyond -= 1;
            return;
        }
        if s.len == 0 || s.open[s.len - 1].key != key {
            return;
        }
        s.len -= 1;
        let id = s.open[s.len].id;
        if id != 0 {
            // SAFETY: `id` came from region_id of the same C API.
            unsafe { (c_api().end_id)(id) };
        }
    });
}

/// Ends every region this thread's tracer holds open (at exit: their time ends there).
fn close_thread() {
    STACK.with(|s| {
        // SAFETY: as in `enter`.
        let s = unsafe { &mut *s.get() };
        s.beyond = 0;
        while s.len > 0 {
            s.len -= 1;
            let id = s.open[s.len].id;
            if id != 0 {
                // SAFETY: `id` came from region_id of the same C API.
                unsafe { (c_api().end_id)(id) };
            }
        }
    });
}

/// Makes the tracer (filters compiled once); the engine is switched on by the caller.
#[pyfunction]
#[pyo3(name = "_tracer_init")]
fn init(include: &str, exclude: Option<&str>, resume_opcode: u8) -> PyResult<()> {
    let bad = |what: &str, e: regex::Error| {
        PyValueError::new_err(format!(
            "{what} is not a regular expression (Rust regex syntax, unanchored: ^name$ for one \
             function; matched against module.qualname and the file name): {e}"
        ))
    };
    let include = Regex::new(include).map_err(|e| bad("METRON_FUNCTIONS", e))?;
    let exclude = exclude
        .filter(|e| !e.is_empty())
        .map(Regex::new)
        .transpose()
        .map_err(|e| bad("METRON_FUNCTIONS_EXCLUDE", e))?;
    let python = sys::python_private().map_err(PyValueError::new_err)?;
    if TRACER.get().is_some() {
        return Err(PyValueError::new_err(
            "function tracing was already set up in this process (its filters stay)",
        ));
    }
    // SAFETY: the GIL is held; `free_info` frees what `decide` stores.
    let extra_index = unsafe { (python.request_extra_index)(Some(free_info)) };
    if extra_index < 0 {
        return Err(PyValueError::new_err(
            "the interpreter has no free code-object extra slot for the tracer",
        ));
    }
    let _ = TRACER.set(Tracer {
        include,
        exclude,
        python,
        extra_index,
        resume_opcode,
    });
    Ok(())
}

/// Ends the regions this thread's tracer holds open.
#[pyfunction]
#[pyo3(name = "_tracer_close_thread")]
fn close_thread_py() {
    close_thread();
}

/// The tracer's counts: code objects selected and skipped, calls the C API refused, calls
/// deeper than a thread's stack.
#[pyfunction]
#[pyo3(name = "_tracer_stats")]
fn stats() -> (u64, u64, u64, u64) {
    (
        SELECTED.load(Ordering::Relaxed),
        SKIPPED.load(Ordering::Relaxed),
        REFUSED.load(Ordering::Relaxed),
        TOO_DEEP.load(Ordering::Relaxed),
    )
}

pub fn add_to(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(init, m)?)?;
    m.add_function(wrap_pyfunction!(close_thread_py, m)?)?;
    m.add_function(wrap_pyfunction!(stats, m)?)?;
    crate::tracer_profile::add_to(m)?;
    crate::tracer_monitoring::add_to(m)?;
    Ok(())
}
