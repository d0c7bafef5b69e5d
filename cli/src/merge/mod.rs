//! `metron merge DIR… [-o OUT]`: joins the run folders of a many-process job (MPI ranks,
//! `srun` tasks) into one folder:
//!
//! - `trace.pftrace`: one Perfetto trace, one process track per rank named
//!   `rank N (host, pid)`, every timestamp on `CLOCK_REALTIME` (each rank's
//!   `CLOCK_MONOTONIC` plus its host's realtime − monotonic offset from `metadata.json`'s clock
//!   pairs). Streamed packet by packet: memory does not grow with the traces.
//! - `summary.txt` / `summary.json`: per region and metric, per-rank totals, min/mean/max,
//!   imbalance (max − mean) / max and the slowest rank.
//! - `ranks.tar`: the ranks' own traces and a `perfetto_manifest.json` for Perfetto's own merge.
//! - `metadata.json`: the inputs, the alignment (clock domains, offsets, how exact) and counts.
//!
//! Reads only Metron's outputs: `metadata.json`, `trace.pftrace`, `summary.json`.

mod archive;
mod inputs;
mod summary;
mod trace;

use inputs::RankRun;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

const HELP: &str = "\
metron merge: join the run folders of a many-process job (MPI ranks, srun tasks).

Usage:
  metron merge [-o OUT] [--no-archive] DIR...

  DIR           a run folder (it holds metadata.json), or a folder of run folders
  -o OUT        the output folder (default: merged, next to the first DIR); files of an
                earlier merge there are replaced
  --no-archive  do not write ranks.tar (the ranks' traces copied with a perfetto_manifest)

Writes OUT/trace.pftrace (one process track per rank, `rank N (host, pid)`, timestamps on
CLOCK_REALTIME), OUT/summary.txt and summary.json (per region: per-rank totals, min, mean,
max, imbalance = (max - mean) / max, slowest rank), OUT/ranks.tar and OUT/metadata.json.

Example:
  mpirun -np 4 metron run -o runs/r%rank% -- ./app && metron merge runs/
";

struct Args {
    dirs: Vec<PathBuf>,
    out: Option<PathBuf>,
    archive: bool,
    /// The folders are the processes of one `metron run` tree, not the ranks of a job: they are
    /// numbered by start time, and the header speaks of processes.
    tree: bool,
}

fn parse(args: &[String]) -> Result<Option<Args>, String> {
    let mut parsed = Args {
        dirs: Vec::new(),
        out: None,
        archive: true,
        tree: false,
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "-h" | "--help" => return Ok(None),
            "-o" | "--output" => {
                let v = it
                    .next()
                    .ok_or("-o needs a folder: metron merge -o OUT DIR...")?;
                parsed.out = Some(PathBuf::from(v));
            }
            "--no-archive" => parsed.archive = false,
            s if s.starts_with("--output=") => parsed.out = Some(PathBuf::from(&s[9..])),
            s if s.starts_with('-') && s.len() > 1 => {
                return Err(format!(
                    "unknown flag {s:?}; merge takes -o OUT, --no-archive and run folders"
                ))
            }
            s => parsed.dirs.push(PathBuf::from(s)),
        }
    }
    if parsed.dirs.is_empty() {
        return Err("merge needs run folders: metron merge [-o OUT] DIR...".into());
    }
    Ok(Some(parsed))
}

/// `metron merge`.
pub(crate) fn main(args: &[String]) -> ExitCode {
    let args = match parse(args) {
        Ok(Some(a)) => a,
        Ok(None) => {
            print!("{HELP}");
            return ExitCode::SUCCESS;
        }
        Err(e) => return crate::usage_error(&e),
    };
    match merge(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("metron merge: {e}");
            ExitCode::FAILURE
        }
    }
}

/// One clock domain (processes sharing `CLOCK_MONOTONIC`: one boot of one host).
struct Domain {
    offset_ns: i64,
    hosts: Vec<String>,
    ranks: Vec<u32>,
    /// Spread of the ranks' own start offsets around the one used.
    spread_ns: u64,
    /// Largest change of a rank's offset between its start and end.
    drift_ns: u64,
    uncertainty_ns: u64,
    estimated: bool,
    /// Added to the offset to put this domain on rank 0's wall clock, from the MPI ping-pongs
    /// of its ranks (median); with the largest round trip and drift of those.
    mpi: Option<(i64, u64, u64)>,
    /// The domain of world rank 0 (the reference of the MPI estimates).
    has_rank0: bool,
}

fn domains(runs: &[RankRun]) -> BTreeMap<String, Domain> {
    let mut by: BTreeMap<String, Vec<&RankRun>> = BTreeMap::new();
    for r in runs {
        by.entry(r.clock_domain.clone()).or_default().push(r);
    }
    by.into_iter()
        .map(|(name, rs)| {
            // One offset per domain keeps the ranks of one host exactly aligned with each
            // other: the tightest start pair's.
            let best = rs
                .iter()
                .min_by_key(|r| (r.offset_estimated, r.uncertainty_ns))
                .expect("a domain has runs");
            let offset = best.offset_start_ns;
            let mut hosts: Vec<String> = rs.iter().map(|r| r.host.clone()).collect();
            hosts.dedup();
            let domain = Domain {
                offset_ns: offset,
                hosts,
                ranks: rs.iter().map(|r| r.rank).collect(),
                spread_ns: rs
                    .iter()
                    .map(|r| (r.offset_start_ns - offset).unsigned_abs())
                    .max()
                    .unwrap_or(0),
                drift_ns: rs
                    .iter()
                    .map(|r| (r.offset_end_ns - r.offset_start_ns).unsigned_abs())
                    .max()
                    .unwrap_or(0),
                uncertainty_ns: rs.iter().map(|r| r.uncertainty_ns).max().unwrap_or(0),
                estimated: rs.iter().any(|r| r.offset_estimated),
                mpi: None,
                has_rank0: rs.iter().any(|r| r.world_rank == 0),
            };
            (name, domain)
        })
        .collect::<BTreeMap<_, _>>()
        .into_iter()
        .map(|(name, mut d)| {
            d.mpi = mpi_correction(runs, &name, d.has_rank0);
            if let Some((correction, _, _)) = d.mpi {
                d.offset_ns += correction;
            }
            (name, d)
        })
        .collect()
}

/// The MPI-based correction of domain `name`: rank 0's domain needs none; another domain
/// whose every rank has an estimate gets their median (`None` otherwise).
fn mpi_correction(runs: &[RankRun], name: &str, has_rank0: bool) -> Option<(i64, u64, u64)> {
    let rank0_measured = runs
        .iter()
        .any(|r| r.world_rank == 0 && r.mpi_offset.is_some());
    if !rank0_measured {
        return None;
    }
    let estimates: Vec<inputs::MpiOffset> = runs
        .iter()
        .filter(|r| r.clock_domain == name)
        .map(|r| r.mpi_offset)
        .collect::<Option<Vec<_>>>()?;
    if has_rank0 {
        return Some((0, 0, 0));
    }
    let mut offsets: Vec<i64> = estimates.iter().map(|e| e.offset_ns).collect();
    offsets.sort_unstable();
    Some((
        offsets[offsets.len() / 2],
        estimates.iter().map(|e| e.rtt_ns).max().unwrap_or(0),
        estimates.iter().map(|e| e.drift_ns).max().unwrap_or(0),
    ))
}

fn alignment_json(domains: &BTreeMap<String, Domain>) -> Value {
    let across = domains
        .values()
        .map(|d| d.uncertainty_ns + d.drift_ns.max(d.spread_ns))
        .max()
        .unwrap_or(0);
    let by_mpi = domains.len() > 1 && domains.values().all(|d| d.mpi.is_some());
    let mpi_bound = domains
        .values()
        .filter_map(|d| {
            d.mpi
                .map(|(_, rtt, drift)| rtt / 2 + drift + d.uncertainty_ns)
        })
        .max()
        .unwrap_or(0);
    let across_text = if by_mpi {
        format!(
            "measured: each clock domain is put on rank 0's wall clock by MPI ping-pongs at MPI_Init and MPI_Finalize (metadata.json's mpi.clock_offset_to_rank0), within {mpi_bound} ns (half the longest round trip, plus the estimates' change over the run and the clock-pair reads)"
        )
    } else {
        format!(
            "as exact as the hosts' wall clocks agree (NTP: typically 0.1-10 ms; PTP: about 1 µs; not measured by Metron), plus up to {across} ns from reading the clock pairs and the wall clock's drift against CLOCK_MONOTONIC during the run"
        )
    };
    json!({
        "clock": "CLOCK_REALTIME (Unix epoch ns): each rank's CLOCK_MONOTONIC plus its clock domain's realtime - monotonic offset",
        "within_a_domain": "exact: ranks of one clock domain (one boot of one host, by boot id) share CLOCK_MONOTONIC and one offset, so their events keep their true order and distances",
        "across_domains": across_text,
        "across_domains_by_mpi": by_mpi,
        "across_domains_error_bound_ns": by_mpi.then_some(mpi_bound),
        "across_domains_error_ns_besides_wall_clock_sync": across,
        "clock_domains": domains.iter().map(|(name, d)| json!({
            "domain": name,
            "hosts": d.hosts,
            "ranks": d.ranks,
            "offset_ns": d.offset_ns,
            "offset_spread_ns": d.spread_ns,
            "max_drift_ns": d.drift_ns,
            "read_uncertainty_ns": d.uncertainty_ns,
            "estimated_from_run_start": d.estimated,
            "mpi_correction_ns": d.mpi.map(|m| m.0),
            "mpi_rtt_ns": d.mpi.map(|m| m.1),
            "mpi_drift_ns": d.mpi.map(|m| m.2),
        })).collect::<Vec<_>>(),
    })
}

/// Merges the run folders `dirs` into `out` (no archive): the process tree of `metron run`.
pub(crate) fn merge_folders(dirs: Vec<PathBuf>, out: PathBuf) -> Result<(), String> {
    merge(&Args {
        dirs,
        out: Some(out),
        archive: false,
        tree: true,
    })
}

fn merge(args: &Args) -> Result<(), String> {
    let dirs = inputs::find_runs(&args.dirs)?;
    let mut runs = dirs
        .iter()
        .map(|d| inputs::read_run(d))
        .collect::<Result<Vec<_>, _>>()?;
    if let Some(note) = inputs::assign_ranks(&mut runs) {
        if !args.tree {
            eprintln!("metron merge: {note}");
        }
    }
    let out_dir = args.out.clone().unwrap_or_else(|| {
        args.dirs[0]
            .parent()
            .map_or_else(|| PathBuf::from("merged"), |p| p.join("merged"))
    });
    std::fs::create_dir_all(&out_dir).map_err(|e| format!("{}: {e}", out_dir.display()))?;
    let domains = domains(&runs);
    let alignment = alignment_json(&domains);

    // Pids collide across hosts: then every rank's pids and tids move to a range of its own.
    let mut pids: Vec<u32> = runs.iter().map(|r| r.pid).collect();
    pids.sort_unstable();
    let pids_collide = pids.windows(2).any(|w| w[0] == w[1]);

    // The merged trace and the archive are written side by side (each streams every rank's
    // trace once; neither holds one).
    let started = std::time::Instant::now();
    let trace_path = out_dir.join("trace.pftrace");
    let (counts, archive_result) = std::thread::scope(|scope| {
        let archive = args
            .archive
            .then(|| scope.spawn(|| write_archive(&out_dir, &runs, &domains, pids_collide)));
        let counts = write_trace(&trace_path, &runs, &domains, pids_collide);
        let archive = archive.map(|h| {
            h.join()
                .unwrap_or_else(|_| Err("the archive writer panicked".to_string()))
        });
        (counts, archive)
    });
    let counts = counts?;
    let trace_secs = started.elapsed().as_secs_f64();

    let mut cross = summary::CrossRank::new(runs.len());
    for (slot, run) in runs.iter().enumerate() {
        cross.add(slot, run);
        if let Some(Some(c)) = counts.get(slot) {
            cross.add_mpi(slot, &c.mpi_calls);
        }
    }
    let hosts: std::collections::BTreeSet<&str> = runs.iter().map(|r| r.host.as_str()).collect();
    let across = if domains.len() == 1 {
        "one domain".to_string()
    } else if let Some(bound) = alignment["across_domains_error_bound_ns"].as_u64() {
        format!("across domains within {bound} ns (MPI ping-pongs)")
    } else {
        format!(
            "across domains as good as the hosts' wall-clock sync (+{} ns)",
            alignment["across_domains_error_ns_besides_wall_clock_sync"]
        )
    };
    let header = if args.tree {
        format!(
            "Metron merge of the {} processes of one process tree (numbered by start time); timeline CLOCK_REALTIME.",
            runs.len()
        )
    } else {
        format!(
            "Metron merge of {} ranks on {} host(s), {} clock domain(s); timeline CLOCK_REALTIME: exact within a clock domain, {across}.",
            runs.len(),
            hosts.len(),
            domains.len(),
        )
    };
    write_file(
        &out_dir.join("summary.json"),
        serde_json::to_string_pretty(&cross.to_json(&runs, &alignment))
            .expect("JSON")
            .as_bytes(),
    )?;
    write_file(
        &out_dir.join("summary.txt"),
        cross.to_text(&runs, &header).as_bytes(),
    )?;

    let mut outputs = vec!["trace.pftrace", "summary.txt", "summary.json"];
    let mut archive_note = Value::Null;
    if let Some(archive) = archive_result {
        archive_note = archive?;
        outputs.push("ranks.tar");
    }
    outputs.push("metadata.json");

    let metadata = json!({
        "schema": "metron.merge/1",
        "metron_version": env!("CARGO_PKG_VERSION"),
        "trace_clock": "CLOCK_REALTIME",
        "alignment": alignment,
        "pids_remapped": pids_collide.then_some("two ranks had the same pid: rank N's pids and tids are (N + 1) * 2^22 + the real one; the track names keep the real pid"),
        "ranks": runs.iter().zip(&counts).map(|(r, c)| json!({
            "rank": r.rank,
            "recorded_rank": r.recorded_rank,
            "size": r.size,
            "rank_source": r.rank_source,
            "host": r.host,
            "clock_domain": r.clock_domain,
            "pid": r.pid,
            "exe": r.exe,
            "run_folder": r.dir,
            "trace": r.trace,
            "offset_start_ns": r.offset_start_ns,
            "offset_end_ns": r.offset_end_ns,
            "trace_packets": c.as_ref().map(trace::RankCounts::to_json),
        })).collect::<Vec<_>>(),
        "archive": archive_note,
        "merge_seconds": trace_secs,
        "peak_rss_kib": peak_rss_kib(),
        "outputs": outputs,
    });
    write_file(
        &out_dir.join("metadata.json"),
        serde_json::to_string_pretty(&metadata)
            .expect("JSON")
            .as_bytes(),
    )?;
    let no_trace: Vec<u32> = runs
        .iter()
        .filter(|r| r.trace.is_none())
        .map(|r| r.rank)
        .collect();
    if !no_trace.is_empty() {
        eprintln!("metron merge: ranks without a trace (left out of trace.pftrace): {no_trace:?}");
    }
    eprintln!(
        "metron merge: {} {} -> {}/{{{}}}; {header}",
        runs.len(),
        if args.tree { "processes" } else { "ranks" },
        out_dir.display(),
        outputs.join(",")
    );
    Ok(())
}

/// This process's peak resident set (`VmHWM` of /proc/self/status: since `exec`, unlike
/// getrusage's `ru_maxrss`, which keeps the parent's image a child was forked from).
fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Writes the merged trace: the clock snapshot, then every rank's packets rewritten. Returns
/// each rank's counts (`None`: the rank has no trace).
fn write_trace(
    trace_path: &Path,
    runs: &[RankRun],
    domains: &BTreeMap<String, Domain>,
    pids_collide: bool,
) -> Result<Vec<Option<trace::RankCounts>>, String> {
    let mut counts = Vec::new();
    let file = File::create(trace_path).map_err(|e| format!("{}: {e}", trace_path.display()))?;
    let mut out = BufWriter::with_capacity(1 << 20, file);
    let first_realtime = runs
        .iter()
        .map(|r| {
            let d = &domains[&r.clock_domain];
            (i128::from(r.start_monotonic_ns) + i128::from(d.offset_ns)).max(0) as u64
        })
        .min()
        .unwrap_or(0);
    let mut next_seq = 1u32;
    out.write_all(&trace::realtime_clock_packet(first_realtime, next_seq))
        .map_err(|e| format!("{}: {e}", trace_path.display()))?;
    for run in runs {
        let Some(path) = &run.trace else {
            counts.push(None);
            continue;
        };
        let map = rank_map(run, domains, pids_collide, false);
        let mut rewriter = trace::Rewriter::new(&map);
        let file = File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let mut input = BufReader::with_capacity(1 << 20, file);
        rewriter
            .copy(&mut input, &mut out, &mut next_seq)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        counts.push(Some(rewriter.counts));
    }
    out.flush()
        .map_err(|e| format!("{}: {e}", trace_path.display()))?;
    Ok(counts)
}

/// How rank `run`'s packets are rewritten (`keep_clocks`: for the archive's copy).
fn rank_map(
    run: &RankRun,
    domains: &BTreeMap<String, Domain>,
    pids_collide: bool,
    keep_clocks: bool,
) -> trace::RankMap {
    trace::RankMap {
        rank: run.rank,
        offset_ns: domains[&run.clock_domain].offset_ns,
        process_name: format!("rank {} ({}, {})", run.rank, run.host, run.pid),
        world_rank: i64::from(run.world_rank),
        mpi: run.mpi,
        keep_clocks,
        pid_base: if pids_collide {
            (run.rank + 1) << 22
        } else {
            0
        },
    }
}

fn write_file(path: &Path, bytes: &[u8]) -> Result<(), String> {
    std::fs::write(path, bytes).map_err(|e| format!("{}: {e}", path.display()))
}

/// `ranks.tar`: each rank's trace as `rank<N>.pftrace` and the manifest.
fn write_archive(
    out_dir: &Path,
    runs: &[RankRun],
    domains: &BTreeMap<String, Domain>,
    pids_collide: bool,
) -> Result<Value, String> {
    let path = out_dir.join("ranks.tar");
    let mtime = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let members: Vec<(String, &RankRun)> = runs
        .iter()
        .filter(|r| r.trace.is_some())
        .map(|r| (format!("rank{}.pftrace", r.rank), r))
        .collect();
    let manifest = archive::manifest(&members);
    let result = (|| -> std::io::Result<()> {
        let mut out = BufWriter::with_capacity(1 << 20, File::create(&path)?);
        // Compact: Perfetto finds a manifest by its first bytes, `{"perfetto_manifest"`.
        let text = serde_json::to_string(&manifest).expect("JSON");
        archive::add_bytes(&mut out, "perfetto_manifest.json", text.as_bytes(), mtime)?;
        for (name, run) in &members {
            let trace = run.trace.as_ref().expect("filtered");
            let mut input = BufReader::with_capacity(1 << 20, File::open(trace)?);
            let map = rank_map(run, domains, pids_collide, true);
            let mut rewriter = trace::Rewriter::new(&map);
            archive::add_written(&mut out, name, mtime, |out| {
                rewriter.copy(&mut input, out, &mut 0)
            })?;
        }
        archive::finish(&mut out)?;
        out.flush()
    })();
    result.map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(json!({
        "file": "ranks.tar",
        "what": "each rank's trace as rank<N>.pftrace (its own clocks and clock snapshots kept; track uuids, flow ids and the process name as in trace.pftrace) and perfetto_manifest.json (trace manifest format version 1, perfetto.dev/docs/reference/perfetto-manifest): one machine per host, REALTIME as the merged timeline; opens in Perfetto v58.2+ (UI and trace_processor)",
        "members": members.iter().map(|(n, _)| n).collect::<Vec<_>>(),
    }))
}
