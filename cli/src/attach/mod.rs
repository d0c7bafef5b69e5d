//! `metron sample --pid PID [--duration 10s]`: call-stack sampling of a running process from
//! outside, for services and training jobs that cannot be restarted under `metron run`.
//!
//! # How
//! One `perf_event_open` software event per thread of the target and CPU
//! (`PERF_COUNT_SW_TASK_CLOCK`, N samples per second of the thread's CPU time), opened with
//! `inherit`, so every thread a sampled thread creates while Metron is attached is sampled
//! too, from its first instruction. Per CPU because the kernel maps no ring of an inherited
//! event that follows its thread over all CPUs: the events of one CPU share one ring
//! (`PERF_EVENT_IOC_SET_OUTPUT`), as `perf record -p` does. Each sample carries the kernel's frame-pointer walk
//! (`PERF_SAMPLE_CALLCHAIN`), the registers BP/SP/IP and a 16 KiB copy of the user stack
//! (`PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER`), which framehop unwinds over the
//! target's `.eh_frame` (`unwind.rs`), as in-process sampling does. Thread names come from
//! `/proc/PID/task/TID/comm` and the kernel's `COMM` records, time stamps are
//! `CLOCK_MONOTONIC` (`use_clockid`), like every Metron output.
//!
//! At the end (the duration, Ctrl-C, or the target's exit), the samples are handed to the
//! same sinks as an in-process run (summary, `stacks.folded`, the Perfetto trace with one
//! track per thread, the flame graph), symbolized by a symbolizer of the target
//! (`metron_symbols::Symbolizer::for_process`: its modules from `/proc/PID/maps`, read while
//! it runs, its JIT code from its perf map, read again at its exit). Samples the kernel
//! dropped (a full ring) are counted and reported.
//!
//! # Permissions
//! Sampling another process needs `kernel.perf_event_paranoid` ≤ 2 and ptrace-read
//! permission over it (the same user, or `CAP_PERFMON`/`CAP_SYS_PTRACE`); a refusal names
//! both. A target that already runs Metron is not sampled a second time: Metron says so and
//! points to the target's own run folder.

mod output;
mod records;
mod sys;
mod target;
mod unwind;

use records::Record;
use std::collections::BTreeMap;
use std::process::ExitCode;
use std::time::{Duration, Instant};
use target::{paranoid, refusal, Target};

const HELP: &str = "\
Usage: metron sample --pid <PID> [--duration <TIME>] [--freq N] [-o <PATH>] [--trace false]

Samples the call stacks of a running process from outside, every thread of it, including
threads it creates while Metron is attached, until the duration is over, Ctrl-C, or the
process exits. The process is not stopped or changed. The run folder is the usual one
(summary, stacks.folded, flamegraph.svg, trace.pftrace with a track per thread).

Flags:
      --pid <PID>         the process to sample
      --duration <TIME>   how long, e.g. 10s, 500ms, 2m (default: until Ctrl-C or its exit)
      --freq <N>          samples per second of each thread's CPU time, 1 to 20000 (default
                          1000)
  -o, --output-path <P>   run folder (default metron-output/%exe%-%pid%-%time%, with the
                          target's name and pid)
      --trace <true|false> write trace.pftrace (default true)

Needs kernel.perf_event_paranoid <= 2 and permission to trace the process (the same user, or
CAP_PERFMON / CAP_SYS_PTRACE).

Examples:
  metron sample --pid 4242 --duration 10s
  metron sample --pid $(pgrep -f train.py) -o /tmp/runs/%exe%-%pid%
";

/// What the command line asks for.
#[derive(Debug, PartialEq)]
struct Options {
    pid: u32,
    duration: Option<Duration>,
    freq: u64,
    output: Option<String>,
    trace: bool,
}

fn parse(args: &[String]) -> Result<Option<Options>, String> {
    let mut pid = None;
    let mut duration = None;
    let mut freq = 1000;
    let mut output = None;
    let mut trace = true;
    let mut i = 0;
    while i < args.len() {
        let (flag, inline) = match args[i].split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f.to_string(), Some(v.to_string())),
            _ => (args[i].clone(), None),
        };
        if flag == "-h" || flag == "--help" {
            return Ok(None);
        }
        let mut value = |what: &str| -> Result<String, String> {
            if let Some(v) = inline.clone() {
                return Ok(v);
            }
            i += 1;
            args.get(i)
                .cloned()
                .ok_or_else(|| format!("{flag} needs a value ({what})"))
        };
        match flag.as_str() {
            "--pid" => {
                let v = value("a process id")?;
                pid = Some(v.parse::<u32>().ok().filter(|&p| p > 0).ok_or_else(|| {
                    format!("--pid {v:?} is not accepted: expected a process id (a positive integer)")
                })?);
            }
            "--duration" => {
                let v = value("a time, e.g. 10s")?;
                duration = Some(parse_duration(&v).ok_or_else(|| {
                    format!("--duration {v:?} is not accepted: expected a positive time with a unit (500ms, 10s, 2m, 1h) or seconds")
                })?);
            }
            "--freq" => {
                let v = value("samples per second")?;
                freq = v.parse::<u64>().ok().filter(|f| (1..=20_000).contains(f)).ok_or_else(|| {
                    format!("--freq {v:?} is not accepted: expected samples per second, 1 to 20000")
                })?;
            }
            "-o" | "--output-path" => output = Some(value("a run folder path")?),
            "--trace" => {
                let v = value("true or false")?;
                trace = match v.as_str() {
                    "true" | "on" | "1" => true,
                    "false" | "off" | "0" => false,
                    _ => return Err(format!("--trace {v:?} is not accepted: expected true or false")),
                };
            }
            "--" => {
                return Err(
                    "--pid samples a running process: give no command (or use `metron sample -- cmd` to start one)"
                        .into(),
                )
            }
            other => {
                return Err(format!(
                    "{other:?} is not accepted with --pid; accepted: --pid, --duration, --freq, -o/--output-path, --trace (see metron sample --pid 1 --help)"
                ))
            }
        }
        i += 1;
    }
    let pid = pid.ok_or("--pid needs a value (a process id)")?;
    Ok(Some(Options {
        pid,
        duration,
        freq,
        output,
        trace,
    }))
}

/// `500ms`, `10s`, `2m`, `1h`, `1.5s`, or plain seconds.
fn parse_duration(text: &str) -> Option<Duration> {
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let n: f64 = number.parse().ok()?;
    let seconds = match unit {
        "" | "s" => n,
        "ms" => n / 1e3,
        "us" => n / 1e6,
        "m" | "min" => n * 60.0,
        "h" => n * 3600.0,
        _ => return None,
    };
    (seconds > 0.0 && seconds.is_finite()).then(|| Duration::from_secs_f64(seconds))
}

pub(crate) fn main(args: &[String]) -> ExitCode {
    let options = match parse(args) {
        Ok(Some(o)) => o,
        Ok(None) => {
            print!("{HELP}");
            return ExitCode::SUCCESS;
        }
        Err(message) => return crate::usage_error(&format!("metron sample: {message}")),
    };
    match attach(&options) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("metron sample: {message}");
            ExitCode::from(1)
        }
    }
}

/// What one attach collected, for the run folder.
struct Sampled {
    threads: BTreeMap<u32, Thread>,
    /// Samples the kernel dropped.
    lost: u64,
    /// What ended it: `duration`, `interrupted`, `target exited`.
    stop: &'static str,
    start_ns: u64,
    start_realtime_ns: u64,
    end_ns: u64,
    seconds: f64,
    /// Threads when Metron attached.
    at_attach: usize,
    paranoid: Option<i32>,
    /// Modules the unwinder has CFI of.
    unwinder_modules: usize,
}

/// One sampled thread.
struct Thread {
    name: String,
    /// (time, frames) of its samples.
    samples: Vec<(u64, Vec<u64>)>,
    /// Created while attached.
    new: bool,
}

fn attach(options: &Options) -> Result<(), String> {
    let target = Target::read(options.pid)?;
    if let Some(folder) = target.metron_run_folder() {
        return Err(format!(
            "process {} ({}) already runs Metron, which records into its own run folder: {folder}. \
             To sample its call stacks, start it with METRON_SAMPLING=on (or `metron sample -- cmd`)",
            target.pid, target.exe
        ));
    }
    let paranoid = paranoid();
    if options.pid == std::process::id() {
        return Err("--pid is this metron process; give another process".into());
    }
    let spec = sys::EventSpec { freq: options.freq };
    sys::raise_fd_limit();
    let cpus = sys::possible_cpus();
    // One ring per CPU, made from the first event opened there; the others write into it.
    let mut rings: Vec<sys::Ring> = Vec::new();
    let mut ring_fds: BTreeMap<i32, std::os::fd::OwnedFd> = BTreeMap::new();
    let mut events = Vec::new();
    let mut threads: BTreeMap<u32, Thread> = BTreeMap::new();
    for tid in target.tids() {
        let mut opened = false;
        for &cpu in &cpus {
            let fd = match sys::open_thread_event(tid as i32, cpu, &spec) {
                Ok(fd) => fd,
                // The thread ended meanwhile, or the CPU is offline.
                Err(libc::ESRCH | libc::ENODEV) => continue,
                Err(e @ (libc::EACCES | libc::EPERM)) => {
                    return Err(refusal(target.pid, e, paranoid))
                }
                Err(libc::EMFILE) => {
                    return Err(format!(
                        "too many open files: one perf event per thread and CPU ({} CPUs); raise the open-file limit (ulimit -n)",
                        cpus.len()
                    ))
                }
                Err(e) => {
                    return Err(format!(
                        "perf_event_open on thread {tid} of process {} failed: {}",
                        target.pid,
                        sys::strerror(e)
                    ))
                }
            };
            match ring_fds.get(&cpu) {
                Some(owner) => sys::set_output(&fd, owner).map_err(|e| {
                    format!("joining a perf ring buffer failed: {}", sys::strerror(e))
                })?,
                None => {
                    let dup = fd
                        .try_clone()
                        .map_err(|e| format!("dup of a perf event: {e}"))?;
                    rings.push(sys::Ring::map(dup).map_err(|e| {
                        format!("mapping a perf ring buffer failed: {}", sys::strerror(e))
                    })?);
                    ring_fds.insert(
                        cpu,
                        fd.try_clone()
                            .map_err(|e| format!("dup of a perf event: {e}"))?,
                    );
                }
            }
            events.push(fd);
            opened = true;
        }
        if opened {
            threads.insert(
                tid,
                Thread {
                    name: target.thread_name(tid).unwrap_or_default(),
                    samples: Vec::new(),
                    new: false,
                },
            );
        }
    }
    if events.is_empty() {
        return Err(format!(
            "process {} has no thread left to sample",
            target.pid
        ));
    }
    // The symbolizer of the target, made while its mappings are there to read.
    *metron_symbols::shared()
        .lock()
        .unwrap_or_else(|e| e.into_inner()) = metron_symbols::Symbolizer::for_process(target.pid);
    let mut unwinder = unwind::TargetUnwinder::new();
    unwinder.add_modules(&metron_symbols::process::modules(target.pid));

    sys::catch_sigint();
    let start_ns = metron::clock::monotonic_ns();
    let start_realtime_ns = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    let started = Instant::now();
    for e in &events {
        sys::enable(e);
    }
    let at_attach = threads.len();
    eprintln!(
        "metron: attached to process {} ({}), {} threads, {} samples/s of CPU time; {}",
        target.pid,
        target.exe,
        at_attach,
        options.freq,
        match options.duration {
            Some(d) => format!("for {:.1} s (Ctrl-C ends it sooner)", d.as_secs_f64()),
            None => "Ctrl-C ends it".into(),
        }
    );

    let mut bytes = Vec::new();
    let mut lost = 0u64;
    let mut last_modules = Instant::now();
    let stop = loop {
        std::thread::sleep(Duration::from_millis(10));
        let reason = if sys::INTERRUPTED.load(std::sync::atomic::Ordering::Relaxed) {
            Some("interrupted")
        } else if options.duration.is_some_and(|d| started.elapsed() >= d) {
            Some("duration")
        } else if target.exited() {
            Some("target exited")
        } else {
            None
        };
        if reason.is_some() {
            for e in &events {
                sys::disable(e);
            }
        }
        // The target may have loaded libraries: new modules every 250 ms at most.
        if last_modules.elapsed() >= Duration::from_millis(250) && !target.exited() {
            unwinder.add_modules(&metron_symbols::process::modules(target.pid));
            last_modules = Instant::now();
        }
        for ring in &mut rings {
            bytes.clear();
            ring.drain(&mut bytes);
            records::decode(&bytes, |r| match r {
                Record::Sample(s) => {
                    if s.pid != target.pid {
                        return; // a child process that inherited the event
                    }
                    let frames = unwinder.unwind(s.ip, s.regs, &s.stack, &s.callchain);
                    threads
                        .entry(s.tid)
                        .or_insert_with(|| Thread {
                            name: target.thread_name(s.tid).unwrap_or_default(),
                            samples: Vec::new(),
                            new: true,
                        })
                        .samples
                        .push((s.time_ns, frames));
                }
                Record::Comm { tid, name } => {
                    if let Some(t) = threads.get_mut(&tid) {
                        t.name = name;
                    } else {
                        threads.insert(
                            tid,
                            Thread {
                                name,
                                samples: Vec::new(),
                                new: true,
                            },
                        );
                    }
                }
                Record::Fork { pid, tid } if pid == target.pid => {
                    let name = target.thread_name(tid).unwrap_or_default();
                    threads.entry(tid).or_insert(Thread {
                        name,
                        samples: Vec::new(),
                        new: true,
                    });
                }
                Record::Lost { count } => lost += count,
                _ => {}
            });
        }
        if let Some(reason) = reason {
            break reason;
        }
    };
    let end_ns = metron::clock::monotonic_ns();
    drop(rings);
    drop(ring_fds);
    drop(events);
    let mut symbolizer = metron_symbols::shared()
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    if stop == "target exited" {
        // Its perf map and jitdump, read now that it wrote its last.
        symbolizer.read_jit_maps();
    }
    drop(symbolizer);

    output::write(
        options,
        &target,
        &Sampled {
            threads,
            lost,
            stop,
            start_ns,
            start_realtime_ns,
            end_ns,
            seconds: started.elapsed().as_secs_f64(),
            at_attach,
            paranoid,
            unwinder_modules: unwinder.modules,
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn flags_parse_and_bad_values_say_what_is_accepted() {
        let o = parse(&args(&[
            "--pid",
            "42",
            "--duration",
            "2s",
            "--freq=500",
            "-o",
            "/x",
        ]))
        .unwrap()
        .unwrap();
        assert_eq!(
            o,
            Options {
                pid: 42,
                duration: Some(Duration::from_secs(2)),
                freq: 500,
                output: Some("/x".into()),
                trace: true
            }
        );
        assert_eq!(parse_duration("500ms"), Some(Duration::from_millis(500)));
        assert_eq!(parse_duration("1.5"), Some(Duration::from_millis(1500)));
        assert_eq!(parse_duration("2m"), Some(Duration::from_secs(120)));
        assert_eq!(parse_duration("0s"), None);
        assert_eq!(parse_duration("3 weeks"), None);
        let e = parse(&args(&["--pid", "x"])).unwrap_err();
        assert!(e.contains("expected a process id"), "{e}");
        let e = parse(&args(&["--pid", "1", "--duration", "soon"])).unwrap_err();
        assert!(e.contains("expected a positive time"), "{e}");
        let e = parse(&args(&["--pid", "1", "--realtime"])).unwrap_err();
        assert!(e.contains("not accepted with --pid"), "{e}");
        let e = parse(&args(&["--duration", "1s"])).unwrap_err();
        assert!(e.contains("--pid needs a value"), "{e}");
        assert!(parse(&args(&["--pid", "1", "--help"])).unwrap().is_none());
    }

    #[test]
    fn a_refusal_names_perf_event_paranoid_and_ptrace() {
        let m = refusal(7, libc::EACCES, Some(3));
        assert!(m.contains("perf_event_paranoid <= 2 (it is 3"), "{m}");
        assert!(m.contains("ptrace permission"), "{m}");
        assert!(m.contains("Permission denied"), "{m}");
    }

    #[test]
    fn a_missing_process_is_a_clear_error() {
        let e = Target::read(u32::MAX - 1).err().unwrap();
        assert!(e.contains("no process"), "{e}");
    }
}
