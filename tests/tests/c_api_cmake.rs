//! The installed package: scripts/install.sh into a temporary prefix (no root), then the C
//! and C++ examples built with CMake through find_package(metron) and with pkg-config, with
//! -Wall -Wextra -Werror, run, and their summaries checked.

mod c_api_support;
use c_api_support::*;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The prefix, installed once per test binary.
fn prefix() -> &'static PathBuf {
    static PREFIX: OnceLock<PathBuf> = OnceLock::new();
    PREFIX.get_or_init(|| {
        let a = artifacts();
        let prefix = temp_dir("prefix");
        let out = Command::new(a.root.join("scripts/install.sh"))
            .arg(&prefix)
            .env("CARGO_TARGET_DIR", a.target_dir())
            .output()
            .expect("run scripts/install.sh");
        assert_success(&out, "scripts/install.sh");
        for file in [
            "bin/metron",
            "lib/libmetron.so",
            "lib/libmetron.a",
            "include/metron/metron.h",
            "lib/cmake/metron/metron-config.cmake",
            "lib/cmake/metron/metron-config-version.cmake",
            "lib/pkgconfig/metron.pc",
            "lib/pkgconfig/metron-static.pc",
        ] {
            assert!(prefix.join(file).is_file(), "{file} not installed");
        }
        prefix
    })
}

fn cmake_build(example: &str) -> PathBuf {
    let a = artifacts();
    let build = temp_dir(&format!("cmake-{example}"));
    let configure = Command::new("cmake")
        .arg("-S")
        .arg(a.root.join("examples").join(example))
        .arg("-B")
        .arg(&build)
        .arg(format!("-DCMAKE_PREFIX_PATH={}", prefix().display()))
        .arg("-DCMAKE_BUILD_TYPE=Release")
        .output()
        .expect("cmake is installed (scripts/install-deps.sh)");
    assert_success(
        &configure,
        &format!("cmake configure of examples/{example}"),
    );
    let compile = Command::new("cmake")
        .arg("--build")
        .arg(&build)
        .arg("-j2")
        .output()
        .unwrap();
    assert_success(&compile, &format!("cmake --build of examples/{example}"));
    build
}

fn run_example(exe: &Path) -> (PathBuf, Value) {
    let dir = temp_dir("example-run");
    let out = run_in(exe, &dir, &[], &[]);
    assert_success(&out, &exe.display().to_string());
    let run = dir.join("run");
    let summary = read_json(&run, "summary.json");
    (run, summary)
}

fn check_c_summary(summary: &Value) {
    assert_eq!(
        region_counts(&summary["merged"]),
        counts(&[
            ("setup", 1),
            ("iteration", 10),
            ("iteration/solve", 10),
            ("iteration/solve/kernel", 10),
            ("worker", 4),
            ("worker/chunk", 100),
        ])
    );
    assert_eq!(summary["counters"][0]["name"], "residual");
    assert_eq!(summary["counters"][0]["count"], 10);
    assert_eq!(summary["marks"][0]["name"], "converged");
    assert_eq!(summary["marks"][0]["count"], 1);
    let workers = summary["threads"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["name"].as_str().unwrap().starts_with("worker-"))
        .count();
    assert_eq!(workers, 4);
}

#[test]
fn the_c_example_builds_with_find_package_shared_and_static_and_gives_its_summary() {
    let build = cmake_build("c");
    let (run, summary) = run_example(&build.join("c_example"));
    check_c_summary(&summary);
    assert_eq!(read_json(&run, "metadata.json")["c_api"]["errors_total"], 0);
    let (_, summary) = run_example(&build.join("c_example_static"));
    check_c_summary(&summary);

    // METRON_DISABLE: no Metron call left, no output.
    let dir = temp_dir("example-disabled");
    let out = run_in(&build.join("c_example_disabled"), &dir, &[], &[]);
    assert_success(&out, "c_example_disabled");
    assert!(!dir.join("run").exists());
    let nm = Command::new("nm")
        .arg("-u")
        .arg(build.join("c_example_disabled"))
        .output()
        .unwrap();
    assert!(!String::from_utf8_lossy(&nm.stdout).contains("metron_"));
}

#[test]
fn the_cpp_example_builds_with_find_package_and_gives_its_summary() {
    let build = cmake_build("cpp");
    let (_, summary) = run_example(&build.join("cpp_example"));
    assert_eq!(
        region_counts(&summary["merged"]),
        counts(&[
            ("compute", 1),
            ("compute/step", 5),
            ("thread_work", 2),
            ("thread_work/batch", 2),
            ("thread_work/batch/step", 6),
        ])
    );
    assert_eq!(summary["counters"][0]["name"], "acc");
    assert_eq!(summary["counters"][0]["count"], 11);
    assert_eq!(summary["marks"][0]["name"], "done");
    let dir = temp_dir("cpp-disabled");
    let out = run_in(&build.join("cpp_example_disabled"), &dir, &[], &[]);
    assert_success(&out, "cpp_example_disabled");
    assert!(!dir.join("run").exists());
}

#[test]
fn pkg_config_gives_flags_that_build_the_c_example_shared_and_static() {
    let a = artifacts();
    let dir = temp_dir("pkg-config");
    for (package, exe_name) in [("metron", "pc_shared"), ("metron-static", "pc_static")] {
        let flags = Command::new("pkg-config")
            .args(["--cflags", "--libs", package])
            .env("PKG_CONFIG_PATH", prefix().join("lib/pkgconfig"))
            .output()
            .expect("pkg-config is installed (scripts/install-deps.sh)");
        assert_success(&flags, &format!("pkg-config {package}"));
        let flags = String::from_utf8_lossy(&flags.stdout).into_owned();
        let exe = dir.join(exe_name);
        let out = Command::new("cc")
            .args([
                "-std=c99",
                "-Wall",
                "-Wextra",
                "-Werror",
                "-pedantic",
                "-pthread",
            ])
            .arg(a.root.join("examples/c/main.c"))
            .arg("-o")
            .arg(&exe)
            .args(flags.split_whitespace())
            .output()
            .unwrap();
        assert_success(&out, &format!("cc with pkg-config {package}"));
        let (_, summary) = run_example(&exe);
        check_c_summary(&summary);
    }
}

#[test]
fn the_installed_metron_run_on_a_metron_linked_program_writes_one_run_folder() {
    let build = cmake_build("c");
    let dir = temp_dir("installed-run");
    let out = Command::new(prefix().join("bin/metron"))
        .args(["run", "--output-path"])
        .arg(dir.join("%exe%-%pid%"))
        .arg("--")
        .arg(build.join("c_example"))
        .env("METRON_TRACE", "false")
        .output()
        .unwrap();
    assert_success(&out, "metron run c_example");
    let folders = run_folders(&dir);
    assert_eq!(folders.len(), 1, "{folders:?}");
    let summary = read_json(&folders[0], "summary.json");
    let regions = region_counts(&summary["merged"]);
    assert_eq!(
        regions.get("c_example"),
        Some(&1),
        "the program's region: {regions:?}"
    );
    assert_eq!(regions.get("c_example/iteration"), Some(&10), "{regions:?}");
    assert_eq!(regions.get("worker"), Some(&4), "{regions:?}");
}

/// CRC-32 (IEEE, reflected), the checksum a `.gnu_debuglink` section carries.
fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in bytes {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ 0xEDB8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

#[test]
fn installed_binaries_are_stripped_and_their_debug_files_resolve() {
    use object::{Object, ObjectSection};
    let prefix = prefix();
    let built = artifacts().target_dir().join("release");
    for (rel, name) in [
        ("bin/metron", "metron"),
        ("lib/libmetron.so", "libmetron.so"),
    ] {
        let installed = prefix.join(rel);
        let data = std::fs::read(&installed).unwrap();
        let built_len = std::fs::metadata(built.join(name)).unwrap().len();
        eprintln!(
            "{rel}: {} bytes installed, {built_len} bytes built",
            data.len()
        );
        assert!(
            (data.len() as u64) < built_len / 2,
            "{rel} is not stripped: {} bytes installed, {built_len} built",
            data.len()
        );
        let file = object::File::parse(&*data).unwrap();
        assert!(
            file.section_by_name(".debug_info").is_none(),
            "{rel} keeps .debug_info"
        );
        assert!(
            file.section_by_name(".symtab").is_some(),
            "{rel} lost its symbol table (backtraces need it)"
        );
        // .gnu_debuglink: the debug file's name, NUL-padded to 4 bytes, then its CRC-32.
        let link = file
            .section_by_name(".gnu_debuglink")
            .unwrap_or_else(|| panic!("{rel} has no .gnu_debuglink"))
            .data()
            .unwrap()
            .to_vec();
        let end = link.iter().position(|&b| b == 0).unwrap();
        let link_name = std::str::from_utf8(&link[..end]).unwrap();
        assert_eq!(link_name, format!("{name}.debug"));
        let crc_at = (end + 4) & !3;
        let crc = u32::from_le_bytes(link[crc_at..crc_at + 4].try_into().unwrap());
        let debug_path = prefix.join("lib/debug").join(format!("{rel}.debug"));
        let debug =
            std::fs::read(&debug_path).unwrap_or_else(|e| panic!("{}: {e}", debug_path.display()));
        assert_eq!(
            crc32(&debug),
            crc,
            "the CRC in {rel}'s debug link does not match {}",
            debug_path.display()
        );
        let debug_file = object::File::parse(&*debug).unwrap();
        assert!(
            debug_file
                .section_by_name(".debug_info")
                .is_some_and(|s| s.size() > 0),
            "{} has no DWARF",
            debug_path.display()
        );
        // The build-id link, which gdb follows from its debug-file-directory.
        let id = file.build_id().unwrap().expect("a build id");
        let hex: String = id.iter().map(|b| format!("{b:02x}")).collect();
        let by_id = prefix
            .join("lib/debug/.build-id")
            .join(&hex[..2])
            .join(format!("{}.debug", &hex[2..]));
        assert_eq!(
            std::fs::canonicalize(&by_id).unwrap_or_else(|e| panic!("{}: {e}", by_id.display())),
            std::fs::canonicalize(&debug_path).unwrap()
        );
        assert_eq!(
            debug_file.build_id().unwrap(),
            Some(id),
            "the debug file is another build's"
        );
    }
    let a_len = std::fs::metadata(prefix.join("lib/libmetron.a"))
        .unwrap()
        .len();
    let built_a = std::fs::metadata(built.join("libmetron.a")).unwrap().len();
    assert!(
        a_len < built_a,
        "libmetron.a: {a_len} installed, {built_a} built"
    );
    // An independent reader: gdb finds the source line of a C API function through the
    // debug-file directory.
    let Ok(gdb) = Command::new("gdb")
        .arg("-batch")
        .arg("-iex")
        .arg(format!(
            "set debug-file-directory {}",
            prefix.join("lib/debug").display()
        ))
        .arg("-ex")
        .arg("info line metron_region_begin")
        .arg(prefix.join("lib/libmetron.so"))
        .output()
    else {
        eprintln!("gdb is not installed: the debug files were checked without it");
        return;
    };
    let text = String::from_utf8_lossy(&gdb.stdout);
    assert!(
        text.contains("Line ") && text.contains(".rs\""),
        "gdb found no line for metron_region_begin in the installed libmetron.so: {text}{}",
        String::from_utf8_lossy(&gdb.stderr)
    );
}
