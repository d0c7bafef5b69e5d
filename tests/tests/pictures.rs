//! Pictures of a run: `flamegraph.svg`, `regions.svg` and `report.html`, written at
//! the end of every run (`METRON_REPORT`, on by default) and by `metron report DIR`.
//!
//! - The SVGs parse as XML (roxmltree); on the 3:1 sampling workload (75 % of the CPU time in
//!   `pictures_heavy`, 25 % in `pictures_light`, as in `sampling_shares`) the heavy function's
//!   frames take 75 ± 5 % of the two functions' width, and every frame's `fg:w` is the sum of
//!   the `stacks.folded` counts under it; the region graph's widths are the self times of
//!   `summary.json`.
//! - The HTML is opened in headless Chromium (Debian's `chromium`): a screenshot is taken (a
//!   PNG of the window's size), and the page's DOM, queried by script in the browser, holds
//!   the top region, the kernel names of a fake GPU backend and the flame graphs; clicking a
//!   column header sorts the regions table; Chromium's network log shows no request made by
//!   the page (a page with a remote image, the control, shows one). Skipped, with the reason,
//!   where Chromium is missing.
//! - A `metron merge` folder of two ranks gives a report with a column per rank and a region
//!   graph with one tower per rank.
//! - `METRON_REPORT=off` writes none of them.

mod c_api_support;

use metron::gpu::{GpuDevice, GpuKind, GpuRecord};
use metron_tests::split::{thread_cpu_ns, Split};
use metron_tests::{scenario, Scenario};
use serde_json::Value;
use std::collections::BTreeMap;
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::process::Command;

const INFERNO_NS: &str = "http://github.com/jonhoo/inferno";

#[inline(never)]
fn pictures_heavy(iterations: u64) -> u64 {
    let mut x = 0x1234u64;
    for i in 0..iterations {
        x = black_box(x.rotate_left(5) ^ i).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
    x
}

#[inline(never)]
fn pictures_light(iterations: u64) -> u64 {
    let mut x = 0x4321u64;
    for i in 0..iterations {
        x = black_box(x.rotate_left(5) ^ i).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
    x
}

/// About 3 parts heavy for 1 part light (as measured), each in a region, for `cpu_s` seconds of
/// this thread's CPU.
#[inline(never)]
fn workload(cpu_s: f64) -> (u64, Split) {
    let _outer = metron::scope!("pictures outer");
    let start = thread_cpu_ns();
    let mut acc = 0;
    let mut split = Split::default();
    while ((thread_cpu_ns() - start) as f64) < cpu_s * 1e9 {
        for _ in 0..20 {
            acc ^= split.step(
                |n| {
                    let _r = metron::scope!("heavy region");
                    pictures_heavy(n)
                },
                |n| {
                    let _r = metron::scope!("light region");
                    pictures_light(n)
                },
            );
        }
    }
    (acc, split)
}

scenario! {
    fn scenario_sampled_shares() {
        let (acc, split) = workload(1.5);
        black_box(acc);
        metron_tests::emit_data(&serde_json::json!({ "heavy_share": split.first_share() }));
    }
}

fn kernel(name: &str, start: u64, end: u64, corr: u32) -> GpuRecord {
    let mut r = GpuRecord::new(GpuKind::Kernel, name.into());
    r.start_ns = start;
    r.end_ns = end;
    r.stream = 7;
    r.correlation = corr;
    r.grid = [64, 1, 1];
    r.block = [256, 1, 1];
    r
}

scenario! {
    fn scenario_fake_gpu() {
        assert!(metron::gpu::set_backend(
            metron::gpu::Backend {
                flush: metron_tests::fake_gpu::no_flush,
                metadata: metron_tests::fake_gpu::metadata,
                stream_word: "stream",
            },
            vec![GpuDevice { index: 0, name: "Fake GPU".into() }],
        ));
        let key = metron::intern(metron::gpu::LAUNCH_KEY, metron::CallsiteKind::AnnotationKey);
        let t0 = metron::clock::monotonic_ns();
        {
            let _r = metron::scope!("solver step");
            metron::by_id::annotate(key, metron::AnnotationValue::U64(11));
            black_box(pictures_heavy(3_000_000));
        }
        {
            let _r = metron::scope!("upload");
            metron::by_id::annotate(key, metron::AnnotationValue::U64(12));
        }
        metron::gpu::submit(&[
            kernel("stencil_kernel<float>(float*, int)", t0 + 1_000, t0 + 91_000, 11),
            kernel("pack_halo(float const*, float*)", t0 + 92_000, t0 + 95_000, 12),
        ]);
    }
}

scenario! {
    fn scenario_small() {
        let _r = metron::scope!("small region");
        black_box(pictures_light(100_000));
    }
}

/// One frame of an inferno SVG.
#[derive(Debug)]
struct Frame {
    name: String,
    /// `width` in percent of the whole graph.
    width_pct: f64,
    /// `fg:w`: the count under the frame.
    count: u64,
    /// `y` (to tell levels apart).
    y: f64,
}

fn parse_svg(path: &Path) -> Vec<Frame> {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{} was not written: {e}", path.display()));
    let options = roxmltree::ParsingOptions {
        allow_dtd: true,
        ..Default::default()
    };
    let doc = roxmltree::Document::parse_with_options(&text, options)
        .unwrap_or_else(|e| panic!("{} is not well-formed XML: {e}", path.display()));
    assert_eq!(doc.root_element().tag_name().name(), "svg");
    let mut frames = Vec::new();
    for g in doc.descendants().filter(|n| n.has_tag_name("g")) {
        let title = g.children().find(|n| n.has_tag_name("title"));
        let rect = g.children().find(|n| n.has_tag_name("rect"));
        let (Some(title), Some(rect)) = (title, rect) else {
            continue;
        };
        let title = title.text().unwrap_or_default();
        let name = title
            .rsplit_once(" (")
            .map(|(n, _)| n)
            .unwrap_or(title)
            .to_string();
        let width_pct = rect
            .attribute("width")
            .and_then(|w| w.strip_suffix('%'))
            .and_then(|w| w.parse().ok())
            .unwrap_or_else(|| panic!("frame {name}: width {:?}", rect.attribute("width")));
        let count = rect
            .attribute((INFERNO_NS, "w"))
            .and_then(|w| w.parse().ok())
            .unwrap_or_else(|| panic!("frame {name}: no fg:w"));
        let y = rect
            .attribute("y")
            .and_then(|y| y.parse().ok())
            .unwrap_or(0.0);
        frames.push(Frame {
            name,
            width_pct,
            count,
            y,
        });
    }
    assert!(!frames.is_empty(), "{} has no frames", path.display());
    frames
}

/// Sum over the frames whose name ends with `suffix`: (width %, count).
fn sum_of(frames: &[Frame], suffix: &str) -> (f64, u64) {
    frames
        .iter()
        .filter(|f| f.name.ends_with(suffix))
        .fold((0.0, 0), |(w, c), f| (w + f.width_pct, c + f.count))
}

/// The `stacks.folded` samples with a frame that ends with `suffix`.
fn folded_count(folded: &str, suffix: &str) -> u64 {
    folded
        .lines()
        .filter_map(|l| l.rsplit_once(' '))
        .filter(|(stack, _)| stack.split(';').any(|f| f.ends_with(suffix)))
        .map(|(_, n)| n.parse::<u64>().unwrap())
        .sum()
}

#[test]
fn flame_graphs_show_the_sampled_shares_and_the_region_self_times() {
    let run = Scenario::new("scenario_sampled_shares")
        .env("METRON_SAMPLING", "on")
        // 4 kHz: about 6,000 samples, so the 3:1 share's sampling error is ~0.6 points.
        .env("METRON_SAMPLING_FREQ", "4000")
        .run();
    let measured = run.data()["heavy_share"].as_f64().unwrap();
    let dir = &run.output_dir;
    let folded = std::fs::read_to_string(dir.join("stacks.folded")).expect("stacks.folded");

    // The sampled flame graph: the heavy function's share and counts from stacks.folded.
    let frames = parse_svg(&dir.join("flamegraph.svg"));
    let (heavy_w, heavy_n) = sum_of(&frames, "pictures_heavy");
    let (light_w, light_n) = sum_of(&frames, "pictures_light");
    assert_eq!(heavy_n, folded_count(&folded, "pictures_heavy"));
    assert_eq!(light_n, folded_count(&folded, "pictures_light"));
    let total: u64 = folded
        .lines()
        .filter_map(|l| l.rsplit_once(' ')?.1.parse::<u64>().ok())
        .sum();
    let all = frames
        .iter()
        .find(|f| f.name == "all")
        .expect("the root frame");
    assert_eq!(all.count, total);
    assert!((all.width_pct - 100.0).abs() < 1e-3, "{all:?}");
    // Widths are proportional to counts (inferno rounds them to 4 decimals of a percent).
    for f in &frames {
        let expected = 100.0 * f.count as f64 / total as f64;
        assert!(
            (f.width_pct - expected).abs() < 1e-3,
            "frame {f:?}: expected width {expected}%"
        );
    }
    let share = heavy_w / (heavy_w + light_w);
    println!(
        "flamegraph.svg: {} frames, {total} samples; pictures_heavy {heavy_n} ({heavy_w:.2} %), pictures_light {light_n} ({light_w:.2} %): heavy share {:.1} % (measured {:.1} %)",
        frames.len(),
        100.0 * share,
        100.0 * measured
    );
    assert!(
        heavy_n + light_n > 100,
        "too few samples: {heavy_n} + {light_n}"
    );
    assert!(
        (share - measured).abs() <= 0.05,
        "heavy share {share:.3}, measured {measured:.3} (± 0.05 allowed)"
    );

    // The region graph: self times of summary.json, drawn top-down.
    let summary = run.summary();
    let frames = parse_svg(&dir.join("regions.svg"));
    let node = |path: &[&str]| metron_tests::find(&summary["merged"], path).clone();
    let self_ns = |n: &Value| n["metrics"]["wall_clock.elapsed"]["self"].as_f64().unwrap();
    let outer = node(&["pictures outer"]);
    let heavy = node(&["pictures outer", "heavy region"]);
    let light = node(&["pictures outer", "light region"]);
    let total_self = self_ns(&outer) + self_ns(&heavy) + self_ns(&light);
    let root = frames.iter().find(|f| f.name == "all").expect("root");
    assert!(
        (root.count as f64 - total_self).abs() <= 3.0,
        "root {} ns, summary self times {total_self} ns",
        root.count
    );
    for (name, n) in [("heavy region", &heavy), ("light region", &light)] {
        let f = frames.iter().find(|f| f.name == name).expect(name);
        assert!((f.count as f64 - self_ns(n)).abs() <= 1.0, "{f:?} vs {n}");
        let expected = 100.0 * f.count as f64 / root.count as f64;
        assert!((f.width_pct - expected).abs() < 1e-3, "{f:?}");
    }
    let outer_f = frames.iter().find(|f| f.name == "pictures outer").unwrap();
    let heavy_f = frames.iter().find(|f| f.name == "heavy region").unwrap();
    // Icicle: children below their parent.
    assert!(heavy_f.y > outer_f.y, "{heavy_f:?} {outer_f:?}");
    println!(
        "regions.svg: heavy region {:.1} %, light region {:.1} % of the self time",
        heavy_f.width_pct,
        frames
            .iter()
            .find(|f| f.name == "light region")
            .unwrap()
            .width_pct
    );

    // The report lists both graphs and the top region.
    let meta = run.metadata();
    let files = meta["outputs"]["report"]["files"]
        .as_array()
        .expect("outputs.report");
    assert_eq!(files.len(), 3, "{files:?}");
    println!(
        "report written in {:.1} ms; sizes: flamegraph.svg {} B, regions.svg {} B, report.html {} B",
        meta["outputs"]["report"]["seconds"].as_f64().unwrap() * 1e3,
        size(&dir.join("flamegraph.svg")),
        size(&dir.join("regions.svg")),
        size(&dir.join("report.html"))
    );
    // The page embeds both SVGs, byte for byte, as data: URLs.
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    let embedded: Vec<String> = html
        .split("src=\"data:image/svg+xml;base64,")
        .skip(1)
        .map(|rest| base64_decode(&rest[..rest.find('"').unwrap()]))
        .collect();
    let on_disk: Vec<String> = ["regions.svg", "flamegraph.svg"]
        .iter()
        .map(|f| std::fs::read_to_string(dir.join(f)).unwrap())
        .collect();
    assert!(
        embedded == on_disk,
        "the embedded SVGs differ from the files"
    );
    let Some(browser) = chromium() else { return };
    let dom = query(&browser, &dir.join("report.html"));
    assert_eq!(dom["regions"][0], "pictures outer", "{dom:#}");
    assert_eq!(dom["svgs"].as_array().unwrap().len(), 2, "{dom:#}");
}

/// RFC 4648 base64 with padding.
fn base64_decode(text: &str) -> String {
    let value = |c: u8| match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'+' => 62,
        b'/' => 63,
        _ => panic!("not base64: {c}"),
    };
    let mut out = Vec::new();
    for chunk in text.as_bytes().chunks(4) {
        let n = chunk
            .iter()
            .take_while(|&&c| c != b'=')
            .fold((0u32, 0usize), |(acc, k), &c| {
                ((acc << 6) | u32::from(value(c)), k + 1)
            });
        let (bits, k) = (n.0 << (6 * (4 - n.1)), n.1);
        let bytes = [(bits >> 16) as u8, (bits >> 8) as u8, bits as u8];
        out.extend_from_slice(&bytes[..k.saturating_sub(1)]);
    }
    String::from_utf8(out).expect("UTF-8")
}

fn size(p: &Path) -> u64 {
    std::fs::metadata(p).map(|m| m.len()).unwrap_or(0)
}

/// Debian's Chromium, or `None` (and the reason printed).
fn chromium() -> Option<PathBuf> {
    for name in ["chromium", "chromium-browser", "google-chrome"] {
        let found = Command::new("sh")
            .arg("-c")
            .arg(format!("command -v {name}"))
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()));
        if found.is_some() {
            return found;
        }
    }
    println!("SKIP browser checks: no chromium on PATH (apt-get install chromium)");
    None
}

fn browser(exe: &Path, work: &Path) -> Command {
    let mut cmd = Command::new(exe);
    cmd.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--no-first-run",
        "--hide-scrollbars",
        "--allow-file-access-from-files",
    ])
    .arg(format!(
        "--user-data-dir={}",
        work.join("profile").display()
    ));
    cmd
}

/// Loads `page` in a frame of a harness page that queries its DOM in the browser (and clicks
/// the regions table's `total ms` header), and returns what the script found.
fn query(exe: &Path, page: &Path) -> Value {
    let work = c_api_support::temp_dir("pictures-browser");
    let harness = work.join("harness.html");
    let url = format!("file://{}", page.canonicalize().unwrap().display());
    std::fs::write(
        &harness,
        format!(
            r#"<!DOCTYPE html><html><body><pre id=out>pending</pre>
<iframe id=f src="{url}" width=1200 height=800></iframe>
<script>
document.getElementById('f').addEventListener('load', function() {{
  var d = this.contentDocument;
  var texts = function(sel) {{ return Array.from(d.querySelectorAll(sel)).map(function(e) {{ return e.textContent; }}); }};
  var r = {{
    title: d.title,
    h2: texts('h2'),
    regions: texts('#regions tbody tr td:first-child'),
    region_headers: texts('#regions thead th'),
    kernels: texts('#gpu-kernels tbody tr td:first-child'),
    kernels_by_region: texts('#gpu-kernels-by-region tbody tr td:first-child'),
    svgs: Array.from(d.querySelectorAll('iframe')).map(function(e) {{ return e.src.slice(0, 26); }}),
    perfetto: texts('#perfetto-how'),
    external: Array.from(d.querySelectorAll('[src],link[href]')).map(function(e) {{ return e.getAttribute('src') || e.getAttribute('href'); }}).filter(function(u) {{ return !u.startsWith('data:') && !u.startsWith('#'); }}),
    scripts: d.querySelectorAll('script').length,
  }};
  var th = Array.from(d.querySelectorAll('#regions thead th')).filter(function(e) {{ return e.textContent.startsWith('total ms'); }})[0];
  if (th) {{ th.click(); r.regions_ascending = texts('#regions tbody tr td:first-child'); }}
  document.getElementById('out').textContent = JSON.stringify(r);
}});
</script></body></html>"#
        ),
    )
    .unwrap();
    let out = browser(exe, &work)
        .args(["--dump-dom", "--virtual-time-budget=5000"])
        .arg(format!("file://{}", harness.display()))
        .output()
        .expect("run chromium");
    let dom = String::from_utf8_lossy(&out.stdout);
    let start = dom
        .find("<pre id=\"out\">")
        .map(|i| i + "<pre id=\"out\">".len());
    let text = start
        .and_then(|s| dom[s..].find("</pre>").map(|e| &dom[s..s + e]))
        .unwrap_or_else(|| {
            panic!(
                "no result in chromium's DOM:\n{dom}\nstderr:\n{}",
                String::from_utf8_lossy(&out.stderr)
            )
        });
    let text = text
        .replace("&quot;", "\"")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&");
    let value: Value = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("chromium's DOM query gave {text:?}: {e}"));
    assert_eq!(value["external"], serde_json::json!([]), "{value:#}");
    let _ = std::fs::remove_dir_all(&work);
    value
}

/// Opens `page` in Chromium with a network log and a screenshot; returns the URLs the page
/// requested (requests of Chromium itself, `initiator` "not an origin", left out) and the
/// screenshot's (width, height).
fn open_logged(exe: &Path, page: &Path) -> (Vec<String>, (u32, u32)) {
    let work = c_api_support::temp_dir("pictures-netlog");
    let netlog = work.join("net.json");
    let shot = work.join("shot.png");
    let out = browser(exe, &work)
        .arg("--window-size=1280,2000")
        .arg(format!("--log-net-log={}", netlog.display()))
        .arg(format!("--screenshot={}", shot.display()))
        .arg(format!("file://{}", page.canonicalize().unwrap().display()))
        .output()
        .expect("run chromium");
    let png = std::fs::read(&shot).unwrap_or_else(|e| {
        panic!(
            "no screenshot ({e}); chromium stderr:\n{}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n", "a PNG");
    assert_eq!(&png[12..16], b"IHDR");
    let be = |b: &[u8]| u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
    let dims = (be(&png[16..20]), be(&png[20..24]));
    let log: Value = serde_json::from_str(&std::fs::read_to_string(&netlog).unwrap())
        .expect("the network log is JSON");
    let types: BTreeMap<u64, String> = log["constants"]["logEventTypes"]
        .as_object()
        .expect("event types")
        .iter()
        .map(|(k, v)| (v.as_u64().unwrap(), k.clone()))
        .collect();
    let mut urls = Vec::new();
    for e in log["events"].as_array().expect("events") {
        let kind = e["type"].as_u64().and_then(|t| types.get(&t));
        let p = &e["params"];
        if kind.is_some_and(|k| k == "URL_REQUEST_START_JOB") && p["initiator"] != "not an origin" {
            if let Some(url) = p["url"].as_str() {
                urls.push(url.to_string());
            }
        }
    }
    let _ = std::fs::remove_dir_all(&work);
    (urls, dims)
}

#[test]
fn report_in_chromium_shows_regions_and_kernels_and_makes_no_request() {
    let run = Scenario::new("scenario_fake_gpu").run();
    let dir = &run.output_dir;
    let summary = run.summary();
    assert_eq!(summary["gpu"]["kernels"].as_array().map(Vec::len), Some(2));
    // Rewritten by the command: the same files.
    let before = std::fs::read_to_string(dir.join("report.html")).expect("report.html");
    let out = Command::new(c_api_support::artifacts().metron())
        .arg("report")
        .arg(dir)
        .output()
        .expect("metron report");
    assert!(out.status.success(), "{out:?}");
    let listed = String::from_utf8_lossy(&out.stdout);
    assert!(
        listed.contains("report.html") && listed.contains("regions.svg"),
        "{listed}"
    );
    assert!(
        !listed.contains("flamegraph.svg"),
        "no samples, no flamegraph.svg: {listed}"
    );
    let after = std::fs::read_to_string(dir.join("report.html")).unwrap();
    // The same page but for the file sizes it lists (metadata.json grew with the report).
    let head = |s: &str| s[..s.find("<h2 id=files>").unwrap()].to_string();
    assert_eq!(
        head(&before),
        head(&after),
        "metron report writes the page the run wrote"
    );

    let Some(exe) = chromium() else { return };
    let dom = query(&exe, &dir.join("report.html"));
    println!("DOM: {dom:#}");
    assert_eq!(dom["regions"][0], "solver step", "{dom:#}");
    assert_eq!(
        dom["kernels"],
        serde_json::json!([
            "stencil_kernel<float>(float*, int)",
            "pack_halo(float const*, float*)"
        ]),
        "kernels by time, longest first"
    );
    assert_eq!(
        dom["kernels_by_region"],
        serde_json::json!(["solver step", "upload"])
    );
    assert_eq!(
        dom["regions_ascending"][0], "upload",
        "sorted by total, ascending"
    );
    assert!(dom["perfetto"][0]
        .as_str()
        .unwrap()
        .contains("ui.perfetto.dev"));
    assert_eq!(
        dom["svgs"].as_array().unwrap().len(),
        1,
        "regions only: {dom:#}"
    );

    let (requests, dims) = open_logged(&exe, &dir.join("report.html"));
    println!(
        "screenshot {}x{}; requests by the page: {requests:?}",
        dims.0, dims.1
    );
    assert_eq!(dims, (1280, 2000));
    assert!(
        requests.is_empty(),
        "the report made requests: {requests:?}"
    );

    // The control: a page with a remote image shows its request in the same log.
    let work = c_api_support::temp_dir("pictures-control");
    let control = work.join("control.html");
    std::fs::write(
        &control,
        "<!DOCTYPE html><html><body><img src=\"http://127.0.0.1:9/x.png\"></body></html>",
    )
    .unwrap();
    let (requests, _) = open_logged(&exe, &control);
    assert!(
        requests
            .iter()
            .any(|u| u.starts_with("http://127.0.0.1:9/")),
        "the control's request was not seen: {requests:?}"
    );
    let _ = std::fs::remove_dir_all(&work);
}

#[test]
fn merged_ranks_get_a_column_each() {
    let ranks: Vec<_> = (0..2)
        .map(|r| {
            Scenario::new("scenario_small")
                .env("SLURM_PROCID", &r.to_string())
                .env("SLURM_NTASKS", "2")
                .run()
        })
        .collect();
    let out = c_api_support::temp_dir("pictures-merged").join("merged");
    let metron = c_api_support::artifacts().metron();
    let merged = Command::new(&metron)
        .arg("merge")
        .args(ranks.iter().map(|r| &r.output_dir))
        .arg("-o")
        .arg(&out)
        .output()
        .expect("metron merge");
    assert!(merged.status.success(), "{merged:?}");
    let report = Command::new(&metron)
        .arg("report")
        .arg(&out)
        .output()
        .expect("metron report");
    assert!(report.status.success(), "{report:?}");
    let frames = parse_svg(&out.join("regions.svg"));
    for rank in ["rank-0", "rank-1"] {
        assert!(frames.iter().any(|f| f.name == rank), "{rank}: {frames:?}");
    }
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    let Some(exe) = chromium() else {
        assert!(html.contains("<th>rank 0</th><th>rank 1</th>"));
        return;
    };
    let dom = query(&exe, &out.join("report.html"));
    let headers: Vec<&str> = dom["region_headers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h.as_str().unwrap())
        .collect();
    assert_eq!(&headers[2..4], ["rank 0", "rank 1"], "{dom:#}");
    assert_eq!(dom["regions"][0], "small region");
    let _ = std::fs::remove_dir_all(out.parent().unwrap());
}

#[test]
fn report_off_writes_no_pictures() {
    let run = Scenario::new("scenario_small")
        .env("METRON_REPORT", "off")
        .run();
    for f in ["flamegraph.svg", "regions.svg", "report.html"] {
        assert!(
            !run.output_dir.join(f).exists(),
            "{f} written with METRON_REPORT=off"
        );
    }
    assert!(run.output_dir.join("summary.json").exists());
}

#[test]
fn report_of_a_folder_that_is_no_run_says_what_it_needs() {
    let dir = c_api_support::temp_dir("pictures-empty");
    let out = Command::new(c_api_support::artifacts().metron())
        .arg("report")
        .arg(&dir)
        .output()
        .expect("metron report");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("no readable metadata.json or summary.json"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
