//! The critical path in the run's summary: a section of `summary.txt` (the top rows of the
//! table and the GPU's idle time, as `critical_path.txt` writes them) and `critical_path` in
//! `summary.json`, added to the files the summary sink wrote before. Written again (`metron
//! report` on the folder), each replaces what it wrote the time before.
//!
//! A summary file is rewritten whole beside itself and then renamed over itself, so a failure
//! (a disk full, a summary that does not parse) leaves it as it was. `summary.json` is not
//! read into a `Value` (a large one takes ten times its size so): its top-level values are
//! kept as the text they are, and written back around the new key in the sorted order and the
//! layout (compact, or indented) the file had.

use crate::answer::Answer;
use serde_json::value::RawValue;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::io::{self, Write};
use std::ops::Range;
use std::path::Path;

/// Rows of the table the summary shows (`critical_path.txt` has them all).
pub const SUMMARY_ROWS: usize = 10;
/// The key of `summary.json` that holds the critical path.
pub const SUMMARY_KEY: &str = "critical_path";
/// How the section of `summary.txt` begins: the line goes on with the path's length and its
/// share per resource. The section runs to the next blank line.
pub const HEADING: &str = "critical path of the run as recorded (";

/// Adds the critical path `a` to the summary files in `dir`, in place of what an earlier call
/// added. A summary file the folder lacks stays missing (the run wrote no summary). The error
/// says which file could not take it, and why.
pub fn add(dir: &Path, a: &Answer) -> Result<(), String> {
    let errors: Vec<String> = [
        ("summary.txt", add_text(dir, a)),
        ("summary.json", add_json(dir, a)),
    ]
    .into_iter()
    .filter_map(|(file, result)| result.err().map(|e| format!("{file}: {e}")))
    .collect();
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors.join("; "))
    }
}

/// The section of `summary.txt`: a blank line, the heading, the top rows of the table, the
/// idle time of each device that was idle, and where the rest is.
pub fn section(a: &Answer) -> String {
    let mut s = format!("\n{}\n", a.path_line());
    for line in a.table_lines(SUMMARY_ROWS) {
        s.push_str(&line);
        s.push('\n');
    }
    for line in a.idle_lines() {
        s.push_str("  ");
        s.push_str(&line);
        s.push('\n');
    }
    s.push_str(&format!(
        "  the whole table ({} rows) and what the model leaves out: {}; every item on the path: {}\n",
        a.table.len(),
        crate::file_names::CRITICAL_PATH_TXT,
        crate::file_names::CRITICAL_PATH_JSON
    ));
    s
}

/// `critical_path` of `summary.json`: the path's length and time per resource, the top rows of
/// the table (the gains are of the run replayed unchanged, `run_ns`), the idle time of each
/// device, and the file that has the rest.
pub fn object(a: &Answer) -> Value {
    json!({
        "file": crate::file_names::CRITICAL_PATH_JSON,
        "run_ns": a.run.1,
        "length_ns": a.before.length,
        "resources": Answer::resources_json(&a.before),
        "table": a.table.iter().take(SUMMARY_ROWS).map(Answer::row_json).collect::<Vec<_>>(),
        "gpu_idle": a.idle_json(),
    })
}

fn add_text(dir: &Path, a: &Answer) -> io::Result<()> {
    let path = dir.join("summary.txt");
    let Some(text) = found(std::fs::read_to_string(&path))? else {
        return Ok(());
    };
    let mut out = without_section(&text);
    if !out.is_empty() && !out.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(&section(a));
    replace(&path, |w| w.write_all(out.as_bytes()))
}

fn add_json(dir: &Path, a: &Answer) -> io::Result<()> {
    let path = dir.join("summary.json");
    let Some(bytes) = found(std::fs::read(&path))? else {
        return Ok(());
    };
    let top: BTreeMap<String, &RawValue> = serde_json::from_slice(&bytes).map_err(|e| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("not a JSON object ({e}); left as it was"),
        )
    })?;
    // The summary sink writes compact JSON; `metron merge` and the PM-sampling section write
    // it indented, whose values keep their indentation: the keys go back the way they were.
    let indented = bytes.starts_with(b"{\n");
    let ours = if indented {
        serde_json::to_string_pretty(&object(a))?.replace('\n', "\n  ")
    } else {
        serde_json::to_string(&object(a))?
    };
    let mut values: BTreeMap<&str, &str> = top.iter().map(|(k, v)| (k.as_str(), v.get())).collect();
    values.insert(SUMMARY_KEY, &ours);
    let (open, between, colon, close): (&[u8], &[u8], &[u8], &[u8]) = if indented {
        (b"{\n  ", b",\n  ", b": ", b"\n}\n")
    } else {
        (b"{", b",", b":", b"}\n")
    };
    replace(&path, |w| {
        w.write_all(open)?;
        for (i, (key, value)) in values.iter().enumerate() {
            if i > 0 {
                w.write_all(between)?;
            }
            serde_json::to_writer(&mut *w, key)?;
            w.write_all(colon)?;
            w.write_all(value.as_bytes())?;
        }
        w.write_all(close)
    })
}

/// What a file read gave, or `None` when there was no file.
fn found<T>(read: io::Result<T>) -> io::Result<Option<T>> {
    match read {
        Ok(t) => Ok(Some(t)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// Replaces the file at `path` by what `write` writes: into a file beside it, renamed over it
/// once complete; on failure the file beside it is removed and `path` is untouched.
fn replace(path: &Path, write: impl FnOnce(&mut dyn Write) -> io::Result<()>) -> io::Result<()> {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".partial");
    let partial = path.with_file_name(name);
    let written = (|| {
        let mut file = io::BufWriter::new(std::fs::File::create(&partial)?);
        write(&mut file)?;
        file.flush()?;
        drop(file);
        std::fs::rename(&partial, path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&partial);
    }
    written
}

/// `text` without the sections an earlier [`section`] left in it.
fn without_section(text: &str) -> String {
    let mut out = text.to_string();
    while let Some(range) = section_range(&out) {
        out.replace_range(range, "");
    }
    out
}

/// Where the section is in `text`: from its blank line to the end of its last line.
fn section_range(text: &str) -> Option<Range<usize>> {
    let start = format!("\n{HEADING}");
    let mut from = 0;
    while let Some(i) = text[from..].find(&start).map(|i| from + i) {
        // Its blank line: the line before it has ended (or there is none).
        if i == 0 || text.as_bytes()[i - 1] == b'\n' {
            let body = i + 1;
            let end = text[body..]
                .find("\n\n")
                .map_or(text.len(), |j| body + j + 1);
            return Some(i..end);
        }
        from = i + 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::{CallRecord, Graph, OpRecord, Recording, ThreadRecord};

    /// The answer for one launch of kernel `k`.
    fn one_kernel() -> Answer {
        let g = Graph::build(&Recording {
            threads: vec![ThreadRecord {
                tid: 1,
                calls: vec![CallRecord {
                    name: "cudaLaunchKernel".into(),
                    start: 0,
                    end: 10,
                    correlations: vec![1],
                }],
                regions: Vec::new(),
            }],
            ops: vec![OpRecord {
                name: "k".into(),
                stream: "GPU 0 s".into(),
                start: 20,
                end: 100,
                correlation: Some(1),
            }],
            ..Recording::default()
        });
        crate::answer::answer(&g, Vec::new(), None).unwrap()
    }

    fn folder(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("metron-whatif-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn summary_json_takes_the_object_in_key_order_and_keeps_its_layout() {
        let a = one_kernel();
        let dir = folder("summary-json");
        let path = dir.join("summary.json");
        for (layout, text) in [
            ("compact", "{\"a\":[1,{\"b\":2}],\"z\":null}\n".to_string()),
            (
                "indented",
                serde_json::to_string_pretty(&json!({"a": [1, {"b": 2}], "z": null})).unwrap(),
            ),
        ] {
            std::fs::write(&path, &text).unwrap();
            add(&dir, &a).unwrap();
            let once = std::fs::read_to_string(&path).unwrap();
            add(&dir, &a).unwrap();
            assert_eq!(std::fs::read_to_string(&path).unwrap(), once, "{layout}");
            let mut expected: Value = serde_json::from_str(&text).unwrap();
            expected[SUMMARY_KEY] = object(&a);
            let written: Value = serde_json::from_str(&once).unwrap();
            assert_eq!(written, expected, "{layout}");
            assert_eq!(written[SUMMARY_KEY]["table"][0]["item"], "kernel k");
            let written_as = match layout {
                "compact" => serde_json::to_string(&written).unwrap(),
                _ => serde_json::to_string_pretty(&written).unwrap(),
            };
            assert_eq!(once.trim_end(), written_as, "{layout}");
        }
        // Not a JSON object: left as it was, and said.
        std::fs::write(&path, "[1, 2]").unwrap();
        let err = add(&dir, &a).unwrap_err();
        assert!(err.starts_with("summary.json: not a JSON object"), "{err}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "[1, 2]");
        assert!(!dir.join("summary.json.partial").exists());
        assert!(
            !dir.join("summary.txt").exists(),
            "a summary the run lacks stays missing"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn the_section_is_found_between_other_sections_and_at_the_end() {
        let ours = format!("\n{HEADING}1.000 ms): CPU thread 1 100 %\n  item\n  kernel k\n");
        let before = "metron summary: x\n\ncounters\n| a |\n";
        let after = "\nmarks\n  m: 1\n";
        assert_eq!(without_section(&format!("{before}{ours}")), before);
        assert_eq!(
            without_section(&format!("{before}{ours}{after}")),
            format!("{before}{after}")
        );
        assert_eq!(without_section(&format!("{before}{ours}{ours}")), before);
        // The heading's words inside another line or not after a blank line are not ours.
        let other = format!("{before}  {HEADING}\n{HEADING}\n");
        assert_eq!(without_section(&other), other);
    }
}
