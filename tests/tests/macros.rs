//! Compile-time behaviour of the macros (trybuild): valid uses compile and run; each misuse
//! fails with a message that points at the culprit (`ui/fail/*.stderr`).

#[test]
fn macros_accept_valid_uses_and_reject_misuse_with_clear_errors() {
    // The pass cases run, and so write a run folder each: keep them out of the source tree.
    let output = std::env::temp_dir().join(format!("metron-tests-ui-{}", std::process::id()));
    std::env::set_var(
        "METRON_OUTPUT_PATH",
        output.join("%exe%-%pid%").to_string_lossy().as_ref(),
    );
    let t = trybuild::TestCases::new();
    t.pass("ui/pass/*.rs");
    t.compile_fail("ui/fail/*.rs");
    drop(t); // runs the cases
    let _ = std::fs::remove_dir_all(&output);
}
