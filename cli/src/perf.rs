//! The perf_event counters this machine offers, for `metron avail --counters`: the list comes
//! from `metron::info` (each event opened once and closed again); this module says why a
//! whole kind is missing.

use metron::info::{self, InfoItem, InfoKind};

/// Every CPU counter, probed; and the derived metrics with their availability.
pub(crate) fn probe_all() -> (Vec<InfoItem>, Vec<InfoItem>) {
    (
        info::list("cpu", InfoKind::Counter).unwrap_or_default(),
        info::list("cpu", InfoKind::Metric).unwrap_or_default(),
    )
}

/// True for the counters of `kind` as `metron avail` groups them (`software`, or `hardware`
/// which includes the cache events).
pub(crate) fn of_kind(item: &InfoItem, kind: &str) -> bool {
    match kind {
        "software" => item.detail == "software",
        _ => item.detail != "software",
    }
}

/// `/proc/sys/kernel/perf_event_paranoid`, if readable.
pub(crate) fn paranoid() -> Option<i32> {
    std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .ok()
        .and_then(|s| s.trim().parse().ok())
}

/// Why a kind of counter is unavailable, in words; None when some of it works.
pub(crate) fn reason_none(items: &[InfoItem], kind: &str) -> Option<String> {
    let of: Vec<&InfoItem> = items.iter().filter(|i| of_kind(i, kind)).collect();
    if of.iter().any(|i| i.available) {
        return None;
    }
    Some(
        of.first()
            .and_then(|i| i.reason.clone())
            .unwrap_or_else(|| format!("no {kind} counters are known")),
    )
}
