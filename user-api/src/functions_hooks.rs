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

use metron_functions::decisions::SKIP;
use metron_functions::engine::instrument_functions as engine;
use metron_functions::shadow_stack::ShadowStack;
use std::cell::UnsafeCell;
use std::ffi::c_void;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// A thread's function regions: its shadow stack. No destructor of its own, so it outlives
/// every destructor of the thread (see [`ExitGuard`]).
struct ThreadFunctions {
    stack: ShadowStack,
    busy: bool,
    guarded: bool,
}

thread_local! {
    static THREAD: UnsafeCell<ThreadFunctions> = const {
        UnsafeCell::new(ThreadFunctions { stack: ShadowStack::new(), busy: false, guarded: false })
    };
    static GUARD: ExitGuard = const { ExitGuard };
}

/// Ends the thread's open function regions when the thread ends (or the process calls
/// `exit()` with functions still on the stack), innermost first, so per thread ends equal
/// begins. Armed after the thread's first function region began: thread-local destructors run
/// in reverse order of arming, so this one runs before the thread buffer's hand-over, which
/// the first begin armed.
struct ExitGuard;

impl Drop for ExitGuard {
    fn drop(&mut self) {
        let _ = THREAD.try_with(|cell| {
            // SAFETY: the cell is this thread's, and no hook of this thread runs during its
            // destructors while `busy` is set below.
            let thread = unsafe { &mut *cell.get() };
            thread.busy = true;
            let open = thread.stack.depth() as u64;
            thread.stack.end_all(end);
            let mut repairs = thread.stack.repairs;
            repairs.ended_without_exit -= open;
            engine::report().repaired(repairs, open);
        });
    }
}

/// Arms [`ExitGuard`] once the thread's first function region began (cold: once per thread).
#[cold]
#[inline(never)]
fn arm_exit_guard(thread: &mut ThreadFunctions) {
    thread.guarded = true;
    let _ = GUARD.try_with(|_| ());
}

/// Region begin by id, straight into the thread's buffer (the C API's checks of its own
/// open-region stack are not needed: the shadow stack keeps these balanced); whether it was
/// recorded, so that its end is asked for only then.
#[inline(always)]
fn begin(id: u32) -> bool {
    metron::by_id::begin(id)
}

#[inline(always)]
fn end(id: u32) {
    let _ = metron::by_id::end(id);
}

/// Interns a selected function's name as a region (cold: once per function).
fn intern(name: &str) -> u32 {
    register_report();
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

/// Runs `f` with the thread's state, unless another hook of this thread is running or the
/// thread is ending.
#[inline(always)]
fn with_thread(f: impl FnOnce(&mut ThreadFunctions)) {
    let _ = THREAD.try_with(|cell| {
        // SAFETY: the cell is this thread's; `busy` keeps a nested hook (reached through the
        // cold path's calls) from taking a second reference while the first is live.
        let thread = unsafe { &mut *cell.get() };
        if thread.busy {
            return;
        }
        thread.busy = true;
        f(thread);
        // SAFETY: as above; `f`'s reference has ended.
        unsafe { (*cell.get()).busy = false };
    });
}

/// The hook at a function's entry.
///
/// # Safety
/// Called by compiler-generated code with the function's address; never dereferenced.
#[no_mangle]
pub unsafe extern "C" fn __cyg_profile_func_enter(function: *mut c_void, _call_site: *mut c_void) {
    if engine::off() {
        return;
    }
    let stack_pointer = metron_functions::stack_pointer();
    let id = decided(function as usize);
    if id == SKIP {
        return;
    }
    let _ = catch_unwind(AssertUnwindSafe(|| {
        with_thread(|thread| {
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
        with_thread(|thread| thread.stack.exit(function as usize, end))
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

/// The first call of `function`: decided with the thread's hooks marked busy (the work calls
/// `malloc`, which may be instrumented too) and its panics caught (the function is then
/// skipped). A hook nested in this work, or on a thread that is ending, skips its function
/// this once.
#[cold]
#[inline(never)]
fn decide(function: usize) -> u32 {
    let mut verdict = SKIP;
    with_thread(|_| {
        verdict =
            catch_unwind(AssertUnwindSafe(|| engine::decide(function, intern))).unwrap_or(SKIP);
    });
    verdict
}
