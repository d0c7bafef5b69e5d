//! Pictures of a Metron run folder, made from the files the run wrote:
//!
//! - `flamegraph.svg`: the call-stack samples of `stacks.folded` (written only when sampling
//!   ran), one tower per thread;
//! - `regions.svg`: the region tree of `summary.json`, each region weighted by its self time
//!   (wall time less its children's), drawn top-down (icicle), one tower per thread (per rank
//!   for a merged multi-rank folder);
//! - `gpu_stalls.svg`: the GPU PC samples of `gpu_stalls.folded` (region, kernel, source line,
//!   stall reason), when the run sampled them;
//! - `report.html`: one self-contained page (inline CSS and JavaScript, the flame graphs as
//!   `data:` URLs, nothing fetched from the network) with the run's metadata, the top regions
//!   (sortable), the flame graphs, the GPU tables when the run has GPU records, sampling and
//!   drop statistics, and how to open `trace.pftrace` in the Perfetto UI.
//!
//! The flame graphs are made by [`inferno`] (the Rust port of `flamegraph.pl`); they keep its
//! search and click-to-zoom when opened on their own or in the report. Frames narrower than a
//! pixel are folded first ([`fold`]): a picture of 10⁵ distinct stacks stays small and quick,
//! and says in its subtitle how many stacks and samples it folded. `summary.json` is read
//! without the parts the pictures do not show ([`read_summary`]), so no summary is too large.

use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub mod causal;
pub mod fold;
mod html;
mod read_summary;

/// The files [`write_pictures`] writes.
pub const FLAMEGRAPH: &str = "flamegraph.svg";
/// The region flame graph.
pub const REGIONS: &str = "regions.svg";
/// The report.
pub const REPORT: &str = "report.html";
/// The causal profile's speedup curves (when the folder has `profile.coz`).
pub const CAUSAL_SVG: &str = "causal.svg";
/// The causal profile's summary table.
pub const CAUSAL_TXT: &str = "causal.txt";
/// The causal profile's curves and table as JSON.
pub const CAUSAL_JSON: &str = "causal.json";

/// Writes `causal.txt`, `causal.json` and `causal.svg` from `dir/profile.coz`; `Ok(None)`
/// when the folder has no `profile.coz`.
pub fn write_causal(dir: &Path, files: &mut Vec<PathBuf>) -> io::Result<Option<String>> {
    let Ok(text) = std::fs::read_to_string(dir.join("profile.coz")) else {
        return Ok(None);
    };
    let profile =
        causal::parse(&text).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
    let curves = causal::curves(&profile);
    let svg = causal::svg(&curves);
    for (name, body) in [
        (CAUSAL_TXT, causal::summary_text(&profile, &curves)),
        (
            CAUSAL_JSON,
            serde_json::to_string_pretty(&causal::summary_json(&profile, &curves))
                .unwrap_or_default(),
        ),
        (CAUSAL_SVG, svg.clone()),
    ] {
        let path = dir.join(name);
        std::fs::write(&path, body)?;
        files.push(path);
    }
    Ok(Some(svg))
}

/// The GPU PC-sampling flame graph (NVIDIA, `METRON_GPU_PC_SAMPLING`).
pub const GPU_STALLS: &str = "gpu_stalls.svg";

/// The wall-clock metric of `summary.json`.
const WALL: &str = "wall_clock.elapsed";

/// A flame graph of `folded` (Brendan Gregg's folded stacks, `a;b;c count` per line) as an
/// interactive SVG. `icicle` draws the roots at the top.
pub fn flamegraph_svg(
    folded: &str,
    title: &str,
    count_name: &str,
    icicle: bool,
) -> io::Result<String> {
    flamegraph_svg_with(folded, title, None, count_name, icicle)
}

/// [`flamegraph_svg`] with a subtitle (what was folded).
fn flamegraph_svg_with(
    folded: &str,
    title: &str,
    subtitle: Option<String>,
    count_name: &str,
    icicle: bool,
) -> io::Result<String> {
    let mut options = inferno::flamegraph::Options::default();
    options.title = title.to_string();
    options.subtitle = subtitle;
    options.count_name = count_name.to_string();
    // Equal inputs give equal files (colours from the names, not random).
    options.hash = true;
    options.deterministic = true;
    if icicle {
        options.direction = inferno::flamegraph::Direction::Inverted;
        options.colors =
            inferno::flamegraph::Palette::Basic(inferno::flamegraph::color::BasicPalette::Aqua);
    }
    let mut out = Vec::new();
    inferno::flamegraph::from_lines(
        &mut options,
        folded.lines().filter(|l| !l.trim().is_empty()),
        &mut out,
    )?;
    String::from_utf8(out).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
}

/// One frame name, safe for the folded format.
fn clean(name: &str) -> String {
    name.replace(';', ",").replace(['\n', '\r'], " ")
}

fn wall(node: &Value) -> (f64, f64) {
    let m = &node["metrics"][WALL];
    (
        m["total"].as_f64().unwrap_or(0.0),
        m["self"].as_f64().unwrap_or(0.0),
    )
}

fn fold_tree(prefix: &str, nodes: &[Value], lines: &mut BTreeMap<String, u64>) {
    for node in nodes {
        let name = clean(node["name"].as_str().unwrap_or("?"));
        let path = format!("{prefix};{name}");
        let (_, self_ns) = wall(node);
        let self_ns = self_ns.max(0.0).round() as u64;
        if self_ns > 0 {
            *lines.entry(path.clone()).or_default() += self_ns;
        }
        if let Some(children) = node["children"].as_array() {
            fold_tree(&path, children, lines);
        }
    }
}

/// The region tree of a `summary.json` as folded stacks weighted by self time in ns: one line
/// per region path, `root;outer;...;region self_ns`. A run's summary gives its tree merged
/// over all threads (root `all threads`); a merged multi-rank summary (`metron merge`) one
/// tower per rank (root `rank-N`).
pub fn region_folded(summary: &Value) -> String {
    let mut lines: BTreeMap<String, u64> = BTreeMap::new();
    if summary["schema"] == "metron.merge-summary/1" {
        let ranks: Vec<String> = summary["ranks"]
            .as_array()
            .map(|r| r.iter().map(|r| format!("rank-{}", r["rank"])).collect())
            .unwrap_or_default();
        let regions = summary["regions"].as_array().cloned().unwrap_or_default();
        let paths: Vec<Vec<String>> = regions
            .iter()
            .map(|r| {
                r["path"]
                    .as_array()
                    .map(|p| p.iter().map(|s| clean(s.as_str().unwrap_or("?"))).collect())
                    .unwrap_or_default()
            })
            .collect();
        let totals =
            |r: &Value, i: usize| r["metrics"][WALL]["per_rank"][i].as_f64().unwrap_or(0.0);
        for (i, rank) in ranks.iter().enumerate() {
            for (r, path) in regions.iter().zip(&paths) {
                let children: f64 = regions
                    .iter()
                    .zip(&paths)
                    .filter(|(_, p)| p.len() == path.len() + 1 && p.starts_with(path))
                    .map(|(c, _)| totals(c, i))
                    .sum();
                let self_ns = (totals(r, i) - children).max(0.0).round() as u64;
                if self_ns > 0 {
                    *lines
                        .entry(format!("{rank};{}", path.join(";")))
                        .or_default() += self_ns;
                }
            }
        }
    } else {
        if let Some(regions) = summary["merged"].as_array() {
            fold_tree("all threads", regions, &mut lines);
        }
    }
    let mut out = String::new();
    for (line, n) in lines {
        let _ = writeln!(out, "{line} {n}");
    }
    out
}

/// A JSON file of the folder, if there and well-formed.
fn read_json(dir: &Path, name: &str) -> Option<Value> {
    let text = std::fs::read_to_string(dir.join(name)).ok()?;
    serde_json::from_str(&text).ok()
}

/// What a run folder holds, as the report reads it.
pub(crate) struct Folder {
    pub(crate) dir: PathBuf,
    pub(crate) metadata: Arc<Value>,
    pub(crate) summary: Value,
    pub(crate) flamegraph: Option<String>,
    pub(crate) regions: Option<String>,
    pub(crate) gpu_stalls: Option<String>,
    /// The causal profile's curves (`causal.svg`), when the folder has `profile.coz`.
    pub(crate) causal: Option<String>,
}

/// Writes `flamegraph.svg` (when the folder has `stacks.folded`), `gpu_stalls.svg` (when it
/// has `gpu_stalls.folded`), `regions.svg` (when its `summary.json` has regions) and
/// `report.html` into `dir`, and returns the files written.
/// A folder without `metadata.json` or `summary.json` is not a run folder: an error says so.
pub fn write_pictures(dir: &Path) -> io::Result<Vec<PathBuf>> {
    write_pictures_with(dir, true)
}

/// [`write_pictures`], leaving out `report.html` when `html` is false.
pub fn write_pictures_with(dir: &Path, html: bool) -> io::Result<Vec<PathBuf>> {
    Ok(pictures(dir, read_json(dir, "metadata.json").map(Arc::new), html)?.files)
}

/// What [`write_pictures_given`] wrote, and what its flame graphs folded.
pub struct Pictures {
    /// The files written.
    pub files: Vec<PathBuf>,
    /// What each flame graph folded, by file name (only those that folded something).
    pub folded: Vec<(&'static str, fold::Folding)>,
}

/// [`write_pictures`] at the end of a run: the run's metadata from memory (`None`: read from
/// `metadata.json`), so that the run writes its `metadata.json` once, after the pictures.
pub fn write_pictures_given(dir: &Path, metadata: Option<Arc<Value>>) -> io::Result<Pictures> {
    let metadata = metadata.or_else(|| read_json(dir, "metadata.json").map(Arc::new));
    pictures(dir, metadata, true)
}

fn pictures(dir: &Path, metadata: Option<Arc<Value>>, html: bool) -> io::Result<Pictures> {
    let summary = read_summary::read(dir);
    if metadata.is_none() && summary.is_none() {
        return Err(io::Error::new(
            io::ErrorKind::NotFound,
            format!(
                "{} has no readable metadata.json or summary.json: give a run folder (or a folder written by `metron merge`)",
                dir.display()
            ),
        ));
    }
    let metadata = metadata.unwrap_or_else(|| Arc::new(Value::Null));
    let summary = summary.unwrap_or(Value::Null);
    let mut files = Vec::new();
    let mut folded_by = Vec::new();
    let exe = summary["exe"]
        .as_str()
        .or(metadata["run"]["exe"].as_str())
        .unwrap_or("run")
        .to_string();
    let flamegraph = draw_folded(
        dir,
        "stacks.folded",
        FLAMEGRAPH,
        &format!("{exe}: call-stack samples (stacks.folded)"),
        &mut files,
        &mut folded_by,
    )?;
    let gpu_stalls = draw_folded(
        dir,
        "gpu_stalls.folded",
        GPU_STALLS,
        &format!("{exe}: GPU PC samples by region, kernel, line and stall reason"),
        &mut files,
        &mut folded_by,
    )?;
    let causal = write_causal(dir, &mut files)?;
    let folded = region_folded(&summary);
    let regions = if folded.is_empty() {
        None
    } else {
        let (folded, folding) = fold::fold_narrow(&folded, fold::MIN_SHARE);
        let svg = flamegraph_svg_with(
            &folded,
            &format!("{exe}: regions by self time"),
            folding.subtitle(),
            "ns",
            true,
        )?;
        if folding.stacks_folded > 0 {
            folded_by.push((REGIONS, folding));
        }
        let path = dir.join(REGIONS);
        std::fs::write(&path, &svg)?;
        files.push(path);
        Some(svg)
    };
    if html {
        let folder = Folder {
            dir: dir.to_path_buf(),
            metadata,
            summary,
            flamegraph,
            regions,
            gpu_stalls,
            causal,
        };
        let path = dir.join(REPORT);
        std::fs::write(&path, html::page(&folder))?;
        files.push(path);
    }
    Ok(Pictures {
        files,
        folded: folded_by,
    })
}

/// The flame graph of the folded stacks in `dir/input` (samples), written to `dir/output`;
/// `None` when the input is missing or empty.
fn draw_folded(
    dir: &Path,
    input: &str,
    output: &'static str,
    title: &str,
    files: &mut Vec<PathBuf>,
    folded_by: &mut Vec<(&'static str, fold::Folding)>,
) -> io::Result<Option<String>> {
    match std::fs::read_to_string(dir.join(input)) {
        Ok(folded) if !folded.trim().is_empty() => {
            let (folded, folding) = fold::fold_narrow(&folded, fold::MIN_SHARE);
            let svg = flamegraph_svg_with(&folded, title, folding.subtitle(), "samples", false)?;
            if folding.stacks_folded > 0 {
                folded_by.push((output, folding));
            }
            let path = dir.join(output);
            std::fs::write(&path, &svg)?;
            files.push(path);
            Ok(Some(svg))
        }
        _ => Ok(None),
    }
}

/// Scalars of a JSON object, flattened to `a.b.c` keys (arrays of scalars joined; arrays of
/// objects counted).
pub(crate) fn flatten(value: &Value, prefix: &str, out: &mut Vec<(String, String)>) {
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                let key = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                flatten(v, &key, out);
            }
        }
        Value::Array(items) if items.iter().all(|v| !v.is_object() && !v.is_array()) => {
            out.push((
                prefix.to_string(),
                items.iter().map(scalar).collect::<Vec<_>>().join(" "),
            ));
        }
        Value::Array(items) => out.push((prefix.to_string(), format!("({} entries)", items.len()))),
        v => out.push((prefix.to_string(), scalar(v))),
    }
}

/// A scalar as text.
pub(crate) fn scalar(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "-".into(),
        Value::Number(n) => match n.as_f64() {
            Some(f) if n.is_f64() => format!("{}", (f * 1000.0).round() / 1000.0),
            _ => n.to_string(),
        },
        v => v.to_string(),
    }
}

/// The object's fields, one level of nested objects flattened (`sums.x`).
pub(crate) fn row_fields(v: &Value) -> Map<String, Value> {
    let mut out = Map::new();
    if let Some(map) = v.as_object() {
        for (k, v) in map {
            match v {
                Value::Object(inner) => {
                    for (ik, iv) in inner {
                        if !iv.is_object() && !iv.is_array() {
                            out.insert(format!("{k}.{ik}"), iv.clone());
                        }
                    }
                }
                Value::Array(_) => {}
                v => {
                    out.insert(k.clone(), v.clone());
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn node(name: &str, total: f64, self_ns: f64, children: Vec<Value>) -> Value {
        json!({"name": name, "count": 1, "metrics": {WALL: {"total": total, "self": self_ns}}, "children": children})
    }

    #[test]
    fn region_tree_folds_by_self_time() {
        let summary = json!({"merged": [
            node("outer", 100.0, 40.0, vec![node("inner;x", 60.0, 60.0, vec![])]),
            node("idle", 10.0, 10.0, vec![]),
        ]});
        assert_eq!(
            region_folded(&summary),
            "all threads;idle 10\nall threads;outer 40\nall threads;outer;inner,x 60\n"
        );
    }

    #[test]
    fn merged_summary_folds_per_rank() {
        let r = |path: &[&str], per_rank: &[f64]| json!({"name": path.last(), "path": path, "metrics": {WALL: {"per_rank": per_rank}}});
        let summary = json!({
            "schema": "metron.merge-summary/1",
            "ranks": [{"rank": 0}, {"rank": 1}],
            "regions": [r(&["step"], &[100.0, 50.0]), r(&["step", "mpi"], &[30.0, 50.0])],
        });
        assert_eq!(
            region_folded(&summary),
            "rank-0;step 70\nrank-0;step;mpi 30\nrank-1;step;mpi 50\n"
        );
    }

    #[test]
    fn a_folder_gets_every_picture_it_has_input_for() {
        let dir = std::env::temp_dir().join(format!("metron-report-unit-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let summary = json!({"exe": "app", "merged": [node("step", 10.0, 10.0, vec![])]});
        std::fs::write(dir.join("summary.json"), summary.to_string()).unwrap();
        std::fs::write(
            dir.join("gpu_stalls.folded"),
            "step;saxpy;a.cu:3;long_scoreboard 7\n",
        )
        .unwrap();
        let files = write_pictures(&dir).unwrap();
        let names: Vec<_> = files
            .iter()
            .map(|f| f.file_name().unwrap().to_str().unwrap())
            .collect();
        assert_eq!(names, [GPU_STALLS, REGIONS, REPORT]);
        let html = std::fs::read_to_string(dir.join(REPORT)).unwrap();
        assert!(html.contains("id=\"gpu-stalls-svg\""));
        assert!(html.contains("No call-stack samples"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn flame_graph_is_xml_with_the_frames() {
        let svg = flamegraph_svg("t;main;a 3\nt;main;b 1\n", "x & y", "samples", false).unwrap();
        let options = roxmltree::ParsingOptions {
            allow_dtd: true,
            ..Default::default()
        };
        let doc = roxmltree::Document::parse_with_options(&svg, options).expect("well-formed SVG");
        let titles: Vec<String> = doc
            .descendants()
            .filter(|n| n.has_tag_name("title"))
            .filter_map(|n| n.text().map(str::to_string))
            .collect();
        assert!(
            titles
                .iter()
                .any(|t| t.starts_with("a (3 samples, 75.00%)")),
            "{titles:?}"
        );
        assert!(
            titles
                .iter()
                .any(|t| t.starts_with("b (1 samples, 25.00%)")),
            "{titles:?}"
        );
    }
}
