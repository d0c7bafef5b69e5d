//! The README's two examples work as written: its Rust block is `examples/rust/readme.rs`
//! (which the workspace builds), run here; its C block is compiled with warnings as errors
//! against libmetron.so and run. Both runs' summaries are checked.

mod c_api_support;
use c_api_support::*;
use std::path::Path;
use std::process::Command;

/// The body of the first fenced block of `lang` in the README.
fn readme_block(lang: &str) -> String {
    let readme = std::fs::read_to_string(artifacts().root.join("README.md")).unwrap();
    let fence = format!("```{lang}\n");
    let start = readme
        .find(&fence)
        .unwrap_or_else(|| panic!("README.md has no {lang} block"))
        + fence.len();
    let len = readme[start..].find("```").expect("the block is closed");
    readme[start..start + len].to_string()
}

#[test]
fn the_readme_rust_example_is_examples_rust_readme_rs_and_records_its_regions() {
    let a = artifacts();
    let file = std::fs::read_to_string(a.root.join("examples/rust/readme.rs")).unwrap();
    let body: String = file
        .lines()
        .skip_while(|l| l.starts_with("//!") || l.is_empty())
        .map(|l| format!("{l}\n"))
        .collect();
    assert_eq!(
        body,
        readme_block("rust"),
        "the README's Rust block and examples/rust/readme.rs (below its //! header) differ: \
         change both"
    );
    let mut build = Command::new(env!("CARGO"));
    build.args(["build", "-p", "metron-examples", "--example", "readme"]);
    if a.release {
        build.arg("--release");
    }
    let out = build
        .env("CARGO_TARGET_DIR", a.target_dir())
        .current_dir(&a.root)
        .output()
        .unwrap();
    assert_success(&out, "cargo build --example readme");
    let dir = temp_dir("readme-rust");
    let out = run_in(&a.dir.join("examples/readme"), &dir, &[], &[]);
    assert_success(&out, "the README's Rust example");
    let summary = read_json(&dir.join("run"), "summary.json");
    assert_eq!(
        region_counts(&summary["merged"]),
        counts(&[
            ("phase 1", 1),
            ("phase 1/solve", 1),
            ("phase 1/solve/load", 1)
        ])
    );
    assert_eq!(summary["counters"][0]["name"], "queue_depth");
    assert_eq!(summary["counters"][0]["last"], 10.0);
}

#[test]
fn the_readme_c_example_compiles_cleanly_and_records_its_regions() {
    let dir = temp_dir("readme-c");
    let source = dir.join("readme.c");
    std::fs::write(&source, readme_block("c")).unwrap();
    let exe = compile(&source, &dir, &[]);
    let out = run_in(&exe, Path::new(&dir), &[], &[]);
    assert_success(&out, "the README's C example");
    let run = dir.join("run");
    let summary = read_json(&run, "summary.json");
    assert_eq!(
        region_counts(&summary["merged"]),
        counts(&[("solve", 1), ("solve/assemble", 1)])
    );
    assert_eq!(summary["counters"][0]["name"], "residual");
    assert_eq!(summary["marks"][0]["name"], "converged");
    let metadata = read_json(&run, "metadata.json");
    assert_eq!(
        metadata["c_api"]["errors_total"], 0,
        "{}",
        metadata["c_api"]
    );
}
