//! The HSA layouts and constants Metron assumes (`metron_gpu_amd::layouts`, `constants`) against
//! the real ROCm headers: a C++ program compiled with `hsa_api_trace.h` (which is C++:
//! `decltype`), `hsa.h`, `hsa_ext_amd.h`, `hsa_ven_amd_loader.h` and `hsa_ven_amd_aqlprofile.h` prints every `offsetof`,
//! `sizeof` and enum value, and each must equal Metron's. Headers: `$METRON_HSA_INCLUDE`, else
//! `/opt/rocm/include/hsa`, else `/usr/include/hsa` (Debian's `libhsa-runtime-dev`, which
//! `scripts/install-deps.sh` installs). Skips with the reason when none is there.

use std::path::PathBuf;
use std::process::Command;

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
    // Debian's hsa_api_trace.h includes "inc/hsa_ext_amd.h" unless AMD_INTERNAL_BUILD is set.
    let mut c = String::from(
        "#define AMD_INTERNAL_BUILD 1\n#include <stdio.h>\n#include <stddef.h>\n\
         #include <hsa.h>\n#include <hsa_ext_amd.h>\n#include <hsa_api_trace.h>\n\
         #include <hsa_ven_amd_loader.h>\n#include <hsa_ven_amd_aqlprofile.h>\nint main(void){\n",
    );
    for (name, _) in &layouts {
        if let Some(ty) = name.strip_prefix("sizeof ") {
            c.push_str(&format!("printf(\"%zu\\n\", sizeof({ty}));\n"));
        } else {
            let (ty, field) = name.split_once('.').expect("Struct.field");
            c.push_str(&format!("printf(\"%zu\\n\", offsetof({ty}, {field}));\n"));
        }
    }
    for (name, _) in &constants {
        c.push_str(&format!(
            "printf(\"%llu\\n\", (unsigned long long)({name}));\n"
        ));
    }
    c.push_str("return 0;}\n");
    let dir = std::env::temp_dir().join(format!("metron-hsa-headers-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let src = dir.join("layouts.cpp");
    let exe = dir.join("layouts");
    std::fs::write(&src, c).unwrap();
    let cxx = std::env::var("CXX").unwrap_or_else(|_| "c++".into());
    let Ok(out) = Command::new(&cxx)
        .arg("-I")
        .arg(&include)
        .arg(&src)
        .arg("-o")
        .arg(&exe)
        .output()
    else {
        println!("SKIP: no C++ compiler ({cxx})");
        return;
    };
    assert!(
        out.status.success(),
        "compiling against {}: {}",
        include.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let run = Command::new(&exe).output().unwrap();
    let values: Vec<u64> = String::from_utf8_lossy(&run.stdout)
        .lines()
        .map(|l| l.trim().parse().unwrap())
        .collect();
    assert_eq!(values.len(), layouts.len() + constants.len());
    let ours = layouts
        .iter()
        .map(|(n, v)| (*n, *v as u64))
        .chain(constants.iter().copied());
    for ((name, ours), theirs) in ours.zip(values) {
        assert_eq!(
            ours, theirs,
            "{name}: Metron assumes {ours}, the headers say {theirs}"
        );
    }
    println!(
        "checked {} offsets/sizes and {} constants against {}",
        layouts.len(),
        constants.len(),
        include.display()
    );
    let _ = std::fs::remove_dir_all(&dir);
}
