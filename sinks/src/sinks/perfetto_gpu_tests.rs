//! The GPU track writer's tests: each decodes the packets written with `metron-wire`'s reader.

use super::*;
use metron_wire::Value;

fn rec(kind: GpuKind, name: &str, start: u64, end: u64, corr: u32) -> GpuRecord {
    let mut r = GpuRecord::new(kind, name.into());
    r.start_ns = start;
    r.end_ns = end;
    r.correlation = corr;
    r.tid = 7;
    r.stream = 3;
    r
}

/// One decoded track event: its sequence, type, flows and the launch text's iid or status.
#[derive(Debug, Default, Clone)]
struct Decoded {
    seq: u64,
    track: Option<u64>,
    kind: u64,
    name_iid: Option<u64>,
    flow_out: Vec<u64>,
    flow_in: Vec<u64>,
    annotations: usize,
}

fn decode(buf: &[u8]) -> Vec<Decoded> {
    let mut out = Vec::new();
    for f in metron_wire::fields(buf) {
        let (1, Value::Len(packet)) = f.expect("framing") else {
            panic!("not a packet")
        };
        let mut d = Decoded::default();
        let mut event = false;
        for f in metron_wire::fields(packet) {
            match f.expect("packet") {
                (10, Value::Varint(s)) => d.seq = s,
                (11, Value::Len(te)) => {
                    event = true;
                    for f in metron_wire::fields(te) {
                        match f.expect("track event") {
                            (9, Value::Varint(t)) => d.kind = t,
                            (10, Value::Varint(n)) => d.name_iid = Some(n),
                            (11, Value::Varint(u)) => d.track = Some(u),
                            (36, Value::Varint(id)) => d.flow_out.push(id),
                            (42, Value::Varint(id)) => d.flow_in.push(id),
                            (4, Value::Len(_)) => d.annotations += 1,
                            _ => {}
                        }
                    }
                }
                _ => {}
            }
        }
        if event {
            out.push(d);
        }
    }
    out
}

#[test]
fn every_slice_begins_and_ends_on_its_own_sequence_with_one_arrow_per_launch() {
    let mut g = GpuTracks::default();
    let mut e = Encoder::default();
    let mut counts = TraceCounts::default();
    g.write(
        &mut e,
        &mut counts,
        1,
        &[
            rec(GpuKind::Kernel, "k", 60, 90, 1),
            rec(GpuKind::RuntimeApi, "cudaLaunchKernel", 10, 50, 1),
            rec(GpuKind::RuntimeApi, "cudaStreamSynchronize", 52, 58, 2),
            rec(GpuKind::Memcpy, "HtoD", 91, 95, 9),
        ],
    );
    assert_eq!(counts.slices_begun, 4);
    assert_eq!(counts.slices_ended, 4);
    let events = decode(&e.buf);
    assert_eq!(events.len(), 8);
    let begins: Vec<&Decoded> = events.iter().filter(|d| d.kind == 1).collect();
    // No event names its track: each sequence's defaults do.
    assert!(events.iter().all(|d| d.track.is_none()), "{events:?}");
    let launch = begins.iter().find(|d| !d.flow_out.is_empty()).unwrap();
    assert_eq!(launch.flow_out, [2], "1 + correlation 1");
    let kernel = begins.iter().find(|d| !d.flow_in.is_empty()).unwrap();
    assert_eq!(kernel.flow_in, [2]);
    assert_ne!(
        launch.seq, kernel.seq,
        "API and stream tracks are sequences of their own"
    );
    // The synchronize call launches nothing: no arrow starts there; the copy's id has no
    // call in these records and ends nowhere visible.
    assert_eq!(begins.iter().map(|d| d.flow_out.len()).sum::<usize>(), 1);
    // Device work carries its launch text and its correlation id; a successful launching
    // call only the correlation id; a synchronizing call its correlation id too (what its
    // synchronization record names it by).
    assert_eq!(kernel.annotations, 2);
    assert_eq!(launch.annotations, 1);
    let sync = begins
        .iter()
        .find(|d| d.seq == launch.seq && d.flow_out.is_empty())
        .unwrap();
    assert_eq!(sync.annotations, 1);
}

#[test]
fn calls_that_launch_or_wait_for_nothing_carry_no_annotation() {
    assert!(names_a_dependency("cudaStreamSynchronize"));
    assert!(names_a_dependency("cudaEventRecord"));
    assert!(names_a_dependency("cuStreamWaitEvent"));
    assert!(!names_a_dependency("cudaGetDevice"));
    let mut g = GpuTracks::default();
    let mut e = Encoder::default();
    let mut counts = TraceCounts::default();
    g.write(
        &mut e,
        &mut counts,
        1,
        &[rec(GpuKind::RuntimeApi, "cudaGetDevice", 10, 12, 3)],
    );
    let events = decode(&e.buf);
    assert_eq!(events.iter().map(|d| d.annotations).sum::<usize>(), 0);
}

#[test]
fn a_launch_in_a_loop_is_at_most_96_bytes() {
    let mut g = GpuTracks::default();
    let mut e = Encoder::default();
    let mut counts = TraceCounts::default();
    let launches = 10_000u32;
    let mut batch = Vec::new();
    for i in 0..launches {
        // A call of 2.5 µs every 4.5 µs, its kernel 1.5 µs long a few µs later: an empty
        // kernel launched in a loop. Correlation ids past 10⁷, as in a long run.
        let t = 1_000_000 + u64::from(i) * 4_500;
        let corr = 10_000_000 + 2 * i;
        let api = rec(GpuKind::RuntimeApi, "cudaLaunchKernel", t, t + 2_500, corr);
        let mut k = rec(GpuKind::Kernel, "empty()", t + 4_000, t + 5_500, corr);
        k.grid = [1, 1, 1];
        k.block = [1, 1, 1];
        k.registers = 16;
        k.occupancy = Some(0.5);
        batch.push(api);
        batch.push(k);
    }
    // The first batch describes the tracks and interns the names; the rest is the steady state.
    let (first, rest) = batch.split_at(200);
    g.write(&mut e, &mut counts, 1, first);
    let before = e.buf.len();
    g.write(&mut e, &mut counts, 1, rest);
    let per_launch = (e.buf.len() - before) as f64 / f64::from(launches - 100);
    eprintln!("{per_launch:.1} trace bytes per launch");
    assert!(
        per_launch <= 96.0,
        "{per_launch:.1} bytes per launch (kernel slice, API slice, arrow)"
    );
    let events = decode(&e.buf);
    let arrows_out: usize = events.iter().map(|d| d.flow_out.len()).sum();
    let arrows_in: usize = events.iter().map(|d| d.flow_in.len()).sum();
    assert_eq!(
        (arrows_out, arrows_in),
        (launches as usize, launches as usize)
    );
    assert_eq!(
        g.track_count(),
        2,
        "one stream, one API thread: no lane needed"
    );
    assert_eq!(g.out_of_order, 0);
}

#[test]
fn overlapping_work_goes_on_a_lane_so_every_track_nests() {
    let mut g = GpuTracks::default();
    let mut e = Encoder::default();
    let mut counts = TraceCounts::default();
    let mut a = rec(GpuKind::Kernel, "branch_a", 100, 200, 5);
    a.graph_id = 2;
    let mut b = rec(GpuKind::Kernel, "branch_b", 150, 250, 5);
    b.graph_id = 2;
    g.write(&mut e, &mut counts, 1, &[b, a]);
    assert_eq!(g.track_count(), 2);
    let text = String::from_utf8_lossy(&e.buf);
    assert!(text.contains("stream 3 lane 1"), "{text}");
    // A graph's nodes continue their launch's arrow.
    let events = decode(&e.buf);
    let graph = GRAPH_FLOW_BASE + 5;
    assert_eq!(events.iter().filter(|d| d.flow_out == [graph]).count(), 2);
    assert_eq!(g.out_of_order, 0);
}

#[test]
fn metric_samples_become_one_counter_track_per_device_and_metric() {
    let mut g = GpuTracks::default();
    let sample = |device: u32, name: &str, ts: u64, v: f64| {
        let mut r = GpuRecord::new(GpuKind::Counter, name.into());
        r.device = device;
        r.start_ns = ts;
        r.end_ns = ts + 10;
        r.value = v;
        r
    };
    let mut e = Encoder::default();
    let mut counts = TraceCounts::default();
    g.write(
        &mut e,
        &mut counts,
        1,
        &[
            rec(GpuKind::Kernel, "k", 60, 90, 1),
            sample(0, "dram_pct", 70, 81.5),
            sample(0, "dram_pct", 60, 12.25),
            sample(0, "sm_pct", 60, 3.0),
            sample(1, "dram_pct", 60, 7.0),
        ],
    );
    assert_eq!(counts.slices_begun, 1, "counters are not slices");
    assert_eq!(counts.counter_values, 4);
    let text = String::from_utf8_lossy(&e.buf);
    assert_eq!(text.matches(" metrics").count(), 2);
    assert_eq!(text.matches("dram_pct").count(), 2);
    assert_eq!(text.matches("sm_pct").count(), 1);
    for v in [81.5f64, 12.25, 3.0, 7.0] {
        let mut tagged = vec![0xe1u8, 0x02];
        tagged.extend_from_slice(&v.to_le_bytes());
        assert_eq!(
            e.buf
                .windows(10)
                .filter(|w| *w == tagged.as_slice())
                .count(),
            1,
            "{v}"
        );
    }
}

#[test]
fn notes_go_on_a_child_track_of_their_stream() {
    let mut g = GpuTracks::default();
    let mut e = Encoder::default();
    let mut counts = TraceCounts::default();
    g.write(
        &mut e,
        &mut counts,
        1,
        &[
            rec(GpuKind::Kernel, "k", 60, 90, 1),
            rec(GpuKind::Kernel, "k", 95, 99, 2),
        ],
    );
    let note = |start, end, stream| GpuNote {
        track: "PC sampling".into(),
        device: 0,
        stream,
        start_ns: start,
        end_ns: end,
        name: "k".into(),
        correlation: 1,
        args: vec![
            ("samples".into(), NoteValue::U64(1234)),
            ("stall_1_percent".into(), NoteValue::F64(61.25)),
            ("stall_1".into(), NoteValue::Str("long_scoreboard".into())),
        ],
    };
    g.write_notes(
        &mut e,
        &mut counts,
        1,
        vec![note(60, 90, 3), note(95, 99, 3), note(5, 6, 9)],
    );
    assert_eq!(counts.slices_begun, 5);
    assert_eq!(counts.slices_ended, 5);
    let text = String::from_utf8_lossy(&e.buf);
    assert_eq!(text.matches("stream 3 PC sampling").count(), 1, "{text}");
    assert_eq!(text.matches("stream 9 PC sampling").count(), 1, "{text}");
    assert_eq!(text.matches("long_scoreboard").count(), 3);
    // The stream track's uuid is the parent of its note track (parent_uuid, field 5): once
    // for the note track (the stream track's own parent is the process).
    let mut parent = vec![5u8 << 3];
    metron_wire::put_varint(&mut parent, GPU_UUID_BASE);
    assert_eq!(
        e.buf
            .windows(parent.len())
            .filter(|w| *w == parent.as_slice())
            .count(),
        1
    );
}

#[test]
fn memory_stays_flat_however_many_records_come() {
    let mut g = GpuTracks::default();
    let mut e = Encoder::default();
    let mut counts = TraceCounts::default();
    let name: Arc<str> = "k".into();
    for batch in 0..50u64 {
        let records: Vec<GpuRecord> = (0..1000u64)
            .map(|i| {
                let t = (batch * 1000 + i) * 100;
                let mut r = GpuRecord::new(GpuKind::Kernel, Arc::clone(&name));
                r.start_ns = t;
                r.end_ns = t + 50;
                r.correlation = (batch * 1000 + i) as u32 + 1;
                r
            })
            .collect();
        g.write(&mut e, &mut counts, 1, &records);
        e.buf.clear();
    }
    assert_eq!(g.written, 50_000);
    assert_eq!(g.names.len(), 1);
    assert_eq!(
        g.texts.len(),
        1,
        "one launch text for one launch configuration"
    );
}
