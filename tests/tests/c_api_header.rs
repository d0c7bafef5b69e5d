//! include/metron/metron.h is hand-written: these tests keep it equal to what libmetron.so
//! exports, check its constants and layouts against the library, and check that it compiles
//! cleanly as C99 and C++17 and to nothing under METRON_DISABLE.

mod c_api_support;
use c_api_support::*;
use std::collections::BTreeSet;
use std::process::Command;

fn header_text() -> String {
    std::fs::read_to_string(artifacts().include.join("metron/metron.h")).unwrap()
}

/// Functions the header declares (before its macro section).
fn declared() -> BTreeSet<String> {
    let text = header_text();
    let decls = text.split("/* ---- macros").next().unwrap();
    let mut names = BTreeSet::new();
    for line in decls.lines() {
        let line = line.trim();
        if line.starts_with('#') || line.starts_with("/*") || line.starts_with('*') {
            continue;
        }
        if !line.ends_with(");") {
            continue;
        }
        // Every identifier `metron_*` directly followed by `(` is a declared function.
        for (at, _) in line.match_indices("metron_") {
            let rest = &line[at..];
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if rest[name.len()..].starts_with('(') {
                names.insert(name);
            }
        }
    }
    names
}

fn nm(args: &[&str], file: &std::path::Path) -> String {
    let out = Command::new("nm")
        .args(args)
        .arg(file)
        .output()
        .expect("nm (binutils) is installed");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn the_header_declares_exactly_the_functions_the_library_exports() {
    let exported: BTreeSet<String> = nm(&["-D", "--defined-only"], &artifacts().lib())
        .lines()
        .filter_map(|l| l.split_whitespace().last())
        .filter(|s| s.starts_with("metron_"))
        .map(String::from)
        .collect();
    let declared = declared();
    assert!(declared.len() >= 25, "{declared:?}");
    assert_eq!(
        declared, exported,
        "include/metron/metron.h and libmetron.so's metron_* exports differ"
    );
}

#[test]
fn the_header_versions_match_the_crate_and_the_library() {
    let text = header_text();
    let version = format!(
        "#define METRON_VERSION_STRING \"{}\"",
        env!("CARGO_PKG_VERSION")
    );
    assert!(text.contains(&version), "header version is not {version}");
    let dir = temp_dir("header-consts");
    let source = dir.join("consts.c");
    std::fs::write(
        &source,
        r#"#include <metron/metron.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
int main(void) {
    int bad = 0;
    metron_status s;
    bad |= metron_abi_version() != METRON_ABI_VERSION;
    bad |= strcmp(metron_version(), METRON_VERSION_STRING) != 0;
    bad |= sizeof(metron_init_args) != 16;
    bad |= sizeof(metron_annotation) != 24 || offsetof(metron_annotation, value) != 16;
    bad |= offsetof(metron_init_args, output_path) != 8;
    for (s = METRON_OK; s <= METRON_ERROR_TOO_DEEP; s++)
        bad |= strcmp(metron_status_string(s), metron_status_string(-1)) == 0;
    bad |= strcmp(metron_status_string(METRON_ERROR_TOO_DEEP + 1), metron_status_string(-1)) != 0;
    bad |= METRON_OK != 0 || METRON_ERROR_NULL_ARGUMENT != 1 || METRON_ERROR_INVALID_ARGUMENT != 2
        || METRON_ERROR_NO_OPEN_REGION != 3 || METRON_ERROR_MISMATCHED_END != 4
        || METRON_ERROR_DISABLED != 5 || METRON_ERROR_ALREADY_STARTED != 6
        || METRON_ERROR_REENTRANT != 7 || METRON_ERROR_INTERNAL != 8
        || METRON_ERROR_TOO_DEEP != 9;
    bad |= METRON_ANNOTATION_STRING != 1 || METRON_ANNOTATION_POINTER != 5;
    printf("%d\n", bad);
    return bad;
}
"#,
    )
    .unwrap();
    let exe = compile(&source, &dir, &[]);
    let out = run_in(&exe, &dir, &[], &[("METRON_ENABLED", "0")]);
    assert_success(&out, "consts.c");
}

#[test]
fn the_header_compiles_as_c99_and_cpp17_with_every_warning_an_error() {
    let dir = temp_dir("header-compile");
    let include = artifacts().include.clone();
    for (compiler, std, file) in [
        ("cc", "-std=c99", "h.c"),
        ("cc", "-std=c11", "h.c"),
        ("c++", "-std=c++17", "h.cpp"),
        ("c++", "-std=c++11", "h.cpp"),
    ] {
        let source = dir.join(file);
        std::fs::write(&source, "#include <metron/metron.h>\nint main(void) { return metron_abi_version() == METRON_ABI_VERSION ? 0 : 1; }\n").unwrap();
        let out = Command::new(compiler)
            .args([
                std,
                "-Wall",
                "-Wextra",
                "-Werror",
                "-pedantic",
                "-Wconversion",
                "-Wshadow",
                "-c",
            ])
            .arg("-I")
            .arg(&include)
            .arg(&source)
            .arg("-o")
            .arg(dir.join(format!("{file}.o")))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{compiler} {std}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn under_metron_disable_the_examples_reference_no_metron_function() {
    let dir = temp_dir("header-disable");
    let root = &artifacts().root;
    for (compiler, std, source) in [
        ("cc", "-std=c99", root.join("examples/c/main.c")),
        ("c++", "-std=c++17", root.join("examples/cpp/main.cpp")),
    ] {
        let object = dir.join("disabled.o");
        let out = Command::new(compiler)
            .args([
                std,
                "-DMETRON_DISABLE",
                "-Wall",
                "-Wextra",
                "-Werror",
                "-pedantic",
                "-O2",
                "-c",
            ])
            .arg("-I")
            .arg(&artifacts().include)
            .arg(&source)
            .arg("-o")
            .arg(&object)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}: {}",
            source.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        let undefined = nm(&["-u"], &object);
        assert!(
            !undefined.contains("metron_"),
            "{} still calls Metron under METRON_DISABLE:\n{undefined}",
            source.display()
        );
    }
}
