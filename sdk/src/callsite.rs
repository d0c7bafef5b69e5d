//! Static call-site descriptors, interned once: the type and its table live in
//! `metron-core` ([`metron_core::callsite`]); this module adds what only the runtime knows,
//! the forwarding of a copy of Metron that joined another (see `shared_runtime`).

use crate::shared_runtime::abi::OwnerApi;
use metron_core::callsite::{forward_to, Forwarding};
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

/// The owner copy's functions, once this copy joined it.
static OWNER: std::sync::OnceLock<&'static OwnerApi> = std::sync::OnceLock::new();

/// Sends this copy's registrations to the owner copy's table (called once, while this copy
/// decides to join `owner`, before `main`). The functions read `owner` from [`OWNER`], not
/// from the role being decided.
pub(crate) fn forward_to_owner(owner: &'static OwnerApi) {
    if OWNER.set(owner).is_err() {
        return;
    }
    forward_to(Forwarding {
        register: |site| {
            OWNER
                .get()
                .map_or(0, |o| crate::shared_runtime::register_site(o, site))
        },
        intern: |name, kind| {
            OWNER
                .get()
                .map_or(0, |o| crate::shared_runtime::intern(o, name, kind))
        },
        describe: |id| {
            OWNER
                .get()
                .and_then(|o| crate::shared_runtime::describe(o, id))
        },
    });
}
