//! Sorting a process tree's folders at the end of `metron run`: which processes did work,
//! which were trivial, and `processes.json`, the index of all of them.

use super::sys::Ended;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Records a process writes with nothing of its own: its program region's begin and end.
const PROGRAM_REGION_RECORDS: u64 = 2;
/// Fewer call-stack samples than this (10 ms of CPU at `metron sample`'s 1 kHz) do not make a
/// process worth a folder: a shell or `env` step of a launcher script takes a few.
const FEW_SAMPLES: u64 = 10;
/// A process that ran this long without starting another traced process keeps its folder even
/// when it recorded nothing: its duration is worth reading. A launcher's steps take
/// milliseconds, and a shell that waits for the real program is that program's parent.
const LONG_ENOUGH_NS: u64 = 1_000_000_000;

/// One process's folder in the tree.
struct Process {
    folder: PathBuf,
    pid: Option<u32>,
    ppid: Option<u32>,
    exe: String,
    argv: Value,
    records: u64,
    dropped: u64,
    samples: u64,
    gpu: bool,
    /// The folder has a `metadata.json`: the process finished writing it.
    complete: bool,
    /// When the run started (`CLOCK_MONOTONIC` ns): orders the images of one pid (`exec`).
    start_ns: u64,
    /// When it ended (`CLOCK_MONOTONIC` ns).
    end_ns: u64,
    died_by: Option<String>,
}

impl Process {
    fn read(folder: &Path) -> Process {
        let json = |file: &str| -> Value {
            std::fs::read_to_string(folder.join(file))
                .ok()
                .and_then(|t| serde_json::from_str(&t).ok())
                .unwrap_or(Value::Null)
        };
        let meta = json("metadata.json");
        let summary = json("summary.json");
        let samples = ["cpu_time", "real_time"]
            .iter()
            .filter_map(|k| meta["sampling"]["samples"][k].as_u64())
            .sum();
        let name = folder
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        // The folder is `<exe>-<pid>` (possibly with a `-N` suffix) when metadata is missing.
        let pid_from_name = name.rsplit('-').find_map(|p| p.parse::<u32>().ok());
        Process {
            folder: folder.to_path_buf(),
            pid: meta["run"]["pid"]
                .as_u64()
                .map(|p| p as u32)
                .or(pid_from_name),
            ppid: meta["process"]["ppid"].as_u64().map(|p| p as u32),
            exe: meta["run"]["exe"]
                .as_str()
                .map_or_else(|| name.clone(), str::to_string),
            argv: meta["run"]["argv"].clone(),
            records: meta["records"]["written"].as_u64().unwrap_or(0),
            dropped: meta["records"]["dropped"].as_u64().unwrap_or(0),
            samples,
            gpu: !summary["gpu"].is_null(),
            complete: !meta.is_null(),
            start_ns: meta["run"]["start_ns"].as_u64().unwrap_or(0),
            end_ns: meta["run"]["end_ns"].as_u64().unwrap_or(0),
            died_by: summary["died"]["signal"]
                .as_str()
                .map(str::to_string)
                .or_else(|| summary["died"]["signal"].as_i64().map(|s| s.to_string())),
        }
    }

    /// Recorded nothing beyond its program region (no region, sample or GPU activity), and
    /// either ran briefly or started another traced process (`parents`: their pids).
    fn trivial(&self, parents: &std::collections::BTreeSet<u32>) -> bool {
        let brief = self.end_ns.saturating_sub(self.start_ns) < LONG_ENOUGH_NS;
        let parent = self.pid.is_some_and(|p| parents.contains(&p));
        self.complete
            && self.records.saturating_sub(self.samples) <= PROGRAM_REGION_RECORDS
            && self.samples < FEW_SAMPLES
            && !self.gpu
            && (brief || parent)
    }

    /// How much it recorded, to name the process that did the work.
    fn work(&self) -> u64 {
        self.records + self.samples
    }
}

/// What the end of a tree run found.
pub(super) struct Outcome {
    processes: usize,
    trivial: usize,
    /// (exe, pid, records, dropped, samples) of the process that recorded the most.
    main: Option<(String, Option<u32>, u64, u64, u64)>,
    records: u64,
    dropped: u64,
    kept_folders: usize,
    problems: Vec<String>,
}

impl Outcome {
    /// The run's last stderr line. It starts as a one-process run's always did
    /// (`metron: wrote DIR (N records, M dropped)`), so tools that read it keep working.
    pub(super) fn last_line(&self, folder: &Path) -> String {
        let mut line = format!(
            "metron: wrote {} ({} records, {} dropped)",
            folder.display(),
            self.records,
            self.dropped
        );
        if self.processes > 1 {
            line.push_str(&format!("; process tree of {}", self.processes));
            if let Some((exe, pid, records, _, samples)) = &self.main {
                let pid = pid.map_or_else(|| "?".to_string(), |p| p.to_string());
                line.push_str(&format!(
                    ", the work in {exe} (pid {pid}: {records} records, {samples} samples)"
                ));
            }
            if self.kept_folders > 1 {
                line.push_str(&format!(
                    ", {} processes in subfolders merged into trace.pftrace and summary.txt",
                    self.kept_folders
                ));
            }
            match self.trivial {
                0 => {}
                1 => line.push_str(", 1 trivial one listed in processes.json"),
                n => line.push_str(&format!(", {n} trivial ones listed in processes.json")),
            }
        }
        if !self.problems.is_empty() {
            line.push_str(&format!("; FAILED: {}", self.problems.join("; ")));
        }
        line
    }
}

/// Sorts the process folders under `folder` (see the module docs of `tree`), writes
/// `processes.json`, and merges when several processes did work.
pub(super) fn sort_folders(
    folder: &Path,
    program: u32,
    statuses: &BTreeMap<u32, Ended>,
    running: &[u32],
) -> Outcome {
    let mut processes: Vec<Process> = std::fs::read_dir(folder)
        .map(|entries| {
            entries
                .flatten()
                .map(|e| e.path())
                .filter(|p| {
                    p.is_dir()
                        && !p
                            .file_name()
                            .is_some_and(|n| n.to_string_lossy().starts_with('.'))
                })
                .map(|p| Process::read(&p))
                .collect()
        })
        .unwrap_or_default();
    processes.sort_by_key(|p| (p.pid, p.start_ns, p.folder.clone()));
    let mut problems = Vec::new();
    // A folder without metadata.json is a run that never finished (a process killed by
    // SIGKILL, or one that left by a path Metron does not see): it stays as it is, listed,
    // and takes no part in choosing or merging the processes that did work.
    let incomplete: Vec<usize> = (0..processes.len())
        .filter(|&i| !processes[i].complete)
        .collect();
    let parents: std::collections::BTreeSet<u32> =
        processes.iter().filter_map(|p| p.ppid).collect();
    let mut keep: Vec<usize> = (0..processes.len())
        .filter(|&i| processes[i].complete && !processes[i].trivial(&parents))
        .collect();
    // A run where nothing did work still shows the command's own process, as it always did.
    if keep.is_empty() {
        let command = processes
            .iter()
            .rposition(|p| p.pid == Some(program))
            .or_else(|| (!processes.is_empty()).then_some(0));
        keep.extend(command);
    }
    let main = keep
        .iter()
        .copied()
        .max_by_key(|&i| (processes[i].work(), processes[i].pid == Some(program)));
    let flatten = keep.len() == 1;
    let mut listed = Vec::new();
    for (i, p) in processes.iter().enumerate() {
        let kept = keep.contains(&i);
        let shown = if incomplete.contains(&i) {
            json!(p
                .folder
                .file_name()
                .map(|n| n.to_string_lossy().into_owned()))
        } else if !kept {
            if let Err(e) = std::fs::remove_dir_all(&p.folder) {
                problems.push(format!("removing {}: {e}", p.folder.display()));
            }
            Value::Null
        } else if flatten {
            json!(".")
        } else {
            json!(p
                .folder
                .file_name()
                .map(|n| n.to_string_lossy().into_owned()))
        };
        // Only a pid's last image ended; the ones before it were replaced by `exec`.
        let replaced = processes
            .get(i + 1)
            .is_some_and(|next| next.pid.is_some() && next.pid == p.pid);
        let exit = if replaced {
            json!({ "exec": true, "seen_by": "a later program of the same pid" })
        } else {
            let ended = p.pid.and_then(|pid| statuses.get(&pid));
            exit_json(ended.copied(), p.died_by.as_deref())
        };
        listed.push(json!({
            "pid": p.pid,
            "ppid": p.ppid,
            "exe": p.exe,
            "argv": p.argv,
            "records": p.records,
            "samples": p.samples,
            "gpu": p.gpu,
            "trivial": !kept && p.complete,
            "folder": shown,
            "complete": p.complete,
            "exit": exit,
            "is_command": p.pid == Some(program),
        }));
    }
    if flatten {
        let only = &processes[keep[0]];
        if let Err(e) = move_up(&only.folder, folder) {
            problems.push(format!("moving {} up: {e}", only.folder.display()));
        }
    } else if keep.len() > 1 {
        let dirs: Vec<PathBuf> = keep
            .iter()
            .map(|&i| processes[i].folder.clone())
            .filter(|d| d.join("metadata.json").is_file())
            .collect();
        if dirs.len() > 1 {
            if let Err(e) = crate::merge::merge_folders(dirs, folder.to_path_buf()) {
                problems.push(format!("merging the processes: {e}"));
            }
        }
    }
    let index = json!({
        "schema": "metron.processes/1",
        "command_pid": program,
        "note": "every program of the run's tree that started Metron (an exec gives the pid a new entry); trivial ones recorded nothing beyond their program region and fewer than 10 samples, no GPU activity, ran under 1 s or started another traced process, and have no folder; exit: from metron run's wait where it reaped the process (the command, and orphans), else the signal it died by, else null (reaped by its own parent)",
        "processes": listed,
        "still_running": running,
    });
    let text = serde_json::to_string_pretty(&index).unwrap_or_default();
    if let Err(e) = std::fs::write(folder.join("processes.json"), text + "\n") {
        problems.push(format!("processes.json: {e}"));
    }
    let records = keep.iter().map(|&i| processes[i].records).sum();
    let dropped = keep.iter().map(|&i| processes[i].dropped).sum();
    Outcome {
        processes: processes.len(),
        trivial: processes.len() - keep.len() - incomplete.len(),
        main: main.map(|i| {
            let p = &processes[i];
            (p.exe.clone(), p.pid, p.records, p.dropped, p.samples)
        }),
        records,
        dropped,
        kept_folders: keep.len(),
        problems,
    }
}

fn exit_json(reaped: Option<Ended>, died_by: Option<&str>) -> Value {
    match (reaped, died_by) {
        (Some(Ended::Exited(code)), _) => json!({ "code": code, "seen_by": "metron run" }),
        (Some(Ended::Signaled(signal)), _) => json!({ "signal": signal, "seen_by": "metron run" }),
        (None, Some(signal)) => {
            json!({ "signal": signal, "seen_by": "the process (crash handler)" })
        }
        // Reaped by its own parent, which metron run cannot see.
        (None, None) => Value::Null,
    }
}

/// Renames the run folder `from` to `to` (the same folder named after the command's pid) and
/// the paths its `metadata.json` files give; returns the folder's name after (`from` when `to`
/// exists or the rename fails: the run stays where it was written).
pub(super) fn rename_run_folder(from: &Path, to: &Path) -> std::path::PathBuf {
    if from == to || to.exists() || std::fs::rename(from, to).is_err() {
        return from.to_path_buf();
    }
    let (old, new) = (from.display().to_string(), to.display().to_string());
    let mut metadata = vec![to.join("metadata.json")];
    if let Ok(entries) = std::fs::read_dir(to) {
        metadata.extend(entries.flatten().map(|e| e.path().join("metadata.json")));
    }
    for meta in metadata {
        let Some(mut doc) = std::fs::read_to_string(&meta)
            .ok()
            .and_then(|t| serde_json::from_str::<Value>(&t).ok())
        else {
            continue;
        };
        let Some(dir) = doc["run"]["output_dir"].as_str() else {
            continue;
        };
        if let Some(rest) = dir.strip_prefix(&old) {
            doc["run"]["output_dir"] = json!(format!("{new}{rest}"));
            let _ = std::fs::write(
                &meta,
                serde_json::to_string_pretty(&doc).unwrap_or_default() + "\n",
            );
        }
    }
    to.to_path_buf()
}

/// Moves every entry of `from` into `to` and removes `from`.
fn move_up(from: &Path, to: &Path) -> std::io::Result<()> {
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        std::fs::rename(entry.path(), to.join(entry.file_name()))?;
    }
    std::fs::remove_dir(from)?;
    // The metadata says where the run was written: now the run folder itself.
    let meta = to.join("metadata.json");
    if let Some(mut doc) = std::fs::read_to_string(&meta)
        .ok()
        .and_then(|t| serde_json::from_str::<Value>(&t).ok())
    {
        doc["run"]["output_dir"] = json!(to.display().to_string());
        std::fs::write(
            &meta,
            serde_json::to_string_pretty(&doc).unwrap_or_default() + "\n",
        )?;
    }
    Ok(())
}

/// Processes that are still this process's children (descendants reparented here).
pub(super) fn children_of_self() -> Vec<u32> {
    let pid = std::process::id();
    std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
        .map(|t| {
            t.split_whitespace()
                .filter_map(|p| p.parse().ok())
                .collect()
        })
        .unwrap_or_default()
}
