//! `metron run` of a command that is a tree of processes (a launcher script, `env`, shells,
//! then the real program): one run folder, trivial processes listed in `processes.json`, the
//! working process's files as the run folder's own, a merged trace when several processes
//! worked, the exit status of the command, and `METRON_PROCESSES=separate` for the old layout.

mod c_api_support;
use c_api_support::*;
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output};

fn metron_run(dir: &Path, script: &str, env: &[(&str, &str)]) -> Output {
    metron_run_into(dir, &dir.join("run"), script, env)
}

/// `metron run -o OUTPUT -- sh DIR/launch.sh` with `script` as launch.sh.
fn metron_run_into(dir: &Path, output: &Path, script: &str, env: &[(&str, &str)]) -> Output {
    let path = dir.join("launch.sh");
    std::fs::write(&path, script).expect("write the script");
    let mut cmd = Command::new(artifacts().metron());
    cmd.args(["run", "-o"])
        .arg(output)
        .args(["--", "sh"])
        .arg(&path)
        .current_dir(dir)
        .env("METRON_REPORT", "false")
        .env_remove("LD_PRELOAD")
        .env_remove("METRON_PRELOAD")
        .env_remove("METRON_OUTPUT_PATH")
        .env_remove("METRON_PROCESSES")
        .env_remove("METRON_RUN_FOLDER");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("run metron run")
}

fn worker(dir: &Path) -> std::path::PathBuf {
    compile(&program("tree_worker.c"), dir, &[])
}

/// Count of `work` regions anywhere in the summary's merged region tree.
fn work_count(summary: &Value) -> u64 {
    fn walk(nodes: &Value) -> u64 {
        nodes.as_array().map_or(0, |nodes| {
            nodes
                .iter()
                .map(|n| {
                    let own = if n["name"] == "work" {
                        n["count"].as_u64().unwrap_or(0)
                    } else {
                        0
                    };
                    own + walk(&n["children"])
                })
                .sum()
        })
    }
    walk(&summary["merged"])
}

fn last_line(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr)
        .lines()
        .last()
        .unwrap_or("")
        .to_string()
}

#[test]
fn a_launcher_script_gives_one_run_folder_with_the_programs_files() {
    let dir = temp_dir("tree-one");
    let exe = worker(&dir);
    let script = format!(
        "env true\n/bin/true\nsh -c 'true'\nexec {} 25 3\n",
        exe.display()
    );
    let out = metron_run(&dir, &script, &[]);
    // The command's exit status is metron run's.
    assert_eq!(out.status.code(), Some(3), "{}", last_line(&out));
    let run = dir.join("run");
    let folders = run_folders(&dir);
    assert_eq!(folders, vec![run.clone()], "one run folder");
    // The worker's outputs are the run folder's own.
    let summary = read_json(&run, "summary.json");
    assert_eq!(work_count(&summary), 25, "{summary}");
    let index = read_json(&run, "processes.json");
    let processes = index["processes"].as_array().expect("processes");
    assert!(processes.len() >= 4, "sh, env, true, sh, worker: {index}");
    let kept: Vec<&Value> = processes
        .iter()
        .filter(|p| !p["trivial"].as_bool().unwrap())
        .collect();
    assert_eq!(kept.len(), 1, "only the worker did work: {index}");
    assert_eq!(kept[0]["exe"], "tree_worker", "{index}");
    assert_eq!(kept[0]["folder"], ".", "{index}");
    assert_eq!(kept[0]["exit"]["code"], 3, "{index}");
    for p in processes.iter().filter(|p| p["trivial"].as_bool().unwrap()) {
        assert!(
            p["folder"].is_null(),
            "a trivial process has no folder: {p}"
        );
    }
    // No other folder under the run folder.
    let subfolders: Vec<_> = std::fs::read_dir(&run)
        .unwrap()
        .flatten()
        .filter(|e| e.path().is_dir())
        .collect();
    assert!(subfolders.is_empty(), "{subfolders:?}");
    let line = last_line(&out);
    assert!(
        line.starts_with(&format!("metron: wrote {} (", run.display()))
            && line.contains("the work in tree_worker"),
        "the last line names the run folder and the process that did the work: {line}"
    );
    let wrote = String::from_utf8_lossy(&out.stderr)
        .matches("metron: wrote")
        .count();
    assert_eq!(
        wrote,
        1,
        "one line for the whole tree:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// `%pid%` in the run folder's name is the command's pid, as in its summary and metadata, not
/// the launcher's (which the folder carries while the tree runs).
#[test]
fn the_run_folder_is_named_after_the_commands_pid() {
    let dir = temp_dir("tree-pid");
    let exe = worker(&dir);
    let out = metron_run_into(
        &dir,
        &dir.join("runs/%exe%-%pid%"),
        &format!("exec {} 5 0\n", exe.display()),
        &[],
    );
    assert!(out.status.success(), "{}", last_line(&out));
    let folders: Vec<_> = std::fs::read_dir(dir.join("runs"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    assert_eq!(folders.len(), 1, "{folders:?}");
    let run = &folders[0];
    let index = read_json(run, "processes.json");
    let command = index["command_pid"].as_u64().expect("command_pid");
    assert_eq!(
        run.file_name().unwrap().to_string_lossy(),
        format!("sh-{command}"),
        "{index}"
    );
    // `exec` keeps the pid: the worker's metadata names the same process and the folder.
    let meta = read_json(run, "metadata.json");
    assert_eq!(
        meta["run"]["pid"].as_u64(),
        Some(command),
        "{}",
        meta["run"]
    );
    assert_eq!(
        meta["run"]["output_dir"].as_str(),
        Some(run.to_str().unwrap()),
        "{}",
        meta["run"]
    );
    let line = last_line(&out);
    assert!(
        line.starts_with(&format!("metron: wrote {} (", run.display())),
        "{line}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn two_working_processes_keep_their_folders_and_are_merged() {
    let dir = temp_dir("tree-two");
    let exe = worker(&dir);
    let script = format!(
        "{exe} 10 0 &\n{exe} 30 0\nwait\n/bin/true\n",
        exe = exe.display()
    );
    let out = metron_run(&dir, &script, &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let run = dir.join("run");
    let index = read_json(&run, "processes.json");
    let kept: Vec<&Value> = index["processes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| !p["trivial"].as_bool().unwrap())
        .collect();
    let workers: Vec<&&Value> = kept.iter().filter(|p| p["exe"] == "tree_worker").collect();
    assert_eq!(workers.len(), 2, "{index}");
    let mut counts = Vec::new();
    for w in &workers {
        let folder = run.join(w["folder"].as_str().expect("a subfolder"));
        counts.push(work_count(&read_json(&folder, "summary.json")));
    }
    counts.sort_unstable();
    assert_eq!(counts, vec![10, 30]);
    // The merged view: one trace with a process track per kept process, and a summary.
    // On one clock (the merge's CLOCK_REALTIME), one process track per working process.
    metron_tests::validated_trace(
        &run.join("trace.pftrace"),
        &["--clock", "realtime", "--processes", "2"],
    );
    let merged = std::fs::read_to_string(run.join("summary.txt")).expect("merged summary.txt");
    assert!(merged.contains("work"), "{merged}");
    let line = last_line(&out);
    assert!(line.contains("the work in tree_worker"), "{line}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn separate_keeps_one_folder_per_process() {
    let dir = temp_dir("tree-separate");
    let exe = worker(&dir);
    let script = format!("/bin/true\n{} 5 0\n", exe.display());
    let out = metron_run(&dir, &script, &[("METRON_PROCESSES", "separate")]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let folders = run_folders(&dir);
    assert!(
        folders.len() >= 3,
        "sh, true and the worker each: {folders:?}"
    );
    assert!(!dir.join("run/processes.json").exists());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_termination_signal_sent_to_metron_run_reaches_the_command_and_ends_both() {
    use std::os::unix::process::ExitStatusExt;
    let dir = temp_dir("tree-signal");
    let child = Command::new(artifacts().metron())
        .args(["run", "-o"])
        .arg(dir.join("run"))
        .args(["--", "sleep", "30"])
        .env("METRON_REPORT", "false")
        .env_remove("LD_PRELOAD")
        .env_remove("METRON_PRELOAD")
        .env_remove("METRON_OUTPUT_PATH")
        .env_remove("METRON_PROCESSES")
        .env_remove("METRON_RUN_FOLDER")
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start metron run");
    // Wait until the command catches SIGTERM (Metron's handler is installed: SigCgt in
    // /proc), then signal the launcher alone, as a batch system would.
    let launcher = child.id();
    let catches_sigterm = || -> bool {
        let children =
            std::fs::read_to_string(format!("/proc/{launcher}/task/{launcher}/children"))
                .unwrap_or_default();
        children.split_whitespace().any(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/status"))
                .unwrap_or_default()
                .lines()
                .find_map(|l| l.strip_prefix("SigCgt:"))
                .and_then(|mask| u64::from_str_radix(mask.trim(), 16).ok())
                .is_some_and(|mask| mask & (1 << (libc::SIGTERM - 1)) != 0)
        })
    };
    let started = std::time::Instant::now();
    while !catches_sigterm() {
        assert!(
            started.elapsed() < std::time::Duration::from_secs(60),
            "the command never installed Metron's SIGTERM handler"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // SAFETY: kill with a valid pid and signal has no memory effects.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let out = child.wait_with_output().expect("wait for metron run");
    assert_eq!(
        out.status.signal(),
        Some(libc::SIGTERM),
        "metron run ends by the command's signal: {:?}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let run = dir.join("run");
    let index = read_json(&run, "processes.json");
    assert_eq!(
        index["processes"][0]["exit"]["signal"],
        libc::SIGTERM,
        "the command died by the forwarded signal: {index}"
    );
    // METRON_SIGNALS (auto: on under metron run) wrote the command's run before it died.
    let summary = read_json(&run, "summary.json");
    assert_eq!(summary["exe"], "sleep", "{summary}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A program that records nothing of its own but runs for over a second keeps its folder (its
/// duration is what a user reads), while the shell that waited for it stays trivial.
#[test]
fn a_long_program_that_records_nothing_keeps_its_folder_and_its_shell_does_not() {
    let dir = temp_dir("tree-long");
    let out = metron_run(&dir, "sleep 1.2\n", &[]);
    assert_eq!(out.status.code(), Some(0), "{}", last_line(&out));
    let run = dir.join("run");
    let processes = read_json(&run, "processes.json");
    let list = processes["processes"]
        .as_array()
        .expect("processes.json lists the processes");
    let sleep = list
        .iter()
        .find(|p| p["exe"] == "sleep")
        .unwrap_or_else(|| panic!("sleep is listed: {processes}"));
    assert_eq!(sleep["trivial"], false, "{sleep}");
    let shell = list
        .iter()
        .find(|p| p["exe"] == "sh" || p["exe"] == "dash" || p["exe"] == "bash")
        .unwrap_or_else(|| panic!("the shell is listed: {processes}"));
    assert_eq!(shell["trivial"], true, "{shell}");
    // The one process kept: its files are the run folder's own, with its duration.
    let metadata = read_json(&run, "metadata.json");
    assert_eq!(metadata["run"]["exe"], "sleep", "{}", metadata["run"]);
    let ns =
        metadata["run"]["end_ns"].as_u64().unwrap() - metadata["run"]["start_ns"].as_u64().unwrap();
    assert!(ns >= 1_000_000_000, "sleep ran {ns} ns");
    assert!(
        last_line(&out).contains("1 trivial one listed"),
        "{}",
        last_line(&out)
    );
}
