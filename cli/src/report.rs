//! `metron report DIR...`: writes `critical_path.txt`/`.json` (a run with GPU work; their top
//! rows go into `summary.txt`/`.json`),
//! `flamegraph.svg` (when the folder has `stacks.folded`),
//! `gpu_stalls.svg` (with `gpu_stalls.folded`), `regions.svg` and `report.html` into each run
//! folder (or folder of `metron merge`), from the files already there. Runs write them at
//! their end too unless `METRON_REPORT=off`.

use std::path::Path;
use std::process::ExitCode;

const HELP: &str = "\
Usage: metron report DIR...

Writes into each run folder (or folder written by `metron merge`), from its files:
  flamegraph.svg  the call-stack samples of stacks.folded (when the run sampled)
  gpu_stalls.svg  the GPU PC samples of gpu_stalls.folded (when the run sampled them)
  regions.svg     the region tree, each region weighted by its self time
  critical_path.txt, critical_path.json
                  the critical path of a run with GPU work (see metron whatif); its top
                  rows are added to summary.txt and summary.json (replacing earlier ones)
  report.html     one page with the metadata, top regions, both flame graphs, GPU tables,
                  the critical path, sampling and drop statistics; it needs no network
Runs write the same files at their end unless METRON_REPORT=off.
";

/// Entry point of `metron report`.
pub(crate) fn main(args: &[String]) -> ExitCode {
    if args.iter().any(|a| a == "-h" || a == "--help") {
        print!("{HELP}");
        return ExitCode::SUCCESS;
    }
    if let Some(flag) = args.iter().find(|a| a.starts_with('-')) {
        return crate::usage_error(&format!(
            "report: unknown flag {flag:?}; usage: metron report DIR..."
        ));
    }
    if args.is_empty() {
        return crate::usage_error("report: give one or more run folders: metron report DIR...");
    }
    let mut failed = false;
    for dir in args {
        // The critical path first: report.html shows it.
        match metron_whatif::files::write(Path::new(dir), None) {
            Ok(Ok(written)) => {
                for f in written.files {
                    println!("{}", f.display());
                }
                if let Some(e) = written.summary_error {
                    eprintln!("metron report: {dir}: the critical path in the summary: {e}");
                }
            }
            Ok(Err(skipped)) => eprintln!("metron report: {skipped}"),
            Err(e) => eprintln!("metron report: {dir}: the critical path: {e}"),
        }
        match metron_report::write_pictures(Path::new(dir)) {
            Ok(files) => {
                for f in files {
                    println!("{}", f.display());
                }
            }
            Err(e) => {
                eprintln!("metron: report: {e}");
                failed = true;
            }
        }
    }
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
