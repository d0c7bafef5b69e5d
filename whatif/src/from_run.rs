//! A run folder's trace as a [`Recording`]: each thread's regions and GPU API calls, each
//! stream's kernels, copies and sets (their tracks as `trace.pftrace` lays them out).

use crate::graph::{
    CallRecord, EventRecord, Graph, OpRecord, Recording, Span, SyncRecord, ThreadRecord, Waited,
};
use metron_export::trace::{Slice, Track};
use metron_export::Run;
use std::collections::BTreeMap;

/// The dependency graph of run `run`.
pub fn from_run(run: &Run) -> Graph {
    Graph::build(&recording(run))
}

/// What the trace of `run` recorded.
pub fn recording(run: &Run) -> Recording {
    let tracks = &run.trace.tracks;
    let mut threads: BTreeMap<u32, ThreadRecord> = BTreeMap::new();
    let mut ops = Vec::new();
    let (mut syncs, mut events) = (Vec::new(), Vec::new());
    let mut by_track: BTreeMap<u64, Vec<&Slice>> = BTreeMap::new();
    for s in &run.trace.slices {
        by_track.entry(s.track).or_default().push(s);
    }
    for (uuid, slices) in by_track {
        let Some(track) = tracks.get(&uuid) else {
            continue;
        };
        if is_sync_track(tracks, track) {
            for s in slices {
                let Some(correlation) = correlation(s) else {
                    continue;
                };
                let arg = |k: &str| s.args.get(k).and_then(|a| a.as_u64());
                let stream = arg("stream").and_then(|n| u32::try_from(n).ok());
                if &*s.name == EVENT_RECORD_SLICE {
                    if let (Some(stream), Some(id)) = (stream, arg("event_record")) {
                        events.push(EventRecord {
                            correlation,
                            stream,
                            id,
                        });
                    }
                } else if let Some(kind) = Waited::from_slice_name(&s.name) {
                    syncs.push(SyncRecord {
                        kind,
                        correlation,
                        stream,
                        event_record: arg("event_record"),
                    });
                }
            }
            continue;
        }
        let closed = slices
            .into_iter()
            .filter_map(|s| s.end_ns.map(|e| (s, e as i64)));
        if let Some((_, tid)) = track.thread {
            let t = threads.entry(tid).or_insert_with(|| new_thread(tid));
            t.regions.extend(closed.map(|(s, end)| Span {
                name: s.name.to_string(),
                start: s.start_ns as i64,
                end,
            }));
        } else if let Some(tid) = api_thread(&track.name) {
            let t = threads.entry(tid).or_insert_with(|| new_thread(tid));
            t.calls.extend(closed.map(|(s, end)| CallRecord {
                name: s.name.to_string(),
                start: s.start_ns as i64,
                end,
                correlations: correlation(s).into_iter().collect(),
            }));
        } else if let Some(stream) = stream_of(tracks, track) {
            ops.extend(closed.map(|(s, end)| OpRecord {
                name: s.name.to_string(),
                stream: stream.clone(),
                start: s.start_ns as i64,
                end,
                correlation: correlation(s),
            }));
        }
    }
    Recording {
        threads: threads.into_values().collect(),
        ops,
        syncs,
        events,
    }
}

fn new_thread(tid: u32) -> ThreadRecord {
    ThreadRecord {
        tid,
        ..ThreadRecord::default()
    }
}

fn correlation(s: &Slice) -> Option<u64> {
    s.args.get("correlation_id").and_then(|a| a.as_u64())
}

/// The name of an event record's slice on a synchronization track.
const EVENT_RECORD_SLICE: &str = "Event record";

/// A track of synchronizations and event records (`CUDA synchronization context <n>`, or a
/// lane of one).
fn is_sync_track(tracks: &BTreeMap<u64, Track>, track: &Track) -> bool {
    let sync = |t: &Track| t.name.starts_with("CUDA synchronization context ");
    sync(track) || tracks.get(&track.parent).is_some_and(sync)
}

/// The thread of an API track (`CUDA runtime API tid <n>`, `HIP API tid <n>`, ...).
fn api_thread(name: &str) -> Option<u32> {
    let (_, tid) = name.rsplit_once(" API tid ")?;
    tid.parse().ok()
}

/// The stream a GPU track's slices ran on: a stream or copies track itself, or the stream of a
/// lane (`<stream track> lane <n>`); none for counter and note tracks.
fn stream_of(tracks: &BTreeMap<u64, Track>, track: &Track) -> Option<String> {
    if !track.name.starts_with("GPU ") || track.thread.is_some() {
        return None;
    }
    match tracks
        .get(&track.parent)
        .filter(|p| p.name.starts_with("GPU "))
    {
        Some(parent) => {
            let lane = track
                .name
                .strip_prefix(&parent.name)?
                .strip_prefix(" lane ")?;
            lane.parse::<u32>().ok()?;
            Some(parent.name.clone())
        }
        None if track.name.ends_with(" metrics") => None,
        None => Some(track.name.clone()),
    }
}
