//! The run folder of `metron sample --pid`: the samples handed to the sinks of an in-process
//! run (summary, `stacks.folded`, the trace with the target's process and thread tracks, the
//! pictures), and a `metadata.json` with an `attach` section.

use super::target::Target;
use super::{Options, Sampled, Thread};
use metron::sinks::folded::FoldedSink;
use metron::sinks::late_files::LateFilesSink;
use metron::sinks::perfetto::{Categories, PerfettoConfig, PerfettoSink, TraceFillPolicy};
use metron::sinks::summary::SummarySink;
use metron::{Event, RunInfo, SampleTrigger, Sink, ThreadInfo};
use serde_json::json;
use std::collections::BTreeMap;

/// Writes the run folder of `sampled` and says where.
pub(super) fn write(options: &Options, target: &Target, sampled: &Sampled) -> Result<(), String> {
    let Sampled {
        threads,
        lost,
        stop,
        start_ns,
        start_realtime_ns,
        end_ns,
        seconds,
        at_attach,
        paranoid,
        unwinder_modules,
    } = sampled;
    let (lost, stop) = (*lost, *stop);
    let claim = run_folder(options, target)?;
    let dir = claim.path().to_path_buf();
    let run = RunInfo {
        output_dir: dir.clone(),
        pid: target.pid,
        exe: target.exe.clone(),
        argv: target.argv.clone(),
        hostname: std::fs::read_to_string("/proc/sys/kernel/hostname")
            .map(|h| h.trim().to_string())
            .unwrap_or_default(),
        start_realtime_ns: *start_realtime_ns,
        start_ns: *start_ns,
        end_ns: *end_ns,
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
            "seconds": seconds,
            "ended_by": stop,
            "threads_at_attach": at_attach,
            "threads_created_while_attached": created,
            "threads_created_while_attached_sampled": created_sampled,
            "perf_event_paranoid": paranoid,
            "unwinder_modules": unwinder_modules,
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
    feed(&mut sinks, threads);
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
    // The target's Python perf support, not this process's.
    if let Some(jit) = outputs
        .get_mut("stacks")
        .and_then(|s| s.get_mut("jit"))
        .and_then(|j| j.as_object_mut())
    {
        jit.insert(
            "python_perf_support".into(),
            json!(target.python_perf_support),
        );
    }
    write_metadata(serde_json::Value::Object(outputs))?;
    drop(claim);
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
fn run_folder(options: &Options, target: &Target) -> Result<metron::ClaimedFolder, String> {
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
