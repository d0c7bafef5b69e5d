//! The user guide's settings reference, `docs/src/settings.md`, is generated from the settings
//! registry (`metron::settings::REGISTRY`): this test renders the page and fails, printing the
//! difference and the command that rewrites it, when the checked-in page is not what the
//! registry says. Every setting is on the page by construction.
//!
//! Regenerate after changing a setting:
//! `UPDATE_DOCS=1 cargo test --release -p metron --test settings_page`

use metron::settings::{SettingSpec, REGISTRY};
use std::path::PathBuf;

/// The page's sections: a title, the chapter that explains them, and which settings they hold.
/// A setting no section claims lands in "Other settings", so a new one never breaks the page.
type Section = (&'static str, &'static str, &'static str, fn(&str) -> bool);

/// (title, chapter title, chapter file, which settings).
const SECTIONS: &[Section] = &[
    (
        "Run folder, buffers and outputs",
        "Outputs and how to read them",
        "outputs.md",
        |n| {
            matches!(
                n,
                "METRON_ENABLED"
                    | "METRON_OUTPUT_PATH"
                    | "METRON_FLUSH_INTERVAL"
                    | "METRON_SUMMARY"
                    | "METRON_REPORT"
            ) || n.starts_with("METRON_BUFFER_")
        },
    ),
    (
        "The Perfetto trace",
        "The Perfetto trace",
        "trace.md",
        |n| {
            matches!(
                n,
                "METRON_TRACE"
                    | "METRON_TRACE_FILE"
                    | "METRON_TRACE_BUFFER_SIZE"
                    | "METRON_TRACE_FILL_POLICY"
                    | "METRON_TRACE_CATEGORIES"
                    | "METRON_TRACE_MAX_SIZE"
            )
        },
    ),
    ("`metron run`", "The `metron` command", "cli.md", |n| {
        matches!(n, "METRON_PROCESSES" | "METRON_RUN_FOLDER")
    }),
    (
        "Process lifecycle",
        "Process lifecycle",
        "lifecycle.md",
        |n| {
            matches!(
                n,
                "METRON_PRELOAD" | "METRON_SIGNALS" | "METRON_CRASH" | "METRON_FORK"
            )
        },
    ),
    ("Many processes and MPI", "Many processes", "mpi.md", |n| {
        n.starts_with("METRON_MPI")
    }),
    (
        "Sampling and time windows",
        "Sampling",
        "sampling.md",
        |n| {
            n.starts_with("METRON_SAMPLING")
                || matches!(
                    n,
                    "METRON_TRACE_PERIODS" | "METRON_TRACE_DELAY" | "METRON_TRACE_DURATION"
                )
        },
    ),
    (
        "Hardware counters and derived metrics",
        "Hardware counters and derived metrics",
        "counters.md",
        |n| n.starts_with("METRON_PERF_") || n.starts_with("METRON_METRICS"),
    ),
    ("Exports for other tools", "Export", "export.md", |n| {
        n.starts_with("METRON_EXPORT")
    }),
    ("NVTX and ROCTx", "NVTX and ROCTx", "nvtx-roctx.md", |n| {
        n.starts_with("METRON_NVTX")
    }),
    ("GPU: AMD", "GPU: AMD", "gpu-amd.md", |n| {
        n.starts_with("METRON_GPU_AMD_")
    }),
    (
        "GPU: NVIDIA (and both vendors)",
        "GPU: NVIDIA",
        "gpu-nvidia.md",
        |n| n == "METRON_GPU" || n.starts_with("METRON_GPU_"),
    ),
];

/// A section of the page: its title, the chapter it links (title, file) if written, its settings.
type PageSection = (
    &'static str,
    Option<(&'static str, &'static str)>,
    Vec<&'static SettingSpec>,
);

/// Settings that `metron run` sets itself and so have no flag: `NOT_FLAGS` of cli/src/run.rs,
/// read from its source so that the page cannot drift from the command.
fn not_flags() -> Vec<&'static str> {
    let source = include_str!("../../cli/src/run.rs");
    let list = source
        .split("const NOT_FLAGS: &[&str] = &[")
        .nth(1)
        .and_then(|rest| rest.split("];").next())
        .expect("cli/src/run.rs defines `const NOT_FLAGS: &[&str] = &[...];`");
    list.split(',')
        .map(|name| name.trim().trim_matches('"'))
        .filter(|name| !name.is_empty())
        .collect()
}

fn page_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../docs/src/settings.md")
}

/// `METRON_BUFFER_SIZE` → `--buffer-size`, as `metron run` spells its flags.
fn flag_of(name: &str) -> String {
    format!(
        "--{}",
        name.trim_start_matches("METRON_")
            .to_ascii_lowercase()
            .replace('_', "-")
    )
}

/// Text for one table cell: no line breaks, no column separators, no `<` read as HTML.
fn cell(text: &str) -> String {
    text.replace('\n', " ")
        .replace('|', "\\|")
        .replace('<', "\\<")
}

fn row(spec: &SettingSpec) -> String {
    let flag = if not_flags().contains(&spec.name) {
        "(set by `metron run`)".to_string()
    } else {
        format!("`{}`", flag_of(spec.name))
    };
    let default = if spec.default.is_empty() {
        "(unset)".to_string()
    } else {
        format!("`{}`", spec.default)
    };
    format!(
        "| `{}` | {} | {} | {} | {} |\n",
        spec.name,
        flag,
        default,
        cell(&spec.kind.accepted()),
        cell(spec.description)
    )
}

/// The whole page, from the registry.
fn render() -> String {
    let mut page = String::from(
        "<!-- Generated from metron::settings::REGISTRY (sdk/src/settings/registry.rs) by sdk/tests/settings_page.rs.
     Do not edit: change the registry, then run
     UPDATE_DOCS=1 cargo test --release -p metron --test settings_page -->

# Settings

Every setting is a `METRON_*` environment variable, defined once in the registry of
`sdk/src/settings/registry.rs` (`metron::settings::REGISTRY`), which is also what `metron avail --settings`
prints and what `metadata.json` records under `settings` (each value and whether it came from
the environment or the default). Settings are read once, when the runtime starts (before
`main`): set them in the environment of the process, not with `std::env::set_var` in the
program.

`metron run` has a flag for each (`--buffer-size 4M` sets `METRON_BUFFER_SIZE=4M`; `-o` is
`--output-path`) and checks the value with the same parser before the program starts. A value
that does not parse is reported on stderr and in `metadata.json` (`setting_errors`) with the
variable, the value and what is accepted, and the default is used:

```text
metron: METRON_BUFFER_SIZE=\"12Q\" is not accepted: expected a size in bytes with an optional K, M or G suffix (e.g. 64K, 4M); using the default \"1M\"
```

Booleans accept `1`, `0`, `true`, `false`, `yes`, `no`, `on` and `off`; sizes take an optional
`K`, `M` or `G` suffix (powers of 1024); durations a unit (`us`, `ms`, `s`, `m`).
",
    );
    let mut placed = vec![false; REGISTRY.len()];
    let mut sections: Vec<PageSection> = Vec::new();
    for (title, chapter_title, chapter, claims) in SECTIONS {
        let mut specs = Vec::new();
        for (i, spec) in REGISTRY.iter().enumerate() {
            if !placed[i] && claims(spec.name) {
                placed[i] = true;
                specs.push(spec);
            }
        }
        sections.push((title, Some((chapter_title, chapter)), specs));
    }
    let rest: Vec<&SettingSpec> = REGISTRY
        .iter()
        .enumerate()
        .filter(|(i, _)| !placed[*i])
        .map(|(_, s)| s)
        .collect();
    sections.push(("Other settings", None, rest));
    for (title, chapter, specs) in sections {
        if specs.is_empty() {
            continue;
        }
        page.push_str(&format!("\n## {title}\n\n"));
        if let Some((chapter_title, chapter)) = chapter {
            page.push_str(&format!("More in [{chapter_title}]({chapter}).\n\n"));
        }
        page.push_str("| variable | `metron run` flag | default | accepted | what it does |\n");
        page.push_str("| --- | --- | --- | --- | --- |\n");
        for spec in specs {
            page.push_str(&row(spec));
        }
    }
    page
}

/// A line diff (longest common subsequence), `-` for the checked-in page, `+` for the registry.
fn diff(old: &str, new: &str) -> String {
    let a: Vec<&str> = old.lines().collect();
    let b: Vec<&str> = new.lines().collect();
    let mut lcs = vec![vec![0u32; b.len() + 1]; a.len() + 1];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            lcs[i][j] = if a[i] == b[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let (mut i, mut j, mut out) = (0, 0, String::new());
    while i < a.len() || j < b.len() {
        if i < a.len() && j < b.len() && a[i] == b[j] {
            i += 1;
            j += 1;
        } else if j < b.len() && (i == a.len() || lcs[i][j + 1] >= lcs[i + 1][j]) {
            out.push_str(&format!("+{:>4} {}\n", j + 1, b[j]));
            j += 1;
        } else {
            out.push_str(&format!("-{:>4} {}\n", i + 1, a[i]));
            i += 1;
        }
    }
    out
}

#[test]
fn the_settings_page_of_the_guide_matches_the_registry() {
    let path = page_path();
    let want = render();
    if std::env::var_os("UPDATE_DOCS").is_some() {
        std::fs::write(&path, &want).expect("write docs/src/settings.md");
        eprintln!("wrote {}", path.display());
        return;
    }
    let have = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        have == want,
        "docs/src/settings.md differs from the settings registry (sdk/src/settings/registry.rs):\n{}\n\
         Regenerate it with:\n  UPDATE_DOCS=1 cargo test --release -p metron --test settings_page",
        diff(&have, &want)
    );
}

#[test]
fn every_setting_is_on_the_page_once() {
    let page = render();
    for spec in REGISTRY {
        let cell = format!("| `{}` |", spec.name);
        assert_eq!(page.matches(&cell).count(), 1, "{} on the page", spec.name);
    }
}
