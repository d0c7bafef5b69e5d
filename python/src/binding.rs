//! Which libmetron the package calls, decided once at import.

use crate::sys::{self, CApi, Status, ERROR_DISABLED, OK};
use pyo3::create_exception;
use pyo3::exceptions::PyRuntimeError;
use pyo3::PyErr;
use std::ffi::CStr;
use std::sync::OnceLock;

create_exception!(
    metron,
    MetronError,
    PyRuntimeError,
    "A Metron call was refused (the message says why and what is accepted)."
);

/// The libmetron in use and where it is.
pub struct Binding {
    pub api: CApi,
    /// `embedded` (this package's own copy) or `process` (one loaded before it).
    pub kind: &'static str,
    pub library: String,
}

static BINDING: OnceLock<Binding> = OnceLock::new();

/// The binding (decided at its first use, at import).
pub fn get() -> &'static Binding {
    BINDING.get_or_init(|| match sys::global_c_api() {
        Ok(Some((api, library))) => Binding {
            api,
            kind: "process",
            library,
        },
        Ok(None) => embedded(),
        Err(why) => {
            // The embedded copy still joins the process's runtime through the shared-runtime
            // claim when the ABIs allow it, or records apart and says so in its metadata.
            eprintln!("metron: the Python package uses its own libmetron: {why}");
            embedded()
        }
    })
}

fn embedded() -> Binding {
    Binding {
        api: sys::own_c_api(),
        kind: "embedded",
        library: sys::own_file().unwrap_or_else(|| "metron/_metron".to_string()),
    }
}

/// The C API in use.
#[inline(always)]
pub fn c_api() -> &'static CApi {
    &get().api
}

/// `Ok` for success and for recording that is off (stopped, or a child after `fork`: every
/// call there is a no-op by design); the C API's message otherwise.
pub fn check(status: Status) -> Result<(), PyErr> {
    if status == OK || status == ERROR_DISABLED {
        return Ok(());
    }
    Err(error("refused"))
}

/// The C API's last message on this thread as an exception.
#[cold]
pub fn error(fallback: &str) -> PyErr {
    // SAFETY: no arguments; the result is NUL-terminated, valid until this thread's next call.
    let message = unsafe { CStr::from_ptr((c_api().last_error)()) }
        .to_string_lossy()
        .into_owned();
    MetronError::new_err(if message.is_empty() {
        fallback.to_string()
    } else {
        message
    })
}
