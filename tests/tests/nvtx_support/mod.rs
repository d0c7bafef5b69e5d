//! Helpers of the NVTX and ROCTx tests: where the nvtx3 headers are, compiling the programs of
//! `tests/nvtx/`, reading what they printed, and decoding the trace with the independent
//! validator (`tests/perfetto/validate_trace.py`).
#![allow(dead_code)]

use crate::c_api_support::*;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The folder holding `nvtx3/nvToolsExt.h`: `$METRON_NVTX_INCLUDE`, or where
/// `scripts/install-deps.sh` (the `nvidia-nvtx` wheel) or `cuda-toolchain.sh` unpacked it.
/// `None` (the test then skips, saying why) when none has it.
pub fn nvtx_include() -> Option<PathBuf> {
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_default();
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| home.join(".cache"));
    let mut candidates: Vec<PathBuf> = std::env::var_os("METRON_NVTX_INCLUDE")
        .map(PathBuf::from)
        .into_iter()
        .collect();
    candidates.push(cache.join("metron-nvtx/nvidia/cu13/include"));
    candidates.push(cache.join("metron-cuda/nvidia/cu13/include"));
    candidates.push(PathBuf::from("/usr/local/cuda/include"));
    candidates
        .into_iter()
        .find(|dir| dir.join("nvtx3/nvToolsExt.h").is_file())
}

/// [`nvtx_include`], or a printed reason to skip.
pub fn nvtx_include_or_skip(test: &str) -> Option<PathBuf> {
    let found = nvtx_include();
    if found.is_none() {
        eprintln!(
            "SKIPPED {test}: the NVTX v3 headers (nvtx3/nvToolsExt.h) were not found; run \
             scripts/install-deps.sh (it unpacks the nvidia-nvtx wheel into \
             ~/.cache/metron-nvtx) or set METRON_NVTX_INCLUDE"
        );
    }
    found
}

/// A source of `tests/nvtx/`.
pub fn source(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("nvtx")
        .join(name)
}

/// Compiles C (`.c`) or C++ (`.cpp`) sources into `out` (an executable, or a shared library
/// when `shared`), with warnings as errors; `extra` goes last (libraries).
pub fn cc(sources: &[PathBuf], out: &Path, include: Option<&Path>, shared: bool, extra: &[String]) {
    let cpp = sources
        .iter()
        .any(|s| s.extension().is_some_and(|e| e == "cpp"));
    let mut cmd = Command::new(if cpp { "c++" } else { "cc" });
    cmd.arg(if cpp { "-std=c++17" } else { "-std=c99" })
        .args(["-Wall", "-Wextra", "-Werror", "-O2", "-g", "-fPIC"]);
    if let Some(dir) = include {
        cmd.arg("-I").arg(dir);
    }
    if shared {
        cmd.arg("-shared");
    }
    cmd.args(sources)
        .arg("-o")
        .arg(out)
        .args(extra)
        .args(["-lpthread", "-ldl"]);
    let result = cmd.output().expect("run the C compiler");
    assert!(
        result.status.success(),
        "compiling {sources:?} failed:\n{}",
        String::from_utf8_lossy(&result.stderr)
    );
}

/// Runs `exe` with its run folder at `dir/run`, the trace on, and `env`.
pub fn run_traced(exe: &Path, dir: &Path, env: &[(&str, &str)]) -> Output {
    let mut env = env.to_vec();
    env.push(("METRON_TRACE", "true"));
    let out = run_in(exe, dir, &[], &env);
    assert_success(&out, &exe.display().to_string());
    out
}

/// The `key=value` lines a test program printed.
pub fn printed(out: &Output) -> BTreeMap<String, i64> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.trim().parse().expect("an integer")))
        .collect()
}

/// The summary's thread named `name`.
pub fn summary_thread<'a>(summary: &'a Value, name: &str) -> &'a Value {
    summary["threads"]
        .as_array()
        .expect("threads")
        .iter()
        .find(|t| t["name"] == name)
        .unwrap_or_else(|| panic!("no thread named {name} in {}", summary["threads"]))
}

/// Async ranges of the summary: name → (count, cross-thread count).
pub fn async_ranges(summary: &Value) -> BTreeMap<String, (u64, u64)> {
    summary["async_ranges"]["ranges"]
        .as_array()
        .expect("async_ranges.ranges")
        .iter()
        .map(|r| {
            (
                r["name"].as_str().unwrap().to_string(),
                (
                    r["count"].as_u64().unwrap(),
                    r["cross_thread"].as_u64().unwrap(),
                ),
            )
        })
        .collect()
}

/// Marks of the summary: name → count.
pub fn marks(summary: &Value) -> BTreeMap<String, u64> {
    summary["marks"]
        .as_array()
        .expect("marks")
        .iter()
        .map(|m| {
            (
                m["name"].as_str().unwrap().to_string(),
                m["count"].as_u64().unwrap(),
            )
        })
        .collect()
}

/// Decodes `trace` with `tests/perfetto/validate_trace.py --slices`; fails when Python's
/// `perfetto` package is missing (scripts/install-deps.sh installs it) or a check fails.
pub fn decoded_trace(trace: &Path) -> Value {
    let validator = Path::new(env!("CARGO_MANIFEST_DIR")).join("perfetto/validate_trace.py");
    let out = Command::new("python3")
        .arg(validator)
        .arg(trace)
        .arg("--slices")
        .output()
        .expect("run validate_trace.py");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_ne!(
        out.status.code(),
        Some(2),
        "validate_trace.py could not run (scripts/install-deps.sh installs `perfetto`): {stderr}"
    );
    let json: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("validator output is not JSON ({e}): {stderr}"));
    assert!(
        out.status.success(),
        "trace checks failed: {}",
        json["checks"]
    );
    json
}

/// A slice of the decoded trace.
#[derive(Debug)]
pub struct Slice {
    pub name: String,
    pub depth: u64,
    /// The track's name: a thread's name, or an async track's.
    pub track: String,
    /// The track's uuid.
    pub track_uuid: u64,
    /// True on a thread track.
    pub on_thread: bool,
    pub args: Value,
    /// Start and duration, in the trace's timestamps (Metron's clock, ns).
    pub ts: u64,
    pub dur: u64,
}

/// Every slice of the decoded trace, with its track.
pub fn slices(trace: &Value) -> Vec<Slice> {
    let tracks: BTreeMap<u64, &Value> = trace["tracks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t["uuid"].as_u64().unwrap(), t))
        .collect();
    trace["slices"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            let track = tracks[&s["track"].as_u64().unwrap()];
            Slice {
                name: s["name"].as_str().unwrap_or("?").to_string(),
                depth: s["depth"].as_u64().unwrap(),
                track: track["name"].as_str().unwrap_or("").to_string(),
                track_uuid: track["uuid"].as_u64().unwrap(),
                on_thread: track["type"] == "thread",
                args: s["args"].clone(),
                ts: s["ts"].as_u64().unwrap_or(0),
                dur: s["dur"].as_u64().unwrap_or(0),
            }
        })
        .collect()
}

/// The slices on tracks whose name starts with `prefix`.
pub fn slices_on(trace: &Value, prefix: &str) -> Vec<Slice> {
    slices(trace)
        .into_iter()
        .filter(|s| s.track.starts_with(prefix))
        .collect()
}

/// The decoded slice named `name` (exactly one).
pub fn slice<'a>(all: &'a [Slice], name: &str) -> &'a Slice {
    let found: Vec<&Slice> = all.iter().filter(|s| s.name == name).collect();
    assert_eq!(found.len(), 1, "slices named {name}: {found:?}");
    found[0]
}
