//! AMD tool entry points: the HSA runtime loads this library as a tool (`HSA_TOOLS_LIB`, set
//! by `metron run`) and calls [`OnLoad`] with its API table during `hsa_init`; ROCprofiler-SDK,
//! where installed, finds [`rocprofiler_configure`] instead. Both start Metron's AMD backend
//! (`metron-gpu-amd`); at most one of them traces a process. A failure to trace never fails the
//! application: the reason goes to stderr and `metadata.json`, and the runtime carries on.

use std::ffi::{c_char, c_void};

/// Under `metron run`: `metadata.json` gets the section `gpu_amd` (what the AMD backend found
/// or why it is off) even when no HSA runtime ever loaded Metron.
pub(crate) fn report_in_metadata() {
    metron::add_metadata_section("gpu_amd", metron_gpu_amd::metadata);
}

/// Called by the HSA runtime (`HSA_TOOLS_LIB`) with its API table. Returns true (loaded) in
/// every case: the runtime would otherwise report the tool as failed, and tracing being off
/// is already said.
///
/// # Safety
/// Called by the HSA runtime with its live `HsaApiTable` and `failed_tool_count` names.
#[no_mangle]
pub unsafe extern "C" fn OnLoad(
    table: *mut c_void,
    runtime_version: u64,
    failed_tool_count: u64,
    failed_tool_names: *const *const c_char,
) -> bool {
    let started = std::panic::catch_unwind(|| {
        // SAFETY: the runtime's contract, passed on.
        unsafe {
            metron_gpu_amd::on_load(table, runtime_version, failed_tool_count, failed_tool_names)
        }
    });
    match started {
        Ok(Ok(())) => {}
        Ok(Err(why)) => eprintln!("metron: AMD GPU tracing is off: {why}"),
        Err(_) => eprintln!("metron: AMD GPU tracing is off: the backend panicked at start"),
    }
    true
}

/// Called by the HSA runtime when it shuts down.
#[no_mangle]
pub extern "C" fn OnUnload() {
    let _ = std::panic::catch_unwind(metron_gpu_amd::on_unload);
}

/// Called by ROCprofiler-SDK for every loaded library that defines it. Returns the tool's
/// configuration, or null to decline (then the HSA path may trace).
///
/// # Safety
/// Called by ROCprofiler-SDK with `rocprofiler_configure`'s contract.
#[no_mangle]
pub unsafe extern "C" fn rocprofiler_configure(
    version: u32,
    runtime_version: *const c_char,
    priority: u32,
    client_id: *mut c_void,
) -> *mut c_void {
    std::panic::catch_unwind(|| {
        metron_gpu_amd::rocprofiler_configure(version, runtime_version, priority, client_id)
    })
    .unwrap_or(std::ptr::null_mut())
}
