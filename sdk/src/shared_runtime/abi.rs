//! The versioned C ABI between copies of Metron in one process: the claim page's layout and
//! the table of functions the owning copy offers the others.
//!
//! Everything that crosses is `#[repr(C)]` and plain data (pointers, lengths, integers), so
//! copies built by different compilers share it. Bump [`ABI_VERSION`] on any change to these
//! types, to the record layout of `crate::record`, or to what a function does. Only the extras
//! marked *same build* pass Rust objects (a `Box<dyn Sink>`, a `fn`), and only between copies
//! whose [`BUILD`] fingerprint (Metron version, rustc, target) is equal.

use crate::record::Slot;
use metron_components::{ComponentInfo, Field, Unit};
use metron_core::CallsiteKind;
use std::ffi::c_void;
use std::sync::atomic::{AtomicU32, AtomicU64};

/// Where the claim page lives: `0x6d65_7472_0000` ("metr"), far from where Linux puts
/// executables (0x55…, 0x400000), the heap and shared objects (0x7f…). Fixed, so that copies
/// that cannot see each other's symbols (a static copy in the executable, another inside a
/// library opened `RTLD_LOCAL`) still find one another.
pub const CLAIM_ADDRESS: usize = 0x6d65_7472_0000;

/// Bytes mapped at [`CLAIM_ADDRESS`].
pub const CLAIM_BYTES: usize = 4096;

/// `ClaimPage::magic` once the page is complete.
pub const MAGIC: u64 = u64::from_le_bytes(*b"METRONrt");

/// Version of this ABI.
pub const ABI_VERSION: u32 = 1;

/// This copy's build: Metron's version, the compiler and the target. Copies with equal
/// fingerprints also share Rust objects (custom sinks, metadata sections).
pub const BUILD: &str = concat!(
    "metron ",
    env!("CARGO_PKG_VERSION"),
    "; ",
    env!("METRON_BUILD_RUSTC"),
    "; ",
    env!("METRON_BUILD_TARGET")
);

/// The claim page. The owner fills every field, then stores `magic` with release ordering;
/// a copy that finds `magic` set may read the rest.
#[repr(C)]
pub struct ClaimPage {
    /// [`MAGIC`] once complete.
    pub magic: AtomicU64,
    /// The owner's [`ABI_VERSION`].
    pub abi_version: u32,
    /// `size_of::<ClaimPage>()` of the owner.
    pub page_bytes: u32,
    /// The process that claimed (differs from `getpid()` in a forked child).
    pub pid: u32,
    /// Copies that joined the owner.
    pub joined: AtomicU32,
    /// The owner's [`BUILD`], NUL-padded.
    pub build: [u8; 192],
    /// The owner's `metron_components::clock::TICK_SOURCE`, NUL-padded: records carry ticks
    /// of the writing copy's clock, so the clocks must be the same.
    pub tick_source: [u8; 32],
    /// The owner's functions.
    pub api: *const OwnerApi,
}

static_assertions::const_assert!(std::mem::size_of::<ClaimPage>() <= CLAIM_BYTES);

// SAFETY: the owner writes the plain fields once, before publishing `magic`; after that they
// are only read, `api` points at a `static` table of functions, and the rest is atomic.
unsafe impl Sync for ClaimPage {}

/// A borrowed UTF-8 string.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct Str {
    /// First byte.
    pub ptr: *const u8,
    /// Length in bytes.
    pub len: usize,
}

impl Str {
    /// Borrows `s`.
    pub fn of(s: &str) -> Str {
        Str {
            ptr: s.as_ptr(),
            len: s.len(),
        }
    }

    /// The string, copied.
    ///
    /// # Safety
    /// `ptr` must point at `len` readable bytes.
    pub unsafe fn to_owned_lossy(self) -> String {
        if self.len == 0 {
            return String::new();
        }
        // SAFETY: the caller guarantees `len` readable bytes at `ptr`.
        let bytes = unsafe { std::slice::from_raw_parts(self.ptr, self.len) };
        String::from_utf8_lossy(bytes).into_owned()
    }
}

/// A field of a component of a call site's bundle.
#[repr(C)]
pub struct FieldDesc {
    /// The field's name as it is in this run.
    pub name: Str,
    /// `Unit` as 0 ns, 1 bytes, 2 count, 3 number.
    pub unit: u8,
}

/// A component of a call site's bundle.
#[repr(C)]
pub struct ComponentDesc {
    /// `ComponentInfo::name`.
    pub name: Str,
    /// `ComponentInfo::description`.
    pub description: Str,
    /// `ComponentInfo::cost`.
    pub cost: Str,
    /// Its fields, named as in this run.
    pub fields: *const FieldDesc,
    /// How many.
    pub n_fields: usize,
}

/// A call site to register with the owner.
#[repr(C)]
pub struct SiteDesc {
    /// Name.
    pub name: Str,
    /// Source file.
    pub file: Str,
    /// Module path.
    pub module: Str,
    /// Source line.
    pub line: u32,
    /// `CallsiteKind` as 0 region, 1 instant, 2 counter, 3 annotation key.
    pub kind: u8,
    /// The bundle's components.
    pub components: *const ComponentDesc,
    /// How many.
    pub n_components: usize,
}

/// What the owner knows of a call site id.
#[repr(C)]
pub struct SiteOut {
    /// Its name, in the owner's memory (which is never unloaded).
    pub name: Str,
    /// As in [`SiteDesc::kind`].
    pub kind: u8,
    /// Components of its bundle.
    pub n_components: usize,
}

/// A caller's buffer for text the owner returns.
#[repr(C)]
pub struct TextOut {
    /// Where to write.
    pub buf: *mut u8,
    /// Its size.
    pub cap: usize,
    /// Bytes written (at most `cap`; the text is cut there).
    pub len: usize,
}

impl TextOut {
    /// Copies `text` in, cut to the buffer.
    ///
    /// # Safety
    /// `buf` must be writable for `cap` bytes.
    pub unsafe fn put(&mut self, text: &str) {
        let n = text.len().min(self.cap);
        // SAFETY: the caller guarantees `cap` writable bytes; `n <= cap`.
        unsafe { std::ptr::copy_nonoverlapping(text.as_ptr(), self.buf, n) };
        self.len = n;
    }
}

/// What the owner's `finish` reports.
#[repr(C)]
pub struct FinishOut {
    /// Records written over all threads.
    pub written: u64,
    /// Records dropped over all threads.
    pub dropped: u64,
    /// The run folder, then each file written, one per line.
    pub text: TextOut,
}

/// The owner's functions. None unwinds.
#[repr(C)]
pub struct OwnerApi {
    /// `size_of::<OwnerApi>()`, for copies that know a longer table.
    pub size: usize,
    /// Registers a call site; returns its header word (`Callsite::tagged_header`).
    pub register_site: unsafe extern "C" fn(*const SiteDesc) -> u64,
    /// Describes call site `id`; false if unknown.
    pub describe: unsafe extern "C" fn(u32, *mut SiteOut) -> bool,
    /// `crate::intern`.
    pub intern: unsafe extern "C" fn(Str, u8) -> u32,
    /// Writes one slot record on the calling thread: (ticks, header, drop weight, ends a
    /// region). A record that does not end a region is refused while recording is off.
    pub write: extern "C" fn(u64, u64, u64, bool) -> bool,
    /// Writes an `n`-slot record (`n <= 255`) on the calling thread, as `write`.
    pub write_slots: unsafe extern "C" fn(*const Slot, usize, u64, bool) -> bool,
    /// `crate::pause_thread`.
    pub pause_thread: extern "C" fn(),
    /// `crate::resume_thread`.
    pub resume_thread: extern "C" fn(),
    /// `crate::thread_paused`.
    pub thread_paused: extern "C" fn() -> bool,
    /// `crate::collecting` (starts the owner's runtime if needed).
    pub collecting: extern "C" fn() -> bool,
    /// `crate::set_collecting`.
    pub set_collecting: extern "C" fn(bool),
    /// Notes that the run is used (a copy recorded or called `init`).
    pub mark_used: extern "C" fn(),
    /// `crate::flush`.
    pub flush: extern "C" fn(),
    /// `crate::finish`; false when the run had already finished.
    pub finish: unsafe extern "C" fn(*mut FinishOut) -> bool,
    /// `crate::set_output_path`: the folder, or the error, into the text.
    pub set_output_path: unsafe extern "C" fn(Str, *mut TextOut) -> bool,
    /// *Same build*: `crate::add_sink` of a `*mut Box<dyn Sink>` from `Box::into_raw`.
    pub add_sink: unsafe extern "C" fn(*mut c_void),
    /// *Same build*: `crate::add_metadata_section` of a `*const (&'static str, fn() -> Value)`.
    pub add_section: unsafe extern "C" fn(*const c_void),
}

/// [`CallsiteKind`] as it crosses.
pub fn kind_code(kind: CallsiteKind) -> u8 {
    match kind {
        CallsiteKind::Region => 0,
        CallsiteKind::Instant => 1,
        CallsiteKind::Counter => 2,
        CallsiteKind::AnnotationKey => 3,
    }
}

/// The [`CallsiteKind`] of `code` (an unknown code is a region).
pub fn kind_of(code: u8) -> CallsiteKind {
    match code {
        1 => CallsiteKind::Instant,
        2 => CallsiteKind::Counter,
        3 => CallsiteKind::AnnotationKey,
        _ => CallsiteKind::Region,
    }
}

/// [`Unit`] as it crosses.
pub fn unit_code(unit: Unit) -> u8 {
    match unit {
        Unit::Nanoseconds => 0,
        Unit::Bytes => 1,
        Unit::Count => 2,
        Unit::Number => 3,
    }
}

/// The [`Unit`] of `code`.
pub fn unit_of(code: u8) -> Unit {
    match code {
        0 => Unit::Nanoseconds,
        1 => Unit::Bytes,
        2 => Unit::Count,
        _ => Unit::Number,
    }
}

/// The fields a rebuilt [`ComponentInfo`] reports as active: none, so that
/// [`ComponentInfo::named_fields`] gives its `fields`, which already carry the run's names.
fn no_active_fields() -> &'static [Field] {
    &[]
}

/// Rebuilds `desc` as a leaked [`ComponentInfo`] of this copy.
///
/// # Safety
/// Every pointer in `desc` must be valid for its length.
pub unsafe fn component_from(desc: &ComponentDesc) -> ComponentInfo {
    let leak = |s: Str| -> &'static str {
        // SAFETY: guaranteed by the caller.
        Box::leak(unsafe { s.to_owned_lossy() }.into_boxed_str())
    };
    let fields: &[FieldDesc] = if desc.n_fields == 0 {
        &[]
    } else {
        // SAFETY: guaranteed by the caller.
        unsafe { std::slice::from_raw_parts(desc.fields, desc.n_fields) }
    };
    let fields: Vec<Field> = fields
        .iter()
        .map(|f| Field::new(leak(f.name), unit_of(f.unit)))
        .collect();
    ComponentInfo {
        name: leak(desc.name),
        description: leak(desc.description),
        cost: leak(desc.cost),
        fields: Box::leak(fields.into_boxed_slice()),
        active_fields: no_active_fields,
    }
}

/// Copies a whole record into the owner's buffer of the calling thread (`write_slots`).
pub(crate) fn write_slots(
    api: &OwnerApi,
    slots: &[Slot],
    drop_weight: u64,
    ends_region: bool,
) -> bool {
    // SAFETY: `slots` is valid for its length during the call.
    unsafe { (api.write_slots)(slots.as_ptr(), slots.len(), drop_weight, ends_region) }
}
