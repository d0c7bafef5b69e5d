#!/usr/bin/env python3
"""Independent validator of a Metron Perfetto trace (trace.pftrace).

Decodes every TracePacket with the official Perfetto protobuf definitions shipped by the
`perfetto` PyPI package (perfetto.protos.perfetto.trace.perfetto_trace_pb2), not with
Metron's encoder, resolves interning and packet defaults per sequence the way
trace_processor does (the default clock and track of a sequence, and a sequence-scoped
incremental clock declared in a clock snapshot on the sequence, whose packets carry the
nanoseconds since the sequence's previous packet), and prints a JSON description of the trace:

  tracks      every track descriptor (process, thread, counter), with pid/tid and names
  threads     per thread track: name, Metron's own or not, slice count, max depth, the
              nesting as paths ("outer/inner": count), names, instants, dropped records
  counters    per counter track: count, min, max, last and the first values (every
              value with its time with --counter-samples)
  run_end     the arguments of the "metron: run end" instant (the run's counts)
  sequence_packets
              packets per trusted_packet_sequence_id (Metron's own sequence and the service's)
  trace_stats Perfetto's own buffer statistics (loss counters)
  flows       flow ids: outgoing (TrackEvent.flow_ids), terminating, and how many pair up
  checks      every structural check with ok/detail; `ok` is their conjunction

Exit status: 0 when every check passes, 1 when one fails, 2 on usage errors or a missing
`perfetto` package (install it with `pip install perfetto protobuf`, as
scripts/install-deps.sh does).

Usage: validate_trace.py TRACE [--window-start-ns N] [--window-end-ns N] [--allow-open]
                               [--allow-truncated] [--allow-loss] [--slices] [--counter-samples] [--max-values N]
                               [--clock monotonic|realtime] [--processes N]

A trace of `metron merge` is checked with --clock realtime --processes <ranks>.
"""

import argparse
import json
import os
import sys

try:
    from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb
except ImportError as e:  # pragma: no cover - the message is the point
    print(
        "validate_trace.py: the Python package `perfetto` is missing (%s); "
        "install it with `pip install perfetto protobuf` (scripts/install-deps.sh does)" % e,
        file=sys.stderr,
    )
    sys.exit(2)

TYPE_SLICE_BEGIN = 1
TYPE_SLICE_END = 2
TYPE_INSTANT = 3
TYPE_COUNTER = 4
SEQ_INCREMENTAL_STATE_CLEARED = 1
CLOCK_MONOTONIC = 3
CLOCK_IDS = {"monotonic": 3, "realtime": 1}
DROPPED_NAME = "metron: dropped records"
RUN_END_NAME = "metron: run end"


def read_varint(buf, pos):
    value = 0
    shift = 0
    while True:
        if pos >= len(buf):
            return None, pos
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, pos
        shift += 7


def iter_packets(data, tail):
    """Yields the bytes of each `Trace.packet` (field 1) without copying the file; sets
    tail[0] to the number of trailing bytes that do not form a whole packet. Raises
    ValueError on a top-level field that is not a packet."""
    view = memoryview(data)
    pos = 0
    while pos < len(data):
        start = pos
        tag, pos = read_varint(data, pos)
        if tag is None:
            tail[0] = len(data) - start
            return
        if tag != (1 << 3 | 2):
            raise ValueError("unexpected top-level field tag %d at byte %d" % (tag, start))
        length, pos = read_varint(data, pos)
        if length is None or pos + length > len(data):
            tail[0] = len(data) - start
            return
        yield view[pos : pos + length]
        pos += length


def annotation_value(a, seq=None):
    which = a.WhichOneof("value")
    if which is None:
        return None
    if which == "string_value_iid" and seq is not None:
        return seq.string_values.get(a.string_value_iid, "#%d" % a.string_value_iid)
    return getattr(a, which)


class Sequence:
    def __init__(self):
        self.event_names = {}
        self.annotation_names = {}
        self.string_values = {}
        self.clock_id = None
        self.track_uuid = None
        # Sequence-scoped clocks (ids 64-127) declared by a clock snapshot on the sequence:
        # id -> [is_incremental, latest value, builtin clock id, offset to the builtin clock].
        self.clocks = {}


class Checks:
    def __init__(self):
        self.items = []

    def add(self, name, ok, detail=""):
        self.items.append({"name": name, "ok": bool(ok), "detail": detail})

    @property
    def ok(self):
        return all(c["ok"] for c in self.items)


def validate(path, args):
    checks = Checks()
    with open(path, "rb") as f:
        data = f.read()
    tail = [0]
    framing_error = None

    sequences = {}
    sequence_packets = {}
    tracks = {}  # uuid -> dict
    problems = {
        "unknown_event_name": 0,
        "unknown_annotation_name": 0,
        "no_timestamp": 0,
        "wrong_clock": 0,
        "not_monotonic": 0,
        "outside_window": 0,
        "unparsable_packet": 0,
        "packets_after_a_drop": 0,
    }
    examples = {}
    trace_stats = None
    # The service writes its trace config first; a trace without it had no session (a short
    # run ends before Metron starts one), hence no service buffer and no service statistics.
    service_wrote = False
    clock_snapshots = 0

    def problem(kind, example):
        problems[kind] += 1
        examples.setdefault(kind, example)

    states = {}  # track uuid -> streaming state
    slices_out = []
    instants_out = []
    run_end = None
    unmatched = [0]
    event_count = [0]

    flows_out = {}
    flows_in = {}

    def on_event(uuid, ts, typ, name, ann, value, out_ids=(), in_ids=()):
        nonlocal run_end
        event_count[0] += 1
        st = states.get(uuid)
        if st is None:
            st = states[uuid] = {
                "last_ts": None,
                "stack": [],
                "count": 0,
                "min": None,
                "max": None,
                "last": None,
                "values": [],
                "info": {
                    "uuid": uuid,
                    "slices": 0,
                    "max_depth": 0,
                    "paths": {},
                    "names": {},
                    "instants": {},
                    "dropped_records": 0,
                    "dropped_instants": 0,
                    "closed_by_metron": 0,
                    "first_ts": ts,
                    "last_ts": ts,
                },
            }
        if st["last_ts"] is not None and ts < st["last_ts"]:
            problem("not_monotonic", "track %d: %d after %d" % (uuid, ts, st["last_ts"]))
        st["last_ts"] = ts
        info = st["info"]
        info["last_ts"] = ts
        if typ == TYPE_COUNTER:
            st["count"] += 1
            st["min"] = value if st["min"] is None else min(st["min"], value)
            st["max"] = value if st["max"] is None else max(st["max"], value)
            st["last"] = value
            if len(st["values"]) < args.max_values:
                st["values"].append(value)
            if args.counter_samples:
                st.setdefault("samples", []).append([ts, value])
        elif typ == TYPE_SLICE_BEGIN:
            stack = st["stack"]
            stack.append((name, ts, ann, list(out_ids), list(in_ids)))
            if len(stack) - 1 > info["max_depth"]:
                info["max_depth"] = len(stack) - 1
        elif typ == TYPE_SLICE_END:
            stack = st["stack"]
            if not stack:
                unmatched[0] += 1
                return
            path = "/".join([s[0] or "?" for s in stack])
            bname, bts, bann, bout, bin_ = stack.pop()
            paths = info["paths"]
            paths[path] = paths.get(path, 0) + 1
            names = info["names"]
            names[bname] = names.get(bname, 0) + 1
            info["slices"] += 1
            if ann.get("closed_by_metron"):
                info["closed_by_metron"] += 1
            if args.slices:
                merged = dict(bann)
                merged.update(ann)
                record = {"track": uuid, "name": bname, "depth": len(stack), "ts": bts, "dur": ts - bts, "args": merged}
                if bout or out_ids:
                    record["flows_out"] = bout + list(out_ids)
                if bin_ or in_ids:
                    record["flows_in"] = bin_ + list(in_ids)
                slices_out.append(record)
        elif typ == TYPE_INSTANT:
            instants = info["instants"]
            instants[name] = instants.get(name, 0) + 1
            if name == DROPPED_NAME:
                info["dropped_instants"] += 1
                info["dropped_records"] += int(ann.get("count") or 0)
            if name == RUN_END_NAME:
                run_end = {"ts": ts, "args": ann}
            elif len(instants_out) < args.max_values:
                instants_out.append({"track": uuid, "name": name, "ts": ts, "args": ann})

    packet_count = 0

    def packets():
        nonlocal framing_error
        try:
            yield from iter_packets(data, tail)
        except ValueError as e:
            framing_error = str(e)

    for order, raw in enumerate(packets()):
        packet_count += 1
        packet = pb.TracePacket()
        try:
            packet.ParseFromString(raw)
        except Exception as e:  # noqa: BLE001 - any decode error is a finding
            problem("unparsable_packet", str(e))
            continue
        seq_id = packet.trusted_packet_sequence_id
        sequence_packets[seq_id] = sequence_packets.get(seq_id, 0) + 1
        seq = sequences.get(seq_id)
        if seq is None or packet.sequence_flags & SEQ_INCREMENTAL_STATE_CLEARED:
            seq = Sequence()
            sequences[seq_id] = seq
        if packet.previous_packet_dropped and not packet.first_packet_on_sequence:
            problem("packets_after_a_drop", "packet %d on sequence %d" % (order, seq_id))
        if packet.HasField("trace_packet_defaults"):
            d = packet.trace_packet_defaults
            if d.HasField("timestamp_clock_id"):
                seq.clock_id = d.timestamp_clock_id
            if d.HasField("track_event_defaults") and d.track_event_defaults.HasField("track_uuid"):
                seq.track_uuid = d.track_event_defaults.track_uuid
        if packet.HasField("interned_data"):
            for n in packet.interned_data.event_names:
                seq.event_names[n.iid] = n.name
            for n in packet.interned_data.debug_annotation_names:
                seq.annotation_names[n.iid] = n.name
            for n in packet.interned_data.debug_annotation_string_values:
                seq.string_values[n.iid] = n.str.decode("utf-8", "replace")
        if packet.HasField("trace_stats"):
            trace_stats = packet.trace_stats
        if packet.HasField("trace_config"):
            service_wrote = True
        if packet.HasField("clock_snapshot"):
            clock_snapshots += 1
            clocks = packet.clock_snapshot.clocks
            builtin = [c for c in clocks if c.clock_id < 64]
            for c in clocks:
                if 64 <= c.clock_id < 128 and builtin:
                    base = builtin[0]
                    unit = c.unit_multiplier_ns or 1
                    seq.clocks[c.clock_id] = [
                        c.is_incremental,
                        c.timestamp * unit,
                        base.clock_id,
                        base.timestamp - c.timestamp * unit,
                    ]
        if packet.HasField("track_descriptor"):
            t = packet.track_descriptor
            entry = tracks.setdefault(t.uuid, {"uuid": t.uuid})
            if t.HasField("parent_uuid"):
                entry["parent"] = t.parent_uuid
            if t.HasField("name"):
                entry["name"] = t.name
            if t.HasField("description"):
                entry["description"] = t.description
            if t.HasField("process"):
                entry["type"] = "process"
                entry["pid"] = t.process.pid
                entry["name"] = t.process.process_name
                entry["cmdline"] = list(t.process.cmdline)
            elif t.HasField("thread"):
                entry["type"] = "thread"
                entry["pid"] = t.thread.pid
                entry["tid"] = t.thread.tid
                entry["name"] = t.thread.thread_name
                entry["is_metron"] = t.description == "Metron's own thread"
            elif t.HasField("counter"):
                entry["type"] = "counter"
                entry["unit"] = pb.CounterDescriptor.Unit.Name(t.counter.unit)
        if not packet.HasField("track_event"):
            continue
        e = packet.track_event
        if not packet.HasField("timestamp"):
            problem("no_timestamp", "packet %d" % order)
            continue
        ts = packet.timestamp
        clock = packet.timestamp_clock_id if packet.HasField("timestamp_clock_id") else seq.clock_id
        if clock is not None and 64 <= clock < 128:
            scoped = seq.clocks.get(clock)
            if scoped is None:
                problem("wrong_clock", "packet %d uses clock %d, not declared on its sequence" % (order, clock))
                continue
            if scoped[0]:
                scoped[1] += ts
                ts = scoped[1]
            clock, ts = scoped[2], ts + scoped[3]
        if clock != CLOCK_IDS[args.clock]:
            problem("wrong_clock", "packet %d has clock %s" % (order, clock))
        if args.window_start_ns is not None and ts < args.window_start_ns:
            problem("outside_window", "packet %d at %d < %d" % (order, ts, args.window_start_ns))
        if args.window_end_ns is not None and ts > args.window_end_ns:
            problem("outside_window", "packet %d at %d > %d" % (order, ts, args.window_end_ns))
        name = None
        if e.HasField("name_iid"):
            name = seq.event_names.get(e.name_iid)
            if name is None:
                problem("unknown_event_name", "iid %d in packet %d" % (e.name_iid, order))
        elif e.HasField("name"):
            name = e.name
        ann = {}
        for a in e.debug_annotations:
            if a.HasField("name_iid"):
                key = seq.annotation_names.get(a.name_iid)
                if key is None:
                    problem("unknown_annotation_name", "iid %d in packet %d" % (a.name_iid, order))
                    key = "#%d" % a.name_iid
            else:
                key = a.name
            ann[key] = annotation_value(a, seq)
        value = None
        if e.type == TYPE_COUNTER:
            value = e.double_counter_value if e.HasField("double_counter_value") else e.counter_value
        out_ids = list(e.flow_ids) + list(e.flow_ids_old)
        in_ids = list(e.terminating_flow_ids) + list(e.terminating_flow_ids_old)
        for f in out_ids:
            flows_out[f] = flows_out.get(f, 0) + 1
        for f in in_ids:
            flows_in[f] = flows_in.get(f, 0) + 1
        uuid = e.track_uuid if e.HasField("track_uuid") else seq.track_uuid
        on_event(uuid, ts, e.type, name, ann, value, out_ids, in_ids)

    checks.add("framing", framing_error is None, framing_error or "%d packets" % packet_count)
    if tail[0]:
        checks.add(
            "complete_last_packet",
            args.allow_truncated,
            "%d trailing bytes do not form a whole packet%s"
            % (tail[0], " (allowed: --allow-truncated)" if args.allow_truncated else ""),
        )
    for kind, count in problems.items():
        checks.add(kind, count == 0, "%d (first: %s)" % (count, examples.get(kind, "-")) if count else "")
    undescribed = sorted(u for u in states if u not in tracks)
    checks.add("tracks_described", not undescribed, "undescribed: %s" % undescribed[:10] if undescribed else "")

    threads = {}
    counters = {}
    open_total = 0
    for uuid, st in states.items():
        track = tracks.get(uuid, {"uuid": uuid})
        if track.get("type") == "counter":
            values = st["values"]
            parent = tracks.get(track.get("parent"), {})
            counters[uuid] = {
                "uuid": uuid,
                "name": track.get("name"),
                "parent": track.get("parent"),
                "parent_tid": parent.get("tid"),
                "unit": track.get("unit"),
                "count": st["count"],
                "min": st["min"],
                "max": st["max"],
                "last": st["last"],
                "values": values,
            }
            if args.counter_samples:
                counters[uuid]["samples"] = st.get("samples", [])
            continue
        info = st["info"]
        info.update(
            {
                "type": track.get("type"),
                "tid": track.get("tid"),
                "pid": track.get("pid"),
                "name": track.get("name"),
                "is_metron": track.get("is_metron", False),
                "open_slices": len(st["stack"]),
            }
        )
        open_total += len(st["stack"])
        threads[uuid] = info

    checks.add("slice_ends_match", unmatched[0] == 0, "%d ends without a begin" % unmatched[0] if unmatched[0] else "")
    checks.add(
        "every_slice_closed",
        open_total == 0 or args.allow_open,
        "%d slices never closed%s" % (open_total, " (allowed: --allow-open)" if args.allow_open else "")
        if open_total
        else "",
    )
    thread_tracks = [t for t in tracks.values() if t.get("type") == "thread"]
    unnamed = [t["uuid"] for t in thread_tracks if not t.get("name")]
    checks.add("thread_names", not unnamed, "unnamed thread tracks: %s" % unnamed if unnamed else "")
    process_tracks = [t for t in tracks.values() if t.get("type") == "process"]
    checks.add(
        "process_track",
        len(process_tracks) == args.processes,
        "%d process tracks, expected %d" % (len(process_tracks), args.processes),
    )
    process_pids = set(t.get("pid") for t in process_tracks)
    wrong_pid = [t["uuid"] for t in thread_tracks if process_tracks and t.get("pid") not in process_pids]
    checks.add("thread_pids", not wrong_pid, "threads with another pid: %s" % wrong_pid if wrong_pid else "")

    loss = {}
    if trace_stats is not None:
        for b in trace_stats.buffer_stats:
            for field in (
                "chunks_overwritten",
                "chunks_discarded",
                "trace_writer_packet_loss",
                "abi_violations",
                "patches_failed",
            ):
                loss[field] = loss.get(field, 0) + getattr(b, field)
        loss["service_chunks_discarded"] = trace_stats.chunks_discarded
        loss["flushes_failed"] = trace_stats.flushes_failed
    lost = {k: v for k, v in loss.items() if v}
    checks.add(
        "trace_stats_present",
        trace_stats is not None or args.allow_truncated or not service_wrote,
        "",
    )
    checks.add(
        "perfetto_no_loss",
        not lost or args.allow_loss,
        json.dumps(lost) + (" (allowed: --allow-loss)" if args.allow_loss else "") if lost else "",
    )

    result = {
        "file": os.path.abspath(path),
        "bytes": len(data),
        "packets": packet_count,
        "sequences": len(sequences),
        "sequence_packets": {str(k): v for k, v in sorted(sequence_packets.items())},
        "clock_snapshots": clock_snapshots,
        "track_events": event_count[0],
        "tracks": sorted(tracks.values(), key=lambda t: t["uuid"]),
        "threads": [threads[k] for k in sorted(threads)],
        "counters": [counters[k] for k in sorted(counters)],
        "instants": instants_out,
        "run_end": run_end,
        "trace_stats": loss,
        "flows": {
            "outgoing": sum(flows_out.values()),
            "terminating": sum(flows_in.values()),
            "matched": len(set(flows_out) & set(flows_in)),
        },
        "checks": checks.items,
        "ok": checks.ok,
    }
    if args.slices:
        result["slices"] = slices_out
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("trace")
    parser.add_argument("--window-start-ns", type=int, help="CLOCK_MONOTONIC ns before the run began")
    parser.add_argument("--window-end-ns", type=int, help="CLOCK_MONOTONIC ns after the run ended")
    parser.add_argument("--allow-open", action="store_true", help="slices left open are not an error (killed runs)")
    parser.add_argument("--allow-truncated", action="store_true", help="a cut last packet is not an error (killed runs)")
    parser.add_argument("--allow-loss", action="store_true", help="Perfetto's loss counters are not an error")
    parser.add_argument("--slices", action="store_true", help="list every slice (large)")
    parser.add_argument("--counter-samples", action="store_true", help="list every counter value with its time (large)")
    parser.add_argument("--max-values", type=int, default=1000, help="values/instants listed per counter (default 1000)")
    parser.add_argument(
        "--clock", choices=sorted(CLOCK_IDS), default="monotonic", help="the clock of every event (metron merge: realtime)"
    )
    parser.add_argument("--processes", type=int, default=1, help="process tracks expected (metron merge: one per rank)")
    args = parser.parse_args()
    if not os.path.exists(args.trace):
        print("validate_trace.py: %s does not exist" % args.trace, file=sys.stderr)
        sys.exit(2)
    result = validate(args.trace, args)
    json.dump(result, sys.stdout, indent=1, sort_keys=False)
    sys.stdout.write("\n")
    failed = [c for c in result["checks"] if not c["ok"]]
    for c in failed:
        print("validate_trace.py: FAILED %s: %s" % (c["name"], c["detail"]), file=sys.stderr)
    sys.exit(0 if not failed else 1)


if __name__ == "__main__":
    main()
