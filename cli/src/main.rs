//! The `metron` command.
//!
//! - `metron run [flags] -- cmd args`: runs a program under Metron. Flags become `METRON_*`
//!   variables, `libmetron.so` goes into `LD_PRELOAD` with `METRON_PRELOAD=1`, then the
//!   command runs as a child: `metron run` waits for its whole process tree, which writes one
//!   run folder (`tree/`; `METRON_PROCESSES=separate` replaces this process with the command
//!   instead), and exits with the command's status.
//! - `metron causal [flags] -- cmd args`: causal profiling (`causal.rs`).
//! - `metron report DIR...`: flame graphs and a one-page `report.html` of run folders.
//! - `metron export --format atp|occupancy|apilog [-o OUT] DIR`: a run folder in the reference
//!   profilers' formats (`.atp`, `.occupancy`, API log).
//! - `metron whatif DIR --faster NAME=P% [--per REGION]`: the critical path of a run and the
//!   run predicted with kernels, regions or API calls faster (`whatif.rs`).
//! - `metron avail [--json]`: components, settings (from `metron::settings::REGISTRY`) and the
//!   counters this machine offers.
//!
//! Usage errors (an unknown flag, a bad value, a missing command) print one clear message and
//! exit with status 2.

mod attach;
mod avail;
mod causal;
mod export;
mod merge;
mod passes;
mod perf;
mod report;
mod run;
mod sample;
mod tree;
mod whatif;

use std::process::ExitCode;

/// Exit status of a usage error.
pub(crate) const USAGE: u8 = 2;

const HELP: &str = "\
metron: record what a program does (regions, marks, counters) into a run folder.

Usage:
  metron run [flags] [--] <command> [args...]   run a program under Metron
  metron sample [--freq N] [--realtime] [flags] [--] <command> [args...]
                                                the same, sampling every thread's call stack
  metron sample --pid PID [--duration 10s]      sample a running process from outside
  metron causal [-n N] [--progress FILE:LINE] [flags] [--] <command> [args...]
                                                causal profiling (Coz's virtual speedups):
                                                which lines, if faster, speed the program up
  metron merge [-o OUT] DIR...                  join the run folders of MPI ranks into one
                                                trace and a summary across ranks
  metron report DIR...                          write flamegraph.svg, regions.svg and a
                                                one-page report.html into run folders
  metron export --format atp|occupancy|apilog|all [-o OUT] DIR
                                                write a run folder as session.atp,
                                                session.occupancy or api.log
  metron whatif DIR [--faster NAME=P%]... [--per REGION] [--json]
                                                the critical path of a CPU+GPU run, and the
                                                run predicted with kernels, regions or API
                                                calls faster
  metron avail [--json] [--components] [--settings] [--counters]
                                                list what Metron can measure and configure
  metron --version | --help

Examples:
  metron run -- ./app --size 1024           # run folder in ./metron-output/app-<pid>-<time>
  metron run --metrics IPC --perf-events cycles,instructions,cache-misses --passes auto -- ./app
  metron run -o /tmp/runs/%exe%-%pid% -- python3 train.py
  metron run --buffer-policy discard --flush-interval 250ms -- make -j4
  metron avail --settings                   # every METRON_* setting with default and values
  metron avail --json | jq '.counters'

Run `metron run --help` for the flags of run.
";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        None => {
            eprint!("{HELP}");
            ExitCode::from(USAGE)
        }
        Some("-h" | "--help" | "help") => {
            print!("{HELP}");
            ExitCode::SUCCESS
        }
        Some("-V" | "--version" | "version") => {
            println!(
                "metron {} (C ABI {})",
                env!("CARGO_PKG_VERSION"),
                run::ABI_VERSION
            );
            ExitCode::SUCCESS
        }
        Some("run") => run::main(&args[1..]),
        Some("avail") => avail::main(&args[1..]),
        Some("sample") => sample::main(&args[1..]),
        Some("merge") => merge::main(&args[1..]),
        Some("report") => report::main(&args[1..]),
        Some("export") => export::main(&args[1..]),
        Some("whatif") => whatif::main(&args[1..]),
        Some("causal") => causal::main(&args[1..]),
        Some(other) => usage_error(&format!(
            "unknown command {other:?}; the commands are run, sample, causal, merge, report, export, whatif and avail (see metron --help)"
        )),
    }
}

/// Prints `message` as a usage error and returns status 2.
pub(crate) fn usage_error(message: &str) -> ExitCode {
    eprintln!("metron: {message}");
    ExitCode::from(USAGE)
}
