//! Static call-site descriptors, interned once: the type and its table live in
//! `metron-core` ([`metron_core::callsite`]); this module decides this copy's role first, so
//! that a copy of Metron that joined another forwards from its first call (see
//! `shared_runtime::joined`).

pub use metron_core::callsite::{snapshot, Callsite, CallsiteKind};

/// The descriptor of `id`, if registered (in the owner's table when this copy joined another).
pub fn resolve(id: u32) -> Option<&'static Callsite> {
    // Decides this copy's role first, so that a joined copy forwards from its first call.
    let _ = crate::shared_runtime::owner();
    metron_core::callsite::resolve(id)
}

/// The id of a name known only at run time (C API, bindings), interning it on first use.
/// Equal names of the same kind share one id. Allocates once per distinct name: cache the
/// id on your side for the hot path.
pub fn intern(name: &str, kind: CallsiteKind) -> u32 {
    let _ = crate::shared_runtime::owner();
    metron_core::callsite::intern(name, kind)
}
