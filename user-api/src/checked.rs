//! Region operations checked against the calling thread's stack of open regions before
//! anything is recorded: begin and end by name or by id, and typed annotations.

use super::*;

/// Begins a region of `kind` on this thread. Hot path.
///
/// # Safety
/// `name` is NULL or a valid NUL-terminated string.
#[inline(always)]
pub(crate) unsafe fn begin(what: &'static str, name: *const c_char, kind: OpenKind) -> Status {
    if name.is_null() {
        return null_name(what);
    }
    if off_in_child() {
        return OK;
    }
    with_state_fast(what, |st| {
        // SAFETY: non-NULL and NUL-terminated per the caller's contract.
        let (id, interned) = unsafe { st.lookup(name, CallsiteKind::Region) };
        if st.is_full() {
            return fail_in(st, too_deep(what));
        }
        let recorded = st.buffer().begin(id);
        st.push_word(
            thread_state::meta::of(id, kind, recorded, false),
            Some(interned),
        );
        OK
    })
}

/// A NULL name: counted and reported.
#[cold]
#[inline(never)]
pub(crate) fn null_name(what: &str) -> Status {
    fail(null(&format!("{what}: the name")))
}

/// Begins region `id` (from `metron_region_id`) on this thread. Hot path: no name to check.
#[inline(always)]
pub(crate) fn begin_id(what: &'static str, id: u32) -> Status {
    if !ids::is_region(id) {
        return fail(bad_id(what, id));
    }
    if off_in_child() {
        return OK;
    }
    with_state_fast(what, |st| {
        if st.is_full() {
            return fail_in(st, too_deep(what));
        }
        let recorded = st.buffer().begin(id);
        st.push_word(
            thread_state::meta::of(id, OpenKind::Region, recorded, true),
            None,
        );
        OK
    })
}

/// Ends region `id`, which must be the innermost open region (begun by id or by name). Hot
/// path: one integer compare against the open-region stack.
#[inline(always)]
pub(crate) fn end_id(what: &'static str, id: u32) -> Status {
    if off_in_child() {
        return if id == 0 { fail(bad_id(what, id)) } else { OK };
    }
    with_state_fast(what, |st| match st.top_word() {
        Some(word)
            if word & thread_state::meta::MATCH
                == thread_state::meta::of(id, OpenKind::Region, false, false) =>
        {
            st.pop();
            if word & thread_state::meta::RECORDED != 0 {
                st.buffer().end(id);
            }
            OK
        }
        _ => end_id_failed(st, what, id),
    })
}

/// [`end_id`]'s failure, reported (cold).
#[cold]
#[inline(never)]
fn end_id_failed(st: &mut ThreadState, what: &str, id: u32) -> Status {
    let failure = end_id_failure(what, id, st.top());
    fail_in(st, failure)
}

/// Why `metron_region_end_id(id)` failed with `top` innermost.
#[cold]
#[inline(never)]
pub(crate) fn end_id_failure(what: &str, id: u32, top: Option<Open>) -> Failure {
    if !ids::is_region(id) {
        return bad_id(what, id);
    }
    let shown = format!("({id} = \"{}\")", String::from_utf8_lossy(ids::name_of(id)));
    match top {
        None => Failure::new(
            ERROR_NO_OPEN_REGION,
            format!("{what}{shown}: no region is open on this thread (end without begin)"),
        ),
        Some(top) => mismatch_failure(what, &shown, top),
    }
}

#[cold]
#[inline(never)]
pub(crate) fn bad_id(what: &str, id: u32) -> Failure {
    Failure::new(
        ERROR_INVALID_ARGUMENT,
        format!("{what}({id}): not a region id (0, or not returned by metron_region_id); nothing was done"),
    )
}

#[cold]
#[inline(never)]
pub(crate) fn too_deep(what: &str) -> Failure {
    Failure::new(
        ERROR_TOO_DEEP,
        format!(
            "{what}: {} regions are already open on this thread (the limit); nothing was begun",
            thread_state::MAX_DEPTH
        ),
    )
}

/// Ends the innermost open region, which must be of `kind` (and named `name` when given).
/// Hot path.
///
/// # Safety
/// `name` is None or a NULL or valid NUL-terminated string.
#[inline(always)]
pub(crate) unsafe fn end(
    what: &'static str,
    name: Option<*const c_char>,
    kind: OpenKind,
) -> Status {
    if name.is_some_and(|n| n.is_null()) {
        return null_name(what);
    }
    if off_in_child() {
        return OK;
    }
    with_state_fast(what, |st| {
        let Some(top) = st.top() else {
            return no_open_in(st, what, name);
        };
        // SAFETY: `n` is non-NULL (checked above) and NUL-terminated per the contract.
        let name_matches = name.is_none_or(|n| unsafe {
            thread_state::same_name(
                n,
                if top.by_id {
                    ids::name_of(top.id)
                } else {
                    top.name
                },
            )
        });
        if top.kind != kind || !name_matches {
            // SAFETY: as above.
            return unsafe { mismatch_in(st, what, name, top) };
        }
        st.pop();
        if top.recorded {
            st.buffer().end(top.id);
        }
        OK
    })
}

/// [`no_open`], reported (cold).
#[cold]
#[inline(never)]
fn no_open_in(st: &mut ThreadState, what: &str, name: Option<*const c_char>) -> Status {
    let failure = no_open(what, name);
    fail_in(st, failure)
}

/// [`mismatch`], reported (cold).
///
/// # Safety
/// `name` is None or a valid NUL-terminated string.
#[cold]
#[inline(never)]
unsafe fn mismatch_in(
    st: &mut ThreadState,
    what: &str,
    name: Option<*const c_char>,
    top: Open,
) -> Status {
    // SAFETY: forwarded contract.
    let failure = unsafe { mismatch(what, name, top) };
    fail_in(st, failure)
}

/// # Safety
/// `name` is NULL or a valid NUL-terminated string.
#[cold]
pub(crate) fn no_open(what: &str, name: Option<*const c_char>) -> Failure {
    let shown = match name {
        // SAFETY: checked non-NULL by the caller; NUL-terminated per the contract.
        Some(n) => format!("(\"{}\")", unsafe { text_of(n) }),
        None => "()".into(),
    };
    Failure::new(
        ERROR_NO_OPEN_REGION,
        format!("{what}{shown}: no region is open on this thread (end without begin)"),
    )
}

/// # Safety
/// `name` is None or a valid NUL-terminated string.
#[cold]
pub(crate) unsafe fn mismatch(what: &str, name: Option<*const c_char>, top: Open) -> Failure {
    let shown = match name {
        // SAFETY: per the contract.
        Some(n) => format!("(\"{}\")", unsafe { text_of(n) }),
        None => "()".into(),
    };
    mismatch_failure(what, &shown, top)
}

#[cold]
pub(crate) fn mismatch_failure(what: &str, shown: &str, top: Open) -> Failure {
    let (name, begun_with) = if top.by_id {
        (ids::name_of(top.id), "metron_region_begin_id")
    } else {
        (top.name, top.kind.begun_with())
    };
    Failure::new(
        ERROR_MISMATCHED_END,
        format!(
            "{what}{shown}: the innermost open region on this thread is \"{}\", begun with {begun_with}; nothing was ended",
            String::from_utf8_lossy(name),
        ),
    )
}

/// Records one annotation on the innermost open region.
///
/// # Safety
/// `a.key` and, for strings, `a.value.string` are NULL or valid NUL-terminated strings.
pub(crate) unsafe fn annotate_one(
    st: &mut ThreadState,
    what: &str,
    a: &Annotation,
) -> Result<(), Failure> {
    if a.key.is_null() {
        return Err(null(&format!("{what}: the annotation key")));
    }
    let mut hex = [0u8; 18];
    // SAFETY: the union field read is the one `kind` names, as the C contract requires.
    let value = unsafe {
        match a.kind {
            annotation_type::STRING => {
                if a.value.string.is_null() {
                    return Err(null(&format!("{what}: the string value")));
                }
                None
            }
            annotation_type::INT64 => Some(AnnotationValue::I64(a.value.int64)),
            annotation_type::UINT64 => Some(AnnotationValue::U64(a.value.uint64)),
            annotation_type::DOUBLE => Some(AnnotationValue::F64(a.value.float64)),
            annotation_type::POINTER => Some(AnnotationValue::Str(pointer_text(
                a.value.pointer as usize,
                &mut hex,
            ))),
            other => {
                return Err(Failure::new(
                    ERROR_INVALID_ARGUMENT,
                    format!("{what}: annotation type {other} is not one of METRON_ANNOTATION_STRING (1), INT64 (2), UINT64 (3), DOUBLE (4), POINTER (5)"),
                ))
            }
        }
    };
    let Some(top) = st.top() else {
        return Err(Failure::new(
            ERROR_NO_OPEN_REGION,
            format!("{what}: no region is open on this thread to annotate"),
        ));
    };
    if !top.recorded {
        return Ok(());
    }
    // SAFETY: `key` is non-NULL (checked) and NUL-terminated per the contract.
    let (key, _) = unsafe { st.lookup(a.key, CallsiteKind::AnnotationKey) };
    match value {
        Some(v) => {
            by_id::annotate(key, v);
        }
        None => {
            // SAFETY: checked non-NULL above; NUL-terminated per the contract.
            let text = unsafe { CStr::from_ptr(a.value.string) }.to_string_lossy();
            by_id::annotate(key, AnnotationValue::Str(&text));
        }
    }
    Ok(())
}

/// `0x...` of an address, written into `buf`.
pub(crate) fn pointer_text(addr: usize, buf: &mut [u8; 18]) -> &str {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let digits = (usize::BITS - addr.leading_zeros()).div_ceil(4).max(1) as usize;
    buf[0] = b'0';
    buf[1] = b'x';
    for i in 0..digits {
        buf[2 + i] = DIGITS[(addr >> (4 * (digits - 1 - i))) & 0xF];
    }
    std::str::from_utf8(&buf[..2 + digits]).unwrap_or("0x?")
}
