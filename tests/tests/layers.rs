//! The `metron` crate's modules depend only downwards: `scripts/check-layers.py`
//! passes on `sdk/src`, and fails, naming the import, on a tree with an upward one.

use std::path::{Path, PathBuf};
use std::process::Command;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Runs the checker on `src` (the crate's own when `None`): exit status and output.
fn check(src: Option<&Path>) -> (i32, String) {
    let mut cmd = Command::new("python3");
    cmd.arg(repo().join("scripts/check-layers.py"));
    if let Some(src) = src {
        cmd.arg("--src").arg(src);
    }
    let out = cmd
        .current_dir(repo())
        .output()
        .expect("python3 runs scripts/check-layers.py (install python3)");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code().unwrap_or(-1), text)
}

/// A tiny crate: `runtime` uses `record` (down), and `record` uses `runtime` when `upward`.
fn fixture(name: &str, upward: bool) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("metron-layers-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("sinks")).unwrap();
    let write = |file: &str, text: &str| std::fs::write(dir.join(file), text).unwrap();
    write(
        "lib.rs",
        "mod record;\nmod runtime;\nmod sinks;\npub use runtime::start;\n",
    );
    write(
        "runtime.rs",
        "use crate::record::Slot;\npub fn start() -> Slot { Slot }\n",
    );
    write("sinks/mod.rs", "mod summary;\n");
    write(
        "sinks/summary.rs",
        "use super::super::record::Slot;\n#[cfg(test)]\nmod tests {\n    use crate::runtime::start;\n}\n",
    );
    let record = if upward {
        "pub struct Slot;\n// crate::runtime::start() in a comment is no import\nfn f() {\n    let _ = \"crate::sinks\";\n    crate::start();\n}\n"
    } else {
        "pub struct Slot;\n"
    };
    write("record.rs", record);
    dir
}

#[test]
fn metron_modules_depend_only_downwards() {
    let (code, text) = check(None);
    println!("{text}");
    assert_eq!(
        code, 0,
        "scripts/check-layers.py found upward imports:\n{text}"
    );
    // No exceptions either: the hot path reaches the runtime only through the hooks it lends.
    assert!(text.contains(" 0 upward: 0 allowed, 0 forbidden"), "{text}");
}

#[test]
fn an_upward_import_fails_the_check() {
    let clean = fixture("clean", false);
    let (code, text) = check(Some(&clean));
    assert_eq!(
        code, 0,
        "a downward-only tree passes (a test module may reach up):\n{text}"
    );
    assert!(text.contains("0 upward: 0 allowed, 0 forbidden"), "{text}");

    // `crate::start` is the root's re-export of runtime::start: record (hot path) -> runtime.
    let bad = fixture("upward", true);
    let (code, text) = check(Some(&bad));
    assert_eq!(code, 1, "{text}");
    let line = format!(
        "{}:5: module record (layer hot path) imports module runtime (layer runtime, higher)",
        bad.join("record.rs").display()
    );
    assert!(
        text.lines().any(|l| l.ends_with(&line) || l == line),
        "expected `{line}` in:\n{text}"
    );
    assert!(text.contains("1 upward: 0 allowed, 1 forbidden"), "{text}");
    assert!(
        !text.contains("sinks (layer"),
        "a string or comment is no import:\n{text}"
    );
    let _ = std::fs::remove_dir_all(clean);
    let _ = std::fs::remove_dir_all(bad);
}

/// The import circles `scripts/import-cycles.py` finds are exactly those the architecture page
/// lists (with why each remains): a new circle, or one that is gone, fails until the page says so.
#[test]
fn the_architecture_page_lists_every_import_circle() {
    let out = Command::new("python3")
        .arg(repo().join("scripts/import-cycles.py"))
        .current_dir(repo())
        .output()
        .expect("python3 runs scripts/import-cycles.py (install python3)");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "import-cycles.py failed:\n{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let found: std::collections::BTreeSet<(String, Vec<String>)> = text
        .lines()
        .filter_map(|l| l.split_once(": "))
        .map(|(krate, files)| {
            let mut files: Vec<String> = files.split(", ").map(str::to_string).collect();
            files.sort();
            (krate.to_string(), files)
        })
        .collect();
    let page = std::fs::read_to_string(repo().join("docs/src/architecture.md")).unwrap();
    let table = page
        .split("**Import circles.**")
        .nth(1)
        .and_then(|t| t.split("**`unsafe`.**").next())
        .expect("architecture.md has its Import circles paragraph");
    let listed: std::collections::BTreeSet<(String, Vec<String>)> = table
        .lines()
        .filter(|l| l.starts_with("| `"))
        .map(|l| {
            let cells: Vec<&str> = l.split(" | ").collect();
            let krate = cells[0]
                .trim_start_matches("| ")
                .trim_matches('`')
                .to_string();
            let mut files: Vec<String> = cells[1]
                .split(", ")
                .map(|f| f.trim().trim_matches('`').to_string())
                .collect();
            files.sort();
            (krate, files)
        })
        .collect();
    assert_eq!(
        found, listed,
        "scripts/import-cycles.py (left) and docs/src/architecture.md's circle table (right) \
         differ: list each circle with why it remains, or remove the gone ones"
    );
}
