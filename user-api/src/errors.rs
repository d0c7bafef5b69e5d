//! Status codes, the failures behind them, and their counts (the `c_api` section of
//! `metadata.json`).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Once;

/// `metron_status`: 0 is success. The values are the C header's; never reuse one.
pub type Status = i32;

/// Success.
pub const OK: Status = 0;
/// A required pointer was NULL.
pub const ERROR_NULL_ARGUMENT: Status = 1;
/// An argument was out of range.
pub const ERROR_INVALID_ARGUMENT: Status = 2;
/// An end/pop with no region open on this thread.
pub const ERROR_NO_OPEN_REGION: Status = 3;
/// The end does not match the innermost open region.
pub const ERROR_MISMATCHED_END: Status = 4;
/// `metron_init`: Metron is turned off.
pub const ERROR_DISABLED: Status = 5;
/// `metron_init` with options after Metron already started.
pub const ERROR_ALREADY_STARTED: Status = 6;
/// A call from a signal handler interrupted another Metron call on the same thread.
pub const ERROR_REENTRANT: Status = 7;
/// A panic inside Metron was caught at the boundary.
pub const ERROR_INTERNAL: Status = 8;
/// A begin with `thread_state::MAX_DEPTH` regions already open on the thread.
pub const ERROR_TOO_DEEP: Status = 9;

/// Name in `metadata.json` and one-line description of each status, indexed by value.
pub(crate) const STATUSES: [(&str, &str); 10] = [
    ("ok", "success\0"),
    (
        "null_argument",
        "a required pointer (name, key or annotation array) was NULL\0",
    ),
    (
        "invalid_argument",
        "an argument was out of range (struct_size too small, unknown annotation type)\0",
    ),
    (
        "no_open_region",
        "an end or pop with no region open on this thread (end without begin)\0",
    ),
    (
        "mismatched_end",
        "the end does not match the innermost open region of this thread; nothing was ended\0",
    ),
    (
        "disabled",
        "Metron is turned off (METRON_ENABLED=0 or a forked child with METRON_FORK=disable)\0",
    ),
    (
        "already_started",
        "metron_init options came after Metron had already started; they were not applied\0",
    ),
    (
        "reentrant",
        "a Metron call from a signal handler interrupted another Metron call on this thread\0",
    ),
    (
        "internal",
        "an internal error in Metron was caught at the C boundary; the call did nothing\0",
    ),
    (
        "too_deep",
        "256 regions are already open on this thread (the limit); nothing was begun\0",
    ),
];

/// Description of an unknown status.
pub(crate) const UNKNOWN_STATUS: &str = "unknown metron_status value\0";

static COUNTS: [AtomicU64; 10] = [const { AtomicU64::new(0) }; 10];

/// A failed call: its status and what to tell the user.
pub(crate) struct Failure {
    pub(crate) status: Status,
    pub(crate) message: String,
    /// Already counted and recorded (by a hot-path helper).
    pub(crate) reported: bool,
}

impl Failure {
    pub(crate) fn new(status: Status, message: impl Into<String>) -> Failure {
        Failure {
            status,
            message: message.into(),
            reported: false,
        }
    }

    /// A failure that was already counted and recorded.
    pub(crate) fn reported(status: Status) -> Failure {
        Failure {
            status,
            message: String::new(),
            reported: true,
        }
    }
}

/// Counts a failed call (and starts Metron, so the count reaches `metadata.json`).
#[cold]
pub(crate) fn count(status: Status) {
    if let Some(counter) = COUNTS.get(status as usize) {
        counter.fetch_add(1, Ordering::Relaxed);
    }
    register_metadata();
    metron::init();
}

/// Failed calls so far, by status value.
pub fn counts() -> [u64; 10] {
    std::array::from_fn(|i| COUNTS[i].load(Ordering::Relaxed))
}

/// Adds the `c_api` section to `metadata.json` (once).
pub(crate) fn register_metadata() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        metron::add_metadata_section("c_api", c_api_section);
        metron::add_refusals(c_api_refusals);
    });
}

/// The C API's calls refused by a documented limit, for the run's last stderr line and the
/// summary's header (they are also in the `c_api` section).
fn c_api_refusals() -> Vec<(String, u64)> {
    let counts = counts();
    STATUSES
        .iter()
        .zip(counts)
        .filter(|((name, _), _)| *name == "too_deep")
        .map(|(_, n)| {
            (
                "C API region begins past the nesting limit of 256 open regions, too_deep"
                    .to_string(),
                n,
            )
        })
        .collect()
}

fn c_api_section() -> serde_json::Value {
    let counts = counts();
    let mut errors = serde_json::Map::new();
    for (i, (name, _)) in STATUSES.iter().enumerate().skip(1) {
        errors.insert((*name).to_string(), counts[i].into());
    }
    serde_json::json!({
        "abi_version": crate::ABI_VERSION,
        "errors_total": counts.iter().skip(1).sum::<u64>(),
        "errors": errors,
    })
}
