//! `metron sample [--freq N] [--realtime] [run flags] [--] cmd args`: `metron run` with
//! call-stack sampling on; `metron sample --pid PID` attaches to a running process instead
//! (`attach/`).
//!
//! **Python.** For a Python ≥ 3.12 command, `PYTHONPERFSUPPORT=1` is set (unless the
//! environment already sets it): CPython then runs each Python function through a small
//! trampoline of its own and names it in `/tmp/perf-<pid>.map`, which the symbolizer reads, so
//! samples show `py::function (file.py:line)` frames instead of the interpreter's alone. The
//! choice is recorded as `METRON_SAMPLING_PYTHON` (`on`/`off`) in `metadata.json`.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};

const HELP: &str = "\
Usage: metron sample [--freq N] [--realtime] [--no-cputime] [run flags] [--] <command> [args...]

Runs <command> like `metron run`, with call-stack sampling on (METRON_SAMPLING=on): every
thread, including those started later, is interrupted N times per second of its CPU time and
its stack is recorded. The program needs no change.

Flags:
      --freq <N>        samples per second per thread, 1 to 20000 (METRON_SAMPLING_FREQ,
                        default 1000)
      --realtime        also sample on wall time, so blocked threads show up too
                        (METRON_SAMPLING_REALTIME)
      --no-cputime      do not sample on CPU time (with --realtime: wall time only)
      --python <auto|on|off>
                        Python frames: set PYTHONPERFSUPPORT=1 for the program so each
                        Python function is a frame `py::function (file.py:line)`
                        (METRON_SAMPLING_PYTHON; auto, the default: when the command is
                        Python >= 3.12)
      --pid <PID>       attach to a running process instead of starting one (see
                        `metron sample --pid PID --help`)
  Every flag of `metron run` is accepted too (see `metron run --help`), e.g.
  --sampling-delay 2s, --sampling-duration 10s, --sampling-tids 0,1, --trace-periods ...

Examples:
  metron sample -- ./app input.txt
  metron sample --freq 4000 --realtime -- ./server
  metron sample -- python3 train.py       # Python frames (3.12+): py::step (train.py:40)
  metron sample --pid 4242 --duration 10s
";

/// The `sample` flags as `run` flags, and the Python choice.
#[derive(Debug, PartialEq)]
struct Plan {
    run_args: Vec<String>,
    /// `auto`, `on` or `off` (`--python`, `--sampling-python`, else the environment).
    python: String,
    /// Index in `run_args` of the command (`None`: no command given).
    command: Option<usize>,
}

/// Translates the `sample` flags into `run` flags.
fn to_run_args(args: &[String]) -> Result<Option<Plan>, String> {
    let mut out = vec!["--sampling".to_string(), "on".to_string()];
    let mut python = std::env::var("METRON_SAMPLING_PYTHON").unwrap_or_else(|_| "auto".into());
    let mut i = 0;
    while i < args.len() {
        let arg = &args[i];
        if arg == "--" || !arg.starts_with('-') {
            out.extend(args[i..].iter().cloned());
            return Ok(Some(Plan {
                command: command_index(&out),
                run_args: out,
                python: check_python(python)?,
            }));
        }
        match arg.as_str() {
            "-h" | "--help" => return Ok(None),
            "--python" | "--sampling-python" => {
                i += 1;
                python = args
                    .get(i)
                    .ok_or("metron sample: --python needs a value (auto, on or off)")?
                    .clone();
            }
            "--realtime" => out.extend(["--sampling-realtime".into(), "on".into()]),
            "--no-cputime" => out.extend(["--sampling-cputime".into(), "off".into()]),
            "--freq" => {
                i += 1;
                let v = args
                    .get(i)
                    .ok_or("metron sample: --freq needs a value (samples per second, e.g. 1000)")?;
                out.extend(["--sampling-freq".into(), v.clone()]);
            }
            _ => match arg.strip_prefix("--freq=") {
                Some(v) => out.extend(["--sampling-freq".into(), v.to_string()]),
                None => match arg
                    .strip_prefix("--python=")
                    .or_else(|| arg.strip_prefix("--sampling-python="))
                {
                    Some(v) => python = v.to_string(),
                    None => out.push(arg.clone()),
                },
            },
        }
        i += 1;
    }
    Ok(Some(Plan {
        command: command_index(&out),
        run_args: out,
        python: check_python(python)?,
    }))
}

/// Where the command starts in `run` arguments, by `run`'s rule: every flag takes a value
/// (inline after `=`, else the next argument) except `--sample`; the command follows `--`
/// or is the first argument that is not a flag.
fn command_index(run_args: &[String]) -> Option<usize> {
    let mut i = 0;
    while i < run_args.len() {
        let arg = &run_args[i];
        if arg == "--" {
            return (i + 1 < run_args.len()).then_some(i + 1);
        }
        if !arg.starts_with('-') || arg == "-" {
            return Some(i);
        }
        if !(arg.contains('=') || arg == "--sample") {
            i += 1;
        }
        i += 1;
    }
    None
}

fn check_python(value: String) -> Result<String, String> {
    match value.as_str() {
        "auto" | "on" | "off" => Ok(value),
        _ => Err(format!(
            "metron sample: --python {value:?} is not accepted: expected auto, on or off"
        )),
    }
}

/// The command's path, as `execvp` would find it.
fn resolve(command: &str) -> Option<PathBuf> {
    if command.contains('/') {
        return Some(PathBuf::from(command));
    }
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|dir| dir.join(command))
        .find(|p| p.is_file())
}

/// The (major, minor) version of a Python interpreter `command`, asked of it (with Metron
/// kept out of it); `None` when `command` is not a Python.
fn python_version(command: &str) -> Option<(u32, u32)> {
    let path = resolve(command)?;
    let real = std::fs::canonicalize(&path).unwrap_or_else(|_| path.clone());
    let is_python = |p: &Path| {
        p.file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with("python"))
    };
    if !is_python(&path) && !is_python(&real) {
        return None;
    }
    let out = Command::new(&path)
        .args(["-c", "import sys; print('%d %d' % sys.version_info[:2])"])
        .env_remove("LD_PRELOAD")
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let mut words = text.split_whitespace().map(|w| w.parse::<u32>().ok());
    Some((words.next()??, words.next()??))
}

/// Decides Python's perf support for the command: sets `PYTHONPERFSUPPORT=1` in this
/// process's environment (the program inherits it) and records the choice as
/// `--sampling-python on|off`.
fn apply_python(plan: &mut Plan) {
    let command = plan.command.and_then(|i| plan.run_args.get(i)).cloned();
    let on = match plan.python.as_str() {
        "on" => true,
        "off" => false,
        _ => command
            .as_deref()
            .and_then(python_version)
            .is_some_and(|v| v >= (3, 12)),
    };
    if on && std::env::var_os("PYTHONPERFSUPPORT").is_none() {
        // Single-threaded here, before the program starts.
        std::env::set_var("PYTHONPERFSUPPORT", "1");
    }
    // After `--sampling on`, before every other flag and the command.
    let value = if on { "on" } else { "off" };
    plan.run_args
        .splice(2..2, ["--sampling-python".to_string(), value.to_string()]);
    plan.command = plan.command.map(|i| i + 2);
}

pub(crate) fn main(args: &[String]) -> ExitCode {
    if args
        .iter()
        .take_while(|a| *a != "--")
        .any(|a| a == "--pid" || a.starts_with("--pid="))
    {
        return crate::attach::main(args);
    }
    match to_run_args(args) {
        Ok(Some(mut plan)) => {
            apply_python(&mut plan);
            crate::run::main(&plan.run_args)
        }
        Ok(None) => {
            print!("{HELP}");
            ExitCode::SUCCESS
        }
        Err(message) => crate::usage_error(message.trim_start_matches("metron: ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn sample_flags_become_sampling_settings_and_the_rest_goes_to_run() {
        let run = to_run_args(&args(&[
            "--freq",
            "4000",
            "--realtime",
            "--buffer-size",
            "4M",
            "--",
            "ls",
            "-l",
        ]))
        .unwrap()
        .unwrap();
        assert_eq!(run.command, Some(9));
        assert_eq!(
            run.run_args,
            args(&[
                "--sampling",
                "on",
                "--sampling-freq",
                "4000",
                "--sampling-realtime",
                "on",
                "--buffer-size",
                "4M",
                "--",
                "ls",
                "-l"
            ])
        );
        assert_eq!(
            to_run_args(&args(&["--freq=250", "./app"]))
                .unwrap()
                .unwrap()
                .run_args,
            args(&["--sampling", "on", "--sampling-freq", "250", "./app"])
        );
        assert!(to_run_args(&args(&["--freq"])).is_err());
        assert!(to_run_args(&args(&["--help"])).unwrap().is_none());
    }

    #[test]
    fn the_python_choice_is_checked_and_recorded_before_the_command() {
        let mut plan = to_run_args(&args(&["--python", "off", "--", "python3", "-c", "1"]))
            .unwrap()
            .unwrap();
        assert_eq!(plan.python, "off");
        apply_python(&mut plan);
        assert_eq!(
            plan.run_args,
            args(&[
                "--sampling",
                "on",
                "--sampling-python",
                "off",
                "--",
                "python3",
                "-c",
                "1"
            ])
        );
        let mut plan = to_run_args(&args(&["--python=off", "./app"]))
            .unwrap()
            .unwrap();
        apply_python(&mut plan);
        assert_eq!(
            plan.run_args,
            args(&["--sampling", "on", "--sampling-python", "off", "./app"])
        );
        let err = to_run_args(&args(&["--python", "yes", "./app"])).unwrap_err();
        assert!(err.contains("expected auto, on or off"), "{err}");
    }

    #[test]
    fn a_command_that_is_not_python_has_no_python_version() {
        assert_eq!(python_version("sh"), None);
        assert_eq!(python_version("/nonexistent/python3"), None);
        if let Some(v) = python_version("python3") {
            assert!(v >= (3, 0), "{v:?}");
        }
    }
}
