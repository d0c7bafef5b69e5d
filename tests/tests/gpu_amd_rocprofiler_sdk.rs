//! Metron as a ROCprofiler-SDK tool, against a test double of the SDK
//! (`rocprofiler_sdk_support/`): a C library with the SDK's functions, signatures and record
//! layouts (transcribed from the SDK's headers independently of Metron's Rust bindings), which
//! finds `rocprofiler_configure` in the loaded libraries, runs the tool's initialize, checks
//! every call against the SDK's rules, and delivers buffered kernel-dispatch and memory-copy
//! records on its own thread. The program (`sdk_app.c`, linked with libmetron) loads a code
//! object and launches kernels and copies inside Metron regions on two threads, some inside HIP
//! runtime API calls (buffered `HIP_RUNTIME_API` records, named through the SDK's operation-name
//! query, sharing their correlation id with the kernel or copy they started); the SDK's clock
//! is `CLOCK_BOOTTIME` moved by 500 s, so only a tool that pairs through
//! `rocprofiler_get_timestamp` puts the times right. No GPU is needed.
//!
//! Checked: the services Metron configured (buffer tracing of kernel dispatches and copies,
//! callback tracing of kernel symbols and of the enqueue), with no contract violation;
//! `kernels.csv` rows with the demangled names, device, grid and work-group sizes, LDS,
//! VGPRs/SGPRs, scratch, `CLOCK_MONOTONIC` times and the region open at each launch; copies in
//! the summary and the trace; `metadata.json`'s `gpu` section (`rocprofiler-sdk`, record and
//! drop counts); the HIP API calls on "HIP API tid N" tracks with their names, exact durations
//! and `CLOCK_MONOTONIC` starts, a flow arrow from each launching call to its kernel or copy,
//! and their counts in `summary.json`; `METRON_GPU_API=none` turning them off while kernels are
//! still traced; and that the HSA path (`OnLoad`) stayed off.

mod c_api_support;
mod nvtx_support;
use c_api_support::*;
use nvtx_support::{slices_on, Slice};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

fn support(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/rocprofiler_sdk_support")
        .join(name)
}

fn cc(args: &[String]) {
    let out = Command::new("cc")
        .args([
            "-std=c11", "-Wall", "-Wextra", "-Werror", "-O1", "-g", "-fPIC",
        ])
        .args(args)
        .output()
        .expect("run the C compiler");
    assert!(
        out.status.success(),
        "cc {args:?} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Builds the SDK double (`librocprofiler-sdk.so`, the SDK's own name) and the program.
fn build(dir: &Path) -> PathBuf {
    let a = artifacts();
    let include = support("");
    cc(&[
        "-shared".into(),
        "-I".into(),
        include.display().to_string(),
        support("rocprofiler_sdk_double.c").display().to_string(),
        "-o".into(),
        dir.join("librocprofiler-sdk.so").display().to_string(),
        "-lpthread".into(),
        "-ldl".into(),
    ]);
    let exe = dir.join("sdk_app");
    cc(&[
        "-I".into(),
        include.display().to_string(),
        "-I".into(),
        a.include.display().to_string(),
        support("sdk_app.c").display().to_string(),
        "-o".into(),
        exe.display().to_string(),
        format!("-L{}", dir.display()),
        format!("-Wl,-rpath,{}", dir.display()),
        "-lrocprofiler-sdk".into(),
        format!("-L{}", a.dir.display()),
        format!("-Wl,-rpath,{}", a.dir.display()),
        "-lmetron".into(),
        "-lpthread".into(),
        "-ldl".into(),
    ]);
    exe
}

/// Runs the program in `dir` with `env`, asserts it succeeded, and returns it with its
/// `key=value` lines.
fn run_app(exe: &Path, dir: &Path, env: &[(&str, &str)]) -> (std::process::Output, Printed) {
    let out = run_in(exe, dir, &[], env);
    assert_success(&out, "sdk_app");
    let p = printed(&out.stdout);
    (out, p)
}

/// The buffer tracing services the tool configured, `kind/operation count`, sorted.
fn buffer_services(p: &Printed) -> Vec<String> {
    let mut services = p["buffer_service"].clone();
    services.sort();
    services
}

type Printed = BTreeMap<String, Vec<String>>;

/// The program's `key=value` lines (a key printed twice keeps every value).
fn printed(stdout: &[u8]) -> BTreeMap<String, Vec<String>> {
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for line in String::from_utf8_lossy(stdout).lines() {
        if let Some((k, v)) = line.split_once('=') {
            out.entry(k.to_string())
                .or_default()
                .push(v.trim().to_string());
        }
    }
    out
}

fn one<'a>(p: &'a BTreeMap<String, Vec<String>>, key: &str) -> &'a str {
    match p.get(key).map(Vec::as_slice) {
        Some([v]) => v,
        other => panic!("{key}: expected one value, got {other:?}"),
    }
}

fn num(p: &BTreeMap<String, Vec<String>>, key: &str) -> u64 {
    one(p, key).parse().unwrap_or_else(|e| panic!("{key}: {e}"))
}

/// The rows of `kernels.csv` as column → value (quotes removed).
fn csv_rows(text: &str) -> Vec<BTreeMap<String, String>> {
    fn fields(line: &str) -> Vec<String> {
        let mut out = vec![String::new()];
        let mut quoted = false;
        let mut chars = line.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '"' if quoted && chars.peek() == Some(&'"') => {
                    chars.next();
                    out.last_mut().unwrap().push('"');
                }
                '"' => quoted = !quoted,
                ',' if !quoted => out.push(String::new()),
                c => out.last_mut().unwrap().push(c),
            }
        }
        out
    }
    let mut lines = text.lines().filter(|l| !l.starts_with('#'));
    let header = fields(lines.next().expect("a header"));
    lines
        .map(|l| header.iter().cloned().zip(fields(l)).collect())
        .collect()
}

struct Expected {
    label: &'static str,
    method: &'static str,
    global: &'static str,
    workgroup: &'static str,
    lds: u64,
    vgprs: u64,
    sgprs: &'static str,
    scratch: u64,
    region: &'static str,
}

const GPU: &str = "AMD Instinct MI210";

#[test]
fn rocprofiler_sdk_tool_traces_kernels_and_copies_with_regions_on_metrons_clock() {
    let dir = temp_dir("rocprofiler-sdk");
    let exe = build(&dir);
    let (out, p) = run_app(
        &exe,
        &dir,
        &[
            ("METRON_TRACE", "true"),
            // The smallest buffer: the loop's records cross the watermark while it runs.
            ("METRON_GPU_AMD_BUFFER_BYTES", "4096"),
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    let run = dir.join("run");

    // The SDK found Metron's rocprofiler_configure and initialized it, and Metron kept to the
    // SDK's rules.
    assert_eq!(num(&p, "tools_found"), 1, "{p:?}");
    assert_eq!(num(&p, "tools_initialized"), 1, "{p:?}\n{stderr}");
    assert_eq!(one(&p, "tool_name"), "metron");
    assert_eq!(num(&p, "violations"), 0, "{stderr}");
    assert_eq!(num(&p, "contexts"), 1);
    assert_eq!(num(&p, "context_started"), 1);
    assert_eq!(num(&p, "buffers"), 1);
    assert_eq!(
        num(&p, "buffer_policy"),
        2,
        "ROCPROFILER_BUFFER_POLICY_LOSSLESS by default"
    );
    assert_eq!(num(&p, "buffer_size"), 4096);
    let watermark = num(&p, "buffer_watermark");
    assert!(watermark > 0 && watermark < 4096, "watermark {watermark}");
    assert_eq!(
        num(&p, "buffer_own_thread"),
        1,
        "a callback thread of Metron's own"
    );
    // ROCPROFILER_BUFFER_TRACING_KERNEL_DISPATCH (11), _MEMORY_COPY (10) and _HIP_RUNTIME_API
    // (5), every operation.
    let buffered = buffer_services(&p);
    assert_eq!(buffered, ["10/0", "11/0", "5/0"]);
    // The HIP API names: every operation the SDK lists, named once at initialize; hipFree (not
    // listed by the double) asked for once, on the buffer thread.
    assert_eq!(num(&p, "operation_iterations"), 1, "{p:?}");
    assert_eq!(num(&p, "operation_name_queries"), 5, "{p:?}");
    assert_eq!(num(&p, "operation_name_queries_delivering"), 1, "{p:?}");
    // ROCPROFILER_CALLBACK_TRACING_CODE_OBJECT (10) for DEVICE_KERNEL_SYMBOL_REGISTER (2), and
    // _KERNEL_DISPATCH (12) for ENQUEUE (1).
    let mut callbacks = p["callback_service"].clone();
    callbacks.sort();
    assert_eq!(callbacks, ["10:2", "12:1"]);
    assert!(
        num(&p, "flush_calls") >= 1,
        "metron_flush flushes the SDK's buffer"
    );

    // The HSA runtime's OnLoad came second and declined: the SDK is loaded (and claimed).
    assert_eq!(num(&p, "onload_found"), 1);
    assert_eq!(
        num(&p, "onload_result"),
        1,
        "OnLoad never fails the runtime"
    );
    assert!(
        stderr.contains("ROCprofiler-SDK is loaded in this process"),
        "OnLoad did not decline: {stderr}"
    );

    // kernels.csv: one row per dispatch with what the code object and the dispatch said.
    let csv = std::fs::read_to_string(run.join("kernels.csv")).expect("kernels.csv");
    let rows = csv_rows(&csv);
    let looped = num(&p, "loop_dispatches");
    assert_eq!(rows.len() as u64, 3 + looped, "{csv}");
    assert_eq!(
        rows.iter().filter(|r| r["Region"] == "loop").count() as u64,
        looped,
        "{csv}"
    );
    let expected = [
        Expected {
            label: "vector_add",
            method: "vector_add(float const*, float const*, float*, int)",
            global: "{4096,2,1}",
            workgroup: "{256,1,1}",
            lds: 1024,
            vgprs: 32,
            sgprs: "24",
            scratch: 16,
            region: "forward",
        },
        Expected {
            label: "reduce_sum",
            method: "reduce_sum",
            global: "{1024,1,1}",
            workgroup: "{1024,1,1}",
            lds: 4096,
            vgprs: 64,
            sgprs: "40",
            scratch: 0,
            region: "reduce",
        },
        Expected {
            label: "matmul",
            method: "void matmul_tile<64>(float const*, float const*, float*)",
            global: "{512,512,1}",
            workgroup: "{64,4,1}",
            lds: 16384 + 2048,
            vgprs: 128,
            sgprs: "48",
            scratch: 32,
            region: "worker_step",
        },
    ];
    let mut streams = BTreeMap::new();
    for e in &expected {
        let corr = one(&p, &format!("{}.correlation", e.label));
        let row = rows
            .iter()
            .find(|r| r["CorrelationId"] == corr)
            .unwrap_or_else(|| panic!("no kernels.csv row with correlation {corr}:\n{csv}"));
        let col = |c: &str| row[c].as_str();
        let int = |c: &str| -> u64 { row[c].parse().unwrap_or_else(|_| panic!("{c}: {row:?}")) };
        assert_eq!(col("Method"), format!("{} [{GPU}]", e.method), "{row:?}");
        assert_eq!(col("GlobalWorkSize"), e.global, "{row:?}");
        assert_eq!(col("WorkGroupSize"), e.workgroup, "{row:?}");
        assert_eq!(int("LocalMemSize"), e.lds, "{row:?}");
        assert_eq!(int("VGPRs"), e.vgprs, "{row:?}");
        assert_eq!(col("SGPRs"), e.sgprs, "{row:?}");
        assert_eq!(int("ScratchRegs"), e.scratch, "{row:?}");
        assert_eq!(
            col("Region"),
            e.region,
            "the region open at launch: {row:?}"
        );
        assert_eq!(int("Device"), 0, "{row:?}");
        // Times: the SDK's clock converted to CLOCK_MONOTONIC (within the two pairings'
        // uncertainty), the duration exact.
        let start = int("StartNs");
        let want = num(&p, &format!("{}.start_monotonic", e.label));
        assert!(
            start.abs_diff(want) <= 50_000,
            "{}: StartNs {start}, expected {want} (CLOCK_MONOTONIC): off by {} ns",
            e.label,
            start as i128 - want as i128
        );
        assert_eq!(
            int("EndNs") - start,
            num(&p, &format!("{}.duration", e.label)),
            "{row:?}"
        );
        streams.insert(e.label, int("Stream"));
    }
    assert_eq!(
        streams["vector_add"], streams["matmul"],
        "same HSA queue: {streams:?}"
    );
    assert_ne!(streams["vector_add"], streams["reduce_sum"], "{streams:?}");

    // The copies: in the summary (bytes) and on the GPU's copy track of the trace.
    let summary = read_json(&run, "summary.json");
    let copies: BTreeMap<String, (u64, u64)> = summary["gpu"]["copies"]
        .as_array()
        .expect("summary gpu.copies")
        .iter()
        .map(|c| {
            (
                c["name"].as_str().unwrap().to_string(),
                (c["count"].as_u64().unwrap(), c["bytes"].as_u64().unwrap()),
            )
        })
        .collect();
    assert_eq!(
        copies,
        BTreeMap::from([
            ("Memcpy DtoH".to_string(), (1, 4096)),
            ("Memcpy HtoD".to_string(), (1, 1 << 20)),
        ])
    );
    let regions: Vec<&str> = summary["gpu"]["kernels_by_region"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["region"].as_str().unwrap())
        .collect();
    assert_eq!(regions, ["forward", "loop", "reduce", "worker_step"]);

    let trace = nvtx_support::decoded_trace(&run.join("trace.pftrace"));
    let gpu_slices: Vec<(String, String, u64)> = slices_on(&trace, "GPU ")
        .into_iter()
        .map(|s| (s.track, s.name, s.dur))
        .collect();
    let copy_track = format!("GPU 0 {GPU} copies");
    for (name, dur) in [("Memcpy HtoD", 150_000), ("Memcpy DtoH", 50_000)] {
        assert!(
            gpu_slices.contains(&(copy_track.clone(), name.to_string(), dur)),
            "{name} on {copy_track}: {gpu_slices:?}"
        );
    }
    let queue = |n: u64| format!("GPU 0 {GPU} queue {n}");
    assert!(
        gpu_slices.contains(&(
            queue(streams["reduce_sum"]),
            "reduce_sum".to_string(),
            125_000
        )),
        "{gpu_slices:?}"
    );

    // The HIP runtime API calls: on the calling thread's "HIP API" track, named by the SDK, with
    // the double's exact durations and starts on CLOCK_MONOTONIC.
    let hip_slices = slices_on(&trace, "HIP API tid ");
    let main_track = format!("HIP API tid {}", num(&p, "main_tid"));
    let worker_track = format!("HIP API tid {}", num(&p, "worker_tid"));
    assert_ne!(main_track, worker_track);
    let calls = [
        ("malloc", "hipMalloc", &main_track),
        ("memcpy", "hipMemcpy", &main_track),
        ("launch_vector_add", "hipLaunchKernel", &main_track),
        ("synchronize", "hipDeviceSynchronize", &main_track),
        ("free", "hipFree", &main_track),
        ("launch_matmul", "hipLaunchKernel", &worker_track),
    ];
    assert_eq!(hip_slices.len(), calls.len(), "{hip_slices:?}");
    let mut call_slices = BTreeMap::new();
    for (label, name, track) in calls {
        assert_eq!(
            one(&p, &format!("hip.{label}.tid")),
            track.trim_start_matches("HIP API tid "),
            "{label}"
        );
        let want_start = num(&p, &format!("hip.{label}.start_monotonic"));
        let s = hip_slices
            .iter()
            .find(|s| &s.track == track && s.name == name && s.ts.abs_diff(want_start) <= 50_000)
            .unwrap_or_else(|| {
                panic!("no {name} on {track} near {want_start} (CLOCK_MONOTONIC): {hip_slices:?}")
            });
        assert_eq!(
            s.dur,
            num(&p, &format!("hip.{label}.duration")),
            "{label}: {s:?}"
        );
        call_slices.insert(label, s);
    }
    // Flow arrows: from the launching call to its kernel, from hipMemcpy to its copy (the
    // internal correlation id the SDK gave both).
    assert_eq!(
        one(&p, "hip.launch_vector_add.correlation"),
        one(&p, "vector_add.correlation")
    );
    assert_eq!(
        one(&p, "hip.memcpy.correlation"),
        one(&p, "upload.correlation")
    );
    let flows = trace_flows(&trace);
    let flow_of = |s: &Slice, terminating: bool| -> Vec<u64> {
        flows
            .iter()
            .filter(|f| f.track == s.track_uuid && f.ts == s.ts)
            .flat_map(|f| {
                if terminating {
                    f.terminating.clone()
                } else {
                    f.flows.clone()
                }
            })
            .collect()
    };
    let all_gpu = slices_on(&trace, "GPU ");
    let device_slice = |name: &str, track: &str| -> &Slice {
        all_gpu
            .iter()
            .find(|s| s.name == name && s.track == track)
            .unwrap_or_else(|| panic!("{name} on {track}: {all_gpu:?}"))
    };
    for (call, target, track) in [
        (
            "launch_vector_add",
            device_slice(
                "vector_add(float const*, float const*, float*, int)",
                &queue(streams["vector_add"]),
            ),
            "vector_add",
        ),
        (
            "launch_matmul",
            device_slice(
                "void matmul_tile<64>(float const*, float const*, float*)",
                &queue(streams["matmul"]),
            ),
            "matmul",
        ),
        ("memcpy", device_slice("Memcpy HtoD", &copy_track), "upload"),
    ] {
        let out = flow_of(call_slices[call], false);
        assert_eq!(out.len(), 1, "{call}: one flow out: {flows:?}");
        assert_eq!(
            flow_of(target, true),
            out,
            "{call} → {track}: the flow ends on it: {flows:?}"
        );
    }
    for call in ["malloc", "synchronize", "free"] {
        assert!(
            flow_of(call_slices[call], false).is_empty(),
            "{call} started no GPU work"
        );
    }
    // summary.json: the HIP calls by name, with counts.
    let apis: BTreeMap<String, u64> = summary["gpu"]["api"]
        .as_array()
        .expect("summary gpu.api")
        .iter()
        .map(|a| {
            (
                a["name"].as_str().unwrap().to_string(),
                a["count"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        apis,
        BTreeMap::from([
            ("hipDeviceSynchronize".to_string(), 1),
            ("hipFree".to_string(), 1),
            ("hipLaunchKernel".to_string(), 2),
            ("hipMalloc".to_string(), 1),
            ("hipMemcpy".to_string(), 1),
        ])
    );

    // metadata.json: the SDK backend, its counts and drops; the HSA path off.
    let meta = read_json(&run, "metadata.json");
    let gpu = &meta["gpu"];
    assert_eq!(gpu["backend"], "rocprofiler-sdk", "{gpu}");
    assert_eq!(gpu["enabled"], true, "{gpu}");
    assert_eq!(gpu["sdk_version"], "1.2.3", "{gpu}");
    assert_eq!(gpu["records"]["kernels"], 3 + looped, "{gpu}");
    assert_eq!(gpu["records"]["copies"], 2, "{gpu}");
    assert_eq!(gpu["records"]["hip_api"], 6, "{gpu}");
    assert_eq!(gpu["records"]["api_unknown_layout"], 0, "{gpu}");
    assert_eq!(gpu["hip_api"], true, "{gpu}");
    assert_eq!(gpu["dropped"], 5, "the SDK's drop_count: {gpu}");
    assert_eq!(gpu["launches_seen"], 3 + looped, "{gpu}");
    assert_eq!(gpu["kernels_known"], 3, "{gpu}");
    assert_eq!(gpu["kernels_unknown"], 0, "{gpu}");
    assert_eq!(gpu["unrecognized_callback_records"], 0, "{gpu}");
    assert_eq!(gpu["buffer"]["policy"], "lossless", "{gpu}");
    assert_eq!(gpu["not_traced"], Value::Array(vec![]), "{gpu}");
    assert_eq!(gpu["hsa_interception"], false, "{gpu}");
    assert_eq!(gpu["counters"], Value::Null, "{gpu}");
    assert_eq!(
        gpu["devices"],
        serde_json::json!([{"index": 0, "name": GPU}]),
        "{gpu}"
    );
    assert_eq!(
        meta["outputs"]["kernels_csv"]["rows"],
        3 + looped,
        "{}",
        meta["outputs"]
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// The flow ids of one slice, as `validate_trace.py --slices` decodes them (flow ids of the
/// begin and end events, with the sequence's default track and incremental clock resolved).
#[derive(Debug)]
struct Flow {
    track: u64,
    ts: u64,
    flows: Vec<u64>,
    terminating: Vec<u64>,
}

/// Every slice of the decoded `trace` that carries flow ids.
fn trace_flows(trace: &Value) -> Vec<Flow> {
    let ids = |v: &Value| -> Vec<u64> {
        v.as_array()
            .map(|a| a.iter().filter_map(Value::as_u64).collect())
            .unwrap_or_default()
    };
    trace["slices"]
        .as_array()
        .expect("the validator lists slices")
        .iter()
        .filter(|s| s.get("flows_out").is_some() || s.get("flows_in").is_some())
        .map(|s| Flow {
            track: s["track"].as_u64().unwrap(),
            ts: s["ts"].as_u64().unwrap(),
            flows: ids(&s["flows_out"]),
            terminating: ids(&s["flows_in"]),
        })
        .collect()
}

/// `METRON_GPU_API=none`: no HIP API tracing (the service is not configured, no records, no
/// tracks), while kernels and copies are still traced.
#[test]
fn rocprofiler_sdk_hip_api_off_with_metron_gpu_api_none() {
    let dir = temp_dir("rocprofiler-sdk-api-none");
    let exe = build(&dir);
    let (out, p) = run_app(
        &exe,
        &dir,
        &[("METRON_TRACE", "true"), ("METRON_GPU_API", "none")],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    let run = dir.join("run");
    assert_eq!(num(&p, "tools_initialized"), 1, "{p:?}\n{stderr}");
    assert_eq!(num(&p, "violations"), 0, "{stderr}");
    let buffered = buffer_services(&p);
    assert_eq!(buffered, ["10/0", "11/0"], "no HIP_RUNTIME_API service");
    assert_eq!(num(&p, "operation_name_queries"), 0, "{p:?}");

    let looped = num(&p, "loop_dispatches");
    let csv = std::fs::read_to_string(run.join("kernels.csv")).expect("kernels.csv");
    assert_eq!(csv_rows(&csv).len() as u64, 3 + looped, "{csv}");
    let meta = read_json(&run, "metadata.json");
    let gpu = &meta["gpu"];
    assert_eq!(gpu["records"]["kernels"], 3 + looped, "{gpu}");
    assert_eq!(gpu["records"]["copies"], 2, "{gpu}");
    assert_eq!(gpu["records"]["hip_api"], 0, "{gpu}");
    assert_eq!(gpu["hip_api"], false, "{gpu}");
    assert_eq!(gpu["not_traced"], Value::Array(vec![]), "{gpu}");

    let summary = read_json(&run, "summary.json");
    let apis = summary["gpu"]["api"].as_array().map_or(0, Vec::len);
    assert_eq!(apis, 0, "{}", summary["gpu"]);
    let trace = nvtx_support::decoded_trace(&run.join("trace.pftrace"));
    assert!(slices_on(&trace, "HIP API").is_empty(), "no HIP API tracks");
    assert!(
        !slices_on(&trace, &format!("GPU 0 {GPU} queue")).is_empty(),
        "kernels are still traced"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// `METRON_GPU_METRICS` through the dispatch counting service: one counter configuration for the
/// GPU, chosen in the counting callback of each dispatch; each dispatch's values (summed over the
/// counter's instances, as the buffer's counter records give them) in its `kernels.csv` columns.
#[test]
fn rocprofiler_sdk_counters_reach_kernels_csv() {
    let dir = temp_dir("rocprofiler-sdk-counters");
    let exe = build(&dir);
    let (out, p) = run_app(
        &exe,
        &dir,
        &[
            (
                "METRON_GPU_METRICS",
                "SQ_INSTS_VALU, SQ_WAVES,NOT_A_COUNTER,ipc=SQ_INSTS_VALU/2",
            ),
            ("METRON_GPU_AMD_BUFFER_BYTES", "4096"),
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    let run = dir.join("run");
    assert_eq!(num(&p, "violations"), 0, "{stderr}");
    assert_eq!(num(&p, "counting_services"), 1, "{p:?}");
    assert_eq!(
        num(&p, "counter_configs"),
        1,
        "one configuration for the one GPU"
    );

    let csv = std::fs::read_to_string(run.join("kernels.csv")).expect("kernels.csv");
    let header = csv.lines().find(|l| !l.starts_with('#')).unwrap();
    assert!(
        header.ends_with(
            r#",EndNs,GraphId,GraphNodeId,"SQ_INSTS_VALU","SQ_WAVES","NOT_A_COUNTER","ipc",CounterNote"#
        ),
        "the metrics in METRON_GPU_METRICS's order, then the derived one, then the note: {header}"
    );
    let rows = csv_rows(&csv);
    assert_eq!(rows.len() as u64, 3 + num(&p, "loop_dispatches"), "{csv}");
    // Every dispatch was counted; its values are the double's sums for its correlation id.
    let mut checked = 0;
    for row in &rows {
        let corr = &row["CorrelationId"];
        for metric in ["SQ_INSTS_VALU", "SQ_WAVES"] {
            let want = one(&p, &format!("counter.{corr}.{metric}"));
            assert_eq!(row[metric], want, "{metric} of correlation {corr}: {row:?}");
            checked += 1;
        }
        // The derived metric on the dispatch's own values; the unknown counter reads NaN.
        let valu: f64 = row["SQ_INSTS_VALU"].parse().unwrap();
        assert_eq!(row["ipc"].parse::<f64>().unwrap(), valu / 2.0, "{row:?}");
        assert_eq!(row["NOT_A_COUNTER"], "NaN", "{row:?}");
    }
    assert_eq!(checked, 2 * rows.len());

    let meta = read_json(&run, "metadata.json");
    let gpu = &meta["gpu"];
    assert_eq!(
        gpu["counters"]["metrics"],
        serde_json::json!(["SQ_INSTS_VALU", "SQ_WAVES", "NOT_A_COUNTER", "ipc"]),
        "{gpu}"
    );
    // Two counters, two instances each, per dispatch.
    assert_eq!(
        gpu["counters"]["records"].as_u64(),
        Some(4 * rows.len() as u64),
        "{gpu}"
    );
    let not_traced: Vec<&str> = gpu["not_traced"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(
        not_traced,
        ["NOT_A_COUNTER: not a counter of gfx90a"],
        "{not_traced:?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// `METRON_GPU_AMD_HSA_API` on the SDK path: the named HSA calls through the SDK's buffer
/// tracing of `HSA_CORE_API` (1) and `HSA_AMD_EXT_API` (2), restricted to their operations
/// (found by name in the SDK's own list); on their thread's `HSA API` track with the double's
/// exact durations. A name this SDK does not list is reported; `all` takes every operation.
#[test]
fn rocprofiler_sdk_traces_the_hsa_calls_named() {
    let dir = temp_dir("rocprofiler-sdk-hsa-api");
    let exe = build(&dir);
    let (out, p) = run_app(
        &exe,
        &dir,
        &[
            ("METRON_TRACE", "true"),
            (
                "METRON_GPU_AMD_HSA_API",
                "hsa_system_get_info,hsa_signal_wait_scacquire,hsa_amd_memory_pool_allocate,\
                 hsa_queue_create",
            ),
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(num(&p, "violations"), 0, "{stderr}");
    let buffered = buffer_services(&p);
    assert_eq!(
        buffered,
        ["1/2", "10/0", "11/0", "2/1", "5/0"],
        "two core and one AMD operation"
    );
    assert!(
        stderr.contains(
            "`hsa_queue_create` is not among the HSA operations this ROCprofiler-SDK traces"
        ),
        "{stderr}"
    );
    let run = dir.join("run");
    let trace = nvtx_support::decoded_trace(&run.join("trace.pftrace"));
    let hsa = slices_on(&trace, "HSA API tid ");
    let main_track = format!("HSA API tid {}", num(&p, "main_tid"));
    let calls = [
        ("system_get_info", "hsa_system_get_info"),
        ("signal_wait", "hsa_signal_wait_scacquire"),
        ("pool_allocate", "hsa_amd_memory_pool_allocate"),
    ];
    assert_eq!(hsa.len(), calls.len(), "{hsa:?}");
    for (label, name) in calls {
        let want_start = num(&p, &format!("hsa.{label}.start_monotonic"));
        let s = hsa
            .iter()
            .find(|s| s.name == name)
            .unwrap_or_else(|| panic!("no {name}: {hsa:?}"));
        assert_eq!(s.track, main_track);
        assert!(
            s.ts.abs_diff(want_start) <= 50_000,
            "{name} at {} vs {want_start}",
            s.ts
        );
        assert_eq!(s.dur, num(&p, &format!("hsa.{label}.duration")), "{name}");
    }
    let gpu = &read_json(&run, "metadata.json")["gpu"];
    assert_eq!(gpu["records"]["hsa_api"], 3, "{gpu}");
    assert_eq!(
        gpu["hsa_api"]["operations_traced"],
        serde_json::json!({"core": 2, "amd": 1}),
        "{gpu}"
    );
    assert_eq!(
        gpu["hsa_api"]["problems"].as_array().map(Vec::len),
        Some(1),
        "{gpu}"
    );
    // HIP API calls are traced as before, on their own tracks.
    assert_eq!(slices_on(&trace, "HIP API tid ").len(), 6);

    let all = temp_dir("rocprofiler-sdk-hsa-api-all");
    let (_, p) = run_app(
        &exe,
        &all,
        &[("METRON_TRACE", "true"), ("METRON_GPU_AMD_HSA_API", "all")],
    );
    let buffered = buffer_services(&p);
    assert_eq!(
        buffered,
        ["1/0", "10/0", "11/0", "2/0", "5/0"],
        "every operation"
    );
    let run = all.join("run");
    let trace = nvtx_support::decoded_trace(&run.join("trace.pftrace"));
    let mut names: Vec<String> = slices_on(&trace, "HSA API tid ")
        .into_iter()
        .map(|s| s.name)
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "hsa_agent_get_info",
            "hsa_amd_agents_allow_access",
            "hsa_amd_memory_pool_allocate",
            "hsa_init",
            "hsa_signal_wait_scacquire",
            "hsa_system_get_info",
        ]
    );
    let gpu = &read_json(&run, "metadata.json")["gpu"];
    assert_eq!(
        gpu["hsa_api"]["operations_traced"],
        serde_json::json!({"core": null, "amd": null}),
        "{gpu}"
    );
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_dir_all(&all);
}
