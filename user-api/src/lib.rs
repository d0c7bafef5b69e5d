//! The C API of Metron: `libmetron.so`, `libmetron.a` and `include/metron/metron.h`.
//!
//! Every export is `#[no_mangle] extern "C"`, runs its body under `catch_unwind`, and returns a
//! documented `metron_status` (see [`errors`]). Misuse from C — a NULL name, an end without a
//! begin, an end that does not match the innermost open region — returns an error code,
//! records nothing, is counted in `metadata.json` (`c_api.errors`), and leaves every thread's
//! data intact: each thread keeps its own stack of open regions ([`thread_state`]), checked
//! before anything reaches the recording layer.
//!
//! Names are interned once per distinct name and cached per thread by content (a 256-entry
//! direct-mapped cache keyed by a hash of the bytes, `thread_state.rs`), so
//! `metron_region_begin("solve")` takes no lock after its first call on a thread.
//!
//! The same library is the `LD_PRELOAD` runtime of `metron run` ([`preload`]), an NVTX v3
//! injection library (`nvtx`: `NVTX_INJECTION64_PATH=libmetron.so`) and a recording, forwarding
//! ROCTx (`roctx`).
//!
//! # Speed
//! `metron_region_begin` + `metron_region_end` through the shared library: see the user guide's Performance chapter (`docs/src/performance.md`)
//! section "C call overhead" (measured next to the Rust `scope!` figure).

use std::ffi::{c_char, c_void, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};

mod amd_tools;
mod boundary;
mod c_words;
mod checked;
mod cuda_injection;
mod dlclose;
pub mod errors;
mod exec;
mod exports_causal;
mod exports_info;
mod exports_instants;
mod exports_process;
mod exports_regions;
mod fast_path;
mod fast_tls;
mod functions_hooks;
mod functions_thread;
mod functions_unwind;
mod ids;
mod mpi;
mod nvtx;
mod preload;
mod quick_exit;
mod roctx;
mod sys;
mod thread_block;
mod thread_state;

use boundary::*;
use checked::*;
use errors::*;
use metron::{by_id, AnnotationValue, CallsiteKind};
use thread_state::{Open, OpenKind, ThreadState};

/// `METRON_ABI_VERSION` of the header this library implements.
pub const ABI_VERSION: u32 = 1;

/// `METRON_INIT_START_STOPPED`.
pub const INIT_START_STOPPED: u32 = 1;

/// `METRON_ANNOTATION_*` values.
pub mod annotation_type {
    /// `value.string`.
    pub const STRING: u32 = 1;
    /// `value.int64`.
    pub const INT64: u32 = 2;
    /// `value.uint64`.
    pub const UINT64: u32 = 3;
    /// `value.float64`.
    pub const DOUBLE: u32 = 4;
    /// `value.pointer`.
    pub const POINTER: u32 = 5;
}

/// `metron_init_args`: grows at the end; callers pass `struct_size`.
#[repr(C)]
pub struct InitArgs {
    /// `sizeof(metron_init_args)` of the caller.
    pub struct_size: u32,
    /// `METRON_INIT_*` bits.
    pub flags: u32,
    /// NULL or the run folder template.
    pub output_path: *const c_char,
}

/// The value of a `metron_annotation`.
#[repr(C)]
#[derive(Clone, Copy)]
pub union AnnotationData {
    /// `METRON_ANNOTATION_STRING`.
    pub string: *const c_char,
    /// `METRON_ANNOTATION_INT64`.
    pub int64: i64,
    /// `METRON_ANNOTATION_UINT64`.
    pub uint64: u64,
    /// `METRON_ANNOTATION_DOUBLE`.
    pub float64: f64,
    /// `METRON_ANNOTATION_POINTER`.
    pub pointer: *const c_void,
}

/// `metron_annotation`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct Annotation {
    /// The key (never NULL).
    pub key: *const c_char,
    /// `METRON_ANNOTATION_*`.
    pub kind: u32,
    /// Zero.
    pub reserved: u32,
    /// The value, as `kind` says.
    pub value: AnnotationData,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pointers_are_shown_in_hex() {
        let mut buf = [0u8; 18];
        assert_eq!(pointer_text(0, &mut buf), "0x0");
        assert_eq!(pointer_text(0xdead_beef, &mut buf), "0xdeadbeef");
        assert_eq!(pointer_text(usize::MAX, &mut buf), "0xffffffffffffffff");
    }

    #[test]
    fn every_status_has_a_nul_terminated_description() {
        for (name, text) in STATUSES {
            assert!(text.ends_with('\0'), "{name}");
        }
        assert_eq!(STATUSES.len(), ERROR_TOO_DEEP as usize + 1);
    }

    #[test]
    fn the_struct_layouts_match_the_header() {
        assert_eq!(std::mem::size_of::<InitArgs>(), 16);
        assert_eq!(std::mem::size_of::<Annotation>(), 24);
        assert_eq!(std::mem::offset_of!(Annotation, value), 16);
    }
}
