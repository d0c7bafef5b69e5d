//! `METRON_TRACE_MAX_SIZE`: the trace's size limit, how an event that does not fit is taken
//! back, and how the trace is cut so that the part kept is a valid trace on its own.

use super::super::perfetto_encode::{annotation, event, packet};
use super::{event_ts, PerfettoSink, ThreadTrack, TraceCounts};
use crate::sink::{Event, ThreadInfo};

/// Bytes kept free under `METRON_TRACE_MAX_SIZE` for what closes the trace after the cut: a
/// last RSS sample, the run-end instant with names interned again, and the service's packets
/// still to come (clock snapshots, trace stats: a few hundred bytes each).
pub(super) const CLOSING_RESERVE: u64 = 16 << 10;
/// Room kept per open slice for the slice end that closes it at the cut (packet, timestamp,
/// sequence, track and the `cut_at_max_size` flag: under 50 bytes).
pub(super) const CLOSING_END_BYTES: u64 = 64;

/// The trace's size limit (`METRON_TRACE_MAX_SIZE`) and where it cut the trace.
///
/// Every event is encoded, then kept only if the file would still have room for a slice end
/// per open slice and [`CLOSING_RESERVE`]; the first event that does not fit is taken back
/// (its bytes and counts) and the trace is cut there: each slice still open in the file ends
/// at the cut with `cut_at_max_size = true`, and no later event is written. What describes the
/// kept part (the sequence's first packet with the clock defaults, the process and thread
/// tracks, interned names) always precedes it, so the kept part is a valid trace on its own;
/// after the cut, packets intern the names they use again.
#[derive(Debug, Default)]
pub(super) struct SizeCap {
    pub(super) limit: u64,
    /// Bytes in the file, as of the latest write.
    pub(super) file_bytes: u64,
    /// Slices open in what was written, over every thread.
    pub(super) open: u64,
    /// Set at the cut.
    pub(super) cut: Option<Cut>,
}

/// Where the size limit cut the trace.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub(crate) struct Cut {
    /// Bytes of the file when the first event was left out.
    pub(crate) at_bytes: u64,
    /// Timestamp (`CLOCK_MONOTONIC` ns) of the first event left out.
    pub(crate) ts_ns: u64,
    /// Records that reached the sink after the cut and were not written (the summary has them).
    pub(crate) records_left_out: u64,
    /// GPU records not written because they did not fit.
    pub(crate) gpu_records_left_out: u64,
    /// Slices open at the cut, ended there with `cut_at_max_size = true`.
    pub(crate) slices_closed_at_cut: u64,
}

/// Where the encoder stood before an event, to take the event back.
pub(super) struct Mark {
    pub(super) buf: usize,
    pub(super) packets: u64,
    pub(super) counts: TraceCounts,
    pub(super) samples: super::super::perfetto_samples::SampleCounts,
    /// The clock of the event's thread sequence.
    pub(super) clock: Option<u64>,
}

impl PerfettoSink {
    /// Where the encoder stands (to take the next event back if it does not fit).
    pub(super) fn mark(&self) -> Mark {
        Mark {
            buf: self.enc.buf.len(),
            packets: self.enc.packets,
            counts: self.counts.clone(),
            samples: self.samples.counts,
            clock: None,
        }
    }

    /// Takes back everything encoded since `mark` (of `thread`, whose sequence's clock goes
    /// back too).
    pub(super) fn take_back_on(&mut self, thread: &ThreadInfo, mark: Mark) {
        if let (Some(clock), Some(t)) = (mark.clock, self.threads.get_mut(&thread.index)) {
            t.clock = clock;
        }
        self.take_back(mark);
    }

    /// Takes back everything encoded since `mark`.
    pub(super) fn take_back(&mut self, mark: Mark) {
        self.enc.buf.truncate(mark.buf);
        self.enc.packets = mark.packets;
        self.counts = mark.counts;
        self.samples.counts = mark.samples;
    }

    /// True when the file, with what is encoded and `open` slices to close, leaves
    /// [`CLOSING_RESERVE`] under the limit (always true without one).
    pub(super) fn fits(&self, open: u64) -> bool {
        self.cap.as_ref().is_none_or(|cap| {
            cap.file_bytes + self.enc.buf.len() as u64 + open * CLOSING_END_BYTES + CLOSING_RESERVE
                <= cap.limit
        })
    }

    /// Under a size limit, after `event` of `thread` was encoded: keeps it if it fits (and
    /// counts the slices it opens or ends), or takes it back and cuts the trace there.
    pub(super) fn keep(&mut self, thread: &ThreadInfo, event: &Event<'_>, mark: Mark) -> bool {
        let regions = self.config.categories.regions;
        let open_written = self.threads[&thread.index].open_written;
        let delta: i64 = match event {
            Event::Begin { .. } if regions => 1,
            Event::End { .. } if regions && open_written > 0 => -1,
            _ => 0,
        };
        let open = self.cap.as_ref().map_or(0, |c| c.open);
        if self.fits(open.saturating_add_signed(delta)) {
            let t = self
                .threads
                .get_mut(&thread.index)
                .expect("track made above");
            t.open_written = t.open_written.saturating_add_signed(delta as i32);
            t.last_ts = t.last_ts.max(event_ts(event));
            if let Some(cap) = self.cap.as_mut() {
                cap.open = open.saturating_add_signed(delta);
            }
            return true;
        }
        self.take_back_on(thread, mark);
        self.cut(event_ts(event));
        false
    }

    /// Cuts the trace at `ts`: every slice open in the file ends there (flagged
    /// `cut_at_max_size`), and no later event is written.
    pub(super) fn cut(&mut self, ts: u64) {
        let Some(cap) = self.cap.as_mut() else {
            return;
        };
        if cap.cut.is_some() {
            return;
        }
        let at_bytes = cap.file_bytes + self.enc.buf.len() as u64;
        cap.open = 0;
        let mut tracks: Vec<&mut ThreadTrack> = self
            .threads
            .values_mut()
            .filter(|t| t.open_written > 0)
            .collect();
        tracks.sort_by_key(|t| t.uuid);
        let mut closed = 0;
        for t in tracks {
            // Per track the timestamps stay in order: no earlier than what the track has.
            let end = ts.max(t.last_ts);
            for _ in 0..t.open_written {
                let e = &mut self.enc;
                let p = e.thread_packet(t.seq_id, &mut t.clock, end);
                let te = e.open(packet::TRACK_EVENT);
                e.uint(event::TYPE, event::TYPE_SLICE_END);
                let a = e.open(event::DEBUG_ANNOTATIONS);
                e.bytes(annotation::NAME, b"cut_at_max_size");
                e.uint(annotation::BOOL_VALUE, 1);
                e.close(a);
                e.close(te);
                e.end_packet(p);
            }
            closed += u64::from(t.open_written);
            t.open_written = 0;
            t.last_ts = end;
        }
        self.counts.slices_ended += closed;
        self.counts.track_events += closed;
        // A packet taken back may have interned names: later packets intern theirs again.
        self.seq.forget_interned();
        for t in self.threads.values_mut() {
            t.seq.forget_interned();
        }
        if let Some(cap) = self.cap.as_mut() {
            cap.cut = Some(Cut {
                at_bytes,
                ts_ns: ts,
                slices_closed_at_cut: closed,
                ..Cut::default()
            });
        }
    }

    /// True once the size limit cut the trace.
    pub(super) fn is_cut(&self) -> bool {
        self.cap.as_ref().is_some_and(|c| c.cut.is_some())
    }

    /// Counts `n` records left out after the cut.
    pub(super) fn left_out(&mut self, n: u64) {
        if let Some(cut) = self.cap.as_mut().and_then(|c| c.cut.as_mut()) {
            cut.records_left_out += n;
        }
    }
}

/// What the last stderr line says about the trace's cut at `METRON_TRACE_MAX_SIZE` (set when
/// the trace sink finishes).
static CUT_NOTE: std::sync::Mutex<Option<String>> = std::sync::Mutex::new(None);

pub(super) fn set_cut_note(note: Option<String>) {
    *CUT_NOTE.lock().unwrap_or_else(|e| e.into_inner()) = note;
}

/// `; trace cut at N bytes (M records left out; METRON_TRACE_MAX_SIZE=L)` when the size limit
/// cut the trace, for the run's last stderr line; empty otherwise.
#[doc(hidden)]
pub fn cut_note() -> String {
    CUT_NOTE
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .as_ref()
        .map(|n| format!("; {n}"))
        .unwrap_or_default()
}
