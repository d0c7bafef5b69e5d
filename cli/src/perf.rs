//! Which `perf_event_open` counters this machine offers: each event is opened once (this
//! process, any CPU, user space only) and closed again.

use std::ffi::c_int;

/// `perf_event_attr` up to `PERF_ATTR_SIZE_VER0` (64 bytes): all the fields a probe needs.
#[repr(C)]
#[derive(Default)]
struct PerfEventAttr {
    kind: u32,
    size: u32,
    config: u64,
    sample_period: u64,
    sample_type: u64,
    read_format: u64,
    /// Bit 0 `disabled`, bit 5 `exclude_kernel`, bit 6 `exclude_hv`.
    flags: u64,
    wakeup_events: u32,
    bp_type: u32,
    config1: u64,
}

const PERF_TYPE_HARDWARE: u32 = 0;
const PERF_TYPE_SOFTWARE: u32 = 1;
const PERF_FLAG_FD_CLOEXEC: libc::c_ulong = 8;

/// A counter and whether it opened.
pub(crate) struct Probe {
    pub(crate) name: &'static str,
    pub(crate) kind: &'static str,
    /// None when it opened; the error otherwise.
    pub(crate) error: Option<String>,
}

const SOFTWARE: [(&str, u64); 9] = [
    ("cpu-clock", 0),
    ("task-clock", 1),
    ("page-faults", 2),
    ("context-switches", 3),
    ("cpu-migrations", 4),
    ("minor-faults", 5),
    ("major-faults", 6),
    ("alignment-faults", 7),
    ("emulation-faults", 8),
];

const HARDWARE: [(&str, u64); 10] = [
    ("cpu-cycles", 0),
    ("instructions", 1),
    ("cache-references", 2),
    ("cache-misses", 3),
    ("branch-instructions", 4),
    ("branch-misses", 5),
    ("bus-cycles", 6),
    ("stalled-cycles-frontend", 7),
    ("stalled-cycles-backend", 8),
    ("ref-cycles", 9),
];

/// Opens and closes one counter; the errno text on failure.
fn try_open(kind: u32, config: u64) -> Option<String> {
    let attr = PerfEventAttr {
        kind,
        size: std::mem::size_of::<PerfEventAttr>() as u32,
        config,
        flags: 1 | (1 << 5) | (1 << 6),
        ..Default::default()
    };
    // SAFETY: `attr` is a valid, fully initialised perf_event_attr of the size it declares
    // (PERF_ATTR_SIZE_VER0) and lives for the call; pid 0 / cpu -1 / group -1 are valid.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_perf_event_open,
            &attr as *const PerfEventAttr,
            0 as libc::pid_t,
            -1 as c_int,
            -1 as c_int,
            PERF_FLAG_FD_CLOEXEC,
        )
    };
    if fd < 0 {
        let e = std::io::Error::last_os_error();
        return Some(format!(
            "{} ({e})",
            errno_name(e.raw_os_error().unwrap_or(0))
        ));
    }
    // SAFETY: `fd` was just returned by perf_event_open and is closed once.
    unsafe { libc::close(fd as c_int) };
    None
}

fn errno_name(errno: c_int) -> &'static str {
    match errno {
        libc::ENOENT => "ENOENT",
        libc::EOPNOTSUPP => "EOPNOTSUPP",
        libc::EACCES => "EACCES",
        libc::EPERM => "EPERM",
        libc::EINVAL => "EINVAL",
        libc::ENODEV => "ENODEV",
        libc::ENOSYS => "ENOSYS",
        _ => "error",
    }
}

/// Every counter probed, software first.
pub(crate) fn probe_all() -> Vec<Probe> {
    let software = SOFTWARE.iter().map(|(name, config)| Probe {
        name,
        kind: "software",
        error: try_open(PERF_TYPE_SOFTWARE, *config),
    });
    let hardware = HARDWARE.iter().map(|(name, config)| Probe {
        name,
        kind: "hardware",
        error: try_open(PERF_TYPE_HARDWARE, *config),
    });
    software.chain(hardware).collect()
}

/// `/proc/sys/kernel/perf_event_paranoid`, if readable.
pub(crate) fn paranoid() -> Option<i32> {
    std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .ok()
        .and_then(|s| s.trim().parse().ok())
}

/// Why a kind of counter is unavailable, in words; None when some of it works.
pub(crate) fn reason_none(probes: &[Probe], kind: &str) -> Option<String> {
    let of_kind: Vec<&Probe> = probes.iter().filter(|p| p.kind == kind).collect();
    if of_kind.iter().any(|p| p.error.is_none()) {
        return None;
    }
    let first = of_kind
        .first()
        .and_then(|p| p.error.clone())
        .unwrap_or_default();
    let denied = first.starts_with("EACCES") || first.starts_with("EPERM");
    if denied {
        return Some(format!(
            "perf_event_open refused {kind} events: {first}; perf_event_paranoid is {} (lower it, e.g. `sysctl kernel.perf_event_paranoid=1`, or grant CAP_PERFMON)",
            paranoid().map_or("unknown".into(), |p| p.to_string())
        ));
    }
    if kind == "hardware" {
        let pmu = std::path::Path::new("/sys/bus/event_source/devices/cpu").exists();
        return Some(format!(
            "perf_event_open(PERF_TYPE_HARDWARE) fails with {first}{}: this machine exposes no hardware PMU (typical of a VM without a virtual PMU); software events and the other components still work",
            if pmu { "" } else { " and /sys/bus/event_source/devices/cpu is absent" }
        ));
    }
    Some(format!("perf_event_open({kind}) fails with {first}"))
}
