//! ROCprofiler-SDK tool (placeholder until written).

use std::ffi::{c_char, c_void};

/// `rocprofiler_configure` (placeholder: declines, so the HSA path is used).
pub fn configure(
    _version: u32,
    _runtime_version: *const c_char,
    _priority: u32,
    _client_id: *mut c_void,
) -> *mut c_void {
    std::ptr::null_mut()
}
