//! Synchronization and CUDA event records, as the NVIDIA backend hands them over, through the
//! trace and back into the what-if graph (a fake backend; no GPU needed). Stream 1 runs `k1`
//! then `k2` with one event object recorded after each (records 100 and 101); stream 2 is made
//! to wait for record 100 and runs `kb`; the thread synchronizes stream 2, then record 101.
//! The trace must hold each record with the ids it named, and the graph must bind `kb` to
//! `k1` — the record the wait named, not the event's latest.

use metron::gpu::{GpuKind, GpuRecord, NO_STREAM};
use metron_tests::fake_gpu;
use metron_whatif::graph::{Kind, Why};
use std::sync::Arc;

const US: u64 = 1000;

fn api(name: &str, t0: u64, start: u64, end: u64, corr: u32) -> GpuRecord {
    let mut r = GpuRecord::new(GpuKind::RuntimeApi, name.into());
    (r.start_ns, r.end_ns, r.correlation, r.tid) = (t0 + start * US, t0 + end * US, corr, 4242);
    r
}

fn kernel(name: &str, t0: u64, stream: u32, start: u64, end: u64, corr: u32) -> GpuRecord {
    let mut r = GpuRecord::new(GpuKind::Kernel, name.into());
    (r.start_ns, r.end_ns, r.correlation, r.stream) =
        (t0 + start * US, t0 + end * US, corr, stream);
    r.context = 1;
    r
}

fn sync(
    name: &str,
    t0: u64,
    start: u64,
    end: u64,
    corr: u32,
    stream: u32,
    event: u64,
) -> GpuRecord {
    let mut r = GpuRecord::new(GpuKind::Sync, name.into());
    (r.start_ns, r.end_ns, r.correlation) = (t0 + start * US, t0 + end * US, corr);
    (r.context, r.stream, r.event_record) = (1, stream, event);
    r
}

fn event(t0: u64, at: u64, corr: u32, stream: u32, id: u64) -> GpuRecord {
    let mut r = GpuRecord::new(GpuKind::EventRecord, Arc::from("Event record"));
    (r.start_ns, r.end_ns, r.correlation) = (t0 + at * US, t0 + at * US, corr);
    (r.context, r.stream, r.event_record) = (1, stream, id);
    r
}

#[test]
fn recorded_waits_reach_the_graph_through_the_trace() {
    let dir = fake_gpu::start(
        "metron-whatif-waits",
        fake_gpu::no_flush,
        fake_gpu::metadata,
        &["Fake GPU"],
    );
    let t0 = metron::clock::monotonic_ns();
    metron::gpu::submit(&[
        api("cudaLaunchKernel", t0, 10, 12, 1),
        api("cudaEventRecord", t0, 12, 13, 2),
        api("cudaLaunchKernel", t0, 13, 15, 3),
        api("cudaEventRecord", t0, 15, 16, 4),
        api("cudaStreamWaitEvent", t0, 16, 17, 5),
        api("cudaLaunchKernel", t0, 17, 19, 6),
        api("cudaStreamSynchronize", t0, 19, 89, 7),
        api("cudaEventSynchronize", t0, 99, 172, 8),
        kernel("k1", t0, 1, 15, 65, 1),
        kernel("k2", t0, 1, 66, 170, 3),
        kernel("kb", t0, 2, 67, 87, 6),
        event(t0, 65, 2, 1, 100),
        event(t0, 170, 4, 1, 101),
        sync("Stream wait event", t0, 16, 17, 5, 2, 100),
        sync("Stream synchronize", t0, 19, 89, 7, 2, 0),
        sync("Event synchronize", t0, 99, 172, 8, NO_STREAM, 101),
    ]);
    let out = metron::finish().expect("finished").output_dir;
    let run = metron_export::Run::read(&out).expect("the run folder reads");

    // The trace: one synchronization track (and lanes of it, where records overlap) with
    // each record and the ids it named.
    let track = run
        .trace
        .tracks
        .iter()
        .find(|(_, t)| t.name == "CUDA synchronization context 1")
        .map(|(&uuid, _)| uuid)
        .expect("the synchronization track");
    let on_sync_track = |uuid: u64| {
        uuid == track
            || run
                .trace
                .tracks
                .get(&uuid)
                .is_some_and(|t| t.parent == track)
    };
    type Row = (String, Option<u64>, Option<u64>, Option<u64>);
    let mut on_track: Vec<Row> = run
        .trace
        .slices
        .iter()
        .filter(|s| on_sync_track(s.track))
        .map(|s| {
            let arg = |k: &str| s.args.get(k).and_then(|a| a.as_u64());
            (
                s.name.to_string(),
                arg("correlation_id"),
                arg("stream"),
                arg("event_record"),
            )
        })
        .collect();
    on_track.sort();
    assert_eq!(
        on_track,
        [
            ("Event record".into(), Some(2), Some(1), Some(100)),
            ("Event record".into(), Some(4), Some(1), Some(101)),
            ("Event synchronize".into(), Some(8), None, Some(101)),
            ("Stream synchronize".into(), Some(7), Some(2), None),
            ("Stream wait event".into(), Some(5), Some(2), Some(100)),
        ]
    );

    // The graph: the stream wait binds kb to k1; the two synchronizations are recorded.
    let graph = metron_whatif::from_run(&run);
    assert_eq!(graph.recorded_waits, 3);
    assert_eq!(graph.inferred_other_stream, 0);
    let op = |name: &str| {
        graph
            .nodes
            .iter()
            .position(|n| matches!(n.kind, Kind::Op { .. }) && graph.names[n.name] == name)
            .expect(name)
    };
    let held: Vec<usize> = graph.nodes[op("kb")]
        .after
        .iter()
        .filter(|e| e.why == Why::OtherStream)
        .map(|e| e.from)
        .collect();
    assert_eq!(held, [op("k1")]);
    let faster = vec![metron_whatif::speedup::Speedup::parse("k2=50%").unwrap()];
    let answer = metron_whatif::answer::answer(&graph, faster, None).expect("answered");
    let (recorded, replayed, predicted) = answer.run;
    assert_eq!(recorded, replayed);
    // k2 52 µs shorter: the event synchronize wakes 52 µs earlier.
    assert_eq!(recorded - predicted, 52_000);
    if std::env::var_os("KEEP").is_none() {
        let _ = std::fs::remove_dir_all(&dir);
    }
}
