//! uftrace as a second oracle of functions as regions: on the known-answer program built with
//! `-finstrument-functions`, every function's count under `metron run --functions` equals
//! the count `uftrace record --no-libcall` reports for the same binary. Skips, saying why,
//! where uftrace is not installed (scripts/install-deps.sh installs Debian's).

mod c_api_support;
mod functions_support;
use c_api_support::*;
use functions_support::*;
use std::collections::BTreeMap;
use std::process::Command;

/// `uftrace report`'s call count per function of the recording in `data`.
fn uftrace_counts(data: &std::path::Path) -> BTreeMap<String, u64> {
    let out = Command::new("uftrace")
        .args(["report", "--no-pager", "-f", "call", "-s", "func", "-d"])
        .arg(data)
        .output()
        .expect("uftrace report runs");
    assert_success(&out, "uftrace report");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|line| {
            let (calls, name) = line.trim().split_once(char::is_whitespace)?;
            Some((name.trim().to_string(), calls.parse().ok()?))
        })
        .collect()
}

#[test]
fn metron_counts_equal_uftrace_counts_on_the_known_answer_program() {
    if Command::new("uftrace").arg("--version").output().is_err() {
        eprintln!("skipped: uftrace is not installed (apt-get install uftrace)");
        return;
    }
    let dir = temp_dir("functions-uftrace");
    let exe = build_known_answer(&dir, &["-finstrument-functions"], &[]);
    let data = dir.join("uftrace.data");
    let out = Command::new("uftrace")
        .args(["record", "--no-libcall", "-d"])
        .arg(&data)
        .arg(&exe)
        .output()
        .expect("uftrace record runs");
    assert_success(&out, "uftrace record");
    let theirs = uftrace_counts(&data);
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
    let ours = counts_by_name(&read_json(&folder, "summary.json"));
    let mut compared = 0;
    for (name, known) in KNOWN {
        let Some(their) = theirs.get(*name) else {
            eprintln!("uftrace reports no {name}; compared with the known answer only");
            continue;
        };
        assert_eq!(
            ours.get(*name),
            Some(their),
            "{name}: Metron against uftrace"
        );
        assert_eq!(their, known, "{name}: uftrace against the known answer");
        compared += 1;
    }
    assert!(
        compared >= 9,
        "uftrace reported {compared} of the functions: {theirs:?}"
    );
}
