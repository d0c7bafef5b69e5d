//! Exports: regions by name and by id, perf markers, push/pop with annotations.

use super::*;
use fast_path::Fast;

/// Begins region `name` on this thread.
///
/// # Safety
/// `name` is NULL or a valid NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn metron_region_begin(name: *const c_char) -> Status {
    // SAFETY: forwarded contract.
    match unsafe { fast_path::begin(name, OpenKind::Region) } {
        Fast::Done => OK,
        // SAFETY: forwarded contract.
        Fast::Long => unsafe { region_begin_long(name) },
        // SAFETY: forwarded contract.
        Fast::Checked => unsafe { region_begin_checked(name) },
    }
}

/// `metron_region_begin` of a name of eight bytes or more: the general fast path, else the
/// checked path (out of line, so that short names' path stays small).
///
/// # Safety
/// `name` is a valid NUL-terminated string.
#[inline(never)]
unsafe fn region_begin_long(name: *const c_char) -> Status {
    // SAFETY: forwarded contract.
    if unsafe { fast_path::begin_long(name, OpenKind::Region) } {
        return OK;
    }
    // SAFETY: forwarded contract.
    unsafe { region_begin_checked(name) }
}

/// `metron_region_begin`'s checked path (see `fast_path`).
///
/// # Safety
/// `name` is NULL or a valid NUL-terminated string.
#[inline(never)]
unsafe fn region_begin_checked(name: *const c_char) -> Status {
    // SAFETY: forwarded contract.
    call_fast(|| unsafe { begin("metron_region_begin", name, OpenKind::Region) })
}

/// Ends region `name`, the innermost open region of this thread.
///
/// # Safety
/// `name` is NULL or a valid NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn metron_region_end(name: *const c_char) -> Status {
    // SAFETY: forwarded contract.
    match unsafe { fast_path::end(name, OpenKind::Region) } {
        Fast::Done => OK,
        // SAFETY: forwarded contract.
        Fast::Long => unsafe { region_end_long(name) },
        // SAFETY: forwarded contract.
        Fast::Checked => unsafe { region_end_checked(name) },
    }
}

/// `metron_region_end` when the innermost region's name has eight bytes or more (as
/// `region_begin_long`).
///
/// # Safety
/// `name` is a valid NUL-terminated string.
#[inline(never)]
unsafe fn region_end_long(name: *const c_char) -> Status {
    // SAFETY: forwarded contract.
    if unsafe { fast_path::end_long(Some(name), OpenKind::Region) } {
        return OK;
    }
    // SAFETY: forwarded contract.
    unsafe { region_end_checked(name) }
}

/// `metron_region_end`'s checked path (see `fast_path`).
///
/// # Safety
/// `name` is NULL or a valid NUL-terminated string.
#[inline(never)]
unsafe fn region_end_checked(name: *const c_char) -> Status {
    // SAFETY: forwarded contract.
    call_fast(|| unsafe { end("metron_region_end", Some(name), OpenKind::Region) })
}

/// `metron_id`: an interned region name; 0 is never a valid id.
pub type Id = u32;

/// The id of region `name` for `metron_region_begin_id` / `metron_region_end_id`, or 0 when
/// `name` is NULL (an error, counted). Interns `name` (a locked table): call it once per name
/// and keep the id.
///
/// # Safety
/// `name` is NULL or a valid NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn metron_region_id(name: *const c_char) -> Id {
    let interned = catch_unwind(AssertUnwindSafe(|| {
        if name.is_null() {
            fail(null("metron_region_id: the name"));
            return 0;
        }
        // SAFETY: non-NULL and NUL-terminated per the contract.
        unsafe { thread_state::intern_region(name) }
    }));
    interned.unwrap_or_else(|_| {
        internal();
        0
    })
}

/// Begins region `id` (from `metron_region_id`) on this thread.
#[no_mangle]
pub extern "C" fn metron_region_begin_id(id: Id) -> Status {
    if fast_path::begin_id(id) {
        return OK;
    }
    region_begin_id_checked(id)
}

/// `metron_region_begin_id`'s checked path (see `fast_path`).
#[inline(never)]
fn region_begin_id_checked(id: Id) -> Status {
    call_fast(|| begin_id("metron_region_begin_id", id))
}

/// Ends region `id`, the innermost open region of this thread.
#[no_mangle]
pub extern "C" fn metron_region_end_id(id: Id) -> Status {
    if fast_path::end_id(id) {
        return OK;
    }
    region_end_id_checked(id)
}

/// `metron_region_end_id`'s checked path (see `fast_path`).
#[inline(never)]
fn region_end_id_checked(id: Id) -> Status {
    call_fast(|| end_id("metron_region_end_id", id))
}

/// `metron_fast_thread_get(abi, size)`: the calling thread's state for the header's inline
/// begin/end by id (`METRON_REGION_BEGIN_ID`, `METRON_REGION_BEGIN` with a literal,
/// `METRON_SCOPE`), which the header keeps in a thread-local of the caller's module. A header
/// whose `METRON_FAST_ABI` or `sizeof(metron_fast_thread)` differ from this library's gets a
/// state whose inline path always calls the library. Never NULL.
#[no_mangle]
pub extern "C" fn metron_fast_thread_get(abi: u32, size: u32) -> *mut thread_state::FastThread {
    catch_unwind(|| thread_state::fast_thread(abi, size))
        .unwrap_or_else(|_| thread_state::fast_thread(0, 0))
}

/// `metron_fast_layout(field)`: the byte offset of field number `field` of this library's
/// `metron_fast_thread` (in the header's order), its size for the field after the last, and
/// `u32::MAX` beyond: the header test compares them with `offsetof`.
#[no_mangle]
pub extern "C" fn metron_fast_layout(field: u32) -> u32 {
    thread_state::FAST_LAYOUT
        .get(field as usize)
        .map_or(u32::MAX, |&v| v as u32)
}

/// Begins perf marker `name` of `group` (group may be NULL).
///
/// # Safety
/// `name` and `group` are NULL or valid NUL-terminated strings.
#[no_mangle]
pub unsafe extern "C" fn metron_perf_marker_begin(
    name: *const c_char,
    group: *const c_char,
) -> Status {
    call(|| {
        // SAFETY: forwarded contract.
        reported(unsafe { begin("metron_perf_marker_begin", name, OpenKind::Marker) })?;
        if group.is_null() || off_in_child() {
            return Ok(());
        }
        let annotation = Annotation {
            key: c"group".as_ptr(),
            kind: annotation_type::STRING,
            reserved: 0,
            value: AnnotationData { string: group },
        };
        with_state("metron_perf_marker_begin", |st| {
            // SAFETY: the key is a literal; `group` is non-NULL and NUL-terminated per the
            // contract.
            unsafe { annotate_one(st, "metron_perf_marker_begin", &annotation) }
        })
    })
}

/// Ends the most recently begun perf marker.
#[no_mangle]
pub extern "C" fn metron_perf_marker_end() -> Status {
    // SAFETY: no name is passed.
    call_fast(|| unsafe { end("metron_perf_marker_end", None, OpenKind::Marker) })
}

/// Begins region `name` with `count` annotations.
///
/// # Safety
/// `name` is NULL or a valid NUL-terminated string; `annotations` is NULL or points to
/// `count` valid `metron_annotation`s whose strings are NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn metron_push(
    name: *const c_char,
    annotations: *const Annotation,
    count: usize,
) -> Status {
    call(|| {
        if annotations.is_null() && count > 0 {
            return Err(null("metron_push: the annotation array (count > 0)"));
        }
        let list: &[Annotation] = if count == 0 {
            &[]
        } else {
            // SAFETY: non-NULL with `count` elements per the contract.
            unsafe { std::slice::from_raw_parts(annotations, count) }
        };
        // Check every annotation before beginning, so a bad one leaves nothing open.
        for a in list {
            if a.key.is_null() {
                return Err(null("metron_push: an annotation key"));
            }
            if a.kind == annotation_type::STRING
                // SAFETY: the union field named by `kind`.
                && unsafe { a.value.string }.is_null()
            {
                return Err(null("metron_push: an annotation's string value"));
            }
            if !(annotation_type::STRING..=annotation_type::POINTER).contains(&a.kind) {
                return Err(Failure::new(
                    ERROR_INVALID_ARGUMENT,
                    format!("metron_push: annotation type {} is not one of METRON_ANNOTATION_STRING (1), INT64 (2), UINT64 (3), DOUBLE (4), POINTER (5)", a.kind),
                ));
            }
        }
        // SAFETY: forwarded contract.
        reported(unsafe { begin("metron_push", name, OpenKind::Push) })?;
        if list.is_empty() || off_in_child() {
            return Ok(());
        }
        with_state("metron_push", |st| {
            for a in list {
                // SAFETY: forwarded contract (checked non-NULL above).
                unsafe { annotate_one(st, "metron_push", a) }?;
            }
            Ok(())
        })
    })
}

/// Ends the innermost region begun with `metron_push`.
#[no_mangle]
pub extern "C" fn metron_pop() -> Status {
    // SAFETY: no name is passed.
    call_fast(|| unsafe { end("metron_pop", None, OpenKind::Push) })
}

/// Annotates the innermost open region.
///
/// # Safety
/// `annotation` is NULL or points to a valid `metron_annotation` whose strings are NULL or
/// NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn metron_annotate(annotation: *const Annotation) -> Status {
    call(|| {
        if annotation.is_null() {
            return Err(null("metron_annotate: the annotation"));
        }
        if off_in_child() {
            return Ok(());
        }
        // SAFETY: non-NULL and valid per the contract.
        let a = unsafe { *annotation };
        // SAFETY: forwarded contract.
        with_state("metron_annotate", |st| unsafe {
            annotate_one(st, "metron_annotate", &a)
        })
    })
}

/// Annotates with a typed value: the body shared by the `metron_annotate_*` exports.
///
/// # Safety
/// `key` is NULL or NUL-terminated; `value` is valid for `kind`.
unsafe fn annotate_typed(
    what: &'static str,
    key: *const c_char,
    kind: u32,
    value: AnnotationData,
) -> Status {
    call(|| {
        if off_in_child() {
            return if key.is_null() {
                Err(null(&format!("{what}: the key")))
            } else {
                Ok(())
            };
        }
        let a = Annotation {
            key,
            kind,
            reserved: 0,
            value,
        };
        // SAFETY: forwarded contract.
        with_state(what, |st| unsafe { annotate_one(st, what, &a) })
    })
}

/// Annotates the innermost open region with a string.
///
/// # Safety
/// `key` and `value` are NULL or valid NUL-terminated strings.
#[no_mangle]
pub unsafe extern "C" fn metron_annotate_string(
    key: *const c_char,
    value: *const c_char,
) -> Status {
    // SAFETY: forwarded contract.
    unsafe {
        annotate_typed(
            "metron_annotate_string",
            key,
            annotation_type::STRING,
            AnnotationData { string: value },
        )
    }
}

/// Annotates the innermost open region with a signed integer.
///
/// # Safety
/// `key` is NULL or a valid NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn metron_annotate_int64(key: *const c_char, value: i64) -> Status {
    // SAFETY: forwarded contract.
    unsafe {
        annotate_typed(
            "metron_annotate_int64",
            key,
            annotation_type::INT64,
            AnnotationData { int64: value },
        )
    }
}

/// Annotates the innermost open region with an unsigned integer.
///
/// # Safety
/// `key` is NULL or a valid NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn metron_annotate_uint64(key: *const c_char, value: u64) -> Status {
    // SAFETY: forwarded contract.
    unsafe {
        annotate_typed(
            "metron_annotate_uint64",
            key,
            annotation_type::UINT64,
            AnnotationData { uint64: value },
        )
    }
}

/// Annotates the innermost open region with a double.
///
/// # Safety
/// `key` is NULL or a valid NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn metron_annotate_double(key: *const c_char, value: f64) -> Status {
    // SAFETY: forwarded contract.
    unsafe {
        annotate_typed(
            "metron_annotate_double",
            key,
            annotation_type::DOUBLE,
            AnnotationData { float64: value },
        )
    }
}

/// Annotates the innermost open region with an address (shown as `0x...`).
///
/// # Safety
/// `key` is NULL or a valid NUL-terminated string. `value` is never dereferenced.
#[no_mangle]
pub unsafe extern "C" fn metron_annotate_pointer(
    key: *const c_char,
    value: *const c_void,
) -> Status {
    // SAFETY: forwarded contract.
    unsafe {
        annotate_typed(
            "metron_annotate_pointer",
            key,
            annotation_type::POINTER,
            AnnotationData { pointer: value },
        )
    }
}
