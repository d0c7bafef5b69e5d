//! Static call-site descriptors: what a record's id stands for.
//!
//! Every `scope!`, `#[profile]`, `mark!`, `counter!` and `annotate!` expands to a `static`
//! [`Callsite`]. Its id is assigned the first time it runs (a cold, locked registration in
//! `metron::callsite`, which keeps the table) and cached in the descriptor, so the hot path
//! loads one atomic and stores a `u32` into the record, never a string.

use metron_components::ComponentInfo;
use std::sync::atomic::{AtomicU64, Ordering};

/// What a call site records.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CallsiteKind {
    /// A region (scope, profiled function, explicit begin/end).
    Region,
    /// An instant mark.
    Instant,
    /// A named counter.
    Counter,
    /// The key of a region annotation.
    AnnotationKey,
}

/// A call site: what, where, and which bundle it measures.
#[derive(Debug)]
pub struct Callsite {
    /// Region, mark, counter or annotation-key name.
    pub name: &'static str,
    /// Source file (`file!()`), empty for names created at run time.
    pub file: &'static str,
    /// Source line (`line!()`), 0 for names created at run time.
    pub line: u32,
    /// Module path (`module_path!()`), empty for names created at run time.
    pub module: &'static str,
    /// What it records.
    pub kind: CallsiteKind,
    /// The components of its bundle beyond the wall clock of every region (empty: default).
    pub components: &'static [ComponentInfo],
    /// 0 until registered; then the record header of this site's main record kind (its id in
    /// the low 32 bits), so a region begin loads its ready-made header in one instruction.
    tagged: AtomicU64,
}

impl Callsite {
    /// A descriptor for a `static`. Use the macros rather than calling this directly.
    pub const fn new(
        name: &'static str,
        file: &'static str,
        line: u32,
        module: &'static str,
        kind: CallsiteKind,
        components: &'static [ComponentInfo],
    ) -> Callsite {
        Callsite {
            name,
            file,
            line,
            module,
            kind,
            components,
            tagged: AtomicU64::new(0),
        }
    }

    /// The interned id (never 0). One relaxed load after the first call.
    #[inline(always)]
    pub fn id(&'static self) -> u32 {
        self.tagged_header() as u32
    }

    /// The header word of this site's main record (a region's `BEGIN`, a mark's `INSTANT`, ...).
    #[inline(always)]
    pub fn tagged_header(&'static self) -> u64 {
        match self.tagged.load(Ordering::Relaxed) {
            0 => self.register(),
            tagged => tagged,
        }
    }

    /// The registration: the call-site table and the forwarding to another copy of Metron
    /// live in the `metron` crate, above this one, which defines the symbol.
    #[cold]
    #[inline(never)]
    fn register(&'static self) -> u64 {
        extern "Rust" {
            #[link_name = env!("METRON_CALLSITE_SYMBOL")]
            fn register_callsite(site: &'static Callsite) -> u64;
        }
        // SAFETY: `metron` (the crate that uses this one) defines the function with this
        // signature under this name (`metron::callsite`; build.rs makes the name, which
        // fingerprints the build); it takes any registered or unregistered site.
        unsafe { register_callsite(self) }
    }

    /// The raw header word, 0 before registration (for the registration in `metron`).
    #[doc(hidden)]
    pub fn tagged_word(&self) -> u64 {
        self.tagged.load(Ordering::Relaxed)
    }

    /// Sets the header word (the registration in `metron`, under its table's lock).
    #[doc(hidden)]
    pub fn set_tagged_word(&self, tagged: u64) {
        self.tagged.store(tagged, Ordering::Relaxed);
    }
}

/// The registration `metron` provides, for this crate's own unit tests (which link without
/// `metron`): ids in order of first use.
#[cfg(test)]
mod test_registration {
    use super::Callsite;
    use std::sync::Mutex;

    static NEXT: Mutex<u32> = Mutex::new(0);

    #[export_name = env!("METRON_CALLSITE_SYMBOL")]
    fn register_callsite(site: &'static Callsite) -> u64 {
        let mut next = NEXT.lock().unwrap();
        if site.tagged_word() == 0 {
            *next += 1;
            site.set_tagged_word(u64::from(*next) | 1 << 32);
        }
        site.tagged_word()
    }
}
