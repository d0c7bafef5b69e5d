//! The AMD backend against a test double of the HSA runtime (`amd_support/`): a C++ program
//! built with the real ROCm headers plays ROCr (it loads `HSA_TOOLS_LIB` and calls `OnLoad`
//! with an `HsaApiTableContainer` of its own functions, runs intercept handlers, executes
//! packets on a "GPU" thread with known durations, completes signals, runs async handlers on a
//! thread of its own) and an application (three kernels on two GPUs and two threads inside
//! Metron regions, a barrier packet, an async copy), all under `metron run`. The records that
//! come out are checked field by field: names, sizes, registers from the kernel descriptors,
//! times through both clock conversions, regions, tracks, API calls, and that the
//! application's own completion signals still complete.
//!
//! Skips (with the reason) only when the ROCm headers are missing; `scripts/install-deps.sh`
//! installs Debian's `libhsa-runtime-dev`.

mod c_api_support;
mod nvtx_support;
use c_api_support::*;
use nvtx_support::{decoded_trace, printed, slices};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn hsa_include() -> Option<PathBuf> {
    ["/opt/rocm/include/hsa", "/usr/include/hsa"]
        .iter()
        .map(PathBuf::from)
        .find(|d| d.join("hsa_api_trace.h").is_file())
}

fn build(dir: &Path) -> Option<PathBuf> {
    let Some(hsa) = hsa_include() else {
        println!(
            "SKIP: no hsa_api_trace.h (scripts/install-deps.sh installs Debian's \
             libhsa-runtime-dev)"
        );
        return None;
    };
    let a = artifacts();
    let support = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/amd_support");
    let exe = dir.join("hsa_app");
    let out = Command::new("c++")
        .args(["-std=c++17", "-Wall", "-Wextra", "-Werror", "-O1", "-g"])
        .arg("-I")
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
        .expect("run the C++ compiler");
    assert!(
        out.status.success(),
        "compiling the HSA double failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(exe)
}

/// `metron run -o dir/run [env] -- hsa_app mode`.
fn metron_run(exe: &Path, dir: &Path, mode: &str, env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(artifacts().metron());
    cmd.arg("run")
        .arg("-o")
        .arg(dir.join("run"))
        .arg("--trace")
        .arg("true")
        .arg("--")
        .arg(exe)
        .arg(mode)
        .env_remove("HSA_TOOLS_LIB")
        .env_remove("LD_PRELOAD")
        .env_remove("METRON_PRELOAD");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("run metron");
    assert_success(&out, "metron run -- hsa_app");
    out
}

/// kernels.csv as header → value maps, in file order.
fn csv_rows(path: &Path) -> Vec<std::collections::BTreeMap<String, String>> {
    let text = std::fs::read_to_string(path).expect("kernels.csv");
    let mut lines = text.lines().filter(|l| !l.starts_with('#'));
    let header: Vec<String> = split_csv(lines.next().expect("a header"));
    lines
        .map(|l| header.iter().cloned().zip(split_csv(l)).collect())
        .collect()
}

fn split_csv(line: &str) -> Vec<String> {
    let mut out = vec![String::new()];
    let mut quoted = false;
    for c in line.chars() {
        match c {
            '"' => quoted = !quoted,
            ',' if !quoted => out.push(String::new()),
            _ => out.last_mut().unwrap().push(c),
        }
    }
    out
}

#[test]
fn dispatches_copies_and_api_calls_through_the_hsa_tools_interface() {
    let dir = temp_dir("amd-hsa");
    let Some(exe) = build(&dir) else { return };
    let out = metron_run(&exe, &dir, "normal", &[]);
    let printed = printed(&out);
    assert_eq!(
        printed["tools_loaded"], 1,
        "the runtime loaded libmetron.so from HSA_TOOLS_LIB"
    );
    assert_eq!(printed["copy_ok"], 1);
    assert_eq!(
        printed["done"], 1,
        "every completion signal of the application completed"
    );
    let run = dir.join("run");

    // kernels.csv: one row per dispatch, in start order, with what the packet and the kernel
    // descriptor say. The double's descriptors (gfx90a): vector_add 4 VGPR blocks, 2 SGPR
    // blocks; matmul 8 and 3, 8 KiB static LDS; reduce_sum 2 and 1, 1 KiB LDS, 16 B scratch.
    let rows = csv_rows(&run.join("kernels.csv"));
    let got: Vec<Vec<&str>> = rows
        .iter()
        .map(|r| {
            [
                "Method",
                "GlobalWorkSize",
                "WorkGroupSize",
                "LocalMemSize",
                "VGPRs",
                "SGPRs",
                "ScratchRegs",
                "Region",
                "Device",
                "Stream",
            ]
            .iter()
            .map(|k| r[*k].as_str())
            .collect()
        })
        .collect();
    let vector =
        "vector_add(float const*, float const*, float*, int) [AMD Instinct MI210 (double)]";
    let matmul =
        "matmul_tiled(float const*, float const*, float*, int) [AMD Instinct MI210 (double)]";
    let expected: Vec<Vec<&str>> = vec![
        vec![
            vector,
            "{1048576,1,1}",
            "{256,1,1}",
            "0",
            "32",
            "32",
            "0",
            "vector_step",
            "0",
            "7",
        ],
        vec![
            matmul,
            "{512,512,1}",
            "{16,16,1}",
            "9216",
            "64",
            "48",
            "0",
            "matmul_step",
            "0",
            "7",
        ],
        vec![
            matmul,
            "{256,256,1}",
            "{16,16,1}",
            "8192",
            "64",
            "48",
            "0",
            "matmul_step",
            "0",
            "7",
        ],
        vec![
            "reduce_sum [AMD Instinct MI210 (double) #2]",
            "{65536,1,1}",
            "{1024,1,1}",
            "1024",
            "16",
            "16",
            "16",
            "reduce_step",
            "1",
            "8",
        ],
    ];
    assert_eq!(got, expected);

    // Times: agent ticks → system domain (2 × tick + offset) → CLOCK_MONOTONIC (100 MHz):
    // each kernel lasts exactly its tick count × 20 ns, and vector_add ran between the
    // application's clock reads around its submit and wait.
    let ns =
        |r: &std::collections::BTreeMap<String, String>, k: &str| -> u64 { r[k].parse().unwrap() };
    let durations: Vec<u64> = rows
        .iter()
        .map(|r| ns(r, "EndNs") - ns(r, "StartNs"))
        .collect();
    assert_eq!(durations, [20_000, 60_000, 60_000, 10_000]);
    let (before, after) = (
        printed["vector_before"] as u64,
        printed["vector_after"] as u64,
    );
    let (start, end) = (ns(&rows[0], "StartNs"), ns(&rows[0], "EndNs"));
    assert!(
        before <= start + 50 && end <= after + 50,
        "vector_add [{start}, {end}] not inside the application's [{before}, {after}]"
    );
    let main_tid = &rows[0]["ThreadID"];
    assert_eq!(&rows[1]["ThreadID"], main_tid);
    assert_ne!(
        &rows[3]["ThreadID"], main_tid,
        "reduce_sum was launched by the worker"
    );

    // The trace: a track per queue, one for copies, one per thread for HSA calls.
    let trace = decoded_trace(&run.join("trace.pftrace"));
    let all = slices(&trace);
    let on = |track: &str| -> Vec<String> {
        all.iter()
            .filter(|s| s.track == track)
            .map(|s| s.name.clone())
            .collect()
    };
    assert_eq!(
        on("GPU 0 AMD Instinct MI210 (double) queue 7").len(),
        3,
        "{:?}",
        all.iter().map(|s| &s.track).collect::<Vec<_>>()
    );
    assert_eq!(
        on("GPU 1 AMD Instinct MI210 (double) #2 queue 8"),
        ["reduce_sum"]
    );
    assert_eq!(
        on("GPU 0 AMD Instinct MI210 (double) copies"),
        ["Memcpy HtoD"]
    );
    let api: Vec<String> = all
        .iter()
        .filter(|s| s.track.starts_with("HSA API tid"))
        .map(|s| s.name.clone())
        .collect();
    for call in [
        "hsa_executable_freeze",
        "hsa_queue_create",
        "hsa_queue_destroy",
        "hsa_amd_memory_async_copy",
        "hsa_memory_copy",
    ] {
        assert!(api.iter().any(|a| a == call), "{call} not in {api:?}");
    }

    // The summary's GPU section and metadata.json.
    let summary = read_json(&run, "summary.json");
    let copies = &summary["gpu"]["copies"][0];
    assert_eq!(
        (copies["name"].as_str(), copies["bytes"].as_u64()),
        (Some("Memcpy HtoD"), Some(4096))
    );
    assert_eq!(
        copies["total_ns"].as_f64(),
        Some(6000.0),
        "600 system ticks of 10 ns"
    );
    let gpu = &read_json(&run, "metadata.json")["gpu"];
    assert_eq!(gpu["backend"], "hsa");
    assert_eq!(gpu["enabled"], true, "{gpu}");
    assert_eq!(gpu["queues_intercepted"], 2);
    assert_eq!(
        gpu["dispatches_seen"], 4,
        "the barrier packet is not a dispatch"
    );
    assert_eq!(gpu["records"]["kernels"], 4);
    assert_eq!(gpu["records"]["copies"], 1);
    assert_eq!(
        gpu["kernels_known"], 3,
        "the variable symbol is not a kernel"
    );
    assert_eq!(gpu["in_flight"], 0);
    assert_eq!(gpu["dropped_queue_full"], 0);
    assert_eq!(gpu["untimed_no_free_signal"], 0);
    assert_eq!(
        gpu["architectures"],
        serde_json::json!(["gfx90a", "gfx90a"])
    );
}

#[test]
fn a_small_signal_pool_times_what_it_can_and_counts_the_rest() {
    let dir = temp_dir("amd-hsa-burst");
    let Some(exe) = build(&dir) else { return };
    let out = metron_run(&exe, &dir, "burst", &[("METRON_GPU_AMD_SIGNALS", "4")]);
    assert_eq!(
        printed(&out)["burst_done"],
        1,
        "all 50 completions reached the application"
    );
    let run = dir.join("run");
    let rows = csv_rows(&run.join("kernels.csv"));
    assert_eq!(rows.len(), 4, "one timed dispatch per signal of the pool");
    assert!(rows.iter().all(|r| r["Region"] == "burst"));
    let gpu = &read_json(&run, "metadata.json")["gpu"];
    assert_eq!(gpu["completion_signals"], 4);
    assert_eq!(gpu["dispatches_seen"], 50);
    assert_eq!(gpu["untimed_no_free_signal"], 46, "{gpu}");
}

#[test]
fn metron_gpu_off_leaves_the_runtime_untouched() {
    let dir = temp_dir("amd-hsa-off");
    let Some(exe) = build(&dir) else { return };
    let out = metron_run(&exe, &dir, "normal", &[("METRON_GPU", "false")]);
    assert_eq!(printed(&out)["done"], 1);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("AMD GPU tracing is off: METRON_GPU is off"),
        "{stderr}"
    );
    let run = dir.join("run");
    assert!(!run.join("kernels.csv").exists());
    let meta = read_json(&run, "metadata.json");
    assert_eq!(meta["gpu_amd"]["enabled"], false);
    assert_eq!(meta["gpu_amd"]["reason"], "METRON_GPU is off");
}

/// The real ROCm runtime (Debian's ROCm 5.2 `libhsa-runtime64`, when installed) on a machine
/// without an AMD GPU: `hsa_init` fails before loading tools, the program carries on, and
/// `metadata.json` says why nothing was traced.
#[test]
fn the_real_runtime_without_a_gpu_is_reported_not_fatal() {
    let Some(hsa) = hsa_include() else {
        println!("SKIP: no HSA headers");
        return;
    };
    let dir = temp_dir("amd-real-runtime");
    let src = dir.join("init.c");
    std::fs::write(
        &src,
        "#include <hsa.h>\n#include <stdio.h>\nint main(void){hsa_status_t s = hsa_init();\
         printf(\"hsa_init=%d\\n\", (int)s); return 0;}\n",
    )
    .unwrap();
    let exe = dir.join("init");
    let built = Command::new("cc")
        .arg("-I")
        .arg(&hsa)
        .arg(&src)
        .arg("-o")
        .arg(&exe)
        .arg("-lhsa-runtime64")
        .output()
        .expect("run cc");
    if !built.status.success() {
        println!(
            "SKIP: cannot link libhsa-runtime64: {}",
            String::from_utf8_lossy(&built.stderr)
        );
        return;
    }
    let out = metron_run(&exe, &dir, "", &[]);
    let meta: Value = read_json(&dir.join("run"), "metadata.json");
    let amd = &meta["gpu_amd"];
    assert_eq!(amd["enabled"], false, "{amd}");
    let reason = amd["reason"].as_str().unwrap();
    if Path::new("/dev/kfd").exists() {
        println!("note: /dev/kfd exists here; reason: {reason}");
    } else {
        assert!(reason.contains("no /dev/kfd"), "{reason}");
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("hsa_init=4104"),
            "hsa_init fails with HSA_STATUS_ERROR_OUT_OF_RESOURCES without a GPU"
        );
    }
}

/// Counters per dispatch through AQLprofile: the double counts what a start..stop window saw
/// (waves from the grid, VALU per wave per kernel, busy ticks) and returns each value split in
/// two samples, which Metron must add; derived metrics from the counter file and inline.
#[test]
fn aqlprofile_counters_per_dispatch_with_derived_metrics() {
    let dir = temp_dir("amd-hsa-counters");
    let Some(exe) = build(&dir) else { return };
    let metrics =
        "SQ_WAVES,SQ_INSTS_VALU,GRBM_GUI_ACTIVE,VALU_PER_WAVE,busy=100*GRBM_GUI_ACTIVE/GRBM_COUNT";
    let out = metron_run(&exe, &dir, "normal", &[("METRON_GPU_METRICS", metrics)]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("metron: AMD GPU counters: SQ_WAVES, SQ_INSTS_VALU, GRBM_GUI_ACTIVE, GRBM_COUNT, VALU_PER_WAVE, busy on gfx90a"),
        "{stderr}"
    );
    assert!(
        printed(&out)["profile_buffers_shared"] > 0,
        "profile buffers made GPU-accessible"
    );
    let run = dir.join("run");
    let rows = csv_rows(&run.join("kernels.csv"));
    let got: Vec<Vec<&str>> = rows
        .iter()
        .map(|r| {
            [
                "SQ_WAVES",
                "SQ_INSTS_VALU",
                "GRBM_GUI_ACTIVE",
                "GRBM_COUNT",
                "VALU_PER_WAVE",
            ]
            .iter()
            .map(|k| r[*k].as_str())
            .collect()
        })
        .collect();
    // vector_add: 4096 groups of 256 = 4 waves each; matmul: 1024 and 256 groups of 16x16;
    // reduce_sum: 64 groups of 1024 = 16 waves each. VALU per wave 12 / 40 / 20; busy ticks =
    // the kernel's duration in agent ticks, GRBM_COUNT 100 more.
    assert_eq!(
        got,
        vec![
            vec!["16384", "196608", "1000", "1100", "12"],
            vec!["4096", "163840", "3000", "3100", "40"],
            vec!["1024", "40960", "3000", "3100", "40"],
            vec!["1024", "20480", "500", "600", "20"],
        ]
    );
    let busy: f64 = rows[0]["busy"].parse().unwrap();
    assert!((busy - 100.0 * 1000.0 / 1100.0).abs() < 1e-9, "{busy}");
    // Counting does not change the times.
    let durations: Vec<u64> = rows
        .iter()
        .map(|r| r["EndNs"].parse::<u64>().unwrap() - r["StartNs"].parse::<u64>().unwrap())
        .collect();
    assert_eq!(durations, [20_000, 60_000, 60_000, 10_000]);
    let counters = &read_json(&run, "metadata.json")["gpu"]["counters"];
    assert_eq!(counters["kernels_counted"], 4, "{counters}");
    assert_eq!(counters["error"], Value::Null);
    // Per region in the summary: sums of each counter over the region's kernels.
    let summary = read_json(&run, "summary.json");
    let by_region = summary["gpu"]["gpu_counters"]["by_region"]
        .as_array()
        .unwrap();
    let matmul = by_region
        .iter()
        .find(|r| r["region"] == "matmul_step")
        .expect("matmul_step");
    assert_eq!(matmul["kernels"], 2);
    assert_eq!(matmul["sums"]["SQ_WAVES"], 5120.0, "4096 + 1024");
    assert_eq!(
        matmul["sums"]["VALU_PER_WAVE"], 40.0,
        "a ratio of the region's totals"
    );
}

/// Bad counter requests are refused with what is accepted, and tracing carries on uncounted.
#[test]
fn unknown_or_refused_counters_turn_counting_off_with_the_reason() {
    let dir = temp_dir("amd-hsa-counters-bad");
    let Some(exe) = build(&dir) else { return };
    type Case<'a> = (&'a str, &'a [(&'a str, &'a str)], &'a str);
    let cases: [Case<'_>; 3] = [
        (
            "SQ_WAVES,TCC_HITS",
            &[],
            "unknown AMD GPU counter TCC_HITS for gfx90a; gfx90a has: GRBM_COUNT, GRBM_GUI_ACTIVE",
        ),
        (
            "SQ_INSTS_SMEM",
            &[],
            "AMD Instinct MI210 (double) (gfx90a) does not count SQ_INSTS_SMEM: AQLprofile rejects block SQ instance 0 counter 57",
        ),
        (
            "SQ_WAVES",
            &[("DOUBLE_NO_AQLPROFILE", "1")],
            "the runtime offers no AQLprofile extension",
        ),
    ];
    for (i, (metrics, extra, reason)) in cases.iter().enumerate() {
        let case = dir.join(format!("case{i}"));
        std::fs::create_dir_all(&case).unwrap();
        let mut env = vec![("METRON_GPU_METRICS", *metrics)];
        env.extend_from_slice(extra);
        let out = metron_run(&exe, &case, "normal", &env);
        assert_eq!(printed(&out)["done"], 1);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("metron: AMD GPU counters are off: "),
            "{stderr}"
        );
        assert!(stderr.contains(reason), "{metrics}: {stderr}");
        let run = case.join("run");
        let rows = csv_rows(&run.join("kernels.csv"));
        assert_eq!(rows.len(), 4, "{metrics}: dispatches are still traced");
        assert!(!rows[0].contains_key("SQ_WAVES"), "no counter columns");
        let counters = &read_json(&run, "metadata.json")["gpu"]["counters"];
        assert!(
            counters["error"].as_str().unwrap().contains(reason),
            "{counters}"
        );
    }
}

/// A counter of a block with several instances (the L2's 16 channels) is counted on each
/// instance and summed: the double's channel i sees `waves + i` hits and `i` misses.
#[test]
fn counters_of_multi_instance_blocks_are_summed_over_instances() {
    let dir = temp_dir("amd-hsa-counters-tcc");
    let Some(exe) = build(&dir) else { return };
    let out = metron_run(
        &exe,
        &dir,
        "normal",
        &[(
            "METRON_GPU_METRICS",
            "TCC_HIT,TCC_MISS,L2_HIT_RATE,SQ_WAVES",
        )],
    );
    assert_eq!(printed(&out)["done"], 1);
    let run = dir.join("run");
    let rows = csv_rows(&run.join("kernels.csv"));
    let vector = &rows[0];
    assert_eq!(vector["SQ_WAVES"], "16384");
    assert_eq!(
        vector["TCC_HIT"],
        (16 * 16384 + 120).to_string(),
        "{vector:?}"
    );
    assert_eq!(vector["TCC_MISS"], "120");
    let rate: f64 = vector["L2_HIT_RATE"].parse().unwrap();
    let want = 100.0 * 262_264.0 / 262_384.0;
    assert!((rate - want).abs() < 1e-9, "{rate} vs {want}");
    let counters = &read_json(&run, "metadata.json")["gpu"]["counters"];
    assert_eq!(
        counters["instances_per_counter"],
        serde_json::json!([16, 16, 1]),
        "{counters}"
    );
}

/// `HSA_TOOLS_LIB=libmetron.so` set by hand, without `metron run` (no preload): `OnLoad`
/// starts Metron's runtime itself and the dispatches reach `kernels.csv`.
#[test]
fn hsa_tools_lib_set_by_hand_is_enough() {
    let dir = temp_dir("amd-hsa-by-hand");
    let Some(exe) = build(&dir) else { return };
    let lib = artifacts().lib().display().to_string();
    let out = run_in(&exe, &dir, &["normal"], &[("HSA_TOOLS_LIB", &lib)]);
    assert_success(&out, "hsa_app with HSA_TOOLS_LIB");
    assert_eq!(printed(&out)["tools_loaded"], 1);
    let rows = csv_rows(&dir.join("run").join("kernels.csv"));
    assert_eq!(rows.len(), 4);
    assert_eq!(rows[0]["Region"], "vector_step");
}

/// Four threads submit 2,000 dispatches on two GPUs at once (doorbell writes of 10, each
/// batch waited for): every dispatch is recorded once, on its thread and region, and every
/// application signal completes; with a pool of 8 signals for up to 40 in flight, what is not
/// timed is counted and still completes.
#[test]
fn concurrent_submitters_lose_nothing() {
    let dir = temp_dir("amd-hsa-stress");
    let Some(exe) = build(&dir) else { return };
    for (signals, case) in [("1024", "large"), ("8", "small")] {
        let case_dir = dir.join(case);
        std::fs::create_dir_all(&case_dir).unwrap();
        let out = metron_run(
            &exe,
            &case_dir,
            "stress",
            &[("METRON_GPU_AMD_SIGNALS", signals)],
        );
        assert_eq!(
            printed(&out)["stress_done"],
            1,
            "{case}: all signals completed"
        );
        let run = case_dir.join("run");
        let rows = csv_rows(&run.join("kernels.csv"));
        let gpu = &read_json(&run, "metadata.json")["gpu"];
        assert_eq!(gpu["dispatches_seen"], 2000, "{gpu}");
        assert_eq!(gpu["dropped_queue_full"], 0);
        assert_eq!(gpu["in_flight"], 0);
        let untimed = gpu["untimed_no_free_signal"].as_u64().unwrap();
        assert_eq!(rows.len() as u64 + untimed, 2000, "{case}: {gpu}");
        let correlations: std::collections::BTreeSet<&str> =
            rows.iter().map(|r| r["CorrelationId"].as_str()).collect();
        assert_eq!(correlations.len(), rows.len(), "one row per dispatch");
        assert!(rows.iter().all(|r| r["Region"] == "stress"));
        let threads: std::collections::BTreeSet<&str> =
            rows.iter().map(|r| r["ThreadID"].as_str()).collect();
        if case == "large" {
            assert_eq!(untimed, 0, "{gpu}");
            assert_eq!(threads.len(), 4, "{threads:?}");
            let durations: std::collections::BTreeSet<u64> = rows
                .iter()
                .map(|r| r["EndNs"].parse::<u64>().unwrap() - r["StartNs"].parse::<u64>().unwrap())
                .collect();
            assert_eq!(durations.into_iter().collect::<Vec<_>>(), [10_000]);
        } else {
            assert!(rows.len() >= 8, "{case}: {}", rows.len());
        }
    }
}

/// The `HSA API tid N` slices of a run.
fn hsa_api_slices(run: &Path) -> Vec<nvtx_support::Slice> {
    nvtx_support::slices_on(&decoded_trace(&run.join("trace.pftrace")), "HSA API tid")
}

fn count(all: &[nvtx_support::Slice], name: &str) -> usize {
    all.iter().filter(|s| s.name == name).count()
}

/// `METRON_GPU_AMD_HSA_API=all`: every HSA call the application makes through the runtime's
/// table is a slice (as `rocprofv3 --hsa-trace`), with the wrappers passing arguments and
/// results through unchanged; Metron's own calls into the runtime are not among them.
#[test]
fn every_hsa_call_of_the_application_is_traced_with_all() {
    let dir = temp_dir("amd-hsa-api-all");
    let Some(exe) = build(&dir) else { return };
    let out = metron_run(&exe, &dir, "api", &[("METRON_GPU_AMD_HSA_API", "all")]);
    let printed = printed(&out);
    assert_eq!(printed["done"], 1);
    assert_eq!(
        printed["loaded"], 2,
        "a value stored through a wrapper, loaded through one"
    );
    assert_eq!(
        printed["frequency"], 100_000_000,
        "an out-parameter written through a wrapper"
    );
    let run = dir.join("run");
    let api = hsa_api_slices(&run);
    for (name, n) in [
        ("hsa_system_get_info", 3),
        ("hsa_signal_create", 2),
        ("hsa_signal_store_relaxed", 1),
        ("hsa_signal_load_relaxed", 1),
        ("hsa_signal_destroy", 1),
        ("hsa_signal_store_screlease", 1),
        ("hsa_signal_wait_scacquire", 1),
        ("hsa_executable_freeze", 1),
        ("hsa_queue_create", 1),
        ("hsa_queue_destroy", 1),
    ] {
        assert_eq!(
            count(&api, name),
            n,
            "{name} slices in {:?}",
            api.iter().map(|s| &s.name).collect::<Vec<_>>()
        );
    }
    assert!(count(&api, "hsa_executable_symbol_get_info") > 0);
    assert!(
        count(&api, "hsa_executable_iterate_symbols") == 3,
        "one per kernel looked up"
    );
    // Metron's own calls (queue interception, timestamps, signal handlers, clock pairing) go
    // to the runtime's entries directly.
    for own in [
        "hsa_amd_queue_intercept_create",
        "hsa_amd_queue_intercept_register",
        "hsa_amd_profiling_set_profiler_enabled",
        "hsa_amd_signal_async_handler",
        "hsa_amd_profiling_get_dispatch_time",
        "hsa_amd_profiling_convert_tick_to_system_domain",
        "hsa_iterate_agents",
        "hsa_agent_get_info",
    ] {
        assert_eq!(count(&api, own), 0, "Metron's own {own} was recorded");
    }
    // Times: the three hsa_system_get_info calls inside the application's clock reads; the
    // wait from before the other thread's store until after it.
    let (before, after) = (printed["api_before"] as u64, printed["api_after"] as u64);
    for s in api.iter().filter(|s| s.name == "hsa_system_get_info") {
        assert!(
            before <= s.ts && s.ts + s.dur <= after,
            "hsa_system_get_info [{}, +{}] outside [{before}, {after}]",
            s.ts,
            s.dur
        );
    }
    let wait = nvtx_support::slice(&api, "hsa_signal_wait_scacquire");
    let (wait_before, wait_after, stored_at) = (
        printed["wait_before"] as u64,
        printed["wait_after"] as u64,
        printed["stored_at"] as u64,
    );
    assert!(
        wait_before <= wait.ts && wait.ts < stored_at && stored_at <= wait.ts + wait.dur
            && wait.ts + wait.dur <= wait_after,
        "the wait [{}, +{}] does not span the store at {stored_at} inside [{wait_before}, {wait_after}]",
        wait.ts,
        wait.dur
    );
    let gpu = &read_json(&run, "metadata.json")["gpu"];
    let hsa_api = &gpu["hsa_api"];
    assert_eq!(
        hsa_api["functions_traced"].as_u64(),
        Some(metron_gpu_amd::hsa_api_functions().len() as u64),
        "{hsa_api}"
    );
    // The double fills 32 entries; Metron's five hooks record without a second wrapper.
    assert_eq!(hsa_api["wrappers_installed"], 32 - 5, "{hsa_api}");
    assert_eq!(gpu["records"]["api_calls"].as_u64(), Some(api.len() as u64));
    assert_eq!(gpu["dropped_queue_full"], 0);
}

/// The default traces the calls Metron hooks; a list names calls (an unknown name is
/// reported with what is accepted, the others still traced); `METRON_GPU_API=none` wins.
#[test]
fn hsa_api_selection_default_list_and_none() {
    let dir = temp_dir("amd-hsa-api-default");
    let Some(exe) = build(&dir) else { return };
    metron_run(&exe, &dir, "api", &[]);
    let api = hsa_api_slices(&dir.join("run"));
    let mut names: Vec<&str> = api.iter().map(|s| s.name.as_str()).collect();
    names.sort();
    names.dedup();
    assert_eq!(
        names,
        [
            "hsa_executable_freeze",
            "hsa_queue_create",
            "hsa_queue_destroy"
        ],
        "the default: the calls Metron hooks (this mode copies nothing)"
    );

    let dir = temp_dir("amd-hsa-api-list");
    let out = metron_run(
        &exe,
        &dir,
        "api",
        &[(
            "METRON_GPU_AMD_HSA_API",
            "hsa_system_get_info, hsa_signal_wiat_scacquire",
        )],
    );
    assert_eq!(printed(&out)["done"], 1);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("`hsa_signal_wiat_scacquire` is not an HSA API function; accepted: wrapped, core, amd, all, none"),
        "{stderr}"
    );
    let run = dir.join("run");
    let api = hsa_api_slices(&run);
    assert_eq!(count(&api, "hsa_system_get_info"), 3);
    assert_eq!(
        api.len(),
        3,
        "only the named call: {:?}",
        api.iter().map(|s| &s.name).collect::<Vec<_>>()
    );
    let gpu = &read_json(&run, "metadata.json")["gpu"];
    assert_eq!(gpu["hsa_api"]["functions_traced"], 1);
    assert_eq!(gpu["hsa_api"]["wrappers_installed"], 1);
    assert!(gpu["hsa_api"]["problems"][0]
        .as_str()
        .unwrap()
        .contains("hsa_signal_wiat_scacquire"));

    let dir = temp_dir("amd-hsa-api-none");
    metron_run(
        &exe,
        &dir,
        "api",
        &[
            ("METRON_GPU_AMD_HSA_API", "all"),
            ("METRON_GPU_API", "none"),
        ],
    );
    let run = dir.join("run");
    assert!(hsa_api_slices(&run).is_empty());
    let gpu = &read_json(&run, "metadata.json")["gpu"];
    assert_eq!(gpu["hsa_api"]["wrappers_installed"], 0, "{gpu}");
    assert_eq!(gpu["enabled"], true);
}
