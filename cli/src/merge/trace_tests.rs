//! Unit tests of the trace rewrite (`trace.rs`): clocks, ids, MPI flows, malformed input.

use super::*;

/// A packet with `fields`, framed as `Trace.packet`.
fn framed(body: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    put_field(&mut out, TRACE_PACKET, Value::Len(body));
    out
}

fn msg(build: impl FnOnce(&mut Vec<u8>)) -> Vec<u8> {
    let mut m = Vec::new();
    build(&mut m);
    m
}

/// A small rank trace: the service's clock snapshot (BOOTTIME = MONOTONIC + 1000) and
/// trace config, a process descriptor, a first packet declaring MONOTONIC by default, a
/// slice begin with a flow id and a packet on the default (BOOTTIME) clock.
fn rank_trace() -> Vec<u8> {
    let clock = |id: u64, ts: u64| {
        msg(|c| {
            put_field(c, snapshot::CLOCK_ID, Value::Varint(id));
            put_field(c, snapshot::TIMESTAMP, Value::Varint(ts));
        })
    };
    let snap = msg(|s| {
        put_field(
            s,
            snapshot::CLOCKS,
            Value::Len(&clock(CLOCK_BOOTTIME, 6_000)),
        );
        put_field(
            s,
            snapshot::CLOCKS,
            Value::Len(&clock(CLOCK_MONOTONIC, 5_000)),
        );
    });
    let mut trace = Vec::new();
    trace.extend(framed(&msg(|p| {
        put_field(p, packet::SEQUENCE_ID, Value::Varint(1));
        put_field(p, packet::CLOCK_SNAPSHOT, Value::Len(&snap));
    })));
    trace.extend(framed(&msg(|p| {
        put_field(p, packet::SEQUENCE_ID, Value::Varint(1));
        put_field(p, packet::TRACE_CONFIG, Value::Len(b""));
    })));
    let process = msg(|d| {
        put_field(d, track::PID, Value::Varint(4242));
        put_field(d, track::PROCESS_NAME, Value::Len(b"app"));
    });
    let descriptor = msg(|t| {
        put_field(t, track::UUID, Value::Varint(1));
        put_field(t, track::PROCESS, Value::Len(&process));
    });
    let defaults_body = msg(|d| put_field(d, defaults::CLOCK_ID, Value::Varint(CLOCK_MONOTONIC)));
    trace.extend(framed(&msg(|p| {
        put_field(p, packet::SEQUENCE_ID, Value::Varint(100));
        put_field(p, packet::SEQUENCE_FLAGS, Value::Varint(1));
        put_field(p, packet::DEFAULTS, Value::Len(&defaults_body));
        put_field(p, packet::TIMESTAMP, Value::Varint(10_000));
        put_field(p, packet::TRACK_DESCRIPTOR, Value::Len(&descriptor));
    })));
    let event_body = msg(|e| {
        put_field(e, kind::TYPE, Value::Varint(kind::SLICE_BEGIN));
        put_field(e, event::TRACK_UUID, Value::Varint(1));
        put_field(e, event::FLOW_IDS, Value::Fixed64(77));
    });
    trace.extend(framed(&msg(|p| {
        put_field(p, packet::SEQUENCE_ID, Value::Varint(100));
        put_field(p, packet::TIMESTAMP, Value::Varint(20_000));
        put_field(p, packet::TRACK_EVENT, Value::Len(&event_body));
    })));
    trace.extend(framed(&msg(|p| {
        put_field(p, packet::SEQUENCE_ID, Value::Varint(1));
        put_field(p, packet::TIMESTAMP, Value::Varint(31_000));
    })));
    trace
}

fn map(keep_clocks: bool) -> RankMap {
    RankMap {
        rank: 3,
        offset_ns: 1_000_000,
        process_name: "rank 3 (h, 4242)".into(),
        pid_base: 0,
        world_rank: 3,
        mpi: false,
        keep_clocks,
    }
}

/// Every packet of `trace` as its top-level fields.
fn packets(trace: &[u8]) -> Vec<Vec<(u32, Value<'_>)>> {
    fields(trace)
        .map(|f| match f.unwrap() {
            (TRACE_PACKET, Value::Len(p)) => fields(p).map(Result::unwrap).collect(),
            other => panic!("not a packet: {other:?}"),
        })
        .collect()
}

fn get<'a>(p: &[(u32, Value<'a>)], n: u32) -> Option<Value<'a>> {
    p.iter().find(|(f, _)| *f == n).map(|(_, v)| *v)
}

#[test]
fn a_rank_trace_moves_onto_the_realtime_clock_with_its_own_ids() {
    let m = map(false);
    let mut w = Rewriter::new(&m);
    let mut out = Vec::new();
    let mut next_seq = 1;
    w.copy(&mut &rank_trace()[..], &mut out, &mut next_seq)
        .unwrap();
    let ps = packets(&out);
    // The clock snapshot and the trace config are left out.
    assert_eq!(ps.len(), 3);
    assert_eq!(w.counts.service_packets_left_out, 2);
    // Sequences get new ids in the order their first kept packets come: Metron's (100)
    // became 2, the service's (1) 3.
    assert_eq!(get(&ps[0], packet::SEQUENCE_ID), Some(Value::Varint(2)));
    assert_eq!(get(&ps[2], packet::SEQUENCE_ID), Some(Value::Varint(3)));
    // MONOTONIC + offset, the defaults now say REALTIME.
    assert_eq!(
        get(&ps[0], packet::TIMESTAMP),
        Some(Value::Varint(1_010_000))
    );
    let Some(Value::Len(d)) = get(&ps[0], packet::DEFAULTS) else {
        panic!()
    };
    let d: Vec<_> = fields(d).map(Result::unwrap).collect();
    assert_eq!(
        get(&d, defaults::CLOCK_ID),
        Some(Value::Varint(CLOCK_REALTIME))
    );
    assert_eq!(
        get(&ps[1], packet::TIMESTAMP),
        Some(Value::Varint(1_020_000))
    );
    // A BOOTTIME timestamp goes through the rank's snapshot (BOOTTIME - 1000) and says
    // it is REALTIME now.
    assert_eq!(
        get(&ps[2], packet::TIMESTAMP),
        Some(Value::Varint(1_030_000))
    );
    assert_eq!(
        get(&ps[2], packet::CLOCK_ID),
        Some(Value::Varint(CLOCK_REALTIME))
    );
    // The process track and the event agree on the new uuid; the process is renamed.
    let new_uuid = 1 | 4 << 40;
    let Some(Value::Len(t)) = get(&ps[0], packet::TRACK_DESCRIPTOR) else {
        panic!()
    };
    let t: Vec<_> = fields(t).map(Result::unwrap).collect();
    assert_eq!(get(&t, track::UUID), Some(Value::Varint(new_uuid)));
    let Some(Value::Len(p)) = get(&t, track::PROCESS) else {
        panic!()
    };
    let p: Vec<_> = fields(p).map(Result::unwrap).collect();
    assert_eq!(get(&p, track::PID), Some(Value::Varint(4242)));
    assert_eq!(
        get(&p, track::PROCESS_NAME),
        Some(Value::Len(b"rank 3 (h, 4242)"))
    );
    let Some(Value::Len(e)) = get(&ps[1], packet::TRACK_EVENT) else {
        panic!()
    };
    let e: Vec<_> = fields(e).map(Result::unwrap).collect();
    assert_eq!(get(&e, event::TRACK_UUID), Some(Value::Varint(new_uuid)));
    let Some(Value::Fixed64(flow)) = get(&e, event::FLOW_IDS) else {
        panic!()
    };
    assert_ne!(flow, 77, "flow ids are made the rank's own");
    assert_eq!(w.counts.first_ts, Some(1_010_000));
    assert_eq!(w.counts.last_ts, Some(1_030_000));
}

#[test]
fn the_archive_copy_keeps_its_clocks() {
    let m = map(true);
    let mut w = Rewriter::new(&m);
    let mut out = Vec::new();
    w.copy(&mut &rank_trace()[..], &mut out, &mut 0).unwrap();
    let ps = packets(&out);
    assert_eq!(ps.len(), 5, "the service's packets stay");
    assert!(get(&ps[0], packet::CLOCK_SNAPSHOT).is_some());
    assert_eq!(get(&ps[2], packet::TIMESTAMP), Some(Value::Varint(10_000)));
    let Some(Value::Len(d)) = get(&ps[2], packet::DEFAULTS) else {
        panic!()
    };
    let d: Vec<_> = fields(d).map(Result::unwrap).collect();
    assert_eq!(
        get(&d, defaults::CLOCK_ID),
        Some(Value::Varint(CLOCK_MONOTONIC))
    );
    assert_eq!(get(&ps[4], packet::TIMESTAMP), Some(Value::Varint(31_000)));
    assert_eq!(get(&ps[4], packet::CLOCK_ID), None);
    let Some(Value::Len(e)) = get(&ps[3], packet::TRACK_EVENT) else {
        panic!()
    };
    let e: Vec<_> = fields(e).map(Result::unwrap).collect();
    assert_eq!(get(&e, event::TRACK_UUID), Some(Value::Varint(1 | 4 << 40)));
}

#[test]
fn a_cut_last_packet_is_counted_not_fatal() {
    let m = map(false);
    let mut w = Rewriter::new(&m);
    let mut trace = rank_trace();
    trace.truncate(trace.len() - 3);
    let mut out = Vec::new();
    w.copy(&mut &trace[..], &mut out, &mut 1).unwrap();
    assert_eq!(w.counts.packets_out, 2);
    assert!(w.counts.truncated_tail_bytes > 0);
}

#[test]
fn both_ends_of_a_message_compute_one_flow_id() {
    assert_eq!(message_flow(1, 2, 7, 3), message_flow(1, 2, 7, 3));
    assert_ne!(message_flow(1, 2, 7, 3), message_flow(2, 1, 7, 3));
    assert_ne!(message_flow(1, 2, 7, 3), message_flow(1, 2, 7, 4));
}
