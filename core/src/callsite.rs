//! Static call-site descriptors and the table of them: what a record's id stands for.
//!
//! Every `scope!`, `#[profile]`, `mark!`, `counter!` and `annotate!` expands to a `static`
//! [`Callsite`]. Its id is assigned the first time it runs (a cold, locked registration in the
//! table below) and cached in the descriptor, so the hot path loads one atomic and stores a
//! `u32` into the record, never a string. The back end maps ids back to descriptors with
//! [`resolve`] (or a [`snapshot`] of the whole table).
//!
//! A copy of Metron that joined another copy in the same process (`metron::shared_runtime`)
//! records under the owner's ids: that copy installs a [`Forwarding`] before its first
//! registration, and the table then asks the owner instead of numbering sites itself.

use crate::record::{header, kind};
use metron_components::ComponentInfo;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock, RwLock};

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

    /// The registration, once per site (see [`register`]).
    #[cold]
    #[inline(never)]
    fn register(&'static self) -> u64 {
        register(self)
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

/// Where a copy of Metron that joined another sends its registrations: the owner's table,
/// reached through the process-wide ABI (`metron::shared_runtime`). Installed once, before
/// this copy registers its first site (the joining copy decides its role before `main`).
pub struct Forwarding {
    /// Registers a site with the owner; its header word there.
    pub register: fn(&'static Callsite) -> u64,
    /// The owner's id of a name known only at run time.
    pub intern: fn(&str, CallsiteKind) -> u32,
    /// What the owner knows of an id: its name, kind and number of components.
    pub describe: fn(u32) -> Option<(&'static str, CallsiteKind, usize)>,
}

static FORWARDING: OnceLock<Forwarding> = OnceLock::new();

/// Sends every later registration, interning and resolution to another copy's table. The
/// first call wins; a joined copy never goes back to a table of its own. Sites this copy
/// numbered before (first used before the copy decided to join, e.g. from another constructor
/// of its library that ran before Metron's) are registered with the owner now, so their next
/// records carry the owner's ids.
pub fn forward_to(forwarding: Forwarding) {
    let mut table = TABLE.write().unwrap_or_else(|e| e.into_inner());
    if FORWARDING.set(forwarding).is_err() {
        return;
    }
    let Some(forwarding) = FORWARDING.get() else {
        return;
    };
    for site in table.drain(..) {
        site.set_tagged_word((forwarding.register)(site));
    }
}

static TABLE: RwLock<Vec<&'static Callsite>> = RwLock::new(Vec::new());

/// Registers `site` (its first use) and returns its header word: the next id in this copy's
/// table, or the owner's when registrations are forwarded.
#[cold]
#[inline(never)]
pub fn register(site: &'static Callsite) -> u64 {
    let mut table = TABLE.write().unwrap_or_else(|e| e.into_inner());
    // Another thread may have registered it while we waited for the lock.
    let tagged = site.tagged_word();
    if tagged != 0 {
        return tagged;
    }
    // The lock above keeps two threads from registering it twice with the owner too.
    if let Some(forwarding) = FORWARDING.get() {
        let tagged = (forwarding.register)(site);
        site.set_tagged_word(tagged);
        return tagged;
    }
    table.push(site);
    let tagged = header(table.len() as u32, record_kind_of(site.kind), 0, 0);
    site.set_tagged_word(tagged);
    tagged
}

/// The record kind a call site of `kind` writes first.
fn record_kind_of(site_kind: CallsiteKind) -> u8 {
    match site_kind {
        CallsiteKind::Region => kind::BEGIN,
        CallsiteKind::Instant => kind::INSTANT,
        CallsiteKind::Counter => kind::COUNTER,
        CallsiteKind::AnnotationKey => kind::ANNOTATION,
    }
}

/// The descriptor of `id`, if registered.
pub fn resolve(id: u32) -> Option<&'static Callsite> {
    if let Some(forwarding) = FORWARDING.get() {
        return resolve_forwarded(forwarding, id);
    }
    let table = TABLE.read().unwrap_or_else(|e| e.into_inner());
    id.checked_sub(1)
        .and_then(|i| table.get(i as usize).copied())
}

/// In a copy that joined another: a descriptor of the owner's `id` (its name, kind and, for
/// `components.is_empty()` checks, placeholders for its bundle), made once per id.
fn resolve_forwarded(forwarding: &Forwarding, id: u32) -> Option<&'static Callsite> {
    static KNOWN: Mutex<Option<HashMap<u32, &'static Callsite>>> = Mutex::new(None);
    static PLACEHOLDER: [ComponentInfo; 1] = [ComponentInfo {
        name: "(component of another copy of Metron)",
        description: "",
        cost: "",
        fields: &[],
        active_fields: || &[],
    }];
    let mut known = KNOWN.lock().unwrap_or_else(|e| e.into_inner());
    let known = known.get_or_insert_with(HashMap::new);
    if let Some(site) = known.get(&id) {
        return Some(site);
    }
    let (name, kind, n_components) = (forwarding.describe)(id)?;
    let components: &'static [ComponentInfo] = if n_components == 0 { &[] } else { &PLACEHOLDER };
    let site: &'static Callsite =
        Box::leak(Box::new(Callsite::new(name, "", 0, "", kind, components)));
    site.set_tagged_word(header(id, record_kind_of(kind), 0, 0));
    known.insert(id, site);
    Some(site)
}

/// A copy of the whole table, for the back end to resolve without locking per record.
pub fn snapshot(into: &mut Vec<&'static Callsite>) {
    let table = TABLE.read().unwrap_or_else(|e| e.into_inner());
    into.clear();
    into.extend_from_slice(&table);
}

/// The id of a name known only at run time (C API, bindings), interning it on first use.
/// Equal names of the same kind share one id. Allocates once per distinct name: cache the
/// id on your side for the hot path.
pub fn intern(name: &str, kind: CallsiteKind) -> u32 {
    if let Some(forwarding) = FORWARDING.get() {
        return (forwarding.intern)(name, kind);
    }
    static NAMES: Mutex<Option<HashMap<(String, CallsiteKind), &'static Callsite>>> =
        Mutex::new(None);
    let mut names = NAMES.lock().unwrap_or_else(|e| e.into_inner());
    let names = names.get_or_insert_with(HashMap::new);
    if let Some(site) = names.get(&(name.to_string(), kind)) {
        return site.id();
    }
    let leaked: &'static str = Box::leak(name.to_string().into_boxed_str());
    let site: &'static Callsite = Box::leak(Box::new(Callsite::new(leaked, "", 0, "", kind, &[])));
    names.insert((name.to_string(), kind), site);
    site.id()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_static_callsite_keeps_its_id() {
        static SITE: Callsite = Callsite::new(
            "x",
            file!(),
            line!(),
            module_path!(),
            CallsiteKind::Region,
            &[],
        );
        let id = SITE.id();
        assert_ne!(id, 0);
        assert_eq!(SITE.id(), id);
        assert!(std::ptr::eq(resolve(id).unwrap(), &SITE));
    }

    #[test]
    fn interned_names_are_shared_per_kind() {
        let a = intern("runtime-name", CallsiteKind::Region);
        assert_eq!(intern("runtime-name", CallsiteKind::Region), a);
        assert_ne!(intern("runtime-name", CallsiteKind::Counter), a);
        assert_eq!(resolve(a).unwrap().name, "runtime-name");
    }
}
