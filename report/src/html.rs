//! `report.html`: one page, no network (inline CSS and JavaScript, the SVGs as `data:` URLs).

use crate::{flatten, row_fields, scalar, Folder, WALL};
use serde_json::Value;
use std::fmt::Write as _;

const STYLE: &str = "
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em auto;max-width:1400px;padding:0 1em;color:#222}
h1{font-size:1.5em}h2{font-size:1.2em;margin-top:1.6em;border-bottom:1px solid #ccc}
table{border-collapse:collapse;margin:.5em 0;font-size:13px}
th,td{border:1px solid #ddd;padding:2px 6px;text-align:left;vertical-align:top}
td.n{text-align:right;font-variant-numeric:tabular-nums}
table.sortable th{cursor:pointer;background:#f3f3f3;user-select:none}
table.sortable th:after{content:' \\2195';color:#aaa}
iframe{width:100%;border:1px solid #ccc}
code,pre{background:#f6f6f6;padding:1px 4px}
.note{color:#666}
";

const SCRIPT: &str = "
document.querySelectorAll('table.sortable').forEach(function(t){
  t.querySelectorAll('th').forEach(function(th,i){
    th.addEventListener('click',function(){
      var b=t.tBodies[0],rows=Array.prototype.slice.call(b.rows);
      var asc=th.dataset.dir!=='asc';th.dataset.dir=asc?'asc':'desc';
      rows.sort(function(x,y){
        var a=x.cells[i],c=y.cells[i];
        var u=a.dataset.v,v=c.dataset.v,r;
        if(u!==undefined&&v!==undefined){r=parseFloat(u)-parseFloat(v);}
        else{r=a.textContent.localeCompare(c.textContent);}
        return asc?r:-r;
      });
      rows.forEach(function(r){b.appendChild(r);});
    });
  });
});
";

/// Escapes text for HTML.
pub(crate) fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Standard base64 (RFC 4648, with padding).
fn base64(bytes: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// The `height` of the SVG's root element (inferno writes it in pixels).
fn svg_height(svg: &str) -> u64 {
    svg.find("<svg ")
        .and_then(|i| {
            let rest = &svg[i..];
            let h = rest.find(" height=\"")? + " height=\"".len();
            rest[h..].split('"').next()?.parse::<f64>().ok()
        })
        .map(|h| h.ceil() as u64)
        .unwrap_or(600)
}

/// `YYYY-MM-DD HH:MM:SS` UTC of Unix-epoch nanoseconds (days to civil date: H. Hinnant's
/// algorithm).
fn utc(ns: u64) -> String {
    let secs = ns / 1_000_000_000;
    let (days, rem) = ((secs / 86_400) as i64, secs % 86_400);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02} UTC",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

/// A table cell: numbers right-aligned with their value for sorting.
fn cell(v: &Value) -> String {
    match v.as_f64() {
        Some(f) if v.is_number() => format!("<td class=n data-v=\"{f}\">{}</td>", esc(&scalar(v))),
        _ => format!("<td>{}</td>", esc(&scalar(v))),
    }
}

fn num_cell(f: f64, digits: usize) -> String {
    format!("<td class=n data-v=\"{f}\">{f:.digits$}</td>")
}

/// A sortable table of objects, columns the union of their (one level flattened) fields.
fn object_table(out: &mut String, id: &str, rows: &[Value], limit: usize) {
    let rows: Vec<_> = rows.iter().take(limit).map(row_fields).collect();
    let mut columns: Vec<String> = Vec::new();
    for r in &rows {
        for k in r.keys() {
            if !columns.contains(k) {
                columns.push(k.clone());
            }
        }
    }
    // Names first.
    columns.sort_by_key(|c| !matches!(c.as_str(), "name" | "region"));
    let _ = write!(out, "<table class=sortable id=\"{}\"><thead><tr>", esc(id));
    for c in &columns {
        let _ = write!(out, "<th>{}</th>", esc(c));
    }
    out.push_str("</tr></thead><tbody>");
    for r in &rows {
        out.push_str("<tr>");
        for c in &columns {
            out.push_str(&cell(r.get(c).unwrap_or(&Value::Null)));
        }
        out.push_str("</tr>");
    }
    out.push_str("</tbody></table>");
}

fn kv_table(out: &mut String, id: &str, pairs: &[(String, String)]) {
    let _ = write!(out, "<table id=\"{}\"><tbody>", esc(id));
    for (k, v) in pairs {
        let _ = write!(out, "<tr><th>{}</th><td>{}</td></tr>", esc(k), esc(v));
    }
    out.push_str("</tbody></table>");
}

/// The region rows of a run's merged tree: (path, node), depth first.
fn region_rows<'a>(nodes: &'a [Value], prefix: &str, out: &mut Vec<(String, &'a Value)>) {
    for n in nodes {
        let path = if prefix.is_empty() {
            n["name"].as_str().unwrap_or("?").to_string()
        } else {
            format!("{prefix} / {}", n["name"].as_str().unwrap_or("?"))
        };
        out.push((path.clone(), n));
        if let Some(c) = n["children"].as_array() {
            region_rows(c, &path, out);
        }
    }
}

fn regions_section(out: &mut String, f: &Folder) {
    out.push_str("<h2 id=regions-title>Top regions</h2>");
    if f.summary["schema"] == "metron.merge-summary/1" {
        let ranks: Vec<String> = f.summary["ranks"]
            .as_array()
            .map(|r| r.iter().map(|r| scalar(&r["rank"])).collect())
            .unwrap_or_default();
        let mut regions: Vec<&Value> = f.summary["regions"]
            .as_array()
            .into_iter()
            .flatten()
            .collect();
        let max = |r: &Value| r["metrics"][WALL]["max"].as_f64().unwrap_or(0.0);
        regions.sort_by(|a, b| max(b).total_cmp(&max(a)));
        out.push_str("<p class=note>Wall time in ms per rank (merged folder), slowest regions first; click a column to sort.</p>");
        out.push_str("<table class=sortable id=regions><thead><tr><th>region</th><th>path</th>");
        for r in &ranks {
            let _ = write!(out, "<th>rank {}</th>", esc(r));
        }
        out.push_str("<th>mean ms</th><th>max ms</th><th>imbalance %</th><th>slowest rank</th></tr></thead><tbody>");
        for r in regions.iter().take(200) {
            let m = &r["metrics"][WALL];
            let path: Vec<String> = r["path"]
                .as_array()
                .into_iter()
                .flatten()
                .map(scalar)
                .collect();
            let _ = write!(
                out,
                "<tr><td>{}</td><td>{}</td>",
                esc(&scalar(&r["name"])),
                esc(&path.join(" / "))
            );
            for i in 0..ranks.len() {
                match m["per_rank"][i].as_f64() {
                    Some(v) => out.push_str(&num_cell(v / 1e6, 3)),
                    None => out.push_str("<td class=n data-v=\"0\">-</td>"),
                }
            }
            out.push_str(&num_cell(m["mean"].as_f64().unwrap_or(0.0) / 1e6, 3));
            out.push_str(&num_cell(max(r) / 1e6, 3));
            out.push_str(&num_cell(100.0 * m["imbalance"].as_f64().unwrap_or(0.0), 1));
            out.push_str(&cell(&r["slowest_rank"]));
            out.push_str("</tr>");
        }
        out.push_str("</tbody></table>");
        return;
    }
    let mut rows = Vec::new();
    region_rows(
        f.summary["merged"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or(&[]),
        "",
        &mut rows,
    );
    let total = |n: &Value| n["metrics"][WALL]["total"].as_f64().unwrap_or(0.0);
    rows.sort_by(|a, b| total(b.1).total_cmp(&total(a.1)));
    let duration = f.summary["duration_ns"].as_f64().unwrap_or(0.0);
    if rows.is_empty() {
        out.push_str("<p>No regions were recorded.</p>");
        return;
    }
    let _ = write!(
        out,
        "<p class=note>All threads merged, by total wall time ({} of {} region paths); click a column to sort. <em>% of run</em>: the total over all threads over the run's wall time (threads add up, so it can pass 100). <code>summary.txt</code> has every metric.</p>",
        rows.len().min(200),
        rows.len()
    );
    out.push_str("<table class=sortable id=regions><thead><tr><th>region</th><th>path</th><th>count</th><th>total ms</th><th>self ms</th><th>mean us</th><th>% of run</th><th>where</th></tr></thead><tbody>");
    for (path, n) in rows.iter().take(200) {
        let m = &n["metrics"][WALL];
        let t = total(n);
        let _ = write!(
            out,
            "<tr><td>{}</td><td>{}</td>{}{}{}{}{}<td>{}:{}</td></tr>",
            esc(&scalar(&n["name"])),
            esc(path),
            cell(&n["count"]),
            num_cell(t / 1e6, 3),
            num_cell(m["self"].as_f64().unwrap_or(0.0) / 1e6, 3),
            num_cell(m["mean"].as_f64().unwrap_or(0.0) / 1e3, 3),
            num_cell(
                if duration > 0.0 {
                    100.0 * t / duration
                } else {
                    0.0
                },
                1
            ),
            esc(&scalar(&n["file"])),
            esc(&scalar(&n["line"])),
        );
    }
    out.push_str("</tbody></table>");
}

fn svg_frame(
    out: &mut String,
    id: &str,
    title: &str,
    file: &str,
    svg: &Option<String>,
    none: &str,
) {
    let _ = write!(out, "<h2>{}</h2>", esc(title));
    match svg {
        Some(svg) => {
            // The flame graph keeps its own script (search, zoom) in its frame.
            let _ = write!(
                out,
                "<p class=note>Click a frame to zoom, Ctrl-F to search; also in <code>{file}</code>.</p><iframe id=\"{id}\" title=\"{}\" src=\"data:image/svg+xml;base64,{}\" height=\"{}\"></iframe>",
                esc(title),
                base64(svg.as_bytes()),
                svg_height(svg) + 8
            );
        }
        None => {
            let _ = write!(out, "<p>{}</p>", esc(none));
        }
    }
}

fn gpu_section(out: &mut String, f: &Folder) {
    let gpu = &f.summary["gpu"];
    if !gpu.is_object() {
        return;
    }
    out.push_str("<h2 id=gpu>GPU</h2>");
    let sorted = |key: &str, by: &str| {
        let mut v: Vec<Value> = gpu[key].as_array().cloned().unwrap_or_default();
        v.sort_by(|a, b| {
            b[by]
                .as_f64()
                .unwrap_or(0.0)
                .total_cmp(&a[by].as_f64().unwrap_or(0.0))
        });
        v
    };
    for (key, title, id) in [
        ("kernels", "Kernels by total time", "gpu-kernels"),
        (
            "kernels_by_region",
            "Kernels by launching region",
            "gpu-kernels-by-region",
        ),
        ("copies", "Copies and sets", "gpu-copies"),
        ("api", "API calls", "gpu-api"),
    ] {
        let rows = sorted(key, "total_ns");
        if rows.is_empty() {
            continue;
        }
        let _ = write!(out, "<h3>{}</h3>", esc(title));
        object_table(out, id, &rows, 200);
    }
    let counters = &gpu["gpu_counters"];
    if counters.is_object() {
        for (key, title, id) in [
            (
                "by_kernel",
                "GPU counters by kernel",
                "gpu-counters-by-kernel",
            ),
            (
                "by_region",
                "GPU counters by region",
                "gpu-counters-by-region",
            ),
        ] {
            if let Some(rows) = counters[key].as_array().filter(|r| !r.is_empty()) {
                let _ = write!(out, "<h3>{}</h3>", esc(title));
                object_table(out, id, rows, 200);
            }
        }
    }
    if f.dir.join("kernels.csv").is_file() {
        out.push_str("<p class=note>Every kernel launch is in <code>kernels.csv</code>.</p>");
    }
}

fn sampling_section(out: &mut String, f: &Folder) {
    out.push_str("<h2 id=sampling>Sampling and drops</h2>");
    let mut pairs = Vec::new();
    flatten(&f.metadata["records"], "records", &mut pairs);
    flatten(&f.metadata["buffer"], "buffer", &mut pairs);
    let sampling = &f.metadata["sampling"];
    if sampling.is_object() {
        let mut s = sampling.clone();
        if let Some(m) = s.as_object_mut() {
            m.remove("threads");
        }
        flatten(&s, "sampling", &mut pairs);
    }
    kv_table(out, "sampling-stats", &pairs);
    if let Some(threads) = sampling["threads"].as_array().filter(|t| !t.is_empty()) {
        out.push_str("<h3>Sampled threads</h3>");
        object_table(out, "sampling-threads", threads, 500);
    }
    if let Some(threads) = f.summary["threads"].as_array().filter(|t| !t.is_empty()) {
        let rows: Vec<Value> = threads
            .iter()
            .map(|t| serde_json::json!({"name": t["name"], "tid": t["tid"], "metron thread": t["is_metron"], "records_dropped": t["records_dropped"]}))
            .collect();
        out.push_str("<h3>Threads</h3>");
        object_table(out, "threads", &rows, 1000);
    }
}

fn overview(out: &mut String, f: &Folder) {
    let mut pairs = Vec::new();
    flatten(&f.metadata["run"], "run", &mut pairs);
    pairs.push((
        "metron_version".into(),
        scalar(&f.metadata["metron_version"]),
    ));
    if let Some(d) = f.summary["duration_ns"].as_f64() {
        pairs.push(("duration".into(), format!("{:.3} ms", d / 1e6)));
    }
    if let Some(ns) = f.metadata["run"]["start_realtime_ns"].as_u64() {
        pairs.push(("started".into(), utc(ns)));
    }
    kv_table(out, "metadata", &pairs);
    if let Some(ranks) = f.metadata["ranks"]
        .as_array()
        .or(f.summary["ranks"].as_array())
    {
        out.push_str("<h3>Ranks</h3>");
        object_table(out, "ranks", ranks, 10_000);
    }
}

fn files_section(out: &mut String, f: &Folder) {
    out.push_str("<h2 id=files>Files of this run</h2><table id=files-table><tbody>");
    let mut entries: Vec<(String, u64)> = std::fs::read_dir(&f.dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            Some((
                e.file_name().to_string_lossy().into_owned(),
                e.metadata().ok()?.len(),
            ))
        })
        .collect();
    entries.sort();
    for (name, len) in entries {
        let _ = write!(
            out,
            "<tr><td>{}</td><td class=n>{len} B</td></tr>",
            esc(&name)
        );
    }
    out.push_str("</tbody></table>");
}

/// The causal profile: the summary table and the speedup curves, inline.
fn causal_section(out: &mut String, f: &Folder) {
    let Some(svg) = &f.causal else {
        return;
    };
    out.push_str("<h2 id=causal>Causal profile</h2><p class=note>From <code>profile.coz</code>: how much faster each progress point would go if one line were faster (see <code>causal.txt</code>; <code>coz plot</code> opens <code>profile.coz</code> too).</p>");
    if let Ok(table) = std::fs::read_to_string(f.dir.join(crate::CAUSAL_TXT)) {
        let _ = write!(out, "<pre id=causal-table>{}</pre>", esc(&table));
    }
    let _ = write!(out, "<div id=causal-svg>{svg}</div>");
}

/// The critical path of a run with GPU work (`critical_path.txt`, written by `metron-whatif`).
fn critical_path_section(out: &mut String, f: &Folder) {
    let Ok(text) = std::fs::read_to_string(f.dir.join("critical_path.txt")) else {
        return;
    };
    out.push_str("<h2 id=critical-path>What to optimise: the critical path</h2><p class=note>From the trace: the chain of CPU work, launches, kernels and waits that decided the run's end, the time of each item on it and what the run would gain were it twice as fast, and why the GPU was idle (see <code>critical_path.json</code>; <code>metron whatif DIR --faster NAME=P% --per REGION</code> predicts any change).</p>");
    let _ = write!(out, "<pre id=critical-path-table>{}</pre>", esc(&text));
}

/// The page.
pub(crate) fn page(f: &Folder) -> String {
    let exe = f.summary["exe"]
        .as_str()
        .or(f.metadata["run"]["exe"].as_str())
        .unwrap_or("run");
    let folder = f
        .dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut out = String::new();
    let _ = write!(
        out,
        "<!DOCTYPE html><html lang=en><head><meta charset=utf-8><title>Metron: {} ({})</title><style>{STYLE}</style></head><body>",
        esc(exe),
        esc(&folder)
    );
    let _ = write!(out, "<h1 id=title>Metron report: {}</h1><p class=note>Run folder <code>{}</code>. Made from its files by <code>metron report</code>; nothing here needs the network.</p>", esc(exe), esc(&folder));
    overview(&mut out, f);
    regions_section(&mut out, f);
    svg_frame(
        &mut out,
        "regions-svg",
        "Regions by self time",
        crate::REGIONS,
        &f.regions,
        "No regions were recorded.",
    );
    svg_frame(
        &mut out,
        "flamegraph-svg",
        "Call-stack samples",
        crate::FLAMEGRAPH,
        &f.flamegraph,
        "No call-stack samples: run with METRON_SAMPLING=on (or `metron sample`) for a flame graph of where the CPU time goes.",
    );
    gpu_section(&mut out, f);
    critical_path_section(&mut out, f);
    if f.gpu_stalls.is_some() {
        svg_frame(
            &mut out,
            "gpu-stalls-svg",
            "GPU PC samples (stall reasons)",
            crate::GPU_STALLS,
            &f.gpu_stalls,
            "",
        );
    }
    causal_section(&mut out, f);
    sampling_section(&mut out, f);
    out.push_str("<h2 id=perfetto>The timeline</h2>");
    if f.dir.join("trace.pftrace").is_file() {
        out.push_str("<p id=perfetto-how>Every region, mark and counter over time is in <code>trace.pftrace</code>: open <a href=\"https://ui.perfetto.dev\">https://ui.perfetto.dev</a> in Chrome or Firefox, choose <em>Open trace file</em> and pick <code>trace.pftrace</code> from this folder (or drag it onto the page). The trace is read inside the browser; it is not uploaded.</p>");
    } else {
        out.push_str("<p id=perfetto-how>This folder has no <code>trace.pftrace</code> (METRON_TRACE=off).</p>");
    }
    files_section(&mut out, f);
    let _ = writeln!(out, "<script>{SCRIPT}</script></body></html>");
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn base64_matches_rfc4648_vectors() {
        for (i, o) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(super::base64(i.as_bytes()), o);
        }
    }

    #[test]
    fn utc_dates() {
        assert_eq!(super::utc(0), "1970-01-01 00:00:00 UTC");
        // date -u -d @1795608722
        assert_eq!(
            super::utc(1_795_608_722_248_826_609),
            "2026-11-25 12:12:02 UTC"
        );
        assert_eq!(
            super::utc(951_782_400_000_000_000),
            "2000-02-29 00:00:00 UTC"
        );
    }
}
