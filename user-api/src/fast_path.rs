//! The exports' fast path: a begin or end that needs nothing but the calling thread's state and
//! room in its record buffer, with no error to report. Anything else (a NULL name, a name this
//! thread has not seen yet, an unknown id, a mismatched end, the thread's first call, a full
//! segment, a forked child, GPU region mode, a reentrant call) returns false having done
//! nothing, and the export takes the checked path (`checked.rs`, under `catch_unwind`), which
//! does it all and reports what is wrong.
//!
//! The fast path runs only while the run is collecting, which also rules out a forked child
//! where Metron is off (the child's fork handler stops collection before any code of the
//! child runs), so it needs no check of its own for that.
//!
//! # Why there is no `catch_unwind` here
//! Nothing on this path can panic, so nothing can unwind into C: it is made of integer
//! compares, `slice::get`/`get_mut` (which return `Option`), relaxed atomic loads, the
//! initial-exec TLS read ([`crate::fast_tls`], inline assembly), `RefCell::try_borrow_mut`
//! (which returns `Result`), the byte compare `thread_state::same_name` (raw reads, no
//! indexing) and `ThreadBuffer::try_begin`/`try_end` (a compare and stores into the current
//! segment; no cold path, no allocation). No arithmetic here can overflow (`depth` is below
//! `MAX_DEPTH`; `checked_sub`), and release builds have no overflow checks anyway. The test
//! `tests/tests/c_api_fast_path.rs` checks this in the built library: the fast-path exports
//! call nothing but the checked path.

use super::*;
use crate::c_words::Short;
use thread_state::meta;

/// [`checked::begin_id`]'s fast path.
#[inline(always)]
pub(crate) fn begin_id(id: u32) -> bool {
    ids::is_region_fast(id)
        && by_id::collecting()
        && !metron::gpu::region_counters_on()
        && thread_state::with_fast(
            #[inline(always)]
            |st| st.try_begin(id, meta::of(id, OpenKind::Region, false, true), None),
        )
}

/// [`checked::end_id`]'s fast path.
#[inline(always)]
pub(crate) fn end_id(id: u32) -> bool {
    let expect = meta::of(id, OpenKind::Region, false, false);
    by_id::collecting()
        && !metron::gpu::region_counters_on()
        && thread_state::with_fast(
            #[inline(always)]
            |st| {
                st.try_end(
                    #[inline(always)]
                    |word, _| word & meta::MATCH == expect,
                )
            },
        )
}

/// What [`begin`] and [`end`] did.
pub(crate) enum Fast {
    /// Recorded: the call is done.
    Done,
    /// The checked path must run.
    Checked,
    /// A name of eight bytes or more: [`begin_long`] / [`end_long`].
    Long,
}

/// [`checked::begin`]'s fast path for names of up to seven bytes (a single word: see
/// [`crate::c_words::Short`]); longer names get [`Fast::Long`].
///
/// # Safety
/// `name` is NULL or a valid NUL-terminated string.
#[inline(always)]
pub(crate) unsafe fn begin(name: *const c_char, kind: OpenKind) -> Fast {
    if name.is_null() || !by_id::collecting() || metron::gpu::region_counters_on() {
        return Fast::Checked;
    }
    thread_state::with_fast_or(
        Fast::Checked,
        #[inline(always)]
        |st| {
            // SAFETY: non-NULL and NUL-terminated per the contract.
            match unsafe { st.lookup_short(name, 0) } {
                Short::Yes((id, interned))
                    if st.try_begin(id, meta::of(id, kind, false, false), Some(interned)) =>
                {
                    Fast::Done
                }
                Short::Long => Fast::Long,
                _ => Fast::Checked,
            }
        },
    )
}

/// [`checked::end`]'s fast path for an innermost region of up to seven bytes (as [`begin`]).
///
/// # Safety
/// `name` is NULL or a valid NUL-terminated string.
#[inline(always)]
pub(crate) unsafe fn end(name: *const c_char, kind: OpenKind) -> Fast {
    if name.is_null() || !by_id::collecting() || metron::gpu::region_counters_on() {
        return Fast::Checked;
    }
    let mut long = false;
    let done = thread_state::with_fast(
        #[inline(always)]
        |st| {
            st.try_end(
                #[inline(always)]
                |word, top_name| {
                    (word >> meta::KIND_SHIFT) as u8 == kind as u8
                        && word & meta::BY_ID == 0
                        // SAFETY: non-NULL (checked above) and NUL-terminated per the contract.
                        && match unsafe { top_name.is_short(name) } {
                            Short::Yes(()) => true,
                            Short::No => false,
                            Short::Long => {
                                long = true;
                                false
                            }
                        }
                },
            )
        },
    );
    match (done, long) {
        (true, _) => Fast::Done,
        (false, true) => Fast::Long,
        (false, false) => Fast::Checked,
    }
}

/// [`checked::begin`]'s fast path for names of any length.
///
/// # Safety
/// `name` is NULL or a valid NUL-terminated string.
#[inline(always)]
pub(crate) unsafe fn begin_long(name: *const c_char, kind: OpenKind) -> bool {
    !name.is_null()
        && by_id::collecting()
        && !metron::gpu::region_counters_on()
        && thread_state::with_fast(
            #[inline(always)]
            |st| {
                // SAFETY: non-NULL and NUL-terminated per the contract.
                match unsafe { st.lookup_cached(name, 0) } {
                    Some((id, interned)) => {
                        st.try_begin(id, meta::of(id, kind, false, false), Some(interned))
                    }
                    None => false,
                }
            },
        )
}

/// [`checked::end`]'s fast path for names of any length: the innermost region is of `kind`,
/// was begun by name, and (when `name` is given) has that name.
///
/// # Safety
/// `name` is None, NULL or a valid NUL-terminated string.
#[inline(always)]
pub(crate) unsafe fn end_long(name: Option<*const c_char>, kind: OpenKind) -> bool {
    !name.is_some_and(|n| n.is_null())
        && by_id::collecting()
        && !metron::gpu::region_counters_on()
        && thread_state::with_fast(
            #[inline(always)]
            |st| {
                st.try_end(
                    #[inline(always)]
                    |word, top_name| {
                        (word >> meta::KIND_SHIFT) as u8 == kind as u8
                    && word & meta::BY_ID == 0
                    // SAFETY: non-NULL (checked above) and NUL-terminated per the contract.
                    && name.is_none_or(|n| unsafe { top_name.is_fast(n) })
                    },
                )
            },
        )
}
