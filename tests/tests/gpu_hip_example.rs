//! The HIP build of the GPU example (examples/cuda/vector_ops.cu through gpu_compat.h, and
//! examples/hip/CMakeLists.txt): compiled with `hipcc` for an AMD target (gfx90a, or
//! `$METRON_HIP_ARCH`) against this build's libmetron, once with the plain hipcc command line the
//! user guide gives (docs/src/gpu-amd.md) and once with CMake `find_package(metron)`. Each binary must carry AMD GPU code:
//! a clang offload bundle in `.hip_fatbin` whose entry for the target is an AMDGPU ELF that
//! defines the three kernels. Then it runs under `metron run`: without an AMD GPU (no
//! /dev/kfd) it must stop at its first hipMalloc with its own error message and exit 1, and
//! Metron must still write the run folder with the regions opened before that. Skips with the
//! reason when there is no hipcc (Debian: `apt install hipcc libamdhip64-dev`, which
//! scripts/install-deps.sh does). Nothing here has run on an AMD GPU: with /dev/kfd present
//! only "ran to completion or failed cleanly, and left its run folder" is checked.

mod c_api_support;
use c_api_support::*;
use object::{Object, ObjectSection, ObjectSymbol};
use std::path::{Path, PathBuf};
use std::process::Command;

/// hipcc: `$METRON_HIPCC`, else on PATH, else ROCm's /opt/rocm/bin.
fn hipcc() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("METRON_HIPCC") {
        return Some(p.into());
    }
    std::env::var_os("PATH")
        .into_iter()
        .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .chain([PathBuf::from("/opt/rocm/bin")])
        .map(|d| d.join("hipcc"))
        .find(|p| p.is_file())
}

fn arch() -> String {
    std::env::var("METRON_HIP_ARCH").unwrap_or_else(|_| "gfx90a".into())
}

fn read_u64(data: &[u8], at: usize) -> u64 {
    let bytes: [u8; 8] = data
        .get(at..at + 8)
        .expect("offload bundle truncated")
        .try_into()
        .unwrap();
    u64::from_le_bytes(bytes)
}

/// The device code object for `arch` in `exe`'s `.hip_fatbin` section (a clang offload bundle:
/// magic, entry count, then offset, size, id length and id of each entry).
fn device_code(exe: &Path, arch: &str) -> Vec<u8> {
    const MAGIC: &[u8] = b"__CLANG_OFFLOAD_BUNDLE__";
    let file = std::fs::read(exe).unwrap();
    let host = object::File::parse(&*file).unwrap();
    let fatbin = host
        .section_by_name(".hip_fatbin")
        .unwrap_or_else(|| panic!("{}: no .hip_fatbin section: no GPU code", exe.display()))
        .data()
        .unwrap();
    assert!(
        fatbin.starts_with(MAGIC),
        "{}: .hip_fatbin is not a clang offload bundle",
        exe.display()
    );
    let entries = read_u64(fatbin, MAGIC.len());
    let mut at = MAGIC.len() + 8;
    let mut ids = Vec::new();
    for _ in 0..entries {
        let (offset, size, id_len) = (
            read_u64(fatbin, at) as usize,
            read_u64(fatbin, at + 8) as usize,
            read_u64(fatbin, at + 16) as usize,
        );
        let id = String::from_utf8_lossy(&fatbin[at + 24..at + 24 + id_len]).into_owned();
        at += 24 + id_len;
        // e.g. "hipv4-amdgcn-amd-amdhsa--gfx90a"
        if id.contains("amdgcn-amd-amdhsa") && id.ends_with(&format!("--{arch}")) && size > 0 {
            return fatbin[offset..offset + size].to_vec();
        }
        ids.push(id);
    }
    panic!(
        "{}: no {arch} code object in .hip_fatbin (bundle entries: {ids:?})",
        exe.display()
    );
}

/// The binary carries AMDGPU code for `arch` with the example's three kernels.
fn check_device_code(exe: &Path, arch: &str) {
    const EM_AMDGPU: u16 = 224;
    let code = device_code(exe, arch);
    assert!(
        code.starts_with(b"\x7fELF"),
        "{arch} code object is not an ELF"
    );
    assert_eq!(
        u16::from_le_bytes([code[18], code[19]]),
        EM_AMDGPU,
        "{arch} code object is not an AMDGPU ELF"
    );
    let device = object::File::parse(&*code).unwrap();
    let symbols: Vec<String> = device
        .symbols()
        .chain(device.dynamic_symbols())
        .filter_map(|s| s.name().ok().map(str::to_owned))
        .collect();
    for kernel in ["vector_add", "matmul_tiled", "reduce_sum"] {
        assert!(
            symbols
                .iter()
                .any(|s| s.contains(kernel) && s.ends_with(".kd")),
            "{}: no kernel descriptor for {kernel} in the {arch} code object: {symbols:?}",
            exe.display()
        );
    }
}

/// Runs `exe` under `metron run`; checks the outcome for this machine (no AMD GPU: the
/// example's hipMalloc error, exit 1) and the run folder.
fn run_under_metron(exe: &Path, work: &Path) {
    let a = artifacts();
    let run = work.join("run");
    let out = Command::new(a.metron())
        .args(["run", "-o"])
        .arg(&run)
        .arg("--")
        .arg(exe)
        // Small sizes: on a GPU this is quick; without one it stops at the first hipMalloc.
        .args(["1", "16", "64"])
        .env_remove("LD_PRELOAD")
        .output()
        .expect("run metron");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let report = format!("{:?}\nstdout:\n{stdout}\nstderr:\n{stderr}", out.status);
    assert!(out.status.code().is_some(), "killed by a signal: {report}");
    let gpu = Path::new("/dev/kfd").exists();
    if gpu {
        println!(
            "/dev/kfd exists: ran on an AMD GPU ({}); only checking it ended cleanly",
            out.status
        );
        if out.status.success() {
            assert!(stdout.contains("HIP: sum="), "{report}");
        }
    } else {
        // The example's CHECK(): "<file>:<line>: gpuMalloc(&da, ...): hipError...", exit 1.
        assert_eq!(out.status.code(), Some(1), "{report}");
        assert!(
            stderr.contains(": gpuMalloc(&da, n * sizeof(float)): hipError"),
            "{report}"
        );
    }
    for file in ["summary.json", "metadata.json"] {
        assert!(
            run.join(file).is_file(),
            "no {file} in {}: {report}",
            run.display()
        );
    }
    let summary = read_json(&run, "summary.json");
    let name = exe.file_name().unwrap().to_str().unwrap();
    assert_eq!(summary["exe"], name);
    // Under `metron run` the program's own regions sit under a root region named after it; the
    // ones opened before the failing hipMalloc are closed at exit.
    let regions = region_counts(&summary["merged"]);
    for region in [format!("{name}/main"), format!("{name}/main/setup")] {
        assert_eq!(regions.get(&region), Some(&1), "{region}: {regions:?}");
    }
    // The GPU sections (`gpu`, and the AMD backend's, whatever its layout): none may claim to
    // be enabled on a machine without a GPU. Their reasons are printed, not checked.
    let metadata = read_json(&run, "metadata.json");
    let sections: Vec<(&String, &serde_json::Value)> = metadata
        .as_object()
        .unwrap()
        .iter()
        .filter(|(k, v)| k.starts_with("gpu") && v.is_object())
        .collect();
    assert!(!sections.is_empty(), "no gpu section: {metadata}");
    for (key, section) in sections {
        println!(
            "metadata.json {key}: enabled={} reason={}",
            section["enabled"], section["reason"]
        );
        if !gpu {
            assert_ne!(section["enabled"], true, "{key}: {section}");
        }
    }
}

#[test]
fn hip_example_compiles_for_amd_and_runs_under_metron_without_a_gpu() {
    let Some(hipcc) = hipcc() else {
        println!(
            "SKIP: no hipcc (on PATH, /opt/rocm/bin or $METRON_HIPCC; Debian: apt install \
             hipcc libamdhip64-dev, which scripts/install-deps.sh does)"
        );
        return;
    };
    let a = artifacts();
    let arch = arch();
    let example = a.root.join("examples/cuda");
    let work = temp_dir("hip-example");

    // 1. The guide's command line: hipcc compiles the .cu as HIP (gpu_compat.h picks HIP).
    let exe = work.join("vector_ops_hip");
    let out = Command::new(&hipcc)
        .arg(format!("--offload-arch={arch}"))
        .args(["-std=c++17", "-O2", "-Wall", "-Wextra", "-Werror"])
        .arg("-I")
        .arg(&a.include)
        .arg(example.join("vector_ops.cu"))
        .arg("-o")
        .arg(&exe)
        .arg(format!("-L{}", a.dir.display()))
        .arg(format!("-Wl,-rpath,{}", a.dir.display()))
        .arg("-lmetron")
        .output()
        .expect("run hipcc");
    assert_success(&out, "hipcc examples/cuda/vector_ops.cu");
    assert!(exe.is_file(), "{} not built", exe.display());
    check_device_code(&exe, &arch);
    run_under_metron(&exe, &work.join("direct"));

    // 2. examples/hip/CMakeLists.txt with find_package(metron), from a prefix laid out as
    // scripts/install.sh lays it out (metron-config.cmake is relocatable).
    if Command::new("cmake").arg("--version").output().is_err() {
        println!("SKIP the CMake build: no cmake");
        let _ = std::fs::remove_dir_all(&work);
        return;
    }
    let prefix = work.join("prefix");
    for dir in ["include/metron", "lib/cmake/metron"] {
        std::fs::create_dir_all(prefix.join(dir)).unwrap();
    }
    let copies = [
        (a.include.join("metron/metron.h"), "include/metron/metron.h"),
        (a.lib(), "lib/libmetron.so"),
        (
            a.root.join("cmake/metron-config.cmake"),
            "lib/cmake/metron/metron-config.cmake",
        ),
        (
            a.root.join("cmake/metron-config-version.cmake"),
            "lib/cmake/metron/metron-config-version.cmake",
        ),
    ];
    for (from, to) in copies {
        std::fs::copy(&from, prefix.join(to))
            .unwrap_or_else(|e| panic!("copy {}: {e}", from.display()));
    }
    let build = work.join("cmake");
    let configure = Command::new("cmake")
        .arg("-S")
        .arg(a.root.join("examples/hip"))
        .arg("-B")
        .arg(&build)
        .arg(format!("-DCMAKE_PREFIX_PATH={}", prefix.display()))
        .arg(format!("-DCMAKE_HIP_ARCHITECTURES={arch}"))
        .arg("-DCMAKE_BUILD_TYPE=Release")
        .env("PATH", path_with(&hipcc))
        .output()
        .unwrap();
    assert_success(&configure, "cmake configure of examples/hip");
    let compile = Command::new("cmake")
        .arg("--build")
        .arg(&build)
        .arg("-j2")
        .output()
        .unwrap();
    assert_success(&compile, "cmake --build of examples/hip");
    let exe = build.join("vector_ops_hip");
    assert!(exe.is_file(), "{} not built", exe.display());
    check_device_code(&exe, &arch);
    run_under_metron(&exe, &work.join("cmake-run"));
    let _ = std::fs::remove_dir_all(&work);
}

/// PATH with hipcc's folder first, so that CMake's fallback finds the same hipcc.
fn path_with(hipcc: &Path) -> std::ffi::OsString {
    let mut dirs = vec![hipcc.parent().unwrap().to_path_buf()];
    if let Some(p) = std::env::var_os("PATH") {
        dirs.extend(std::env::split_paths(&p));
    }
    std::env::join_paths(dirs).unwrap()
}
