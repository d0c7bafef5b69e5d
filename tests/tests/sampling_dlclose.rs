//! Sampling a program that loads and unloads modules in a burst (Open MPI's `MPI_Init` does,
//! with dozens of components). The sampler's module list used to be read after
//! `dl_iterate_phdr` returned, racing with `dlclose`, and a handler could read the unwind data
//! of a module unmapped since the list was built: a rank under `metron sample` died by
//! SIGSEGV about once in 15 runs on the loaded CI machine. Now the list is read under the
//! loader's lock and `libmetron.so`'s `dlclose` keeps handlers out of the view around the
//! real call (`sdk/src/sampling/unload.rs`).

mod c_api_support;
use c_api_support::*;
use std::process::Command;

#[test]
fn sampling_survives_plugins_loaded_and_unloaded_in_a_loop() {
    let dir = temp_dir("dlclose-churn");
    let plugin = dir.join("libplug.so");
    let cc = Command::new("cc")
        .args(["-shared", "-fPIC", "-O1", "-g", "-o"])
        .arg(&plugin)
        .arg(program("dlclose_plugin.c"))
        .output()
        .expect("run cc");
    assert_success(&cc, "building the plugin");
    let exe = compile(&program("dlclose_churn.c"), &dir, &["-ldl"]);
    // Several runs: each is a few thousand unloads under 2 kHz sampling of four threads.
    for attempt in 0..3 {
        let out_dir = dir.join(format!("run{attempt}"));
        let out = Command::new(artifacts().metron())
            .args(["sample", "--"])
            .arg(&exe)
            .arg(&plugin)
            .arg("2000")
            .env("METRON_OUTPUT_PATH", out_dir.join("run"))
            .env("METRON_SAMPLING_FREQ", "2000")
            .env("METRON_TRACE", "false")
            .env("METRON_REPORT", "false")
            .env_remove("LD_PRELOAD")
            .env_remove("METRON_PRELOAD")
            .output()
            .expect("run metron sample");
        assert_success(&out, "the plugin churn under metron sample");
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("rounds 2000"),
            "the program did not finish its rounds: {}",
            String::from_utf8_lossy(&out.stdout)
        );
        let metadata = read_json(&out_dir.join("run"), "metadata.json");
        let sampling = &metadata["sampling"];
        let unloads = sampling["module_unloads_bracketed"].as_u64().unwrap_or(0);
        assert!(
            unloads >= 2000,
            "every dlclose goes through Metron's bracket: {unloads} of 2000\n{sampling}"
        );
        assert_eq!(
            sampling["module_unload_waits_timed_out"], 0,
            "no handler stayed in the view for 100 ms: {sampling}"
        );
        let samples = sampling["samples"]["cpu_time"].as_u64().unwrap_or(0);
        assert!(samples > 0, "the threads were sampled: {sampling}");
        let summary = read_json(&out_dir.join("run"), "summary.json");
        assert!(
            summary.to_string().contains("churn"),
            "the churn region is in the summary"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
