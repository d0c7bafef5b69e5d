//! The CUPTI layouts Metron reads and writes against the real headers: a C program compiled
//! with them prints `offsetof`/`sizeof` and the struct-size macros of the same fields, for the
//! activity records (`metron_gpu_nvidia::record_layouts`, `cupti.h`), the Range Profiler structs and
//! the PC Sampling API's (`metron_gpu_nvidia::pcsampling_layouts`: parameter structs,
//! `CUpti_PCSamplingData`/`PCData`, the resource-callback data; `cupti_pcsampling.h`).
//! Headers: `$METRON_CUDA_ROOT/include`, `/usr/local/cuda/include`, the pip toolchain of
//! `../shared/tools/cuda-toolchain.sh` (`~/.cache/metron-cuda/nvidia/cu13/include`), or the
//! CUPTI headers `scripts/install-deps.sh` unpacks (`~/.cache/metron-cupti`). Skips
//! with the reason when none has `cupti.h` or no C compiler exists.

mod header_support;
use header_support::{assert_same, layout_expr, print_values};
use std::path::PathBuf;

fn cupti_include() -> Option<PathBuf> {
    let mut candidates: Vec<PathBuf> = Vec::new();
    if let Some(root) = std::env::var_os("METRON_CUDA_ROOT") {
        candidates.push(PathBuf::from(root).join("include"));
    }
    candidates.push("/usr/local/cuda/include".into());
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")));
    if let Some(cache) = cache {
        candidates.push(cache.join("metron-cuda/nvidia/cu13/include"));
        // Headers only, from scripts/install-deps.sh.
        candidates.push(cache.join("metron-cupti/nvidia/cu13/include"));
    }
    candidates.into_iter().find(|d| d.join("cupti.h").is_file())
}

#[test]
fn record_layouts_match_cupti_headers() {
    check_layouts(
        "records",
        &metron_gpu_nvidia::record_layouts(),
        &["cupti.h"],
    );
}

/// The Range Profiler parameter structs (GPU counters) against the profiler headers,
/// `*_STRUCT_SIZE` macros included.
#[test]
fn range_profiler_layouts_match_cupti_headers() {
    check_layouts(
        "range_profiler",
        &metron_gpu_nvidia::profiler_layouts(),
        &[
            "cupti.h",
            "cupti_target.h",
            "cupti_profiler_target.h",
            "cupti_profiler_host.h",
            "cupti_range_profiler.h",
        ],
    );
}

/// The PC Sampling API's structs (`cupti_pcsampling.h`, and `cupti_callbacks.h` through
/// `cupti.h`), its `*ParamsSize` macros included.
#[test]
fn pc_sampling_layouts_match_cupti_headers() {
    check_layouts(
        "pcsampling",
        &metron_gpu_nvidia::pcsampling_layouts(),
        &["cupti.h", "cupti_pcsampling.h"],
    );
}

/// Compiles a C program printing each `offsetof`/`sizeof`/`*_STRUCT_SIZE` of `layouts` with
/// `headers` and compares with Metron's values.
fn check_layouts(tag: &str, layouts: &[(&'static str, usize)], headers: &[&'static str]) {
    let Some(include) = cupti_include() else {
        println!(
            "SKIP: no cupti.h (set METRON_CUDA_ROOT, install CUDA, or run \
             ../shared/tools/cuda-toolchain.sh)"
        );
        return;
    };
    if let Some(missing) = headers.iter().find(|h| !include.join(h).is_file()) {
        println!("SKIP: {missing} is not in {}", include.display());
        return;
    }
    let prelude: String = headers
        .iter()
        .map(|h| format!("#include <{h}>\n"))
        .collect();
    let exprs: Vec<String> = layouts.iter().map(|(n, _)| layout_expr(n)).collect();
    // cupti_profiler_host.h includes <string>: the profiler headers need C++.
    let cpp = headers.contains(&"cupti_profiler_host.h");
    let values = match print_values(tag, &prelude, &exprs, &include, cpp) {
        Ok(v) => v,
        Err(why) => {
            println!("SKIP: {why}");
            return;
        }
    };
    let ours: Vec<(&str, u64)> = layouts.iter().map(|(n, v)| (*n, *v as u64)).collect();
    assert_same(&ours, &values, &headers.join(", "));
    println!(
        "checked {} offsets and sizes against {}",
        layouts.len(),
        include.display()
    );
}
