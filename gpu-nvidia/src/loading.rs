//! Loading and probing: nothing is linked. The driver is `libcuda.so.1`; CUPTI is the copy
//! the application already loaded (`dlopen("libcupti.so.13", RTLD_NOLOAD)`, e.g. PyTorch's),
//! else the soname, else the known install paths ([`CUPTI_PATHS`] and
//! `<venv>/lib/python3*/site-packages/nvidia/cu13/lib`). When anything is missing the backend
//! is off and says why ([`Status::reason`]); nothing panics.

use crate::{register_info, sys};
use metron::gpu::GpuDevice;
use serde_json::{json, Value};
use std::sync::{Mutex, OnceLock};

/// Where CUPTI is looked for after the already-loaded copy and the soname.
pub const CUPTI_PATHS: &[&str] = &[
    "/usr/local/cuda/targets/x86_64-linux/lib/libcupti.so.13",
    "/usr/local/cuda/lib64/libcupti.so.13",
    "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so.13",
];

/// What the backend found and did.
#[derive(Clone, Debug, Default)]
pub struct Status {
    /// Tracing is on.
    pub enabled: bool,
    /// Why it is off (`None` when on).
    pub reason: Option<String>,
    /// The driver library's path.
    pub driver_path: Option<String>,
    /// `cuDriverGetVersion` (e.g. 13000).
    pub driver_version: Option<i32>,
    /// The CUPTI library's path.
    pub cupti_path: Option<String>,
    /// True when CUPTI was the copy the application had already loaded.
    pub cupti_reused: bool,
    /// `cuptiGetVersion`.
    pub cupti_version: Option<u32>,
    /// The GPUs (when the driver was initialized).
    pub devices: Vec<GpuDevice>,
}

impl Status {
    pub(crate) fn off(reason: String) -> Status {
        Status {
            reason: Some(reason),
            ..Status::default()
        }
    }

    /// As JSON (for `metron avail` and `metadata.json`).
    pub fn to_json(&self) -> Value {
        json!({
            "backend": "cupti",
            "enabled": self.enabled,
            "reason": self.reason,
            "driver": self.driver_path,
            "driver_version": self.driver_version,
            "cupti": self.cupti_path,
            "cupti_reused_from_application": self.cupti_reused,
            "cupti_version": self.cupti_version,
            "devices": self.devices,
        })
    }
}

/// The driver and CUPTI, loaded once by [`crate::start`].
pub(crate) struct Loaded {
    pub(crate) driver: sys::Driver,
    pub(crate) cupti: sys::Cupti,
}

pub(crate) static LOADED: OnceLock<Loaded> = OnceLock::new();
pub(crate) static STATUS: Mutex<Option<Status>> = Mutex::new(None);
pub(crate) fn load_driver() -> Result<(sys::Driver, String), String> {
    let handle = sys::dlopen("libcuda.so.1", true)
        .or_else(|_| sys::dlopen("libcuda.so.1", false))
        .map_err(|e| format!("libcuda.so.1 not found: no NVIDIA driver ({e})"))?;
    let path = sys::library_path(handle, "cuInit").unwrap_or_else(|| "libcuda.so.1".into());
    Ok((sys::Driver::load(handle)?, path))
}

/// Venv CUPTI copies: `$VIRTUAL_ENV` and the running Python's prefix.
fn venv_paths() -> Vec<String> {
    let mut roots: Vec<String> = Vec::new();
    if let Ok(v) = std::env::var("VIRTUAL_ENV") {
        roots.push(v);
    }
    if let Ok(exe) = std::env::current_exe() {
        if let Some(prefix) = exe.parent().and_then(|b| b.parent()) {
            roots.push(prefix.to_string_lossy().into_owned());
        }
    }
    let mut out = Vec::new();
    for root in roots {
        if let Ok(dir) = std::fs::read_dir(format!("{root}/lib")) {
            for e in dir.flatten() {
                let name = e.file_name().to_string_lossy().into_owned();
                if name.starts_with("python3") {
                    out.push(format!(
                        "{root}/lib/{name}/site-packages/nvidia/cu13/lib/libcupti.so.13"
                    ));
                }
            }
        }
    }
    out
}

pub(crate) fn load_cupti() -> Result<(sys::Cupti, String, bool), String> {
    let (handle, reused) = match sys::dlopen("libcupti.so.13", true) {
        Ok(h) => (h, true),
        Err(_) => {
            let mut errors = Vec::new();
            let mut found = None;
            let mut candidates = vec!["libcupti.so.13".to_string()];
            candidates.extend(CUPTI_PATHS.iter().map(|s| s.to_string()));
            candidates.extend(venv_paths());
            for c in &candidates {
                match sys::dlopen(c, false) {
                    Ok(h) => {
                        found = Some(h);
                        break;
                    }
                    Err(e) => errors.push(e),
                }
            }
            match found {
                Some(h) => (h, false),
                None => {
                    return Err(format!(
                        "libcupti.so.13 not found (tried the soname, {} and the venv's nvidia/cu13/lib): {}",
                        CUPTI_PATHS.join(", "),
                        errors.first().cloned().unwrap_or_default()
                    ))
                }
            }
        }
    };
    let path =
        sys::library_path(handle, "cuptiGetVersion").unwrap_or_else(|| "libcupti.so.13".into());
    Ok((sys::Cupti::load(handle)?, path, reused))
}

pub(crate) fn devices(driver: &sys::Driver) -> Vec<GpuDevice> {
    let n = driver.device_count().unwrap_or(0);
    (0..n)
        .map(|i| GpuDevice {
            index: i as u32,
            name: driver.device_name(i).unwrap_or_else(|| format!("GPU {i}")),
        })
        .collect()
}

/// Looks for the driver and CUPTI and lists the GPUs (calls `cuInit`), starting nothing.
pub fn probe() -> Status {
    register_info();
    if let Some(s) = STATUS.lock().unwrap_or_else(|e| e.into_inner()).clone() {
        if s.enabled {
            return s;
        }
    }
    let (driver, driver_path) = match load_driver() {
        Ok(d) => d,
        Err(e) => return Status::off(e),
    };
    let mut status = Status {
        driver_path: Some(driver_path),
        driver_version: driver.version(),
        ..Status::default()
    };
    let r = driver.cu_init();
    if r != 0 {
        status.reason = Some(format!(
            "cuInit failed with CUDA error {r}: the driver found no usable GPU"
        ));
        return status;
    }
    status.devices = devices(&driver);
    if status.devices.is_empty() {
        status.reason = Some("the CUDA driver reports no GPU".into());
        return status;
    }
    match load_cupti() {
        Ok((cupti, path, reused)) => {
            status.cupti_version = cupti.version();
            status.cupti_path = Some(path);
            status.cupti_reused = reused;
            status.reason = Some("not started (available)".into());
        }
        Err(e) => status.reason = Some(e),
    }
    status
}

/// The backend's status: what [`start`] found (or `None` before any start).
pub fn status() -> Option<Status> {
    STATUS.lock().unwrap_or_else(|e| e.into_inner()).clone()
}
