//! Ranks of a many-process job: which rank this process is, out of how many, read from the
//! launcher's environment (Open MPI, MPICH/PMI, MVAPICH, Slurm), and the clock pairs that let
//! `metron merge` put ranks from several hosts on one timeline.
//!
//! # Clock pairs
//! A pair is `CLOCK_REALTIME` and `CLOCK_MONOTONIC` read together: realtime, monotonic,
//! realtime again, the tightest of a few tries; the pair's realtime is the midpoint of the two
//! realtime reads and `uncertainty_ns` half their distance. A pair at the start and one at the
//! end of the run give the offset (realtime − monotonic) of this host at both ends; its change
//! over the run (`drift_ns`) is what NTP slewed or stepped the wall clock by. Ranks of one host
//! share `CLOCK_MONOTONIC`, so their relative alignment is exact; ranks of different hosts are
//! as well aligned as the hosts' wall clocks are synchronized (NTP: ~0.1-10 ms, PTP: ~1 µs).

use metron_components::clock;
use serde_json::{json, Value};
use std::sync::OnceLock;

/// The launcher variables read, in order: (rank variable, size variable).
pub const LAUNCHER_VARIABLES: [(&str, &str); 5] = [
    ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"),
    ("PMI_RANK", "PMI_SIZE"),
    ("PMIX_RANK", "PMIX_SIZE"),
    ("MV2_COMM_WORLD_RANK", "MV2_COMM_WORLD_SIZE"),
    ("SLURM_PROCID", "SLURM_NTASKS"),
];

/// This process's place in a job.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rank {
    /// 0-based rank.
    pub rank: u32,
    /// Number of ranks; `None` when the launcher gave a rank but no size.
    pub size: Option<u32>,
    /// The variable the rank came from, e.g. `OMPI_COMM_WORLD_RANK`.
    pub source: &'static str,
}

/// The rank from the environment `env` (a variable's value by name): the first launcher
/// variable of [`LAUNCHER_VARIABLES`] that holds a number. `None` outside a launcher.
pub fn detect_with(env: impl Fn(&str) -> Option<String>) -> Option<Rank> {
    let number = |name: &str| env(name).and_then(|v| v.trim().parse::<u32>().ok());
    LAUNCHER_VARIABLES.iter().find_map(|&(rank_var, size_var)| {
        number(rank_var).map(|rank| Rank {
            rank,
            size: number(size_var),
            source: rank_var,
        })
    })
}

/// This process's rank, read once from its environment.
pub fn detect() -> Option<&'static Rank> {
    static RANK: OnceLock<Option<Rank>> = OnceLock::new();
    RANK.get_or_init(|| detect_with(|n| std::env::var(n).ok()))
        .as_ref()
}

/// `CLOCK_REALTIME` and `CLOCK_MONOTONIC` read together.
#[derive(Clone, Copy, Debug)]
pub struct ClockPair {
    /// Unix epoch ns (the midpoint of the two realtime reads around the monotonic one).
    pub realtime_ns: u64,
    /// `CLOCK_MONOTONIC` ns.
    pub monotonic_ns: u64,
    /// Half the time between the two realtime reads: how far apart the two may be.
    pub uncertainty_ns: u64,
}

impl ClockPair {
    /// Reads a pair now: the tightest of 5 tries.
    pub fn now() -> ClockPair {
        let mut best: Option<ClockPair> = None;
        for _ in 0..5 {
            let r0 = clock::realtime_ns();
            let m = clock::monotonic_ns();
            let r1 = clock::realtime_ns();
            // A step of the wall clock between the reads makes r1 < r0: such a try is useless.
            if r1 < r0 {
                continue;
            }
            let pair = ClockPair {
                realtime_ns: r0 + (r1 - r0) / 2,
                monotonic_ns: m,
                uncertainty_ns: (r1 - r0).div_ceil(2),
            };
            if best.is_none_or(|b| pair.uncertainty_ns < b.uncertainty_ns) {
                best = Some(pair);
            }
        }
        best.unwrap_or_else(|| ClockPair {
            realtime_ns: clock::realtime_ns(),
            monotonic_ns: clock::monotonic_ns(),
            uncertainty_ns: u64::MAX,
        })
    }

    /// realtime − monotonic, ns.
    pub fn offset_ns(&self) -> i128 {
        i128::from(self.realtime_ns) - i128::from(self.monotonic_ns)
    }

    fn to_json(self) -> Value {
        json!({
            "realtime_ns": self.realtime_ns,
            "monotonic_ns": self.monotonic_ns,
            "uncertainty_ns": self.uncertainty_ns,
        })
    }
}

/// The pair read at the start of the run (the first call reads it: the runtime calls this
/// while it starts, before main).
pub(crate) fn start_pair() -> ClockPair {
    static START: OnceLock<ClockPair> = OnceLock::new();
    *START.get_or_init(ClockPair::now)
}

/// `/proc/sys/kernel/random/boot_id`: processes with the same boot id share `CLOCK_MONOTONIC`
/// (whatever their host names say, e.g. containers of one machine).
fn boot_id() -> Option<String> {
    static BOOT_ID: OnceLock<Option<String>> = OnceLock::new();
    BOOT_ID
        .get_or_init(|| {
            std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
                .ok()
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty())
        })
        .clone()
}

/// The `rank` section of `metadata.json`: rank, size, where they came from, host and boot id.
pub(crate) fn rank_json(hostname: &str) -> Value {
    let rank = detect();
    json!({
        "rank": rank.map_or(0, |r| r.rank),
        "size": rank.map_or(Some(1), |r| r.size),
        "source": rank.map_or("none (no launcher variable: rank 0 of 1)", |r| r.source),
        "host": hostname,
        "boot_id": boot_id(),
    })
}

/// The `clock_pairs` section of `metadata.json`: the start pair, a pair read now (the end),
/// and what they say about the wall clock over the run.
pub(crate) fn clock_pairs_json() -> Value {
    let start = start_pair();
    let end = ClockPair::now();
    json!({
        "what": "CLOCK_REALTIME and CLOCK_MONOTONIC read together; offset = realtime - monotonic",
        "start": start.to_json(),
        "end": end.to_json(),
        "offset_start_ns": start.offset_ns() as i64,
        "offset_end_ns": end.offset_ns() as i64,
        "drift_ns": (end.offset_ns() - start.offset_ns()) as i64,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env_of<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn each_launcher_is_recognized() {
        for (rank_var, size_var) in LAUNCHER_VARIABLES {
            let vars = [(rank_var, "3"), (size_var, "8")];
            let rank = detect_with(env_of(&vars)).expect(rank_var);
            assert_eq!(
                rank,
                Rank {
                    rank: 3,
                    size: Some(8),
                    source: rank_var
                }
            );
        }
    }

    #[test]
    fn open_mpi_wins_over_slurm_and_junk_is_ignored() {
        let vars = [
            ("SLURM_PROCID", "5"),
            ("SLURM_NTASKS", "6"),
            ("OMPI_COMM_WORLD_RANK", "1"),
            ("PMI_RANK", "x"),
        ];
        let rank = detect_with(env_of(&vars)).unwrap();
        assert_eq!(
            (rank.rank, rank.size, rank.source),
            (1, None, "OMPI_COMM_WORLD_RANK")
        );
        let junk = [("PMI_RANK", "-1"), ("PMI_SIZE", "4")];
        assert_eq!(detect_with(env_of(&junk)), None);
        assert_eq!(detect_with(env_of(&[])), None);
    }

    #[test]
    fn clock_pairs_are_tight_and_ordered() {
        let a = ClockPair::now();
        let b = ClockPair::now();
        assert!(b.monotonic_ns >= a.monotonic_ns);
        assert!(a.uncertainty_ns < 1_000_000_000, "{a:?}");
        // The offset of one host changes by at most what NTP slews between two reads.
        let change = (b.offset_ns() - a.offset_ns()).unsigned_abs();
        assert!(change < 1_000_000_000, "{a:?} {b:?}");
    }
}
