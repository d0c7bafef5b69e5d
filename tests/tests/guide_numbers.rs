//! Numbers the user guide states on several pages (instructions per pair, the C API's limits,
//! settings' defaults) come from one source: `docs/numbers.toml` for measurements, the settings
//! registry (`metron::settings::REGISTRY`) for `METRON_*` defaults. A page marks each use as
//! `<!--n:KEY-->VALUE<!--/n-->`; this test fails, naming the page, the line and the command
//! that rewrites it, when a marked value differs from its source, when a marker names an
//! unknown key, or when a number of the file is on no page.
//!
//! After a new measurement, change `docs/numbers.toml`, then rewrite the pages with
//! `UPDATE_DOCS=1 cargo test --release -p metron-tests --test guide_numbers`

use metron::settings::REGISTRY;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

const OPEN: &str = "<!--n:";
const CLOSE: &str = "<!--/n-->";
const REGENERATE: &str = "UPDATE_DOCS=1 cargo test --release -p metron-tests --test guide_numbers";

/// Limits that `docs/numbers.toml` repeats from the C API's code: (key, constant), each a
/// `const NAME: usize = VALUE;` of a file in `user-api/src/`.
const CODE_CONSTANTS: &[(&str, &str)] = &[
    ("c_open_regions_per_thread", "MAX_DEPTH"),
    ("c_name_cache_entries", "NAMED_ENTRIES"),
];

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// `key = "value"` lines of `docs/numbers.toml` (comments and blank lines skipped; the file
/// holds nothing else, so this small reader is all it needs).
fn numbers() -> BTreeMap<String, String> {
    let path = root().join("docs/numbers.toml");
    let text = std::fs::read_to_string(&path).expect("read docs/numbers.toml");
    let mut out = BTreeMap::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (key, value) = line
            .split_once('=')
            .unwrap_or_else(|| panic!("docs/numbers.toml:{}: expected key = \"value\"", i + 1));
        let value = value.trim();
        assert!(
            value.len() >= 2 && value.starts_with('"') && value.ends_with('"'),
            "docs/numbers.toml:{}: the value must be a quoted string",
            i + 1
        );
        let previous = out.insert(
            key.trim().to_string(),
            value[1..value.len() - 1].to_string(),
        );
        assert!(
            previous.is_none(),
            "docs/numbers.toml:{}: {} twice",
            i + 1,
            key.trim()
        );
    }
    out
}

/// The value a key stands for: the file's, or a setting's default.
fn source(numbers: &BTreeMap<String, String>, key: &str) -> Option<String> {
    if key.starts_with("METRON_") {
        return REGISTRY
            .iter()
            .find(|s| s.name == key)
            .map(|s| s.default.to_string());
    }
    numbers.get(key).cloned()
}

/// The guide's pages and the README.
fn pages() -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(root().join("docs/src"))
        .expect("list docs/src")
        .map(|e| e.expect("docs/src entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    out.push(root().join("README.md"));
    out.sort();
    out
}

/// One marked number of a page.
struct Mark {
    key: String,
    /// Byte range of the value between the markers, its `**` or backtick wrapper excluded.
    value: std::ops::Range<usize>,
    line: usize,
}

fn marks(text: &str, page: &str) -> Vec<Mark> {
    let mut out = Vec::new();
    let mut at = 0;
    while let Some(start) = text[at..].find(OPEN).map(|i| at + i) {
        let key_start = start + OPEN.len();
        let key_end = text[key_start..]
            .find("-->")
            .map(|i| key_start + i)
            .unwrap_or_else(|| panic!("{page}: unterminated marker at byte {start}"));
        let inner_start = key_end + 3;
        let inner_end = text[inner_start..]
            .find(CLOSE)
            .map(|i| inner_start + i)
            .unwrap_or_else(|| panic!("{page}: no {CLOSE} after the marker at byte {start}"));
        let inner = &text[inner_start..inner_end];
        let wrap = ["**", "`"]
            .iter()
            .find(|w| inner.len() > 2 * w.len() && inner.starts_with(*w) && inner.ends_with(*w))
            .map_or(0, |w| w.len());
        out.push(Mark {
            key: text[key_start..key_end].trim().to_string(),
            value: inner_start + wrap..inner_end - wrap,
            line: text[..start].lines().count().max(1),
        });
        at = inner_end + CLOSE.len();
    }
    out
}

#[test]
fn every_marked_number_of_the_guide_matches_its_source() {
    let numbers = numbers();
    let update = std::env::var_os("UPDATE_DOCS").is_some();
    let mut problems = Vec::new();
    for path in pages() {
        let name = path
            .strip_prefix(root())
            .unwrap_or(&path)
            .display()
            .to_string();
        let mut text = std::fs::read_to_string(&path).expect("read a page");
        let mut changed = false;
        let mut page_problems = Vec::new();
        // Back to front, so that a rewrite keeps the earlier ranges valid.
        for mark in marks(&text, &name).into_iter().rev() {
            let Some(want) = source(&numbers, &mark.key) else {
                page_problems.push(format!(
                    "{name}:{}: unknown number {:?} (not in docs/numbers.toml, not a setting)",
                    mark.line, mark.key
                ));
                continue;
            };
            if text[mark.value.clone()] != want {
                if update {
                    text.replace_range(mark.value.clone(), &want);
                    changed = true;
                } else {
                    page_problems.push(format!(
                        "{name}:{}: {} is {:?} on the page, {:?} in its source",
                        mark.line,
                        mark.key,
                        &text[mark.value.clone()],
                        want
                    ));
                }
            }
        }
        problems.extend(page_problems.into_iter().rev());
        if changed {
            std::fs::write(&path, &text).expect("rewrite a page");
            eprintln!("rewrote {name}");
        }
    }
    assert!(
        problems.is_empty(),
        "the guide disagrees with docs/numbers.toml or the settings registry:\n  {}\n\
         Change the source, then regenerate the pages with:\n  {REGENERATE}",
        problems.join("\n  ")
    );
}

#[test]
fn every_number_of_docs_numbers_toml_is_on_a_page() {
    let mut unused: Vec<String> = numbers().into_keys().collect();
    for path in pages() {
        let text = std::fs::read_to_string(&path).expect("read a page");
        let used: Vec<String> = marks(&text, &path.display().to_string())
            .into_iter()
            .map(|m| m.key)
            .collect();
        unused.retain(|k| !used.contains(k));
    }
    assert!(
        unused.is_empty(),
        "docs/numbers.toml has numbers no page marks (mark a use or remove them): {unused:?}"
    );
}

#[test]
fn the_c_api_limits_of_docs_numbers_toml_are_the_code_s() {
    let numbers = numbers();
    let dir = root().join("user-api/src");
    let sources: Vec<String> = std::fs::read_dir(&dir)
        .expect("list user-api/src")
        .map(|e| e.expect("user-api/src entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "rs"))
        .map(|p| std::fs::read_to_string(p).expect("read a source file"))
        .collect();
    for (key, constant) in CODE_CONSTANTS {
        let value = numbers
            .get(*key)
            .unwrap_or_else(|| panic!("docs/numbers.toml has no {key}"));
        let line = format!("const {constant}: usize = {value};");
        assert!(
            sources.iter().any(|s| s.contains(&line)),
            "docs/numbers.toml says {key} = {value:?}, but no file of user-api/src has `{line}`"
        );
    }
}

#[test]
fn a_marker_is_read_with_its_wrapper_left_out() {
    let text =
        "a <!--n:x-->**32**<!--/n--> b <!--n:METRON_Y-->`1M`<!--/n--> c <!--n:z-->7<!--/n-->";
    let found: Vec<(String, &str)> = marks(text, "t")
        .into_iter()
        .map(|m| (m.key, &text[m.value]))
        .collect();
    assert_eq!(
        found,
        [
            ("x".to_string(), "32"),
            ("METRON_Y".to_string(), "1M"),
            ("z".to_string(), "7")
        ]
    );
}
