//! [`PerfCounters`]: a `perf_event_open` counter group per thread, read at region start and
//! stop (deltas) and in samples (absolute values).
//!
//! Which events are counted is decided once per process by [`configure`] (the Metron runtime
//! calls it at start from `METRON_PERF_EVENTS` and `METRON_METRICS`), or by
//! [`configure_deferred`] for the default events that nobody asked for (probed when the
//! component is first used); a component used before either configures itself from
//! `METRON_PERF_EVENTS` alone. Each event is probed when it is configured: one that the kernel
//! refuses is left out with its reason
//! ([`PerfConfig::unavailable`]) and the others are counted, so a machine without a hardware
//! PMU still gets its software events.
//!
//! All events of a thread form one group: the kernel schedules them together, and one `read`
//! of the leader returns them all with the group's enabled and running times. When the kernel
//! multiplexes (more hardware events than counters), values are scaled by
//! `time_enabled / time_running` and the fraction of the region the group was really counting
//! is reported as the `running_fraction` field (1 means no multiplexing).

pub mod events;

use crate::{sys, Component, Field, Unit};
use events::{EventSpec, Privilege};
use std::cell::Cell;
use std::sync::OnceLock;

pub use events::{parse_event, parse_list, EventError};

/// Most events one [`PerfCounters`] group counts.
pub const MAX_PERF_EVENTS: usize = 8;

/// Events counted when nothing is configured: all software, so they work on every Linux
/// machine (hardware events are added with `METRON_PERF_EVENTS`).
pub const DEFAULT_EVENTS: &str = "task-clock,page-faults,context-switches";

/// The process-wide counter configuration.
#[derive(Debug)]
pub struct PerfConfig {
    /// The events counted, in field order (at most [`MAX_PERF_EVENTS`]).
    pub events: Vec<EventSpec>,
    /// Events asked for that the kernel refused on this machine, with the reason in words.
    pub unavailable: Vec<(EventSpec, String)>,
    /// Names that did not parse.
    pub errors: Vec<EventError>,
    /// Events beyond [`MAX_PERF_EVENTS`], left out.
    pub over_limit: Vec<EventSpec>,
    fields: Vec<Field>,
}

impl PerfConfig {
    /// Probes `events` on the calling thread and keeps those the kernel accepts.
    fn probe(events: Vec<EventSpec>, errors: Vec<EventError>) -> PerfConfig {
        let mut counted = Vec::new();
        let mut unavailable = Vec::new();
        let mut over_limit = Vec::new();
        for event in events {
            match probe(&event) {
                Ok(()) if counted.len() < MAX_PERF_EVENTS => counted.push(event),
                Ok(()) => over_limit.push(event),
                Err(reason) => unavailable.push((event, reason)),
            }
        }
        let mut fields: Vec<Field> = counted
            .iter()
            .map(|e| {
                let unit = if e.kind == events::TYPE_SOFTWARE && e.config <= 1 {
                    Unit::Nanoseconds
                } else {
                    Unit::Count
                };
                Field::new(Box::leak(e.name.clone().into_boxed_str()), unit)
            })
            .collect();
        fields.extend_from_slice(&STATIC_FIELDS[counted.len()..]);
        PerfConfig {
            events: counted,
            unavailable,
            errors,
            over_limit,
            fields,
        }
    }

    /// Messages for stderr and `metadata.json`: every refused or unknown event with its reason.
    pub fn messages(&self) -> Vec<String> {
        let mut out: Vec<String> = self.errors.iter().map(|e| e.to_string()).collect();
        for (event, reason) in &self.unavailable {
            out.push(format!(
                "counter `{}` ({}) is not counted: {reason}; the other counters and components go on",
                event.name,
                event.kind_name()
            ));
        }
        for event in &self.over_limit {
            out.push(format!(
                "counter `{}` is not counted: a PerfCounters group holds at most {MAX_PERF_EVENTS} events",
                event.name
            ));
        }
        out
    }
}

static CONFIG: OnceLock<PerfConfig> = OnceLock::new();
/// Events set by [`configure_deferred`], probed at the first [`config`].
static DEFERRED: std::sync::Mutex<Option<(Vec<EventSpec>, Vec<EventError>)>> =
    std::sync::Mutex::new(None);

/// Sets the process-wide events from parsed specs (first call wins) and returns the
/// configuration in force. Probes each event; call it off the hot path.
pub fn configure(events: Vec<EventSpec>, errors: Vec<EventError>) -> &'static PerfConfig {
    CONFIG.get_or_init(|| PerfConfig::probe(events, errors))
}

/// Sets the process-wide events without probing them: the first [`config`] probes them (the
/// first use of [`PerfCounters`]). For events nobody asked for (the defaults): the probe's
/// `perf_event_open` can take milliseconds where no other perf event is open on the machine
/// (the kernel switches its perf hooks on; 0.15 to 14 ms measured on a VM), which every run
/// paid at its start whether or not it counted anything. Ignored once configured.
pub fn configure_deferred(events: Vec<EventSpec>, errors: Vec<EventError>) {
    if CONFIG.get().is_none() {
        *DEFERRED.lock().unwrap_or_else(|e| e.into_inner()) = Some((events, errors));
    }
}

/// The configuration in force, if its events were probed; `None` while they wait for the first
/// use ([`configure_deferred`]) or were never configured.
pub fn probed() -> Option<&'static PerfConfig> {
    CONFIG.get()
}

/// The events that [`config`] would count (probed or still deferred), by name.
pub fn configured_names() -> Vec<String> {
    if let Some(config) = CONFIG.get() {
        return config.events.iter().map(|e| e.name.clone()).collect();
    }
    DEFERRED
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .as_ref()
        .map(|(events, _)| events.iter().map(|e| e.name.clone()).collect())
        .unwrap_or_default()
}

/// The configuration in force; probes the deferred events, or configures from
/// `METRON_PERF_EVENTS` (or [`DEFAULT_EVENTS`]), on first use.
pub fn config() -> &'static PerfConfig {
    CONFIG.get_or_init(|| {
        let deferred = DEFERRED.lock().unwrap_or_else(|e| e.into_inner()).take();
        let (events, errors) = deferred.unwrap_or_else(|| {
            let list =
                std::env::var("METRON_PERF_EVENTS").unwrap_or_else(|_| DEFAULT_EVENTS.into());
            parse_list(&list)
        });
        PerfConfig::probe(events, errors)
    })
}

/// Opens and closes `event` on the calling thread; the reason in words when it fails.
pub fn probe(event: &EventSpec) -> Result<(), String> {
    let (exclude_user, exclude_kernel) = exclusions(event.privilege);
    match sys::perf_open(event.kind, event.config, exclude_user, exclude_kernel, -1) {
        Ok(fd) => {
            sys::close(fd);
            Ok(())
        }
        Err(errno) => Err(explain(errno, event)),
    }
}

/// How many hardware events this CPU counts at once, found by growing a group of
/// `instructions` events until the kernel can no longer schedule it; `None` when there is no
/// hardware PMU to ask (the first event does not open).
pub fn detect_hardware_group_size() -> Option<usize> {
    let mut fds = Vec::new();
    let mut fits = 0;
    for k in 1..=MAX_PERF_EVENTS {
        let leader = fds.first().copied().unwrap_or(-1);
        let Ok(fd) = sys::perf_open(events::TYPE_HARDWARE, 1, false, true, leader) else {
            break;
        };
        fds.push(fd);
        std::hint::black_box((0..20_000u64).sum::<u64>());
        let mut buf = [0u64; READ_WORDS];
        let words = sys::perf_read(fds[0], &mut buf);
        // A group the PMU cannot hold never runs: time_running stays 0.
        if words < 3 || buf[2] == 0 {
            break;
        }
        fits = k;
    }
    for fd in fds {
        sys::close(fd);
    }
    (fits > 0).then_some(fits)
}

fn exclusions(privilege: Privilege) -> (bool, bool) {
    match privilege {
        Privilege::User => (false, true),
        Privilege::Kernel => (true, false),
        Privilege::Both => (false, false),
    }
}

/// perf_event_open's errno, in words a user can act on.
pub fn explain(errno: i32, event: &EventSpec) -> String {
    let text = std::io::Error::from_raw_os_error(errno);
    match errno {
        libc::ENOENT | libc::EOPNOTSUPP | libc::ENODEV if event.is_hardware() => {
            let pmu = std::path::Path::new("/sys/bus/event_source/devices/cpu").exists();
            format!(
                "perf_event_open failed with {text}: this machine exposes no hardware PMU{} (typical of a virtual machine without a virtual PMU)",
                if pmu { "" } else { " (/sys/bus/event_source/devices/cpu is absent)" }
            )
        }
        libc::EACCES | libc::EPERM => {
            let paranoid = std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
                .map(|s| s.trim().to_string())
                .unwrap_or_else(|_| "unknown".into());
            format!(
                "perf_event_open refused it with {text}; kernel.perf_event_paranoid is {paranoid} (lower it, e.g. `sysctl kernel.perf_event_paranoid=1`, or grant CAP_PERFMON){}",
                if event.privilege != Privilege::User { "; user-space-only counting (`:u`) needs fewer rights" } else { "" }
            )
        }
        _ => format!("perf_event_open failed with {text}"),
    }
}

const STATIC_FIELDS: [Field; MAX_PERF_EVENTS + 1] = [
    Field::new("event0", Unit::Count),
    Field::new("event1", Unit::Count),
    Field::new("event2", Unit::Count),
    Field::new("event3", Unit::Count),
    Field::new("event4", Unit::Count),
    Field::new("event5", Unit::Count),
    Field::new("event6", Unit::Count),
    Field::new("event7", Unit::Count),
    Field::new("running_fraction", Unit::Number),
];

/// Words of a group read: nr, time_enabled, time_running, one value per event.
const READ_WORDS: usize = 3 + MAX_PERF_EVENTS;

/// Which group an event joins. Measured on Linux 6.18: a group led by `task-clock` or
/// `cpu-clock` (hrtimer-driven) undercounts software events such as page faults, and one led by
/// a software event undercounts `task-clock`; each PMU therefore gets its own group: hardware,
/// cache and raw events together (so ratios such as IPC come from one schedule), the other
/// software events together, and each clock alone.
fn group_key(event: &EventSpec) -> u8 {
    match (event.kind, event.config) {
        (events::TYPE_SOFTWARE, c @ 0..=1) => 2 + c as u8,
        (events::TYPE_SOFTWARE, _) => 1,
        _ => 0,
    }
}

/// Groups one thread can have (hardware, software, task-clock, cpu-clock).
const MAX_GROUPS: usize = 4;

/// The calling thread's groups: descriptors opened on first use, closed at thread exit.
struct ThreadGroups {
    /// `UNOPENED` before the first use on this thread, then the number of groups opened.
    state: Cell<i32>,
    /// Leader descriptor of each group opened.
    leaders: [Cell<i32>; MAX_GROUPS],
    /// Values a read of each group returns.
    members: [Cell<u8>; MAX_GROUPS],
    /// Every descriptor opened (leaders included), in configuration order; -1 where none.
    fds: [Cell<i32>; MAX_PERF_EVENTS],
    /// For each group, the configuration index of each value it returns, in read order.
    slot_of: [[Cell<u8>; MAX_PERF_EVENTS]; MAX_GROUPS],
}

const UNOPENED: i32 = -1;

impl ThreadGroups {
    const fn new() -> ThreadGroups {
        ThreadGroups {
            state: Cell::new(UNOPENED),
            leaders: [const { Cell::new(-1) }; MAX_GROUPS],
            members: [const { Cell::new(0) }; MAX_GROUPS],
            fds: [const { Cell::new(-1) }; MAX_PERF_EVENTS],
            slot_of: [const { [const { Cell::new(0) }; MAX_PERF_EVENTS] }; MAX_GROUPS],
        }
    }

    /// Opens the configured events, one group per PMU (first use on this thread only).
    #[cold]
    fn open(&self) {
        let config = config();
        let mut keys = [u8::MAX; MAX_GROUPS];
        let mut groups = 0usize;
        for (i, event) in config.events.iter().enumerate() {
            let key = group_key(event);
            let g = match keys[..groups].iter().position(|k| *k == key) {
                Some(g) => g,
                None if groups < MAX_GROUPS => {
                    keys[groups] = key;
                    groups += 1;
                    groups - 1
                }
                None => continue,
            };
            let (exclude_user, exclude_kernel) = exclusions(event.privilege);
            let leader = self.leaders[g].get();
            if let Ok(fd) = sys::perf_open(
                event.kind,
                event.config,
                exclude_user,
                exclude_kernel,
                leader,
            ) {
                if leader < 0 {
                    self.leaders[g].set(fd);
                }
                self.fds[i].set(fd);
                let m = self.members[g].get();
                self.slot_of[g][m as usize].set(i as u8);
                self.members[g].set(m + 1);
            }
        }
        self.state.set(groups as i32);
    }

    #[inline]
    fn read(&self, out: &mut Reading) {
        if self.state.get() == UNOPENED {
            self.open();
        }
        out.mask = 0;
        for g in 0..self.state.get().max(0) as usize {
            let leader = self.leaders[g].get();
            if leader < 0 {
                continue;
            }
            let mut buf = [0u64; READ_WORDS];
            let words = sys::perf_read(leader, &mut buf);
            let members = self.members[g].get() as usize;
            if words < 3 + members || buf[0] as usize != members {
                continue;
            }
            for (k, value) in buf[3..3 + members].iter().enumerate() {
                let slot = self.slot_of[g][k].get() as usize;
                out.counts[slot] = *value;
                out.enabled[slot] = buf[1];
                out.running[slot] = buf[2];
                out.mask |= 1 << slot;
            }
        }
    }
}

impl Drop for ThreadGroups {
    fn drop(&mut self) {
        for fd in &self.fds {
            if fd.get() >= 0 {
                sys::close(fd.get());
            }
        }
    }
}

thread_local! {
    /// Boxed on the thread's first read (a perf syscall follows anyway): kept out of the
    /// thread-local block, which `libmetron.so` keeps small enough for static TLS when it is
    /// `dlopen`ed (`user-api/src/thread_block.rs`).
    static GROUPS: std::cell::OnceCell<Box<ThreadGroups>> = const { std::cell::OnceCell::new() };
}

/// One read of the thread's groups: per configured event, its count and its group's times.
#[derive(Clone, Copy, Debug, Default)]
struct Reading {
    /// Bit i set: configured event i was read.
    mask: u8,
    counts: [u64; MAX_PERF_EVENTS],
    enabled: [u64; MAX_PERF_EVENTS],
    running: [u64; MAX_PERF_EVENTS],
}

fn read_groups(out: &mut Reading) {
    let read = GROUPS.try_with(|g| g.get_or_init(|| Box::new(ThreadGroups::new())).read(out));
    if read.is_err() {
        out.mask = 0;
    }
}

/// The values of a [`PerfCounters`] region (or sample).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PerfValues {
    /// One value per configured event (see [`config`]), scaled for multiplexing; NaN where
    /// the event is not counted on this thread or the slot is unused.
    pub counts: [f64; MAX_PERF_EVENTS],
    /// time_running / time_enabled over the region: 1 when the group counted all the time,
    /// less when the kernel multiplexed it; NaN when nothing could be read.
    pub running_fraction: f64,
}

impl Default for PerfValues {
    fn default() -> Self {
        PerfValues {
            counts: [f64::NAN; MAX_PERF_EVENTS],
            running_fraction: f64::NAN,
        }
    }
}

/// Hardware and software counters of the calling thread, by `perf_event_open`.
///
/// Fields: one per configured event (named as the event, e.g. `perf_counters.instructions`),
/// then `running_fraction`. Unused slots are NaN and do not appear in outputs.
#[derive(Clone, Copy, Debug, Default)]
pub struct PerfCounters {
    at_start: Reading,
    value: PerfValues,
}

impl PerfCounters {
    /// `now - base` (or `now` alone for a sample), each event scaled by its group's
    /// enabled/running times; `running_fraction` is the smallest fraction over the groups.
    fn scaled(&mut self, now: &Reading, base: Option<&Reading>) {
        self.value = PerfValues::default();
        let zero = Reading {
            mask: u8::MAX,
            ..Reading::default()
        };
        let base = base.unwrap_or(&zero);
        let mask = now.mask & base.mask;
        let mut fraction = f64::NAN;
        for i in (0..MAX_PERF_EVENTS).filter(|i| mask & (1 << i) != 0) {
            let enabled = now.enabled[i].saturating_sub(base.enabled[i]);
            let running = now.running[i].saturating_sub(base.running[i]);
            let count = now.counts[i].saturating_sub(base.counts[i]);
            let (scale, f) = match (enabled, running) {
                (0, _) => (1.0, 1.0),
                (_, 0) => (f64::NAN, 0.0),
                (e, r) => (e as f64 / r as f64, r as f64 / e as f64),
            };
            self.value.counts[i] = count as f64 * scale;
            fraction = if fraction.is_nan() {
                f
            } else {
                fraction.min(f)
            };
        }
        self.value.running_fraction = fraction;
    }
}

impl Component for PerfCounters {
    const NAME: &'static str = "perf_counters";
    const DESCRIPTION: &'static str =
        "perf_event_open counter group of the calling thread (METRON_PERF_EVENTS), scaled for multiplexing";
    const COST: &'static str =
        "one read() syscall of the group per operation (about 0.5-1 us); the first use on a thread opens the group";
    const FIELDS: &'static [Field] = &STATIC_FIELDS;
    type Value = PerfValues;

    #[inline]
    fn start(&mut self) {
        read_groups(&mut self.at_start);
    }

    #[inline]
    fn stop(&mut self) {
        let mut now = Reading::default();
        read_groups(&mut now);
        let base = self.at_start;
        self.scaled(&now, Some(&base));
    }

    #[inline]
    fn sample(&mut self) {
        let mut now = Reading::default();
        read_groups(&mut now);
        self.scaled(&now, None);
    }

    fn value(&self) -> PerfValues {
        self.value
    }

    fn write_fields(&self, out: &mut [f64]) {
        out[..MAX_PERF_EVENTS].copy_from_slice(&self.value.counts);
        out[MAX_PERF_EVENTS] = self.value.running_fraction;
    }

    fn active_fields() -> &'static [Field] {
        &config().fields
    }
}
