//! Many processes: ranks from the launcher's environment, `%rank%` in the output
//! path, and `metron merge` of the ranks' run folders into one trace and a summary across
//! ranks.
//!
//! - With Open MPI (`mpicc`, `mpirun`; `scripts/install-deps.sh` installs them): a C program
//!   of 4 ranks where rank 2 does 3x the work (`tests/mpi_programs/imbalance.c`), with a ring
//!   of sends and receives and an allreduce per step, runs under `metron run`; the merge is
//!   checked by the independent decoder (`tests/perfetto/validate_trace.py`): 4 process
//!   tracks `rank N (host, pid)`, each rank's slices, every timestamp on CLOCK_REALTIME inside
//!   the test's wall-clock window, and causality across ranks (no rank leaves an allreduce
//!   before the last one entered it); MPI calls recorded through PMPI with their byte counts
//!   and peers, and one flow arrow per message from the sending rank's `MPI_Isend`/`MPI_Send`
//!   to the receiving rank's `MPI_Recv`/`MPI_Wait`, which ends after the send began; the
//!   same program with `METRON_MPI=false` records no MPI regions and still runs; the
//!   summary names rank 2 the slowest with the 3:1
//!   imbalance in region counts (exact) and in CPU time (within 10 %); the `ranks.tar`
//!   archive is read with Python's `tarfile` and its manifest checked against the documented
//!   format. Skipped, with the reason, where Open MPI is missing.
//! - Without MPI: the same rank variables set by hand (as `srun` or `mpirun` would), runs
//!   without any launcher (rank 0, no warning), and ranks that share a pid (two hosts).
//! - Scale: 16 synthetic ranks x 10^5 regions merged; the merge's peak RSS (getrusage of the
//!   child) is reported and must stay below the traces' total size (it streams).

mod c_api_support;

use c_api_support::{artifacts, assert_success, read_json, temp_dir};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn validator() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("perfetto/validate_trace.py")
}

/// Runs the independent decoder on a merged trace of `ranks` ranks; fails on a failed check.
fn validate_merged(trace: &Path, ranks: usize, window: Option<(u64, u64)>, slices: bool) -> Value {
    let mut cmd = Command::new("python3");
    cmd.arg(validator()).arg(trace).args([
        "--clock",
        "realtime",
        "--processes",
        &ranks.to_string(),
    ]);
    if let Some((start, end)) = window {
        cmd.args([
            "--window-start-ns",
            &start.to_string(),
            "--window-end-ns",
            &end.to_string(),
        ]);
    }
    if slices {
        cmd.arg("--slices");
    }
    let out = cmd.output().expect("run validate_trace.py");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_ne!(
        out.status.code(),
        Some(2),
        "validate_trace.py could not run (scripts/install-deps.sh installs the `perfetto` \
         package): {stderr}"
    );
    assert!(
        out.status.success(),
        "the merged trace fails checks: {stderr}"
    );
    serde_json::from_slice(&out.stdout).expect("validator JSON")
}

fn realtime_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after 1970")
        .as_nanos() as u64
}

/// `metron merge ARGS...`.
fn merge(args: &[&Path], out: &Path) -> Output {
    let mut cmd = Command::new(artifacts().metron());
    cmd.arg("merge").args(args).arg("-o").arg(out);
    let output = cmd.output().expect("run metron merge");
    assert_success(&output, "metron merge");
    output
}

/// A merged summary region by path.
fn region<'a>(summary: &'a Value, path: &[&str]) -> &'a Value {
    summary["regions"]
        .as_array()
        .expect("regions")
        .iter()
        .find(|r| {
            r["path"].as_array().is_some_and(|p| {
                p.iter()
                    .map(|x| x.as_str().unwrap_or(""))
                    .eq(path.iter().copied())
            })
        })
        .unwrap_or_else(|| panic!("no region {path:?} in the merged summary"))
}

fn have(tool: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .output()
        .is_ok_and(|o| o.status.success())
}

// ---------------------------------------------------------------------------------------------
// Real MPI.

#[test]
fn four_mpi_ranks_merge_into_one_trace_with_rank_2_the_slowest() {
    if !have("mpicc") || !have("mpirun") {
        eprintln!(
            "skipped: Open MPI is not installed (apt-get install openmpi-bin libopenmpi-dev, \
             as scripts/install-deps.sh does)"
        );
        return;
    }
    let dir = temp_dir("mpi-merge");
    let exe = build_imbalance(&dir);

    let runs = dir.join("runs");
    let before = realtime_ns();
    let out = mpirun(&exe, &runs, &[]);
    let after = realtime_ns();
    assert_success(&out, "mpirun of 4 ranks under metron run");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !stderr.contains("unknown key"),
        "%rank% is a known key: {stderr}"
    );

    // One run folder per rank, each knowing its rank.
    let mut pids = Vec::new();
    let mut host = String::new();
    for r in 0..4u64 {
        let m = read_json(&runs.join(format!("r{r}")), "metadata.json");
        assert_eq!(m["rank"]["rank"], r, "{}", m["rank"]);
        assert_eq!(m["rank"]["size"], 4);
        assert_eq!(m["rank"]["source"], "OMPI_COMM_WORLD_RANK");
        let pairs = &m["clock_pairs"];
        assert!(pairs["start"]["realtime_ns"].as_u64().unwrap() >= before);
        assert!(pairs["end"]["realtime_ns"].as_u64().unwrap() <= after);
        pids.push(m["run"]["pid"].as_u64().unwrap());
        host = m["rank"]["host"].as_str().unwrap().to_string();
        assert_eq!(m["mpi"]["library"], "Open MPI", "{}", m["mpi"]);
        assert_eq!(m["mpi"]["world_rank"], r);
        assert_eq!(m["mpi"]["world_size"], 4);
        // One host, one CLOCK_REALTIME: the ping-pong estimate of the offset to rank 0 is
        // within half its round trip of the truth, 0.
        for at in ["init", "finalize"] {
            let o = &m["mpi"]["clock_offset_to_rank0"][at];
            let (offset, rtt) = (
                o["offset_ns"].as_i64().unwrap(),
                o["rtt_ns"].as_u64().unwrap(),
            );
            assert!(
                offset.unsigned_abs() <= rtt / 2 + 1,
                "rank {r} {at}: offset {offset} ns with a round trip of {rtt} ns"
            );
            if r == 0 {
                assert_eq!((offset, rtt), (0, 0));
            }
        }
    }

    let merged = dir.join("merged");
    let out = merge(&[&runs], &merged);
    eprintln!("{}", String::from_utf8_lossy(&out.stderr));

    // The trace: 4 process tracks named after the ranks, each rank's slices on its threads,
    // every timestamp on the wall clock inside the test's window.
    let v = validate_merged(
        &merged.join("trace.pftrace"),
        4,
        Some((before, after)),
        true,
    );
    let processes: Vec<&Value> = v["tracks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["type"] == "process")
        .collect();
    for (r, pid) in pids.iter().enumerate() {
        let name = format!("rank {r} ({host}, {pid})");
        assert!(
            processes
                .iter()
                .any(|t| t["name"] == name.as_str() && t["pid"] == *pid),
            "no process track {name:?}: {processes:?}"
        );
        let thread = v["threads"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["pid"] == *pid && t["slices"].as_u64().unwrap_or(0) > 0)
            .unwrap_or_else(|| panic!("rank {r} has no thread with slices"));
        let units = if r == 2 { 3000 } else { 1000 };
        assert_eq!(thread["names"]["work_unit"], units, "rank {r}");
        assert_eq!(thread["names"]["allreduce"], 10, "rank {r}");
        assert_eq!(thread["names"]["exchange"], 10, "rank {r}");
    }

    // Alignment: one host, so exact up to each process's tick calibration. No rank leaves
    // allreduce k before every rank entered it; no rank's exchange k (which waits for the
    // previous rank's message) ends before that rank entered its exchange k.
    let calibration_ns = (0..4)
        .map(|r| {
            let c = &read_json(&runs.join(format!("r{r}")), "metadata.json")["clock"];
            c["initial_calibration_error_at_end_ns"]
                .as_i64()
                .unwrap()
                .unsigned_abs()
                .max(
                    c["final_calibration_error_at_end_ns"]
                        .as_i64()
                        .unwrap()
                        .unsigned_abs(),
                )
        })
        .max()
        .unwrap();
    let tolerance = 2 * calibration_ns + 1_000;
    let pid_of_track = |uuid: &Value| {
        v["threads"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["uuid"] == *uuid)
            .and_then(|t| t["pid"].as_u64())
    };
    let spans = |name: &str| -> Vec<Vec<(u64, u64)>> {
        pids.iter()
            .map(|pid| {
                let mut s: Vec<(u64, u64)> = v["slices"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter(|s| s["name"] == name && pid_of_track(&s["track"]) == Some(*pid))
                    .map(|s| {
                        let ts = s["ts"].as_u64().unwrap();
                        (ts, ts + s["dur"].as_u64().unwrap())
                    })
                    .collect();
                s.sort_unstable();
                s
            })
            .collect()
    };
    let allreduce = spans("allreduce");
    let exchange = spans("exchange");
    for step in 0..10 {
        let last_begin = allreduce.iter().map(|s| s[step].0).max().unwrap();
        let first_end = allreduce.iter().map(|s| s[step].1).min().unwrap();
        assert!(
            first_end + tolerance >= last_begin,
            "step {step}: a rank left allreduce at {first_end} before the last entered at \
             {last_begin} (tolerance {tolerance} ns): the ranks are not aligned"
        );
        for r in 0..4 {
            let from = (r + 3) % 4;
            assert!(
                exchange[r][step].1 + tolerance >= exchange[from][step].0,
                "step {step}: rank {r} received before rank {from} sent"
            );
        }
    }

    // MPI calls: byte counts, peers, and one flow per message from its send to its receive.
    let mpi = |pid: u64, name: &str| -> Vec<&Value> {
        v["slices"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|s| s["name"] == name && pid_of_track(&s["track"]) == Some(pid))
            .collect()
    };
    let mut send_of_flow = std::collections::HashMap::new();
    for (r, pid) in pids.iter().enumerate() {
        let next = ((r + 1) % 4) as u64;
        let prev = ((r + 3) % 4) as u64;
        // The warm-up ring (tag 1000, completed by MPI_Waitall) is one more MPI_Isend.
        let warm_up = mpi(*pid, "MPI_Isend")
            .into_iter()
            .filter(|s| s["args"]["mpi.tag"] == 1000)
            .count();
        assert_eq!(warm_up, 1, "rank {r}");
        assert_eq!(mpi(*pid, "MPI_Waitall").len(), 1, "rank {r}");
        for name in ["MPI_Isend", "MPI_Send"] {
            let sends: Vec<&Value> = mpi(*pid, name)
                .into_iter()
                .filter(|s| s["args"]["mpi.tag"] != 1000)
                .collect();
            assert_eq!(sends.len(), 5, "rank {r} {name}");
            for s in sends {
                assert_eq!(s["args"]["mpi.bytes"], 4096, "{s}");
                assert_eq!(s["args"]["mpi.dest"], next, "{s}");
                let flows = s["flows_out"].as_array().expect("a send starts a flow");
                assert_eq!(flows.len(), 1, "{s}");
                send_of_flow.insert(flows[0].as_u64().unwrap(), (r, s["ts"].as_u64().unwrap()));
            }
        }
        // Each MPI_Wait that completes an MPI_Irecv is a receive; those that complete an
        // MPI_Isend are not (the warm-up's receive, completed by MPI_Waitall, is forgotten).
        let waits = mpi(*pid, "MPI_Wait");
        assert_eq!(waits.len(), 10);
        let receives: Vec<&Value> = mpi(*pid, "MPI_Recv")
            .into_iter()
            .chain(
                waits
                    .into_iter()
                    .filter(|w| w["args"].get("mpi.source").is_some()),
            )
            .collect();
        assert_eq!(
            receives.len(),
            10,
            "rank {r}: 5 MPI_Recv and 5 MPI_Wait of an MPI_Irecv"
        );
        for s in receives {
            assert_eq!(s["args"]["mpi.bytes"], 4096, "{s}");
            assert_eq!(s["args"]["mpi.source"], prev, "{s}");
            let flow = s["flows_in"].as_array().expect("a receive ends a flow")[0]
                .as_u64()
                .unwrap();
            let (from, sent_at) = send_of_flow.get(&flow).copied().unwrap_or((usize::MAX, 0));
            if from != usize::MAX {
                assert_eq!(from as u64, prev, "the flow comes from the previous rank");
                let end = s["ts"].as_u64().unwrap() + s["dur"].as_u64().unwrap();
                assert!(
                    end + tolerance >= sent_at,
                    "received before it was sent: {s}"
                );
            }
        }
        for c in mpi(*pid, "MPI_Allreduce") {
            assert_eq!(c["args"]["mpi.bytes"], 8);
            assert_eq!(c["args"]["mpi.comm_size"], 4);
        }
        assert_eq!(mpi(*pid, "MPI_Bcast")[0]["args"]["mpi.root"], 0);
        assert_eq!(mpi(*pid, "MPI_Barrier").len(), 1);
        assert_eq!(mpi(*pid, "MPI_Init").len(), 1);
        assert_eq!(mpi(*pid, "MPI_Finalize").len(), 1);
    }
    assert_eq!(
        v["flows"],
        serde_json::json!({"outgoing": 44, "terminating": 40, "matched": 40})
    );

    // The summary across ranks: rank 2 is the slowest, 3:1.
    let summary = read_json(&merged, "summary.json");
    let exe_name = "imbalance";
    let unit = region(&summary, &[exe_name, "main_loop", "compute", "work_unit"]);
    assert_eq!(
        unit["count"]["per_rank"],
        serde_json::json!([1000.0, 1000.0, 3000.0, 1000.0])
    );
    assert_eq!(unit["count"]["max_rank"], 2);
    assert_eq!(unit["count"]["imbalance"], 0.5);
    let cpu = summary["counters"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "compute_cpu_ns")
        .expect("the compute_cpu_ns counter across ranks");
    assert_eq!(cpu["max_rank"], 2, "{cpu}");
    let per_rank: Vec<f64> = cpu["per_rank"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect();
    let others = (per_rank[0] + per_rank[1] + per_rank[3]) / 3.0;
    let ratio = per_rank[2] / others;
    assert!(
        (2.7..=3.3).contains(&ratio),
        "rank 2's compute CPU time is {ratio:.3}x the others' ({per_rank:?}), expected 3 +- 10 %"
    );
    let imbalance = cpu["imbalance"].as_f64().unwrap();
    assert!(
        (0.45..=0.55).contains(&imbalance),
        "CPU-time imbalance {imbalance}, expected 0.5 +- 10 %"
    );
    let wall = &unit["metrics"]["wall_clock.elapsed"];
    eprintln!(
        "work_unit wall per rank {} (slowest rank {}), compute CPU ns per rank {per_rank:?}, \
         ratio {ratio:.3}",
        wall["per_rank"], unit["slowest_rank"]
    );
    // What the communication moved, per rank, summed from the trace's mpi.bytes.
    let call = |name: &str| {
        summary["mpi_calls"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == name)
            .unwrap_or_else(|| panic!("no {name} in mpi_calls: {}", summary["mpi_calls"]))
            .clone()
    };
    for (name, calls, bytes) in [
        ("MPI_Isend", 6.0, 5.0 * 4096.0 + 64.0),
        ("MPI_Send", 5.0, 5.0 * 4096.0),
        ("MPI_Recv", 5.0, 5.0 * 4096.0),
        ("MPI_Wait", 10.0, 5.0 * 4096.0),
        ("MPI_Allreduce", 10.0, 80.0),
        ("MPI_Bcast", 1.0, 8.0),
    ] {
        let c = call(name);
        assert_eq!(
            c["calls"]["per_rank"],
            serde_json::json!(vec![calls; 4]),
            "{name}"
        );
        assert_eq!(
            c["bytes"]["per_rank"],
            serde_json::json!(vec![bytes; 4]),
            "{name}"
        );
    }
    let text = std::fs::read_to_string(merged.join("summary.txt")).unwrap();
    assert!(
        text.contains("imbalance") && text.contains("work_unit"),
        "{text}"
    );
    let meta = read_json(&merged, "metadata.json");
    assert_eq!(meta["trace_clock"], "CLOCK_REALTIME");
    assert_eq!(
        meta["alignment"]["clock_domains"].as_array().unwrap().len(),
        1
    );

    check_archive(&merged.join("ranks.tar"), &runs, 4);

    // Without the clock exchange: MPI calls recorded, no offsets.
    let nosync = dir.join("nosync");
    let out = mpirun(&exe, &nosync, &[("METRON_MPI_CLOCK_SYNC", "false")]);
    assert_success(&out, "mpirun with METRON_MPI_CLOCK_SYNC=false");
    for r in 0..4 {
        let m = read_json(&nosync.join(format!("r{r}")), "metadata.json");
        assert!(m["mpi"]["calls_recorded"].as_u64().unwrap() > 0);
        assert!(
            m["mpi"]["clock_offset_to_rank0"]["init"].is_null(),
            "{}",
            m["mpi"]
        );
    }

    // Without interposition the program runs as before and records no MPI call.
    let plain = dir.join("plain");
    let out = mpirun(&exe, &plain, &[("METRON_MPI", "false")]);
    assert_success(&out, "mpirun with METRON_MPI=false");
    for r in 0..4 {
        let s = read_json(&plain.join(format!("r{r}")), "summary.json");
        let paths = c_api_support::region_counts(&s["merged"]);
        assert!(
            paths.keys().all(|p| !p.contains("MPI_")),
            "METRON_MPI=false still records MPI calls: {paths:?}"
        );
        assert!(paths.keys().any(|p| p.ends_with("work_unit")));
        let m = read_json(&plain.join(format!("r{r}")), "metadata.json");
        assert!(m.get("mpi").is_none(), "{}", m["mpi"]);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Compiles `tests/mpi_programs/imbalance.c` with mpicc against libmetron into `dir`.
fn build_imbalance(dir: &Path) -> PathBuf {
    let a = artifacts();
    let exe = dir.join("imbalance");
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mpi_programs/imbalance.c");
    let cc = Command::new("mpicc")
        .args([
            "-std=c99",
            "-Wall",
            "-Wextra",
            "-Werror",
            "-O1",
            "-g",
            "-D_DEFAULT_SOURCE",
        ])
        .arg("-I")
        .arg(&a.include)
        .arg(&source)
        .arg("-o")
        .arg(&exe)
        .arg(format!("-L{}", a.dir.display()))
        .arg(format!("-Wl,-rpath,{}", a.dir.display()))
        .args(["-lmetron", "-lpthread"])
        .output()
        .expect("run mpicc");
    assert_success(&cc, "mpicc");
    exe
}

/// Runs 4 ranks of `exe` with mpirun under `metron run`, run folders `runs/r<rank>`.
fn mpirun(exe: &Path, runs: &Path, env: &[(&str, &str)]) -> Output {
    mpirun_under("run", exe, runs, env)
}

/// Runs 4 ranks of `exe` with mpirun under `metron <command>` (run or sample).
fn mpirun_under(command: &str, exe: &Path, runs: &Path, env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new("mpirun");
    // Root in a container: Open MPI refuses root without being told.
    if unsafe_is_root() {
        cmd.arg("--allow-run-as-root");
    }
    cmd.args(["--oversubscribe", "-np", "4"])
        .arg(artifacts().metron())
        .arg(command)
        .arg("--")
        .arg(exe)
        .arg("100")
        .env("METRON_OUTPUT_PATH", runs.join("r%rank%"))
        .env_remove("LD_PRELOAD")
        .env_remove("METRON_PRELOAD");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("run mpirun")
}

#[test]
fn sampled_mpi_ranks_keep_their_call_stacks_in_the_merge() {
    if !have("mpicc") || !have("mpirun") {
        eprintln!(
            "skipped: Open MPI is not installed (apt-get install openmpi-bin libopenmpi-dev)"
        );
        return;
    }
    let dir = temp_dir("mpi-sampled");
    let exe = build_imbalance(&dir);
    let runs = dir.join("runs");
    // A rank used to die by SIGSEGV about once in 15 runs here: the sampler raced with the
    // component dlcloses of MPI_Init (fixed; tests/tests/sampling_dlclose.rs).
    let out = mpirun_under("sample", &exe, &runs, &[]);
    assert_success(&out, "mpirun of 4 ranks under metron sample");
    let merged = dir.join("merged");
    merge(&[&runs], &merged);
    validate_merged(&merged.join("trace.pftrace"), 4, None, false);
    // The call stacks' interning survives the move to new sequences: every sample resolves,
    // each rank's samples keep its pid, and the compute loop is found in them.
    let out = Command::new("python3")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("perfetto/trace_samples.py"))
        .arg(merged.join("trace.pftrace"))
        .output()
        .expect("run trace_samples.py");
    assert_success(&out, "trace_samples.py on the merged trace");
    let decoded: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(decoded["errors"], serde_json::json!([]));
    let samples = decoded["samples"].as_array().unwrap();
    let mut pids: Vec<u64> = samples.iter().map(|s| s["pid"].as_u64().unwrap()).collect();
    pids.sort_unstable();
    pids.dedup();
    let expected: Vec<u64> = {
        let mut p: Vec<u64> = (0..4)
            .map(|r| {
                read_json(&runs.join(format!("r{r}")), "metadata.json")["run"]["pid"]
                    .as_u64()
                    .unwrap()
            })
            .collect();
        p.sort_unstable();
        p
    };
    assert_eq!(pids, expected, "samples of every rank, under its own pid");
    assert!(
        samples.iter().any(|s| s["frames"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f.as_str().unwrap_or("").starts_with("work_unit "))),
        "no sample in work_unit"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

fn unsafe_is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// Reads `ranks.tar` with Python's `tarfile` and checks the manifest against the documented
/// format (perfetto.dev/docs/reference/perfetto-manifest): version 1, a known trace_time
/// clock, every `files[].path` a member, each machine a non-empty name, attribute values
/// strings or integers. Each rank's member is a complete trace on its own clock (the
/// validator's default checks, the rank's `CLOCK_MONOTONIC` window, the service's clock
/// snapshots kept) whose process is named after the rank; no two members share a track uuid,
/// and the members' MPI flows pair up across files.
fn check_archive(tar: &Path, runs: &Path, ranks: usize) {
    let script = r#"
import json, os, sys, tarfile
tar, out, ranks = sys.argv[1], sys.argv[2], int(sys.argv[3])
clocks = {"REALTIME", "REALTIME_COARSE", "MONOTONIC", "MONOTONIC_COARSE", "MONOTONIC_RAW", "BOOTTIME"}
with tarfile.open(tar) as t:
    names = t.getnames()
    manifests = [n for n in names if t.extractfile(n).read().lstrip().startswith(b'{"perfetto_manifest"')]
    assert manifests == ["perfetto_manifest.json"], manifests
    doc = json.loads(t.extractfile("perfetto_manifest.json").read())
    assert list(doc) == ["perfetto_manifest"], list(doc)
    m = doc["perfetto_manifest"]
    assert m["version"] == 1
    assert m["trace_time"]["clock"] in clocks, m["trace_time"]
    paths = [f["path"] for f in m["files"]]
    assert len(paths) == ranks and set(paths) <= set(names), (paths, names)
    for f in m["files"]:
        assert not ("machine" in f and "machines" in f)
        assert isinstance(f["machine"]["name"], str) and f["machine"]["name"], f
    for k, v in m.get("attributes", {}).items():
        assert k and isinstance(v, (str, int)) and not isinstance(v, bool), (k, v)
    os.makedirs(out, exist_ok=True)
    for r in range(ranks):
        with open(os.path.join(out, "rank%d.pftrace" % r), "wb") as f:
            f.write(t.extractfile("rank%d.pftrace" % r).read())
print("ok", len(names))
"#;
    let members = tar.with_extension("members");
    let out = Command::new("python3")
        .args(["-c", script])
        .arg(tar)
        .arg(&members)
        .arg(ranks.to_string())
        .output()
        .expect("run python3");
    assert_success(&out, "checking ranks.tar and its perfetto_manifest");
    let mut uuids = std::collections::HashSet::new();
    let (mut flows_out, mut flows_in) = (0, 0);
    for r in 0..ranks {
        let m = read_json(&runs.join(format!("r{r}")), "metadata.json");
        let window = (
            m["run"]["start_ns"]
                .as_u64()
                .unwrap()
                .saturating_sub(1_000_000_000),
            m["run"]["end_ns"].as_u64().unwrap() + 1_000_000_000,
        );
        let trace = members.join(format!("rank{r}.pftrace"));
        let out = Command::new("python3")
            .arg(validator())
            .arg(&trace)
            .arg("--window-start-ns")
            .arg(window.0.to_string())
            .arg("--window-end-ns")
            .arg(window.1.to_string())
            .output()
            .expect("run validate_trace.py");
        assert_success(
            &out,
            &format!("validate_trace.py on the archive's rank{r}.pftrace"),
        );
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert!(
            v["clock_snapshots"].as_u64().unwrap() > 0,
            "rank {r}: its clock snapshots are kept"
        );
        let process = v["tracks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["type"] == "process")
            .unwrap();
        assert!(
            process["name"]
                .as_str()
                .unwrap()
                .starts_with(&format!("rank {r} (")),
            "{process}"
        );
        for t in v["tracks"].as_array().unwrap() {
            assert!(
                uuids.insert(t["uuid"].as_u64().unwrap()),
                "a track uuid repeats: {t}"
            );
        }
        flows_out += v["flows"]["outgoing"].as_u64().unwrap();
        flows_in += v["flows"]["terminating"].as_u64().unwrap();
    }
    assert_eq!((flows_out, flows_in), (44, 40));
}

// ---------------------------------------------------------------------------------------------
// Without MPI: launcher variables by hand, no launcher, shared pids.

/// Runs the C API program `regions.c` under `env`, its run folder at `path`.
fn run_regions(exe: &Path, path: &Path, env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(exe);
    cmd.env("METRON_OUTPUT_PATH", path)
        .env_remove("LD_PRELOAD")
        .env_remove("METRON_PRELOAD");
    for var in [
        "OMPI_COMM_WORLD_RANK",
        "OMPI_COMM_WORLD_SIZE",
        "PMI_RANK",
        "PMI_SIZE",
        "PMIX_RANK",
        "PMIX_SIZE",
        "MV2_COMM_WORLD_RANK",
        "MV2_COMM_WORLD_SIZE",
        "SLURM_PROCID",
        "SLURM_NTASKS",
    ] {
        cmd.env_remove(var);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("run regions");
    assert_success(&out, "regions");
    out
}

#[test]
fn launcher_variables_set_by_hand_name_the_ranks_and_merge() {
    let dir = temp_dir("fake-ranks");
    let exe = c_api_support::compile(&c_api_support::program("regions.c"), &dir, &[]);
    let runs = dir.join("runs");
    // Each launcher's variables, as srun, mpiexec.hydra and mpirun set them.
    let launchers = [
        ("SLURM_PROCID", "SLURM_NTASKS"),
        ("PMI_RANK", "PMI_SIZE"),
        ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"),
        ("MV2_COMM_WORLD_RANK", "MV2_COMM_WORLD_SIZE"),
    ];
    for (r, (rank_var, size_var)) in launchers.iter().enumerate() {
        let rank = r.to_string();
        let out = run_regions(
            &exe,
            &runs.join("r%rank%-of-%size%"),
            &[(rank_var, &rank), (size_var, "4")],
        );
        assert!(!String::from_utf8_lossy(&out.stderr).contains("unknown key"));
        let m = read_json(&runs.join(format!("r{r}-of-4")), "metadata.json");
        assert_eq!(m["rank"]["rank"], r as u64);
        assert_eq!(m["rank"]["source"], *rank_var);
    }
    // No launcher: rank 0 of 1, no warning.
    let out = run_regions(&exe, &dir.join("alone-r%rank%-%size%"), &[]);
    assert!(
        !String::from_utf8_lossy(&out.stderr).contains("unknown key"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let m = read_json(&dir.join("alone-r0-1"), "metadata.json");
    assert_eq!(m["rank"]["rank"], 0);
    assert_eq!(m["rank"]["size"], 1);

    let merged = dir.join("merged");
    merge(&[&runs], &merged);
    let v = validate_merged(&merged.join("trace.pftrace"), 4, None, false);
    let names: Vec<&str> = v["tracks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["type"] == "process")
        .filter_map(|t| t["name"].as_str())
        .collect();
    for r in 0..4 {
        assert!(
            names.iter().any(|n| n.starts_with(&format!("rank {r} ("))),
            "{names:?}"
        );
    }
    let summary = read_json(&merged, "summary.json");
    let outer = region(&summary, &["outer"]);
    assert_eq!(
        outer["count"]["per_rank"],
        serde_json::json!([3.0, 3.0, 3.0, 3.0])
    );
    assert_eq!(outer["count"]["imbalance"], 0.0);

    // Two hosts may give two ranks the same pid: copies of one run folder as ranks 0 and 1.
    // The merge keeps them apart (own pid ranges), and the trace still validates. Their
    // MPI clock estimates say host 1's wall clock is 5 ms behind rank 0's: every event of
    // rank 1 moves 5 ms later than the same event of rank 0.
    let twins = dir.join("twins");
    for r in 0..2 {
        let to = twins.join(format!("r{r}"));
        std::fs::create_dir_all(&to).unwrap();
        for f in ["trace.pftrace", "summary.json"] {
            std::fs::copy(runs.join("r0-of-4").join(f), to.join(f)).unwrap();
        }
        let mut m = read_json(&runs.join("r0-of-4"), "metadata.json");
        m["rank"]["rank"] = r.into();
        m["rank"]["host"] = format!("host{r}").into();
        m["rank"]["boot_id"] = format!("boot{r}").into();
        let offset = if r == 0 { 0 } else { 5_000_000 };
        let rtt = if r == 0 { 0 } else { 2_000 };
        m["mpi"] = serde_json::json!({
            "world_rank": r,
            "world_size": 2,
            "clock_offset_to_rank0": {
                "init": {"offset_ns": offset, "rtt_ns": rtt, "at_realtime_ns": 0},
                "finalize": {"offset_ns": offset, "rtt_ns": rtt, "at_realtime_ns": 0},
            },
        });
        std::fs::write(to.join("metadata.json"), m.to_string()).unwrap();
    }
    let merged_twins = dir.join("merged-twins");
    merge(&[&twins.join("r0"), &twins.join("r1")], &merged_twins);
    let v = validate_merged(&merged_twins.join("trace.pftrace"), 2, None, false);
    let first_ts = |rank: u64| {
        v["threads"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|t| t["pid"].as_u64().unwrap() >> 22 == rank + 1)
            .map(|t| t["first_ts"].as_u64().unwrap())
            .min()
            .unwrap()
    };
    assert_eq!(
        first_ts(1) - first_ts(0),
        5_000_000,
        "rank 1 moved by the MPI estimate"
    );
    let pids: Vec<u64> = v["tracks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["type"] == "process")
        .map(|t| t["pid"].as_u64().unwrap())
        .collect();
    assert_eq!(pids.len(), 2);
    assert_ne!(
        pids[0], pids[1],
        "ranks with one pid keep separate processes"
    );
    let meta = read_json(&merged_twins, "metadata.json");
    assert!(meta["pids_remapped"].is_string());
    assert_eq!(
        meta["alignment"]["clock_domains"].as_array().unwrap().len(),
        2
    );
    assert_eq!(meta["alignment"]["across_domains_by_mpi"], true);
    let bound = meta["alignment"]["across_domains_error_bound_ns"]
        .as_u64()
        .unwrap();
    assert!((1_000..10_000).contains(&bound), "{}", meta["alignment"]);
    let _ = std::fs::remove_dir_all(&dir);
}

// ---------------------------------------------------------------------------------------------
// Scale.

const SYNTHETIC_RANKS: usize = 16;
const SYNTHETIC_REGIONS: usize = 100_000;

metron_tests::scenario! {
    fn scenario_synthetic_rank() {
        let n: usize = std::env::var("MERGE_TEST_REGIONS").unwrap().parse().unwrap();
        let _outer = metron::scope!("rank_main");
        for _ in 0..n {
            let _r = metron::scope!("step");
        }
    }
}

#[test]
fn sixteen_synthetic_ranks_merge_in_bounded_memory() {
    let dir = temp_dir("synthetic-ranks");
    let runs = dir.join("runs");
    for r in 0..SYNTHETIC_RANKS {
        metron_tests::Scenario::new("scenario_synthetic_rank")
            .env("METRON_OUTPUT_PATH", runs.join("r%rank%").to_str().unwrap())
            .env("OMPI_COMM_WORLD_RANK", &r.to_string())
            .env("OMPI_COMM_WORLD_SIZE", &SYNTHETIC_RANKS.to_string())
            .env("MERGE_TEST_REGIONS", &SYNTHETIC_REGIONS.to_string())
            .run();
    }
    let input_bytes: u64 = (0..SYNTHETIC_RANKS)
        .map(|r| {
            std::fs::metadata(runs.join(format!("r{r}/trace.pftrace")))
                .unwrap()
                .len()
        })
        .sum();
    let merged = dir.join("merged");
    let started = std::time::Instant::now();
    // Waited for by wait4 (below), which also gives its resource usage.
    #[allow(clippy::zombie_processes)]
    let child = Command::new(artifacts().metron())
        .arg("merge")
        .arg(&runs)
        .arg("-o")
        .arg(&merged)
        .spawn()
        .expect("start metron merge");
    let (status, rusage) = wait_with_rusage(child.id());
    let seconds = started.elapsed().as_secs_f64();
    assert_eq!(status, 0, "metron merge failed");
    // getrusage's ru_maxrss of a child includes the image of the process it was forked from
    // (this test binary), so the merge also reports its own peak (VmHWM, counted from exec).
    let rusage_kib = rusage.ru_maxrss as u64;
    let meta = read_json(&merged, "metadata.json");
    let peak_rss_kib = meta["peak_rss_kib"]
        .as_u64()
        .expect("peak_rss_kib in metadata.json");
    let output_bytes = std::fs::metadata(merged.join("trace.pftrace"))
        .unwrap()
        .len();
    eprintln!(
        "merge of {SYNTHETIC_RANKS} ranks x {SYNTHETIC_REGIONS} regions: {seconds:.2} s, peak \
         RSS {peak_rss_kib} KiB (VmHWM; getrusage of the child: {rusage_kib} KiB, which \
         includes this test's image), traces {input_bytes} bytes in, {output_bytes} bytes out"
    );
    // Streaming: the merge never holds the traces (the archive copies them too).
    assert!(
        peak_rss_kib * 1024 < input_bytes,
        "peak RSS {peak_rss_kib} KiB is not below the {input_bytes} bytes of traces: the merge \
         holds them in memory"
    );
    let v = validate_merged(&merged.join("trace.pftrace"), SYNTHETIC_RANKS, None, false);
    let with_steps = v["threads"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["names"]["step"] == SYNTHETIC_REGIONS as u64)
        .count();
    assert_eq!(
        with_steps, SYNTHETIC_RANKS,
        "every rank's regions are in the merge"
    );
    let summary = read_json(&merged, "summary.json");
    let step = region(&summary, &["rank_main", "step"]);
    assert_eq!(step["count"]["ranks_with_region"], SYNTHETIC_RANKS as u64);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Waits for child `pid`; its exit status and its own resource usage.
fn wait_with_rusage(pid: u32) -> (i32, libc::rusage) {
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value of the plain C struct.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `pid` is our child, not yet waited for; `status` and `usage` are valid
    // out-pointers for the call.
    let rc = unsafe { libc::wait4(pid as libc::pid_t, &mut status, 0, &mut usage) };
    assert_eq!(rc, pid as libc::pid_t, "wait4");
    let code = if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        -1
    };
    (code, usage)
}

#[test]
fn merge_explains_what_it_needs() {
    let metron = artifacts().metron();
    let run = |args: &[&str]| {
        let out = Command::new(&metron)
            .arg("merge")
            .args(args)
            .output()
            .expect("run metron merge");
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, err) = run(&[]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("merge needs run folders"), "{err}");
    let (code, err) = run(&["--frobnicate", "x"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("unknown flag \"--frobnicate\"") && err.contains("-o OUT"),
        "{err}"
    );
    let empty = temp_dir("merge-empty");
    let (code, err) = run(&[empty.to_str().unwrap()]);
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("is not a run folder (no metadata.json) and holds none"),
        "{err}"
    );
    std::fs::write(
        empty.join("metadata.json"),
        "{\"schema\": \"something else\"}",
    )
    .unwrap();
    let (code, err) = run(&[empty.to_str().unwrap()]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("not a Metron metadata.json"), "{err}");
    let (code, out) = run(&["--help"]);
    assert_eq!(code, Some(0), "{out}");
    let _ = std::fs::remove_dir_all(&empty);
}

#[test]
fn an_mpi_library_outside_the_global_scope_is_still_found() {
    if !have("mpicc") || !have("mpirun") {
        eprintln!(
            "skipped: Open MPI is not installed (apt-get install openmpi-bin libopenmpi-dev)"
        );
        return;
    }
    let dir = temp_dir("mpi-local");
    let programs = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mpi_programs");
    let lib = dir.join("libuser.so");
    let cc = Command::new("mpicc")
        .args(["-shared", "-fPIC", "-O1", "-Wall", "-Werror"])
        .arg(programs.join("local_user.c"))
        .arg("-o")
        .arg(&lib)
        .output()
        .expect("run mpicc");
    assert_success(&cc, "mpicc -shared");
    let main = dir.join("local_main");
    let cc = Command::new("cc")
        .args(["-O1", "-Wall", "-Werror"])
        .arg(programs.join("local_main.c"))
        .arg("-o")
        .arg(&main)
        .arg("-ldl")
        .output()
        .expect("run cc");
    assert_success(&cc, "cc");
    let runs = dir.join("runs");
    let mut cmd = Command::new("mpirun");
    if unsafe_is_root() {
        cmd.arg("--allow-run-as-root");
    }
    let out = cmd
        .args(["--oversubscribe", "-np", "2"])
        .arg(artifacts().metron())
        .arg("run")
        .arg("--")
        .arg(&main)
        .arg(&lib)
        .env("METRON_OUTPUT_PATH", runs.join("r%rank%"))
        .env_remove("LD_PRELOAD")
        .env_remove("METRON_PRELOAD")
        .output()
        .expect("run mpirun");
    assert_success(&out, "mpirun of a program loading MPI with RTLD_LOCAL");
    for (r, call) in [(0, "MPI_Send"), (1, "MPI_Recv")] {
        let s = read_json(&runs.join(format!("r{r}")), "summary.json");
        let paths = c_api_support::region_counts(&s["merged"]);
        assert!(
            paths.keys().any(|p| p.ends_with(call)),
            "rank {r}: no {call} region in {paths:?}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
