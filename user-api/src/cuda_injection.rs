//! CUDA injection: `metron run` sets `CUDA_INJECTION64_PATH` to this library, and the CUDA
//! driver calls [`InitializeInjection`] from `cuInit` — so CUPTI starts only in processes that
//! use CUDA, before their first kernel. It starts Metron's GPU backend (`metron-gpu-nvidia`): CUPTI
//! activity tracing, the launch callbacks, and delivery to Metron's sinks. When the backend
//! cannot start, the reason goes to stderr and `metadata.json` (`gpu.reason`) and CUDA carries
//! on untouched.

use std::ffi::c_int;

/// Under `metron run`: `metadata.json` gets the `gpu` section even when the driver never
/// called [`InitializeInjection`] (no driver, or a process that does not use CUDA), saying why.
pub(crate) fn report_in_metadata() {
    metron::add_metadata_section("gpu", metron_gpu_nvidia::metadata);
}

/// Called by the CUDA driver during `cuInit` when `CUDA_INJECTION64_PATH` names this library.
/// Returns 1 (success) in every case: a failure to trace must never fail the application.
#[no_mangle]
pub extern "C" fn InitializeInjection() -> c_int {
    let started = std::panic::catch_unwind(metron_gpu_nvidia::start);
    match started {
        Ok(Ok(())) => {}
        Ok(Err(why)) => eprintln!("metron: GPU tracing is off: {why}"),
        Err(_) => eprintln!("metron: GPU tracing is off: the backend panicked at start"),
    }
    1
}
