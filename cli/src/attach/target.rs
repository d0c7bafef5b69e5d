//! The process `metron sample --pid` samples, as `/proc` shows it: its threads and their
//! names, whether it exited, whether it already runs Metron (and where its run folder is),
//! and the message for a refused `perf_event_open`.

use super::sys;
use std::path::PathBuf;

/// The target as `/proc` shows it.
pub(super) struct Target {
    pub(super) pid: u32,
    pub(super) exe: String,
    pub(super) argv: Vec<String>,
    /// Its `PYTHONPERFSUPPORT` (Python's perf maps: `py::` frames), read at attach time.
    pub(super) python_perf_support: Option<String>,
}

impl Target {
    pub(super) fn read(pid: u32) -> Result<Target, String> {
        let proc = PathBuf::from(format!("/proc/{pid}"));
        if !proc.join("stat").exists() {
            return Err(format!(
                "no process {pid} (/proc/{pid} does not exist); give the pid of a running process"
            ));
        }
        let argv: Vec<String> = std::fs::read(proc.join("cmdline"))
            .unwrap_or_default()
            .split(|&b| b == 0)
            .filter(|a| !a.is_empty())
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect();
        let exe = std::fs::read_link(proc.join("exe"))
            .ok()
            .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
            .or_else(|| {
                std::fs::read_to_string(proc.join("comm"))
                    .ok()
                    .map(|s| s.trim().to_string())
            })
            .unwrap_or_else(|| format!("pid{pid}"));
        let python_perf_support = std::fs::read(proc.join("environ"))
            .unwrap_or_default()
            .split(|&b| b == 0)
            .find_map(|kv| kv.strip_prefix(b"PYTHONPERFSUPPORT="))
            .map(|v| String::from_utf8_lossy(v).into_owned());
        Ok(Target {
            pid,
            exe,
            argv,
            python_perf_support,
        })
    }

    pub(super) fn tids(&self) -> Vec<u32> {
        let mut tids: Vec<u32> = std::fs::read_dir(format!("/proc/{}/task", self.pid))
            .map(|d| {
                d.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
                    .collect()
            })
            .unwrap_or_default();
        tids.sort_unstable();
        tids
    }

    pub(super) fn thread_name(&self, tid: u32) -> Option<String> {
        std::fs::read_to_string(format!("/proc/{}/task/{tid}/comm", self.pid))
            .ok()
            .map(|s| s.trim_end().to_string())
    }

    /// Gone, or a zombie.
    pub(super) fn exited(&self) -> bool {
        match std::fs::read_to_string(format!("/proc/{}/stat", self.pid)) {
            Ok(stat) => stat
                .rsplit_once(')')
                .is_some_and(|(_, rest)| rest.trim_start().starts_with(['Z', 'X'])),
            Err(_) => true,
        }
    }

    /// If the target runs Metron (a thread of Metron's, `metron-*`, or `libmetron` mapped),
    /// where its run folder is, as well as can be told.
    pub(super) fn metron_run_folder(&self) -> Option<String> {
        let proc = format!("/proc/{}", self.pid);
        let threads = self.tids().into_iter().any(|t| {
            self.thread_name(t)
                .is_some_and(|n| n.starts_with("metron-"))
        });
        let library =
            std::fs::read_to_string(format!("{proc}/maps")).is_ok_and(|m| m.contains("/libmetron"));
        if !threads && !library {
            return None;
        }
        // A file it writes in its run folder (the trace is written while it runs).
        if let Ok(fds) = std::fs::read_dir(format!("{proc}/fd")) {
            for fd in fds.flatten() {
                if let Ok(target) = std::fs::read_link(fd.path()) {
                    if target.extension().is_some_and(|e| e == "pftrace") {
                        if let Some(dir) = target.parent() {
                            return Some(dir.display().to_string());
                        }
                    }
                }
            }
        }
        let environ = std::fs::read(format!("{proc}/environ")).unwrap_or_default();
        let template = environ
            .split(|&b| b == 0)
            .filter_map(|kv| std::str::from_utf8(kv).ok())
            .find_map(|kv| kv.strip_prefix("METRON_OUTPUT_PATH="))
            .map(str::to_string);
        let cwd = std::fs::read_link(format!("{proc}/cwd")).unwrap_or_default();
        Some(match template {
            Some(t) => format!(
                "{t} (METRON_OUTPUT_PATH of the process, with its pid {})",
                self.pid
            ),
            None => format!(
                "{}/metron-output/{}-{}-<start time> (the default, in its working directory)",
                cwd.display(),
                self.exe,
                self.pid
            ),
        })
    }
}

/// `kernel.perf_event_paranoid`, if readable.
pub(super) fn paranoid() -> Option<i32> {
    std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// The message for a refused `perf_event_open`.
pub(super) fn refusal(pid: u32, errno: i32, paranoid: Option<i32>) -> String {
    let level = paranoid.map_or("unknown".to_string(), |p| p.to_string());
    format!(
        "not allowed to sample process {pid}: perf_event_open refused ({}). Sampling another \
         process needs kernel.perf_event_paranoid <= 2 (it is {level}; e.g. `sudo sysctl \
         kernel.perf_event_paranoid=2`) and ptrace permission over it (run metron as the \
         process's user, or with CAP_PERFMON or CAP_SYS_PTRACE)",
        sys::strerror(errno)
    )
}
