//! One runtime per process, however many copies of Metron it holds.
//!
//! A process may carry several copies of this crate: a Rust program's own, the `libmetron.so`
//! that `metron run` preloads, a `libmetron.a` linked into the executable or into each of two
//! libraries. Each copy has its own statics, so without care each would start a runtime, and
//! the last to write the run folder would overwrite the others.
//!
//! The first copy to start *claims* the process: it maps a page at the fixed address
//! [`abi::CLAIM_ADDRESS`] (`MAP_FIXED_NOREPLACE`, which fails for everyone after the first)
//! and publishes there its ABI version, its build and a table of `extern "C"` functions
//! ([`abi::OwnerApi`]). Every later copy finds the page and, when the ABI version and clock
//! agree, *joins*: it starts no runtime, reads no settings, and sends what it records to the
//! owner through that table — same buffers, same clock, same call-site table, same outputs.
//! A copy whose ABI differs refuses clearly (one stderr line, `metadata.json` `runtime`) and
//! records separately into its own run folder, which never overwrites the owner's.
//!
//! Cost: nothing on the owner's hot path. A joined copy's records take its cold path (its
//! thread buffers are never attached) and one indirect call into the owner.
//!
//! Copies are pinned in memory (`RTLD_NODELETE`) once they own or join, since the others hold
//! pointers into them.

pub mod abi;
pub(crate) mod joined;
pub(crate) mod serving;
mod sys;

use abi::{ClaimPage, OwnerApi, ABI_VERSION, BUILD, CLAIM_ADDRESS, CLAIM_BYTES, MAGIC};
use std::sync::atomic::Ordering;
use std::sync::OnceLock;

/// How this copy of Metron takes part in the process.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ProcessRuntime {
    /// This copy runs the process's runtime (it started first). `shared` is false when the
    /// claim could not be made (an old kernel): then other copies cannot find it either.
    Owner {
        /// Whether other copies can join.
        shared: bool,
    },
    /// This copy records into the runtime of another copy.
    Joined {
        /// The owner's build (Metron version, compiler, target).
        owner_build: String,
    },
    /// Another copy owns the process but cannot be joined: this copy runs its own runtime
    /// and writes its own run folder.
    Separate {
        /// Why it could not join.
        reason: String,
    },
}

enum Role {
    /// This copy owns the process; the page it claimed.
    Owner(&'static ClaimPage),
    /// This copy runs its runtime without a claim (why): others cannot find it.
    Unclaimed(String),
    Joined(&'static ClaimPage, &'static OwnerApi),
    Separate(String),
}

static ROLE: OnceLock<Role> = OnceLock::new();

/// The table this copy publishes when it claims the process: its functions run this copy's
/// runtime, above this module, so the lifecycle layer lends it ([`serve`]) from Metron's first
/// constructor, before anything decides the role.
static SERVED: OnceLock<&'static OwnerApi> = OnceLock::new();

/// Lends the table other copies call when this copy owns the process (`serving::API`).
/// Allocation-free; the first call counts.
pub(crate) fn serve(api: &'static OwnerApi) {
    let _ = SERVED.set(api);
}

fn role() -> &'static Role {
    ROLE.get_or_init(decide)
}

/// This copy's part in the process (decided at its first use, before `main` normally).
pub fn process_runtime() -> ProcessRuntime {
    match role() {
        Role::Owner(_) => ProcessRuntime::Owner { shared: true },
        Role::Unclaimed(_) => ProcessRuntime::Owner { shared: false },
        Role::Joined(page, _) => ProcessRuntime::Joined {
            owner_build: text_of(&page.build),
        },
        Role::Separate(reason) => ProcessRuntime::Separate {
            reason: reason.clone(),
        },
    }
}

/// The owner's functions when this copy joined another; `None` when it runs a runtime itself.
#[inline]
pub(crate) fn owner() -> Option<&'static OwnerApi> {
    match role() {
        Role::Joined(_, api) => Some(api),
        _ => None,
    }
}

/// The owner's functions that pass Rust objects: only between copies of the same build.
pub(crate) fn same_build_owner() -> Option<&'static OwnerApi> {
    match role() {
        Role::Joined(page, api) if text_of(&page.build) == BUILD => Some(api),
        _ => None,
    }
}

/// Why this copy records separately, if it does.
pub(crate) fn separate_reason() -> Option<&'static str> {
    match role() {
        Role::Separate(reason) => Some(reason),
        _ => None,
    }
}

/// `metadata.json` → `runtime`: who owns the process and how many copies joined.
pub(crate) fn metadata() -> serde_json::Value {
    let copies_joined = match role() {
        Role::Owner(page) => page.joined.load(Ordering::Relaxed),
        _ => 0,
    };
    let (role, note) = match role() {
        Role::Owner(_) => ("owner", None),
        Role::Unclaimed(why) => ("owner", Some(why.as_str())),
        Role::Joined(..) => ("joined", None),
        Role::Separate(reason) => ("separate", Some(reason.as_str())),
    };
    serde_json::json!({
        "role": role,
        "build": BUILD,
        "abi_version": ABI_VERSION,
        "copies_joined": copies_joined,
        "note": note,
    })
}

fn text_of(bytes: &[u8]) -> String {
    let len = bytes.iter().position(|b| *b == 0).unwrap_or(bytes.len());
    String::from_utf8_lossy(&bytes[..len]).into_owned()
}

fn put_text(into: &mut [u8], text: &str) {
    let n = text.len().min(into.len() - 1);
    into[..n].copy_from_slice(&text.as_bytes()[..n]);
}

/// How long a copy waits for a page another copy mapped but has not filled yet (it fills it
/// right after mapping, so this is only ever a few microseconds).
const FILL_WAIT: std::time::Duration = std::time::Duration::from_millis(200);

fn decide() -> Role {
    let Some(served) = SERVED.get().copied() else {
        // Asked before Metron's first constructor ran (a constructor of priority below 100):
        // with no table to publish this copy can join, not own.
        return if claim_page_present() {
            join()
        } else {
            Role::Unclaimed(
                "the process was asked for its runtime before Metron's first constructor ran: other copies of Metron cannot join this one".into(),
            )
        };
    };
    let role = match sys::map_fixed_noreplace(CLAIM_ADDRESS, CLAIM_BYTES) {
        sys::Mapped::Ours(page) => {
            // SAFETY: `page` is a fresh, zero-filled, writable mapping of CLAIM_BYTES bytes,
            // page-aligned, which nothing else references until `magic` is published below.
            let page = unsafe { &mut *(page as *mut ClaimPage) };
            page.abi_version = ABI_VERSION;
            page.page_bytes = std::mem::size_of::<ClaimPage>() as u32;
            page.pid = std::process::id();
            put_text(&mut page.build, BUILD);
            put_text(&mut page.tick_source, metron_components::clock::TICK_SOURCE);
            page.api = served;
            page.magic.store(MAGIC, Ordering::Release);
            Role::Owner(page)
        }
        // A kernel (or valgrind) that takes the address as a hint maps elsewhere when the
        // address is taken: by another copy's claim, which is then joined like any other.
        sys::Mapped::Unsupported(why) if claim_page_present() => match join() {
            Role::Separate(reason) => Role::Separate(format!("{reason} ({why})")),
            joined => joined,
        },
        sys::Mapped::Unsupported(why) => Role::Unclaimed(format!(
            "the process could not be claimed ({why}): other copies of Metron cannot join this one"
        )),
        sys::Mapped::Taken => join(),
    };
    if !matches!(role, Role::Unclaimed(_)) {
        sys::pin_shared_object_of(decide as *const std::ffi::c_void);
    }
    role
}

/// True when a complete claim page is at [`CLAIM_ADDRESS`].
fn claim_page_present() -> bool {
    let mut magic = [0u8; 8];
    sys::read_bytes(CLAIM_ADDRESS, &mut magic) && u64::from_le_bytes(magic) == MAGIC
}

/// Joins the copy whose page is at [`CLAIM_ADDRESS`], or says why not.
fn join() -> Role {
    let started = std::time::Instant::now();
    let mut magic = [0u8; 8];
    loop {
        if !sys::read_bytes(CLAIM_ADDRESS, &mut magic) {
            return Role::Separate(format!(
                "the claim address {CLAIM_ADDRESS:#x} is mapped but not readable"
            ));
        }
        match u64::from_le_bytes(magic) {
            MAGIC => break,
            0 if started.elapsed() < FILL_WAIT => std::thread::yield_now(),
            _ => {
                return Role::Separate(format!(
                    "the claim address {CLAIM_ADDRESS:#x} holds something that is not Metron's"
                ))
            }
        }
    }
    // SAFETY: the page is readable (checked above), at least a ClaimPage long (CLAIM_BYTES),
    // and an owner never unmaps it; `magic` was published with release ordering after every
    // other field, and the acquire load below orders our reads after it.
    let page = unsafe { &*(CLAIM_ADDRESS as *const ClaimPage) };
    page.magic.load(Ordering::Acquire);
    let owner_build = text_of(&page.build);
    if page.abi_version != ABI_VERSION {
        return Role::Separate(format!(
            "another Metron ({owner_build}) owns this process with ABI version {}; this copy ({BUILD}) has ABI version {ABI_VERSION}",
            page.abi_version
        ));
    }
    let tick_source = text_of(&page.tick_source);
    if tick_source != metron_components::clock::TICK_SOURCE {
        return Role::Separate(format!(
            "another Metron ({owner_build}) owns this process with tick source {tick_source}; this copy reads {}",
            metron_components::clock::TICK_SOURCE
        ));
    }
    // SAFETY: same ABI version: `api` points at the owner's static table of this layout.
    let api = unsafe { &*page.api };
    if api.size < std::mem::size_of::<OwnerApi>() {
        return Role::Separate(format!(
            "another Metron ({owner_build}) owns this process with a shorter function table"
        ));
    }
    page.joined.fetch_add(1, Ordering::Relaxed);
    // From now on this copy's call sites are numbered by the owner.
    joined::forward_call_sites(api);
    Role::Joined(page, api)
}
