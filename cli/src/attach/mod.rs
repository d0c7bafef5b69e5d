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

mod records;
mod sys;
mod unwind;

use metron::sinks::folded::FoldedSink;
use metron::sinks::late_files::LateFilesSink;
use metron::sinks::perfetto::{Categories, PerfettoConfig, PerfettoSink, TraceFillPolicy};
use metron::sinks::summary::SummarySink;
use metron::{Event, RunInfo, SampleTrigger, Sink, ThreadInfo};
use records::Record;
use serde_json::json;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

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

/// The target as `/proc` shows it.
struct Target {
    pid: u32,
    exe: String,
    argv: Vec<String>,
}

impl Target {
    fn read(pid: u32) -> Result<Target, String> {
        let proc = PathBuf::from(format!("/proc/{pid}"));
        if !proc.join("stat").exists() {
            return Err(format!(
                "no process {pid} (/proc/{pid} does not exist); give the pid of a running process"
            ));
        }
        let argv: Vec<String> = std::fs::read(proc.join("cmdline"))
            .unwrap_or_default()
            .split(|&b| b == 0)
            .filter(|a| !a.is_empty())
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect();
        let exe = std::fs::read_link(proc.join("exe"))
            .ok()
            .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
            .or_else(|| {
                std::fs::read_to_string(proc.join("comm"))
                    .ok()
                    .map(|s| s.trim().to_string())
            })
            .unwrap_or_else(|| format!("pid{pid}"));
        Ok(Target { pid, exe, argv })
    }

    fn tids(&self) -> Vec<u32> {
        let mut tids: Vec<u32> = std::fs::read_dir(format!("/proc/{}/task", self.pid))
            .map(|d| {
                d.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
                    .collect()
            })
            .unwrap_or_default();
        tids.sort_unstable();
        tids
    }

    fn thread_name(&self, tid: u32) -> Option<String> {
        std::fs::read_to_string(format!("/proc/{}/task/{tid}/comm", self.pid))
            .ok()
            .map(|s| s.trim_end().to_string())
    }

    /// Gone, or a zombie.
    fn exited(&self) -> bool {
        match std::fs::read_to_string(format!("/proc/{}/stat", self.pid)) {
            Ok(stat) => stat
                .rsplit_once(')')
                .is_some_and(|(_, rest)| rest.trim_start().starts_with(['Z', 'X'])),
            Err(_) => true,
        }
    }

    /// If the target runs Metron (a thread of Metron's, `metron-*`, or `libmetron` mapped),
    /// where its run folder is, as well as can be told.
    fn metron_run_folder(&self) -> Option<String> {
        let proc = format!("/proc/{}", self.pid);
        let threads = self.tids().into_iter().any(|t| {
            self.thread_name(t)
                .is_some_and(|n| n.starts_with("metron-"))
        });
        let library =
            std::fs::read_to_string(format!("{proc}/maps")).is_ok_and(|m| m.contains("/libmetron"));
        if !threads && !library {
            return None;
        }
        // A file it writes in its run folder (the trace is written while it runs).
        if let Ok(fds) = std::fs::read_dir(format!("{proc}/fd")) {
            for fd in fds.flatten() {
                if let Ok(target) = std::fs::read_link(fd.path()) {
                    if target.extension().is_some_and(|e| e == "pftrace") {
                        if let Some(dir) = target.parent() {
                            return Some(dir.display().to_string());
                        }
                    }
                }
            }
        }
        let environ = std::fs::read(format!("{proc}/environ")).unwrap_or_default();
        let template = environ
            .split(|&b| b == 0)
            .filter_map(|kv| std::str::from_utf8(kv).ok())
            .find_map(|kv| kv.strip_prefix("METRON_OUTPUT_PATH="))
            .map(str::to_string);
        let cwd = std::fs::read_link(format!("{proc}/cwd")).unwrap_or_default();
        Some(match template {
            Some(t) => format!(
                "{t} (METRON_OUTPUT_PATH of the process, with its pid {})",
                self.pid
            ),
            None => format!(
                "{}/metron-output/{}-{}-<start time> (the default, in its working directory)",
                cwd.display(),
                self.exe,
                self.pid
            ),
        })
    }
}

/// `kernel.perf_event_paranoid`, if readable.
fn paranoid() -> Option<i32> {
    std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// The message for a refused `perf_event_open`.
fn refusal(pid: u32, errno: i32, paranoid: Option<i32>) -> String {
    let level = paranoid.map_or("unknown".to_string(), |p| p.to_string());
    format!(
        "not allowed to sample process {pid}: perf_event_open refused ({}). Sampling another \
         process needs kernel.perf_event_paranoid <= 2 (it is {level}; e.g. `sudo sysctl \
         kernel.perf_event_paranoid=2`) and ptrace permission over it (run metron as the \
         process's user, or with CAP_PERFMON or CAP_SYS_PTRACE)",
        sys::strerror(errno)
    )
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

    let dir = run_folder(options, &target)?;
    let run = RunInfo {
        output_dir: dir.clone(),
        pid: target.pid,
        exe: target.exe.clone(),
        argv: target.argv.clone(),
        hostname: std::fs::read_to_string("/proc/sys/kernel/hostname")
            .map(|h| h.trim().to_string())
            .unwrap_or_default(),
        start_realtime_ns,
        start_ns,
        end_ns,
    };
    let samples: usize = threads.values().map(|t| t.samples.len()).sum();
    let sampled = threads.values().filter(|t| !t.samples.is_empty()).count();
    let created = threads.values().filter(|t| t.new).count();
    let created_sampled = threads
        .values()
        .filter(|t| t.new && !t.samples.is_empty())
        .count();
    let metadata = json!({
        "metron_version": env!("CARGO_PKG_VERSION"),
        "run": run,
        "attach": {
            "pid": target.pid,
            "exe": target.exe,
            "argv": target.argv,
            "method": "perf_event_open, software task-clock per thread (inherited by threads created while attached), PERF_SAMPLE_CALLCHAIN + REGS_USER + STACK_USER (16 KiB) unwound with framehop",
            "frequency": options.freq,
            "asked_duration_s": options.duration.map(|d| d.as_secs_f64()),
            "seconds": started.elapsed().as_secs_f64(),
            "ended_by": stop,
            "threads_at_attach": at_attach,
            "threads_created_while_attached": created,
            "threads_created_while_attached_sampled": created_sampled,
            "perf_event_paranoid": paranoid,
            "unwinder_modules": unwinder.modules,
        },
        "sampling": {
            "enabled": true,
            "cpu_method": "perf_task_clock (from outside)",
            "samples": { "cpu_time": samples, "real_time": 0 },
            "lost_samples": lost,
            "threads_sampled": sampled,
        },
        "symbolizer": symbolizer_stats(),
    });
    let write_metadata = |extra: serde_json::Value| -> Result<(), String> {
        let mut m = metadata.clone();
        m["outputs"] = extra;
        std::fs::write(
            dir.join("metadata.json"),
            serde_json::to_string_pretty(&m).expect("JSON"),
        )
        .map_err(|e| format!("writing {}: {e}", dir.join("metadata.json").display()))
    };
    let mut sinks: Vec<Box<dyn Sink>> =
        vec![Box::new(SummarySink::new()), Box::new(FoldedSink::new())];
    if options.trace {
        sinks.push(Box::new(
            PerfettoSink::new(trace_config(), dir.clone()).for_process(
                target.pid,
                &target.exe,
                &target.argv.join(" "),
            ),
        ));
    }
    sinks.push(Box::new(LateFilesSink::pictures()));
    let mut order: Vec<usize> = (0..sinks.len()).collect();
    order.sort_by_key(|&i| sinks[i].finishes_late());
    feed(&mut sinks, &threads);
    // The trace kept room for the small outputs (`.metron-reserve`): given back now.
    metron::sinks::space::release(&dir);
    let mut outputs = serde_json::Map::new();
    let mut metadata_written = false;
    for i in order {
        if sinks[i].finishes_late() && !metadata_written {
            write_metadata(serde_json::Value::Object(outputs.clone()))?;
            metadata_written = true;
        }
        sinks[i].finish(&run).map_err(|e| {
            format!(
                "writing the {} output into {}: {e}",
                sinks[i].name(),
                dir.display()
            )
        })?;
        if let Some(m) = sinks[i].metadata() {
            outputs.insert(sinks[i].name().to_string(), m);
        }
    }
    write_metadata(serde_json::Value::Object(outputs))?;
    let _ = std::fs::remove_file(dir.join(metron::RUN_FOLDER_CLAIM_MARKER));
    eprintln!(
        "metron: wrote {} ({samples} samples of {sampled} threads, {created} created while attached; {lost} lost; ended by {stop})",
        dir.display()
    );
    if lost > 0 {
        eprintln!(
            "metron: the kernel dropped {lost} samples (its ring buffers were full); counted as sampling.lost_samples in metadata.json"
        );
    }
    Ok(())
}

fn symbolizer_stats() -> serde_json::Value {
    let s = metron_symbols::shared()
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .stats();
    json!({
        "perf_map_entries": s.perf_map_entries,
        "jitdump_entries": s.jitdump_entries,
    })
}

/// The trace's settings: the defaults of an in-process run.
fn trace_config() -> PerfettoConfig {
    PerfettoConfig {
        file_name: "trace.pftrace".into(),
        buffer_bytes: 64 << 20,
        fill_policy: TraceFillPolicy::Discard,
        // No process counters: the flusher would sample this process's RSS, not the target's.
        categories: Categories {
            process: false,
            ..Categories::ALL
        },
        write_interval: None,
        segment_bytes: 1 << 20,
        max_file_bytes: None,
    }
}

/// Hands every thread's samples to the sinks, in time order, as an in-process run would.
fn feed(sinks: &mut [Box<dyn Sink>], threads: &BTreeMap<u32, Thread>) {
    let mut ordered: Vec<(&u32, &Thread)> = threads
        .iter()
        .filter(|(_, t)| !t.samples.is_empty())
        .collect();
    ordered.sort_by_key(|(_, t)| t.samples.first().map(|s| s.0));
    for (index, (&tid, thread)) in ordered.into_iter().enumerate() {
        let info = ThreadInfo {
            tid,
            name: if thread.name.is_empty() {
                format!("thread-{tid}")
            } else {
                thread.name.clone()
            },
            index: index as u64,
            is_metron: false,
        };
        let mut samples: Vec<&(u64, Vec<u64>)> = thread.samples.iter().collect();
        samples.sort_by_key(|s| s.0);
        for chunk in samples.chunks(4096) {
            let events: Vec<Event<'_>> = chunk
                .iter()
                .map(|(ts, frames)| Event::Sample {
                    ts_ns: *ts,
                    frames,
                    trigger: SampleTrigger::CpuTime,
                })
                .collect();
            for sink in sinks.iter_mut() {
                sink.events(&info, &events);
            }
        }
    }
}

/// The run folder: the template with the target's name and pid, claimed.
fn run_folder(options: &Options, target: &Target) -> Result<PathBuf, String> {
    let template = options
        .output
        .clone()
        .or_else(|| std::env::var("METRON_OUTPUT_PATH").ok())
        .unwrap_or_else(|| "metron-output/%exe%-%pid%-%time%".into())
        .replace("%pid%", &target.pid.to_string());
    let path = metron::expand_output_path(&template, &target.exe);
    let path = if path.is_absolute() {
        path
    } else {
        std::env::current_dir().unwrap_or_default().join(path)
    };
    metron::claim_run_folder(&path)
        .map_err(|e| format!("cannot create the run folder {}: {e}", path.display()))
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
