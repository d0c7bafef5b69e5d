//! The calling thread's function regions for the `-finstrument-functions` hooks
//! (`functions_hooks`) and the `longjmp` and catch wrappers (`functions_unwind`): its shadow
//! stack, a flag that keeps a hook from running inside another on the same thread, and the
//! guard that ends what is still open when the thread ends.

use crate::thread_block::{Block, Held, Pool};
use metron_functions::engine::instrument_functions as engine;
use metron_functions::shadow_stack::ShadowStack;
use std::cell::UnsafeCell;

/// A thread's function regions: its shadow stack.
pub(crate) struct ThreadFunctions {
    pub(crate) stack: ShadowStack,
    busy: bool,
    pub(crate) guarded: bool,
}

/// A thread's [`ThreadFunctions`] on the heap: the shadow stack (about 6 KB) would not fit the
/// spare static TLS that keeps the library's fast paths cheap when it is `dlopen`ed
/// ([`crate::thread_block`]). The block outlives its holder until the thread is gone, so
/// [`ExitGuard`] finds it whatever the order of the thread's destructors.
pub(crate) struct FunctionsCell(UnsafeCell<ThreadFunctions>);

static POOL: Pool<FunctionsCell> = Pool::new();

impl Block for FunctionsCell {
    fn pool() -> &'static Pool<FunctionsCell> {
        &POOL
    }

    fn fresh() -> Box<FunctionsCell> {
        Box::new(FunctionsCell(UnsafeCell::new(ThreadFunctions {
            stack: ShadowStack::new(),
            busy: false,
            guarded: false,
        })))
    }
}

thread_local! {
    static THREAD: Held<FunctionsCell> = const { Held::new() };
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
        let _ = THREAD.try_with(|held| {
            let cell = &held.get().0;
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
pub(crate) fn arm_exit_guard(thread: &mut ThreadFunctions) {
    thread.guarded = true;
    let _ = GUARD.try_with(|_| ());
}

/// Region begin by id, straight into the thread's buffer (the C API's checks of its own
/// open-region stack are not needed: the shadow stack keeps these balanced); whether it was
/// recorded, so that its end is asked for only then.
#[inline(always)]
pub(crate) fn begin(id: u32) -> bool {
    metron::by_id::begin(id)
}

#[inline(always)]
pub(crate) fn end(id: u32) {
    let _ = metron::by_id::end(id);
}

/// Ends the calling thread's function regions whose entries are below `stack_pointer` (as
/// the entry hook reads it): the frames a `longjmp` or a catch threw away.
pub(crate) fn end_frames_below(stack_pointer: usize) {
    with_thread(|thread| thread.stack.end_deeper_than(stack_pointer, end));
}

/// Runs `f` with the thread's state, unless another hook of this thread is running or the
/// thread is ending.
#[inline(always)]
pub(crate) fn with_thread(f: impl FnOnce(&mut ThreadFunctions)) {
    let _ = THREAD.try_with(|held| {
        let cell = &held.get().0;
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
