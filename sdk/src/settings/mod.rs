//! The one registry of `METRON_*` settings: name, type, default, accepted values, description.
//!
//! [`REGISTRY`] is what `metron avail` prints. [`Settings::from_env`] reads every setting once
//! when the runtime starts; a value that does not parse is reported (stderr and
//! `metadata.json`) with the variable, the value and what is accepted, and the default is used.

use crate::buffer::Policy;
use std::fmt;
use std::time::Duration;

mod functions;
mod registry;
pub use functions::{
    matches_every_name, FunctionEngine, FunctionLibraries, FunctionSettings,
    AUTO_MIN_INSTRUCTIONS_FOR_EVERYTHING,
};
pub use registry::REGISTRY;

/// The type of a setting, which decides what values it accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `1`/`0`, `true`/`false`, `yes`/`no`, `on`/`off`.
    Bool,
    /// Bytes with an optional `K`, `M` or `G` suffix (powers of 1024).
    Size,
    /// `off`, or a size as [`Kind::Size`] of at least [`MIN_TRACE_MAX_BYTES`]
    /// (`METRON_TRACE_MAX_SIZE`).
    SizeOrOff,
    /// An integer from 1 to 100.
    Percent,
    /// A duration with a unit: `ms`, `s`, `us` or `m`; `0` means off.
    Duration,
    /// One of the listed words.
    Choice(&'static [&'static str]),
    /// Free text (paths, templates).
    Text,
    /// A regular expression (Rust `regex` syntax); empty: off.
    Regex,
    /// `auto`, or a count (a non-negative integer).
    CountOrAuto,
    /// A value with a grammar of its own (sampling frequency, thread list, signal, periods).
    Grammar(crate::sampling::Grammar),
}

impl Kind {
    /// What this kind accepts, in words, for error messages and `metron avail`.
    pub fn accepted(self) -> String {
        match self {
            Kind::Bool => "a boolean: 1, 0, true, false, yes, no, on or off".into(),
            Kind::Size => "a size in bytes with an optional K, M or G suffix (e.g. 64K, 4M)".into(),
            Kind::SizeOrOff => format!(
                "off (no limit), or a size in bytes of at least {}K with an optional K, M or G suffix (e.g. 512K, 64M, 1G)",
                MIN_TRACE_MAX_BYTES >> 10
            ),
            Kind::Percent => "an integer percentage from 1 to 100".into(),
            Kind::Duration => {
                "a duration with a unit: ms, s, us or m (e.g. 500ms, 2s); 0 turns it off".into()
            }
            Kind::Choice(words) => format!("one of: {}", words.join(", ")),
            Kind::Text => "any text".into(),
            Kind::Regex => "a regular expression in Rust regex syntax (https://docs.rs/regex/#syntax), unanchored (^name$ matches one name exactly); empty: off".into(),
            Kind::CountOrAuto => "auto, or a whole number (0 or more)".into(),
            Kind::Grammar(g) => g.accepted(),
        }
    }
}

/// One entry of the registry.
#[derive(Clone, Copy, Debug)]
pub struct SettingSpec {
    /// The environment variable.
    pub name: &'static str,
    /// What it accepts.
    pub kind: Kind,
    /// The value used when the variable is unset or invalid.
    pub default: &'static str,
    /// One line for `metron avail`.
    pub description: &'static str,
}

/// The smallest buffer Metron accepts: room for the largest record many times over.
pub const MIN_BUFFER_BYTES: usize = 4096;

/// The smallest `METRON_TRACE_MAX_SIZE`: room for the trace's first and last packets.
pub const MIN_TRACE_MAX_BYTES: usize = 64 << 10;

/// A setting whose value was not accepted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SettingError {
    /// The variable.
    pub name: &'static str,
    /// The value it had.
    pub value: String,
    /// What it accepts.
    pub accepted: String,
    /// The default used instead.
    pub default: &'static str,
}

impl fmt::Display for SettingError {
    /// Quotes the value cut to 80 characters and `…` (`metron_metrics::cut_input`), so a
    /// pasted 40 KB value stays a one-line message.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}={:?} is not accepted: expected {}; using the default {:?}",
            self.name,
            metron_metrics::cut_input(&self.value),
            self.accepted,
            self.default
        )
    }
}

/// The settings in force for this run.
#[derive(Clone, Debug)]
pub struct Settings {
    /// `METRON_ENABLED`.
    pub enabled: bool,
    /// `METRON_OUTPUT_PATH` (unexpanded template).
    pub output_path: String,
    /// `METRON_BUFFER_SIZE` in bytes.
    pub buffer_bytes: usize,
    /// `METRON_BUFFER_WATERMARK` in percent.
    pub watermark_percent: u8,
    /// `METRON_BUFFER_POLICY`.
    pub policy: Policy,
    /// `METRON_BUFFER_BACKLOG` in bytes; `None` when off.
    pub backlog_bytes: Option<u64>,
    /// `METRON_BUFFER_BACKLOG_POLICY`.
    pub backlog_policy: crate::buffer::BacklogPolicy,
    /// `METRON_FLUSH_INTERVAL`; `None` when off.
    pub flush_interval: Option<Duration>,
    /// `METRON_BACKEND_THREADS`: 1 or 2.
    pub backend_threads: usize,
    /// `METRON_SUMMARY`.
    pub summary: bool,
    /// `METRON_REPORT`.
    pub report: bool,
    /// `METRON_EXPORT`: the formats written at the end of the run.
    pub export: Vec<metron_export::Format>,
    /// `METRON_TRACE`.
    pub trace: bool,
    /// `METRON_TRACE_FILE`.
    pub trace_file: String,
    /// `METRON_TRACE_BUFFER_SIZE` in bytes.
    pub trace_buffer_bytes: usize,
    /// `METRON_TRACE_FILL_POLICY`.
    pub trace_fill_policy: crate::sinks::perfetto::TraceFillPolicy,
    /// `METRON_TRACE_CATEGORIES` (unparsed; the trace sink reports unknown names).
    pub trace_categories: String,
    /// `METRON_TRACE_MAX_SIZE` in bytes; `None` when off.
    pub trace_max_bytes: Option<u64>,
    /// `METRON_PRELOAD`.
    pub preload: bool,
    /// `METRON_SIGNALS`, with `auto` resolved (on when preloaded).
    pub signals: bool,
    /// `METRON_CRASH`.
    pub crash: bool,
    /// The counter settings, as written (checked by `crate::counters`).
    pub counters: crate::counters::CounterSettings,
    /// `METRON_SAMPLING*` and the time windows (`METRON_TRACE_PERIODS`, `_DELAY`, `_DURATION`).
    pub sampling: crate::sampling::SamplingConfig,
    /// `METRON_SAMPLING_PER_THREAD`: sampled stacks per thread rather than merged.
    pub sampling_per_thread: bool,
    /// `METRON_FUNCTIONS*`: which functions' calls become regions.
    pub functions: FunctionSettings,
    /// Every registry entry with the value in force and where it came from.
    pub resolved: Vec<ResolvedSetting>,
    /// Values that were rejected.
    pub errors: Vec<SettingError>,
}

/// A setting's value in force, for `metadata.json`.
#[derive(Clone, Debug, serde::Serialize)]
pub struct ResolvedSetting {
    /// The variable.
    pub name: &'static str,
    /// The value in force.
    pub value: String,
    /// `environment` or `default`.
    pub source: &'static str,
}

impl Settings {
    /// Reads every registered setting from the environment.
    pub fn from_env() -> Settings {
        Settings::from_lookup(|name| std::env::var(name).ok())
    }

    /// Reads every registered setting through `lookup` (tests pass a map).
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Settings {
        let mut resolved = Vec::new();
        let mut errors = Vec::new();
        let mut value_of = |name: &'static str| -> Value {
            let spec = REGISTRY
                .iter()
                .find(|s| s.name == name)
                .expect("setting is registered");
            let default = parse(spec.kind, spec.default).expect("registry default parses");
            let (value, source) = match lookup(name) {
                Some(raw) if !raw.trim().is_empty() => match parse(spec.kind, raw.trim()) {
                    Some(v) => (v, "environment"),
                    None => {
                        errors.push(SettingError {
                            name,
                            value: raw,
                            accepted: spec.kind.accepted(),
                            default: spec.default,
                        });
                        (default, "default")
                    }
                },
                _ => (default, "default"),
            };
            resolved.push(ResolvedSetting {
                name,
                value: value.to_string(),
                source,
            });
            value
        };
        let enabled = value_of("METRON_ENABLED").bool();
        let output_path = value_of("METRON_OUTPUT_PATH").text();
        let buffer_bytes = value_of("METRON_BUFFER_SIZE").size();
        let watermark_percent = value_of("METRON_BUFFER_WATERMARK").percent();
        let policy = match value_of("METRON_BUFFER_POLICY").text().as_str() {
            "discard" => Policy::Discard,
            _ => Policy::Lossless,
        };
        let backlog_bytes = value_of("METRON_BUFFER_BACKLOG").size_or_off();
        let backlog_policy = match value_of("METRON_BUFFER_BACKLOG_POLICY").text().as_str() {
            "drop" => crate::buffer::BacklogPolicy::Drop,
            _ => crate::buffer::BacklogPolicy::Block,
        };
        let flush_interval = value_of("METRON_FLUSH_INTERVAL").duration();
        let backend_threads = match value_of("METRON_BACKEND_THREADS").text().as_str() {
            "2" => 2,
            _ => 1,
        };
        let summary = value_of("METRON_SUMMARY").bool();
        let report = value_of("METRON_REPORT").bool();
        let export = value_of("METRON_EXPORT").text();
        let trace = value_of("METRON_TRACE").bool();
        let trace_file = value_of("METRON_TRACE_FILE").text();
        let trace_buffer_bytes = value_of("METRON_TRACE_BUFFER_SIZE").size();
        let trace_fill_policy = match value_of("METRON_TRACE_FILL_POLICY").text().as_str() {
            "ring_buffer" => crate::sinks::perfetto::TraceFillPolicy::RingBuffer,
            _ => crate::sinks::perfetto::TraceFillPolicy::Discard,
        };
        let trace_categories = value_of("METRON_TRACE_CATEGORIES").text();
        let trace_max_bytes = value_of("METRON_TRACE_MAX_SIZE").size_or_off();
        let preload = value_of("METRON_PRELOAD").bool();
        // Read by `metron run` (METRON_PROCESSES) and at the end of the run (METRON_RUN_FOLDER).
        let _ = value_of("METRON_PROCESSES");
        let _ = value_of("METRON_RUN_FOLDER");
        let signals = match value_of("METRON_SIGNALS").text().as_str() {
            "on" => true,
            "off" => false,
            _ => preload,
        };
        let crash = value_of("METRON_CRASH").bool();
        // Read by the MPI interposition of libmetron.so (`user-api/src/mpi.rs`).
        let _ = value_of("METRON_MPI");
        let _ = value_of("METRON_MPI_CLOCK_SYNC");
        // METRON_FORK has one policy so far (disable); read it so a bad value is reported.
        let _ = value_of("METRON_FORK");
        // Read by `metron sample` (it sets PYTHONPERFSUPPORT); reported in metadata.json.
        let _ = value_of("METRON_SAMPLING_PYTHON");
        let sampling_per_thread = value_of("METRON_SAMPLING_PER_THREAD").bool();
        // Read by the GPU backend (`metron-gpu-nvidia`); checked and reported here like the rest.
        for gpu in [
            "METRON_GPU",
            "METRON_GPU_ACTIVITY_BUFFER",
            "METRON_GPU_API",
            "METRON_GPU_METRICS",
            "METRON_GPU_COUNTER_MODE",
            "METRON_GPU_REGION_KERNELS",
            "METRON_GPU_REGION_RANGES",
            "METRON_GPU_KERNEL_REPLAY",
            "METRON_GPU_PC_SAMPLING",
            "METRON_GPU_PC_SAMPLING_MODE",
            "METRON_GPU_PM_SAMPLING",
            "METRON_GPU_PM_INTERVAL",
            "METRON_GPU_PM_DEBUG",
            "METRON_GPU_WARM_UP",
            "METRON_GPU_SYNC",
            "METRON_GPU_EVENTS",
            "METRON_GPU_DIAG",
            "METRON_NVTX_FOLD",
            "METRON_GPU_AMD_SIGNALS",
            "METRON_GPU_AMD_RECORDS",
            "METRON_GPU_AMD_HSA_API",
            "METRON_GPU_AMD_BACKEND",
            "METRON_GPU_AMD_BUFFER_BYTES",
            "METRON_GPU_AMD_BUFFER_POLICY",
        ] {
            let _ = value_of(gpu);
        }
        let sampling = crate::sampling::SamplingConfig::from_values(
            value_of("METRON_SAMPLING").bool(),
            &value_of("METRON_SAMPLING_FREQ").text(),
            value_of("METRON_SAMPLING_CPUTIME").bool(),
            value_of("METRON_SAMPLING_REALTIME").bool(),
            value_of("METRON_SAMPLING_DELAY").duration(),
            value_of("METRON_SAMPLING_DURATION").duration(),
            &value_of("METRON_SAMPLING_TIDS").text(),
            &value_of("METRON_SAMPLING_SIGNAL").text(),
            &value_of("METRON_TRACE_PERIODS").text(),
            value_of("METRON_TRACE_DELAY").duration(),
            value_of("METRON_TRACE_DURATION").duration(),
        );
        let mut sampling = sampling;
        sampling.causal = crate::sampling::causal::CausalConfig {
            enabled: value_of("METRON_CAUSAL").bool(),
            lines: crate::sampling::causal::parse_lines(&value_of("METRON_CAUSAL_LINES").text())
                .unwrap_or_default(),
            progress_lines: crate::sampling::causal::parse_lines(
                &value_of("METRON_CAUSAL_PROGRESS").text(),
            )
            .unwrap_or_default(),
            latency_regions: crate::sampling::causal::parse_regions(
                &value_of("METRON_CAUSAL_LATENCY").text(),
            ),
            source_scope: crate::sampling::causal::parse_scopes(
                &value_of("METRON_CAUSAL_SOURCE_SCOPE").text(),
                "%",
            ),
            binary_scope: crate::sampling::causal::parse_scopes(
                &value_of("METRON_CAUSAL_BINARY_SCOPE").text(),
                "MAIN",
            ),
            speedups: crate::sampling::causal::parse_speedups(
                &value_of("METRON_CAUSAL_SPEEDUPS").text(),
            )
            .unwrap_or_else(|| {
                crate::sampling::causal::parse_speedups(crate::sampling::causal::DEFAULT_SPEEDUPS)
                    .unwrap_or_default()
            }),
            experiment: value_of("METRON_CAUSAL_EXPERIMENT")
                .duration()
                .unwrap_or(std::time::Duration::from_millis(200)),
        };
        // Counter settings have grammars of their own, checked by `crate::counters`.
        let counters = crate::counters::CounterSettings {
            events: value_of("METRON_PERF_EVENTS").text(),
            metrics: value_of("METRON_METRICS").text(),
            metrics_file: value_of("METRON_METRICS_FILE").text(),
            group_size: value_of("METRON_PERF_GROUP_SIZE").text(),
            pass: value_of("METRON_PERF_PASS").text(),
        };
        let functions = FunctionSettings::from_values(
            value_of("METRON_FUNCTIONS").text(),
            value_of("METRON_FUNCTIONS_EXCLUDE").text(),
            &value_of("METRON_FUNCTIONS_MIN_INSTRUCTIONS").text(),
            &value_of("METRON_FUNCTIONS_IN").text(),
            &value_of("METRON_FUNCTIONS_ENGINE").text(),
        );
        Settings {
            functions,
            enabled,
            output_path,
            buffer_bytes,
            watermark_percent,
            policy,
            backlog_bytes,
            backlog_policy,
            flush_interval,
            backend_threads,
            summary,
            report,
            export: export_formats(export, &mut errors),
            trace,
            trace_file,
            trace_buffer_bytes,
            trace_fill_policy,
            trace_categories,
            trace_max_bytes,
            preload,
            signals,
            crash,
            counters,
            sampling,
            sampling_per_thread,
            resolved,
            errors,
        }
    }
}

/// The formats of `METRON_EXPORT`; a value that is not a list of them is reported in `errors`
/// and none are written.
fn export_formats(raw: String, errors: &mut Vec<SettingError>) -> Vec<metron_export::Format> {
    metron_export::parse_list(&raw).unwrap_or_else(|_| {
        errors.push(SettingError {
            name: "METRON_EXPORT",
            value: raw,
            accepted: "off, all, or a comma list of atp, occupancy and apilog".into(),
            default: "off",
        });
        Vec::new()
    })
}

/// A parsed value of any kind.
#[derive(Clone, Debug)]
enum Value {
    Bool(bool),
    Size(usize),
    Percent(u8),
    Duration(Option<Duration>),
    Text(String),
}

impl Value {
    fn bool(self) -> bool {
        matches!(self, Value::Bool(true))
    }
    fn size(self) -> usize {
        match self {
            Value::Size(n) => n,
            _ => unreachable!("kind checked by the registry"),
        }
    }
    fn size_or_off(self) -> Option<u64> {
        match self {
            Value::Size(n) => Some(n as u64),
            _ => None,
        }
    }
    fn percent(self) -> u8 {
        match self {
            Value::Percent(n) => n,
            _ => unreachable!("kind checked by the registry"),
        }
    }
    fn duration(self) -> Option<Duration> {
        match self {
            Value::Duration(d) => d,
            _ => unreachable!("kind checked by the registry"),
        }
    }
    fn text(self) -> String {
        match self {
            Value::Text(t) => t,
            _ => unreachable!("kind checked by the registry"),
        }
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Bool(b) => write!(f, "{b}"),
            Value::Size(n) => write!(f, "{n}"),
            Value::Percent(p) => write!(f, "{p}"),
            Value::Duration(None) => write!(f, "0"),
            Value::Duration(Some(d)) => write!(f, "{}ms", d.as_millis()),
            Value::Text(t) => write!(f, "{t}"),
        }
    }
}

fn parse(kind: Kind, raw: &str) -> Option<Value> {
    match kind {
        Kind::Bool => parse_bool(raw).map(Value::Bool),
        Kind::Size => parse_size(raw)
            .filter(|n| *n >= MIN_BUFFER_BYTES)
            .map(Value::Size),
        Kind::SizeOrOff if raw.eq_ignore_ascii_case("off") => Some(Value::Text("off".into())),
        Kind::SizeOrOff => parse_size(raw)
            .filter(|n| *n >= MIN_TRACE_MAX_BYTES)
            .map(Value::Size),
        Kind::Percent => raw
            .parse::<u8>()
            .ok()
            .filter(|p| (1..=100).contains(p))
            .map(Value::Percent),
        Kind::Duration => parse_duration(raw).map(Value::Duration),
        Kind::Choice(words) => words
            .iter()
            .find(|w| w.eq_ignore_ascii_case(raw))
            .map(|w| Value::Text((*w).to_string())),
        Kind::Text => Some(Value::Text(raw.to_string())),
        Kind::Regex => regex::Regex::new(raw)
            .is_ok()
            .then(|| Value::Text(raw.to_string())),
        Kind::CountOrAuto if raw.eq_ignore_ascii_case("auto") => Some(Value::Text("auto".into())),
        Kind::CountOrAuto => raw.parse::<u64>().ok().map(|n| Value::Text(n.to_string())),
        Kind::Grammar(g) => g.check(raw).then(|| Value::Text(raw.to_string())),
    }
}

/// A boolean as the registry's `Bool` settings accept it: `1`/`0`, `true`/`false`, `yes`/`no`,
/// `on`/`off`, any case.
pub fn parse_bool(raw: &str) -> Option<bool> {
    match raw.to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Some(true),
        "0" | "false" | "no" | "off" => Some(false),
        _ => None,
    }
}

/// A boolean setting read from the environment where a crate that is not the runtime needs it
/// (the GPU backends start inside driver callbacks): `default` when unset or not a boolean
/// (the registry reports a bad value).
pub fn env_bool(name: &str, default: bool) -> bool {
    std::env::var(name)
        .ok()
        .and_then(|v| parse_bool(v.trim()))
        .unwrap_or(default)
}

/// A size setting read from the environment (as [`env_bool`]).
pub fn env_size(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| parse_size(v.trim()))
        .unwrap_or(default)
}

/// A count setting read from the environment (as [`env_bool`]).
pub fn env_count(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(default)
}

/// A size as the registry's `Size` settings accept it: bytes with an optional `K`, `M` or `G`
/// suffix (powers of 1024; `KB`/`KiB` spellings too).
pub fn parse_size(raw: &str) -> Option<usize> {
    let upper = raw.to_ascii_uppercase();
    let trimmed = upper.trim_end_matches("IB").trim_end_matches('B');
    let (digits, scale) = match trimmed.chars().last()? {
        'K' => (&trimmed[..trimmed.len() - 1], 1usize << 10),
        'M' => (&trimmed[..trimmed.len() - 1], 1 << 20),
        'G' => (&trimmed[..trimmed.len() - 1], 1 << 30),
        _ => (trimmed, 1),
    };
    digits.trim().parse::<usize>().ok()?.checked_mul(scale)
}

fn parse_duration(raw: &str) -> Option<Option<Duration>> {
    if raw == "0" {
        return Some(None);
    }
    let split = raw.find(|c: char| !c.is_ascii_digit() && c != '.')?;
    let (number, unit) = raw.split_at(split);
    let number: f64 = number.parse().ok()?;
    let seconds = match unit.trim() {
        "us" => number / 1e6,
        "ms" => number / 1e3,
        "s" => number,
        "m" => number * 60.0,
        _ => return None,
    };
    if seconds == 0.0 {
        return Some(None);
    }
    Some(Some(Duration::from_secs_f64(seconds)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn settings(pairs: &[(&str, &str)]) -> Settings {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Settings::from_lookup(|name| map.get(name).cloned())
    }

    #[test]
    fn defaults_apply_when_nothing_is_set() {
        let s = settings(&[]);
        assert!(s.enabled);
        assert_eq!(s.buffer_bytes, 256 << 10);
        assert_eq!(s.watermark_percent, 100);
        assert_eq!(s.policy, Policy::Lossless);
        assert_eq!(s.flush_interval, Some(Duration::from_secs(1)));
        assert!(s.errors.is_empty());
        assert_eq!(s.resolved.len(), REGISTRY.len());
    }

    #[test]
    fn valid_values_are_taken() {
        let s = settings(&[
            ("METRON_ENABLED", "off"),
            ("METRON_BUFFER_SIZE", "64K"),
            ("METRON_BUFFER_WATERMARK", "50"),
            ("METRON_BUFFER_POLICY", "Discard"),
            ("METRON_FLUSH_INTERVAL", "250ms"),
        ]);
        assert!(!s.enabled);
        assert_eq!(s.buffer_bytes, 64 << 10);
        assert_eq!(s.watermark_percent, 50);
        assert_eq!(s.policy, Policy::Discard);
        assert_eq!(s.flush_interval, Some(Duration::from_millis(250)));
        assert_eq!(
            settings(&[("METRON_FLUSH_INTERVAL", "0")]).flush_interval,
            None
        );
    }

    #[test]
    fn a_bad_value_names_the_variable_the_value_and_what_is_accepted_and_keeps_the_default() {
        let s = settings(&[
            ("METRON_BUFFER_SIZE", "12Q"),
            ("METRON_BUFFER_POLICY", "sometimes"),
            ("METRON_FLUSH_INTERVAL", "5 fortnights"),
            ("METRON_BUFFER_WATERMARK", "0"),
            ("METRON_ENABLED", "maybe"),
        ]);
        assert_eq!(s.errors.len(), 5);
        assert_eq!(s.buffer_bytes, 256 << 10);
        assert_eq!(s.policy, Policy::Lossless);
        assert!(s.enabled);
        let text = s.errors[0].to_string();
        assert_eq!(
            text,
            "METRON_ENABLED=\"maybe\" is not accepted: expected a boolean: 1, 0, true, false, yes, no, on or off; using the default \"true\""
        );
        let policy = s
            .errors
            .iter()
            .find(|e| e.name == "METRON_BUFFER_POLICY")
            .unwrap();
        assert!(policy.to_string().contains("one of: lossless, discard"));
    }

    #[test]
    fn a_buffer_smaller_than_the_minimum_is_rejected() {
        let s = settings(&[("METRON_BUFFER_SIZE", "100")]);
        assert_eq!(s.errors.len(), 1);
        assert_eq!(s.buffer_bytes, 256 << 10);
    }
}
