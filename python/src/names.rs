//! Names handed to C without allocating: a stack copy with its NUL.

use pyo3::exceptions::PyValueError;
use pyo3::PyResult;
use std::ffi::{c_char, CString};

/// Names up to this many bytes are copied on the stack; longer ones (rare) allocate.
const STACK_NAME_BYTES: usize = 255;

/// Calls `f` with `name` as a NUL-terminated C string.
#[inline]
pub fn with_c_name<R>(name: &str, f: impl FnOnce(*const c_char) -> R) -> PyResult<R> {
    let bytes = name.as_bytes();
    if bytes.contains(&0) {
        return Err(PyValueError::new_err(format!(
            "a name may not contain a NUL character: {name:?}"
        )));
    }
    if bytes.len() <= STACK_NAME_BYTES {
        let mut buf = [0u8; STACK_NAME_BYTES + 1];
        buf[..bytes.len()].copy_from_slice(bytes);
        return Ok(f(buf.as_ptr().cast()));
    }
    let owned = CString::new(bytes).expect("checked for NUL above");
    Ok(f(owned.as_ptr()))
}
