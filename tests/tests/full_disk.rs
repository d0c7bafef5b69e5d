//! A full disk: the small outputs survive and the last stderr line names every output that
//! failed.

mod c_api_support;
use metron_tests::{scenario, SCENARIO_ENV};
use std::process::Command;

scenario! {
    fn scenario_many_regions() {
        for _ in 0..400_000 {
            let _r = metron::scope!("many");
        }
    }
}

#[test]
fn on_a_full_disk_summary_and_metadata_survive_and_the_failure_is_named() {
    let host = c_api_support::temp_dir("full-disk");
    let mount = host.join("mnt");
    std::fs::create_dir_all(&mount).unwrap();
    let exe = std::env::current_exe().unwrap();
    // A 256 KiB tmpfs in a private mount namespace (no privileges needed where user
    // namespaces are allowed); the run is copied out before the namespace goes away. Whether
    // this machine allows it is asked first, so that a failure of the run itself is never
    // taken for a reason to skip.
    let mount_tmpfs = r#"mount -t tmpfs -o size=256k tmpfs "$M""#;
    let probe = Command::new("unshare")
        .args(["-rm", "sh", "-c", mount_tmpfs])
        .env("M", &mount)
        .output();
    match probe {
        Ok(p) if p.status.success() => {}
        Ok(p) => {
            println!(
                "SKIPPED: cannot mount a tmpfs in a user namespace here: {}",
                String::from_utf8_lossy(&p.stderr)
            );
            return;
        }
        Err(e) => {
            println!("SKIPPED: `unshare` cannot run ({e}) to mount a small tmpfs");
            return;
        }
    }
    let script = format!(
        r#"{mount_tmpfs} || exit 1
"$EXE" scenario_many_regions --exact --nocapture --test-threads=1 2>"$H/stderr"
cp -r "$M/run" "$H/run""#
    );
    let out = Command::new("unshare")
        .args(["-rm", "sh", "-c", &script])
        .env("M", &mount)
        .env("H", &host)
        .env("EXE", &exe)
        .env(SCENARIO_ENV, "1")
        .env("METRON_OUTPUT_PATH", mount.join("run"))
        .output()
        .expect("unshare ran a moment ago");
    assert!(
        out.status.success(),
        "the run on the small tmpfs failed: {:?}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let run = host.join("run");
    let stderr = std::fs::read_to_string(host.join("stderr")).unwrap();
    for file in ["summary.txt", "summary.json", "metadata.json"] {
        let len = std::fs::metadata(run.join(file)).map_or(0, |m| m.len());
        assert!(
            len > 0,
            "{file} is written on the full disk ({len} bytes)\n{stderr}"
        );
    }
    let summary = c_api_support::read_json(&run, "summary.json");
    let regions = c_api_support::region_counts(&summary["merged"]);
    assert_eq!(regions.get("many"), Some(&400_000), "{regions:?}");
    let metadata = c_api_support::read_json(&run, "metadata.json");
    assert_eq!(metadata["records"]["written"], 800_000);
    let last = stderr.lines().last().unwrap_or_default();
    assert!(
        last.starts_with("metron: wrote")
            && last.contains("FAILED")
            && last.contains("trace.pftrace"),
        "the last line names the trace as failed: {last}\n{stderr}"
    );
    assert!(
        !run.join(".metron-reserve").exists(),
        "the reserve is given back"
    );
}
