//! The id API of the C API (`metron_region_id`, `metron_region_begin_id`,
//! `metron_region_end_id`, `METRON_REGION_ID`, C++ `METRON_SCOPE`): the same summary as by
//! name, misuse by id is an error code that is counted and records nothing, and the macros
//! compile to nothing under METRON_DISABLE.

mod c_api_support;
use c_api_support::*;
use std::process::Command;

#[test]
fn regions_by_id_give_the_same_summary_as_by_name_and_misuse_is_counted() {
    let dir = temp_dir("ids");
    let exe = compile(&program("ids.c"), &dir, &[]);
    let by_id_dir = dir.join("by-id");
    let by_name_dir = dir.join("by-name");
    let out = run_in(&exe, &by_id_dir, &[], &[]);
    assert_success(&out, "ids.c");
    let out_by_name = run_in(&exe, &by_name_dir, &["by-name"], &[]);
    assert_success(&out_by_name, "ids.c by-name");

    let stdout = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert!(
        lines[0].starts_with("metron_region_end_id(")
            && lines[0].ends_with(
                " = \"outer\"): the innermost open region on this thread is \"kept\", begun with metron_region_begin_id; nothing was ended"
            ),
        "{}",
        lines[0]
    );
    assert_eq!(
        lines[1],
        "metron_region_end(\"outer\"): the innermost open region on this thread is \"kept\", begun with metron_region_begin_id; nothing was ended"
    );

    let expected = counts(&[
        ("outer", 10),
        ("outer/inner", 10),
        ("mixed", 2),
        ("kept", 1),
    ]);
    let summary = read_json(&by_id_dir.join("run"), "summary.json");
    assert_eq!(region_counts(&summary["merged"]), expected);
    let summary_by_name = read_json(&by_name_dir.join("run"), "summary.json");
    assert_eq!(region_counts(&summary_by_name["merged"]), expected);

    let metadata = read_json(&by_id_dir.join("run"), "metadata.json");
    let errors = &metadata["c_api"]["errors"];
    assert_eq!(errors["null_argument"], 1, "{errors}");
    assert_eq!(errors["invalid_argument"], 3, "{errors}");
    assert_eq!(errors["mismatched_end"], 2, "{errors}");
    assert_eq!(errors["no_open_region"], 1, "{errors}");
    assert_eq!(errors["internal"], 0, "{errors}");
    assert_eq!(metadata["c_api"]["errors_total"], 7);
    for t in metadata["threads"].as_array().unwrap() {
        assert_eq!(t["unbalanced_ends"], 0, "nothing reached the trace: {t}");
        assert_eq!(t["open_at_exit"], 0, "{t}");
        assert_eq!(t["malformed"], 0, "{t}");
    }
    let metadata_by_name = read_json(&by_name_dir.join("run"), "metadata.json");
    assert_eq!(metadata_by_name["c_api"]["errors_total"], 0);
}

#[test]
fn cpp_metron_scope_uses_ids_and_nests_across_threads() {
    let dir = temp_dir("ids-cpp");
    let source = dir.join("scopes.cpp");
    std::fs::write(
        &source,
        r#"#include <metron/metron.h>
#include <thread>
#include <vector>
static void leaf() { METRON_FUNCTION(); }
static void work() {
    for (int i = 0; i < 100; i++) {
        METRON_SCOPE("step");
        leaf();
    }
}
int main() {
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; t++) threads.emplace_back(work);
    for (auto& t : threads) t.join();
    { ::metron::Scope by_name("by_name"); }
    return 0;
}
"#,
    )
    .unwrap();
    let exe = compile(&source, &dir, &[]);
    let out = run_in(&exe, &dir, &[], &[]);
    assert_success(&out, "scopes.cpp");
    let run = dir.join("run");
    let summary = read_json(&run, "summary.json");
    assert_eq!(
        region_counts(&summary["merged"]),
        counts(&[("step", 400), ("step/leaf", 400), ("by_name", 1)])
    );
    let metadata = read_json(&run, "metadata.json");
    assert_eq!(
        metadata["c_api"]["errors_total"], 0,
        "{}",
        metadata["c_api"]
    );
}

#[test]
fn the_id_macros_compile_to_nothing_under_metron_disable() {
    let dir = temp_dir("ids-disable");
    let c = dir.join("ids_disabled.c");
    std::fs::write(
        &c,
        r#"#include <metron/metron.h>
int work(int n) {
    int i, sum = 0;
    for (i = 0; i < n; i++) {
        METRON_REGION_ID(step, "step");
        METRON_REGION_BEGIN_ID(step);
        sum += i;
        METRON_REGION_END_ID(step);
    }
    return sum;
}
"#,
    )
    .unwrap();
    let cpp = dir.join("ids_disabled.cpp");
    std::fs::write(
        &cpp,
        r#"#include <metron/metron.h>
int work(int n) {
    METRON_FUNCTION();
    int sum = 0;
    for (int i = 0; i < n; i++) {
        METRON_SCOPE("step");
        sum += i;
    }
    return sum;
}
"#,
    )
    .unwrap();
    for (compiler, std, source) in [("cc", "-std=c99", &c), ("c++", "-std=c++11", &cpp)] {
        for disable in [true, false] {
            let object = dir.join("ids.o");
            let mut cmd = Command::new(compiler);
            cmd.args([
                std,
                "-Wall",
                "-Wextra",
                "-Werror",
                "-pedantic",
                "-Wshadow",
                "-O2",
                "-c",
            ]);
            if disable {
                cmd.arg("-DMETRON_DISABLE");
            }
            let out = cmd
                .arg("-I")
                .arg(&artifacts().include)
                .arg(source)
                .arg("-o")
                .arg(&object)
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "{compiler} {std} (disable: {disable}): {}",
                String::from_utf8_lossy(&out.stderr)
            );
            let nm = Command::new("nm").arg("-u").arg(&object).output().unwrap();
            let undefined = String::from_utf8_lossy(&nm.stdout);
            assert_eq!(
                !undefined.contains("metron_region_begin_id"),
                disable,
                "{compiler} {std} (disable: {disable}):\n{undefined}"
            );
            assert_eq!(!undefined.contains("metron_"), disable, "{undefined}");
        }
    }
}
