//! The trace sink stays split by concept: no file of it (`sinks/src/sinks/perfetto/` and the
//! `perfetto_*.rs` files beside it) holds more than 1,000 lines of code (blank lines and
//! comments not counted).

use std::path::Path;

/// Lines that are neither blank nor only a comment.
fn code_lines(text: &str) -> usize {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with("//"))
        .count()
}

#[test]
fn no_file_of_the_trace_sink_exceeds_a_thousand_lines_of_code() {
    let sinks = Path::new(env!("CARGO_MANIFEST_DIR")).join("../sinks/src/sinks");
    let mut files: Vec<_> = std::fs::read_dir(sinks.join("perfetto"))
        .expect("the trace sink's folder")
        .map(|e| e.unwrap().path())
        .collect();
    files.extend(
        std::fs::read_dir(&sinks)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with("perfetto_") && n.ends_with(".rs"))
            }),
    );
    assert!(files.len() >= 8, "{files:?}");
    for f in files {
        let n = code_lines(&std::fs::read_to_string(&f).unwrap());
        assert!(n <= 1000, "{}: {n} lines of code", f.display());
    }
}
