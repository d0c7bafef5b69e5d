//! `METRON_TRACE_CATEGORIES`: which kinds of events the trace sink writes.

/// Which kinds of events go to the trace (`METRON_TRACE_CATEGORIES`). Dropped-record
/// instants and the run-end metadata are always written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Categories {
    /// Region slices.
    pub regions: bool,
    /// Instant marks.
    pub marks: bool,
    /// `counter!` values.
    pub counters: bool,
    /// Region annotations (debug annotations on slices).
    pub annotations: bool,
    /// Bundle values (debug annotations on slices).
    pub values: bool,
    /// Process counters sampled by the flusher (RSS).
    pub process: bool,
}

/// The category names `METRON_TRACE_CATEGORIES` accepts (plus `all`).
pub const CATEGORY_NAMES: &[&str] = &[
    "regions",
    "marks",
    "counters",
    "annotations",
    "values",
    "process",
];

impl Categories {
    /// Everything.
    pub const ALL: Categories = Categories {
        regions: true,
        marks: true,
        counters: true,
        annotations: true,
        values: true,
        process: true,
    };

    /// Parses a comma-separated list (`all`, or names from [`CATEGORY_NAMES`]); unknown names
    /// are returned as the error, with what is accepted.
    pub fn parse(list: &str) -> Result<Categories, String> {
        let mut c = Categories {
            regions: false,
            marks: false,
            counters: false,
            annotations: false,
            values: false,
            process: false,
        };
        let mut unknown = Vec::new();
        for word in list.split(',').map(str::trim).filter(|w| !w.is_empty()) {
            match word.to_ascii_lowercase().as_str() {
                "all" => c = Categories::ALL,
                "regions" => c.regions = true,
                "marks" => c.marks = true,
                "counters" => c.counters = true,
                "annotations" => c.annotations = true,
                "values" => c.values = true,
                "process" => c.process = true,
                _ => unknown.push(word.to_string()),
            }
        }
        if unknown.is_empty() {
            Ok(c)
        } else {
            Err(format!(
                "METRON_TRACE_CATEGORIES: unknown {:?}; accepted: all, {}",
                unknown,
                CATEGORY_NAMES.join(", ")
            ))
        }
    }
}
