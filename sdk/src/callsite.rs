//! Static call-site descriptors, interned once.
//!
//! Every `scope!`, `#[profile]`, `mark!`, `counter!` and `annotate!` expands to a `static`
//! [`Callsite`]. Its id is assigned the first time it runs (a cold, locked registration) and
//! cached in the descriptor, so the hot path loads one atomic and stores a `u32` into the
//! record — never a string. The flusher maps ids back to descriptors with [`resolve`].

use crate::record::{header, kind};
use metron_components::ComponentInfo;
use std::collections::HashMap;
use std::sync::{Mutex, RwLock};

pub use metron_sinks::callsite::{Callsite, CallsiteKind};

/// Registers `site` (its first use): called by [`Callsite::tagged_header`] through the symbol
/// `metron_sinks::callsite` declares, since the table and the forwarding to another copy of
/// Metron live here, above the crate that defines the type. The symbol's name carries a
/// fingerprint of the version, compiler and target (metron-sinks' `build.rs`), so two copies of
/// Metron built differently in one process never bind to each other's.
#[export_name = env!("METRON_CALLSITE_SYMBOL")]
#[cold]
#[inline(never)]
pub fn register_callsite(site: &'static Callsite) -> u64 {
    let mut table = TABLE.write().unwrap_or_else(|e| e.into_inner());
    // Another thread may have registered it while we waited for the lock.
    let tagged = site.tagged_word();
    if tagged != 0 {
        return tagged;
    }
    // A copy of Metron that joined another records under the owner's ids (see
    // `shared_runtime`); the lock above keeps two threads from registering it twice.
    if let Some(owner) = crate::shared_runtime::owner() {
        let tagged = crate::shared_runtime::register_site(owner, site);
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

static TABLE: RwLock<Vec<&'static Callsite>> = RwLock::new(Vec::new());

/// The descriptor of `id`, if registered.
pub fn resolve(id: u32) -> Option<&'static Callsite> {
    if let Some(owner) = crate::shared_runtime::owner() {
        return resolve_at_owner(owner, id);
    }
    let table = TABLE.read().unwrap_or_else(|e| e.into_inner());
    id.checked_sub(1)
        .and_then(|i| table.get(i as usize).copied())
}

/// In a copy that joined another: a descriptor of the owner's `id` (its name, kind and, for
/// `components.is_empty()` checks, placeholders for its bundle), made once per id.
fn resolve_at_owner(
    owner: &crate::shared_runtime::abi::OwnerApi,
    id: u32,
) -> Option<&'static Callsite> {
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
    let (name, kind, n_components) = crate::shared_runtime::describe(owner, id)?;
    let components: &'static [ComponentInfo] = if n_components == 0 { &[] } else { &PLACEHOLDER };
    let site: &'static Callsite =
        Box::leak(Box::new(Callsite::new(name, "", 0, "", kind, components)));
    site.set_tagged_word(header(id, record_kind_of(kind), 0, 0));
    known.insert(id, site);
    Some(site)
}

/// A copy of the whole table, for the flusher to resolve without locking per record.
pub(crate) fn snapshot(into: &mut Vec<&'static Callsite>) {
    let table = TABLE.read().unwrap_or_else(|e| e.into_inner());
    into.clear();
    into.extend_from_slice(&table);
}

/// The id of a name known only at run time (C API, bindings), interning it on first use.
/// Equal names of the same kind share one id. Allocates once per distinct name: cache the
/// id on your side for the hot path.
pub fn intern(name: &str, kind: CallsiteKind) -> u32 {
    if let Some(owner) = crate::shared_runtime::owner() {
        return crate::shared_runtime::intern(owner, name, kind);
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
