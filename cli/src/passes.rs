//! `metron run --passes auto|N -- cmd`: runs the program once per counter pass and merges the
//! results.
//!
//! The passes come from the same planner the runtime uses (`metron::counters::passes_for`),
//! so the number is known before the first run. Pass k runs with `METRON_PERF_PASS=k` into
//! `<folder>/pass-k`; then `<folder>/summary.json` gets pass 1's region tree with every
//! counter and derived metric taken from the pass that counted it, and `<folder>/passes.json`
//! the plan and the run-to-run variation of each region's wall-clock total across passes
//! (the counters of different passes come from different runs: the variation says how far
//! they can be compared).

use serde_json::{json, Map, Value};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

/// Runs `command` once per pass. `env` is what the flags set (they win over the environment).
pub(crate) fn run(
    passes: &str,
    command: Command,
    env: &[(&'static str, String)],
    output_template: &str,
) -> ExitCode {
    let lookup = |name: &str| {
        env.iter()
            .rev()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.clone())
            .or_else(|| std::env::var(name).ok())
    };
    let settings = metron::settings::Settings::from_lookup(lookup);
    let plan = metron::counters::passes_for(&settings.counters);
    let needed = plan.plan.passes.len().max(1);
    let count = match passes {
        "auto" => needed,
        n => match n.parse::<usize>() {
            Ok(n) if n >= 1 => n,
            _ => {
                eprintln!("metron run: --passes {n:?} is not accepted: expected auto or a number of passes (1 or more)");
                return ExitCode::from(crate::USAGE);
            }
        },
    };
    let exe = command
        .get_program()
        .to_string_lossy()
        .rsplit('/')
        .next()
        .unwrap_or("program")
        .to_string();
    let base = metron::expand_output_path(output_template, &exe);
    let listing = metron::counters::pass_listing(&plan.plan);
    eprintln!(
        "metron run: {count} pass{} (the counters asked for need {needed}{}){}",
        if count == 1 { "" } else { "es" },
        if plan.plan.minimal {
            ", the fewest possible"
        } else {
            ""
        },
        if listing.is_empty() {
            String::new()
        } else {
            format!(": {}", listing.join("; "))
        }
    );
    let mut command = command;
    let mut statuses = Vec::new();
    for pass in 1..=count {
        let dir = base.join(format!("pass-{pass}"));
        command
            .env("METRON_PERF_PASS", pass.to_string())
            .env("METRON_OUTPUT_PATH", &dir);
        let status = match command.status() {
            Ok(s) => s,
            Err(e) => {
                eprintln!("metron run: cannot run {exe}: {e}");
                return ExitCode::from(if e.kind() == std::io::ErrorKind::NotFound {
                    127
                } else {
                    126
                });
            }
        };
        statuses.push(status.code().unwrap_or(128));
        if !status.success() {
            // The program's own exit status is its behaviour, not a failed measurement: every
            // pass still runs (a program that always exits non-zero still gets its counters).
            eprintln!("metron run: pass {pass} of {count} exited with {status}");
        }
    }
    match merge(&base, statuses.len(), &plan) {
        Ok(()) => eprintln!(
            "metron: wrote {} ({} passes merged: summary.json, summary.txt, passes.json)",
            base.display(),
            statuses.len()
        ),
        Err(e) => eprintln!(
            "metron run: could not merge the passes in {}: {e}",
            base.display()
        ),
    }
    // The first pass that failed gives the exit status, as a single run would have.
    let status = statuses
        .iter()
        .copied()
        .find(|&s| s != 0)
        .unwrap_or_else(|| statuses.last().copied().unwrap_or(1));
    ExitCode::from(status.clamp(0, 255) as u8)
}

fn read(path: &Path) -> Result<Value, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))
}

/// Merges `<base>/pass-1..=passes` into `<base>/summary.json` and `<base>/passes.json`.
fn merge(base: &Path, passes: usize, plan: &metron::counters::CounterPlan) -> Result<(), String> {
    let mut summaries = Vec::new();
    let mut counted = Vec::new();
    for pass in 1..=passes {
        let dir = base.join(format!("pass-{pass}"));
        summaries.push(read(&dir.join("summary.json"))?);
        let meta = read(&dir.join("metadata.json"))?;
        counted.push(PassCounts::from_metadata(&meta));
    }
    let mut merged = summaries[0].clone();
    let mut variation = Vec::new();
    if let Some(nodes) = merged["merged"].as_array_mut() {
        for node in nodes.iter_mut() {
            merge_node(node, &[], &summaries, &counted, &mut variation);
        }
    }
    merged["passes"] = json!(passes);
    let path = |p: usize| base.join(format!("pass-{}", p + 1)).display().to_string();
    let report = json!({
        "schema": "metron.passes/1",
        "passes": passes,
        "plan": plan.plan.passes,
        "plan_minimal": plan.plan.minimal,
        "group_size": plan.group_size,
        "group_size_source": plan.group_size_source,
        "folders": (0..passes).map(path).collect::<Vec<_>>(),
        "counted": counted.iter().map(|c| json!({"events": c.events, "metrics": c.metrics})).collect::<Vec<_>>(),
        "variation": variation,
    });
    let write = |name: &str, v: &Value| {
        std::fs::write(
            base.join(name),
            serde_json::to_string_pretty(v).unwrap_or_default(),
        )
        .map_err(|e| format!("{name}: {e}"))
    };
    write("summary.json", &merged)?;
    std::fs::write(base.join("summary.txt"), summary_text(&merged, &report))
        .map_err(|e| format!("summary.txt: {e}"))?;
    write("passes.json", &report)
}

/// The merged summary as text (`summary.txt`): each region with its wall clock and every
/// counter and derived metric, with the pass that counted it.
fn summary_text(merged: &Value, report: &Value) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "metron summary: {} (pid {} in pass 1), {} passes merged (counters from the pass that counted them; passes.json has the plan and the run-to-run variation)",
        merged["exe"].as_str().unwrap_or("?"),
        merged["pid"],
        report["passes"]
    );
    fn node(out: &mut String, n: &Value, depth: usize) {
        let wall = &n["metrics"]["wall_clock.elapsed"];
        let _ = writeln!(
            out,
            "\n{}{}  count {}  wall total {:.3} ms  mean {:.3} ms",
            "  ".repeat(depth),
            n["name"].as_str().unwrap_or("?"),
            n["count"],
            wall["total"].as_f64().unwrap_or(0.0) / 1e6,
            wall["mean"].as_f64().unwrap_or(0.0) / 1e6
        );
        for (name, m) in n["metrics"].as_object().into_iter().flatten() {
            if name == "wall_clock.elapsed" {
                continue;
            }
            let pass = m["pass"]
                .as_u64()
                .map_or(String::new(), |p| format!(" (pass {p})"));
            let _ = writeln!(
                out,
                "{}  {name}: total {} {}{pass}",
                "  ".repeat(depth),
                m["total"],
                m["unit"].as_str().unwrap_or("")
            );
        }
        for (name, d) in n["derived"].as_object().into_iter().flatten() {
            let _ = writeln!(
                out,
                "{}  {name} = {} (pass {})",
                "  ".repeat(depth),
                d["value"],
                d["pass"]
            );
        }
        for child in n["children"].as_array().into_iter().flatten() {
            node(out, child, depth + 1);
        }
    }
    for n in merged["merged"].as_array().into_iter().flatten() {
        node(&mut out, n, 0);
    }
    out
}

/// What one pass counted, from its `metadata.json`.
struct PassCounts {
    events: Vec<String>,
    metrics: Vec<String>,
}

impl PassCounts {
    fn from_metadata(meta: &Value) -> PassCounts {
        let names = |v: &Value, key: Option<&str>| -> Vec<String> {
            v.as_array()
                .into_iter()
                .flatten()
                .filter_map(|e| match key {
                    Some(k) => e[k].as_str(),
                    None => e.as_str(),
                })
                .map(str::to_string)
                .collect()
        };
        PassCounts {
            events: names(&meta["perf_counters"]["events"], Some("name")),
            metrics: names(&meta["perf_counters"]["metrics"], None),
        }
    }
}

/// The node at `path` (region names from the root) of a summary's merged tree.
fn find<'a>(summary: &'a Value, path: &[String]) -> Option<&'a Value> {
    let mut nodes = summary["merged"].as_array()?;
    let mut found = None;
    for name in path {
        let node = nodes.iter().find(|n| n["name"].as_str() == Some(name))?;
        nodes = node["children"].as_array()?;
        found = Some(node);
    }
    found
}

fn merge_node(
    node: &mut Value,
    parent: &[String],
    summaries: &[Value],
    counted: &[PassCounts],
    variation: &mut Vec<Value>,
) {
    let mut path = parent.to_vec();
    path.push(node["name"].as_str().unwrap_or("").to_string());
    let per_pass: Vec<Option<&Value>> = summaries.iter().map(|s| find(s, &path)).collect();
    // Counters: from the pass that counted the event.
    let mut metrics = node["metrics"].as_object().cloned().unwrap_or_default();
    metrics.retain(|k, _| !k.starts_with("perf_counters."));
    let mut derived = Map::new();
    for (pass, (found, counts)) in per_pass.iter().zip(counted).enumerate() {
        let Some(found) = found else { continue };
        for event in &counts.events {
            let key = format!("perf_counters.{event}");
            if let Some(m) = found["metrics"].get(&key) {
                let mut m = m.clone();
                m["pass"] = json!(pass + 1);
                metrics.entry(key).or_insert(m);
            }
        }
        for metric in &counts.metrics {
            if let Some(v) = found["derived"].get(metric) {
                derived
                    .entry(metric.clone())
                    .or_insert(json!({"value": v, "pass": pass + 1}));
            }
        }
    }
    node["metrics"] = Value::Object(metrics);
    node["derived"] = Value::Object(derived);
    // Run-to-run variation of the region's wall-clock total.
    let totals: Vec<f64> = per_pass
        .iter()
        .filter_map(|n| (*n)?["metrics"]["wall_clock.elapsed"]["total"].as_f64())
        .collect();
    let mean = totals.iter().sum::<f64>() / totals.len().max(1) as f64;
    let var = totals.iter().map(|t| (t - mean).powi(2)).sum::<f64>() / totals.len().max(1) as f64;
    let cv = if mean > 0.0 {
        100.0 * var.sqrt() / mean
    } else {
        0.0
    };
    variation.push(json!({
        "region": path.join("/"),
        "wall_clock_total_ns": totals,
        "variation_pct": cv,
    }));
    node["pass_variation_pct"] = json!(cv);
    if let Some(children) = node["children"].as_array_mut() {
        for child in children.iter_mut() {
            merge_node(child, &path, summaries, counted, variation);
        }
    }
}

/// The default `--output` of a multi-pass run.
pub(crate) fn default_template() -> PathBuf {
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    cwd.join("metron-output/%exe%-passes-%pid%-%time%")
}
