//! Async slices in the Perfetto trace: ranges that may begin and end on different threads
//! (NVTX start/end, `tracing` spans of async tasks).
//!
//! # Layout
//! A slice on a thread track must end on that track, and slices on one track must nest, so
//! async slices get **tracks of their own under the process track**: one per range name, plus
//! one more *lane* of that name (`name (2)`, `name (3)`, ...) for every range that overlaps
//! the ones already on the earlier lanes. Track uuids count up from [`ASYNC_UUID_BASE`].
//!
//! A range is written once both of its ends are known (see `async_ranges.rs` for the pairing
//! across threads): a `TYPE_SLICE_BEGIN` and a `TYPE_SLICE_END` on its lane. A lane takes a
//! range only if the range begins at or after the lane's last end, so every track's events stay
//! in time order. Debug annotations on the slice: `begin_tid` and `end_tid` when the range
//! crossed threads, `closed_by_metron` when its end never came (closed at the run's end).

use super::async_ranges::{AsyncMatcher, Matched};
use super::perfetto::{TraceCounts, PROCESS_UUID};
use super::perfetto_encode::{annotation, event, interned, packet, track, Encoder, FastMap};
use super::perfetto_session::SeqState;
use crate::sink::{Event, ThreadInfo};

/// Async slice tracks are numbered from here (far from thread, counter and GPU tracks).
pub const ASYNC_UUID_BASE: u64 = 0x4000_0000_0000;

/// `TracePacket.sequence_flags`: `SEQ_NEEDS_INCREMENTAL_STATE`.
const SEQ_NEEDS_INCREMENTAL_STATE: u64 = 2;

/// One track of a range name.
struct Lane {
    uuid: u64,
    /// End of the last range written on it.
    last_end_ns: u64,
}

/// The async slices of the trace: pairing, lanes, encoding.
#[derive(Default)]
pub(crate) struct AsyncSlices {
    matcher: AsyncMatcher,
    /// Lanes of each range name (by call-site id).
    lanes: FastMap<u32, Vec<Lane>>,
    next_uuid: u64,
    /// Thread index → tid, for the `begin_tid`/`end_tid` annotations.
    tids: FastMap<u64, u32>,
}

impl AsyncSlices {
    /// Handles an [`Event::AsyncBegin`] or [`Event::AsyncEnd`] of `thread`: once the range is
    /// complete, it is encoded.
    pub(crate) fn event(
        &mut self,
        thread: &ThreadInfo,
        event: &Event<'_>,
        enc: &mut Encoder,
        seq: &mut SeqState,
        counts: &mut TraceCounts,
    ) {
        self.tids.insert(thread.index, thread.tid);
        if let Some(m) = self.matcher.event(thread.index, event) {
            self.write(&m, enc, seq, counts);
        }
    }

    /// The run is over at `end_ns`: ranges still open are closed there (annotated
    /// `closed_by_metron`). Returns (unmatched ends, ranges open at exit).
    pub(crate) fn finish(
        &mut self,
        end_ns: u64,
        enc: &mut Encoder,
        seq: &mut SeqState,
        counts: &mut TraceCounts,
    ) -> (u64, u64) {
        for m in self.matcher.finish(end_ns) {
            self.write(&m, enc, seq, counts);
        }
        (self.matcher.unmatched_ends, self.matcher.open_at_exit)
    }

    /// The lane for `m`, describing a new track when none fits.
    fn lane(&mut self, m: &Matched, enc: &mut Encoder) -> u64 {
        let lanes = self.lanes.entry(m.site.id()).or_default();
        if let Some(lane) = lanes.iter_mut().find(|l| l.last_end_ns <= m.begin_ns) {
            lane.last_end_ns = m.end_ns;
            return lane.uuid;
        }
        let uuid = ASYNC_UUID_BASE + self.next_uuid;
        self.next_uuid += 1;
        let name = if lanes.is_empty() {
            m.site.name.to_string()
        } else {
            format!("{} ({})", m.site.name, lanes.len() + 1)
        };
        lanes.push(Lane {
            uuid,
            last_end_ns: m.end_ns,
        });
        let p = enc.packet(m.begin_ns, SEQ_NEEDS_INCREMENTAL_STATE);
        let t = enc.open(packet::TRACK_DESCRIPTOR);
        enc.uint(track::UUID, uuid);
        enc.uint(track::PARENT_UUID, PROCESS_UUID);
        enc.bytes(track::NAME, name.as_bytes());
        enc.bytes(
            track::DESCRIPTION,
            b"Metron async ranges (may begin and end on different threads)",
        );
        enc.close(t);
        enc.end_packet(p);
        uuid
    }

    fn write(
        &mut self,
        m: &Matched,
        enc: &mut Encoder,
        seq: &mut SeqState,
        counts: &mut TraceCounts,
    ) {
        let uuid = self.lane(m, enc);
        let iid = u64::from(m.site.id());
        let new = seq.intern_event_name(iid);
        let p = enc.packet(m.begin_ns, SEQ_NEEDS_INCREMENTAL_STATE);
        if new {
            let d = enc.open(packet::INTERNED_DATA);
            let n = enc.open(interned::EVENT_NAMES);
            enc.uint(interned::IID, iid);
            enc.bytes(interned::NAME, m.site.name.as_bytes());
            enc.close(n);
            enc.close(d);
        }
        let t = enc.open(packet::TRACK_EVENT);
        enc.uint(event::TYPE, event::TYPE_SLICE_BEGIN);
        enc.uint(event::TRACK_UUID, uuid);
        enc.uint(event::NAME_IID, iid);
        if m.begin_thread != m.end_thread {
            for (name, index) in [("begin_tid", m.begin_thread), ("end_tid", m.end_thread)] {
                let a = enc.open(event::DEBUG_ANNOTATIONS);
                enc.bytes(annotation::NAME, name.as_bytes());
                let tid = self.tids.get(&index).copied().unwrap_or(0);
                enc.uint(annotation::UINT_VALUE, u64::from(tid));
                enc.close(a);
            }
        }
        enc.close(t);
        enc.end_packet(p);

        let p = enc.packet(m.end_ns, SEQ_NEEDS_INCREMENTAL_STATE);
        let t = enc.open(packet::TRACK_EVENT);
        enc.uint(event::TYPE, event::TYPE_SLICE_END);
        enc.uint(event::TRACK_UUID, uuid);
        if m.closed_by_metron {
            let a = enc.open(event::DEBUG_ANNOTATIONS);
            enc.bytes(annotation::NAME, b"closed_by_metron");
            enc.uint(annotation::BOOL_VALUE, 1);
            enc.close(a);
        }
        enc.close(t);
        enc.end_packet(p);
        counts.slices_begun += 1;
        counts.slices_ended += 1;
        counts.track_events += 2;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::callsite::{Callsite, CallsiteKind};

    static SITE: Callsite = Callsite::new("lanes", "", 0, "", CallsiteKind::Region, &[]);

    fn thread(index: u64) -> ThreadInfo {
        ThreadInfo {
            tid: 100 + index as u32,
            name: format!("t{index}"),
            index,
            is_metron: false,
        }
    }

    #[test]
    fn overlapping_ranges_of_one_name_take_lanes_and_a_later_one_reuses_the_first() {
        let mut slices = AsyncSlices::default();
        let (mut enc, mut seq, mut counts) = (
            Encoder::default(),
            SeqState::default(),
            TraceCounts::default(),
        );
        let mut feed = |s: &mut AsyncSlices, t: u64, e: Event<'static>| {
            s.event(&thread(t), &e, &mut enc, &mut seq, &mut counts)
        };
        let begin = |ts_ns, cookie| Event::AsyncBegin {
            ts_ns,
            site: &SITE,
            cookie,
        };
        let end = |ts_ns, cookie| Event::AsyncEnd {
            ts_ns,
            site: &SITE,
            cookie,
        };
        feed(&mut slices, 0, begin(10, 1));
        feed(&mut slices, 0, begin(20, 2));
        feed(&mut slices, 1, end(30, 1));
        feed(&mut slices, 1, end(40, 2));
        feed(&mut slices, 0, begin(50, 3));
        feed(&mut slices, 0, end(60, 3));
        let lanes: Vec<u64> = slices.lanes[&SITE.id()].iter().map(|l| l.uuid).collect();
        assert_eq!(lanes, [ASYNC_UUID_BASE, ASYNC_UUID_BASE + 1]);
        assert_eq!(slices.lanes[&SITE.id()][0].last_end_ns, 60, "reused");
        assert_eq!(counts.slices_ended, 3);
        assert_eq!(counts.track_events, 6);
        let (unmatched, open) = slices.finish(100, &mut enc, &mut seq, &mut counts);
        assert_eq!((unmatched, open), (0, 0));
    }
}
