//! `summary.txt`: the region tables (the top regions by total time, their metrics in display
//! units, derived metrics).

use super::*;

/// How a unit is shown in text: (suffix, divisor).
pub(super) fn display_unit(unit: Unit) -> (&'static str, f64) {
    match unit {
        Unit::Nanoseconds => ("us", 1e3),
        Unit::Bytes => ("KiB", 1024.0),
        Unit::Count => ("count", 1.0),
        Unit::Number => ("", 1.0),
    }
}

/// Regions a table of `summary.txt` shows: those with the most total wall time, with their
/// parents; the others are folded into one line per parent (`summary.json` has them all).
pub(super) const TOP_REGIONS: usize = 100;

/// Which nodes of `tree` `summary.txt` shows: all of them up to [`TOP_REGIONS`], otherwise the
/// [`TOP_REGIONS`] with the most total wall time and their ancestors.
pub(super) fn shown_nodes(tree: &Tree) -> Vec<bool> {
    let n = tree.nodes.len();
    if n <= TOP_REGIONS + 1 {
        return vec![true; n];
    }
    let mut parent = vec![0usize; n];
    for (i, node) in tree.nodes.iter().enumerate() {
        for &c in &node.children {
            parent[c] = i;
        }
    }
    let mut order: Vec<usize> = (1..n).collect();
    order.sort_unstable_by(|a, b| {
        let (ta, tb) = (
            tree.nodes[*a].metrics[0].total,
            tree.nodes[*b].metrics[0].total,
        );
        tb.total_cmp(&ta).then(a.cmp(b))
    });
    let mut shown = vec![false; n];
    shown[0] = true;
    for &i in order.iter().take(TOP_REGIONS) {
        let mut at = i;
        while !shown[at] {
            shown[at] = true;
            at = parent[at];
        }
    }
    shown
}

pub(super) fn write_tree_tables(
    out: &mut String,
    title: &str,
    tree: &Tree,
    derive: Option<&DerivedMetrics>,
) {
    // Every metric that appears in this tree, wall clock first.
    let mut metrics: Vec<(String, Unit)> = Vec::new();
    for node in tree.nodes.iter().skip(1) {
        let names = metric_names(node.site.expect("non-root"));
        for (m, s) in names.iter().zip(&node.metrics) {
            if (s.count > 0 || m.0 == WALL_METRIC) && !metrics.iter().any(|(n, _)| *n == m.0) {
                metrics.push(m.clone());
            }
        }
    }
    if metrics.is_empty() {
        let _ = writeln!(out, "\n{title}: no regions");
        return;
    }
    let shown = shown_nodes(tree);
    for (metric, unit) in metrics {
        let (suffix, divisor) = display_unit(unit);
        let _ = writeln!(out, "\n{metric} [{suffix}], {title}");
        let _ = writeln!(
            out,
            "| {:<40} | {:>9} | {:>12} | {:>12} | {:>12} | {:>12} | {:>12} | {:>8} | {:>8} |",
            "region", "count", "total", "mean", "min", "max", "stddev", "% parent", "% self"
        );
        let _ = writeln!(
            out,
            "|{}|",
            ["-"; 9]
                .iter()
                .zip([42, 11, 14, 14, 14, 14, 14, 10, 10])
                .map(|(d, w)| d.repeat(w))
                .collect::<Vec<_>>()
                .join("|")
        );
        write_rows(out, tree, &shown, 0, 0, &metric, divisor);
    }
    write_derived(out, title, tree, &shown, derive);
}

/// One line per region and derived metric (`METRON_METRICS`), from the region's totals.
pub(super) fn write_derived(
    out: &mut String,
    title: &str,
    tree: &Tree,
    shown: &[bool],
    derive: Option<&DerivedMetrics>,
) {
    let mut rows = Vec::new();
    for (node, _) in tree.nodes.iter().zip(shown).skip(1).filter(|(_, s)| **s) {
        let site = node.site.expect("non-root");
        for (metric, value) in derived_metrics(derive, site, &node.metrics) {
            rows.push((site.name, metric, value));
        }
    }
    if rows.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "
derived metrics, {title}"
    );
    let _ = writeln!(
        out,
        "| {:<40} | {:<24} | {:>14} |",
        "region", "metric", "value"
    );
    for (region, metric, value) in rows {
        let region: String = region.chars().take(40).collect();
        let _ = writeln!(out, "| {region:<40} | {metric:<24} | {value:>14.4} |");
    }
}

pub(super) fn write_rows(
    out: &mut String,
    tree: &Tree,
    shown: &[bool],
    node: usize,
    depth: usize,
    metric: &str,
    divisor: f64,
) {
    // The children folded away: how many, and their statistics of this metric merged.
    let mut folded = (0usize, Stats::default());
    for &c in &tree.nodes[node].children {
        let n = &tree.nodes[c];
        if !shown[c] {
            let names = metric_names(n.site.expect("non-root"));
            if let Some(i) = names.iter().position(|(name, _)| name == metric) {
                folded.0 += 1;
                folded.1.merge(&n.metrics[i]);
            }
            continue;
        }
        let site = n.site.expect("non-root");
        let names = metric_names(site);
        if let Some(index) = names
            .iter()
            .position(|(name, _)| name == metric)
            .filter(|i| n.metrics[*i].count > 0 || *i == 0)
        {
            let s = &n.metrics[index];
            let parent = tree.nodes[node]
                .metrics
                .get(index)
                .filter(|_| node != 0)
                .map(|p| p.total);
            let pct_parent = match parent {
                Some(p) if p > 0.0 => format!("{:.1}", 100.0 * s.total / p),
                _ => "-".into(),
            };
            let children: f64 = n
                .children
                .iter()
                .filter_map(|k| tree.nodes[*k].metrics.get(index))
                .map(|m| m.total)
                .sum();
            let pct_self = if s.total > 0.0 && index == 0 {
                format!("{:.1}", 100.0 * (s.total - children) / s.total)
            } else {
                "-".into()
            };
            let label = if depth == 0 {
                site.name.to_string()
            } else {
                format!("{}|_ {}", "  ".repeat(depth - 1), site.name)
            };
            let label: String = label.chars().take(40).collect();
            let _ = writeln!(
                out,
                "| {:<40} | {:>9} | {:>12.3} | {:>12.3} | {:>12.3} | {:>12.3} | {:>12.3} | {:>8} | {:>8} |",
                label,
                s.count,
                s.total / divisor,
                s.mean() / divisor,
                finite(s.min) / divisor,
                finite(s.max) / divisor,
                s.stddev() / divisor,
                pct_parent,
                pct_self
            );
        }
        write_rows(out, tree, shown, c, depth + 1, metric, divisor);
    }
    if folded.0 > 0 {
        let s = folded.1;
        let label = format!("{} other regions (folded)", folded.0);
        let label = if depth == 0 {
            label
        } else {
            format!("{}|_ {label}", "  ".repeat(depth - 1))
        };
        let label: String = label.chars().take(40).collect();
        let _ = writeln!(
            out,
            "| {:<40} | {:>9} | {:>12.3} | {:>12} | {:>12.3} | {:>12.3} | {:>12} | {:>8} | {:>8} |",
            label,
            s.count,
            s.total / divisor,
            "-",
            finite(s.min) / divisor,
            finite(s.max) / divisor,
            "-",
            "-",
            "-"
        );
    }
}
