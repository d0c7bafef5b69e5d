//! Source lines of sampled PCs without a GPU: the cubin of `tests/cuda/pc_lines.cu`, built here
//! with the pip nvcc (`../shared/tools/cuda-toolchain.sh`, `-cubin -O2 -lineinfo
//! -arch=sm_90`), resolved instruction by instruction through CUPTI's
//! `cuptiGetSassToSourceCorrelation` (Metron's path for every sampled PC; the pip
//! `libcupti.so.13`, which needs no driver for this), against `nvdisasm -g` of the same cubin,
//! run on the GPU machine (`tests/cuda/fixtures/pc_lines.sm_90.nvdisasm.txt`, whose first line
//! records the cubin's CRC). Skips with the reason when nvcc or libcupti is missing, or when the
//! cubin built here is not the one disassembled (another nvcc, or an edited source).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Where the cubin is built (nvcc writes this directory into the cubin's line table).
const BUILD_DIR: &str = "/tmp/metron-pc-lines";

fn toolchain() -> Option<PathBuf> {
    let mut candidates: Vec<PathBuf> = Vec::new();
    if let Some(root) = std::env::var_os("METRON_CUDA_ROOT") {
        candidates.push(PathBuf::from(root));
    }
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")));
    if let Some(cache) = cache {
        candidates.push(cache.join("metron-cuda/nvidia/cu13"));
    }
    candidates
        .into_iter()
        .find(|d| d.join("bin/nvcc").is_file() && d.join("lib/libcupti.so.13").is_file())
}

/// `(function, offset) -> line` of every instruction nvdisasm placed on a line, and the CRC.
fn fixture(path: &Path) -> (u64, BTreeMap<(String, u64), u32>) {
    let text = std::fs::read_to_string(path).expect("fixture");
    let first = text.lines().next().expect("header");
    let crc = u64::from_str_radix(
        first
            .split("crc 0x")
            .nth(1)
            .expect("crc in header")
            .split_whitespace()
            .next()
            .unwrap(),
        16,
    )
    .unwrap();
    let mut out = BTreeMap::new();
    let (mut function, mut line) = (None::<String>, None::<u32>);
    for l in text.lines() {
        let t = l.trim();
        if let Some(name) = t.strip_prefix(".text.").and_then(|r| r.strip_suffix(':')) {
            function = Some(name.to_string());
            line = None;
        } else if t.starts_with("//##") {
            line = t
                .split("line ")
                .nth(1)
                .and_then(|r| r.split(|c: char| !c.is_ascii_digit()).next())
                .and_then(|n| n.parse().ok());
        } else if let (Some(f), Some(n), Some(rest)) =
            (function.as_ref(), line, t.strip_prefix("/*"))
        {
            if let Some((hex, _)) = rest.split_once("*/") {
                if let Ok(off) = u64::from_str_radix(hex, 16) {
                    out.insert((f.clone(), off), n);
                }
            }
        }
    }
    (crc, out)
}

#[test]
fn sampled_pcs_resolve_to_nvdisasm_lines() {
    let Some(root) = toolchain() else {
        println!("SKIP: no pip CUDA toolchain with nvcc and libcupti.so.13 (run ../shared/tools/cuda-toolchain.sh or set METRON_CUDA_ROOT)");
        return;
    };
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let fixture_path = repo.join("tests/cuda/fixtures/pc_lines.sm_90.nvdisasm.txt");
    let (want_crc, lines) = fixture(&fixture_path);
    // nvcc records the directory it ran in: compile in a fixed one, so the cubin (and its CRC)
    // are the same wherever the repository is.
    let dir = Path::new(BUILD_DIR);
    std::fs::create_dir_all(dir).unwrap();
    let source = std::fs::read(repo.join("tests/cuda/pc_lines.cu")).unwrap();
    let tmp = dir.join(format!("pc_lines.cu.{}", std::process::id()));
    std::fs::write(&tmp, source).unwrap();
    std::fs::rename(&tmp, dir.join("pc_lines.cu")).unwrap();
    let cubin = dir.join(format!("pc_lines.{}.cubin", std::process::id()));
    let out = Command::new(root.join("bin/nvcc"))
        .current_dir(dir)
        .args(["-cubin", "-O2", "-lineinfo", "-arch=sm_90", "-o"])
        .arg(&cubin)
        .arg("pc_lines.cu")
        .output()
        .expect("nvcc runs");
    assert!(
        out.status.success(),
        "nvcc: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let bytes = std::fs::read(&cubin).unwrap();
    let _ = std::fs::remove_file(&cubin);
    let cupti = root.join("lib/libcupti.so.13");
    let cupti = cupti.to_str().unwrap();
    let crc = metron_gpu::pc_sampling::cubin_crc(cupti, &bytes).expect("cuptiGetCubinCrc");
    if crc != want_crc {
        println!("SKIP: the cubin built here (crc {crc:#x}) is not the one disassembled on the GPU machine ({want_crc:#x}): another nvcc, or pc_lines.cu changed");
        return;
    }
    assert!(lines.len() > 50, "fixture has {} instructions", lines.len());
    let mut functions = std::collections::BTreeSet::new();
    let mut mismatches = Vec::new();
    for ((function, off), line) in &lines {
        functions.insert(function.clone());
        match metron_gpu::pc_sampling::cubin_source_line(cupti, &bytes, function, *off) {
            Ok(Some((_, file, got))) => {
                assert!(file.ends_with("pc_lines.cu"), "{file}");
                if got != *line {
                    mismatches.push(format!("{function}+{off:#x}: CUPTI {got}, nvdisasm {line}"));
                }
            }
            other => mismatches.push(format!(
                "{function}+{off:#x}: CUPTI {other:?}, nvdisasm {line}"
            )),
        }
    }
    assert_eq!(functions.len(), 2, "{functions:?}");
    assert!(
        mismatches.is_empty(),
        "{} of {} instructions differ: {:?}",
        mismatches.len(),
        lines.len(),
        &mismatches[..mismatches.len().min(10)]
    );
    println!(
        "{} instructions of {:?}: CUPTI's line equals nvdisasm's",
        lines.len(),
        functions
    );
}
