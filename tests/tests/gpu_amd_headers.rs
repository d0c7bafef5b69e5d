//! The HSA layouts and constants Metron assumes (`metron_gpu_amd::layouts`, `constants`) against
//! the real ROCm headers: a C++ program compiled with `hsa_api_trace.h` (which is C++:
//! `decltype`), `hsa.h`, `hsa_ext_amd.h`, `hsa_ven_amd_loader.h` and `hsa_ven_amd_aqlprofile.h` prints every `offsetof`,
//! `sizeof` and enum value, and each must equal Metron's. Headers: `$METRON_HSA_INCLUDE`, else
//! `/opt/rocm/include/hsa`, else `/usr/include/hsa` (Debian's `libhsa-runtime-dev`, which
//! `scripts/install-deps.sh` installs). Skips with the reason when none is there.

mod header_support;
use header_support::{assert_same, layout_expr, print_values};
use std::path::PathBuf;

fn hsa_include() -> Option<PathBuf> {
    let mut candidates: Vec<PathBuf> = Vec::new();
    if let Some(dir) = std::env::var_os("METRON_HSA_INCLUDE") {
        candidates.push(dir.into());
    }
    candidates.push("/opt/rocm/include/hsa".into());
    candidates.push("/usr/include/hsa".into());
    candidates
        .into_iter()
        .find(|d| d.join("hsa_api_trace.h").is_file())
}

#[test]
fn hsa_layouts_and_constants_match_the_rocm_headers() {
    let Some(include) = hsa_include() else {
        println!(
            "SKIP: no hsa_api_trace.h (install Debian's libhsa-runtime-dev with \
             scripts/install-deps.sh, or set METRON_HSA_INCLUDE)"
        );
        return;
    };
    let layouts = metron_gpu_amd::layouts();
    let constants = metron_gpu_amd::constants();
    let mut exprs: Vec<String> = layouts.iter().map(|(n, _)| layout_expr(n)).collect();
    exprs.extend(constants.iter().map(|(n, _)| n.to_string()));
    // Debian's hsa_api_trace.h includes "inc/hsa_ext_amd.h" unless AMD_INTERNAL_BUILD is set.
    let prelude = "#define AMD_INTERNAL_BUILD 1\n#include <hsa.h>\n#include <hsa_ext_amd.h>\n\
                   #include <hsa_api_trace.h>\n#include <hsa_ven_amd_loader.h>\n\
                   #include <hsa_ven_amd_aqlprofile.h>";
    let values = match print_values("hsa", prelude, &exprs, &include, true) {
        Ok(v) => v,
        Err(why) => {
            println!("SKIP: {why}");
            return;
        }
    };
    let ours: Vec<(&str, u64)> = layouts
        .iter()
        .map(|(n, v)| (*n, *v as u64))
        .chain(constants.iter().copied())
        .collect();
    assert_same(&ours, &values, "the HSA headers");
    println!(
        "checked {} offsets/sizes and {} constants against {}",
        layouts.len(),
        constants.len(),
        include.display()
    );
}
