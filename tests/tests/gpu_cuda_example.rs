//! examples/cuda builds with CMake `find_package(metron)` and nvcc
//! (`scripts/build-cuda-example.sh`), with `/usr/local/cuda` or the pip toolchain of
//! `scripts/cuda-toolchain.sh` (run by `scripts/install-deps.sh`, unpacked in `~/.cache/metron-cuda`);
//! skips with the reason otherwise (the toolchain is a large download, so the test does not
//! fetch it). With an NVIDIA driver present, the example also runs under `metron run` and its
//! `kernels.csv` must list the 9 kernels, each tied to its region; without one that part is
//! skipped with the reason.

use std::path::{Path, PathBuf};
use std::process::Command;

fn toolchain() -> Option<PathBuf> {
    if Path::new("/usr/local/cuda/bin/nvcc").is_file() {
        return Some("/usr/local/cuda".into());
    }
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))?;
    let root = cache.join("metron-cuda/nvidia/cu13");
    root.join("bin/nvcc").is_file().then_some(root)
}

#[test]
fn cuda_example_builds_and_runs_where_it_can() {
    let Some(cuda) = toolchain() else {
        println!(
            "SKIP: no nvcc (/usr/local/cuda, or ~/.cache/metron-cuda from \
             scripts/cuda-toolchain.sh, which scripts/install-deps.sh runs)"
        );
        return;
    };
    if Command::new("cmake").arg("--version").output().is_err() {
        println!("SKIP: no cmake");
        return;
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf();
    let build = std::env::temp_dir().join(format!("metron-cuda-example-{}", std::process::id()));
    let mut cmd = Command::new(root.join("scripts/build-cuda-example.sh"));
    cmd.arg(&build);
    if !cuda.starts_with("/usr/local/cuda") {
        // Already unpacked: no need for the toolchain script (which may not be beside a clone).
        cmd.env("METRON_CUDA_ROOT", &cuda);
    }
    let out = cmd.output().expect("run scripts/build-cuda-example.sh");
    assert!(
        out.status.success(),
        "build-cuda-example.sh failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let exe = PathBuf::from(
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .last()
            .unwrap()
            .trim(),
    );
    assert!(exe.is_file(), "{} not built", exe.display());
    assert!(build.join("cmake/launch_overhead").is_file());
    if metron_gpu_nvidia::probe().driver_path.is_none() {
        println!(
            "built {}; SKIP running it: no NVIDIA driver here",
            exe.display()
        );
        let _ = std::fs::remove_dir_all(&build);
        return;
    }
    let run_dir = build.join("run");
    let status = Command::new(build.join("prefix/bin/metron"))
        .args(["run", "-o"])
        .arg(&run_dir)
        .arg("--")
        .arg(&exe)
        .status()
        .unwrap();
    assert!(status.success());
    let csv = std::fs::read_to_string(run_dir.join("kernels.csv")).unwrap();
    let rows: Vec<&str> = csv
        .lines()
        .filter(|l| !l.starts_with('#'))
        .skip(1)
        .collect();
    assert_eq!(rows.len(), 9, "{csv}");
    for (row, region) in rows
        .iter()
        .zip(["vector_add", "matmul", "reduction"].iter().cycle())
    {
        assert!(row.contains(&format!("\"{region}\"")), "{row}");
    }
    let _ = std::fs::remove_dir_all(&build);
}
