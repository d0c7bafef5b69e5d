//! The CUPTI PC Sampling layouts Metron reads and writes (`metron_gpu::pcsampling_layouts`:
//! parameter structs, `CUpti_PCSamplingData`/`PCData`, the resource-callback data) against the
//! real `cupti_pcsampling.h` and `cupti_callbacks.h`: a C program prints `offsetof`/`sizeof` and
//! the `*ParamsSize` macros. Headers as in `gpu_headers.rs` (`$METRON_CUDA_ROOT/include`,
//! `/usr/local/cuda/include`, the pip toolchain of `../shared/tools/cuda-toolchain.sh`); skips
//! with the reason when none has `cupti_pcsampling.h` or no C compiler exists.

mod header_support;
use header_support::{assert_same, layout_expr, print_values};
use std::path::PathBuf;

fn include_dir() -> Option<PathBuf> {
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
        candidates.push(cache.join("metron-cupti/nvidia/cu13/include"));
    }
    candidates
        .into_iter()
        .find(|d| d.join("cupti_pcsampling.h").is_file() && d.join("cuda.h").is_file())
}

#[test]
fn pc_sampling_layouts_match_cupti_headers() {
    let Some(include) = include_dir() else {
        println!(
            "SKIP: no cupti_pcsampling.h with cuda.h (set METRON_CUDA_ROOT, install CUDA, or run \
             ../shared/tools/cuda-toolchain.sh)"
        );
        return;
    };
    let layouts = metron_gpu::pcsampling_layouts();
    // `PARAMS_SIZE X` is cupti_pcsampling.h's `XSize` macro (CUPTI_PCSAMPLING_STRUCT_SIZE).
    let exprs: Vec<String> = layouts
        .iter()
        .map(|(n, _)| match n.strip_prefix("PARAMS_SIZE ") {
            Some(ty) => format!("{ty}Size"),
            None => layout_expr(n),
        })
        .collect();
    let prelude = "#include <cupti.h>\n#include <cupti_pcsampling.h>\n";
    let values = match print_values("pcsampling", prelude, &exprs, &include, false) {
        Ok(v) => v,
        Err(why) => {
            println!("SKIP: {why}");
            return;
        }
    };
    let ours: Vec<(&str, u64)> = layouts.iter().map(|(n, v)| (*n, *v as u64)).collect();
    assert_same(&ours, &values, "cupti_pcsampling.h");
    println!(
        "checked {} offsets and sizes against {}",
        layouts.len(),
        include.display()
    );
}
