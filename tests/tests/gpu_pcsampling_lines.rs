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
            line = nvdisasm_line(t);
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

/// Builds `tests/cuda/<name>` into a cubin with the toolchain at `root` (`-cubin -O2 -lineinfo
/// -arch=sm_90`) in `build_dir`: nvcc records the directory it ran in (and the source's
/// modification time), so fixed ones keep the cubin the same wherever the repository is.
fn build_cubin(root: &Path, repo: &Path, name: &str, build_dir: &str) -> Vec<u8> {
    let dir = Path::new(build_dir);
    std::fs::create_dir_all(dir).unwrap();
    let source = std::fs::read(repo.join("tests/cuda").join(name)).unwrap();
    let tmp = dir.join(format!("{name}.{}", std::process::id()));
    std::fs::write(&tmp, source).unwrap();
    // nvcc writes the source's modification time into .debug_line: a fixed one keeps the
    // cubin the same from build to build.
    let fixed = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_700_000_000);
    std::fs::File::options()
        .write(true)
        .open(&tmp)
        .and_then(|f| f.set_modified(fixed))
        .unwrap();
    std::fs::rename(&tmp, dir.join(name)).unwrap();
    let cubin = dir.join(format!("{name}.{}.cubin", std::process::id()));
    let out = Command::new(root.join("bin/nvcc"))
        .current_dir(dir)
        .args(["-cubin", "-O2", "-lineinfo", "-arch=sm_90", "-o"])
        .arg(&cubin)
        .arg(name)
        .output()
        .expect("nvcc runs");
    assert!(
        out.status.success(),
        "nvcc: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let bytes = std::fs::read(&cubin).unwrap();
    let _ = std::fs::remove_file(&cubin);
    bytes
}

/// The source line in a `//## File "F", line N[ inlined at ...]` comment of nvdisasm.
fn nvdisasm_line(comment: &str) -> Option<u32> {
    comment
        .split("line ")
        .nth(1)
        .and_then(|r| r.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|n| n.parse().ok())
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
    let bytes = build_cubin(&root, repo, "pc_lines.cu", BUILD_DIR);
    let cupti = root.join("lib/libcupti.so.13");
    let cupti = cupti.to_str().unwrap();
    let crc = metron_gpu_nvidia::pc_sampling::cubin_crc(cupti, &bytes).expect("cuptiGetCubinCrc");
    if crc != want_crc {
        println!("SKIP: the cubin built here (crc {crc:#x}) is not the one disassembled on the GPU machine ({want_crc:#x}): another nvcc, or pc_lines.cu changed");
        return;
    }
    assert!(lines.len() > 50, "fixture has {} instructions", lines.len());
    let mut functions = std::collections::BTreeSet::new();
    let mut mismatches = Vec::new();
    for ((function, off), line) in &lines {
        functions.insert(function.clone());
        match metron_gpu_nvidia::pc_sampling::cubin_source_line(cupti, &bytes, function, *off) {
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

/// `(function, offset) -> (chain, printed)`.
type Chains = BTreeMap<(String, u64), (Vec<u32>, bool)>;

/// `(function, offset) -> (chain, printed)` of every instruction in `nvdisasm -gi` output: the
/// lines of the `//##` block before it (`line X inlined at ... line Y`, ..., then the kernel's
/// line), innermost first, and whether the block stands right before it (nvdisasm prints a
/// block only where the innermost line changes, so an instruction further on whose line table
/// row has the same line but another call site shows the earlier chain); and the cubin's size
/// and FNV-1a hash from the first line.
fn chain_fixture(path: &Path) -> ((usize, u64), Chains) {
    let text = std::fs::read_to_string(path).expect("fixture");
    let first = text.lines().next().expect("header");
    let size = first
        .split("; cubin ")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .and_then(|n| n.parse().ok())
        .expect("size in header");
    let hash = first
        .split("lines fnv1a64 0x")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .and_then(|r| u64::from_str_radix(r, 16).ok())
        .expect("hash in header");
    let mut out = BTreeMap::new();
    let (mut function, mut chain, mut block) = (None::<String>, Vec::new(), false);
    for l in text.lines().skip(1) {
        let t = l.trim();
        if let Some(name) = t.strip_prefix(".text.").and_then(|r| r.strip_suffix(':')) {
            function = Some(name.to_string());
            chain.clear();
        } else if t.starts_with("//##") {
            if !block {
                chain.clear();
            }
            block = true;
            chain.extend(nvdisasm_line(t));
        } else if let (Some(f), Some(rest)) = (function.as_ref(), t.strip_prefix("/*")) {
            if let Some((hex, _)) = rest.split_once("*/") {
                if let Ok(off) = u64::from_str_radix(hex, 16) {
                    out.insert((f.clone(), off), (chain.clone(), block));
                }
            }
            block = false;
        }
    }
    ((size, hash), out)
}

/// FNV-1a of the sections the chains come from (`.text.*`, `.debug_line`, `.debug_str`,
/// `.rela.debug_line`), names included: nvcc also writes a hash of the output file's name
/// elsewhere in the cubin.
fn lines_hash(cubin: &[u8]) -> u64 {
    use object::{Object, ObjectSection};
    let file = object::File::parse(cubin).expect("an ELF cubin");
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for section in file.sections() {
        let name = section.name().unwrap_or("");
        if name.starts_with(".text.")
            || [".debug_line", ".debug_str", ".rela.debug_line"].contains(&name)
        {
            for &b in name.as_bytes().iter().chain(section.data().unwrap_or(&[])) {
                h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
            }
        }
    }
    h
}

/// Inlined-at chains: the cubin of `tests/cuda/pc_inline.cu` (two levels of
/// `__forceinline__` functions, called from two sites) read by `metron_symbols::cubin` must give
/// every instruction the chain `nvdisasm -gi` prints
/// (`tests/cuda/fixtures/pc_inline.sm_90.nvdisasm-gi.txt`, from the pip nvdisasm 13.2).
#[test]
fn inlined_at_chains_match_nvdisasm() {
    let Some(root) = toolchain() else {
        println!("SKIP: no pip CUDA toolchain with nvcc (run ../shared/tools/cuda-toolchain.sh or set METRON_CUDA_ROOT)");
        return;
    };
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let ((size, hash), want) =
        chain_fixture(&repo.join("tests/cuda/fixtures/pc_inline.sm_90.nvdisasm-gi.txt"));
    let bytes = build_cubin(&root, repo, "pc_inline.cu", "/tmp/metron-pc-inline");
    if (bytes.len(), lines_hash(&bytes)) != (size, hash) {
        println!("SKIP: the cubin built here ({} bytes, {:#x}) is not the one disassembled ({size} bytes, {hash:#x}): another nvcc, or pc_inline.cu changed", bytes.len(), lines_hash(&bytes));
        return;
    }
    let lines = metron_symbols::cubin::CubinLines::parse(&bytes).expect("line table");
    let mut kernels: Vec<&str> = lines.kernels().collect();
    kernels.sort();
    assert_eq!(kernels, ["nested", "plain"]);
    let (mut inlined, mut deepest, mut printed) = (0, 0, 0);
    let mut finer = Vec::new();
    for ((function, off), (chain, at_block)) in &want {
        let got: Vec<u32> = lines
            .chain(function, *off)
            .into_iter()
            .map(|(file, line)| {
                assert!(file.ends_with("/pc_inline.cu"), "{file}");
                line
            })
            .collect();
        if *at_block {
            // nvdisasm states this instruction's chain: equal, link by link.
            assert_eq!(&got, chain, "{function}+{off:#x}");
            printed += 1;
        } else {
            // The same innermost line as nvdisasm's last block; the call sites may differ
            // (the line table's row for this PC, which nvdisasm does not print).
            assert_eq!(got.first(), chain.first(), "{function}+{off:#x}");
            if &got != chain {
                finer.push(format!(
                    "{function}+{off:#x}: {got:?} (nvdisasm shows {chain:?})"
                ));
            }
        }
        inlined += usize::from(got.len() > 1);
        deepest = deepest.max(got.len());
    }
    assert!(inlined >= 6, "{inlined} inlined instructions");
    assert!(deepest >= 3, "a chain through both inlined functions");
    println!(
        "{} instructions ({printed} with their own nvdisasm block, chains equal), {inlined} inlined, chains up to {deepest} lines; finer than nvdisasm's display: {finer:?}",
        want.len()
    );
}
