//! A user sink for tests that check what sinks receive: every decoded event as JSON, kept in
//! memory and written to `recorded-events.json` in the run folder at the end of the run.

use metron::{AnnotationValue, Event, RunInfo, Sink, ThreadInfo};
use serde_json::{json, Value};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// The file [`RecordingSink`] writes in the run folder.
pub const FILE: &str = "recorded-events.json";

/// Keeps every event as JSON ([`describe`]).
pub struct RecordingSink {
    events: Arc<Mutex<Vec<Value>>>,
}

/// One event as JSON: `kind`, `name` (or `key`), the thread's name, and what the kind carries
/// (an end's duration `ns`, an annotation's region and typed value, an async slice's cookie and
/// timestamp `ts`, ...).
pub fn describe(thread: &ThreadInfo, event: &Event<'_>) -> Value {
    let value_json = |v: &AnnotationValue<'_>| match *v {
        AnnotationValue::I64(v) => json!({"i64": v}),
        AnnotationValue::U64(v) => json!({"u64": v}),
        AnnotationValue::F64(v) => json!({"f64": v}),
        AnnotationValue::Bool(v) => json!({"bool": v}),
        AnnotationValue::Str(v) => json!({"str": v}),
    };
    let mut e = match event {
        Event::Begin { site, .. } => json!({"kind": "begin", "name": site.name}),
        Event::End {
            site,
            begin_ns,
            ts_ns,
            closed_by_metron,
            ..
        } => json!({
            "kind": "end",
            "name": site.name,
            "ns": ts_ns - begin_ns,
            "closed_by_metron": closed_by_metron,
        }),
        Event::Instant { site, .. } => json!({"kind": "mark", "name": site.name}),
        Event::Counter { site, value, .. } => {
            json!({"kind": "counter", "name": site.name, "value": value})
        }
        Event::Annotation {
            region, key, value, ..
        } => json!({
            "kind": "annotation",
            "key": key.name,
            "region": region.map(|r| r.name),
            "value": value_json(value),
        }),
        Event::ThreadName { name, .. } => json!({"kind": "thread_name", "name": name}),
        Event::Dropped { count, .. } => json!({"kind": "dropped", "count": count}),
        Event::Sample { frames, .. } => json!({"kind": "sample", "depth": frames.len()}),
        Event::AsyncBegin {
            site,
            cookie,
            ts_ns,
        } => json!({"kind": "async_begin", "name": site.name, "cookie": cookie, "ts": ts_ns}),
        Event::AsyncEnd {
            site,
            cookie,
            ts_ns,
        } => json!({"kind": "async_end", "name": site.name, "cookie": cookie, "ts": ts_ns}),
    };
    e["thread"] = json!(thread.name);
    e
}

impl Sink for RecordingSink {
    fn name(&self) -> &str {
        "recording"
    }

    fn events(&mut self, thread: &ThreadInfo, events: &[Event<'_>]) {
        let mut all = self.events.lock().unwrap();
        all.extend(events.iter().map(|e| describe(thread, e)));
    }

    fn finish(&mut self, run: &RunInfo) -> std::io::Result<Vec<PathBuf>> {
        let path = run.output_dir.join(FILE);
        let all = self.events.lock().unwrap();
        std::fs::write(&path, serde_json::to_string(&*all)?)?;
        Ok(vec![path])
    }
}

/// Adds a recording sink to the runtime; returns its events as they arrive.
pub fn recording_sink() -> Arc<Mutex<Vec<Value>>> {
    let events = Arc::new(Mutex::new(Vec::new()));
    metron::add_sink(Box::new(RecordingSink {
        events: Arc::clone(&events),
    }));
    events
}

/// The events a recording sink wrote in `run`'s folder.
pub fn recorded(run: &crate::Run) -> Vec<Value> {
    run.json(FILE)
        .as_array()
        .expect("an array of events")
        .clone()
}

/// The events with `kind`.
pub fn of_kind<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["kind"] == kind).collect()
}
