//! Functions as regions in code built with `-finstrument-functions`: `metron run --functions`
//! (libmetron preloaded ahead of glibc's empty hooks) and a program linked with libmetron, on
//! the known-answer program (recursion, a 10^6-call leaf, a function pointer, a PLT call into a
//! shared library, longjmp, a C++ exception, four threads).

mod c_api_support;
mod functions_support;
use c_api_support::*;
use functions_support::*;

#[test]
fn every_selected_function_counts_its_known_answer_and_each_thread_ends_what_it_begins() {
    let dir = temp_dir("functions-cyg");
    let exe = build_known_answer(&dir, &["-finstrument-functions"], &[]);
    let (out, folder) = metron_run(
        &exe,
        &dir,
        &[
            "--functions",
            SELECT_KNOWN,
            "--functions-in",
            "libknown_answer",
        ],
    );
    let (got, expected) = known_vs(&counts_by_name(&read_json(&folder, "summary.json")));
    assert_eq!(got, expected);
    check_balance_and_nesting(&folder);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(
            "metron: functions (instrument-functions engine): 11 made regions, 0 skipped"
        ),
        "{stderr}"
    );
    let functions = &read_json(&folder, "metadata.json")["functions"];
    let names: Vec<&str> = functions["selected"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["name"].as_str().unwrap())
        .collect();
    assert_eq!(names.len(), KNOWN.len(), "{functions}");
    let lib = functions["selected"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"] == "lib_work")
        .unwrap();
    assert!(
        lib["module"]
            .as_str()
            .unwrap()
            .ends_with("libknown_answer_lib.so"),
        "{lib}"
    );
    // Each of the 60 jumps leaves jump_outer and jump_inner without their exit hooks: both
    // end at the longjmp itself, so nothing called later nests under them.
    assert_eq!(
        functions["shadow_stack"]["ended_without_exit"], 120,
        "{functions}"
    );
    assert_eq!(
        functions["shadow_stack"]["ended_at_thread_exit"], 0,
        "{functions}"
    );
    let summary = read_json(&folder, "summary.json");
    for thread in summary["threads"].as_array().unwrap() {
        for path in region_counts(&thread["regions"]).keys() {
            let under_jump = path.contains("jump_inner/")
                || path
                    .split_once("jump_outer/")
                    .is_some_and(|(_, rest)| rest != "jump_inner");
            assert!(!under_jump, "{path} nests under a function left by longjmp");
        }
    }
}

#[test]
fn excluded_short_and_unlisted_library_functions_are_skipped_with_their_reasons() {
    let dir = temp_dir("functions-cyg-skips");
    let exe = build_known_answer(&dir, &["-finstrument-functions"], &[]);
    // The instruction counts as binutils' objdump decodes them (an independent decoder).
    let sizes = objdump_instructions(&exe);
    let minimum = 14;
    let (out, folder) = metron_run(
        &exe,
        &dir,
        &[
            "--functions",
            SELECT_KNOWN,
            "--exclude",
            "^exc::",
            "--min-instructions",
            &minimum.to_string(),
        ],
    );
    let functions = &read_json(&folder, "metadata.json")["functions"];
    let listed = |key: &str, reason: Option<&str>| -> Vec<String> {
        functions[key]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| reason.is_none() || f["reason"] == reason.unwrap())
            .map(|f| f["name"].as_str().unwrap().to_string())
            .collect()
    };
    let in_executable: Vec<&str> = KNOWN
        .iter()
        .map(|(n, _)| *n)
        .filter(|n| *n != "lib_work")
        .collect();
    let mut short: Vec<String> = in_executable
        .iter()
        .filter(|n| !n.starts_with("exc::") && sizes[**n] < minimum)
        .map(|n| n.to_string())
        .collect();
    short.sort();
    assert!(
        !short.is_empty(),
        "some functions are under {minimum}: {sizes:?}"
    );
    assert_eq!(
        listed(
            "skipped",
            Some("fewer instructions than METRON_FUNCTIONS_MIN_INSTRUCTIONS")
        ),
        short,
        "{sizes:?}"
    );
    assert_eq!(
        listed("skipped", Some("matched by METRON_FUNCTIONS_EXCLUDE")),
        vec!["exc::catcher", "exc::pass_through", "exc::thrower"]
    );
    let mut selected: Vec<String> = in_executable
        .iter()
        .filter(|n| !n.starts_with("exc::") && sizes[**n] >= minimum)
        .map(|n| n.to_string())
        .collect();
    selected.sort();
    assert_eq!(listed("selected", None), selected);
    // The library is not named by --functions-in: counted, its function never a region.
    assert_eq!(functions["in_libraries_not_selected"], 1, "{functions}");
    let counts = counts_by_name(&read_json(&folder, "summary.json"));
    for name in &in_executable {
        let expected = KNOWN.iter().find(|(n, _)| n == name).unwrap().1;
        let want = selected.iter().any(|s| s == name).then_some(&expected);
        assert_eq!(counts.get(*name), want, "{name}");
    }
    assert!(!counts.contains_key("lib_work"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("3 matched by METRON_FUNCTIONS_EXCLUDE"),
        "{stderr}"
    );
    check_balance_and_nesting(&folder);
}

/// Instructions per function of `exe` as `objdump -d -C` lists them (names without
/// parameters, as Metron's regions are named).
fn objdump_instructions(exe: &std::path::Path) -> std::collections::HashMap<String, u64> {
    let out = std::process::Command::new("objdump")
        .args(["-d", "-C", "--no-show-raw-insn"])
        .arg(exe)
        .output()
        .expect("objdump (binutils) runs");
    assert!(out.status.success());
    let mut sizes = std::collections::HashMap::new();
    let mut current: Option<String> = None;
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        if let Some(head) = line.strip_suffix(">:") {
            let name = head.split_once(" <").map(|(_, n)| n).unwrap_or("");
            let name = name.split('(').next().unwrap_or(name).to_string();
            sizes.insert(name.clone(), 0);
            current = Some(name);
        } else if line.starts_with("  ") && line.contains(":\t") {
            if let Some(n) = current.as_ref().and_then(|c| sizes.get_mut(c)) {
                *n += 1;
            }
        } else if line.is_empty() {
            current = None;
        }
    }
    sizes
}

#[test]
fn without_a_selection_the_hooks_record_nothing() {
    let dir = temp_dir("functions-cyg-off");
    let exe = build_known_answer(&dir, &["-finstrument-functions"], &[]);
    let (out, folder) = metron_run(&exe, &dir, &[]);
    let counts = counts_by_name(&read_json(&folder, "summary.json"));
    assert_eq!(
        counts.keys().collect::<Vec<_>>(),
        vec!["known_answer"],
        "{counts:?}"
    );
    assert!(read_json(&folder, "metadata.json")["functions"].is_null());
    assert!(!String::from_utf8_lossy(&out.stderr).contains("metron: functions"));
}

#[test]
fn a_program_linked_with_libmetron_gets_the_same_counts_from_the_environment() {
    let dir = temp_dir("functions-cyg-linked");
    let a = artifacts();
    let exe = build_known_answer(
        &dir,
        &["-finstrument-functions"],
        &[
            &format!("-L{}", a.dir.display()),
            &format!("-Wl,-rpath,{}", a.dir.display()),
            "-lmetron",
        ],
    );
    let out = run_in(
        &exe,
        &dir,
        &[],
        &[
            ("METRON_FUNCTIONS", SELECT_KNOWN),
            ("METRON_FUNCTIONS_IN", "libknown_answer"),
        ],
    );
    assert_success(&out, "the linked program");
    let folder = dir.join("run");
    let (got, expected) = known_vs(&counts_by_name(&read_json(&folder, "summary.json")));
    assert_eq!(got, expected);
    check_balance_and_nesting(&folder);
}

#[test]
fn clang_code_whose_exceptions_call_no_exit_hook_still_counts_and_nests_exactly() {
    // Clang's -finstrument-functions calls no exit hook while an exception unwinds: the
    // regions of exc::thrower and exc::pass_through are ended by the __cxa_begin_catch
    // wrapper at the catch (or, failing that, when exc::catcher exits).
    let clang = ["clang-14", "clang"].into_iter().find(|c| {
        std::process::Command::new(c)
            .arg("--version")
            .output()
            .is_ok()
    });
    let Some(clang) = clang else {
        eprintln!("skipped: no clang-14 or clang (apt-get install clang-14)");
        return;
    };
    let clangxx = format!("{clang}++").replace("clang-14++", "clang++-14");
    let dir = temp_dir("functions-cyg-clang");
    let exe = build_known_answer_with(&dir, (clang, &clangxx), &["-finstrument-functions"], &[]);
    let (_, folder) = metron_run(
        &exe,
        &dir,
        &[
            "--functions",
            SELECT_KNOWN,
            "--functions-in",
            "libknown_answer",
        ],
    );
    let summary = read_json(&folder, "summary.json");
    let (got, expected) = known_vs(&counts_by_name(&summary));
    assert_eq!(got, expected);
    check_balance_and_nesting(&folder);
    let functions = &read_json(&folder, "metadata.json")["functions"];
    // 60 jumps out of two functions, 40 exceptions out of two: every one ended where it
    // happened, none left for the thread's end.
    assert_eq!(
        functions["shadow_stack"]["ended_without_exit"], 200,
        "{functions}"
    );
    assert_eq!(
        functions["shadow_stack"]["ended_at_thread_exit"], 0,
        "{functions}"
    );
    for thread in summary["threads"].as_array().unwrap() {
        for path in region_counts(&thread["regions"]).keys() {
            assert!(
                !path.contains("exc::thrower/") && !path.contains("jump_inner/"),
                "{path} nests under a function an exception or a longjmp left"
            );
        }
    }
}
