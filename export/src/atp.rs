//! `session.atp`: the application trace in the reference profiler's format (header, API Trace
//! and Timestamp sections per API family and thread, Kernel Timestamp, Stack Trace, Perfmarker).

use crate::trace::{Step, Trace};
use crate::{field, header, kernels, ApiCall, Out, Run, TRACE_FILE_VERSION};
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// The `.atp` text of `run`.
pub fn atp(run: &Run) -> String {
    let mut out = Out::new(None);
    write_atp(run, &mut out);
    out.buf
}

pub(crate) fn write_atp(run: &Run, out: &mut Out<'_>) {
    let _ = writeln!(out, "TraceFileVersion={TRACE_FILE_VERSION}");
    header(run, out, "");
    let calls = run.api_calls();
    let family = run.kernel_family();
    let mut families: Vec<&str> = Vec::new();
    for f in ["cuda", "hsa", "hip"] {
        if calls.iter().any(|c| c.family == f) || (f == family && !run.kernels.is_empty()) {
            families.push(f);
        }
    }
    let _ = writeln!(out, "API={}", families.join(","));
    let _ = writeln!(
        out,
        "ParameterList=empty: Metron records each GPU API call's name, thread, times, return code and correlation id, not its arguments"
    );
    for f in &families {
        let mut by_thread: BTreeMap<u32, Vec<&ApiCall>> = BTreeMap::new();
        for c in calls.iter().filter(|c| c.family == *f) {
            by_thread.entry(c.tid).or_default().push(c);
        }
        let _ = writeln!(out, "====={f} API Trace Output=====");
        for (tid, list) in &by_thread {
            let _ = writeln!(out, "{tid}");
            let _ = writeln!(out, "{}", list.len());
            for c in list {
                let _ = writeln!(out, "{} = {} (  )", c.return_value(), c.name);
            }
        }
        let _ = writeln!(out, "====={f} Timestamp Output=====");
        for (tid, list) in &by_thread {
            let _ = writeln!(out, "{tid}");
            let _ = writeln!(out, "{}", list.len());
            for c in list {
                let _ = writeln!(out, "{} {} {} {}", c.kind, c.name, c.start_ns, c.end_ns);
            }
        }
        if *f == family && !run.kernels.is_empty() {
            let ks = kernels(run);
            let _ = writeln!(out, "====={f} Kernel Timestamp Output=====");
            let _ = writeln!(out, "{}", ks.len());
            for k in &ks {
                let packet = format!(
                    "grid_size={} workgroup_size={} group_segment_size={} private_segment_size={}",
                    k.get("GlobalWorkSize"),
                    k.get("WorkGroupSize"),
                    k.get("LocalMemSize"),
                    k.get("ScratchRegs")
                );
                let _ = writeln!(
                    out,
                    "{} 0 {} {} {} {} {} {} KERNEL_DISPATCH {} {}",
                    field(&k.name),
                    k.num("StartNs"),
                    k.num("EndNs"),
                    field(&k.device_name),
                    k.device,
                    k.num("Stream"),
                    k.device,
                    k.num("CorrelationId"),
                    field(&packet),
                );
            }
        }
    }
    source_code(run, out);
    perf_markers(run, out);
}

/// The thread id of a thread track (or of the thread whose track is its parent).
fn thread_of(trace: &Trace, uuid: u64) -> Option<u32> {
    let t = trace.tracks.get(&uuid)?;
    t.thread.map(|(_, tid)| tid)
}

/// The Stack Trace section: the call site of each region whose start has a backtrace
/// (`metron: backtrace` instants: regions whose bundle holds a `metron::Backtrace`).
fn source_code(run: &Run, out: &mut Out<'_>) {
    let mut by_thread: BTreeMap<u32, Vec<String>> = BTreeMap::new();
    for i in run
        .trace
        .instants
        .iter()
        .filter(|i| &*i.name == "metron: backtrace" && !i.callstack.is_empty())
    {
        let Some(tid) = thread_of(&run.trace, i.track) else {
            continue;
        };
        let region = i
            .args
            .get("region")
            .map(|a| a.to_string())
            .unwrap_or_default();
        // The innermost frame outside Metron: where the region was begun.
        let site = i
            .callstack
            .iter()
            .rev()
            .find(|f| !is_metron_frame(&f.function))
            .unwrap_or(&i.callstack[i.callstack.len() - 1]);
        let function = if site.function.is_empty() {
            format!("0x{:x}", site.rel_pc)
        } else {
            site.function.clone()
        };
        // The line and file: the region's one call site in summary.json (file!() and
        // line!() of the macro), else the frame's own, else none (line 0, no file).
        let (file, number) = match run.sites.get(&region) {
            Some(s) if s.len() == 1 => {
                let (f, l) = s.iter().next().expect("one site");
                (Some(f.clone()), *l)
            }
            _ => match (site.line, &site.file) {
                (Some(l), Some(f)) if l > 0 => (Some(f.clone()), l),
                _ => (None, 0),
            },
        };
        let mut line = format!("{} {} {}", field(&region), field(&function), number);
        if let Some(file) = file {
            line.push(' ');
            line.push_str(&field(&file));
        }
        by_thread.entry(tid).or_default().push(line);
    }
    if by_thread.is_empty() {
        return;
    }
    let _ = writeln!(out, "=====perfmarker Stack Trace Output=====");
    for (tid, lines) in by_thread {
        let _ = writeln!(out, "{tid}");
        let _ = writeln!(out, "{}", lines.len());
        for l in lines {
            let _ = writeln!(out, "{l}");
        }
    }
}

/// Frames of Metron itself (and of the unwinder) at the top of a region-start backtrace.
fn is_metron_frame(function: &str) -> bool {
    function.starts_with("metron")
        || function.contains("metron::")
        || function.contains("metron_user::")
        || function.starts_with("<metron")
        || function.contains("framehop")
}

/// The Perfmarker section: every region of every thread track, begins and ends in the order
/// the trace holds them (each end closes the innermost open begin).
fn perf_markers(run: &Run, out: &mut Out<'_>) {
    let mut by_thread: BTreeMap<u32, Vec<&[Step]>> = BTreeMap::new();
    for (uuid, steps) in &run.trace.steps {
        if let Some(tid) = thread_of(&run.trace, *uuid) {
            if !steps.is_empty() {
                by_thread.entry(tid).or_default().push(steps);
            }
        }
    }
    if by_thread.is_empty() {
        return;
    }
    let _ = writeln!(out, "=====Perfmarker Output=====");
    for (tid, tracks) in by_thread {
        let _ = writeln!(out, "{tid}");
        let _ = writeln!(out, "{}", tracks.iter().map(|t| t.len()).sum::<usize>());
        for step in tracks.into_iter().flatten() {
            match *step {
                Step::Begin(i) => {
                    let s = &run.trace.slices[i];
                    let group = s
                        .args
                        .get("group")
                        .map(|g| g.to_string())
                        .unwrap_or_default();
                    let _ = writeln!(
                        out,
                        "clBeginPerfMarker {} {} {}",
                        field(&s.name),
                        s.start_ns,
                        field(&group)
                    );
                }
                Step::End(i) => {
                    let s = &run.trace.slices[i];
                    let _ = writeln!(out, "clEndPerfMarker {}", s.end_ns.unwrap_or(s.start_ns));
                }
            }
        }
    }
}
