//! [`GpuCounters`]: per-region GPU counters as a `metron::Component`, through CUPTI Range
//! Profiler user ranges (`METRON_GPU_COUNTER_MODE=region`), and the same for the C API's
//! region begin/end ([`c_region_begin`], [`c_region_end`]).

use crate::range_profiler;
use metron::{Component, Field, Unit};
use std::sync::atomic::{AtomicU32, Ordering};
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
    opened: bool,
}

impl Default for GpuCounters {
    fn default() -> Self {
        GpuCounters {
            values: [f64::NAN; MAX_GPU_FIELDS],
            opened: false,
        }
    }
}

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
        "CUPTI Start/PushRange and PopRange/Stop/Decode/Evaluate per region, synchronizing with the GPU (tens to hundreds of us)";
    const FIELDS: &'static [Field] = &STATIC_FIELDS;
    type Value = [f64; MAX_GPU_FIELDS];

    fn start(&mut self) {
        self.values = [f64::NAN; MAX_GPU_FIELDS];
        match range_profiler::region_begin() {
            Ok(()) => self.opened = true,
            Err(e) => {
                self.opened = false;
                range_profiler::refuse(e);
            }
        }
    }

    fn stop(&mut self) {
        if self.opened {
            self.opened = false;
            fill(&mut self.values, range_profiler::region_end());
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

thread_local! {
    /// The C API depth (this thread's open regions) at which a user range was opened; 0: none.
    static C_OPEN_DEPTH: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

static C_KEYS: OnceLock<Vec<u32>> = OnceLock::new();
static C_REASON_KEY: AtomicU32 = AtomicU32::new(0);

/// Region mode is on for the C API's regions: the backend started with metrics and
/// `METRON_GPU_COUNTER_MODE=region` (two relaxed loads: the C API's hot path asks it).
#[inline]
pub fn c_region_mode() -> bool {
    range_profiler::region_requested()
}

/// Lends [`c_region_begin`]/[`c_region_end`] to the C API through the SDK's hook
/// ([`metron::gpu::set_region_counters`]), on while region mode is ([`c_region_mode`]): the C
/// API's hot path reads the SDK's flag and never calls this crate.
pub(crate) fn set_c_hooks(on: bool) {
    let hooks = metron::gpu::RegionCounters {
        begin: c_region_begin,
        end: c_region_end,
    };
    metron::gpu::set_region_counters(hooks, on);
}

/// The C API opened region number `depth` (1 = outermost) on this thread: opens a user range
/// when region mode is on and none is open.
pub fn c_region_begin(depth: usize) {
    if !c_region_mode() || C_OPEN_DEPTH.with(|d| d.get()) != 0 {
        return;
    }
    match range_profiler::region_begin() {
        Ok(()) => C_OPEN_DEPTH.with(|d| d.set(depth)),
        Err(e) => {
            let reason = range_profiler::refuse(e);
            annotate_reason(&reason);
        }
    }
}

/// The C API is about to close region number `depth` (still open, so annotations go to it):
/// when it opened the user range, closes it and annotates the region with `gpu.<metric>`
/// values (or `gpu.counters_error`).
pub fn c_region_end(depth: usize) {
    if C_OPEN_DEPTH.with(|d| d.get()) != depth || depth == 0 {
        return;
    }
    C_OPEN_DEPTH.with(|d| d.set(0));
    match range_profiler::region_end() {
        Ok(values) => {
            let keys = C_KEYS.get_or_init(|| {
                range_profiler::region_columns()
                    .iter()
                    .map(|c| {
                        metron::intern(&format!("gpu.{c}"), metron::CallsiteKind::AnnotationKey)
                    })
                    .collect()
            });
            for (&k, v) in keys.iter().zip(values) {
                metron::by_id::annotate(k, metron::AnnotationValue::F64(v));
            }
        }
        Err(e) => {
            let reason = range_profiler::refuse(e);
            annotate_reason(&reason);
        }
    }
}

fn annotate_reason(reason: &str) {
    let mut key = C_REASON_KEY.load(Ordering::Relaxed);
    if key == 0 {
        key = metron::intern("gpu.counters_error", metron::CallsiteKind::AnnotationKey);
        C_REASON_KEY.store(key, Ordering::Relaxed);
    }
    metron::by_id::annotate(key, metron::AnnotationValue::Str(reason));
}
