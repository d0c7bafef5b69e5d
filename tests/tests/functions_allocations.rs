//! The `-finstrument-functions` hooks allocate nothing once a function is decided: 10^5
//! calls of a selected function and of an instrumented, unselected one, under
//! `metron run --functions`, with malloc, calloc, realloc and the aligned allocators counted
//! by the program itself on that thread (functions_programs/no_alloc.c). The calls are all
//! recorded: the count in summary.json is checked too.
//!
//! The thread's buffer segment is made large enough (8 MiB) for every record of the run, so
//! what is measured is the hooks' path and not the hand-over of a full segment, which belongs
//! to the buffer layer (its own allocation test: hot_path_allocations.rs).

mod c_api_support;
mod functions_support;
use c_api_support::*;
use functions_support::*;
use std::process::Command;

#[test]
fn selected_and_unselected_calls_make_no_heap_allocation() {
    let dir = temp_dir("functions-no-alloc");
    let source = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/functions_programs/no_alloc.c");
    let exe = dir.join("no_alloc");
    let out = Command::new("cc")
        .args(["-O1", "-g", "-finstrument-functions"])
        .arg(&source)
        .arg("-o")
        .arg(&exe)
        .output()
        .expect("run the C compiler");
    assert_success(&out, "compiling no_alloc.c");
    let (out, folder) = metron_run(
        &exe,
        &dir,
        &["--functions", "^traced$", "--buffer-size", "8M"],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(stdout.trim(), "allocations 0 calls 100000");
    let counts = counts_by_name(&read_json(&folder, "summary.json"));
    assert_eq!(counts.get("traced"), Some(&101_000));
    assert!(!counts.contains_key("untraced"));
}
