//! Exports: version, errors, init and finalize, flush, collection on and off, thread names.

use super::*;

/// The ABI version of this library (`METRON_ABI_VERSION`).
#[no_mangle]
pub extern "C" fn metron_abi_version() -> u32 {
    ABI_VERSION
}

/// The library's version, NUL-terminated, in static storage.
#[no_mangle]
pub extern "C" fn metron_version() -> *const c_char {
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast()
}

/// A one-line description of `status`, NUL-terminated, in static storage.
#[no_mangle]
pub extern "C" fn metron_status_string(status: Status) -> *const c_char {
    let text = usize::try_from(status)
        .ok()
        .and_then(|i| STATUSES.get(i))
        .map_or(UNKNOWN_STATUS, |(_, text)| text);
    text.as_ptr().cast()
}

/// The message of this thread's last failed call, or "" (valid until this thread's next
/// Metron call).
#[no_mangle]
pub extern "C" fn metron_last_error() -> *const c_char {
    catch_unwind(|| thread_state::with(|st| st.last_error()))
        .ok()
        .flatten()
        .unwrap_or(c"".as_ptr())
}

/// Starts Metron now. `args` may be NULL.
///
/// # Safety
/// `args` is NULL or points to at least `args->struct_size` readable bytes laid out as
/// `metron_init_args`; its `output_path` is NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn metron_init(args: *const InitArgs) -> Status {
    call(|| {
        register_metadata();
        let mut flags = 0;
        if !args.is_null() {
            // SAFETY: non-NULL; the caller guarantees the first 4 bytes (struct_size) exist.
            let size = unsafe { std::ptr::addr_of!((*args).struct_size).read_unaligned() };
            if size < 8 {
                return Err(Failure::new(
                    ERROR_INVALID_ARGUMENT,
                    format!("metron_init: args->struct_size is {size}; set it to sizeof(metron_init_args)"),
                ));
            }
            // SAFETY: struct_size >= 8 covers `flags`.
            flags = unsafe { (*args).flags };
            if size as usize >= std::mem::size_of::<InitArgs>() {
                // SAFETY: struct_size covers `output_path`.
                let path = unsafe { (*args).output_path };
                if !path.is_null() {
                    // SAFETY: non-NULL and NUL-terminated per the contract.
                    let path = unsafe { CStr::from_ptr(path) }.to_string_lossy();
                    if let Err(why) = metron::set_output_path(&path) {
                        return Err(Failure::new(
                            ERROR_ALREADY_STARTED,
                            format!("metron_init: output_path cannot be used: {why}; call metron_init first"),
                        ));
                    }
                }
            }
        }
        if off_in_child() || !metron::init() {
            return Err(Failure::new(
                ERROR_DISABLED,
                "metron_init: Metron is turned off (METRON_ENABLED=0, or a forked child with METRON_FORK=disable); every call will succeed and record nothing",
            ));
        }
        if flags & INIT_START_STOPPED != 0 {
            metron::set_collecting(false);
        }
        Ok(())
    })
}

/// Ends the run and writes the run folder (idempotent).
#[no_mangle]
pub extern "C" fn metron_finalize() -> Status {
    call(|| {
        if !off_in_child() {
            metron::finish();
        }
        Ok(())
    })
}

/// Delivers everything recorded so far.
#[no_mangle]
pub extern "C" fn metron_flush() -> Status {
    call(|| {
        if !off_in_child() {
            metron::flush();
        }
        Ok(())
    })
}

/// Turns recording on for the whole process.
#[no_mangle]
pub extern "C" fn metron_start() -> Status {
    call(|| {
        if !off_in_child() {
            metron::set_collecting(true);
        }
        Ok(())
    })
}

/// Turns recording off for the whole process (open regions still end).
#[no_mangle]
pub extern "C" fn metron_stop() -> Status {
    call(|| {
        if !off_in_child() {
            metron::set_collecting(false);
        }
        Ok(())
    })
}

/// Turns recording on for the calling thread.
#[no_mangle]
pub extern "C" fn metron_thread_start() -> Status {
    call(|| {
        metron::resume_thread();
        Ok(())
    })
}

/// Turns recording off for the calling thread (open regions still end).
#[no_mangle]
pub extern "C" fn metron_thread_stop() -> Status {
    call(|| {
        metron::pause_thread();
        Ok(())
    })
}

/// Names the calling thread.
///
/// # Safety
/// `name` is NULL or a valid NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn metron_set_thread_name(name: *const c_char) -> Status {
    call(|| {
        if name.is_null() {
            return Err(null("metron_set_thread_name: the name"));
        }
        if !off_in_child() {
            // SAFETY: non-NULL and NUL-terminated per the contract.
            metron::set_thread_name(&unsafe { CStr::from_ptr(name) }.to_string_lossy());
        }
        Ok(())
    })
}
