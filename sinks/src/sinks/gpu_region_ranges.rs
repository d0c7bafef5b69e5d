//! Region-mode GPU counter values that arrive after their region ended.
//!
//! A counted region instance does not wait for its counters: at its end it is annotated with
//! its range number ([`RANGE_KEY`], a `U64`), and the backend decodes and evaluates ranges in
//! batches, off the region's thread, delivering each range's outcome here by that number
//! ([`record`]). The join happens when the summary is written: each annotated instance finds
//! its outcome and is counted under its region's name, as the `gpu.<metric>` annotations of
//! a synchronously counted region are (`gpu_summary.rs`). An instance whose outcome never
//! came (its batch was still open when the run ended without a flush) reads NaN with that
//! reason.
//!
//! A metric set of N passes is collected one pass per instance: N instances of a region give
//! one combined value ([`RangeOutcome::Combined`] on the first, [`RangeOutcome::PassOf`] on the
//! others), so the summary counts combined values and says over how many passes and instances.

use std::collections::HashMap;
use std::sync::Mutex;

/// The annotation key of a counted region instance's range number.
pub const RANGE_KEY: &str = "gpu.counters_range";

/// What one range number resolved to.
#[derive(Clone, Debug, PartialEq)]
pub enum RangeOutcome {
    /// The instance's values (hardware metrics then derived ones, in the columns' order).
    Values(Vec<f64>),
    /// Values combined from `passes` instances, one pass each: this instance is the first;
    /// each metric comes from the instance of the pass that collected it.
    Combined {
        /// The values (columns' order).
        values: Vec<f64>,
        /// Passes (= instances) combined.
        passes: usize,
    },
    /// This instance gave one pass to the combined value of instance `first`.
    PassOf {
        /// The range number holding the combined value.
        first: u64,
    },
    /// Not counted, and why.
    Nan(String),
}

#[derive(Default)]
struct Ranges {
    /// The metric columns, in order.
    columns: Vec<String>,
    /// range number → outcome.
    outcomes: HashMap<u64, RangeOutcome>,
    /// (region name, range number) in the order the annotations were seen.
    instances: Vec<(String, u64)>,
}

static RANGES: Mutex<Option<Ranges>> = Mutex::new(None);

fn with<T>(f: impl FnOnce(&mut Ranges) -> T) -> T {
    let mut g = RANGES.lock().unwrap_or_else(|e| e.into_inner());
    f(g.get_or_insert_with(Ranges::default))
}

/// The metric columns the outcomes' values are in (the backend sets them when it starts).
pub fn set_columns(columns: Vec<String>) {
    with(|r| r.columns = columns);
}

/// The backend's outcomes of a batch of ranges.
pub fn record(outcomes: Vec<(u64, RangeOutcome)>) {
    with(|r| r.outcomes.extend(outcomes));
}

/// The flusher saw instance `range` of `region` (its [`RANGE_KEY`] annotation).
pub fn add_instance(region: &str, range: u64) {
    with(|r| r.instances.push((region.to_string(), range)));
}

/// One region's resolved instances, for the summary.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Resolved {
    /// Values per instance (or per pass set), in the columns' order.
    pub values: Vec<Vec<f64>>,
    /// Instances that read NaN, and the distinct reasons (first few).
    pub nan: u64,
    /// Why.
    pub nan_reasons: Vec<String>,
    /// With N passes: (passes, instances that gave a pass to a complete set).
    pub combined: Option<(usize, u64)>,
}

/// Every annotated instance joined with its outcome, per region name, and the columns.
pub fn resolve() -> (Vec<String>, Vec<(String, Resolved)>) {
    with(|r| {
        let mut rows: Vec<(String, Resolved)> = Vec::new();
        for (region, id) in &r.instances {
            let i = match rows.iter().position(|(n, _)| n == region) {
                Some(i) => i,
                None => {
                    rows.push((region.clone(), Resolved::default()));
                    rows.len() - 1
                }
            };
            let row = &mut rows[i].1;
            let nan = |row: &mut Resolved, why: &str| {
                row.nan += 1;
                if row.nan_reasons.len() < 4 && !row.nan_reasons.iter().any(|w| w == why) {
                    row.nan_reasons.push(why.to_string());
                }
            };
            match r.outcomes.get(id) {
                Some(RangeOutcome::Values(v)) => row.values.push(v.clone()),
                Some(RangeOutcome::Combined { values, passes }) => {
                    row.values.push(values.clone());
                    let c = row.combined.get_or_insert((*passes, 0));
                    c.1 += 1;
                }
                Some(RangeOutcome::PassOf { .. }) => {
                    if let Some(c) = row.combined.as_mut() {
                        c.1 += 1;
                    }
                }
                Some(RangeOutcome::Nan(why)) => nan(row, why),
                None => nan(
                    row,
                    "its counters were never decoded (the run ended before its batch of ranges \
                     was closed)",
                ),
            }
        }
        (r.columns.clone(), rows)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The one test of this module's statics (tests run in parallel threads).
    #[test]
    fn late_values_join_their_instances_by_range_number() {
        set_columns(vec!["inst".into()]);
        add_instance("step", 1);
        add_instance("solve", 2);
        add_instance("step", 3);
        add_instance("step", 4);
        add_instance("step", 5);
        add_instance("step", 6);
        record(vec![
            (3, RangeOutcome::Nan("overlapped".into())),
            (1, RangeOutcome::Values(vec![10.0])),
            (
                4,
                RangeOutcome::Combined {
                    values: vec![7.0],
                    passes: 2,
                },
            ),
            (5, RangeOutcome::PassOf { first: 4 }),
            (2, RangeOutcome::Values(vec![20.0])),
        ]);
        let (columns, rows) = resolve();
        assert_eq!(columns, vec!["inst"]);
        assert_eq!(rows[0].0, "step");
        assert_eq!(rows[0].1.values, vec![vec![10.0], vec![7.0]]);
        assert_eq!(rows[0].1.combined, Some((2, 2)));
        assert_eq!(rows[0].1.nan, 2, "3 overlapped, 6 never decoded");
        assert!(rows[0].1.nan_reasons[1].contains("never decoded"));
        assert_eq!(rows[1].0, "solve");
        assert_eq!(rows[1].1.values, vec![vec![20.0]]);
    }
}
