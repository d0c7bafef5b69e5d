//! What the C API keeps per thread: a name → id cache, the stack of open regions, and the last
//! error message.
//!
//! The cache is what keeps the global intern lock off the hot path: C names are usually string
//! literals, so the name's address is a good key. A hit is confirmed by comparing the bytes of
//! the name with the interned one (a reused buffer holding another name misses and goes to
//! the interner, which takes the lock once per distinct name and thread).
//!
//! The stack is how the C API detects an end without a begin and an end that does not match
//! the innermost open region, before anything reaches the recording layer: such a call returns
//! an error and records nothing, so the thread's trace stays balanced.

use metron::by_id::ThreadBuffer;
use metron::CallsiteKind;
use std::cell::RefCell;
use std::ffi::{c_char, CStr};

/// Entries of the per-thread name cache (direct-mapped).
const CACHE_ENTRIES: usize = 64;

#[derive(Clone, Copy)]
struct Entry {
    /// The address of the C string last seen with this slot's name; 0 when empty.
    ptr: usize,
    kind: u8,
    id: u32,
    /// The interned name, for the content check.
    name: &'static [u8],
}

const EMPTY: Entry = Entry {
    ptr: 0,
    kind: 0,
    id: 0,
    name: &[],
};

/// Which call opened a region; the matching end must be of the same kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum OpenKind {
    /// `metron_region_begin`.
    Region,
    /// `metron_perf_marker_begin`.
    Marker,
    /// `metron_push`.
    Push,
}

impl OpenKind {
    pub(crate) fn begun_with(self) -> &'static str {
        match self {
            OpenKind::Region => "metron_region_begin",
            OpenKind::Marker => "metron_perf_marker_begin",
            OpenKind::Push => "metron_push",
        }
    }
}

/// A region open on this thread.
#[derive(Clone, Copy)]
pub(crate) struct Open {
    pub(crate) id: u32,
    pub(crate) kind: OpenKind,
    /// False when the begin was not recorded (collection off, thread paused, record dropped):
    /// then no end record is written either.
    pub(crate) recorded: bool,
    /// Begun by id (`metron_region_begin_id`): `name` is empty and the name is looked up
    /// from `id` only when needed (an end by name, an error message).
    pub(crate) by_id: bool,
    pub(crate) name: &'static [u8],
}

/// How many regions may be open at once on one thread.
pub(crate) const MAX_DEPTH: usize = 256;
/// Bytes kept of the last error message, NUL included.
const ERROR_BYTES: usize = 512;

const CLOSED: Open = Open {
    id: 0,
    kind: OpenKind::Region,
    recorded: false,
    by_id: false,
    name: &[],
};

/// Fixed-size, with no destructor: the thread-local needs no lazy registration, and the hot
/// path never allocates.
pub(crate) struct ThreadState {
    cache: [Entry; CACHE_ENTRIES],
    stack: [Open; MAX_DEPTH],
    depth: usize,
    /// The thread's record buffer, looked up on first use (saves the sdk's thread-local
    /// access on every begin and end).
    buffer: Option<ThreadBuffer>,
    /// NUL-terminated message of the last failed call (empty string when none).
    last_error: [u8; ERROR_BYTES],
}

thread_local! {
    static STATE: RefCell<ThreadState> = const {
        RefCell::new(ThreadState {
            cache: [EMPTY; CACHE_ENTRIES],
            stack: [CLOSED; MAX_DEPTH],
            depth: 0,
            buffer: None,
            last_error: [0; ERROR_BYTES],
        })
    };
}

/// Runs `f` with this thread's state; `None` when the state is already in use (a signal
/// handler interrupted a Metron call on this thread) or the thread is exiting.
#[inline(always)]
pub(crate) fn with<R>(f: impl FnOnce(&mut ThreadState) -> R) -> Option<R> {
    STATE
        .try_with(|cell| cell.try_borrow_mut().ok().map(|mut st| f(&mut st)))
        .ok()
        .flatten()
}

fn kind_code(kind: CallsiteKind) -> u8 {
    match kind {
        CallsiteKind::Region => 0,
        CallsiteKind::Instant => 1,
        CallsiteKind::Counter => 2,
        CallsiteKind::AnnotationKey => 3,
    }
}

/// True when the NUL-terminated string at `ptr` is exactly `name`.
///
/// # Safety
/// `ptr` must point to a NUL-terminated string. Bytes are read only up to the first one that
/// differs from `name` (a shorter string differs at its NUL), so nothing past the terminator
/// is read.
#[inline]
pub(crate) unsafe fn same_name(ptr: *const c_char, name: &[u8]) -> bool {
    let ptr = ptr.cast::<u8>();
    let mut i = 0;
    while i < name.len() {
        // SAFETY: every byte before index `i` matched a non-NUL byte of `name`, so the string
        // is at least `i + 1` bytes long including its terminator.
        if unsafe { *ptr.add(i) } != name[i] {
            return false;
        }
        i += 1;
    }
    // SAFETY: as above, with `i = name.len()`.
    unsafe { *ptr.add(i) == 0 }
}

impl ThreadState {
    /// The interned id and name of the non-NULL C string `name`.
    ///
    /// # Safety
    /// `name` must be a valid NUL-terminated string.
    #[inline]
    pub(crate) unsafe fn lookup(
        &mut self,
        name: *const c_char,
        kind: CallsiteKind,
    ) -> (u32, &'static [u8]) {
        let ptr = name as usize;
        let code = kind_code(kind);
        let slot = ((ptr >> 3) ^ (ptr >> 11) ^ code as usize) % CACHE_ENTRIES;
        let entry = self.cache[slot];
        // SAFETY: the caller guarantees `name` is NUL-terminated.
        if entry.ptr == ptr && entry.kind == code && unsafe { same_name(name, entry.name) } {
            return (entry.id, entry.name);
        }
        // SAFETY: as above.
        let (id, interned) = unsafe { intern_slow(name, kind) };
        self.cache[slot] = Entry {
            ptr,
            kind: code,
            id,
            name: interned,
        };
        (id, interned)
    }

    /// This thread's record buffer.
    #[inline(always)]
    pub(crate) fn buffer(&mut self) -> ThreadBuffer {
        *self.buffer.get_or_insert_with(ThreadBuffer::current)
    }

    /// The innermost open region.
    #[inline(always)]
    pub(crate) fn top(&self) -> Option<Open> {
        self.depth.checked_sub(1).map(|i| self.stack[i])
    }

    /// True when [`MAX_DEPTH`] regions are open.
    #[inline(always)]
    pub(crate) fn is_full(&self) -> bool {
        self.depth == MAX_DEPTH
    }

    /// Opens a region; false when [`MAX_DEPTH`] regions are already open.
    #[inline(always)]
    pub(crate) fn push(&mut self, open: Open) -> bool {
        match self.stack.get_mut(self.depth) {
            Some(slot) => {
                *slot = open;
                self.depth += 1;
                // METRON_GPU_COUNTER_MODE=region: the outermost GPU-counted region opens a
                // CUPTI user range (two relaxed loads when off).
                if metron_gpu::c_region_mode() {
                    metron_gpu::c_region_begin(self.depth);
                }
                true
            }
            None => false,
        }
    }

    /// Closes the innermost region.
    #[inline(always)]
    pub(crate) fn pop(&mut self) {
        // Region mode: the range closes and its values annotate the region (still open: the
        // callers end it in the record buffer after this).
        if metron_gpu::c_region_mode() {
            metron_gpu::c_region_end(self.depth);
        }
        self.depth = self.depth.saturating_sub(1);
    }

    /// Remembers `message` as this thread's last error (cut to fit, at a character boundary).
    pub(crate) fn set_error(&mut self, message: &str) {
        let mut len = message.len().min(ERROR_BYTES - 1);
        while !message.is_char_boundary(len) {
            len -= 1;
        }
        for (dst, src) in self
            .last_error
            .iter_mut()
            .zip(message.as_bytes()[..len].iter())
        {
            *dst = if *src == 0 { b' ' } else { *src };
        }
        self.last_error[len] = 0;
    }

    /// The last error, NUL-terminated (static storage of this thread).
    pub(crate) fn last_error(&self) -> *const c_char {
        self.last_error.as_ptr().cast()
    }
}

/// The interned id of `name` as a region, for `metron_region_id` (takes the global lock:
/// callers keep the id).
///
/// # Safety
/// `name` must be a valid NUL-terminated string.
pub(crate) unsafe fn intern_region(name: *const c_char) -> u32 {
    // SAFETY: forwarded contract.
    unsafe { intern_slow(name, CallsiteKind::Region) }.0
}

/// Interns a name seen for the first time on this thread (cold: takes the global lock).
///
/// # Safety
/// `name` must be a valid NUL-terminated string.
#[cold]
#[inline(never)]
unsafe fn intern_slow(name: *const c_char, kind: CallsiteKind) -> (u32, &'static [u8]) {
    crate::errors::register_metadata();
    // SAFETY: the caller guarantees a valid NUL-terminated string.
    let text = unsafe { CStr::from_ptr(name) }.to_string_lossy();
    let id = metron::intern(&text, kind);
    if kind == CallsiteKind::Region {
        crate::ids::mark_region(id);
    }
    let interned = metron::resolve(id).map_or(&[][..], |site| site.name.as_bytes());
    (id, interned)
}
