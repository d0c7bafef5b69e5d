//! The run folders to merge: what each one's `metadata.json` says about its rank, host and
//! clocks, and where its trace and summary are. Only Metron's own outputs are read.

use serde_json::Value;
use std::path::{Path, PathBuf};

/// One rank's run folder.
#[derive(Debug, Clone)]
pub(crate) struct RankRun {
    pub(crate) dir: PathBuf,
    /// The rank (from metadata, or renumbered when several folders claim the same one).
    pub(crate) rank: u32,
    /// The rank the run itself recorded.
    pub(crate) recorded_rank: u32,
    /// The rank in `MPI_COMM_WORLD` as MPI itself reported it (MPI interposition), else
    /// the recorded rank.
    pub(crate) world_rank: u32,
    /// The job size the run recorded, if any.
    pub(crate) size: Option<u32>,
    /// Where the rank came from (`OMPI_COMM_WORLD_RANK`, ... or none).
    pub(crate) rank_source: String,
    pub(crate) host: String,
    /// Processes with the same boot id share `CLOCK_MONOTONIC`.
    pub(crate) clock_domain: String,
    pub(crate) pid: u32,
    pub(crate) exe: String,
    /// realtime − monotonic at start and end, and the read uncertainty, ns.
    pub(crate) offset_start_ns: i64,
    pub(crate) offset_end_ns: i64,
    pub(crate) uncertainty_ns: u64,
    /// True when the clock pairs came from `run.start_realtime_ns`/`start_ns` (a run from
    /// before clock pairs were recorded): read apart, less exact.
    pub(crate) offset_estimated: bool,
    pub(crate) start_monotonic_ns: u64,
    pub(crate) end_monotonic_ns: u64,
    pub(crate) trace: Option<PathBuf>,
    pub(crate) summary: Option<PathBuf>,
    /// Rank 0's wall clock minus this rank's, estimated over MPI (interposition), if any.
    pub(crate) mpi_offset: Option<MpiOffset>,
    /// The run recorded MPI calls (its metadata has an `mpi` section).
    pub(crate) mpi: bool,
}

/// An MPI ping-pong estimate of a rank's wall-clock offset to rank 0.
#[derive(Debug, Clone, Copy)]
pub(crate) struct MpiOffset {
    /// Mean of the estimates at MPI_Init and MPI_Finalize, ns.
    pub(crate) offset_ns: i64,
    /// Largest round trip of those used: each is within ±rtt/2.
    pub(crate) rtt_ns: u64,
    /// How far the two estimates differ (the hosts' wall clocks drifting apart).
    pub(crate) drift_ns: u64,
}

fn mpi_offset(meta: &Value) -> Option<MpiOffset> {
    let one = |which: &str| {
        let o = meta.get("mpi")?.get("clock_offset_to_rank0")?.get(which)?;
        Some((o.get("offset_ns")?.as_i64()?, o.get("rtt_ns")?.as_u64()?))
    };
    match (one("init"), one("finalize")) {
        (Some(a), Some(b)) => Some(MpiOffset {
            offset_ns: ((i128::from(a.0) + i128::from(b.0)) / 2) as i64,
            rtt_ns: a.1.max(b.1),
            drift_ns: (a.0 - b.0).unsigned_abs(),
        }),
        (Some(a), None) | (None, Some(a)) => Some(MpiOffset {
            offset_ns: a.0,
            rtt_ns: a.1,
            drift_ns: 0,
        }),
        (None, None) => None,
    }
}

/// The run folders named by `args`: a folder with a `metadata.json` is a run; a folder without
/// one stands for the runs directly inside it (those whose `metadata.json` is a run's, so an
/// earlier merge's output there is left out).
pub(crate) fn find_runs(args: &[PathBuf]) -> Result<Vec<PathBuf>, String> {
    let mut runs = Vec::new();
    for arg in args {
        if arg.join("metadata.json").is_file() {
            runs.push(arg.clone());
            continue;
        }
        let entries = std::fs::read_dir(arg).map_err(|e| {
            format!(
                "{}: {e}; give run folders (each holds a metadata.json) or a folder of them",
                arg.display()
            )
        })?;
        let mut inner: Vec<PathBuf> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| is_run(p))
            .collect();
        if inner.is_empty() {
            return Err(format!(
                "{} is not a run folder (no metadata.json) and holds none",
                arg.display()
            ));
        }
        inner.sort();
        runs.extend(inner);
    }
    Ok(runs)
}

/// A run folder of one process (not, say, the output of an earlier merge).
fn is_run(dir: &Path) -> bool {
    std::fs::read_to_string(dir.join("metadata.json"))
        .is_ok_and(|t| t.contains("\"metron.metadata/"))
}

fn u64_at(v: &Value, path: &[&str]) -> Option<u64> {
    path.iter().try_fold(v, |v, k| v.get(k))?.as_u64()
}

fn i64_at(v: &Value, path: &[&str]) -> Option<i64> {
    path.iter().try_fold(v, |v, k| v.get(k))?.as_i64()
}

fn str_at<'a>(v: &'a Value, path: &[&str]) -> Option<&'a str> {
    path.iter().try_fold(v, |v, k| v.get(k))?.as_str()
}

/// Reads the run folder `dir`.
pub(crate) fn read_run(dir: &Path) -> Result<RankRun, String> {
    let meta_path = dir.join("metadata.json");
    let text =
        std::fs::read_to_string(&meta_path).map_err(|e| format!("{}: {e}", meta_path.display()))?;
    let meta: Value = serde_json::from_str(&text)
        .map_err(|e| format!("{}: not JSON ({e})", meta_path.display()))?;
    if str_at(&meta, &["schema"]).is_none_or(|s| !s.starts_with("metron.metadata/")) {
        return Err(format!(
            "{}: not a Metron metadata.json (no \"schema\": \"metron.metadata/…\")",
            meta_path.display()
        ));
    }
    let host = str_at(&meta, &["rank", "host"])
        .or_else(|| str_at(&meta, &["run", "hostname"]))
        .unwrap_or("unknown-host")
        .to_string();
    let start_mono = u64_at(&meta, &["run", "start_ns"]).unwrap_or(0);
    let (offset_start_ns, offset_end_ns, uncertainty_ns, offset_estimated) = match i64_at(
        &meta,
        &["clock_pairs", "offset_start_ns"],
    ) {
        Some(start) => (
            start,
            i64_at(&meta, &["clock_pairs", "offset_end_ns"]).unwrap_or(start),
            u64_at(&meta, &["clock_pairs", "start", "uncertainty_ns"])
                .unwrap_or(0)
                .max(u64_at(&meta, &["clock_pairs", "end", "uncertainty_ns"]).unwrap_or(0)),
            false,
        ),
        None => {
            let real = u64_at(&meta, &["run", "start_realtime_ns"]).ok_or_else(|| {
                    format!(
                        "{}: no clock_pairs and no run.start_realtime_ns: cannot place it on the wall clock",
                        meta_path.display()
                    )
                })?;
            let off = (i128::from(real) - i128::from(start_mono)) as i64;
            (off, off, 0, true)
        }
    };
    let trace = meta
        .get("outputs")
        .and_then(Value::as_object)
        .and_then(|o| {
            o.values()
                .filter_map(|v| v.get("file")?.as_str())
                .find(|f| f.ends_with(".pftrace") || f.ends_with(".perfetto-trace"))
                .map(|f| dir.join(f))
        })
        .or_else(|| Some(dir.join("trace.pftrace")))
        .filter(|p| p.is_file());
    let summary = Some(dir.join("summary.json")).filter(|p| p.is_file());
    let rank = u64_at(&meta, &["rank", "rank"]).unwrap_or(0) as u32;
    Ok(RankRun {
        dir: dir.to_path_buf(),
        rank,
        recorded_rank: rank,
        world_rank: u64_at(&meta, &["mpi", "world_rank"]).map_or(rank, |r| r as u32),
        size: u64_at(&meta, &["rank", "size"]).map(|s| s as u32),
        rank_source: str_at(&meta, &["rank", "source"])
            .unwrap_or("none (a run without rank metadata)")
            .to_string(),
        clock_domain: str_at(&meta, &["rank", "boot_id"])
            .map(|b| format!("boot {b}"))
            .unwrap_or_else(|| format!("host {host}")),
        host,
        pid: u64_at(&meta, &["run", "pid"]).unwrap_or(0) as u32,
        exe: str_at(&meta, &["run", "exe"]).unwrap_or("?").to_string(),
        offset_start_ns,
        offset_end_ns,
        uncertainty_ns,
        offset_estimated,
        start_monotonic_ns: start_mono,
        end_monotonic_ns: u64_at(&meta, &["run", "end_ns"]).unwrap_or(start_mono),
        trace,
        summary,
        mpi_offset: mpi_offset(&meta),
        mpi: meta.get("mpi").is_some_and(|m| m["interposed"] == true),
    })
}

/// Orders `runs` by rank; when two claim the same rank (runs without a launcher are all
/// rank 0), numbers them all by start time instead and says so.
pub(crate) fn assign_ranks(runs: &mut [RankRun]) -> Option<String> {
    runs.sort_by_key(|r| {
        (
            r.rank,
            r.start_monotonic_ns.wrapping_add(r.offset_start_ns as u64),
        )
    });
    let duplicate = runs.windows(2).any(|w| w[0].rank == w[1].rank);
    if !duplicate {
        return None;
    }
    runs.sort_by_key(|r| {
        (
            i128::from(r.start_monotonic_ns) + i128::from(r.offset_start_ns),
            r.pid,
        )
    });
    for (i, r) in runs.iter_mut().enumerate() {
        r.rank = i as u32;
    }
    Some(
        "several run folders record the same rank (runs started without an MPI or Slurm \
         launcher are all rank 0): ranks are numbered by start time instead"
            .to_string(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(rank: u32, start: u64, pid: u32) -> RankRun {
        RankRun {
            dir: PathBuf::from(format!("r{pid}")),
            rank,
            recorded_rank: rank,
            world_rank: rank,
            size: None,
            rank_source: String::new(),
            host: "h".into(),
            clock_domain: "boot b".into(),
            pid,
            exe: "app".into(),
            offset_start_ns: 1_000,
            offset_end_ns: 1_000,
            uncertainty_ns: 0,
            offset_estimated: false,
            start_monotonic_ns: start,
            end_monotonic_ns: start + 10,
            trace: None,
            summary: None,
            mpi_offset: None,
            mpi: false,
        }
    }

    #[test]
    fn ranks_are_ordered_and_duplicates_numbered_by_start() {
        let mut runs = vec![run(2, 5, 10), run(0, 9, 11), run(1, 7, 12)];
        assert!(assign_ranks(&mut runs).is_none());
        assert_eq!(runs.iter().map(|r| r.pid).collect::<Vec<_>>(), [11, 12, 10]);
        // Runs without a launcher are all rank 0: numbered by start time, and said so.
        let mut alone = vec![run(0, 30, 1), run(0, 10, 2), run(0, 20, 3)];
        let note = assign_ranks(&mut alone).expect("a note");
        assert!(note.contains("numbered by start time"), "{note}");
        let got: Vec<_> = alone
            .iter()
            .map(|r| (r.rank, r.pid, r.recorded_rank))
            .collect();
        assert_eq!(got, [(0, 2, 0), (1, 3, 0), (2, 1, 0)]);
    }

    #[test]
    fn mpi_offsets_average_init_and_finalize() {
        let meta: Value = serde_json::json!({"mpi": {"clock_offset_to_rank0": {
            "init": {"offset_ns": 100, "rtt_ns": 40},
            "finalize": {"offset_ns": 300, "rtt_ns": 60},
        }}});
        let o = mpi_offset(&meta).unwrap();
        assert_eq!((o.offset_ns, o.rtt_ns, o.drift_ns), (200, 60, 200));
        let init_only: Value = serde_json::json!({"mpi": {"clock_offset_to_rank0": {
            "init": {"offset_ns": -5, "rtt_ns": 8}, "finalize": null,
        }}});
        let o = mpi_offset(&init_only).unwrap();
        assert_eq!((o.offset_ns, o.rtt_ns, o.drift_ns), (-5, 8, 0));
        assert!(mpi_offset(&serde_json::json!({})).is_none());
    }
}
