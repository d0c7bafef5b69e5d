//! `tracing` call sites as Metron call sites, interned once per `&'static Metadata`.
//!
//! Every `tracing` call site has one static [`Metadata`]; its address is the key. The first
//! lookup of a call site (normally from `register_callsite`, when `tracing` first sees it)
//! builds a [`Site`]: a leaked Metron [`Callsite`] with the span's or event's name, source file,
//! line and target (as the module), a second one whose name starts with the level (for
//! [`LevelStyle::NamePrefix`](crate::LevelStyle)), and the annotation key ids of its fields.
//! That runs under a lock, once. After that a lookup is lock-free: a hash of the metadata
//! address, then a probe of a fixed open-addressing table of atomic pointers (one acquire load
//! per probe, usually one probe).

use metron::{Callsite, CallsiteKind};
use std::collections::HashMap;
use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::Mutex;
use tracing_core::Metadata;

/// One `tracing` call site, as Metron records it.
pub(crate) struct Site {
    /// The `tracing` metadata this site was built from (the key).
    meta: &'static Metadata<'static>,
    /// Metron id of the region (span) or instant (event), named like the call site.
    pub(crate) id: u32,
    /// Metron id of the same, named `"LEVEL name"`.
    pub(crate) prefixed_id: u32,
    /// Annotation key id of each field, by field index.
    pub(crate) field_keys: Box<[u32]>,
}

impl Site {
    /// The id to record under `style`.
    #[inline(always)]
    pub(crate) fn id_for(&self, prefix: bool) -> u32 {
        if prefix {
            self.prefixed_id
        } else {
            self.id
        }
    }
}

/// Slots of the lock-free table (a power of two); call sites beyond about 3/4 of it go to a
/// locked overflow map.
const CAPACITY: usize = 1 << 13;
/// Longest probe sequence tried before the overflow map.
const MAX_PROBES: usize = CAPACITY / 4 * 3;

static TABLE: [AtomicPtr<Site>; CAPACITY] =
    [const { AtomicPtr::new(std::ptr::null_mut()) }; CAPACITY];
static REGISTER: Mutex<Option<HashMap<usize, &'static Site>>> = Mutex::new(None);

#[inline(always)]
fn key_of(meta: &'static Metadata<'static>) -> usize {
    meta as *const Metadata<'static> as usize
}

#[inline(always)]
fn home(key: usize) -> usize {
    // Fibonacci hashing of the address (its low bits are alignment, its high bits constant).
    (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (usize::BITS - CAPACITY.trailing_zeros()))
        & (CAPACITY - 1)
}

/// The [`Site`] of `meta`, built on first use. Lock-free once built.
#[inline]
pub(crate) fn site(meta: &'static Metadata<'static>) -> &'static Site {
    let key = key_of(meta);
    let mut i = home(key);
    for _ in 0..MAX_PROBES {
        let p = TABLE[i].load(Ordering::Acquire);
        if p.is_null() {
            break;
        }
        // SAFETY: every non-null pointer in the table comes from `Box::leak` in `register`
        // and is never freed or changed after it is published (with release ordering, which
        // the acquire load above pairs with).
        let site = unsafe { &*p };
        if key_of(site.meta) == key {
            return site;
        }
        i = (i + 1) & (CAPACITY - 1);
    }
    register(meta)
}

#[cold]
#[inline(never)]
fn register(meta: &'static Metadata<'static>) -> &'static Site {
    let mut guard = REGISTER.lock().unwrap_or_else(|e| e.into_inner());
    let overflow = guard.get_or_insert_with(HashMap::new);
    let key = key_of(meta);
    if let Some(site) = overflow.get(&key) {
        return site;
    }
    // Look again under the lock: another thread may have published it meanwhile, and the
    // free slot found is the one to fill.
    let mut i = home(key);
    let mut free = None;
    for _ in 0..MAX_PROBES {
        let p = TABLE[i].load(Ordering::Acquire);
        if p.is_null() {
            free = Some(i);
            break;
        }
        // SAFETY: as in `site`: published pointers are leaked and immutable.
        let site = unsafe { &*p };
        if key_of(site.meta) == key {
            return site;
        }
        i = (i + 1) & (CAPACITY - 1);
    }
    let site: &'static Site = Box::leak(Box::new(build(meta)));
    match free {
        Some(slot) => TABLE[slot].store(site as *const Site as *mut Site, Ordering::Release),
        None => {
            overflow.insert(key, site);
        }
    }
    site
}

fn build(meta: &'static Metadata<'static>) -> Site {
    let kind = if meta.is_span() {
        CallsiteKind::Region
    } else {
        CallsiteKind::Instant
    };
    let make = |name: &'static str| -> u32 {
        let site: &'static Callsite = Box::leak(Box::new(Callsite::new(
            name,
            meta.file().unwrap_or(""),
            meta.line().unwrap_or(0),
            meta.target(),
            kind,
            &[],
        )));
        site.id()
    };
    let prefixed: &'static str =
        Box::leak(format!("{} {}", meta.level(), meta.name()).into_boxed_str());
    Site {
        meta,
        id: make(meta.name()),
        prefixed_id: make(prefixed),
        field_keys: meta
            .fields()
            .iter()
            .map(|f| metron::intern(f.name(), CallsiteKind::AnnotationKey))
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tracing_core::callsite::{Callsite as _, Identifier};
    use tracing_core::field::FieldSet;
    use tracing_core::{Kind, Level};

    struct Cs;
    impl tracing_core::callsite::Callsite for Cs {
        fn set_interest(&self, _: tracing_core::Interest) {}
        fn metadata(&self) -> &Metadata<'_> {
            &META
        }
    }
    static CS: Cs = Cs;
    static META: Metadata<'static> = Metadata::new(
        "load",
        "app::io",
        Level::INFO,
        Some("src/io.rs"),
        Some(7),
        Some("app::io"),
        FieldSet::new(&["rows", "path"], Identifier(&CS)),
        Kind::SPAN,
    );

    #[test]
    fn a_call_site_is_interned_once_with_its_source_location_and_fields() {
        let a = site(&META);
        let b = site(CS.metadata());
        assert!(std::ptr::eq(a, b));
        let region = metron::resolve(a.id).unwrap();
        assert_eq!(region.name, "load");
        assert_eq!(region.file, "src/io.rs");
        assert_eq!(region.line, 7);
        assert_eq!(region.module, "app::io");
        assert_eq!(region.kind, CallsiteKind::Region);
        assert_eq!(metron::resolve(a.prefixed_id).unwrap().name, "INFO load");
        let keys: Vec<&str> = a
            .field_keys
            .iter()
            .map(|&k| metron::resolve(k).unwrap().name)
            .collect();
        assert_eq!(keys, ["rows", "path"]);
    }
}
