//! `metron sample [--freq N] [--realtime] [run flags] [--] cmd args`: `metron run` with
//! call-stack sampling on.

use std::process::ExitCode;

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
  Every flag of `metron run` is accepted too (see `metron run --help`), e.g.
  --sampling-delay 2s, --sampling-duration 10s, --sampling-tids 0,1, --trace-periods ...

Examples:
  metron sample -- ./app input.txt
  metron sample --freq 4000 --realtime -- ./server
";

/// Translates the `sample` flags into `run` flags.
fn to_run_args(args: &[String]) -> Result<Option<Vec<String>>, String> {
    let mut out = vec!["--sampling".to_string(), "on".to_string()];
    let mut i = 0;
    while i < args.len() {
        let arg = &args[i];
        if arg == "--" || !arg.starts_with('-') {
            out.extend(args[i..].iter().cloned());
            return Ok(Some(out));
        }
        match arg.as_str() {
            "-h" | "--help" => return Ok(None),
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
                None => out.push(arg.clone()),
            },
        }
        i += 1;
    }
    Ok(Some(out))
}

pub(crate) fn main(args: &[String]) -> ExitCode {
    match to_run_args(args) {
        Ok(Some(run_args)) => crate::run::main(&run_args),
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
        assert_eq!(
            run,
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
                .unwrap(),
            args(&["--sampling", "on", "--sampling-freq", "250", "./app"])
        );
        assert!(to_run_args(&args(&["--freq"])).is_err());
        assert!(to_run_args(&args(&["--help"])).unwrap().is_none());
    }
}
