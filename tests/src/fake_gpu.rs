//! A fake GPU backend for tests that drive Metron's GPU pipeline inside their own process,
//! without a GPU: the test starts the runtime with [`start`], submits records with
//! `metron::gpu::submit` and reads the run folder after `metron::finish`.

use metron::gpu::{Backend, GpuDevice};
use serde_json::Value;
use std::path::PathBuf;

/// A backend `flush` with nothing pending.
pub fn no_flush(_at_end: bool) {}

/// A backend's `metadata.json` section: `{"backend": "fake", "enabled": true}`.
pub fn metadata() -> Value {
    serde_json::json!({"backend": "fake", "enabled": true})
}

/// Starts Metron in this process with a fake GPU backend: moves the run folder to
/// `<temp dir>/<prefix>-<pid>` (before anything is flushed), starts the runtime, and registers
/// a backend with `flush`, `metadata` and stream word `stream`, whose devices are `devices`
/// (the i-th name is device index i). Panics if any step fails (the path is refused, the
/// runtime does not start, a backend is already registered). Returns the run folder, for the
/// test to remove.
pub fn start(prefix: &str, flush: fn(bool), metadata: fn() -> Value, devices: &[&str]) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("{prefix}-{}", std::process::id()));
    metron::set_output_path(&dir.to_string_lossy()).expect("nothing flushed yet");
    assert!(metron::init());
    let devices = devices
        .iter()
        .zip(0u32..)
        .map(|(name, index)| GpuDevice {
            index,
            name: (*name).into(),
        })
        .collect();
    assert!(metron::gpu::set_backend(
        Backend {
            flush,
            metadata,
            stream_word: "stream",
        },
        devices,
    ));
    dir
}
