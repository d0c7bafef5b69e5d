//! [`GpuCounters`]: per-region GPU counters as a `metron::Component`, through CUPTI Range
//! Profiler user ranges (`METRON_GPU_COUNTER_MODE=region`); the C API's regions get the same
//! through `range_profiler/c_api.rs`.

use crate::range_profiler;
use metron::{Component, Field, Unit};
use std::sync::OnceLock;

/// The most metric columns a [`GpuCounters`] reports (hardware metrics then derived ones, as
/// in `METRON_GPU_METRICS`); further columns are left out of the component (still in
/// `kernels.csv` in kernel mode).
pub const MAX_GPU_FIELDS: usize = 8;

const STATIC_FIELDS: [Field; MAX_GPU_FIELDS] = [
    Field::new("metric0", Unit::Number),
    Field::new("metric1", Unit::Number),
    Field::new("metric2", Unit::Number),
    Field::new("metric3", Unit::Number),
    Field::new("metric4", Unit::Number),
    Field::new("metric5", Unit::Number),
    Field::new("metric6", Unit::Number),
    Field::new("metric7", Unit::Number),
];

static ACTIVE_FIELDS: OnceLock<Vec<Field>> = OnceLock::new();

/// The field names this run uses: the configured metric columns, then `metricN` for unused
/// slots (which read NaN).
fn active() -> &'static [Field] {
    ACTIVE_FIELDS.get_or_init(|| {
        let columns = range_profiler::region_columns();
        let mut fields: Vec<Field> = columns
            .into_iter()
            .take(MAX_GPU_FIELDS)
            .map(|c| {
                let unit = if c.ends_with("bytes.sum") || c.contains("__bytes") {
                    Unit::Bytes
                } else if c.starts_with("gpu__time_duration") {
                    Unit::Nanoseconds
                } else {
                    Unit::Number
                };
                Field::new(Box::leak(c.into_boxed_str()), unit)
            })
            .collect();
        let n = fields.len();
        fields.extend_from_slice(&STATIC_FIELDS[n..]);
        fields
    })
}

/// Per-region GPU counters (CUPTI Range Profiler user range, user replay, single pass): `start`
/// opens a user range, `stop` closes it and evaluates `METRON_GPU_METRICS` over every kernel
/// the region ran (all streams of the context, gaps included for time/cycle metrics).
///
/// NaN (not measured) when counters are off, when the mode is not `region`, when the metric
/// set needs several passes, when another GPU-counted region is already open (one level: the
/// outer region counts the inner one's kernels), or on a CUPTI error; [`region_reason`] says
/// why. Kernel activity (kernel records) is off while the range is open.
#[derive(Clone, Copy, Debug)]
pub struct GpuCounters {
    values: [f64; MAX_GPU_FIELDS],
    /// The open instance's range number.
    range: Option<u64>,
}

impl Default for GpuCounters {
    fn default() -> Self {
        GpuCounters {
            values: [f64::NAN; MAX_GPU_FIELDS],
            range: None,
        }
    }
}

/// The call site number all `GpuCounters` instances share for a metric set of several passes
/// (a component does not know its region's site): their instances take turns as one region.
const COMPONENT_SITE: u32 = u32::MAX - 1;

/// Why the last GPU-counted region read NaN (`None` when none did).
pub fn region_reason() -> Option<String> {
    range_profiler::region_reason()
}

fn fill(values: &mut [f64; MAX_GPU_FIELDS], measured: Result<Vec<f64>, String>) {
    *values = [f64::NAN; MAX_GPU_FIELDS];
    match measured {
        Ok(v) => {
            for (slot, x) in values.iter_mut().zip(v) {
                *slot = x;
            }
        }
        Err(e) => {
            range_profiler::refuse(e);
        }
    }
}

impl Component for GpuCounters {
    const NAME: &'static str = "gpu_counters";
    const DESCRIPTION: &'static str =
        "CUPTI Range Profiler counters (METRON_GPU_METRICS) of the region's GPU work, as a user range (METRON_GPU_COUNTER_MODE=region, single-pass metric sets)";
    const COST: &'static str =
        "CUPTI PushRange at start; PopRange, Stop, DecodeData and evaluation at stop (the fields need the values at the region's end: synchronizes with the GPU, about 3 ms per region); C API regions batch their ranges instead";
    const FIELDS: &'static [Field] = &STATIC_FIELDS;
    type Value = [f64; MAX_GPU_FIELDS];

    fn start(&mut self) {
        self.values = [f64::NAN; MAX_GPU_FIELDS];
        match range_profiler::region_begin(COMPONENT_SITE) {
            Ok(range) => self.range = Some(range),
            Err(e) => {
                self.range = None;
                range_profiler::refuse(e);
            }
        }
    }

    fn stop(&mut self) {
        if let Some(range) = self.range.take() {
            fill(&mut self.values, range_profiler::region_end_values(range));
        }
    }

    fn value(&self) -> Self::Value {
        self.values
    }

    fn write_fields(&self, out: &mut [f64]) {
        out[..MAX_GPU_FIELDS].copy_from_slice(&self.values);
    }

    fn active_fields() -> &'static [Field] {
        active()
    }
}
