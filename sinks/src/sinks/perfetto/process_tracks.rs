//! The trace's descriptions and its own metadata: the process track, a thread's track, a
//! counter track per (thread, counter), the process RSS samples and the run-end instant whose
//! annotations are the run's counts.

use super::*;

impl PerfettoSink {
    pub(super) fn describe_process(&mut self, ts: u64) {
        let e = &mut self.enc;
        let p = e.packet(ts, SEQ_NEEDS_INCREMENTAL_STATE);
        let t = e.open(packet::TRACK_DESCRIPTOR);
        e.uint(track::UUID, PROCESS_UUID);
        let d = e.open(track::PROCESS);
        e.int(track::PROCESS_PID, i64::from(self.pid as i32));
        e.bytes(track::PROCESS_CMDLINE, self.cmdline.as_bytes());
        e.bytes(track::PROCESS_NAME, self.exe.as_bytes());
        e.close(d);
        e.close(t);
        e.end_packet(p);

        let p = e.packet(ts, SEQ_NEEDS_INCREMENTAL_STATE);
        let t = e.open(packet::TRACK_DESCRIPTOR);
        e.uint(track::UUID, RSS_UUID);
        e.uint(track::PARENT_UUID, PROCESS_UUID);
        e.bytes(track::NAME, b"metron: process RSS");
        let c = e.open(track::COUNTER);
        e.uint(track::COUNTER_UNIT, track::UNIT_SIZE_BYTES);
        e.close(c);
        e.close(t);
        e.end_packet(p);
        self.process_described = true;
    }

    pub(super) fn describe_thread(&mut self, thread: &ThreadInfo, ts: u64) {
        let pid = self.pid;
        let t = self.thread_track(thread);
        let uuid = t.uuid;
        t.described = true;
        let name = t.name.clone();
        let e = &mut self.enc;
        let p = e.packet(ts, SEQ_NEEDS_INCREMENTAL_STATE);
        let t = e.open(packet::TRACK_DESCRIPTOR);
        e.uint(track::UUID, uuid);
        e.uint(track::PARENT_UUID, PROCESS_UUID);
        if thread.is_metron {
            e.bytes(track::DESCRIPTION, b"Metron's own thread");
        }
        let d = e.open(track::THREAD);
        e.int(track::THREAD_PID, i64::from(pid as i32));
        e.int(track::THREAD_TID, i64::from(thread.tid));
        e.bytes(track::THREAD_NAME, name.as_bytes());
        e.close(d);
        e.close(t);
        e.end_packet(p);
    }

    pub(super) fn counter_track(
        &mut self,
        thread: &ThreadInfo,
        site: &'static Callsite,
        ts: u64,
    ) -> u64 {
        let key = (thread.index, site.id());
        if let Some(uuid) = self.counter_tracks.get(&key) {
            return *uuid;
        }
        let uuid = self.next_counter_uuid;
        self.next_counter_uuid += 1;
        self.counter_tracks.insert(key, uuid);
        let parent = self.thread_track(thread).uuid;
        let e = &mut self.enc;
        let p = e.packet(ts, SEQ_NEEDS_INCREMENTAL_STATE);
        let t = e.open(packet::TRACK_DESCRIPTOR);
        e.uint(track::UUID, uuid);
        e.uint(track::PARENT_UUID, parent);
        e.bytes(track::NAME, site.name.as_bytes());
        let c = e.open(track::COUNTER);
        e.close(c);
        e.close(t);
        e.end_packet(p);
        uuid
    }

    /// Samples the process RSS onto its counter track (at most every [`RSS_PERIOD`]).
    pub(super) fn sample_process(&mut self, force: bool) {
        if !self.config.categories.process || self.session.is_none() {
            return;
        }
        if !force && self.last_rss.is_some_and(|t| t.elapsed() < RSS_PERIOD) {
            return;
        }
        // Past the cut only the last sample is written (in the closing reserve).
        if !force && self.is_cut() {
            return;
        }
        self.last_rss = Some(Instant::now());
        let mut rss = PageRss::default();
        rss.sample();
        let value = rss.value() as f64;
        let ts = clock::monotonic_ns();
        self.ensure_sequence(ts);
        let mark = self.mark();
        counter(&mut self.enc, ts, RSS_UUID, value);
        self.counts.counter_values += 1;
        self.counts.track_events += 1;
        if !force && !self.fits(self.cap.as_ref().map_or(0, |c| c.open)) {
            self.take_back(mark);
            self.cut(ts);
        }
    }

    /// Writes the run-end instant (the trace's metadata) on the process track.
    pub(super) fn run_end(&mut self, run: &RunInfo) {
        let ts = run.end_ns.max(run.start_ns);
        let dropped = self.counts.records_dropped;
        let threads = self.threads.len() as u64;
        let slices = self.counts.slices_ended;
        self.ensure_sequence(ts);
        let new = self.seq.intern_event_name(IID_RUN_END);
        let e = &mut self.enc;
        let p = e.packet(ts, SEQ_NEEDS_INCREMENTAL_STATE);
        if new {
            intern_event_name(e, IID_RUN_END, NAME_RUN_END);
        }
        let t = e.open(packet::TRACK_EVENT);
        e.uint(event::TYPE, event::TYPE_INSTANT);
        e.uint(event::TRACK_UUID, PROCESS_UUID);
        e.uint(event::NAME_IID, IID_RUN_END);
        let cut = self.cap.as_ref().and_then(|c| c.cut.as_ref());
        let left_out = cut.map(|c| ("records_left_out_at_max_size", c.records_left_out));
        for (name, v) in [
            ("records_dropped", dropped),
            ("threads", threads),
            ("slices", slices),
        ]
        .into_iter()
        .chain(left_out)
        {
            let a = e.open(event::DEBUG_ANNOTATIONS);
            e.bytes(annotation::NAME, name.as_bytes());
            e.uint(annotation::UINT_VALUE, v);
            e.close(a);
        }
        e.close(t);
        e.end_packet(p);
        self.counts.track_events += 1;
    }
}
