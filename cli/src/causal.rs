//! `metron causal [flags] [--] cmd args`: causal profiling (Coz's virtual speedups).
//!
//! Runs the command `-n` times under `metron run` with CPU-time sampling and
//! `METRON_CAUSAL=on`, each run into `OUT/run-N/`; then merges the runs' `profile.coz` into
//! `OUT/profile.coz` (Coz's format: the runs appended, as `coz run` does), writes the summary
//! (`causal.txt`, `causal.json`), the curves (`causal.svg`) and `report.html` into `OUT`, and
//! prints the summary.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

const HELP: &str = "\
Usage: metron causal [flags] [run flags] [--] <command> [args...]

Causal profiling, as Coz does it: experiments make one line virtually faster (by slowing
every other thread whenever that line runs) and measure how much faster the program's
progress points go. The program counts progress with metron::progress!(\"name\") (Rust),
METRON_PROGRESS(\"name\") / metron_progress(\"name\") (C), Coz's COZ_PROGRESS / COZ_BEGIN /
COZ_END (coz.h, unchanged), --progress FILE:LINE (no change to the program), or
--latency REGION (a Metron region as a latency point). It needs debug line information (-g).

Flags:
      --progress <FILE:LINE>  a sampled throughput point: each sample in that line is a visit
                              (repeatable; METRON_CAUSAL_PROGRESS)
      --latency <REGION>      a Metron region (by name) as a latency point: its begins are
                              arrivals, its ends departures (repeatable; METRON_CAUSAL_LATENCY)
      --line <FILE:LINE>      experiment only on this line (repeatable; METRON_CAUSAL_LINES);
                              default: the lines with the most samples in scope
      --source-scope <PAT>    source files whose lines may be chosen, % is any text
                              (repeatable; default %; METRON_CAUSAL_SOURCE_SCOPE)
      --binary-scope <PAT>    modules whose lines may be chosen, MAIN the executable
                              (repeatable; default MAIN; METRON_CAUSAL_BINARY_SCOPE)
      --speedups <LIST>       line speedups in percent: 0,10,20 or 0-100/5 (the default);
                              0 % (the baseline) is always included (METRON_CAUSAL_SPEEDUPS)
      --experiment <DUR>      shortest experiment, e.g. 200ms (METRON_CAUSAL_EXPERIMENT)
  -n, --runs <N>              run the command N times and merge the experiments (default 1)
  -o, --output <DIR>          output folder (default metron-output/causal-<exe>-<time>)
  Every flag of `metron run` is accepted too (see `metron run --help`).

Outputs in the output folder: profile.coz (Coz's format: `coz plot` opens it), causal.txt
(per progress point, the lines ranked by the program speedup predicted at a 20 % line
speedup, with the slope and the number of experiments), causal.json, causal.svg (the
curves), report.html; each run's own folder is run-N/.

Examples:
  metron causal -n 3 -- ./server --bench
  metron causal --progress main.c:88 --source-scope %/src/% -- ./app
";

/// The parsed command line.
#[derive(Debug, PartialEq)]
struct Plan {
    run_args: Vec<String>,
    runs: u32,
    output: Option<PathBuf>,
    command: Vec<String>,
    /// `--from FILE`: analyse these `profile.coz` files (Metron's or Coz's), run nothing.
    from: Vec<PathBuf>,
}

fn parse(args: &[String]) -> Result<Option<Plan>, String> {
    let mut plan = Plan {
        run_args: Vec::new(),
        runs: 1,
        output: None,
        command: Vec::new(),
        from: Vec::new(),
    };
    let (mut lines, mut progress, mut sources, mut binaries, mut latency) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut i = 0;
    while i < args.len() {
        let arg = &args[i];
        if arg == "--" {
            plan.command = args[i + 1..].to_vec();
            break;
        }
        if !arg.starts_with('-') || arg == "-" {
            plan.command = args[i..].to_vec();
            break;
        }
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f.to_string(), Some(v.to_string())),
            _ => (arg.clone(), None),
        };
        let mut value = |what: &str| -> Result<String, String> {
            if let Some(v) = &inline {
                return Ok(v.clone());
            }
            i += 1;
            args.get(i)
                .cloned()
                .ok_or_else(|| format!("metron causal: {flag} needs a value ({what})"))
        };
        match flag.as_str() {
            "-h" | "--help" => return Ok(None),
            "--progress" | "--line" => {
                let v = value("FILE:LINE")?;
                if metron::sampling::causal::parse_lines(&v).is_none_or(|l| l.is_empty()) {
                    return Err(format!(
                        "metron causal: {flag} {v:?} is not accepted: expected {}",
                        metron::sampling::causal::LINES_GRAMMAR
                    ));
                }
                if flag == "--line" {
                    lines.push(v);
                } else {
                    progress.push(v);
                }
            }
            "--latency" => {
                let v = value("a region name")?;
                if v.trim().is_empty() || v.contains(',') {
                    return Err(format!(
                        "metron causal: --latency {v:?} is not accepted: expected one region's name (not empty, no comma; repeat the flag for several)"
                    ));
                }
                latency.push(v);
            }
            "--source-scope" => sources.push(value("a pattern, % is any text")?),
            "--binary-scope" => binaries.push(value("a pattern, % is any text, or MAIN")?),
            "--speedups" => {
                let v = value("e.g. 0,10,20 or 0-100/5")?;
                if metron::sampling::causal::parse_speedups(&v).is_none() {
                    return Err(format!(
                        "metron causal: --speedups {v:?} is not accepted: expected {}",
                        metron::sampling::causal::SPEEDUPS_GRAMMAR
                    ));
                }
                plan.run_args.extend(["--causal-speedups".into(), v]);
            }
            "--experiment" => {
                let v = value("a duration, e.g. 200ms")?;
                plan.run_args.extend(["--causal-experiment".into(), v]);
            }
            "-n" | "--runs" => {
                let v = value("a number of runs")?;
                plan.runs = v
                    .parse()
                    .ok()
                    .filter(|n| (1..=1000).contains(n))
                    .ok_or_else(|| {
                        format!("metron causal: {flag} {v:?} is not accepted: expected a number of runs from 1 to 1000")
                    })?;
            }
            "-o" | "--output" => plan.output = Some(PathBuf::from(value("a folder")?)),
            "--from" => plan.from.push(PathBuf::from(value("a profile.coz file")?)),
            _ => {
                // A flag of `metron run`: passed on whole (with its value when it has one).
                // Every flag of `run` but `--sample` takes a value; `run` checks them.
                plan.run_args.push(arg.clone());
                if inline.is_none() && flag != "--sample" {
                    if let Some(v) = args.get(i + 1) {
                        plan.run_args.push(v.clone());
                        i += 1;
                    }
                }
            }
        }
        i += 1;
    }
    if plan.command.is_empty() && plan.from.is_empty() {
        return Err(
            "metron causal: no command given; usage: metron causal [flags] -- <command> [args...]"
                .into(),
        );
    }
    for (name, list) in [
        ("--causal-lines", lines),
        ("--causal-progress", progress),
        ("--causal-source-scope", sources),
        ("--causal-binary-scope", binaries),
        ("--causal-latency", latency),
    ] {
        if !list.is_empty() {
            plan.run_args.extend([name.to_string(), list.join(",")]);
        }
    }
    Ok(Some(plan))
}

/// Every `profile.coz` under `dir` (a run folder, or a process tree's folders), in path order.
fn profiles_under(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            profiles_under(&p, out);
        } else if p.file_name().is_some_and(|n| n == "profile.coz") {
            out.push(p);
        }
    }
}

pub(crate) fn main(args: &[String]) -> ExitCode {
    let plan = match parse(args) {
        Ok(Some(plan)) => plan,
        Ok(None) => {
            print!("{HELP}");
            return ExitCode::SUCCESS;
        }
        Err(message) => return crate::usage_error(message.trim_start_matches("metron: ")),
    };
    if !plan.from.is_empty() {
        return from_files(&plan);
    }
    let exe = Path::new(&plan.command[0])
        .file_name()
        .map_or_else(|| "program".into(), |n| n.to_string_lossy().into_owned());
    let out = plan.output.clone().unwrap_or_else(|| {
        let secs = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        PathBuf::from(format!("metron-output/causal-{exe}-{secs}"))
    });
    if let Err(e) = std::fs::create_dir_all(&out) {
        eprintln!("metron causal: cannot create {}: {e}", out.display());
        return ExitCode::from(1);
    }
    let out = std::fs::canonicalize(&out).unwrap_or(out);
    let me = match std::env::current_exe() {
        Ok(p) => p,
        Err(e) => {
            eprintln!("metron causal: cannot find this command's own path: {e}");
            return ExitCode::from(1);
        }
    };
    let mut status = ExitCode::SUCCESS;
    let mut last_run = None;
    for n in 1..=plan.runs {
        let dir = out.join(format!("run-{n}"));
        let mut cmd = std::process::Command::new(&me);
        cmd.arg("run")
            .args([
                "--sampling",
                "on",
                "--sampling-cputime",
                "on",
                "--causal",
                "on",
            ])
            .args(&plan.run_args)
            .arg("-o")
            .arg(&dir)
            .arg("--")
            .args(&plan.command);
        eprintln!("metron causal: run {n} of {}", plan.runs);
        match cmd.status() {
            Ok(s) if s.success() => {}
            Ok(s) => {
                eprintln!("metron causal: run {n} ended with {s}");
                status = ExitCode::from(s.code().map_or(1, |c| c.clamp(1, 255) as u8));
                if s.code() == Some(i32::from(crate::USAGE)) {
                    return status;
                }
            }
            Err(e) => return crate::run::spawn_failed(&plan.command[0], &e),
        }
        last_run = Some(dir);
    }
    let mut found = Vec::new();
    profiles_under(&out, &mut found);
    found.retain(|p| p.parent() != Some(out.as_path()));
    if found.is_empty() {
        eprintln!(
            "metron causal: no run wrote profile.coz under {} (did the program run long enough, with debug information and CPU-time sampling allowed?)",
            out.display()
        );
        return ExitCode::from(1);
    }
    let mut merged = String::new();
    for p in &found {
        if let Ok(text) = std::fs::read_to_string(p) {
            merged.push_str(&text);
        }
    }
    if let Err(e) = std::fs::write(out.join("profile.coz"), &merged) {
        eprintln!(
            "metron causal: cannot write {}/profile.coz: {e}",
            out.display()
        );
        return ExitCode::from(1);
    }
    // The top folder is a run folder too: the merged profile with the last run's other
    // outputs, so `metron report` and report.html work on it.
    if let Some(last) = last_run {
        for name in ["metadata.json", "summary.json", "stacks.folded"] {
            let _ = std::fs::copy(last.join(name), out.join(name));
        }
    }
    if let Err(e) = metron_report::write_pictures(&out) {
        // No run folder files (a program that wrote none): the causal outputs alone.
        let mut files = Vec::new();
        if let Err(e2) = metron_report::write_causal(&out, &mut files) {
            eprintln!("metron causal: {e2}");
            return ExitCode::from(1);
        }
        eprintln!("metron causal: no report.html ({e})");
    }
    match std::fs::read_to_string(out.join(metron_report::CAUSAL_TXT)) {
        Ok(table) => print!("{table}"),
        Err(e) => eprintln!("metron causal: {e}"),
    }
    eprintln!(
        "metron causal: wrote {} (profile.coz of {} run(s), causal.txt, causal.svg, report.html)",
        out.display(),
        found.len()
    );
    status
}

/// `--from`: merges existing profiles and writes the causal outputs.
fn from_files(plan: &Plan) -> ExitCode {
    let out = plan
        .output
        .clone()
        .unwrap_or_else(|| PathBuf::from("metron-output/causal-from"));
    if let Err(e) = std::fs::create_dir_all(&out) {
        eprintln!("metron causal: cannot create {}: {e}", out.display());
        return ExitCode::from(1);
    }
    let mut merged = String::new();
    for p in &plan.from {
        match std::fs::read_to_string(p) {
            Ok(text) => merged.push_str(&text),
            Err(e) => {
                eprintln!("metron causal: cannot read {}: {e}", p.display());
                return ExitCode::from(1);
            }
        }
    }
    if let Err(e) = std::fs::write(out.join("profile.coz"), &merged) {
        eprintln!(
            "metron causal: cannot write {}/profile.coz: {e}",
            out.display()
        );
        return ExitCode::from(1);
    }
    let mut files = Vec::new();
    if let Err(e) = metron_report::write_causal(&out, &mut files) {
        eprintln!("metron causal: {e}");
        return ExitCode::from(1);
    }
    match std::fs::read_to_string(out.join(metron_report::CAUSAL_TXT)) {
        Ok(table) => print!("{table}"),
        Err(e) => eprintln!("metron causal: {e}"),
    }
    ExitCode::SUCCESS
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn causal_flags_become_run_settings_and_the_rest_goes_to_run() {
        let plan = parse(&args(&[
            "--line",
            "a.c:3",
            "--line=b.c:4",
            "--progress",
            "a.c:9",
            "--latency",
            "request",
            "--latency=batch",
            "-n",
            "3",
            "--speedups",
            "0,20",
            "--buffer-size",
            "4M",
            "--",
            "./app",
            "x",
        ]))
        .unwrap()
        .unwrap();
        assert_eq!(plan.runs, 3);
        assert_eq!(plan.command, args(&["./app", "x"]));
        assert_eq!(
            plan.run_args,
            args(&[
                "--causal-speedups",
                "0,20",
                "--buffer-size",
                "4M",
                "--causal-lines",
                "a.c:3,b.c:4",
                "--causal-progress",
                "a.c:9",
                "--causal-latency",
                "request,batch"
            ])
        );
    }

    #[test]
    fn bad_input_says_what_is_accepted() {
        let e = parse(&args(&["-n", "zero", "--", "x"])).unwrap_err();
        assert!(e.contains("number of runs from 1"), "{e}");
        let e = parse(&args(&["--line"])).unwrap_err();
        assert!(e.contains("FILE:LINE"), "{e}");
        let e = parse(&args(&["--line", "main.c", "--", "x"])).unwrap_err();
        assert!(e.contains("FILE:LINE"), "{e}");
        let e = parse(&args(&["--speedups", "0-150/5", "--", "x"])).unwrap_err();
        assert!(e.contains("percentages from 0 to 100"), "{e}");
        let e = parse(&args(&["--latency", "a,b", "--", "x"])).unwrap_err();
        assert!(e.contains("one region's name"), "{e}");
        let e = parse(&args(&["-n", "2"])).unwrap_err();
        assert!(e.contains("no command"), "{e}");
    }
}
