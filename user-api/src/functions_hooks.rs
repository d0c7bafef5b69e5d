//! `__cyg_profile_func_enter` and `__cyg_profile_func_exit`: the hooks a compiler calls at
//! every function's entry and exit in code built with `-finstrument-functions`. libmetron
//! defines them, so a program linked with Metron, or run under `metron run` (the preloaded
//! library comes before glibc's empty hooks), has each call of a function selected by
//! `METRON_FUNCTIONS` recorded as a region named by its demangled symbol.
//!
//! Per call: one relaxed load (the engine off), one probe of the decision table (each
//! function is decided once, `metron_functions::engine::instrument_functions`), and for a
//! selected function only, the thread-local shadow stack and a region begin by id
//! (`metron::by_id`, straight into the thread's buffer); the exit mirrors it. Nothing here
//! allocates, locks or formats once a function is decided.
//!
//! Nothing unwinds into the compiled program: the work of both hooks runs under
//! `catch_unwind` (free unless something panics). A panic skips the function on its first
//! call, and otherwise leaves the thread's hooks busy, so that thread records no more
//! function regions.
//!
//! A hook that runs inside another (the cold path calls `malloc`, which may be instrumented
//! too) returns at once: the thread's `busy` flag.

use crate::functions_thread::{arm_exit_guard, begin, deciding, end, with_thread};
use metron_functions::decisions::SKIP;
use metron_functions::engine::instrument_functions as engine;
use std::ffi::c_void;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// Interns a selected function's name as a region (cold: once per function).
fn intern(name: &str) -> u32 {
    register_report();
    crate::functions_unwind::prepare(__cyg_profile_func_enter);
    metron::intern(name, metron::CallsiteKind::Region)
}

/// Adds the `functions` section to `metadata.json`, and with it the line on stderr.
fn register_report() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| metron::add_metadata_section("functions", functions_section));
}

fn functions_section() -> serde_json::Value {
    // The section is built once, when the run's outputs are written: the moment to say on
    // stderr what the engine did.
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| eprintln!("{}", engine::report().stderr_line()));
    engine::metadata()
}

/// The hook at a function's entry.
///
/// # Safety
/// Called by compiler-generated code with the function's address; never dereferenced.
#[no_mangle]
pub unsafe extern "C" fn __cyg_profile_func_enter(function: *mut c_void, _call_site: *mut c_void) {
    let stack_pointer = metron_functions::stack_pointer();
    if function.is_null() {
        // Measuring mode (`functions_unwind`): where this hook reads the stack pointer.
        crate::functions_unwind::measured(stack_pointer);
        return;
    }
    if engine::off() {
        return;
    }
    let id = decided(function as usize);
    if id == SKIP {
        return;
    }
    let _ = catch_unwind(AssertUnwindSafe(|| {
        with_thread(true, |thread| {
            thread
                .stack
                .enter(function as usize, stack_pointer, id, begin, end);
            if !thread.guarded {
                arm_exit_guard(thread);
            }
        })
    }));
}

/// The hook at a function's exit.
///
/// # Safety
/// Called by compiler-generated code with the function's address; never dereferenced.
#[no_mangle]
pub unsafe extern "C" fn __cyg_profile_func_exit(function: *mut c_void, _call_site: *mut c_void) {
    if engine::off() {
        return;
    }
    if decided(function as usize) == SKIP {
        return;
    }
    let _ = catch_unwind(AssertUnwindSafe(|| {
        with_thread(false, |thread| thread.stack.exit(function as usize, end))
    }));
}

/// The verdict for `function`: its region id or `SKIP`. Hot path once decided: one probe of
/// the table, no thread-local access.
#[inline(always)]
fn decided(function: usize) -> u32 {
    match engine::cached(function) {
        Some(id) => id,
        None => decide(function),
    }
}

/// The first call of `function`: decided with the thread marked as deciding (the work calls
/// `malloc`, which may be instrumented too) and its panics caught (the function is then
/// skipped). A hook nested in this work, or on a thread that is ending, skips its function
/// this once.
#[cold]
#[inline(never)]
fn decide(function: usize) -> u32 {
    let mut verdict = SKIP;
    deciding(|| {
        verdict =
            catch_unwind(AssertUnwindSafe(|| engine::decide(function, intern))).unwrap_or(SKIP);
    });
    verdict
}
