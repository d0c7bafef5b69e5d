//! The CUPTI record layouts Metron reads (`metron_gpu::record_layouts`) against the real
//! headers: a C program compiled with `cupti.h` prints `offsetof`/`sizeof` of the same fields.
//! Headers: `$METRON_CUDA_ROOT/include`, `/usr/local/cuda/include`, the pip toolchain of
//! `../shared/tools/cuda-toolchain.sh` (`~/.cache/metron-cuda/nvidia/cu13/include`), or the
//! CUPTI headers `scripts/install-deps.sh` unpacks (`~/.cache/metron-cupti`). Skips
//! with the reason when none has `cupti.h` or no C compiler exists.

use std::path::PathBuf;
use std::process::Command;

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
    check_layouts("records", &metron_gpu::record_layouts(), &["cupti.h"]);
}

/// The Range Profiler parameter structs (GPU counters) against the profiler headers,
/// `*_STRUCT_SIZE` macros included.
#[test]
fn range_profiler_layouts_match_cupti_headers() {
    check_layouts(
        "range_profiler",
        &metron_gpu::profiler_layouts(),
        &[
            "cupti.h",
            "cupti_target.h",
            "cupti_profiler_target.h",
            "cupti_profiler_host.h",
            "cupti_range_profiler.h",
        ],
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
    let mut c = String::from("#include <stdio.h>\n#include <stddef.h>\n");
    for h in headers {
        c.push_str(&format!("#include <{h}>\n"));
    }
    c.push_str("int main(void){\n");
    for (name, _) in layouts {
        if let Some(ty) = name.strip_prefix("sizeof ") {
            c.push_str(&format!("printf(\"%zu\\n\", sizeof({ty}));\n"));
        } else if let Some(ty) = name.strip_prefix("STRUCT_SIZE ") {
            c.push_str(&format!(
                "printf(\"%zu\\n\", (size_t)({ty}_STRUCT_SIZE));\n"
            ));
        } else {
            let (ty, field) = name.split_once('.').expect("Struct.field");
            c.push_str(&format!("printf(\"%zu\\n\", offsetof({ty}, {field}));\n"));
        }
    }
    c.push_str("return 0;}\n");
    let dir = std::env::temp_dir().join(format!("metron-gpu-headers-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // cupti_profiler_host.h includes <string>: the profiler headers need C++.
    let cpp = headers.contains(&"cupti_profiler_host.h");
    let src = dir.join(if cpp { "layouts.cpp" } else { "layouts.c" });
    let exe = dir.join("layouts");
    std::fs::write(&src, c).unwrap();
    let cc = if cpp {
        std::env::var("CXX").unwrap_or_else(|_| "c++".into())
    } else {
        std::env::var("CC").unwrap_or_else(|_| "cc".into())
    };
    let Ok(out) = Command::new(&cc)
        .arg("-I")
        .arg(&include)
        .arg(&src)
        .arg("-o")
        .arg(&exe)
        .output()
    else {
        println!("SKIP: no C/C++ compiler ({cc})");
        return;
    };
    assert!(
        out.status.success(),
        "compiling against {}: {}",
        include.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let run = Command::new(&exe).output().unwrap();
    let text = String::from_utf8_lossy(&run.stdout);
    let values: Vec<usize> = text.lines().map(|l| l.trim().parse().unwrap()).collect();
    assert_eq!(values.len(), layouts.len());
    for ((name, ours), theirs) in layouts.iter().zip(values) {
        assert_eq!(
            *ours, theirs,
            "{name}: Metron reads {ours}, cupti.h says {theirs}"
        );
    }
    println!(
        "checked {} offsets and sizes against {}",
        layouts.len(),
        include.display()
    );
    let _ = std::fs::remove_dir_all(&dir);
}
