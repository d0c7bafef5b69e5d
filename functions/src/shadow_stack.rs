//! A thread's stack of open function regions, kept apart from the machine stack so that a
//! function left without its exit hook (by `longjmp`, by a C++ exception through code whose
//! compiler emits no exit on unwind, by `exit()` or the thread's end) still gets its region
//! ended: per thread, ends always equal begins.
//!
//! Each entry keeps the stack pointer of its entry hook. A live caller's entry is always
//! higher on the machine stack than its callee's hook, so when a function is entered, every
//! entry at or below the new stack pointer belongs to a frame that is gone: it is ended then,
//! innermost first, at that time. When a function exits, the nearest entry of that function
//! is closed, and any entries above it (left without their exits) before it.

/// Open function regions one thread tracks; deeper calls of selected functions are counted in
/// `metadata.json` and not recorded.
pub const DEPTH: usize = 256;

#[derive(Clone, Copy)]
struct Entry {
    function: usize,
    stack_pointer: usize,
    id: u32,
    recorded: bool,
}

const EMPTY: Entry = Entry {
    function: 0,
    stack_pointer: 0,
    id: 0,
    recorded: false,
};

/// What the stack asks its owner to do besides the begin and end of the call itself.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Repairs {
    /// Regions ended for functions left without their exit hook.
    pub ended_without_exit: u64,
    /// Calls deeper than [`DEPTH`] (not recorded).
    pub too_deep: u64,
}

/// One thread's open function regions.
pub struct ShadowStack {
    entries: [Entry; DEPTH],
    len: usize,
    /// Calls of selected functions past [`DEPTH`] whose exits are still to come.
    overflow: usize,
    /// Counted here, read by the thread's owner when it reports.
    pub repairs: Repairs,
}

impl Default for ShadowStack {
    fn default() -> Self {
        Self::new()
    }
}

impl ShadowStack {
    /// An empty stack.
    pub const fn new() -> Self {
        ShadowStack {
            entries: [EMPTY; DEPTH],
            len: 0,
            overflow: 0,
            repairs: Repairs {
                ended_without_exit: 0,
                too_deep: 0,
            },
        }
    }

    /// How many regions are open.
    pub fn depth(&self) -> usize {
        self.len
    }

    /// `function` (region `id`) entered with the hook's stack pointer `stack_pointer`: ends
    /// the regions of frames that are gone, then begins this one (`begin` says whether it was
    /// recorded, so that its end is asked for only then).
    #[inline(always)]
    pub fn enter(
        &mut self,
        function: usize,
        stack_pointer: usize,
        id: u32,
        begin: impl FnOnce(u32) -> bool,
        mut end: impl FnMut(u32),
    ) {
        while self.len > 0 && self.entries[self.len - 1].stack_pointer <= stack_pointer {
            self.pop_gone(&mut end);
        }
        if self.len == DEPTH {
            self.overflow += 1;
            self.repairs.too_deep += 1;
            return;
        }
        let recorded = begin(id);
        self.entries[self.len] = Entry {
            function,
            stack_pointer,
            id,
            recorded,
        };
        self.len += 1;
    }

    /// `function` exits: ends its region, and those of functions above it that were left
    /// without their exits. An exit with no open entry of `function` (its entry came before
    /// the stack existed, or was past [`DEPTH`]) ends nothing.
    #[inline(always)]
    pub fn exit(&mut self, function: usize, mut end: impl FnMut(u32)) {
        if self.overflow > 0 {
            self.overflow -= 1;
            return;
        }
        if self.len == 0 {
            return;
        }
        let top = self.entries[self.len - 1];
        if top.function == function {
            self.len -= 1;
            if top.recorded {
                end(top.id);
            }
            return;
        }
        self.exit_below_top(function, end);
    }

    #[cold]
    #[inline(never)]
    fn exit_below_top(&mut self, function: usize, mut end: impl FnMut(u32)) {
        let Some(at) = self.entries[..self.len]
            .iter()
            .rposition(|e| e.function == function)
        else {
            return;
        };
        while self.len > at + 1 {
            self.pop_gone(&mut end);
        }
        self.len -= 1;
        let entry = self.entries[at];
        if entry.recorded {
            end(entry.id);
        }
    }

    /// Ends the regions of every frame below `stack_pointer` (deeper on the machine stack):
    /// the frames a `longjmp` to that stack pointer, or an exception caught by the function
    /// running there, throws away.
    pub fn end_deeper_than(&mut self, stack_pointer: usize, mut end: impl FnMut(u32)) {
        while self.len > 0 && self.entries[self.len - 1].stack_pointer < stack_pointer {
            self.pop_gone(&mut end);
        }
    }

    /// Ends every open region, innermost first (the thread ends, or `exit()` was called).
    pub fn end_all(&mut self, mut end: impl FnMut(u32)) {
        while self.len > 0 {
            self.pop_gone(&mut end);
        }
        self.overflow = 0;
    }

    #[cold]
    fn pop_gone(&mut self, end: &mut impl FnMut(u32)) {
        self.len -= 1;
        // Calls past DEPTH were deeper than every entry: gone with it.
        self.overflow = 0;
        let entry = self.entries[self.len];
        if entry.recorded {
            end(entry.id);
        }
        self.repairs.ended_without_exit += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Begins and ends as the stack asked for them, `+id` and `-id`.
    fn run(steps: &[(&str, usize, usize)]) -> (Vec<i64>, ShadowStack) {
        let mut stack = ShadowStack::new();
        let mut log = Vec::new();
        for &(what, function, sp) in steps {
            let mut ended = Vec::new();
            match what {
                "enter" => {
                    let mut begun = None;
                    stack.enter(
                        function,
                        sp,
                        function as u32,
                        |id| {
                            begun = Some(id);
                            true
                        },
                        |id| ended.push(-(id as i64)),
                    );
                    log.extend(ended);
                    log.extend(begun.map(|id| id as i64));
                }
                "exit" => {
                    stack.exit(function, |id| ended.push(-(id as i64)));
                    log.extend(ended);
                }
                _ => stack.end_all(|id| log.push(-(id as i64))),
            }
        }
        (log, stack)
    }

    #[test]
    fn nested_calls_begin_and_end_in_order() {
        let (log, stack) = run(&[
            ("enter", 1, 1000),
            ("enter", 2, 900),
            ("exit", 2, 900),
            ("enter", 3, 900),
            ("exit", 3, 900),
            ("exit", 1, 1000),
        ]);
        assert_eq!(log, vec![1, 2, -2, 3, -3, -1]);
        assert_eq!(stack.repairs, Repairs::default());
    }

    #[test]
    fn functions_left_by_longjmp_end_when_a_shallower_frame_calls_again() {
        // 1 calls 2, which calls 3; 3 longjmps back into 1, which then calls 4.
        let (log, stack) = run(&[
            ("enter", 1, 1000),
            ("enter", 2, 900),
            ("enter", 3, 800),
            ("enter", 4, 900),
            ("exit", 4, 900),
            ("exit", 1, 1000),
        ]);
        assert_eq!(log, vec![1, 2, 3, -3, -2, 4, -4, -1]);
        assert_eq!(stack.repairs.ended_without_exit, 2);
    }

    #[test]
    fn functions_left_by_an_exception_end_when_the_catching_function_exits() {
        let (log, stack) = run(&[
            ("enter", 1, 1000),
            ("enter", 2, 900),
            ("enter", 3, 800),
            ("exit", 1, 1000),
        ]);
        assert_eq!(log, vec![1, 2, 3, -3, -2, -1]);
        assert_eq!(stack.depth(), 0);
    }

    #[test]
    fn a_longjmp_ends_exactly_the_frames_below_its_target() {
        let mut stack = ShadowStack::new();
        let mut ended = Vec::new();
        for (function, sp) in [(1, 1000), (2, 900), (3, 800)] {
            stack.enter(function, sp, function as u32, |_| true, |_| {});
        }
        // setjmp ran in function 2's frame (stack pointer 900).
        stack.end_deeper_than(900, |id| ended.push(id));
        assert_eq!(ended, vec![3]);
        assert_eq!(stack.depth(), 2);
        assert_eq!(stack.repairs.ended_without_exit, 1);
    }

    #[test]
    fn recursion_ends_the_innermost_call_first() {
        let (log, _) = run(&[
            ("enter", 5, 1000),
            ("enter", 5, 900),
            ("exit", 5, 900),
            ("exit", 5, 1000),
        ]);
        assert_eq!(log, vec![5, 5, -5, -5]);
    }

    #[test]
    fn the_end_of_a_thread_ends_every_open_region_innermost_first() {
        let (log, stack) = run(&[("enter", 1, 1000), ("enter", 2, 900), ("end", 0, 0)]);
        assert_eq!(log, vec![1, 2, -2, -1]);
        assert_eq!(stack.depth(), 0);
    }

    #[test]
    fn calls_past_the_depth_are_counted_and_their_exits_end_nothing_of_the_callers() {
        let mut stack = ShadowStack::new();
        let (mut begins, mut ends) = (0, 0);
        for d in 0..DEPTH + 10 {
            stack.enter(
                7,
                100_000 - d * 16,
                7,
                |_| {
                    begins += 1;
                    true
                },
                |_| ends += 1,
            );
        }
        for _ in 0..DEPTH + 10 {
            stack.exit(7, |_| ends += 1);
        }
        assert_eq!((begins, ends), (DEPTH, DEPTH));
        assert_eq!(stack.repairs.too_deep, 10);
        assert_eq!(stack.depth(), 0);
    }

    #[test]
    fn an_unrecorded_begin_asks_for_no_end() {
        let mut stack = ShadowStack::new();
        let mut ends = 0;
        stack.enter(1, 1000, 1, |_| false, |_| ends += 1);
        stack.exit(1, |_| ends += 1);
        assert_eq!(ends, 0);
    }
}
