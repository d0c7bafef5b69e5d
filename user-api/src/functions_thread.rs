//! The calling thread's function regions for the `-finstrument-functions` hooks
//! (`functions_hooks`) and the `longjmp` and catch wrappers (`functions_unwind`): its shadow
//! stack, a flag that keeps a hook from running inside another on the same thread, and the
//! guard that ends what is still open when the thread ends.

use crate::thread_block::{Block, Pool};
use metron_functions::engine::instrument_functions as engine;
use metron_functions::shadow_stack::ShadowStack;
use std::cell::{Cell, UnsafeCell};
use std::ptr::NonNull;

/// A thread's function regions: its shadow stack.
pub(crate) struct ThreadFunctions {
    pub(crate) stack: ShadowStack,
    busy: bool,
    pub(crate) guarded: bool,
}

/// A thread's [`ThreadFunctions`] on the heap: the shadow stack (about 6 KB) would not fit the
/// spare static TLS that keeps the library's fast paths cheap when it is `dlopen`ed
/// ([`crate::thread_block`]). The thread-local holds only its address (no destructor of its
/// own); [`ExitGuard`] gives the block back, and it stays valid until the thread is gone.
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
    static THREAD: Cell<Option<NonNull<FunctionsCell>>> = const { Cell::new(None) };
    static GUARD: ExitGuard = const { ExitGuard };
    /// A function's first call is being decided on this thread (see [`deciding`]).
    static DECIDING: Cell<bool> = const { Cell::new(false) };
}

/// Runs `f` (deciding a function) unless this thread is already deciding one: the decision
/// calls `malloc`, which may be instrumented too, and a hook nested in it skips its function
/// this once. A flag of its own, so that a thread whose functions are all skipped takes no
/// state.
pub(crate) fn deciding(f: impl FnOnce()) {
    let _ = DECIDING.try_with(|busy| {
        if busy.replace(true) {
            return;
        }
        f();
        busy.set(false);
    });
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
            let Some(block) = held.get() else { return };
            // SAFETY: the block is this thread's (taken by `with_thread` on this thread) and
            // valid until the thread is gone; no hook of this thread runs during its
            // destructors while `busy` is set below.
            let thread = unsafe { &mut *block.as_ref().0.get() };
            thread.busy = true;
            let open = thread.stack.depth() as u64;
            thread.stack.end_all(end);
            let mut repairs = thread.stack.repairs;
            repairs.ended_without_exit -= open;
            engine::report().repaired(repairs, open);
            POOL.give_back(metron_tid(), block);
        });
    }
}

/// The calling thread's kernel tid, for the pool.
fn metron_tid() -> u32 {
    crate::sys::gettid()
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
    with_thread(false, |thread| {
        thread.stack.end_deeper_than(stack_pointer, end)
    });
}

/// Runs `f` with the thread's state, unless another hook of this thread is running or the
/// thread is ending. Only a function's entry (`enter`) gives a thread its state: an exit or an
/// unwound frame on a thread without one has nothing open to end.
#[inline(always)]
pub(crate) fn with_thread(enter: bool, f: impl FnOnce(&mut ThreadFunctions)) {
    let _ = THREAD.try_with(|held| {
        let block = match held.get() {
            Some(block) => block,
            None if enter => take_block(held),
            None => return,
        };
        // SAFETY: the block is this thread's and valid until the thread is gone; `busy` keeps
        // a nested hook (reached through the cold path's calls) from taking a second reference
        // while the first is live.
        let cell = unsafe { &block.as_ref().0 };
        // SAFETY: as above.
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

/// The thread's first selected function: its state from the pool (cold: once per thread).
/// [`ExitGuard`], armed after that function's region began, gives it back.
#[cold]
#[inline(never)]
fn take_block(held: &Cell<Option<NonNull<FunctionsCell>>>) -> NonNull<FunctionsCell> {
    let block = POOL.take(<FunctionsCell as Block>::fresh);
    held.set(Some(block));
    block
}
