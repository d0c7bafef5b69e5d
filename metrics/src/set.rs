//! The metric file format (XML) and [`MetricSet`].

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::Path;

use crate::cut::cut_input;
use crate::expr::{close_names, quoted_list, EvalError, Expr, ParseError, Pos, Values};
use crate::xml_text::{self, LineIndex, Prepared, WRAPPER};

/// The longest chain of metrics defined through other metrics (`A` uses `B` uses `C`...)
/// a metric file may have. Checking and evaluating follow such chains recursively; a longer
/// one is refused with [`MetricsError::TooDeep`].
pub const MAX_METRIC_DEPTH: usize = 64;

/// The default CPU metric file (generic `perf` events), embedded in the crate.
pub const DEFAULT_CPU_XML: &str = include_str!("../data/cpu.xml");

/// The file name used in error messages for [`DEFAULT_CPU_XML`].
pub const DEFAULT_CPU_FILE: &str = "cpu.xml";

/// The default AMD GPU counter file (AQLprofile blocks and counter ids per GFX architecture),
/// embedded in the crate.
pub const DEFAULT_AMD_GPU_XML: &str = include_str!("../data/amd_gpu.xml");

/// The file name used in error messages for [`DEFAULT_AMD_GPU_XML`].
pub const DEFAULT_AMD_GPU_FILE: &str = "amd_gpu.xml";

/// Where a definition or reference is in a metric file.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Location {
    /// The file name as given to the loader.
    pub file: String,
    /// 1-based line and column.
    pub pos: Pos,
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.file, self.pos)
    }
}

/// A hardware/OS counter of one architecture (a "basic metric").
#[derive(Debug, Clone, PartialEq)]
pub struct Counter {
    /// Unique (per architecture) counter name.
    pub name: String,
    /// The block (unit) that counts it, e.g. `hardware`, `software`, `L1`.
    pub block: String,
    /// The event id within the block (decimal or `0x` hex in the file).
    pub event: u64,
    /// Optional human description (`descr` attribute).
    pub description: Option<String>,
    /// Where the `<counter>` element is.
    pub location: Location,
}

/// The counters table of one architecture.
#[derive(Debug, Clone, PartialEq)]
pub struct Arch {
    /// Architecture name, e.g. `perf-generic`.
    pub name: String,
    /// Counters by name.
    pub counters: BTreeMap<String, Counter>,
    /// Where the (first) `<arch>` element is.
    pub location: Location,
}

/// A derived metric defined by an expression.
#[derive(Debug, Clone, PartialEq)]
pub struct Metric {
    /// Unique metric name.
    pub name: String,
    /// The parsed expression.
    pub expr: Expr,
    /// Optional description (`descr` attribute).
    pub description: Option<String>,
    /// Optional unit (`unit` attribute), e.g. `%`.
    pub unit: Option<String>,
    /// Where the `<metric>` element is.
    pub location: Location,
}

/// An error loading, merging or using metric definitions.
#[derive(Debug, Clone, PartialEq)]
pub enum MetricsError {
    /// The file could not be read.
    Io {
        /// The path.
        file: String,
        /// The OS error text.
        message: String,
    },
    /// The file is not well-formed XML.
    Xml {
        /// Where the XML parser stopped.
        at: Location,
        /// The XML parser's message.
        message: String,
    },
    /// Well-formed XML that does not follow the schema (unknown element or attribute,
    /// missing attribute, bad event id).
    Schema {
        /// The offending element or attribute.
        at: Location,
        /// What is wrong.
        message: String,
    },
    /// A metric's `expr` does not parse. `error.pos` is the position in the file.
    Parse {
        /// The file.
        file: String,
        /// The metric whose expression failed.
        metric: String,
        /// The parse error, with file line/column (boxed to keep the error type small).
        error: Box<ParseError>,
    },
    /// An expression refers to a name that is neither a metric nor a counter of any arch.
    UnknownReference {
        /// Where the reference is.
        at: Location,
        /// The metric containing it.
        metric: String,
        /// The unknown name.
        name: String,
        /// Close known names, best first.
        close: Vec<String>,
    },
    /// A name defined twice in one file (or as both a counter and a metric).
    Duplicate {
        /// Where the second definition is.
        at: Location,
        /// What kind of thing, e.g. `metric` or `counter 'x' in arch 'y'`.
        what: String,
        /// Where the first definition is.
        first: Location,
    },
    /// Metrics that refer to each other in a cycle.
    Cycle {
        /// The reference that closes the cycle.
        at: Location,
        /// The cycle, first name repeated at the end: `["IPC", "X", "IPC"]`.
        path: Vec<String>,
    },
    /// A name asked for through the API that is neither a metric nor a counter.
    UnknownMetric {
        /// The name.
        name: String,
        /// Close known names.
        close: Vec<String>,
    },
    /// Evaluating a metric failed.
    Eval {
        /// The metric being evaluated (the outermost one).
        metric: String,
        /// The failure.
        error: EvalError,
    },
    /// Metrics defined through other metrics deeper than [`MAX_METRIC_DEPTH`].
    TooDeep {
        /// The reference that goes past the limit.
        at: Location,
        /// The metric at the top of the chain.
        metric: String,
        /// The limit, [`MAX_METRIC_DEPTH`].
        limit: usize,
    },
}

impl fmt::Display for MetricsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Io { file, message } => write!(f, "{file}: cannot read: {message}"),
            Self::Xml { at, message } => {
                write!(f, "{at}: malformed XML: {}", cut_input(message))
            }
            Self::Schema { at, message } => write!(f, "{at}: {message}"),
            Self::Parse { file, error, .. } => write!(f, "{file}:{error}"),
            Self::UnknownReference {
                at,
                metric,
                name,
                close,
            } => {
                write!(
                    f,
                    "{at}: metric '{}' refers to unknown counter or metric '{}'",
                    cut_input(metric),
                    cut_input(name)
                )?;
                if !close.is_empty() {
                    write!(f, " (did you mean {}?)", quoted_list(close, "or"))?;
                }
                Ok(())
            }
            Self::Duplicate { at, what, first } => {
                write!(f, "{at}: duplicate {what} (first defined at {first})")
            }
            Self::Cycle { at, path } => {
                // Long cycles show their two ends; every name is cut.
                let names: Vec<_> = path.iter().map(|n| cut_input(n)).collect();
                let shown = if names.len() > 8 {
                    let mut ends = names[..4].to_vec();
                    ends.push("…".into());
                    ends.extend_from_slice(&names[names.len() - 3..]);
                    ends
                } else {
                    names
                };
                write!(
                    f,
                    "{at}: metrics refer to each other in a cycle: {}",
                    shown.join(" -> ")
                )
            }
            Self::UnknownMetric { name, close } => {
                write!(f, "unknown metric or counter '{}'", cut_input(name))?;
                if !close.is_empty() {
                    write!(f, " (did you mean {}?)", quoted_list(close, "or"))?;
                }
                Ok(())
            }
            Self::Eval { metric, error } => write!(f, "metric '{}': {error}", cut_input(metric)),
            Self::TooDeep { at, metric, limit } => write!(
                f,
                "{at}: metric '{}' is defined through more than {limit} levels of other \
                 metrics; at most {limit} are accepted",
                cut_input(metric)
            ),
        }
    }
}

impl std::error::Error for MetricsError {}

/// Counters per architecture plus globally defined derived metrics.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct MetricSet {
    arches: BTreeMap<String, Arch>,
    metrics: BTreeMap<String, Metric>,
}

const COUNTER_ATTRS: [&str; 4] = ["name", "block", "event", "descr"];
const METRIC_ATTRS: [&str; 4] = ["name", "expr", "descr", "unit"];

struct FileCtx<'a> {
    file: &'a str,
    /// The text the XML parser read (offsets of nodes and attributes are into it).
    prepared: &'a Prepared,
    /// The file's own lines.
    lines: &'a LineIndex<'a>,
}

impl FileCtx<'_> {
    /// Where byte `offset` of the parsed text is in the file.
    fn loc(&self, offset: usize) -> Location {
        Location {
            file: self.file.to_owned(),
            pos: self.lines.pos(self.prepared.file_offset(offset)),
        }
    }

    fn schema(&self, offset: usize, message: String) -> MetricsError {
        MetricsError::Schema {
            at: self.loc(offset),
            message,
        }
    }

    fn check_attrs(
        &self,
        node: roxmltree::Node<'_, '_>,
        allowed: &[&str],
    ) -> Result<(), MetricsError> {
        for a in node.attributes() {
            if !allowed.contains(&a.name()) || a.namespace().is_some() {
                return Err(self.schema(
                    a.range().start,
                    format!(
                        "unknown attribute '{}' on <{}> (expected {})",
                        cut_input(a.name()),
                        cut_input(node.tag_name().name()),
                        allowed.join(", ")
                    ),
                ));
            }
        }
        Ok(())
    }

    fn required<'n>(
        &self,
        node: roxmltree::Node<'n, '_>,
        attr: &str,
    ) -> Result<&'n str, MetricsError> {
        node.attribute(attr).ok_or_else(|| {
            self.schema(
                node.range().start,
                format!(
                    "<{}> is missing the '{attr}' attribute",
                    cut_input(node.tag_name().name())
                ),
            )
        })
    }
}

fn parse_event(text: &str) -> Option<u64> {
    let t = text.trim();
    if let Some(hex) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        u64::from_str_radix(hex, 16).ok()
    } else {
        t.parse().ok()
    }
}

impl MetricSet {
    /// An empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// The built-in CPU definitions ([`DEFAULT_CPU_XML`]).
    pub fn default_cpu() -> Self {
        // The embedded file is tested to load; a failure here is a bug in the crate.
        Self::from_xml(DEFAULT_CPU_FILE, DEFAULT_CPU_XML)
            .unwrap_or_else(|e| panic!("built-in metric file is invalid: {e}"))
    }

    /// Parses and validates one metric file. `file` is only used in error messages.
    pub fn from_xml(file: &str, text: &str) -> Result<Self, MetricsError> {
        let set = Self::parse_xml(file, text)?;
        set.validate()?;
        Ok(set)
    }

    /// Reads, parses and validates the metric file at `path`.
    pub fn from_file(path: impl AsRef<Path>) -> Result<Self, MetricsError> {
        let (file, text) = read_metric_file(path.as_ref())?;
        Self::from_xml(&file, &text)
    }

    /// The built-in CPU definitions merged with the user file at `path` (see [`merge`]).
    ///
    /// [`merge`]: MetricSet::merge
    pub fn default_cpu_with_user_file(path: impl AsRef<Path>) -> Result<Self, MetricsError> {
        let (file, text) = read_metric_file(path.as_ref())?;
        let mut set = Self::default_cpu();
        set.merge_xml(&file, &text)?;
        Ok(set)
    }

    /// Parses the metric file text `text` (named `file`) and merges it into `self`.
    pub fn merge_xml(&mut self, file: &str, text: &str) -> Result<(), MetricsError> {
        let other = Self::parse_xml(file, text)?;
        self.merge(other)
    }

    /// Merges `other` into `self`: `other`'s definitions **add to and override** ours.
    /// A metric with the same name replaces ours; a counter with the same name in the same
    /// arch replaces ours; new arches, counters and metrics are added. The result is
    /// validated (references, cycles, counter/metric name clashes); on error `self` is
    /// left unchanged.
    pub fn merge(&mut self, other: MetricSet) -> Result<(), MetricsError> {
        let mut merged = self.clone();
        for (name, arch) in other.arches {
            match merged.arches.get_mut(&name) {
                Some(mine) => mine.counters.extend(arch.counters),
                None => {
                    merged.arches.insert(name, arch);
                }
            }
        }
        merged.metrics.extend(other.metrics);
        merged.validate()?;
        *self = merged;
        Ok(())
    }

    fn parse_xml(file: &str, text: &str) -> Result<Self, MetricsError> {
        let lines = LineIndex::new(text);
        let quotes = xml_text::unquoted_values(text);
        let as_is = Prepared::new(text, &quotes);
        let wrapped_text;
        // A file of several top-level sections (rocprofiler's layout) is not one XML
        // document: when it does not parse as one, it is parsed again inside a synthetic
        // root, and the error reported is the one found further into the file.
        let (doc, prepared, wrapped) = match parse_document(&as_is) {
            Ok(doc) => (doc, &as_is, false),
            Err(first) => {
                let start = xml_text::wrapper_start(text);
                let open = format!("<{WRAPPER}>");
                let close = format!("</{WRAPPER}>");
                let mut insertions = quotes.clone();
                let at = insertions.partition_point(|&(o, _)| o < start);
                insertions.insert(at, (start, open.as_str()));
                insertions.push((text.len(), close.as_str()));
                wrapped_text = Prepared::new(text, &insertions);
                match parse_document(&wrapped_text) {
                    Ok(doc) => (doc, &wrapped_text, true),
                    Err(second) => {
                        let (prepared, error) = if second.0 > first.0 {
                            (&wrapped_text, second)
                        } else {
                            (&as_is, first)
                        };
                        let parsed_lines = LineIndex::new(&prepared.text);
                        let offset = parsed_lines.offset(error.1.pos().row, error.1.pos().col);
                        return Err(MetricsError::Xml {
                            at: Location {
                                file: file.to_owned(),
                                pos: lines.pos(prepared.file_offset(offset)),
                            },
                            message: xml_message(&error.1),
                        });
                    }
                }
            }
        };
        let cx = FileCtx {
            file,
            prepared,
            lines: &lines,
        };
        let root = doc.root_element();
        let top: Vec<roxmltree::Node<'_, '_>> = if wrapped {
            root.children()
                .filter(roxmltree::Node::is_element)
                .collect()
        } else {
            vec![root]
        };
        let mut set = MetricSet::new();
        match top.as_slice() {
            [only] if only.tag_name().name() == "metrics" => {
                cx.check_attrs(*only, &[])?;
                for node in only.children().filter(roxmltree::Node::is_element) {
                    set.parse_item(&cx, node, "in <metrics>")?;
                }
            }
            _ => {
                for &node in &top {
                    if node.tag_name().name() == "metrics" {
                        return Err(cx.schema(
                            node.range().start,
                            "a <metrics> root must be the only top-level element".to_owned(),
                        ));
                    }
                    set.parse_item(&cx, node, "at the top level")?;
                }
            }
        }
        Ok(set)
    }

    /// One element of the file's top level (or of its `<metrics>` root): `<arch>`, a global
    /// `<metric>`, a `<global>` section or an architecture section `<gfxN>`.
    fn parse_item(
        &mut self,
        cx: &FileCtx<'_>,
        node: roxmltree::Node<'_, '_>,
        place: &str,
    ) -> Result<(), MetricsError> {
        match node.tag_name().name() {
            "arch" => self.parse_arch(cx, node),
            "metric" => self.parse_metric(cx, node),
            "global" => {
                cx.check_attrs(node, &[])?;
                for m in node.children().filter(roxmltree::Node::is_element) {
                    if m.tag_name().name() != "metric" {
                        return Err(cx.schema(
                            m.range().start,
                            format!(
                                "unknown element <{}> in <global> (expected <metric name expr>)",
                                cut_input(m.tag_name().name())
                            ),
                        ));
                    }
                    self.parse_metric(cx, m)?;
                }
                Ok(())
            }
            name if is_section_name(name) => self.parse_section(cx, node),
            other => Err(cx.schema(
                node.range().start,
                format!(
                    "unknown element <{}> {place} (expected {ITEMS})",
                    cut_input(other)
                ),
            )),
        }
    }

    /// An architecture section in rocprofiler's layout, `<gfx9>`: the arch is named by the
    /// tag; a `<metric name block event [descr]>` (or `<counter>`) in it is a counter, and a
    /// `<metric name expr>` a derived metric (global, like every Metron metric).
    fn parse_section(
        &mut self,
        cx: &FileCtx<'_>,
        node: roxmltree::Node<'_, '_>,
    ) -> Result<(), MetricsError> {
        cx.check_attrs(node, &[])?;
        let name = node.tag_name().name();
        let mut arch = self.new_arch(cx, node, name)?;
        for c in node.children().filter(roxmltree::Node::is_element) {
            let tag = c.tag_name().name();
            let counter = tag == "counter"
                || (tag == "metric" && (c.has_attribute("block") || c.has_attribute("event")));
            if counter {
                parse_counter(cx, &mut arch, c)?;
            } else if tag == "metric" && c.has_attribute("expr") {
                self.parse_metric(cx, c)?;
            } else if tag == "metric" {
                return Err(cx.schema(
                    c.range().start,
                    format!(
                        "<metric> in <{}> needs 'block' and 'event' (a counter) or 'expr' (a derived metric)",
                        cut_input(name)
                    ),
                ));
            } else {
                return Err(cx.schema(
                    c.range().start,
                    format!(
                        "unknown element <{}> in <{}> (expected <metric name block event> or <metric name expr>)",
                        cut_input(tag),
                        cut_input(name)
                    ),
                ));
            }
        }
        self.arches.insert(name.to_owned(), arch);
        Ok(())
    }

    /// A new, empty arch `name` defined by `node`, unless this file already has one.
    fn new_arch(
        &self,
        cx: &FileCtx<'_>,
        node: roxmltree::Node<'_, '_>,
        name: &str,
    ) -> Result<Arch, MetricsError> {
        if let Some(first) = self.arches.get(name) {
            return Err(MetricsError::Duplicate {
                at: cx.loc(node.range().start),
                what: format!("arch '{}'", cut_input(name)),
                first: first.location.clone(),
            });
        }
        Ok(Arch {
            name: name.to_owned(),
            counters: BTreeMap::new(),
            location: cx.loc(node.range().start),
        })
    }

    fn parse_arch(
        &mut self,
        cx: &FileCtx<'_>,
        node: roxmltree::Node<'_, '_>,
    ) -> Result<(), MetricsError> {
        cx.check_attrs(node, &["name"])?;
        let name = cx.required(node, "name")?;
        let mut arch = self.new_arch(cx, node, name)?;
        for c in node.children().filter(roxmltree::Node::is_element) {
            if c.tag_name().name() != "counter" {
                return Err(cx.schema(
                    c.range().start,
                    format!(
                        "unknown element <{}> in <arch> (expected <counter>)",
                        cut_input(c.tag_name().name())
                    ),
                ));
            }
            parse_counter(cx, &mut arch, c)?;
        }
        self.arches.insert(name.to_owned(), arch);
        Ok(())
    }

    fn parse_metric(
        &mut self,
        cx: &FileCtx<'_>,
        node: roxmltree::Node<'_, '_>,
    ) -> Result<(), MetricsError> {
        if node.children().any(|c| c.is_element()) {
            return Err(cx.schema(
                node.range().start,
                "<metric> takes no child elements".to_owned(),
            ));
        }
        cx.check_attrs(node, &METRIC_ATTRS)?;
        let name = cx.required(node, "name")?;
        let location = cx.loc(node.range().start);
        if !is_valid_name(name) {
            return Err(cx.schema(node.range().start, bad_name("metric", name)));
        }
        if let Some(first) = self.metrics.get(name) {
            return Err(MetricsError::Duplicate {
                at: location,
                what: format!("metric '{}'", cut_input(name)),
                first: first.location.clone(),
            });
        }
        cx.required(node, "expr")?;
        let attr = node
            .attribute_node("expr")
            .ok_or_else(|| cx.schema(node.range().start, "missing expr".to_owned()))?;
        let value = attr.value();
        let range = attr.range_value();
        let raw = cx.prepared.text.get(range.clone()).unwrap_or("");
        // Offsets within the value map 1:1 onto the file when the attribute has no entity
        // references (whitespace normalisation keeps lengths); otherwise errors point at the
        // start of the value.
        let exact = raw.len() == value.len();
        let pos_of = |offset: usize| {
            let at = if exact {
                range.start + offset
            } else {
                range.start
            };
            cx.loc(at).pos
        };
        let expr =
            Expr::parse_with_positions(value, &pos_of).map_err(|error| MetricsError::Parse {
                file: cx.file.to_owned(),
                metric: name.to_owned(),
                error: Box::new(error),
            })?;
        self.metrics.insert(
            name.to_owned(),
            Metric {
                name: name.to_owned(),
                expr,
                description: node.attribute("descr").map(str::to_owned),
                unit: node.attribute("unit").map(str::to_owned),
                location,
            },
        );
        Ok(())
    }

    /// All counter names over all arches.
    fn all_counter_names(&self) -> BTreeSet<&str> {
        self.arches
            .values()
            .flat_map(|a| a.counters.keys().map(String::as_str))
            .collect()
    }

    fn find_counter(&self, name: &str) -> Option<&Counter> {
        self.arches.values().find_map(|a| a.counters.get(name))
    }

    fn known_names(&self) -> BTreeSet<&str> {
        let mut all = self.all_counter_names();
        all.extend(self.metrics.keys().map(String::as_str));
        all
    }

    /// Checks name clashes, references and cycles.
    fn validate(&self) -> Result<(), MetricsError> {
        for m in self.metrics.values() {
            if let Some(c) = self.find_counter(&m.name) {
                return Err(MetricsError::Duplicate {
                    at: m.location.clone(),
                    what: format!(
                        "name '{}': metric has the name of a counter",
                        cut_input(&m.name)
                    ),
                    first: c.location.clone(),
                });
            }
        }
        let counters = self.all_counter_names();
        let known = self.known_names();
        for m in self.metrics.values() {
            for (name, pos) in m.expr.references() {
                if !self.metrics.contains_key(name) && !counters.contains(name) {
                    return Err(MetricsError::UnknownReference {
                        at: Location {
                            file: m.location.file.clone(),
                            pos,
                        },
                        metric: m.name.clone(),
                        name: name.to_owned(),
                        close: close_names(name, known.iter().copied()),
                    });
                }
            }
        }
        // Cycle detection: depth-first, in name order, so the reported cycle is deterministic.
        // A finished metric keeps its height (the longest chain of metrics from it, itself
        // included), so chains are bounded however the search first reached their parts.
        #[derive(Clone, Copy, PartialEq)]
        enum Mark {
            Active,
            Done { height: usize },
        }
        fn visit<'a>(
            set: &'a MetricSet,
            name: &'a str,
            marks: &mut BTreeMap<&'a str, Mark>,
            stack: &mut Vec<&'a str>,
        ) -> Result<usize, MetricsError> {
            marks.insert(name, Mark::Active);
            stack.push(name);
            let m = &set.metrics[name];
            let mut below = 0;
            for (r, pos) in m.expr.references() {
                let Some((r, _)) = set.metrics.get_key_value(r) else {
                    continue;
                };
                let at = || Location {
                    file: m.location.file.clone(),
                    pos,
                };
                let height = match marks.get(r.as_str()) {
                    Some(Mark::Done { height }) => *height,
                    Some(Mark::Active) => {
                        let start = stack.iter().position(|s| *s == r).unwrap_or(0);
                        let mut path: Vec<String> =
                            stack[start..].iter().map(|s| (*s).to_owned()).collect();
                        path.push(r.clone());
                        return Err(MetricsError::Cycle { at: at(), path });
                    }
                    // Checked before going down, so the search itself stays shallow.
                    None if stack.len() >= MAX_METRIC_DEPTH => MAX_METRIC_DEPTH,
                    None => visit(set, r, marks, stack)?,
                };
                if stack.len() + height > MAX_METRIC_DEPTH {
                    return Err(MetricsError::TooDeep {
                        at: at(),
                        metric: stack[0].to_owned(),
                        limit: MAX_METRIC_DEPTH,
                    });
                }
                below = below.max(height);
            }
            stack.pop();
            marks.insert(name, Mark::Done { height: below + 1 });
            Ok(below + 1)
        }
        let mut marks = BTreeMap::new();
        for name in self.metrics.keys() {
            if !marks.contains_key(name.as_str()) {
                visit(self, name, &mut marks, &mut Vec::new())?;
            }
        }
        Ok(())
    }

    /// The architectures, by name.
    pub fn arches(&self) -> &BTreeMap<String, Arch> {
        &self.arches
    }

    /// One architecture's counters table.
    pub fn arch(&self, name: &str) -> Option<&Arch> {
        self.arches.get(name)
    }

    /// The derived metrics, by name.
    pub fn metrics(&self) -> &BTreeMap<String, Metric> {
        &self.metrics
    }

    /// One derived metric.
    pub fn metric(&self, name: &str) -> Option<&Metric> {
        self.metrics.get(name)
    }

    fn unknown_metric(&self, name: &str) -> MetricsError {
        MetricsError::UnknownMetric {
            name: name.to_owned(),
            close: close_names(name, self.known_names()),
        }
    }

    /// The counters needed to compute the given metrics, following metric references
    /// transitively. A counter name may be given too (it needs itself).
    pub fn needed_counters<S: AsRef<str>>(
        &self,
        names: impl IntoIterator<Item = S>,
    ) -> Result<BTreeSet<String>, MetricsError> {
        let counters = self.all_counter_names();
        let mut out = BTreeSet::new();
        let mut seen = BTreeSet::new();
        let mut todo: Vec<String> = Vec::new();
        for n in names {
            let n = n.as_ref();
            if !self.metrics.contains_key(n) && !counters.contains(n) {
                return Err(self.unknown_metric(n));
            }
            todo.push(n.to_owned());
        }
        while let Some(n) = todo.pop() {
            if !seen.insert(n.clone()) {
                continue;
            }
            match self.metrics.get(&n) {
                Some(m) => todo.extend(m.expr.names().into_iter().map(str::to_owned)),
                None => {
                    out.insert(n);
                }
            }
        }
        Ok(out)
    }

    /// Evaluates metric (or counter) `name`; metrics it refers to are evaluated recursively
    /// (each to a single value), counters come from `lookup` (a scalar counter is a 1-element
    /// slice; see [`Expr::evaluate`] for multi-instance counters).
    pub fn evaluate<'v>(
        &self,
        name: &str,
        lookup: &dyn Fn(&str) -> Option<&'v [f64]>,
    ) -> Result<f64, MetricsError> {
        let Some(m) = self.metrics.get(name) else {
            if self.find_counter(name).is_some() {
                let expr = Expr::parse(name).map_err(|_| self.unknown_metric(name))?;
                return expr.evaluate(lookup).map_err(|error| MetricsError::Eval {
                    metric: name.to_owned(),
                    error,
                });
            }
            return Err(self.unknown_metric(name));
        };
        self.eval_metric(m, lookup)
            .map_err(|error| MetricsError::Eval {
                metric: name.to_owned(),
                error,
            })
    }

    fn eval_metric<'v>(
        &self,
        m: &Metric,
        lookup: &dyn Fn(&str) -> Option<&'v [f64]>,
    ) -> Result<f64, EvalError> {
        m.expr.eval_with(&|n| {
            if let Some(inner) = self.metrics.get(n) {
                // Cycles are rejected when loading, so this recursion terminates.
                return self.eval_metric(inner, lookup).map(Values::Scalar);
            }
            lookup(n)
                .map(Values::Slice)
                .ok_or_else(|| EvalError::MissingValue { name: n.to_owned() })
        })
    }
}

fn is_valid_name(name: &str) -> bool {
    matches!(Expr::parse(name).map(|e| e.root().node.clone()), Ok(crate::expr::Node::Ref { name: n, .. }) if n == name)
}

fn bad_name(kind: &str, name: &str) -> String {
    format!(
        "{kind} name '{}' is not a valid identifier (letters, digits, '_', '.', and '-' before a letter; starting with a letter or '_')",
        cut_input(name)
    )
}

/// What may stand at the top level of a metric file or in its `<metrics>` root.
const ITEMS: &str = "<arch>, <metric>, <global> or an architecture section such as <gfx9>";

/// An architecture section of rocprofiler's layout: `gfx` and letters, digits or `_`
/// (`gfx8`, `gfx9`, `gfx90a`, `gfx1030`).
fn is_section_name(name: &str) -> bool {
    name.strip_prefix("gfx").is_some_and(|rest| {
        !rest.is_empty() && rest.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    })
}

/// Parses the prepared text; the error comes with its file offset, for choosing between the
/// plain and the wrapped attempt.
fn parse_document(
    prepared: &Prepared,
) -> Result<roxmltree::Document<'_>, (usize, roxmltree::Error)> {
    roxmltree::Document::parse(&prepared.text).map_err(|e| {
        let lines = LineIndex::new(&prepared.text);
        let offset = lines.offset(e.pos().row, e.pos().col);
        (prepared.file_offset(offset), e)
    })
}

/// The XML parser's message without its own position (which is into the prepared text; the
/// error carries the file's) and without the synthetic root's name.
fn xml_message(e: &roxmltree::Error) -> String {
    e.to_string()
        .replace(&format!(" at {}", e.pos()), "")
        .replace(&format!("'{WRAPPER}'"), "the end of the file")
}

/// One `<counter>` (or, in a rocprofiler section, `<metric>`) with `name`, `block`, `event`
/// and an optional `descr`, added to `arch`.
fn parse_counter(
    cx: &FileCtx<'_>,
    arch: &mut Arch,
    c: roxmltree::Node<'_, '_>,
) -> Result<(), MetricsError> {
    cx.check_attrs(c, &COUNTER_ATTRS)?;
    let cname = cx.required(c, "name")?;
    let block = cx.required(c, "block")?;
    let event_text = cx.required(c, "event")?;
    let event = parse_event(event_text).ok_or_else(|| {
        let at = c
            .attribute_node("event")
            .map_or(c.range().start, |a| a.range().start);
        cx.schema(
            at,
            format!(
                "counter '{}': event '{}' is not a decimal or 0x-hex integer",
                cut_input(cname),
                cut_input(event_text)
            ),
        )
    })?;
    let location = cx.loc(c.range().start);
    if let Some(first) = arch.counters.get(cname) {
        return Err(MetricsError::Duplicate {
            at: location,
            what: format!(
                "counter '{}' in arch '{}'",
                cut_input(cname),
                cut_input(&arch.name)
            ),
            first: first.location.clone(),
        });
    }
    if !is_valid_name(cname) {
        return Err(cx.schema(c.range().start, bad_name("counter", cname)));
    }
    arch.counters.insert(
        cname.to_owned(),
        Counter {
            name: cname.to_owned(),
            block: block.to_owned(),
            event,
            description: c.attribute("descr").map(str::to_owned),
            location,
        },
    );
    Ok(())
}

/// The name used in messages for `path`, and its text.
fn read_metric_file(path: &Path) -> Result<(String, String), MetricsError> {
    let file = path.display().to_string();
    match std::fs::read_to_string(path) {
        Ok(text) => Ok((file, text)),
        Err(e) => Err(MetricsError::Io {
            file,
            message: e.to_string(),
        }),
    }
}

#[cfg(test)]
mod amd_gpu_file {
    use super::*;

    #[test]
    fn the_default_amd_gpu_file_loads_with_its_architectures_and_metrics() {
        let set = MetricSet::from_xml(DEFAULT_AMD_GPU_FILE, DEFAULT_AMD_GPU_XML).unwrap();
        for arch in ["gfx9", "gfx908", "gfx90a"] {
            let a = set.arch(arch).unwrap_or_else(|| panic!("{arch}"));
            assert_eq!(a.counters["SQ_WAVES"].event, 4, "{arch}");
            assert_eq!(a.counters["SQ_WAVES"].block, "SQ");
        }
        assert_eq!(
            set.arch("gfx90a").unwrap().counters["SQ_INSTS_SALU"].event,
            56
        );
        assert!(set.metric("GPU_BUSY").is_some());
    }
}
