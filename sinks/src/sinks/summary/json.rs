//! `summary.json`: the document streamed straight from the region trees (no intermediate
//! `Value` tree: 2·10⁵ distinct names would otherwise cost gigabytes).

use super::*;

/// `summary.json`: the region trees streamed, the rest (small) as a `Value`. Keys in the order
/// a `Value` would write them (sorted).
pub(super) struct Document<'a> {
    pub(super) rest: Value,
    pub(super) merged: Nodes<'a>,
    pub(super) threads: Vec<ThreadDoc<'a>>,
}

impl serde::Serialize for Document<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let rest = self.rest.as_object().expect("an object");
        let mut m = s.serialize_map(Some(rest.len() + 2))?;
        let mut streamed = [("merged", 0u8), ("threads", 1u8)].into_iter().peekable();
        for (key, value) in rest {
            while let Some(&(name, which)) = streamed.peek() {
                if name > key.as_str() {
                    break;
                }
                match which {
                    0 => m.serialize_entry(name, &self.merged)?,
                    _ => m.serialize_entry(name, &self.threads)?,
                }
                streamed.next();
            }
            m.serialize_entry(key, value)?;
        }
        for (name, which) in streamed {
            match which {
                0 => m.serialize_entry(name, &self.merged)?,
                _ => m.serialize_entry(name, &self.threads)?,
            }
        }
        m.end()
    }
}

/// One thread of `summary.json`.
pub(super) struct ThreadDoc<'a> {
    pub(super) summary: &'a ThreadSummary,
    /// `Some(n)`: the table of `n` threads of one name, folded (`threads.rs`).
    pub(super) folded: Option<usize>,
    pub(super) regions: Nodes<'a>,
}

impl serde::Serialize for ThreadDoc<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let t = self.summary;
        let mut m = s.serialize_map(Some(7))?;
        m.serialize_entry("index", &t.info.index)?;
        m.serialize_entry("is_metron", &t.info.is_metron)?;
        m.serialize_entry("name", &t.info.name)?;
        m.serialize_entry("records_dropped", &t.dropped)?;
        m.serialize_entry("regions", &self.regions)?;
        if let Some(n) = self.folded {
            m.serialize_entry("threads", &n)?;
            m.serialize_entry("tid", &Value::Null)?;
        } else {
            m.serialize_entry("tid", &t.info.tid)?;
        }
        m.end()
    }
}

/// The children of `node`, as a JSON array of regions.
#[derive(Clone, Copy)]
pub(super) struct Nodes<'a> {
    pub(super) tree: &'a Tree,
    pub(super) node: usize,
    pub(super) derive: Option<&'a DerivedMetrics>,
}

impl serde::Serialize for Nodes<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeSeq;
        let children = &self.tree.nodes[self.node].children;
        let mut seq = s.serialize_seq(Some(children.len()))?;
        for &c in children {
            seq.serialize_element(&NodeDoc {
                nodes: *self,
                child: c,
            })?;
        }
        seq.end()
    }
}

/// A region's metrics, each a map of its statistics (keys sorted).
pub(super) struct MetricsDoc<'a> {
    pub(super) metrics: Vec<(String, Unit, &'a Stats)>,
    pub(super) parent_wall: Option<f64>,
    pub(super) children_wall: f64,
    /// Metron's set-up time taken out of the region's wall time (ns).
    pub(super) setup_excluded: u64,
}

impl serde::Serialize for MetricsDoc<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(Some(self.metrics.len()))?;
        for (name, unit, stats) in &self.metrics {
            m.serialize_entry(
                name,
                &StatsDoc {
                    stats,
                    unit: *unit,
                    wall: (name == WALL_METRIC).then_some((self.parent_wall, self.children_wall)),
                    setup_excluded: self.setup_excluded,
                },
            )?;
        }
        m.end()
    }
}

/// One metric's statistics; the wall clock's also has `pct_parent` and `self`.
pub(super) struct StatsDoc<'a> {
    pub(super) stats: &'a Stats,
    pub(super) unit: Unit,
    /// (the parent's total wall time, the children's), for the wall clock only.
    pub(super) wall: Option<(Option<f64>, f64)>,
    /// Set-up time taken out of the wall time (ns; written when not 0).
    pub(super) setup_excluded: u64,
}

impl serde::Serialize for StatsDoc<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let st = self.stats;
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("count", &st.count)?;
        m.serialize_entry("max", &finite(st.max))?;
        m.serialize_entry("mean", &st.mean())?;
        m.serialize_entry("min", &finite(st.min))?;
        if let Some((parent_wall, children_wall)) = self.wall {
            let pct = parent_wall
                .filter(|p| *p > 0.0)
                .map(|p| 100.0 * st.total / p);
            m.serialize_entry("pct_parent", &pct)?;
            m.serialize_entry("self", &(st.total - children_wall))?;
            if self.setup_excluded > 0 {
                m.serialize_entry("setup_excluded", &self.setup_excluded)?;
            }
        }
        m.serialize_entry("stddev", &st.stddev())?;
        m.serialize_entry("total", &st.total)?;
        m.serialize_entry("unit", self.unit.symbol())?;
        m.end()
    }
}

/// Region `child` (a child of `nodes.node`).
pub(super) struct NodeDoc<'a> {
    pub(super) nodes: Nodes<'a>,
    pub(super) child: usize,
}

impl serde::Serialize for NodeDoc<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let Nodes { tree, node, derive } = self.nodes;
        let parent_wall = tree.nodes[node].metrics.first().map(|s| s.total);
        let n = &tree.nodes[self.child];
        let site = n.site.expect("non-root");
        // A set-up slice's time is already out of this region's wall time.
        let children_wall: f64 = n
            .children
            .iter()
            .filter(|k| tree.nodes[**k].site.is_none_or(|s| s.name != SETUP_REGION))
            .map(|k| tree.nodes[*k].metrics[0].total)
            .sum();
        // Fields with no value (unused or unavailable counters) are left out; sorted by name,
        // as a map of names writes them.
        let mut metrics: Vec<(String, Unit, &Stats)> = metric_names(site)
            .iter()
            .zip(&n.metrics)
            .filter(|((name, _), s)| s.count > 0 || name == WALL_METRIC)
            .map(|((name, unit), s)| (name.clone(), *unit, s))
            .collect();
        metrics.sort_by(|a, b| a.0.cmp(&b.0));
        let metrics = MetricsDoc {
            metrics,
            parent_wall,
            children_wall,
            setup_excluded: n.setup_excluded_ns,
        };
        let derived: serde_json::Map<String, Value> = derived_metrics(derive, site, &n.metrics)
            .into_iter()
            .map(|(name, v)| (name, json!(v)))
            .collect();
        let mut m = s.serialize_map(Some(8))?;
        m.serialize_entry(
            "children",
            &Nodes {
                tree,
                node: self.child,
                derive,
            },
        )?;
        m.serialize_entry("count", &n.metrics[0].count)?;
        m.serialize_entry("derived", &derived)?;
        m.serialize_entry("file", site.file)?;
        m.serialize_entry("line", &site.line)?;
        m.serialize_entry("metrics", &metrics)?;
        m.serialize_entry("module", site.module)?;
        m.serialize_entry("name", site.name)?;
        m.end()
    }
}
