//! `metron_info_iterate` from C: the counters, metrics and traces of the CPU, stopping early,
//! and the errors for an unknown device, an unknown kind and a NULL callback.

mod c_api_support;
use c_api_support::*;

#[test]
fn c_programs_list_counters_metrics_and_traces() {
    let dir = temp_dir("info");
    let exe = compile(&program("info.c"), &dir, &[]);
    let out = run_in(&exe, &dir, &[], &[]);
    assert_success(&out, "info.c");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let rows: Vec<Vec<&str>> = stdout.lines().map(|l| l.split('|').collect()).collect();
    let find = |kind: &str, name: &str| {
        rows.iter()
            .find(|r| r[0] == kind && r.get(2) == Some(&name))
            .unwrap_or_else(|| panic!("no {kind}/{name} in\n{stdout}"))
    };
    let task = find("1", "task-clock");
    assert_eq!(task[1], "cpu");
    assert_eq!(task[3], "1", "software events open everywhere: {task:?}");
    let ipc = find("2", "IPC");
    assert_eq!(ipc[4], "instructions / cycles");
    let cycles = find("1", "cycles");
    if cycles[3] == "0" {
        assert!(cycles[5].contains("no hardware PMU"), "{cycles:?}");
        assert_eq!(ipc[3], "0");
        assert!(ipc[5].contains("cycles"), "{ipc:?}");
    }
    find("3", "regions");
    let error = rows.iter().find(|r| r[0] == "error").unwrap();
    assert!(error[1].contains("unknown device \"gpu9\""), "{error:?}");
    assert!(
        error[1].contains("devices on this machine: cpu"),
        "{error:?}"
    );
    let counts = rows.iter().find(|r| r[0] == "counts").unwrap();
    assert!(counts[1].parse::<u32>().unwrap() > 20, "{counts:?}");
    assert!(counts[2].parse::<u32>().unwrap() >= 5, "{counts:?}");
}
