//! `metron export` and `METRON_EXPORT`: a run folder written as the reference
//! profilers' application trace (`session.atp`), kernel occupancy file (`session.occupancy`)
//! and API log (`api.log`), read back with the documented readers of `export_support/` and
//! compared with what the run wrote itself: `kernels.csv` and the trace as decoded by the
//! independent validator (`tests/perfetto/validate_trace.py`, official protos).
//!
//! - A CUDA run without a GPU: the fake backend of the GPU pipeline tests submits CUPTI-shaped
//!   runtime and driver API calls on two threads, kernels and a copy. Every API call is in the
//!   `cuda` API Trace and Timestamp sections of its thread and in the API log, with the same
//!   name, times and return value; every kernel of `kernels.csv` is in the Kernel Timestamp
//!   section and the occupancy file with the same name, times, device, stream and inputs;
//!   `CMD ID` is on exactly the calls that launched device work. `metron export` writes the
//!   same bytes afterwards and rejects unknown formats.
//! - A C program with nested perf markers on two threads (`c_api_programs/perf_markers.c`):
//!   the Perfmarker section has, per thread (its real tid), the begins and ends in the order
//!   of the program's calls, with names, groups and the trace's times.
//! - The HSA test double (`amd_support/`, skipped without the ROCm headers): the `hsa`
//!   sections hold its HSA API calls and dispatches.

mod c_api_support;
mod export_support;
mod nvtx_support;

use c_api_support::*;
use export_support::*;
use metron::gpu::{GpuDevice, GpuKind, GpuRecord};
use metron_tests::{scenario, Scenario};
use nvtx_support::{decoded_trace, printed};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

fn flush(_at_end: bool) {}

/// The fake device's limits (an H100's), as the NVIDIA backend reads them.
const LIMITS: metron_gpu_nvidia::Limits = metron_gpu_nvidia::Limits {
    threads_per_sm: 2048,
    blocks_per_sm: 32,
    registers_per_sm: 65536,
    shared_per_sm: 233472,
    reserved_shared_per_block: 1024,
};

/// The `gpu` section, with the device list and limits in the NVIDIA backend's shape.
fn metadata() -> Value {
    let mut limits = serde_json::to_value(LIMITS).unwrap();
    limits["sm_count"] = 132.into();
    limits["warp_size"] = 32.into();
    limits["max_threads_per_block"] = 1024.into();
    limits["compute_capability"] = "9.0".into();
    serde_json::json!({"backend": "fake", "enabled": true,
        "devices": [{"index": 0, "name": "Fake GPU", "limits": limits}]})
}

fn api(kind: GpuKind, name: &str, start: u64, end: u64, corr: u32, tid: u32) -> GpuRecord {
    let mut r = GpuRecord::new(kind, name.into());
    r.start_ns = start;
    r.end_ns = end;
    r.correlation = corr;
    r.tid = tid;
    r
}

fn kernel(name: &str, start: u64, end: u64, corr: u32, stream: u32, regs: u16) -> GpuRecord {
    let mut r = GpuRecord::new(GpuKind::Kernel, name.into());
    r.start_ns = start;
    r.end_ns = end;
    r.stream = stream;
    r.correlation = corr;
    r.grid = [64, 2, 1];
    r.block = [96, 2, 1];
    r.registers = regs;
    r.static_shared = 512;
    r.dynamic_shared = 1024;
    // As the NVIDIA backend computes it from the device limits.
    r.occupancy = metron_gpu_nvidia::occupancy(&LIMITS, 192, regs, 1536);
    r
}

scenario! {
    fn scenario_cuda_double() {
        assert!(metron::gpu::set_backend(
            metron::gpu::Backend { flush, metadata, stream_word: "stream" },
            vec![GpuDevice { index: 0, name: "Fake GPU".into() }],
        ));
        let key = metron::intern(metron::gpu::LAUNCH_KEY, metron::CallsiteKind::AnnotationKey);
        let t0 = metron::clock::monotonic_ns();
        {
            let _r = metron::scope!("step");
            metron::by_id::annotate(key, metron::AnnotationValue::U64(21));
        }
        let mut records = vec![
            // Thread 4242: a malloc (no device work), a copy, two launches (driver calls
            // inside the runtime calls share their correlation id), a failing call.
            api(GpuKind::RuntimeApi, "cudaMalloc", t0 + 1_000, t0 + 251_000, 20, 4242),
            api(GpuKind::RuntimeApi, "cudaMemcpyAsync", t0 + 300_000, t0 + 310_500, 25, 4242),
            api(GpuKind::RuntimeApi, "cudaLaunchKernel", t0 + 400_000, t0 + 407_000, 21, 4242),
            api(GpuKind::DriverApi, "cuLaunchKernel", t0 + 401_000, t0 + 406_000, 21, 4242),
            api(GpuKind::RuntimeApi, "cudaLaunchKernel", t0 + 500_000, t0 + 503_999, 22, 4242),
            api(GpuKind::RuntimeApi, "cudaFuncGetAttributes", t0 + 600_000, t0 + 600_100, 26, 4242),
            // Thread 4343: one launch.
            api(GpuKind::RuntimeApi, "cudaLaunchKernel", t0 + 450_000, t0 + 452_000, 23, 4343),
        ];
        records[5].status = 98;
        let mut copy = GpuRecord::new(GpuKind::Memcpy, "HtoD".into());
        copy.start_ns = t0 + 320_000;
        copy.end_ns = t0 + 330_000;
        copy.stream = 7;
        copy.bytes = 4096;
        copy.correlation = 25;
        records.push(copy);
        records.push(kernel("vector_add(float const*, float*, int)", t0 + 410_000, t0 + 420_000, 21, 7, 32));
        records.push(kernel("matmul<128>", t0 + 460_000, t0 + 490_000, 23, 9, 128));
        records.push(kernel("vector_add(float const*, float*, int)", t0 + 510_000, t0 + 515_500, 22, 7, 32));
        metron::gpu::submit(&records);
        metron::finish().expect("finished");
    }
}

/// The independent decoder's slices, with the tid of their track's thread (`None` on other
/// tracks).
struct Decoded {
    slices: Vec<(nvtx_support::Slice, Option<u32>)>,
}

fn decode(trace: &Path) -> Decoded {
    let json = decoded_trace(trace);
    let tids: BTreeMap<u64, Option<u32>> = json["tracks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["uuid"].as_u64().unwrap(),
                t["tid"].as_u64().map(|x| x as u32),
            )
        })
        .collect();
    Decoded {
        slices: nvtx_support::slices(&json)
            .into_iter()
            .map(|s| {
                let tid = tids.get(&s.track_uuid).copied().flatten();
                (s, tid)
            })
            .collect(),
    }
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn cuda_double_run_exports_and_reads_back() {
    let run = Scenario::new("scenario_cuda_double")
        .env("METRON_EXPORT", "atp,occupancy,apilog")
        .run();
    let dir = &run.output_dir;
    let meta = run.metadata();
    assert_eq!(
        meta["outputs"]["export"]["files"],
        serde_json::json!(["session.atp", "session.occupancy", "api.log"]),
        "{}",
        meta["outputs"]
    );
    let csv = read(&dir.join("kernels.csv"));
    let kernels: Vec<BTreeMap<String, String>> = {
        let mut lines = csv.lines().filter(|l| !l.starts_with('#'));
        let header = export_support::csv(lines.next().unwrap());
        lines
            .map(|l| header.iter().cloned().zip(export_support::csv(l)).collect())
            .collect()
    };
    assert_eq!(kernels.len(), 3);
    let trace = decode(&dir.join("trace.pftrace"));

    // The API calls of the trace, per (family, kind, tid), in start order.
    let mut api_slices: BTreeMap<(u32, u32), Vec<&nvtx_support::Slice>> = BTreeMap::new();
    for (s, _) in &trace.slices {
        for (prefix, kind) in [("CUDA runtime API tid ", 0), ("CUDA driver API tid ", 1)] {
            if let Some(tid) = s.track.strip_prefix(prefix) {
                api_slices
                    .entry((kind, tid.parse().unwrap()))
                    .or_default()
                    .push(s);
            }
        }
    }
    // The validator lists a slice when it ends: put them in start order.
    for v in api_slices.values_mut() {
        v.sort_by_key(|s| (s.ts, std::cmp::Reverse(s.dur)));
    }
    assert_eq!(api_slices.values().map(Vec::len).sum::<usize>(), 7);

    // session.atp.
    let atp = Atp::parse(&read(&dir.join("session.atp")));
    assert_eq!(atp.header["TraceFileVersion"], "3.3");
    assert!(atp.header["ProfilerVersion"].starts_with("Metron "));
    assert!(
        atp.header["Application"].contains("export_formats"),
        "{:?}",
        atp.header
    );
    assert_eq!(
        atp.sections,
        [
            "cuda API Trace Output",
            "cuda Timestamp Output",
            "cuda Kernel Timestamp Output",
            "Perfmarker Output"
        ]
    );
    let calls = &atp.api_trace["cuda"];
    let stamps = &atp.timestamps["cuda"];
    assert_eq!(
        calls.keys().copied().collect::<Vec<_>>(),
        [4242, 4343],
        "one thread block per calling thread"
    );
    for (tid, list) in stamps {
        assert_eq!(list.len(), calls[tid].len());
        for (kind, expected) in [(0, "runtime"), (1, "driver")] {
            let got: Vec<(String, u64, u64)> = list
                .iter()
                .filter(|e| e.kind == kind)
                .map(|e| (e.name.clone(), e.start, e.end))
                .collect();
            let want: Vec<(String, u64, u64)> = api_slices
                .get(&(kind, *tid))
                .map(|v| {
                    v.iter()
                        .map(|s| (s.name.clone(), s.ts, s.ts + s.dur))
                        .collect()
                })
                .unwrap_or_default();
            assert_eq!(got, want, "{expected} calls of thread {tid}");
        }
        // The API Trace section lists the same calls in the same order, without parameters.
        for (e, c) in list.iter().zip(&calls[tid]) {
            assert_eq!(e.name, c.name);
            assert!(c.parameters.is_empty());
            let status = if e.name == "cudaFuncGetAttributes" {
                "98"
            } else if e.kind == 1 {
                "CUDA_SUCCESS"
            } else {
                "cudaSuccess"
            };
            assert_eq!(c.return_value, status, "{c:?}");
        }
    }
    let ks = &atp.kernels["cuda"];
    assert_eq!(ks.len(), kernels.len());
    for (k, row) in ks.iter().zip(&kernels) {
        assert_eq!(format!("{} [{}]", k.name, k.device_name), row["Method"]);
        assert_eq!(k.start.to_string(), row["StartNs"]);
        assert_eq!(k.end.to_string(), row["EndNs"]);
        assert_eq!(k.queue.to_string(), row["Stream"]);
        assert_eq!(k.device_index.to_string(), row["Device"]);
        assert_eq!(k.packet_id.to_string(), row["CorrelationId"]);
        assert_eq!(k.packet_type, "KERNEL_DISPATCH");
        assert!(k
            .packet
            .contains(&format!("workgroup_size={}", row["WorkGroupSize"])));
        // The same kernel on its stream track of the trace.
        let on_track: Vec<_> = trace
            .slices
            .iter()
            .filter(|(s, _)| {
                s.track == format!("GPU 0 Fake GPU stream {}", k.queue) && s.ts == k.start
            })
            .collect();
        assert_eq!(on_track.len(), 1, "{k:?}");
        assert_eq!(on_track[0].0.name, k.name);
        assert_eq!(on_track[0].0.ts + on_track[0].0.dur, k.end);
    }
    // The Perfmarker section: the scenario's region on its thread.
    let step: Vec<_> = trace
        .slices
        .iter()
        .filter(|(s, _)| s.name == "step")
        .collect();
    assert_eq!(step.len(), 1);
    let tid = step[0].1.expect("a thread track");
    assert_eq!(
        atp.markers[&tid],
        [
            Marker::Begin {
                name: "step".into(),
                ts: step[0].0.ts,
                group: String::new()
            },
            Marker::End {
                ts: step[0].0.ts + step[0].0.dur
            }
        ]
    );

    // session.occupancy.
    let occ = Occupancy::parse(&read(&dir.join("session.occupancy")));
    assert!(occ.header["ProfilerVersion"].starts_with("Metron "));
    for c in [
        "Thread ID",
        "Kernel Name",
        "Device Name",
        "Number of VGPR used",
        "Amount of LDS used",
        "Size of wavefront",
        "Work-group size",
        "Wavefronts per work-group",
        "Global work size",
        "Kernel occupancy",
    ] {
        assert!(occ.columns.iter().any(|x| x == c), "column {c}");
    }
    assert_eq!(occ.rows.len(), kernels.len());
    for (o, row) in occ.rows.iter().zip(&kernels) {
        assert_eq!(
            format!("{} [{}]", o["Kernel Name"], o["Device Name"]),
            row["Method"]
        );
        assert_eq!(o["Thread ID"], row["ThreadID"]);
        assert_eq!(o["Number of VGPR used"], row["VGPRs"]);
        assert_eq!(o["Amount of LDS used"], "1536");
        assert_eq!(o["Amount of LDS used"], row["LocalMemSize"]);
        assert_eq!(o["Work-group size"], "192");
        assert_eq!(o["Size of wavefront"], "32");
        assert_eq!(o["Wavefronts per work-group"], "6");
        assert_eq!(o["Global work size"], (64 * 96 * 2 * 2).to_string());
        assert_eq!(o["Kernel occupancy"], row["KernelOccupancy"]);
        // The device limits from metadata.json.
        assert_eq!(o["Number of compute units"], "132");
        assert_eq!(o["Max. number of wavefronts per CU"], "64");
        assert_eq!(o["Max. number of work-group per CU"], "32");
        assert_eq!(o["Max. number of VGPR"], "65536");
        assert_eq!(o["Max. amount of LDS"], "233472");
        assert_eq!(o["Max work-group size"], "1024");
        assert_eq!(o["Max wavefronts per work-group"], "32");
        assert_eq!(o["Graphics IP Version"], "9.0");
        // Not recorded: AMD's scalar registers, SIMDs, max global size.
        assert_eq!(o["Max. number of SGPR"], "");
        assert_eq!(o["Number of SIMDs per CU"], "");
    }
    // 6 warps per block: threads allow 10 blocks (60 warps), the block count 32 (capped at
    // the threads' 60); 32 registers allow 64 warps = 10 blocks, 128 allow 16 warps = 2
    // blocks (12); 1536 + 1024 reserved shared bytes allow 91 blocks (capped at 60).
    let limited = |o: &BTreeMap<String, String>| {
        [
            "Nbr VGPR-limited waves",
            "Nbr LDS-limited waves",
            "Nbr of WG-limited waves",
        ]
        .map(|c| o[c].parse::<u64>().unwrap())
    };
    assert_eq!(limited(&occ.rows[0]), [60, 60, 60]);
    assert_eq!(limited(&occ.rows[1]), [12, 60, 60]);
    assert_eq!(occ.rows[0]["Kernel occupancy"], "93.75");
    assert_eq!(occ.rows[1]["Kernel occupancy"], "18.75");
    check_against_run(dir);

    // api.log: every call once, by start time, START TIME in the run's ticks.
    let log = api_log(&read(&dir.join("api.log")));
    let mut all: Vec<(u32, &nvtx_support::Slice)> = api_slices
        .iter()
        .flat_map(|((_, tid), v)| v.iter().map(move |s| (*tid, *s)))
        .collect();
    all.sort_by_key(|(_, s)| (s.ts, std::cmp::Reverse(s.dur)));
    assert_eq!(log.len(), all.len());
    let launched: BTreeSet<u64> = [21, 22, 23, 25].into();
    for (l, (tid, s)) in log.iter().zip(&all) {
        assert_eq!(l.tid, *tid);
        assert_eq!(l.name, s.name);
        assert_eq!(l.parameters, "");
        assert_eq!(l.duration_us, s.dur / 1000, "{l:?}");
        let ns = ns_of_ticks(&meta, l.start_ticks);
        // One tick of rounding either way.
        let tick = meta["clock"]["initial_ns_per_tick"].as_f64().unwrap();
        assert!(
            (ns - s.ts as f64).abs() <= tick + 1e-6,
            "{l:?}: {ns} vs {}",
            s.ts
        );
        // Only the calls that launched device work carry their correlation id in the trace.
        let corr = s.args["correlation_id"].as_u64();
        assert_eq!(l.cmd_id, corr, "{l:?}");
    }
    let with_ids: BTreeSet<u64> = log.iter().filter_map(|l| l.cmd_id).collect();
    assert_eq!(with_ids, launched);

    // `metron export` afterwards writes the same bytes; bad input is a usage error.
    let out = dir.join("again.atp");
    let cli = Command::new(artifacts().metron())
        .args(["export", "--format", "atp", "-o"])
        .arg(&out)
        .arg(dir)
        .output()
        .unwrap();
    assert_success(&cli, "metron export --format atp");
    assert_eq!(read(&out), read(&dir.join("session.atp")));
    for f in ["occupancy", "apilog"] {
        let cli = Command::new(artifacts().metron())
            .args(["export", "--format", f, "-o"])
            .arg(dir.join("again"))
            .arg(dir)
            .output()
            .unwrap();
        assert_success(&cli, "metron export");
        let file = if f == "apilog" {
            "api.log"
        } else {
            "session.occupancy"
        };
        assert_eq!(read(&dir.join("again")), read(&dir.join(file)));
    }
    // Several formats with -o: OUT is the folder, each file under its own name.
    let folder = dir.join("all-formats");
    let cli = Command::new(artifacts().metron())
        .args(["export", "--format", "all", "-o"])
        .arg(&folder)
        .arg(dir)
        .output()
        .unwrap();
    assert_success(&cli, "metron export --format all -o OUT");
    for file in ["session.atp", "session.occupancy", "api.log"] {
        assert_eq!(read(&folder.join(file)), read(&dir.join(file)), "{file}");
    }
    let bad = Command::new(artifacts().metron())
        .args(["export", "--format", "csv"])
        .arg(dir)
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&bad.stderr).contains("atp, occupancy, apilog"),
        "{}",
        String::from_utf8_lossy(&bad.stderr)
    );
    let missing = Command::new(artifacts().metron())
        .args(["export", "--format", "atp"])
        .arg(dir.join("no-such-run"))
        .output()
        .unwrap();
    assert_eq!(missing.status.code(), Some(1));
}

#[test]
fn a_bad_export_setting_is_reported_and_writes_nothing() {
    let run = Scenario::new("scenario_cuda_double")
        .env("METRON_EXPORT", "atp,pdf")
        .run();
    assert!(
        run.stderr.contains("METRON_EXPORT") && run.stderr.contains("atp, occupancy and apilog"),
        "{}",
        run.stderr
    );
    assert!(!run.output_dir.join("session.atp").exists());
}

/// A region whose start takes a backtrace: the Stack Trace section's call site.
#[derive(Default, metron::Bundle)]
struct WithStack {
    stack: metron::Backtrace,
}

#[inline(never)]
fn load_data() -> u32 {
    let (_g, line) = (metron::scope!("load", WithStack), line!());
    std::hint::black_box(line)
}

scenario! {
    fn scenario_region_backtraces() {
        let mut line = 0;
        for _ in 0..3 {
            line = load_data();
        }
        metron_tests::emit_data(&serde_json::json!({ "line": line }));
    }
}

#[test]
fn region_backtraces_give_the_stack_trace_section() {
    let run = Scenario::new("scenario_region_backtraces")
        .env("METRON_EXPORT", "atp")
        .run();
    let line = run.data()["line"].as_u64().unwrap();
    let atp = Atp::parse(&read(&run.output_dir.join("session.atp")));
    assert_eq!(
        atp.sections,
        ["perfmarker Stack Trace Output", "Perfmarker Output"]
    );
    let (tid, sites) = atp.source.iter().next().expect("one thread");
    assert_eq!(atp.source.len(), 1);
    assert_eq!(sites.len(), 3, "{sites:?}");
    for s in sites {
        assert_eq!(s.api, "load");
        assert!(s.function.contains("load_data"), "{s:?}");
        assert_eq!(s.line, line, "{s:?}");
        assert!(
            s.file
                .as_deref()
                .is_some_and(|f| f.ends_with("export_formats.rs")),
            "{s:?}"
        );
    }
    // The same thread's perf markers: the three regions.
    assert_eq!(atp.markers[tid].len(), 6);
}

/// What `perf_markers.c` calls on each thread: `Some((name, group))` a begin, `None` an end.
fn expected_markers(thread: &str) -> Vec<Option<(&'static str, &'static str)>> {
    let mut v = Vec::new();
    if thread == "main" {
        for _ in 0..2 {
            v.push(Some(("frame", "render")));
            v.push(Some(("upload", "copy")));
            v.push(None);
            v.push(Some(("draw", "")));
            v.push(Some(("draw inner \"quoted\"", "render pass")));
            v.push(None);
            v.push(None);
            v.push(None);
        }
    } else {
        v.push(Some(("worker", "compute")));
        for _ in 0..3 {
            v.push(Some(("step", "")));
            v.push(None);
        }
        v.push(None);
    }
    v
}

#[test]
fn c_perf_markers_nest_as_the_program_called_them() {
    let tmp = temp_dir("export-markers");
    let exe = compile(&program("perf_markers.c"), &tmp, &[]);
    let out = run_in(
        &exe,
        &tmp,
        &[],
        &[("METRON_TRACE", "true"), ("METRON_EXPORT", "atp")],
    );
    assert_success(&out, "perf_markers");
    let printed = printed(&out);
    let dir = tmp.join("run");
    let atp = Atp::parse(&read(&dir.join("session.atp")));
    assert_eq!(
        atp.sections,
        ["Perfmarker Output"],
        "no GPU API, no kernels"
    );
    let trace = decode(&dir.join("trace.pftrace"));
    for thread in ["main", "worker"] {
        let tid = printed[&format!("{thread}_tid")] as u32;
        let got = &atp.markers[&tid];
        let shape: Vec<Option<(&str, &str)>> = got
            .iter()
            .map(|m| match m {
                Marker::Begin { name, group, .. } => Some((name.as_str(), group.as_str())),
                Marker::End { .. } => None,
            })
            .collect();
        assert_eq!(shape, expected_markers(thread), "thread {thread}");
        // Times: replay the nesting (each end closes the latest open begin) and compare each
        // marker with the trace's slice of that thread starting at its begin.
        let mut open: Vec<(&str, u64)> = Vec::new();
        let mut checked = 0;
        for m in got {
            match m {
                Marker::Begin { name, ts, group } => {
                    open.push((name, *ts));
                    let s: Vec<_> = trace
                        .slices
                        .iter()
                        .filter(|(s, t)| *t == Some(tid) && s.ts == *ts && s.name == *name)
                        .collect();
                    assert_eq!(s.len(), 1, "{name} at {ts}");
                    let g = s[0]
                        .0
                        .args
                        .get("group")
                        .and_then(Value::as_str)
                        .unwrap_or("");
                    assert_eq!(g, group);
                    assert_eq!(s[0].0.depth as usize, open.len() - 1);
                }
                Marker::End { ts } => {
                    let (name, begin) = open.pop().expect("an end closes an open begin");
                    let s = trace
                        .slices
                        .iter()
                        .find(|(s, t)| *t == Some(tid) && s.ts == begin && s.name == name)
                        .unwrap();
                    assert_eq!(s.0.ts + s.0.dur, *ts, "{name}");
                    checked += 1;
                }
            }
        }
        assert!(open.is_empty());
        assert_eq!(checked, expected_markers(thread).len() / 2);
    }
}

fn hsa_include() -> Option<PathBuf> {
    ["/opt/rocm/include/hsa", "/usr/include/hsa"]
        .iter()
        .map(PathBuf::from)
        .find(|d| d.join("hsa_api_trace.h").is_file())
}

#[test]
fn hsa_double_run_exports_hsa_sections() {
    let Some(hsa) = hsa_include() else {
        println!(
            "SKIP: no hsa_api_trace.h (scripts/install-deps.sh installs Debian's libhsa-runtime-dev)"
        );
        return;
    };
    let tmp = temp_dir("export-hsa");
    let a = artifacts();
    let support = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/amd_support");
    let exe = tmp.join("hsa_app");
    let cc = Command::new("c++")
        .args(["-std=c++17", "-O1", "-g", "-I"])
        .arg(&hsa)
        .arg("-I")
        .arg(&a.include)
        .arg(support.join("hsa_runtime_double.cpp"))
        .arg(support.join("hsa_app.cpp"))
        .arg("-o")
        .arg(&exe)
        .arg(format!("-L{}", a.dir.display()))
        .arg(format!("-Wl,-rpath,{}", a.dir.display()))
        .args(["-lmetron", "-lpthread", "-ldl"])
        .output()
        .unwrap();
    assert!(
        cc.status.success(),
        "{}",
        String::from_utf8_lossy(&cc.stderr)
    );
    let dir = tmp.join("run");
    let out = Command::new(a.metron())
        .arg("run")
        .arg("-o")
        .arg(&dir)
        .args(["--trace", "true", "--"])
        .arg(&exe)
        .arg("normal")
        .env("METRON_EXPORT", "all")
        .env_remove("HSA_TOOLS_LIB")
        .env_remove("LD_PRELOAD")
        .env_remove("METRON_PRELOAD")
        .output()
        .unwrap();
    assert_success(&out, "metron run -- hsa_app");
    let csv = read(&dir.join("kernels.csv"));
    let rows: Vec<BTreeMap<String, String>> = {
        let mut lines = csv.lines().filter(|l| !l.starts_with('#'));
        let header = export_support::csv(lines.next().unwrap());
        lines
            .map(|l| header.iter().cloned().zip(export_support::csv(l)).collect())
            .collect()
    };
    let atp = Atp::parse(&read(&dir.join("session.atp")));
    assert!(
        atp.sections.iter().any(|s| s == "hsa API Trace Output"),
        "{:?}",
        atp.sections
    );
    let ks = &atp.kernels["hsa"];
    assert_eq!(ks.len(), rows.len());
    for (k, row) in ks.iter().zip(&rows) {
        assert_eq!(format!("{} [{}]", k.name, k.device_name), row["Method"]);
        assert_eq!(k.start.to_string(), row["StartNs"]);
        assert_eq!(k.end.to_string(), row["EndNs"]);
        assert_eq!(k.queue.to_string(), row["Stream"]);
    }
    // Every HSA API slice of the trace is in its thread's block, with the same times.
    let trace = decode(&dir.join("trace.pftrace"));
    let mut want: BTreeMap<u32, Vec<(String, u64, u64)>> = BTreeMap::new();
    for (s, _) in &trace.slices {
        if let Some(tid) = s.track.strip_prefix("HSA API tid ") {
            want.entry(tid.parse().unwrap()).or_default().push((
                s.name.clone(),
                s.ts,
                s.ts + s.dur,
            ));
        }
    }
    assert!(!want.is_empty());
    let got: BTreeMap<u32, Vec<(String, u64, u64)>> = atp.timestamps["hsa"]
        .iter()
        .map(|(tid, v)| {
            (
                *tid,
                v.iter().map(|e| (e.name.clone(), e.start, e.end)).collect(),
            )
        })
        .collect();
    for v in want.values_mut() {
        v.sort_by_key(|(_, s, e)| (*s, std::cmp::Reverse(*e)));
    }
    assert_eq!(got, want);
    let occ = Occupancy::parse(&read(&dir.join("session.occupancy")));
    assert_eq!(occ.rows.len(), rows.len());
    for (o, row) in occ.rows.iter().zip(&rows) {
        assert_eq!(o["Number of VGPR used"], row["VGPRs"]);
        assert_eq!(o["Number of SGPR used"], row["SGPRs"]);
        assert_eq!(o["Amount of LDS used"], row["LocalMemSize"]);
        assert_eq!(o["Size of wavefront"], "", "AMD: not recorded");
    }
    let log = api_log(&read(&dir.join("api.log")));
    assert_eq!(log.len(), want.values().map(Vec::len).sum::<usize>());
}

/// The generic comparisons of an exported CUDA run with its own `kernels.csv` and trace (for
/// the fake run above and a real GPU's run folder): every API call of the trace in the
/// Timestamp section of its thread and in the API log (name, times, order); every row of
/// `kernels.csv` in the Kernel Timestamp section and the occupancy file; where the run wrote
/// the device limits, the smallest limited-wave count over the max waves is the kernel's
/// occupancy. Returns (API calls, kernels) compared.
fn check_against_run(dir: &Path) -> (usize, usize) {
    let meta: Value = serde_json::from_str(&read(&dir.join("metadata.json"))).unwrap();
    let csv = read(&dir.join("kernels.csv"));
    let kernels: Vec<BTreeMap<String, String>> = {
        let mut lines = csv.lines().filter(|l| !l.starts_with('#'));
        let header = export_support::csv(lines.next().unwrap());
        lines
            .map(|l| header.iter().cloned().zip(export_support::csv(l)).collect())
            .collect()
    };
    let trace = decode(&dir.join("trace.pftrace"));
    let mut api_slices: BTreeMap<(u32, u32), Vec<&nvtx_support::Slice>> = BTreeMap::new();
    for (s, _) in &trace.slices {
        for (prefix, kind) in [("CUDA runtime API tid ", 0), ("CUDA driver API tid ", 1)] {
            if let Some(tid) = s.track.strip_prefix(prefix) {
                api_slices
                    .entry((kind, tid.parse().unwrap()))
                    .or_default()
                    .push(s);
            }
        }
    }
    for v in api_slices.values_mut() {
        v.sort_by_key(|s| (s.ts, std::cmp::Reverse(s.dur)));
    }
    let atp = Atp::parse(&read(&dir.join("session.atp")));
    let empty = BTreeMap::new();
    let stamps = atp.timestamps.get("cuda").unwrap_or(&empty);
    let tids: BTreeSet<u32> = api_slices.keys().map(|(_, tid)| *tid).collect();
    assert_eq!(
        stamps.keys().copied().collect::<BTreeSet<_>>(),
        tids,
        "one Timestamp block per calling thread"
    );
    for (tid, list) in stamps {
        for kind in [0, 1] {
            let got: Vec<(String, u64, u64)> = list
                .iter()
                .filter(|e| e.kind == kind)
                .map(|e| (e.name.clone(), e.start, e.end))
                .collect();
            let want: Vec<(String, u64, u64)> = api_slices
                .get(&(kind, *tid))
                .map(|v| {
                    v.iter()
                        .map(|s| (s.name.clone(), s.ts, s.ts + s.dur))
                        .collect()
                })
                .unwrap_or_default();
            assert_eq!(got, want, "API calls of kind {kind}, thread {tid}");
        }
        assert_eq!(atp.api_trace["cuda"][tid].len(), list.len());
    }
    let no_kernels = Vec::new();
    let ks = atp.kernels.get("cuda").unwrap_or(&no_kernels);
    assert_eq!(ks.len(), kernels.len());
    for (k, row) in ks.iter().zip(&kernels) {
        assert_eq!(format!("{} [{}]", k.name, k.device_name), row["Method"]);
        assert_eq!(k.start.to_string(), row["StartNs"]);
        assert_eq!(k.end.to_string(), row["EndNs"]);
        assert_eq!(k.queue.to_string(), row["Stream"]);
        assert_eq!(k.device_index.to_string(), row["Device"]);
        assert_eq!(k.packet_id.to_string(), row["CorrelationId"]);
    }
    let occ = Occupancy::parse(&read(&dir.join("session.occupancy")));
    assert_eq!(occ.rows.len(), kernels.len());
    for (o, row) in occ.rows.iter().zip(&kernels) {
        assert_eq!(
            format!("{} [{}]", o["Kernel Name"], o["Device Name"]),
            row["Method"]
        );
        assert_eq!(o["Number of VGPR used"], row["VGPRs"]);
        assert_eq!(o["Amount of LDS used"], row["LocalMemSize"]);
        assert_eq!(o["Kernel occupancy"], row["KernelOccupancy"]);
        let device = &meta["gpu"]["devices"][row["Device"].parse::<usize>().unwrap()];
        if device["limits"].is_object() && !row["KernelOccupancy"].is_empty() {
            let max: f64 = o["Max. number of wavefronts per CU"].parse().unwrap();
            assert_eq!(
                max,
                (device["limits"]["threads_per_sm"].as_i64().unwrap() / 32) as f64
            );
            let least = [
                "Nbr VGPR-limited waves",
                "Nbr LDS-limited waves",
                "Nbr of WG-limited waves",
            ]
            .iter()
            .map(|c| o[*c].parse::<f64>().unwrap())
            .fold(f64::MAX, f64::min);
            assert_eq!(
                format!("{:.2}", least / max * 100.0),
                row["KernelOccupancy"],
                "{o:?}"
            );
        }
    }
    let log = api_log(&read(&dir.join("api.log")));
    let mut all: Vec<(u32, &nvtx_support::Slice)> = api_slices
        .iter()
        .flat_map(|((_, tid), v)| v.iter().map(move |s| (*tid, *s)))
        .collect();
    all.sort_by_key(|(_, s)| (s.ts, std::cmp::Reverse(s.dur)));
    assert_eq!(log.len(), all.len());
    for (l, (tid, s)) in log.iter().zip(&all) {
        assert_eq!((l.tid, &l.name), (*tid, &s.name), "{l:?}");
        assert_eq!(l.duration_us, s.dur / 1000, "{l:?}");
    }
    (all.len(), kernels.len())
}

/// A real NVIDIA run (`tests/cuda/export_device_run.sh` makes one with `METRON_EXPORT=all`), named
/// by `METRON_EXPORT_DEVICE_RUN`, checked as the fake run is.
#[test]
fn a_device_run_exports_what_it_recorded() {
    let Some(dir) = std::env::var_os("METRON_EXPORT_DEVICE_RUN") else {
        println!("skipped: METRON_EXPORT_DEVICE_RUN not set (a run folder from the GPU machine)");
        return;
    };
    let dir = PathBuf::from(dir);
    let meta: Value = serde_json::from_str(&read(&dir.join("metadata.json"))).unwrap();
    assert_eq!(meta["gpu"]["enabled"], true, "{}", meta["gpu"]);
    let (calls, kernels) = check_against_run(&dir);
    assert!(
        calls > 0 && kernels > 0,
        "{calls} API calls, {kernels} kernels"
    );
    let limits = meta["gpu"]["devices"][0]["limits"].clone();
    assert!(limits["sm_count"].as_i64().unwrap() > 0, "{limits}");
    println!("device run: {calls} API calls and {kernels} kernels compared; limits {limits}");
}
