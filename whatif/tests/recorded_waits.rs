//! Known answers for waits the GPU tracer recorded (CUPTI's synchronization and CUDA event
//! records): an event object recorded twice, a stream made to wait for the first record, a
//! stream, an event and a context synchronize. Times in µs; the predictions are worked out by
//! hand from the program's structure; a span is from the run's first start (10 µs).

use metron_whatif::graph::{
    EventRecord, Graph, Kind, Recording, SyncRecord, ThreadRecord, Waited, Why,
};

mod support;
use support::{assert_replays_exactly, call, op, predicted, US};

const S1: &str = "GPU 0 NVIDIA H100 stream 1";
const S2: &str = "GPU 0 NVIDIA H100 stream 2";

fn sync(kind: Waited, correlation: u64, stream: Option<u32>, event: Option<u64>) -> SyncRecord {
    SyncRecord {
        kind,
        correlation,
        stream,
        event_record: event,
    }
}

/// One thread. Stream 1 runs `k1` (15–65) then `k2` (66–170); event E is recorded after each
/// (records 100 and 101: the same event object, recorded again). Stream 2 is made to wait for
/// record 100, then runs `kb` (67–87, held by `k1`: launched at 17, it would have started
/// at 22). The thread synchronizes stream 2 (woken at 89), runs `post` (89–99), synchronizes
/// on record 101 (woken at 172, after `k2`) and then the context (172–173, nothing left).
fn reused_event(records: bool) -> Graph {
    reused_event_with(records, records)
}

/// [`reused_event`] with or without the synchronization records and the event records.
fn reused_event_with(syncs: bool, events: bool) -> Graph {
    let mut rec = Recording {
        threads: vec![ThreadRecord {
            tid: 7,
            calls: vec![
                call("cudaLaunchKernel", 10, 12, &[1]),
                call("cudaEventRecord", 12, 13, &[2]),
                call("cudaLaunchKernel", 13, 15, &[3]),
                call("cudaEventRecord", 15, 16, &[4]),
                call("cudaStreamWaitEvent", 16, 17, &[5]),
                call("cudaLaunchKernel", 17, 19, &[6]),
                call("cudaStreamSynchronize", 19, 89, &[7]),
                call("cudaEventSynchronize", 99, 172, &[8]),
                call("cudaDeviceSynchronize", 172, 173, &[9]),
            ],
            regions: Vec::new(),
        }],
        ops: vec![
            op("k1", S1, 15, 65, 1),
            op("k2", S1, 66, 170, 3),
            op("kb", S2, 67, 87, 6),
        ],
        ..Recording::default()
    };
    if events {
        rec.events = vec![
            EventRecord {
                correlation: 2,
                stream: 1,
                id: 100,
            },
            EventRecord {
                correlation: 4,
                stream: 1,
                id: 101,
            },
        ];
    }
    if syncs {
        rec.syncs = vec![
            sync(Waited::StreamWaitsEvent, 5, Some(2), Some(100)),
            sync(Waited::Stream, 7, Some(2), None),
            sync(Waited::Event, 8, None, Some(101)),
            sync(Waited::Context, 9, None, None),
        ];
    }
    Graph::build(&rec)
}

fn op_node(g: &Graph, name: &str) -> usize {
    g.nodes
        .iter()
        .position(|n| matches!(n.kind, Kind::Op { .. }) && g.names[n.name] == name)
        .unwrap()
}

#[test]
fn a_stream_waits_for_the_record_it_names_not_the_events_latest() {
    let g = reused_event(true);
    let (k1, kb) = (op_node(&g, "k1"), op_node(&g, "kb"));
    let held: Vec<_> = g.nodes[kb]
        .after
        .iter()
        .filter(|e| e.why == Why::OtherStream)
        .map(|e| (e.from, e.lag))
        .collect();
    assert_eq!(
        held,
        [(k1, 2 * US)],
        "kb waits for k1 (record 100), 2 µs after"
    );
    // The stream wait and the three synchronizations, none found from the times.
    assert_eq!(g.recorded_waits, 4);
    assert_eq!(g.inferred_other_stream, 0);
    assert_eq!(g.blocked_syncs, 2);
}

#[test]
fn the_unchanged_replay_gives_back_every_recorded_time() {
    let g = reused_event(true);
    assert_replays_exactly(&g);
    assert_eq!(predicted(&g, &[]), 163.0);
}

#[test]
fn recorded_waits_predict_each_kernel_faster() {
    let g = reused_event(true);
    // k2 66–118: kb still waits for k1 only (67–87); the event sync wakes 2 µs after k2 (120),
    // the context sync takes its own 1 µs.
    assert_eq!(predicted(&g, &["k2=50%"]), 111.0);
    // k1 15–40: k2 41–145, kb 42–62, the stream sync wakes at 64, post 64–74, the event sync
    // at 147, the context sync 147–148.
    assert_eq!(predicted(&g, &["k1=50%"]), 138.0);
    // kb is off the critical path.
    assert_eq!(predicted(&g, &["kb=50%"]), 163.0);
}

#[test]
fn without_records_the_waits_are_found_from_the_times() {
    let g = reused_event(false);
    assert_eq!(g.recorded_waits, 0);
    // The same answer, worked out from the times: kb started 48 µs after its launch allowed,
    // within 10 µs of k1's end.
    assert_eq!(g.inferred_other_stream, 1);
    assert_eq!(predicted(&g, &["k2=50%"]), 111.0);
    assert_eq!(predicted(&g, &["k1=50%"]), 138.0);
}

#[test]
fn synchronizations_without_event_records_fall_back_to_the_times_for_events() {
    let g = reused_event_with(true, false);
    // The stream and context synchronizes are recorded; the stream wait and the event
    // synchronize name event records the run does not have: found from the times.
    assert_eq!(g.recorded_waits, 2);
    assert_eq!(g.inferred_other_stream, 1);
    assert_eq!(predicted(&g, &["k2=50%"]), 111.0);
    assert_eq!(predicted(&g, &["k1=50%"]), 138.0);
}
