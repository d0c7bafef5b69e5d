//! Causal profiles: `profile.coz` (Coz's format, written by Metron's causal runs or by Coz)
//! read back into speedup curves, the summary table and the SVG of the curves.
//!
//! For each progress point and selected line, the experiments at one line speedup are pooled
//! (their visits and their durations summed, as Coz's viewer does); the *period* of a
//! throughput point is duration / visits, the latency of a latency point is its mean number
//! in flight over its arrival rate (Little's law). The program speedup at line speedup s is
//! (baseline − value) / baseline, where the baseline pools every 0 % experiment of the point
//! *in the same run*, whichever line was selected: a 0 % experiment inserts no delay, so they
//! all measure the same program (Coz's viewer uses the selected line's own 0 % experiments;
//! pooling gives a steadier baseline with the same expectation). Runs are compared each with
//! its own baseline and then averaged, weighted by their experiments' durations, so runs made
//! under different loads are not mixed; a run without a 0 % experiment (Coz's
//! `--fixed-speedup` runs) is compared with the baseline of all runs.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;

/// What a progress point measured in one experiment.
#[derive(Clone, Debug, PartialEq)]
pub enum Observation {
    /// Visits of a throughput point.
    Throughput {
        /// The point's name.
        name: String,
        /// Visits during the experiment.
        delta: u64,
    },
    /// A latency point.
    Latency {
        /// The point's name.
        name: String,
        /// Begins during the experiment.
        arrivals: u64,
        /// Ends during the experiment.
        departures: u64,
        /// Transactions in flight at its end.
        difference: f64,
    },
}

/// One experiment of `profile.coz`.
#[derive(Clone, Debug, PartialEq)]
pub struct Experiment {
    /// The line sped up, `file:line`.
    pub selected: String,
    /// Its virtual speedup, 0 to 1.
    pub speedup: f64,
    /// Duration less the delays inserted, ns.
    pub duration: u64,
    /// Samples in the selected line during the experiment.
    pub selected_samples: u64,
    /// What each progress point saw.
    pub points: Vec<Observation>,
    /// Which run (`startup` record) it belongs to, from 0.
    pub run: usize,
}

/// A parsed `profile.coz` (several runs appended are one profile).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Profile {
    /// Every experiment, in order.
    pub experiments: Vec<Experiment>,
    /// Samples per line, summed over the runs' last `samples` records.
    pub samples: BTreeMap<String, u64>,
    /// Runs (`startup` records).
    pub runs: usize,
}

fn field<'a>(
    fields: &'a [(&'a str, &'a str)],
    key: &str,
    line_no: usize,
) -> Result<&'a str, String> {
    fields
        .iter()
        .find(|(k, _)| *k == key)
        .map(|(_, v)| *v)
        .ok_or_else(|| format!("profile.coz line {line_no}: no {key}= field"))
}

fn number<T: std::str::FromStr>(
    fields: &[(&str, &str)],
    key: &str,
    line_no: usize,
) -> Result<T, String> {
    let v = field(fields, key, line_no)?;
    v.parse()
        .map_err(|_| format!("profile.coz line {line_no}: {key}={v:?} is not a number"))
}

/// Parses Coz's text format (`experiment`, `throughput-point`, `latency-point`, `samples`,
/// `startup`, `runtime` records of tab-separated `key=value` fields). Unknown records are
/// skipped; a known record with a missing or malformed field is an error naming the line.
pub fn parse(text: &str) -> Result<Profile, String> {
    let mut profile = Profile::default();
    // Samples of the current run (each run logs cumulative counts; the last list wins).
    let mut run_samples: BTreeMap<String, u64> = BTreeMap::new();
    for (i, raw) in text.lines().enumerate() {
        let line_no = i + 1;
        let mut parts = raw.split('\t');
        let kind = parts.next().unwrap_or("").trim();
        let fields: Vec<(&str, &str)> = parts.filter_map(|p| p.split_once('=')).collect();
        match kind {
            "startup" => {
                for (k, v) in std::mem::take(&mut run_samples) {
                    *profile.samples.entry(k).or_default() += v;
                }
                profile.runs += 1;
            }
            "experiment" => profile.experiments.push(Experiment {
                selected: field(&fields, "selected", line_no)?.to_string(),
                speedup: number(&fields, "speedup", line_no)?,
                duration: number(&fields, "duration", line_no)?,
                selected_samples: number(&fields, "selected-samples", line_no)?,
                points: Vec::new(),
                run: profile.runs.saturating_sub(1),
            }),
            "throughput-point" | "progress-point" => {
                let obs = Observation::Throughput {
                    name: field(&fields, "name", line_no)?.to_string(),
                    delta: number(&fields, "delta", line_no)?,
                };
                if let Some(e) = profile.experiments.last_mut() {
                    e.points.push(obs);
                }
            }
            "latency-point" => {
                let obs = Observation::Latency {
                    name: field(&fields, "name", line_no)?.to_string(),
                    arrivals: number(&fields, "arrivals", line_no)?,
                    departures: number(&fields, "departures", line_no)?,
                    difference: number(&fields, "difference", line_no)?,
                };
                if let Some(e) = profile.experiments.last_mut() {
                    e.points.push(obs);
                }
            }
            "samples" => {
                let location = field(&fields, "location", line_no)?.to_string();
                run_samples.insert(location, number(&fields, "count", line_no)?);
            }
            _ => {}
        }
    }
    for (k, v) in run_samples {
        *profile.samples.entry(k).or_default() += v;
    }
    Ok(profile)
}

/// Pooled measurements of one (line, point, speedup).
#[derive(Clone, Copy, Debug, Default)]
struct Pool {
    duration: f64,
    visits: f64,
    /// Latency points: the duration-weighted mean in flight.
    difference: f64,
    latency: bool,
    experiments: usize,
}

impl Pool {
    fn add(&mut self, duration: u64, obs: &Observation) {
        let d = duration as f64;
        match obs {
            Observation::Throughput { delta, .. } => self.visits += *delta as f64,
            Observation::Latency {
                arrivals,
                difference,
                ..
            } => {
                self.latency = true;
                self.visits += *arrivals as f64;
                let total = self.duration + d;
                if total > 0.0 {
                    self.difference = (self.difference * self.duration + difference * d) / total;
                }
            }
        }
        self.duration += d;
        self.experiments += 1;
    }

    /// Period (throughput) or mean latency (latency), ns; `None` without visits.
    fn value(&self) -> Option<f64> {
        if self.visits <= 0.0 || self.duration <= 0.0 {
            return None;
        }
        Some(if self.latency {
            self.difference / (self.visits / self.duration)
        } else {
            self.duration / self.visits
        })
    }
}

/// Runs' program speedups at one line speedup: (Σ duration × speedup, Σ duration, experiments).
type Weighted = (f64, f64, usize);

/// The speedup curve of one line for one progress point.
#[derive(Clone, Debug, PartialEq)]
pub struct Curve {
    /// The progress point.
    pub point: String,
    /// The line, `file:line`.
    pub line: String,
    /// (line speedup %, program speedup %, experiments) for each line speedup measured.
    pub points: Vec<(u32, f64, usize)>,
    /// Experiments of this line that saw the point.
    pub experiments: usize,
    /// Least-squares slope through the origin of program speedup against line speedup.
    pub slope: f64,
    /// Predicted program speedup (%) at a 20 % line speedup: the least-squares line through
    /// the origin of the 5-40 % points (weighted by their experiments) at 20 %; without such
    /// points, the 20 % point or the line between its neighbours, else the slope.
    pub at_20: f64,
}

impl Curve {
    /// Experiments at line speedups of 5-40 %, the ones the ranking's prediction uses.
    pub fn ranged_experiments(&self) -> usize {
        self.points
            .iter()
            .filter(|p| p.0 > 0 && p.0 <= 40)
            .map(|p| p.2)
            .sum()
    }

    /// The program speedup (%) measured at line speedup `s` (%), if any.
    pub fn at(&self, s: u32) -> Option<f64> {
        self.points.iter().find(|p| p.0 == s).map(|p| p.1)
    }

    /// Experiments at line speedup `s` (%).
    pub fn experiments_at(&self, s: u32) -> usize {
        self.points.iter().find(|p| p.0 == s).map_or(0, |p| p.2)
    }
}

fn obs_name(o: &Observation) -> &str {
    match o {
        Observation::Throughput { name, .. } | Observation::Latency { name, .. } => name,
    }
}

/// The curves of every (point, line), each point's lines ranked by predicted speedup at 20 %
/// (highest first), points in name order.
pub fn curves(profile: &Profile) -> Vec<Curve> {
    // (point, line, speedup %, run) → pool; (point, run) and point → pooled baselines.
    let mut pools: BTreeMap<(String, String, u32, usize), Pool> = BTreeMap::new();
    let mut run_baselines: BTreeMap<(String, usize), Pool> = BTreeMap::new();
    let mut baselines: BTreeMap<String, Pool> = BTreeMap::new();
    for e in &profile.experiments {
        let s = (e.speedup * 100.0).round() as u32;
        for o in &e.points {
            let name = obs_name(o).to_string();
            pools
                .entry((name.clone(), e.selected.clone(), s, e.run))
                .or_default()
                .add(e.duration, o);
            if s == 0 {
                run_baselines
                    .entry((name.clone(), e.run))
                    .or_default()
                    .add(e.duration, o);
                baselines.entry(name).or_default().add(e.duration, o);
            }
        }
    }
    // (point, line) → speedup % → (Σ weight × program speedup, Σ weight, experiments).
    let mut by_key: BTreeMap<(String, String), BTreeMap<u32, Weighted>> = BTreeMap::new();
    for ((point, line, s, run), pool) in pools {
        let entry = by_key
            .entry((point.clone(), line))
            .or_default()
            .entry(s)
            .or_default();
        entry.2 += pool.experiments;
        let base = run_baselines
            .get(&(point.clone(), run))
            .and_then(Pool::value)
            .or_else(|| baselines.get(&point).and_then(Pool::value));
        if let (Some(base), Some(v)) = (base, pool.value()) {
            entry.0 += pool.duration * 100.0 * (base - v) / base;
            entry.1 += pool.duration;
        }
    }
    let mut out: Vec<Curve> = Vec::new();
    for ((point, line), list) in by_key {
        let mut points = Vec::new();
        let mut experiments = 0;
        for (s, (sum, weight, n)) in &list {
            experiments += n;
            if *weight > 0.0 {
                points.push((*s, sum / weight, *n));
            }
        }
        if points.is_empty() {
            continue;
        }
        let (num, den) = points
            .iter()
            .filter(|p| p.0 > 0)
            .fold((0.0, 0.0), |(n, d), p| {
                (
                    n + f64::from(p.0) * p.1,
                    d + f64::from(p.0) * f64::from(p.0),
                )
            });
        let slope = if den > 0.0 { num / den } else { 0.0 };
        // The 20 % prediction from every experiment at 5-40 %, each speedup weighted by its
        // experiments (a least-squares line through the origin): one noisy 20 % point
        // (nine experiments) no longer decides the ranking.
        let (num, den) =
            points
                .iter()
                .filter(|p| p.0 > 0 && p.0 <= 40)
                .fold((0.0, 0.0), |(n, d), p| {
                    let w = p.2 as f64;
                    (
                        n + w * f64::from(p.0) * p.1,
                        d + w * f64::from(p.0) * f64::from(p.0),
                    )
                });
        let at_20 = if den > 0.0 {
            20.0 * num / den
        } else {
            interpolate(&points, 20).unwrap_or(slope * 20.0)
        };
        out.push(Curve {
            point,
            line,
            points,
            experiments,
            slope,
            at_20,
        });
    }
    // A line with a handful of experiments (a progress point's own header line sampled now
    // and then) has a prediction from a few noisy points: lines measured at least a quarter as
    // often, at 5-40 %, as their point's best-measured line rank before it.
    let mut most: HashMap<String, usize> = HashMap::new();
    for c in &out {
        let m = most.entry(c.point.clone()).or_default();
        *m = (*m).max(c.ranged_experiments());
    }
    let sparse = |c: &Curve| c.ranged_experiments() * 4 < most[&c.point];
    out.sort_by(|a, b| {
        a.point
            .cmp(&b.point)
            .then(sparse(a).cmp(&sparse(b)))
            .then(b.at_20.total_cmp(&a.at_20))
            .then(a.line.cmp(&b.line))
    });
    out
}

/// The value at `s` (%), exact or between the nearest measured speedups on each side.
fn interpolate(points: &[(u32, f64, usize)], s: u32) -> Option<f64> {
    if let Some(p) = points.iter().find(|p| p.0 == s) {
        return Some(p.1);
    }
    let below = points.iter().filter(|p| p.0 < s).max_by_key(|p| p.0)?;
    let above = points.iter().filter(|p| p.0 > s).min_by_key(|p| p.0)?;
    let t = f64::from(s - below.0) / f64::from(above.0 - below.0);
    Some(below.1 + t * (above.1 - below.1))
}

/// The summary table: per progress point, its lines ranked by the predicted program speedup at
/// a 20 % line speedup, with the slope and the number of experiments.
pub fn summary_text(profile: &Profile, curves: &[Curve]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Causal profile: {} experiments over {} run(s).\nProgram speedup predicted if one line were 20 % faster (baseline: the 0 % experiments).\n",
        profile.experiments.len(),
        profile.runs.max(1)
    );
    let mut point: Option<&str> = None;
    for c in curves {
        if point != Some(c.point.as_str()) {
            point = Some(&c.point);
            let _ = writeln!(out, "progress point {}", c.point);
            let _ = writeln!(
                out,
                "  {:>4}  {:>10}  {:>7}  {:>11}  {:>7}  line",
                "rank", "at 20 %", "slope", "experiments", "samples"
            );
        }
        let rank = curves
            .iter()
            .filter(|o| o.point == c.point)
            .position(|o| o.line == c.line)
            .unwrap_or(0)
            + 1;
        let _ = writeln!(
            out,
            "  {:>4}  {:>+9.1}%  {:>7.2}  {:>11}  {:>7}  {}",
            rank,
            c.at_20,
            c.slope,
            c.experiments,
            profile.samples.get(&c.line).copied().unwrap_or(0),
            c.line
        );
    }
    if curves.is_empty() {
        out.push_str("No curves: no progress point had a 0 % experiment with at least 5 visits (run longer, or add progress points).\n");
    }
    out
}

/// The curves and table as JSON.
pub fn summary_json(profile: &Profile, curves: &[Curve]) -> serde_json::Value {
    serde_json::json!({
        "experiments": profile.experiments.len(),
        "runs": profile.runs,
        "curves": curves.iter().map(|c| serde_json::json!({
            "progress_point": c.point,
            "line": c.line,
            "predicted_speedup_at_20_percent": c.at_20,
            "slope": c.slope,
            "experiments": c.experiments,
            "samples": profile.samples.get(&c.line).copied().unwrap_or(0),
            "points": c.points.iter().map(|p| serde_json::json!({
                "line_speedup_percent": p.0,
                "program_speedup_percent": p.1,
                "experiments": p.2,
            })).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
    })
}

const COLOURS: [&str; 8] = [
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf",
];

fn xml(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The speedup curves as one SVG: a chart per progress point, its top 8 lines.
pub fn svg(curves: &[Curve]) -> String {
    let mut points: Vec<&str> = curves.iter().map(|c| c.point.as_str()).collect();
    points.dedup();
    let (w, h, pad) = (560.0, 300.0, 50.0);
    let legend_w = 420.0;
    let total_h = (h + 30.0) * points.len().max(1) as f64;
    let mut out = String::new();
    let _ = write!(
        out,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{total_h}\" font-family=\"sans-serif\" font-size=\"12\">",
        w + legend_w
    );
    for (k, point) in points.iter().enumerate() {
        let top = k as f64 * (h + 30.0);
        let lines: Vec<&Curve> = curves
            .iter()
            .filter(|c| c.point == *point)
            .take(8)
            .collect();
        let (lo, hi) = lines
            .iter()
            .flat_map(|c| c.points.iter().map(|p| p.1))
            .fold((-10.0f64, 10.0f64), |(lo, hi), v| (lo.min(v), hi.max(v)));
        let (lo, hi) = ((lo / 10.0).floor() * 10.0, (hi / 10.0).ceil() * 10.0);
        let x = |s: f64| pad + s / 100.0 * (w - 2.0 * pad);
        let y = |v: f64| top + 20.0 + (hi - v) / (hi - lo) * (h - 60.0);
        let _ = write!(
            out,
            "<text x=\"{pad}\" y=\"{}\" font-weight=\"bold\">progress point {}</text>",
            top + 14.0,
            xml(point)
        );
        // Axes and grid.
        let mut v = lo;
        while v <= hi + 1e-9 {
            let _ = write!(
                out,
                "<line x1=\"{}\" x2=\"{}\" y1=\"{2}\" y2=\"{2}\" stroke=\"{3}\"/><text x=\"{4}\" y=\"{5}\" text-anchor=\"end\">{v:.0}%</text>",
                x(0.0),
                x(100.0),
                y(v),
                if v.abs() < 1e-9 { "#444" } else { "#e4e4e4" },
                pad - 4.0,
                y(v) + 4.0
            );
            v += ((hi - lo) / 5.0).max(5.0).round();
        }
        for s in (0..=100).step_by(20) {
            let _ = write!(
                out,
                "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{s}%</text>",
                x(f64::from(s)),
                y(lo) + 16.0
            );
        }
        let _ = write!(
            out,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">line speedup</text><text x=\"12\" y=\"{}\" transform=\"rotate(-90 12 {3})\" text-anchor=\"middle\">program speedup</text>",
            x(50.0),
            y(lo) + 32.0,
            (y(lo) + y(hi)) / 2.0,
            (y(lo) + y(hi)) / 2.0
        );
        for (i, c) in lines.iter().enumerate() {
            let colour = COLOURS[i % COLOURS.len()];
            let path: Vec<String> = c
                .points
                .iter()
                .map(|p| format!("{:.1},{:.1}", x(f64::from(p.0)), y(p.1)))
                .collect();
            let _ = write!(
                out,
                "<polyline class=\"curve\" fill=\"none\" stroke=\"{colour}\" stroke-width=\"2\" points=\"{}\"><title>{}</title></polyline>",
                path.join(" "),
                xml(&c.line)
            );
            for p in &c.points {
                let _ = write!(
                    out,
                    "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"3\" fill=\"{colour}\"><title>{}: {}% faster line, {:+.1}% program ({} experiments)</title></circle>",
                    x(f64::from(p.0)),
                    y(p.1),
                    xml(&c.line),
                    p.0,
                    p.1,
                    p.2
                );
            }
            let ly = top + 30.0 + i as f64 * 18.0;
            let _ = write!(
                out,
                "<rect x=\"{}\" y=\"{}\" width=\"12\" height=\"12\" fill=\"{colour}\"/><text x=\"{}\" y=\"{}\">{} ({:+.1}% at 20%)</text>",
                w + 4.0,
                ly - 10.0,
                w + 20.0,
                ly,
                xml(short(&c.line)),
                c.at_20
            );
        }
    }
    out.push_str("</svg>");
    out
}

/// The file name and line of `path/file.c:12`.
fn short(line: &str) -> &str {
    match line.rsplit_once(':') {
        Some((file, _)) => match file.rfind('/') {
            Some(i) => &line[i + 1..],
            None => line,
        },
        None => line,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PROFILE: &str = "startup\ttime=1\n\
experiment\tselected=/a/x.c:10\tspeedup=0.00\tduration=1000\tselected-samples=5\n\
throughput-point\tname=items\tdelta=100\n\
experiment\tselected=/a/x.c:20\tspeedup=0.00\tduration=1000\tselected-samples=5\n\
throughput-point\tname=items\tdelta=100\n\
experiment\tselected=/a/x.c:10\tspeedup=0.20\tduration=800\tselected-samples=5\n\
throughput-point\tname=items\tdelta=100\n\
experiment\tselected=/a/x.c:20\tspeedup=0.20\tduration=1000\tselected-samples=5\n\
throughput-point\tname=items\tdelta=100\n\
experiment\tselected=/a/x.c:10\tspeedup=0.40\tduration=600\tselected-samples=5\n\
throughput-point\tname=items\tdelta=100\n\
runtime\ttime=9\n\
samples\tlocation=/a/x.c:10\tcount=70\n";

    #[test]
    fn curves_rank_the_line_whose_speedup_shortens_the_period() {
        let p = parse(PROFILE).unwrap();
        assert_eq!(p.experiments.len(), 5);
        assert_eq!(p.samples["/a/x.c:10"], 70);
        let c = curves(&p);
        assert_eq!(c[0].line, "/a/x.c:10");
        assert!((c[0].at(20).unwrap() - 20.0).abs() < 1e-9);
        assert!((c[0].at(40).unwrap() - 40.0).abs() < 1e-9);
        assert!((c[0].slope - 1.0).abs() < 1e-9);
        assert_eq!(c[0].experiments, 3);
        assert!(c[1].at(20).unwrap().abs() < 1e-9);
        let table = summary_text(&p, &c);
        assert!(table.contains("+20.0%"), "{table}");
        let svg = svg(&c);
        assert_eq!(svg.matches("<polyline").count(), 2);
    }

    #[test]
    fn a_line_of_a_few_experiments_ranks_after_the_well_measured_ones() {
        // x.c:10: eight experiments at 20 %, a 10 % program speedup; y.c:30: one lucky
        // experiment predicting 30 %.
        let mut text = String::from("startup\ttime=1\n");
        let mut experiment = |line: &str, speedup: &str, duration: u32| {
            text.push_str(&format!("experiment\tselected={line}\tspeedup={speedup}\tduration={duration}\tselected-samples=5\nthroughput-point\tname=items\tdelta=100\n"));
        };
        for _ in 0..8 {
            experiment("/a/x.c:10", "0.00", 1000);
            experiment("/a/x.c:10", "0.20", 900);
        }
        experiment("/a/y.c:30", "0.00", 1000);
        experiment("/a/y.c:30", "0.20", 700);
        text.push_str("runtime\ttime=9\n");
        let c = curves(&parse(&text).unwrap());
        let order: Vec<&str> = c.iter().map(|c| c.line.as_str()).collect();
        assert_eq!(order, ["/a/x.c:10", "/a/y.c:30"]);
        assert!(
            c[1].at_20 > c[0].at_20,
            "the sparse line's prediction is the larger"
        );
    }

    #[test]
    fn each_run_is_compared_with_its_own_baseline() {
        // Run 2 is twice as slow throughout (a loaded machine): alone, its 20 % experiment
        // would look like a slowdown against run 1's baseline.
        let text = "startup\ttime=1\n\
experiment\tselected=a.c:1\tspeedup=0.00\tduration=1000\tselected-samples=1\n\
throughput-point\tname=p\tdelta=100\n\
experiment\tselected=a.c:1\tspeedup=0.20\tduration=800\tselected-samples=1\n\
throughput-point\tname=p\tdelta=100\n\
startup\ttime=2\n\
experiment\tselected=a.c:1\tspeedup=0.00\tduration=2000\tselected-samples=1\n\
throughput-point\tname=p\tdelta=100\n\
experiment\tselected=a.c:1\tspeedup=0.20\tduration=1600\tselected-samples=1\n\
throughput-point\tname=p\tdelta=100\n";
        let p = parse(text).unwrap();
        assert_eq!(p.runs, 2);
        assert_eq!(p.experiments[3].run, 1);
        let c = curves(&p);
        assert!((c[0].at(20).unwrap() - 20.0).abs() < 1e-9, "{c:?}");
        assert!(c[0].at(0).unwrap().abs() < 1e-9);
    }

    #[test]
    fn a_malformed_record_names_its_line() {
        let e = parse("startup\ttime=1\nexperiment\tselected=a:1\tspeedup=x\tduration=1\tselected-samples=1\n")
            .unwrap_err();
        assert!(e.contains("line 2") && e.contains("speedup"), "{e}");
    }

    #[test]
    fn interpolation_fills_a_missing_twenty() {
        let pts = vec![(0, 0.0, 1), (10, 8.0, 1), (30, 24.0, 1)];
        assert!((interpolate(&pts, 20).unwrap() - 16.0).abs() < 1e-9);
    }
}
