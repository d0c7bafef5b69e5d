//! `metron whatif`'s answer: the run and each instance of a region, as recorded, as replayed
//! unchanged and as predicted with the speedups, and the critical path before and after.

use crate::critical::{self, Path, Resource, Row};
use crate::graph::{Graph, Kind};
use crate::idle::{idle, Idle};
use crate::replay::{replay, Replay};
use crate::speedup::{Speedup, Speedups};
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;

/// One instance of the region asked for (`--per`).
#[derive(Clone, Debug)]
pub struct Instance {
    /// Its thread.
    pub tid: u32,
    /// Recorded duration, ns.
    pub recorded: i64,
    /// Replayed unchanged, ns.
    pub replayed: i64,
    /// Predicted with the speedups, ns.
    pub predicted: i64,
}

/// The whole answer.
#[derive(Clone, Debug)]
pub struct Answer {
    /// The speedups applied.
    pub speedups: Vec<Speedup>,
    /// The run's span: recorded, replayed unchanged, predicted (ns).
    pub run: (i64, i64, i64),
    /// The region asked for and its instances.
    pub per: Option<(String, Vec<Instance>)>,
    /// The critical path of the run as recorded and the table of its items.
    pub before: Path,
    /// The table: items with the most time on the path, their gain if 2× faster.
    pub table: Vec<Row>,
    /// The critical path with the speedups.
    pub after: Path,
    /// Counts of the graph (threads, streams, calls, operations, inferred constraints).
    pub counts: Value,
    /// Per device, its idle time and the causes (the run as recorded).
    pub idle: BTreeMap<String, Idle>,
}

/// Answers a what-if on `g`.
pub fn answer(g: &Graph, speedups: Vec<Speedup>, per: Option<&str>) -> Result<Answer, String> {
    let none = Speedups::none(g);
    let changed = Speedups::resolve(speedups.clone(), g)?;
    let base = replay(g, &none)?;
    let predicted = replay(g, &changed)?;
    // The run ends with the node that ended last; a prediction moves that node's end.
    let recorded_span = match (
        g.nodes.iter().map(|n| n.start).min(),
        g.nodes.iter().map(|n| n.end).max(),
    ) {
        (Some(a), Some(b)) => b - a,
        _ => 0,
    };
    let per = match per {
        Some(name) => Some((
            name.to_string(),
            instances(g, &none, &changed, &base, &predicted, name)?,
        )),
        None => None,
    };
    let (before, table) = critical::table(g, 12)?;
    let after = match base.last() {
        Some(last) => critical::path(g, &changed, &predicted, last),
        None => Path::default(),
    };
    let count = |f: &dyn Fn(&Kind) -> bool| g.nodes.iter().filter(|n| f(&n.kind)).count();
    let counts = json!({
        "threads": g.threads.len(),
        "streams": g.streams.len(),
        "api_calls": count(&|k| matches!(k, Kind::Call { .. })),
        "device_operations": count(&|k| matches!(k, Kind::Op { .. })),
        "regions": g.regions.len(),
        "blocked_syncs": g.blocked_syncs,
        "waits_on_another_stream": g.inferred_other_stream,
        "recorded_waits": g.recorded_waits,
    });
    Ok(Answer {
        speedups,
        run: match base.last() {
            Some(last) => (recorded_span, base.span_to(last), predicted.span_to(last)),
            None => (0, 0, 0),
        },
        per,
        before,
        table,
        after,
        counts,
        idle: idle(g),
    })
}

fn instances(
    g: &Graph,
    none: &Speedups,
    changed: &Speedups,
    base: &Replay,
    predicted: &Replay,
    name: &str,
) -> Result<Vec<Instance>, String> {
    let Some(index) = g.names.iter().position(|n| n == name) else {
        return Err(format!(
            "--per {name:?}: no region of that name in this run"
        ));
    };
    // Each Work node's piece boundaries, once per node, as replayed and as predicted.
    let mut cache: HashMap<usize, (Vec<i64>, Vec<i64>)> = HashMap::new();
    let mut at = |(node, pieces): (usize, usize)| {
        let (p0, p1) = cache
            .entry(node)
            .or_insert_with(|| (none.prefixes(g, node), changed.prefixes(g, node)));
        (base.at(node, pieces, p0), predicted.at(node, pieces, p1))
    };
    let mut out = Vec::new();
    for r in g.regions.iter().filter(|r| r.name == index) {
        let ((b0, b1), (e0, e1)) = (at(r.begin), at(r.end));
        out.push(Instance {
            tid: g.threads[r.thread],
            recorded: r.end_ns - r.start_ns,
            replayed: e0 - b0,
            predicted: e1 - b1,
        });
    }
    if out.is_empty() {
        return Err(format!(
            "--per {name:?}: no region of that name in this run"
        ));
    }
    Ok(out)
}

fn ms(ns: i64) -> String {
    format!("{:.3} ms", ns as f64 / 1e6)
}

fn change(from: i64, to: i64) -> String {
    if from == 0 {
        return "—".to_string();
    }
    format!("{:+.1} %", (to - from) as f64 * 100.0 / from as f64)
}

fn resource(r: &Resource) -> String {
    match r {
        Resource::Thread(t) => format!("CPU thread {t}"),
        Resource::Stream(s) => s.clone(),
        Resource::Between => "latencies between them".to_string(),
    }
}

fn shares(p: &Path) -> String {
    let total: i64 = p.resources.iter().map(|r| r.1).sum::<i64>().max(1);
    p.resources
        .iter()
        .take(4)
        .map(|(r, ns)| format!("{} {:.0} %", resource(r), *ns as f64 * 100.0 / total as f64))
        .collect::<Vec<_>>()
        .join(", ")
}

/// What the model takes into account and what it does not, said with every answer.
pub const LIMITS: &str = "\
Modelled: program order on each CPU thread; each launch and the work it launched (graph launches
included); stream order; calls that waited for device work (device, stream and event syncs,
blocking copies, cudaFree) with their wake-up; work held by another stream (an event wait), found
from the times. A region's speedup shortens its CPU time between GPU API calls.
Not modelled: contention between concurrent kernels and memory-bandwidth sharing (a kernel keeps
its duration whatever runs beside it), multi-GPU collectives (NCCL), CPU threads waiting for each
other (locks, queues), and synchronizations the recording cannot show from the times (a sync
whose work had already ended).";

impl Answer {
    /// The answer as text.
    pub fn text(&self) -> String {
        let mut out = String::new();
        let (recorded, replayed, predicted) = self.run;
        let _ = writeln!(
            out,
            "run: recorded {}, replayed unchanged {} ({}), predicted {} ({})",
            ms(recorded),
            ms(replayed),
            change(recorded, replayed),
            ms(predicted),
            change(replayed, predicted)
        );
        if !self.speedups.is_empty() {
            let list: Vec<String> = self
                .speedups
                .iter()
                .map(|s| format!("{} {:.0} % faster", s.pattern, s.fraction * 100.0))
                .collect();
            let _ = writeln!(out, "with: {}", list.join(", "));
        }
        if let Some((name, list)) = &self.per {
            let sum = |f: fn(&Instance) -> i64| list.iter().map(f).sum::<i64>();
            let (r, u, p) = (
                sum(|i| i.recorded),
                sum(|i| i.replayed),
                sum(|i| i.predicted),
            );
            let n = list.len() as i64;
            let _ = writeln!(
                out,
                "\nper {name} ({} instances): mean recorded {}, replayed {} ({}), predicted {} ({})",
                n,
                ms(r / n),
                ms(u / n),
                change(r, u),
                ms(p / n),
                change(u, p)
            );
            for (k, i) in list.iter().enumerate().take(10) {
                let _ = writeln!(
                    out,
                    "  #{:<3} thread {:<8} recorded {:>12}  replayed {:>12}  predicted {:>12} ({})",
                    k + 1,
                    i.tid,
                    ms(i.recorded),
                    ms(i.replayed),
                    ms(i.predicted),
                    change(i.replayed, i.predicted)
                );
            }
            if list.len() > 10 {
                let _ = writeln!(
                    out,
                    "  ... {} more (--json lists every instance)",
                    list.len() - 10
                );
            }
        }
        let _ = writeln!(out, "\n{}", self.path_line());
        for line in self.table_lines(self.table.len()) {
            let _ = writeln!(out, "{line}");
        }
        for line in self.idle_lines() {
            let _ = writeln!(out, "\n{line}");
        }
        if !self.speedups.is_empty() {
            let _ = writeln!(
                out,
                "\ncritical path with the speedups ({}): {}",
                ms(self.after.length),
                shares(&self.after)
            );
        }
        let _ = writeln!(out, "\n{LIMITS}");
        out
    }

    /// The line that heads the table: the length of the critical path and its share per
    /// resource.
    pub(crate) fn path_line(&self) -> String {
        format!(
            "critical path of the run as recorded ({}): {}",
            ms(self.before.length),
            shares(&self.before)
        )
    }

    /// The table's header and its first `rows` rows, indented.
    pub(crate) fn table_lines(&self, rows: usize) -> Vec<String> {
        let mut lines = vec![format!(
            "  {:<60} {:>12} {:>16}",
            "item", "on the path", "gain if 2x faster"
        )];
        for row in self.table.iter().take(rows) {
            let gain = row.gain_if_2x.map_or("—".to_string(), |g| {
                format!("{} ({})", ms(g), change(self.run.1, self.run.1 - g))
            });
            lines.push(format!(
                "  {:<60} {:>12} {:>16}",
                truncate(&row.item.label(), 60),
                ms(row.on_path),
                gain
            ));
        }
        lines
    }

    /// Per device that was idle, one line: its idle time and the causes.
    pub(crate) fn idle_lines(&self) -> Vec<String> {
        self.idle
            .iter()
            .filter(|(_, i)| i.idle > 0)
            .map(|(device, i)| {
                format!(
                    "{device} idle {} of {} ({:.0} %): waiting for launches {}, after a sync {}, copies only {}",
                    ms(i.idle),
                    ms(i.span),
                    i.idle as f64 * 100.0 / i.span.max(1) as f64,
                    ms(i.waiting_for_launches),
                    ms(i.after_sync),
                    ms(i.copies_only)
                )
            })
            .collect()
    }

    /// A row of the table as JSON.
    pub(crate) fn row_json(row: &Row) -> Value {
        json!({"item": row.item.label(), "on_path_ns": row.on_path, "gain_if_2x_ns": row.gain_if_2x})
    }

    /// The critical path's length and its time per resource, as JSON.
    pub(crate) fn path_json(p: &Path) -> Value {
        json!({
            "length_ns": p.length,
            "items": p.items.iter().map(|(i, ns)| json!({"item": i.label(), "ns": ns})).collect::<Vec<_>>(),
            "resources": Answer::resources_json(p),
        })
    }

    /// The critical path's time per resource, as JSON.
    pub(crate) fn resources_json(p: &Path) -> Value {
        p.resources
            .iter()
            .map(|(r, ns)| json!({"resource": resource(r), "ns": ns}))
            .collect()
    }

    /// The idle time of each device, as JSON.
    pub(crate) fn idle_json(&self) -> Value {
        Value::Object(
            self.idle
                .iter()
                .map(|(d, i)| (d.clone(), i.json()))
                .collect(),
        )
    }

    /// The answer as JSON.
    pub fn json(&self) -> Value {
        json!({
            "speedups": self.speedups.iter().map(|s| json!({"name": s.pattern, "percent": s.fraction * 100.0})).collect::<Vec<_>>(),
            "run": {"recorded_ns": self.run.0, "replayed_ns": self.run.1, "predicted_ns": self.run.2},
            "per": self.per.as_ref().map(|(name, list)| json!({
                "region": name,
                "instances": list.iter().map(|i| json!({
                    "tid": i.tid, "recorded_ns": i.recorded, "replayed_ns": i.replayed, "predicted_ns": i.predicted,
                })).collect::<Vec<_>>(),
            })),
            "critical_path": Answer::path_json(&self.before),
            "table": self.table.iter().map(Answer::row_json).collect::<Vec<_>>(),
            "critical_path_predicted": Answer::path_json(&self.after),
            "graph": self.counts,
            "gpu_idle": self.idle_json(),
            "limits": LIMITS,
        })
    }
}

fn truncate(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(n - 1).collect();
        t.push('…');
        t
    }
}
