//! Decoding: the clock of GPU samples (which host clock the GPU timestamps follow, and the
//! conversion to Metron's), and the drain of a sample source into counter records with its
//! counts of losses.

use super::*;

/// How GPU sample timestamps become Metron's clock (`CLOCK_MONOTONIC` ns).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TimeBase {
    /// Added to a GPU timestamp.
    pub offset: i64,
    /// `"monotonic"` or `"realtime"`.
    pub domain: &'static str,
}

impl TimeBase {
    /// From a just-decoded sample's end `ts` and both host clocks read now: the domain `ts` is
    /// nearest to (a sample ends shortly before it is decoded).
    pub fn detect(ts: u64, mono_now: u64, real_now: u64) -> TimeBase {
        let d_mono = (ts as i128 - mono_now as i128).unsigned_abs();
        let d_real = (ts as i128 - real_now as i128).unsigned_abs();
        if d_mono <= d_real {
            TimeBase {
                offset: 0,
                domain: "monotonic",
            }
        } else {
            TimeBase {
                offset: (mono_now as i128 - real_now as i128) as i64,
                domain: "realtime",
            }
        }
    }

    /// `ts` on Metron's clock.
    #[inline]
    pub fn convert(self, ts: u64) -> u64 {
        (ts as i128 + self.offset as i128).max(0) as u64
    }
}

pub(super) fn realtime_ns() -> u64 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid out-pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut t) };
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

/// What one decode pass reads: the part of CUPTI a drain needs (a trait so the drain logic is
/// tested without a GPU).
pub trait SampleSource {
    /// `DecodeData` into the image: `(CUPTI result, stop reason, overflow flag)`.
    fn decode(&mut self) -> (i32, i32, bool);
    /// Completed samples in the image.
    fn completed(&mut self) -> Result<usize, String>;
    /// Sample `i`'s `(start, end)` GPU timestamps.
    fn times(&mut self, i: usize) -> Result<(u64, u64), String>;
    /// Sample `i`'s values, one per metric.
    fn values(&mut self, i: usize, out: &mut [f64]) -> Result<(), String>;
    /// Resets the image (copies the pristine one over it).
    fn reset(&mut self);
}

/// Loss and volume counts (for `metadata.json`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// Samples decoded.
    pub samples: u64,
    /// Decode passes.
    pub decodes: u64,
    /// Decodes where CUPTI reported the hardware buffer overflowed (samples lost).
    pub overflows: u64,
    /// Decodes that stopped because the image was full (decoded again at once: no loss).
    pub image_full: u64,
    /// Samples whose timestamps or values CUPTI could not give (skipped).
    pub sample_errors: u64,
    /// Decode calls that failed.
    pub decode_errors: u64,
    /// The latest sample end decoded, Metron's clock (0: none yet).
    pub last_end_ns: u64,
}

/// Drains `src` into `batch` (counter records: one per sample and metric, reserved capacity)
/// and hands each full image to `submit`; `values` has one slot per metric. A full image is
/// decoded again at once unless `enough(counts)` says to leave the rest to a later call.
#[allow(clippy::too_many_arguments)]
pub fn drain<S: SampleSource>(
    src: &mut S,
    device: u32,
    names: &[Arc<str>],
    base: &mut Option<TimeBase>,
    clocks: &mut dyn FnMut() -> (u64, u64),
    values: &mut [f64],
    batch: &mut Vec<GpuRecord>,
    counts: &mut Counts,
    submit: &mut dyn FnMut(&[GpuRecord]),
    enough: &dyn Fn(&Counts) -> bool,
) {
    // Bounded: a full image is drained again at once, but never forever.
    for _ in 0..64 {
        let (r, stop, overflow) = src.decode();
        counts.decodes += 1;
        if overflow || r == pm::ERROR_OUT_OF_MEMORY {
            counts.overflows += 1;
        }
        if r != CUPTI_SUCCESS {
            counts.decode_errors += 1;
            return;
        }
        let n = match src.completed() {
            Ok(n) => n,
            Err(_) => {
                counts.decode_errors += 1;
                return;
            }
        };
        for i in 0..n {
            let Ok((start, end)) = src.times(i) else {
                counts.sample_errors += 1;
                continue;
            };
            if src.values(i, values).is_err() {
                counts.sample_errors += 1;
                continue;
            }
            let tb = *base.get_or_insert_with(|| {
                let (mono, real) = clocks();
                TimeBase::detect(end, mono, real)
            });
            counts.samples += 1;
            counts.last_end_ns = counts.last_end_ns.max(tb.convert(end));
            for (m, name) in names.iter().enumerate() {
                let mut rec = GpuRecord::new(GpuKind::Counter, name.clone());
                rec.start_ns = tb.convert(start);
                rec.end_ns = tb.convert(end);
                rec.device = device;
                rec.value = values[m];
                batch.push(rec);
            }
        }
        if !batch.is_empty() {
            submit(batch);
            batch.clear();
        }
        src.reset();
        if stop != pm::STOP_COUNTER_DATA_FULL {
            return;
        }
        counts.image_full += 1;
        if enough(counts) {
            return;
        }
    }
}
