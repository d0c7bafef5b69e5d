//! One run folder per `metron run`, however many processes the command starts.
//!
//! A command is often a tree: a shell script or a pyenv shim runs `env`, `bash` and helpers
//! before the real program; `make` runs compilers; a launcher forks workers. With each process
//! writing its own folder, one invocation left dozens (`…`, `…-2` … `…-31`), the interesting
//! one last. In tree mode (`METRON_PROCESSES=tree`, the default) `metron run`:
//! 1. claims the run folder itself (the expanded `METRON_OUTPUT_PATH`) and points every
//!    process of the tree at `<run folder>/<exe>-<pid>` (`METRON_RUN_FOLDER` tells them
//!    they are part of a tree, so they leave the last stderr line to it); `%pid%` is the
//!    launcher's until the end, when the folder takes the command's pid;
//! 2. starts the command as its child instead of `exec`ing it, becomes the reaper of the
//!    tree's orphans, forwards termination signals to the command, and waits until the
//!    command and every descendant reparented to it have ended (a descendant still running
//!    [`LINGER`] after the command ended is listed as running, not waited for);
//! 3. sorts the folders: a process that recorded nothing beyond its automatic program region
//!    (no other record, no sample, no GPU activity) and ran under a second or started another
//!    traced process (a shell waiting for the real program) is *trivial*: it is listed in
//!    `processes.json` and its folder removed. If one process recorded something, its files
//!    become the run folder's own (so a one-process command looks as it always did); if
//!    several did, their folders stay and `metron merge` writes the tree's trace and
//!    summary into the run folder (one process track per process);
//! 4. prints one last line naming the process that did the most work, and exits as the
//!    command did (its exit code, or its signal).

mod index;
mod sys;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, ExitCode};
use std::time::{Duration, Instant};

use sys::Ended;

/// How long descendants may outlive the command before the launcher stops waiting for them.
const LINGER: Duration = Duration::from_secs(5);

/// Runs `command` as a process tree recording into one folder made from `template` (the
/// user's `METRON_OUTPUT_PATH`, absolute).
pub(crate) fn run(mut command: Command, template: &Path, exe: &str) -> ExitCode {
    let started = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let template_text = template.to_string_lossy();
    let wanted = metron::expand_output_path_for(&template_text, exe, std::process::id(), started);
    let claim = match metron::claim_run_folder(&wanted) {
        Ok(claim) => claim,
        Err(e) => {
            eprintln!(
                "metron run: cannot create the run folder {}: {e}",
                wanted.display()
            );
            return ExitCode::from(1);
        }
    };
    let folder = claim.path().to_path_buf();
    if folder != wanted {
        eprintln!(
            "metron run: {} is taken; this run writes {}",
            wanted.display(),
            folder.display()
        );
    }
    command
        .env("METRON_OUTPUT_PATH", folder.join("%exe%-%pid%"))
        .env("METRON_RUN_FOLDER", &folder);
    let reaper = sys::become_subreaper();
    let child = match command.spawn() {
        Ok(child) => child,
        Err(e) => {
            drop(claim);
            let _ = std::fs::remove_dir(&folder);
            return crate::run::spawn_failed(exe, &e);
        }
    };
    let program = child.id();
    sys::forward_signals_to(program);
    let (ended, statuses, running) = wait_for_tree(program, reaper);
    let exit = ended.unwrap_or(Ended::Exited(1));
    let outcome = index::sort_folders(&folder, program, &statuses, &running);
    drop(claim);
    // `%pid%` names the program the user ran, as its summary does, not this launcher: the
    // folder had to be claimed before the program had a pid, so it takes the program's now
    // (unless a process of the tree still runs and may write into it, or the name is taken).
    let folder = if template_text.contains("%pid%") && folder == wanted && running.is_empty() {
        let named = metron::expand_output_path_for(&template_text, exe, program, started);
        index::rename_run_folder(&folder, &named)
    } else {
        folder
    };
    eprintln!("{}", outcome.last_line(&folder));
    sys::end_like(exit)
}

/// Waits for the command, then for the descendants reparented here. Returns how the command
/// ended, how every process reaped here ended, and the descendants still running.
fn wait_for_tree(program: u32, reaper: bool) -> (Option<Ended>, BTreeMap<u32, Ended>, Vec<u32>) {
    let mut statuses = BTreeMap::new();
    let mut ended = None;
    while ended.is_none() {
        match sys::wait_any(true) {
            Ok(Some((pid, how))) => {
                statuses.insert(pid, how);
                if pid == program {
                    ended = Some(how);
                }
            }
            Ok(None) => {}
            Err(()) => break,
        }
    }
    if !reaper {
        return (ended, statuses, Vec::new());
    }
    let deadline = Instant::now() + LINGER;
    loop {
        match sys::wait_any(false) {
            Ok(Some((pid, how))) => {
                statuses.insert(pid, how);
                continue;
            }
            Err(()) => return (ended, statuses, Vec::new()),
            Ok(None) => {}
        }
        if Instant::now() >= deadline {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    (ended, statuses, index::children_of_self())
}
