//! Every foreign symbol the package uses: the C API of the process's libmetron (its own,
//! linked in, or one loaded before it and found with `dlsym`) and the CPython calls outside
//! the limited API that the function tracer needs, found at run time so that one abi3 build
//! loads on every interpreter and says clearly what an interpreter lacks.

use std::ffi::{c_char, c_int, c_void, CStr};

/// `metron_id`.
pub type Id = u32;
/// `metron_status`.
pub type Status = i32;
/// `METRON_OK`.
pub const OK: Status = 0;
/// `METRON_ERROR_DISABLED`: recording is off (stopped, or a child after `fork`).
pub const ERROR_DISABLED: Status = 5;

// The C API this package links in (crate `metron-user`, linked whole into the extension).
extern "C" {
    fn metron_abi_version() -> u32;
    fn metron_region_id(name: *const c_char) -> Id;
    fn metron_region_begin_id(id: Id) -> Status;
    fn metron_region_end_id(id: Id) -> Status;
    fn metron_mark(name: *const c_char) -> Status;
    fn metron_counter(name: *const c_char, value: f64) -> Status;
    fn metron_annotate_string(key: *const c_char, value: *const c_char) -> Status;
    fn metron_annotate_int64(key: *const c_char, value: i64) -> Status;
    fn metron_annotate_double(key: *const c_char, value: f64) -> Status;
    fn metron_flush() -> Status;
    fn metron_last_error() -> *const c_char;
}

/// The C functions the package calls, all from one libmetron.
#[derive(Clone, Copy)]
pub struct CApi {
    pub region_id: unsafe extern "C" fn(*const c_char) -> Id,
    pub begin_id: unsafe extern "C" fn(Id) -> Status,
    pub end_id: unsafe extern "C" fn(Id) -> Status,
    pub mark: unsafe extern "C" fn(*const c_char) -> Status,
    pub counter: unsafe extern "C" fn(*const c_char, f64) -> Status,
    pub annotate_string: unsafe extern "C" fn(*const c_char, *const c_char) -> Status,
    pub annotate_int64: unsafe extern "C" fn(*const c_char, i64) -> Status,
    pub annotate_double: unsafe extern "C" fn(*const c_char, f64) -> Status,
    pub flush: unsafe extern "C" fn() -> Status,
    pub last_error: unsafe extern "C" fn() -> *const c_char,
}

/// The copy linked into this extension.
pub fn own_c_api() -> CApi {
    CApi {
        region_id: metron_region_id,
        begin_id: metron_region_begin_id,
        end_id: metron_region_end_id,
        mark: metron_mark,
        counter: metron_counter,
        annotate_string: metron_annotate_string,
        annotate_int64: metron_annotate_int64,
        annotate_double: metron_annotate_double,
        flush: metron_flush,
        last_error: metron_last_error,
    }
}

/// The ABI version of the copy linked in.
pub fn own_abi_version() -> u32 {
    // SAFETY: no arguments, no preconditions.
    unsafe { metron_abi_version() }
}

/// A symbol as this extension's code would bind it: the process's global scope first (the
/// executable, `LD_PRELOAD`, their dependencies, libraries loaded `RTLD_GLOBAL`), then this
/// extension's own local scope.
pub fn global_symbol(name: &CStr) -> *mut c_void {
    // SAFETY: `name` is NUL-terminated; RTLD_DEFAULT is a valid pseudo-handle.
    unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) }
}

/// The file a loaded symbol comes from.
pub fn file_of(symbol: *const c_void) -> Option<String> {
    // SAFETY: Dl_info is plain data; dladdr fills it and returns 0 on failure.
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: `info` is a valid out-pointer; `symbol` is only compared with mapped ranges.
    let found = unsafe { libc::dladdr(symbol, &mut info) } != 0;
    if !found || info.dli_fname.is_null() {
        return None;
    }
    // SAFETY: dladdr set dli_fname to a NUL-terminated path owned by the loader.
    Some(
        unsafe { CStr::from_ptr(info.dli_fname) }
            .to_string_lossy()
            .into_owned(),
    )
}

/// A function pointer of type `T` from a symbol's address.
///
/// # Safety
/// `T` is an `extern "C"` function pointer type with the symbol's real signature.
unsafe fn fn_from<T: Copy>(f: *mut c_void) -> T {
    assert_eq!(std::mem::size_of::<T>(), std::mem::size_of::<*mut c_void>());
    // SAFETY: same size (checked); the caller guarantees the signature.
    unsafe { std::mem::transmute_copy::<*mut c_void, T>(&f) }
}

/// The C API of a libmetron in the global scope, when one is loaded there with this ABI.
pub fn global_c_api() -> Result<Option<(CApi, String)>, String> {
    let version = global_symbol(c"metron_abi_version");
    if version.is_null() {
        return Ok(None);
    }
    let library = file_of(version).unwrap_or_else(|| "libmetron".to_string());
    if Some(&library) == own_file().as_ref() {
        // Only this extension's own copy: no other libmetron is in the global scope.
        return Ok(None);
    }
    // SAFETY: `metron_abi_version` has this signature in every ABI version.
    let abi = unsafe { std::mem::transmute::<*mut c_void, extern "C" fn() -> u32>(version)() };
    if abi != own_abi_version() {
        return Err(format!(
            "{library} has C ABI version {abi}; this package speaks version {}",
            own_abi_version()
        ));
    }
    macro_rules! resolve {
        ($name:literal) => {{
            let f = global_symbol($name);
            if f.is_null() {
                return Err(format!("{library} lacks {}", $name.to_string_lossy()));
            }
            // SAFETY: the symbol is the C API function of that name, whose signature the
            // ABI version (checked above) fixes; the field's type is that signature.
            unsafe { fn_from(f) }
        }};
    }
    let api = CApi {
        region_id: resolve!(c"metron_region_id"),
        begin_id: resolve!(c"metron_region_begin_id"),
        end_id: resolve!(c"metron_region_end_id"),
        mark: resolve!(c"metron_mark"),
        counter: resolve!(c"metron_counter"),
        annotate_string: resolve!(c"metron_annotate_string"),
        annotate_int64: resolve!(c"metron_annotate_int64"),
        annotate_double: resolve!(c"metron_annotate_double"),
        flush: resolve!(c"metron_flush"),
        last_error: resolve!(c"metron_last_error"),
    };
    Ok(Some((api, library)))
}

/// The file of this extension (found from a function of this crate, which no other object
/// can interpose).
pub fn own_file() -> Option<String> {
    file_of(own_file as *const c_void)
}

/// CPython's opaque objects, as pointers only.
pub type PyObject = pyo3::ffi::PyObject;
/// `PyFrameObject` (opaque here).
pub type PyFrameObject = c_void;
/// `Py_tracefunc`.
pub type TraceFunc =
    extern "C" fn(*mut PyObject, *mut PyFrameObject, c_int, *mut PyObject) -> c_int;
/// `freefunc` of a code object's extra slot.
pub type FreeFunc = extern "C" fn(*mut c_void);

/// The CPython calls outside the limited API that the function tracer needs.
#[derive(Clone, Copy)]
pub struct PythonPrivate {
    /// `PyEval_SetProfile` (every version; on 3.12 and later the tracer uses sys.monitoring).
    pub set_profile: unsafe extern "C" fn(Option<TraceFunc>, *mut PyObject),
    /// `PyFrame_GetCode` (new reference).
    pub frame_code: unsafe extern "C" fn(*mut PyFrameObject) -> *mut PyObject,
    /// `PyFrame_GetLasti` (3.11 and later): where a generator's frame resumes.
    pub frame_lasti: Option<unsafe extern "C" fn(*mut PyFrameObject) -> c_int>,
    /// `PyUnstable_Eval_RequestCodeExtraIndex` / `_PyEval_RequestCodeExtraIndex`.
    pub request_extra_index: unsafe extern "C" fn(Option<FreeFunc>) -> isize,
    /// `PyUnstable_Code_GetExtra` / `_PyCode_GetExtra`.
    pub code_get_extra: unsafe extern "C" fn(*mut PyObject, isize, *mut *mut c_void) -> c_int,
    /// `PyUnstable_Code_SetExtra` / `_PyCode_SetExtra`.
    pub code_set_extra: unsafe extern "C" fn(*mut PyObject, isize, *mut c_void) -> c_int,
}

fn first_global(names: &[&CStr]) -> *mut c_void {
    names
        .iter()
        .map(|n| global_symbol(n))
        .find(|p| !p.is_null())
        .unwrap_or(std::ptr::null_mut())
}

/// Finds the calls in the interpreter, or says which one it lacks.
pub fn python_private() -> Result<PythonPrivate, String> {
    macro_rules! find {
        ($($name:literal),+) => {{
            let f = first_global(&[$($name),+]);
            if f.is_null() {
                return Err(format!(
                    "this Python interpreter does not export {} (needed by the function tracer)",
                    [$($name.to_string_lossy()),+].join(" or ")
                ));
            }
            // SAFETY: the symbol is the CPython function of that name, whose signature has
            // not changed since it appeared; the field's type is that signature.
            unsafe { fn_from(f) }
        }};
    }
    let lasti = global_symbol(c"PyFrame_GetLasti");
    Ok(PythonPrivate {
        set_profile: find!(c"PyEval_SetProfile"),
        frame_code: find!(c"PyFrame_GetCode"),
        frame_lasti: (!lasti.is_null()).then(|| {
            // SAFETY: `int PyFrame_GetLasti(PyFrameObject*)` since 3.11.
            unsafe { fn_from(lasti) }
        }),
        request_extra_index: find!(
            c"PyUnstable_Eval_RequestCodeExtraIndex",
            c"_PyEval_RequestCodeExtraIndex"
        ),
        code_get_extra: find!(c"PyUnstable_Code_GetExtra", c"_PyCode_GetExtra"),
        code_set_extra: find!(c"PyUnstable_Code_SetExtra", c"_PyCode_SetExtra"),
    })
}
