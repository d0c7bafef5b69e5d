#!/usr/bin/env python3
"""Independent decoder of the call-stack samples in a Metron Perfetto trace.

Decodes every TracePacket with the official Perfetto protobuf definitions (the `perfetto`
PyPI package), resolves the interned mappings, function names, source paths, frames and
callstacks per sequence the way trace_processor does (an interned entry is valid from the
packet that defines it on; a reference to an iid not defined before is an error), and prints
JSON:

  samples      every PerfSample: ts, pid, tid, frames (outermost first, as
               "function [module] file:line")
  backtraces   every TrackEvent carrying callstack_iid: ts, track_uuid, name, region
               annotation, frames
  thread_tracks  track uuid -> {pid, tid, name} of the thread track descriptors
  errors       unresolved iids and other inconsistencies (empty when the trace is sound)

Exit status: 0 when there are no errors, 1 otherwise, 2 on usage errors or a missing
`perfetto` package.

Usage: trace_samples.py TRACE
"""

import json
import sys

try:
    from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb
except ImportError as e:  # pragma: no cover - the message is the point
    print("trace_samples.py: the Python package `perfetto` is missing (%s)" % e, file=sys.stderr)
    sys.exit(2)

SEQ_INCREMENTAL_STATE_CLEARED = 1


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    trace = pb.Trace()
    with open(sys.argv[1], "rb") as f:
        trace.ParseFromString(f.read())

    state = {}  # sequence id -> interned tables
    errors = []
    samples = []
    backtraces = []
    thread_tracks = {}

    def tables(seq):
        return state.setdefault(
            seq,
            {k: {} for k in ("fn", "src", "mpath", "map", "frame", "stack", "event")},
        )

    def resolve_stack(t, iid, where):
        stack = t["stack"].get(iid)
        if stack is None:
            errors.append("%s: callstack iid %d not interned" % (where, iid))
            return []
        out = []
        for fid in stack.frame_ids:
            fr = t["frame"].get(fid)
            if fr is None:
                errors.append("%s: frame iid %d not interned" % (where, fid))
                continue
            name = t["fn"].get(fr.function_name_id)
            if name is None:
                errors.append("%s: function name iid %d not interned" % (where, fr.function_name_id))
                name = "?"
            mapping = t["map"].get(fr.mapping_id)
            module = "?"
            if mapping is None:
                errors.append("%s: mapping iid %d not interned" % (where, fr.mapping_id))
            else:
                paths = [t["mpath"].get(p) for p in mapping.path_string_ids]
                if None in paths:
                    errors.append("%s: mapping path not interned" % where)
                module = "/".join(p for p in paths if p)
            loc = ""
            if fr.HasField("source_path_iid"):
                src = t["src"].get(fr.source_path_iid)
                if src is None:
                    errors.append("%s: source path iid %d not interned" % (where, fr.source_path_iid))
                loc = " %s:%d" % (src, fr.line_number)
            out.append("%s [%s]%s" % (name, module, loc))
        return out

    for i, p in enumerate(trace.packet):
        seq = p.trusted_packet_sequence_id
        if p.sequence_flags & SEQ_INCREMENTAL_STATE_CLEARED:
            state.pop(seq, None)
        t = tables(seq)
        if p.HasField("interned_data"):
            d = p.interned_data
            for s in d.function_names:
                t["fn"][s.iid] = s.str.decode("utf-8", "replace")
            for s in d.source_paths:
                t["src"][s.iid] = s.str.decode("utf-8", "replace")
            for s in d.mapping_paths:
                t["mpath"][s.iid] = s.str.decode("utf-8", "replace")
            for m in d.mappings:
                t["map"][m.iid] = m
            for fr in d.frames:
                t["frame"][fr.iid] = fr
            for c in d.callstacks:
                t["stack"][c.iid] = c
            for n in d.event_names:
                t["event"][n.iid] = n.name
        if p.HasField("track_descriptor") and p.track_descriptor.HasField("thread"):
            th = p.track_descriptor.thread
            thread_tracks[p.track_descriptor.uuid] = {
                "pid": th.pid,
                "tid": th.tid,
                "name": th.thread_name,
            }
        where = "packet %d" % i
        if p.HasField("perf_sample"):
            s = p.perf_sample
            samples.append(
                {
                    "ts": p.timestamp,
                    "pid": s.pid,
                    "tid": s.tid,
                    "frames": resolve_stack(t, s.callstack_iid, where),
                }
            )
        if p.HasField("track_event") and p.track_event.HasField("callstack_iid"):
            e = p.track_event
            region = None
            for a in e.debug_annotations:
                if a.name == "region":
                    region = a.string_value
            backtraces.append(
                {
                    "ts": p.timestamp,
                    "track_uuid": e.track_uuid,
                    "name": t["event"].get(e.name_iid, e.name),
                    "region": region,
                    "frames": resolve_stack(t, e.callstack_iid, where),
                }
            )

    print(
        json.dumps(
            {
                "samples": samples,
                "backtraces": backtraces,
                "thread_tracks": {str(k): v for k, v in thread_tracks.items()},
                "errors": errors[:50],
            },
            indent=1,
        )
    )
    sys.exit(1 if errors else 0)


if __name__ == "__main__":
    main()
