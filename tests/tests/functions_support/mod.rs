//! Helpers of the functions-as-regions tests: build the known-answer program
//! (`functions_programs/known_answer.c` with its library and its C++ part) with an engine's
//! flags, run it under `metron run --functions`, and read counts and nesting back.
#![allow(dead_code)]

use crate::c_api_support::*;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Every function of the known-answer program and its count, from the closed forms in
/// `known_answer.c` (fib: 2 * F(21) - 1).
pub const KNOWN: &[(&str, u64)] = &[
    ("fib", 21_891),
    ("leaf", 1_000_000),
    ("by_pointer", 1_000),
    ("lib_work", 500),
    ("jump_outer", 60),
    ("jump_inner", 60),
    ("exc::catcher", 40),
    ("exc::pass_through", 40),
    ("exc::thrower", 40),
    ("worker", 4),
    ("thread_leaf", 4_000),
];

/// An expression that selects exactly the functions of [`KNOWN`].
pub const SELECT_KNOWN: &str =
    "^(fib|leaf|by_pointer|lib_work|jump_outer|jump_inner|exc::.*|worker|thread_leaf)$";

fn source(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/functions_programs")
        .join(name)
}

fn cc(compiler: &str, args: &[&str], dir: &Path) {
    let out = Command::new(compiler)
        .current_dir(dir)
        .args(args)
        .output()
        .expect("run the C compiler");
    assert!(
        out.status.success(),
        "{compiler} {args:?} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Builds the known-answer program into `dir` with `flags` on every file (e.g.
/// `-finstrument-functions`); `link` are extra arguments of the final link (e.g. libmetron).
pub fn build_known_answer(dir: &Path, flags: &[&str], link: &[&str]) -> PathBuf {
    build_known_answer_with(dir, ("cc", "c++"), flags, link)
}

/// [`build_known_answer`] with another pair of C and C++ compilers (e.g. clang-14).
pub fn build_known_answer_with(
    dir: &Path,
    (c, cxx): (&str, &str),
    flags: &[&str],
    link: &[&str],
) -> PathBuf {
    let s = |n: &str| source(n).to_string_lossy().into_owned();
    let base = ["-O1", "-g"];
    let with = |extra: &[&str]| -> Vec<String> {
        base.iter()
            .chain(flags)
            .chain(extra)
            .map(|a| a.to_string())
            .collect()
    };
    let args = |v: &Vec<String>| {
        v.iter()
            .map(String::as_str)
            .collect::<Vec<_>>()
            .join("\u{1}")
    };
    let run = |compiler: &str, v: Vec<String>| {
        let joined = args(&v);
        let list: Vec<&str> = joined.split('\u{1}').collect();
        cc(compiler, &list, dir);
    };
    run(
        c,
        with(&[
            "-fPIC",
            "-shared",
            &s("known_answer_lib.c"),
            "-o",
            "libknown_answer_lib.so",
        ]),
    );
    run(
        cxx,
        with(&["-c", &s("known_answer_exc.cpp"), "-o", "exc.o"]),
    );
    run(c, with(&["-c", &s("known_answer.c"), "-o", "main.o"]));
    let mut final_link = vec![
        "main.o".to_string(),
        "exc.o".into(),
        "-L.".into(),
        "-lknown_answer_lib".into(),
        format!("-Wl,-rpath,{}", dir.display()),
        "-pthread".into(),
        "-o".into(),
        "known_answer".into(),
    ];
    final_link.extend(link.iter().map(|a| a.to_string()));
    run(cxx, final_link);
    dir.join("known_answer")
}

/// Runs `exe` under `metron run` with `flags` (before `--`); the run folder is `out/run`.
pub fn metron_run(exe: &Path, out: &Path, flags: &[&str]) -> (Output, PathBuf) {
    let folder = out.join("run");
    let output = Command::new(artifacts().metron())
        .arg("run")
        .arg("--library")
        .arg(artifacts().lib())
        .arg("--output-path")
        .arg(&folder)
        .args(flags)
        .arg("--")
        .arg(exe)
        .env_remove("METRON_OUTPUT_PATH")
        .env_remove("LD_PRELOAD")
        .output()
        .expect("run metron");
    assert_success(&output, "metron run");
    (output, folder)
}

/// Each region name's count, summed over every thread and every place in the tree.
pub fn counts_by_name(summary: &Value) -> BTreeMap<String, u64> {
    fn walk(nodes: &Value, out: &mut BTreeMap<String, u64>) {
        for n in nodes.as_array().into_iter().flatten() {
            *out.entry(n["name"].as_str().unwrap_or("?").to_string())
                .or_default() += n["count"].as_u64().unwrap_or(0);
            walk(&n["children"], out);
        }
    }
    let mut out = BTreeMap::new();
    for t in summary["threads"].as_array().into_iter().flatten() {
        walk(&t["regions"], &mut out);
    }
    out
}

/// The known answers among `counts`, and the answers, as two maps to compare.
pub fn known_vs(counts: &BTreeMap<String, u64>) -> (BTreeMap<String, u64>, BTreeMap<String, u64>) {
    let expected: BTreeMap<String, u64> = KNOWN.iter().map(|(n, c)| (n.to_string(), *c)).collect();
    let got = expected
        .keys()
        .map(|n| (n.clone(), counts.get(n).copied().unwrap_or(0)))
        .collect();
    (got, expected)
}

/// Per thread: every begin has its end (nothing open at exit, no unbalanced end, records =
/// 2 x regions), and no child's total time exceeds its parent's.
pub fn check_balance_and_nesting(folder: &Path) {
    let summary = read_json(folder, "summary.json");
    let metadata = read_json(folder, "metadata.json");
    // The C API's section exists when something called the C API (the preload does).
    let c_errors = metadata["c_api"]["errors_total"].as_u64().unwrap_or(0);
    assert_eq!(c_errors, 0, "{}", metadata["c_api"]);
    for stats in metadata["threads"].as_array().unwrap() {
        if stats["thread"]["is_metron"] == true {
            continue;
        }
        assert_eq!(stats["open_at_exit"], 0, "{stats}");
        assert_eq!(stats["unbalanced_ends"], 0, "{stats}");
        let tid = &stats["thread"]["tid"];
        let thread = summary["threads"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| &t["tid"] == tid)
            .unwrap_or_else(|| panic!("thread {tid} in summary.json"));
        fn regions(nodes: &Value) -> u64 {
            nodes
                .as_array()
                .into_iter()
                .flatten()
                .map(|n| n["count"].as_u64().unwrap() + regions(&n["children"]))
                .sum()
        }
        assert_eq!(
            stats["records_written"].as_u64().unwrap(),
            2 * regions(&thread["regions"]),
            "thread {tid}: one begin and one end record per region"
        );
        fn nested(nodes: &Value, parent_total: f64, path: &str) {
            for n in nodes.as_array().into_iter().flatten() {
                let total = n["metrics"]["wall_clock.elapsed"]["total"]
                    .as_f64()
                    .unwrap();
                let here = format!("{path}/{}", n["name"].as_str().unwrap());
                assert!(
                    total <= parent_total,
                    "{here}: {total} ns inside {parent_total} ns"
                );
                nested(&n["children"], total, &here);
            }
        }
        nested(&thread["regions"], f64::INFINITY, "");
    }
}
