//! `metron whatif DIR [--faster NAME=P%]... [--per REGION] [--json]`: the critical path of a
//! recorded CPU+GPU run and the run predicted with chosen kernels, regions or API calls
//! faster (`metron-whatif`), from the run folder's trace.

use metron_whatif::speedup::Speedup;
use std::path::Path;
use std::process::ExitCode;

const HELP: &str = "\
Usage: metron whatif DIR [--faster NAME=P%]... [--per REGION] [--json]

Replays a recorded run (its trace: every thread's regions and GPU API calls, every kernel,
copy and set on its stream) as a simulation over what waited for what, and predicts:
  --faster NAME=P%   NAME (a kernel, region or API function; `*` matches any characters)
                     takes P % less time; repeatable
  --per REGION       the predicted time of each instance of region REGION (e.g. step)
  --json             the answer as JSON
Prints the run recorded, replayed unchanged (the model's own error) and predicted, the
critical path with each item's time on it and the gain were it twice as fast, and which
threads and streams are critical after the change.
";

/// Entry point of `metron whatif`.
pub(crate) fn main(args: &[String]) -> ExitCode {
    let mut speedups = Vec::new();
    let mut per: Option<String> = None;
    let mut json = false;
    let mut dirs = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "-h" | "--help" => {
                print!("{HELP}");
                return ExitCode::SUCCESS;
            }
            "--faster" => match it.next().map(|v| Speedup::parse(v)) {
                Some(Ok(s)) => speedups.push(s),
                Some(Err(e)) => return crate::usage_error(&format!("whatif: --faster {e}")),
                None => return crate::usage_error("whatif: --faster needs NAME=P%, e.g. --faster gemm=50%"),
            },
            "--per" => match it.next() {
                Some(v) => per = Some(v.clone()),
                None => return crate::usage_error("whatif: --per needs a region name, e.g. --per step"),
            },
            "--json" => json = true,
            s if s.starts_with('-') => {
                return crate::usage_error(&format!(
                    "whatif: unknown flag {s:?}; usage: metron whatif DIR [--faster NAME=P%]... [--per REGION] [--json]"
                ))
            }
            _ => dirs.push(a.clone()),
        }
    }
    let [dir] = &dirs[..] else {
        return crate::usage_error(
            "whatif: give one run folder: metron whatif DIR --faster NAME=P%",
        );
    };
    let run = match metron_export::Run::read_only(Path::new(dir), metron_export::Parts::TRACE) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("metron whatif: {e}");
            return ExitCode::FAILURE;
        }
    };
    let graph = metron_whatif::from_run(&run);
    if graph.nodes.is_empty() {
        eprintln!("metron whatif: {dir} holds no region, GPU API call or kernel to replay");
        return ExitCode::FAILURE;
    }
    match metron_whatif::answer::answer(&graph, speedups, per.as_deref()) {
        Ok(a) if json => {
            println!(
                "{}",
                serde_json::to_string_pretty(&a.json()).unwrap_or_default()
            );
            ExitCode::SUCCESS
        }
        Ok(a) => {
            print!("{}", a.text());
            ExitCode::SUCCESS
        }
        Err(e) => crate::usage_error(&format!("whatif: {e}")),
    }
}
