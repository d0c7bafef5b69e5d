//! Counter names as `perf list` spells them, parsed into `perf_event_attr` type and config.
//!
//! Accepted: the generic hardware events (`cycles`, `instructions`, ...), the software events
//! (`task-clock`, `page-faults`, ...), the cache events `<cache>-<op>[-misses]`
//! (`L1-dcache-load-misses`, `LLC-loads`, `dTLB-store-misses`, ...) and raw events `r<hex>`.
//! A `:u`, `:k` or `:uk` suffix picks the privilege levels counted; without one, hardware,
//! cache and raw events count user space only, software events count everything the kernel
//! does on the thread's behalf (a page fault or a context switch happens in the kernel by
//! definition, so `:u` would count nothing useful for them).

use std::fmt;

/// `PERF_TYPE_HARDWARE`.
pub const TYPE_HARDWARE: u32 = 0;
/// `PERF_TYPE_SOFTWARE`.
pub const TYPE_SOFTWARE: u32 = 1;
/// `PERF_TYPE_HW_CACHE`.
pub const TYPE_HW_CACHE: u32 = 3;
/// `PERF_TYPE_RAW`.
pub const TYPE_RAW: u32 = 4;

/// The generic hardware events, `(name, config)`; aliases follow their main name.
pub const HARDWARE: &[(&str, u64)] = &[
    ("cycles", 0),
    ("cpu-cycles", 0),
    ("instructions", 1),
    ("cache-references", 2),
    ("cache-misses", 3),
    ("branch-instructions", 4),
    ("branches", 4),
    ("branch-misses", 5),
    ("bus-cycles", 6),
    ("stalled-cycles-frontend", 7),
    ("idle-cycles-frontend", 7),
    ("stalled-cycles-backend", 8),
    ("idle-cycles-backend", 8),
    ("ref-cycles", 9),
];

/// The software events, `(name, config)`; aliases follow their main name.
pub const SOFTWARE: &[(&str, u64)] = &[
    ("cpu-clock", 0),
    ("task-clock", 1),
    ("page-faults", 2),
    ("faults", 2),
    ("context-switches", 3),
    ("cs", 3),
    ("cpu-migrations", 4),
    ("migrations", 4),
    ("minor-faults", 5),
    ("major-faults", 6),
    ("alignment-faults", 7),
    ("emulation-faults", 8),
];

/// Cache names of `PERF_TYPE_HW_CACHE`, `(name, id)`.
pub const CACHES: &[(&str, u64)] = &[
    ("L1-dcache", 0),
    ("L1-icache", 1),
    ("LLC", 2),
    ("dTLB", 3),
    ("iTLB", 4),
    ("branch", 5),
    ("node", 6),
];

/// Cache operation and result as perf spells them, `(word, op << 8 | result << 16)`.
const CACHE_OPS: &[(&str, u64)] = &[
    ("loads", 0),
    ("load-misses", 1 << 16),
    ("stores", 1 << 8),
    ("store-misses", 1 << 8 | 1 << 16),
    ("prefetches", 2 << 8),
    ("prefetch-misses", 2 << 8 | 1 << 16),
];

/// Which privilege levels an event counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Privilege {
    /// User space only (`:u`).
    User,
    /// Kernel only (`:k`).
    Kernel,
    /// Both (`:uk`).
    Both,
}

/// One counter, resolved to what `perf_event_open` needs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventSpec {
    /// The name as the user wrote it, without the modifier (outputs use it).
    pub name: String,
    /// `perf_event_attr.type`.
    pub kind: u32,
    /// `perf_event_attr.config`.
    pub config: u64,
    /// Privilege levels counted.
    pub privilege: Privilege,
}

impl EventSpec {
    /// True for events that need a hardware PMU (hardware, cache and raw events).
    pub fn is_hardware(&self) -> bool {
        self.kind != TYPE_SOFTWARE
    }

    /// The kind in words, as `metron avail` shows it.
    pub fn kind_name(&self) -> &'static str {
        match self.kind {
            TYPE_HARDWARE => "hardware",
            TYPE_SOFTWARE => "software",
            TYPE_HW_CACHE => "hw-cache",
            _ => "raw",
        }
    }
}

/// Why an event name was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventError {
    /// The text that did not parse.
    pub input: String,
    /// What is wrong and what is accepted.
    pub reason: String,
}

impl fmt::Display for EventError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unknown counter `{}`: {}", self.input, self.reason)
    }
}

impl std::error::Error for EventError {}

/// What [`parse_event`] accepts, in words.
pub fn accepted() -> String {
    let hw: Vec<&str> = HARDWARE.iter().map(|(n, _)| *n).collect();
    let sw: Vec<&str> = SOFTWARE.iter().map(|(n, _)| *n).collect();
    let caches: Vec<&str> = CACHES.iter().map(|(n, _)| *n).collect();
    format!(
        "hardware events ({}), software events ({}), cache events <cache>-<loads|load-misses|stores|store-misses|prefetches|prefetch-misses> with cache one of {}, raw events r<hex> (e.g. r00c0); optional suffix :u, :k or :uk",
        hw.join(", "),
        sw.join(", "),
        caches.join(", ")
    )
}

/// Parses one event name as `perf` spells it, e.g. `cycles`, `L1-dcache-load-misses:u`, `r01c2`.
pub fn parse_event(input: &str) -> Result<EventSpec, EventError> {
    let text = input.trim();
    let err = |reason: String| EventError {
        input: text.to_string(),
        reason,
    };
    let (name, modifier) = match text.rsplit_once(':') {
        Some((name, m)) => (name, Some(m)),
        None => (text, None),
    };
    if name.is_empty() {
        return Err(err(format!("an empty name; accepted: {}", accepted())));
    }
    let (kind, config) = if let Some(&(_, c)) = HARDWARE.iter().find(|(n, _)| *n == name) {
        (TYPE_HARDWARE, c)
    } else if let Some(&(_, c)) = SOFTWARE.iter().find(|(n, _)| *n == name) {
        (TYPE_SOFTWARE, c)
    } else if let Some(c) = parse_cache(name) {
        (TYPE_HW_CACHE, c)
    } else if let Some(hex) = name.strip_prefix('r').filter(|h| !h.is_empty()) {
        match u64::from_str_radix(hex, 16) {
            Ok(c) => (TYPE_RAW, c),
            Err(_) => {
                return Err(err(format!(
                    "`r` must be followed by a hexadecimal event code (e.g. r00c0); accepted: {}",
                    accepted()
                )))
            }
        }
    } else {
        let known = HARDWARE
            .iter()
            .chain(SOFTWARE)
            .map(|(n, _)| *n)
            .filter(|n| similar(n, name))
            .collect::<Vec<_>>();
        let hint = if known.is_empty() {
            String::new()
        } else {
            format!("did you mean {}? ", known.join(" or "))
        };
        return Err(err(format!("{hint}accepted: {}", accepted())));
    };
    let privilege = match modifier {
        None if kind == TYPE_SOFTWARE => Privilege::Both,
        None => Privilege::User,
        Some("u") => Privilege::User,
        Some("k") => Privilege::Kernel,
        Some("uk") | Some("ku") => Privilege::Both,
        Some(other) => {
            return Err(err(format!(
                "unknown modifier `:{other}`; accepted modifiers: :u (user space), :k (kernel), :uk (both)"
            )))
        }
    };
    Ok(EventSpec {
        name: name.to_string(),
        kind,
        config,
        privilege,
    })
}

/// Parses a comma-separated list; every bad entry is reported, the good ones kept.
pub fn parse_list(list: &str) -> (Vec<EventSpec>, Vec<EventError>) {
    let mut events = Vec::new();
    let mut errors = Vec::new();
    for item in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        match parse_event(item) {
            Ok(e) if events.iter().any(|k: &EventSpec| k.name == e.name) => {}
            Ok(e) => events.push(e),
            Err(e) => errors.push(e),
        }
    }
    (events, errors)
}

/// `L1-dcache-load-misses` → cache | op << 8 | result << 16.
fn parse_cache(name: &str) -> Option<u64> {
    let (cache, rest) = CACHES
        .iter()
        .find_map(|(c, id)| name.strip_prefix(c)?.strip_prefix('-').map(|r| (*id, r)))?;
    let &(_, op_and_result) = CACHE_OPS.iter().find(|(w, _)| *w == rest)?;
    Some(cache | op_and_result)
}

/// A name one edit away (or a prefix): for "did you mean".
fn similar(known: &str, typed: &str) -> bool {
    if known.starts_with(typed) || typed.starts_with(known) {
        return typed.len() >= 3;
    }
    if known.len().abs_diff(typed.len()) > 1 {
        return false;
    }
    let a: Vec<char> = known.chars().collect();
    let b: Vec<char> = typed.chars().collect();
    let (mut i, mut j, mut edits) = (0, 0, 0);
    while i < a.len() && j < b.len() {
        if a[i] == b[j] {
            i += 1;
            j += 1;
            continue;
        }
        edits += 1;
        match a.len().cmp(&b.len()) {
            std::cmp::Ordering::Greater => i += 1,
            std::cmp::Ordering::Less => j += 1,
            std::cmp::Ordering::Equal => {
                i += 1;
                j += 1;
            }
        }
    }
    edits + (a.len() - i) + (b.len() - j) <= 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generic_events_parse_as_perf_spells_them() {
        let e = parse_event("instructions").unwrap();
        assert_eq!(
            (e.kind, e.config, e.privilege),
            (TYPE_HARDWARE, 1, Privilege::User)
        );
        let e = parse_event("task-clock").unwrap();
        assert_eq!(
            (e.kind, e.config, e.privilege),
            (TYPE_SOFTWARE, 1, Privilege::Both)
        );
        let e = parse_event("page-faults:u").unwrap();
        assert_eq!(
            (e.kind, e.config, e.privilege),
            (TYPE_SOFTWARE, 2, Privilege::User)
        );
        let e = parse_event("cycles:uk").unwrap();
        assert_eq!(e.privilege, Privilege::Both);
    }

    #[test]
    fn cache_events_encode_cache_op_and_result() {
        assert_eq!(
            parse_event("L1-dcache-load-misses").unwrap().config,
            0x10000
        );
        assert_eq!(parse_event("L1-dcache-loads").unwrap().config, 0);
        assert_eq!(
            parse_event("LLC-store-misses").unwrap().config,
            2 | 1 << 8 | 1 << 16
        );
        assert_eq!(parse_event("dTLB-prefetches").unwrap().config, 3 | 2 << 8);
        assert_eq!(
            parse_event("branch-load-misses").unwrap().config,
            5 | 1 << 16
        );
        assert!(parse_event("L1-dcache-fetches").is_err());
    }

    #[test]
    fn raw_events_are_hex() {
        let e = parse_event("r01c2").unwrap();
        assert_eq!((e.kind, e.config), (TYPE_RAW, 0x1c2));
        let err = parse_event("rzz").unwrap_err();
        assert!(err.reason.contains("hexadecimal"), "{err}");
    }

    #[test]
    fn unknown_names_say_what_is_accepted_and_suggest() {
        let err = parse_event("instrutions").unwrap_err();
        assert!(
            err.to_string().contains("unknown counter `instrutions`"),
            "{err}"
        );
        assert!(err.reason.contains("did you mean instructions"), "{err}");
        assert!(err.reason.contains("task-clock"), "{err}");
        let err = parse_event("cycles:x").unwrap_err();
        assert!(err.reason.contains(":u (user space)"), "{err}");
    }

    #[test]
    fn lists_keep_good_entries_and_report_bad_ones() {
        let (events, errors) = parse_list("cycles, bogus, task-clock,cycles");
        assert_eq!(
            events.iter().map(|e| e.name.as_str()).collect::<Vec<_>>(),
            ["cycles", "task-clock"]
        );
        assert_eq!(errors.len(), 1);
        assert_eq!(errors[0].input, "bogus");
    }
}
