//! Encoding one decoded event (a slice begin or end, an instant, a counter, an annotation,
//! a thread name, dropped records) on its thread's track.

use super::*;

impl PerfettoSink {
    /// Encodes one event of `thread` (on its track `track`).
    pub(super) fn event(
        &mut self,
        thread: &ThreadInfo,
        track: u64,
        cats: Categories,
        event: &Event<'_>,
    ) {
        match *event {
            Event::Begin { ts_ns, site } => {
                let t = self
                    .threads
                    .get_mut(&thread.index)
                    .expect("made in write_chunk");
                t.depth += 1;
                if cats.regions {
                    let iid = u64::from(site.id());
                    let new = t.seq.intern_event_name(iid);
                    let e = &mut self.enc;
                    let p = e.thread_packet(t.seq_id, &mut t.clock, ts_ns);
                    if new {
                        intern_event_name(e, iid, site.name);
                    }
                    let te = e.open(packet::TRACK_EVENT);
                    e.uint(event::TYPE, event::TYPE_SLICE_BEGIN);
                    e.uint(event::NAME_IID, iid);
                    e.close(te);
                    e.end_packet(p);
                    self.counts.slices_begun += 1;
                    self.counts.track_events += 1;
                }
            }
            Event::End {
                ts_ns,
                site,
                values,
                closed_by_metron,
                ..
            } => self.end(thread, ts_ns, site, values, closed_by_metron),
            Event::Instant { ts_ns, site } => {
                if cats.marks {
                    let iid = u64::from(site.id());
                    let new = self.seq.intern_event_name(iid);
                    instant(
                        &mut self.enc,
                        ts_ns,
                        track,
                        iid,
                        new.then_some(site.name),
                        None,
                    );
                    self.counts.instants += 1;
                    self.counts.track_events += 1;
                }
            }
            Event::Counter { ts_ns, site, value } => {
                if cats.counters {
                    let uuid = self.counter_track(thread, site, ts_ns);
                    counter(&mut self.enc, ts_ns, uuid, value);
                    self.counts.counter_values += 1;
                    self.counts.track_events += 1;
                }
            }
            Event::Annotation { key, .. } if crate::sink::gpu::is_launch_key(key) => {}
            Event::Annotation {
                region: Some(_),
                key,
                value,
                ..
            } => {
                if cats.annotations && cats.regions {
                    let value = match value {
                        AnnotationValue::I64(v) => Pending::I(v),
                        AnnotationValue::U64(v) => Pending::U(v),
                        AnnotationValue::F64(v) => Pending::F(v),
                        AnnotationValue::Bool(v) => Pending::B(v),
                        AnnotationValue::Str(s) => Pending::S(s.to_string()),
                    };
                    let t = self.thread_track(thread);
                    let depth = t.depth;
                    t.pending
                        .push((depth, u64::from(key.id()), key.name, value));
                }
            }
            Event::Annotation { region: None, .. } => {}
            Event::ThreadName { ts_ns, name } => {
                let t = self.thread_track(thread);
                if t.name != name {
                    t.name = name.to_string();
                    let info = ThreadInfo {
                        name: name.to_string(),
                        ..thread.clone()
                    };
                    self.describe_thread(&info, ts_ns);
                }
            }
            Event::Dropped { ts_ns, count } => {
                let new = self.seq.intern_event_name(IID_DROPPED);
                let new_ann = self.seq.intern_annotation_name(ANN_COUNT);
                instant(
                    &mut self.enc,
                    ts_ns,
                    track,
                    IID_DROPPED,
                    new.then_some(NAME_DROPPED),
                    Some((ANN_COUNT, new_ann, count)),
                );
                self.thread_track(thread).dropped += count;
                self.counts.dropped_instants += 1;
                self.counts.records_dropped += count;
                self.counts.track_events += 1;
            }
            Event::Sample {
                ts_ns,
                frames,
                trigger,
            } => {
                let (enc, seq, pid) = (&mut self.enc, &mut self.seq, self.pid);
                let s = &mut self.samples;
                let events = s.sample(pid, thread, track, ts_ns, frames, trigger, enc, seq);
                self.counts.track_events += events;
            }
            Event::AsyncBegin { .. } | Event::AsyncEnd { .. } => {
                if cats.regions {
                    let (enc, seq, counts) = (&mut self.enc, &mut self.seq, &mut self.counts);
                    self.async_slices.event(thread, event, enc, seq, counts);
                }
            }
        }
    }

    pub(super) fn end(
        &mut self,
        thread: &ThreadInfo,
        ts_ns: u64,
        site: &'static Callsite,
        values: &[f64],
        closed_by_metron: bool,
    ) {
        let cats = self.config.categories;
        let mut pending = {
            let t = self.thread_track(thread);
            let depth = t.depth;
            t.depth = t.depth.saturating_sub(1);
            let pending = if t.pending.last().is_some_and(|p| p.0 >= depth) {
                let split = t.pending.partition_point(|p| p.0 < depth);
                t.pending.split_off(split)
            } else {
                Vec::new()
            };
            pending
        };
        if !cats.regions {
            return;
        }
        let fields = (cats.values && !values.is_empty()).then(|| self.site_fields(site));
        let t = self.threads.get_mut(&thread.index).expect("made above");
        // Names first (interned into this packet when new), then the values.
        self.scratch_names.clear();
        self.scratch_values.clear();
        if let Some(fields) = fields {
            // NaN: a field with no value this run (unused or unavailable counter).
            for (&(iid, name), v) in fields.iter().zip(values).filter(|(_, v)| !v.is_nan()) {
                if t.seq.intern_annotation_name(iid) {
                    self.scratch_names.push((iid, name));
                }
                self.scratch_values.push((iid, *v));
            }
        }
        for (_, iid, name, _) in &pending {
            if t.seq.intern_annotation_name(*iid) {
                self.scratch_names.push((*iid, name));
            }
        }
        if closed_by_metron && t.seq.intern_annotation_name(ANN_CLOSED_BY_METRON) {
            self.scratch_names
                .push((ANN_CLOSED_BY_METRON, "closed_by_metron"));
        }
        let e = &mut self.enc;
        let p = e.thread_packet(t.seq_id, &mut t.clock, ts_ns);
        if !self.scratch_names.is_empty() {
            let d = e.open(packet::INTERNED_DATA);
            for (iid, name) in &self.scratch_names {
                let n = e.open(interned::DEBUG_ANNOTATION_NAMES);
                e.uint(interned::IID, *iid);
                e.bytes(interned::NAME, name.as_bytes());
                e.close(n);
            }
            e.close(d);
        }
        let t = e.open(packet::TRACK_EVENT);
        e.uint(event::TYPE, event::TYPE_SLICE_END);
        for (iid, v) in &self.scratch_values {
            let a = e.open(event::DEBUG_ANNOTATIONS);
            e.uint(annotation::NAME_IID, *iid);
            number(e, *v);
            e.close(a);
        }
        for (_, iid, _, v) in &pending {
            let a = e.open(event::DEBUG_ANNOTATIONS);
            e.uint(annotation::NAME_IID, *iid);
            match v {
                Pending::I(v) => e.int(annotation::INT_VALUE, *v),
                Pending::U(v) => e.uint(annotation::UINT_VALUE, *v),
                Pending::F(v) => e.double(annotation::DOUBLE_VALUE, *v),
                Pending::B(v) => e.uint(annotation::BOOL_VALUE, u64::from(*v)),
                Pending::S(s) => e.bytes(annotation::STRING_VALUE, s.as_bytes()),
            }
            e.close(a);
        }
        if closed_by_metron {
            let a = e.open(event::DEBUG_ANNOTATIONS);
            e.uint(annotation::NAME_IID, ANN_CLOSED_BY_METRON);
            e.uint(annotation::BOOL_VALUE, 1);
            e.close(a);
        }
        e.close(t);
        e.end_packet(p);
        self.counts.slices_ended += 1;
        self.counts.track_events += 1;
        pending.clear();
    }
}

pub(super) fn instant(
    e: &mut Encoder,
    ts: u64,
    track: u64,
    iid: u64,
    new_name: Option<&str>,
    count: Option<(u64, bool, u64)>,
) {
    let p = e.packet(ts, SEQ_NEEDS_INCREMENTAL_STATE);
    let new_ann = count.filter(|c| c.1);
    if new_name.is_some() || new_ann.is_some() {
        let d = e.open(packet::INTERNED_DATA);
        if let Some(name) = new_name {
            let n = e.open(interned::EVENT_NAMES);
            e.uint(interned::IID, iid);
            e.bytes(interned::NAME, name.as_bytes());
            e.close(n);
        }
        if let Some((ann, _, _)) = new_ann {
            let n = e.open(interned::DEBUG_ANNOTATION_NAMES);
            e.uint(interned::IID, ann);
            e.bytes(interned::NAME, b"count");
            e.close(n);
        }
        e.close(d);
    }
    let t = e.open(packet::TRACK_EVENT);
    e.uint(event::TYPE, event::TYPE_INSTANT);
    e.uint(event::TRACK_UUID, track);
    e.uint(event::NAME_IID, iid);
    if let Some((ann, _, value)) = count {
        let a = e.open(event::DEBUG_ANNOTATIONS);
        e.uint(annotation::NAME_IID, ann);
        e.uint(annotation::UINT_VALUE, value);
        e.close(a);
    }
    e.close(t);
    e.end_packet(p);
}

pub(super) fn counter(e: &mut Encoder, ts: u64, track: u64, value: f64) {
    let p = e.packet(ts, SEQ_NEEDS_INCREMENTAL_STATE);
    let t = e.open(packet::TRACK_EVENT);
    e.uint(event::TYPE, event::TYPE_COUNTER);
    e.uint(event::TRACK_UUID, track);
    e.double(event::DOUBLE_COUNTER_VALUE, value);
    e.close(t);
    e.end_packet(p);
}

/// A bundle value: integral values as `int_value`, others as `double_value`.
pub(super) fn number(e: &mut Encoder, v: f64) {
    if v.fract() == 0.0 && v.abs() < 9.0e15 {
        e.int(annotation::INT_VALUE, v as i64);
    } else {
        e.double(annotation::DOUBLE_VALUE, v);
    }
}
