//! The trace sink's own tests: the session's start, empty regions, categories.

use super::*;
use crate::{CallsiteKind, ThreadInfo};

fn sink_in(test: &str) -> (PerfettoSink, PathBuf) {
    let dir = std::env::temp_dir().join(format!("metron-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let config = PerfettoConfig {
        file_name: "trace.pftrace".into(),
        buffer_bytes: 1 << 20,
        fill_policy: TraceFillPolicy::Discard,
        categories: Categories::ALL,
        write_interval: None,
        segment_bytes: 64 << 10,
        max_file_bytes: None,
    };
    (PerfettoSink::new(config, dir.clone()), dir)
}

/// The call site of a region named `name`.
fn region_site(name: &'static str) -> &'static Callsite {
    crate::callsite::resolve(crate::callsite::intern(name, CallsiteKind::Region)).expect("interned")
}

/// The test's own thread, as the trace's first thread.
fn main_thread() -> ThreadInfo {
    ThreadInfo {
        tid: std::process::id(),
        name: "main".into(),
        index: 0,
        is_metron: false,
    }
}

/// Ten regions on one thread into `sink`, then its end; the sink's report.
fn ten_regions_and_finish(sink: &mut PerfettoSink, dir: &Path) -> Value {
    let site = region_site("set-up test region");
    let thread = main_thread();
    let start = clock::monotonic_ns();
    let mut events = Vec::new();
    for i in 0..10u64 {
        let ts_ns = start + i * 1_000;
        events.push(Event::Begin { ts_ns, site });
        events.push(Event::End {
            begin_ns: ts_ns,
            ts_ns: ts_ns + 500,
            site,
            values: &[],
            closed_by_metron: false,
        });
    }
    sink.events(&thread, &events);
    let run = RunInfo {
        output_dir: dir.to_path_buf(),
        pid: std::process::id(),
        exe: "test".into(),
        argv: Vec::new(),
        hostname: "test".into(),
        start_realtime_ns: 0,
        start_ns: start,
        end_ns: start + 20_000,
    };
    let files = sink.finish(&run).expect("the trace is written");
    assert_eq!(files, vec![dir.join("trace.pftrace")]);
    sink.metadata().expect("a report")
}

/// The ten regions are in a complete trace with the service's packets (its clock snapshot,
/// config, stats), and the session was started ahead or not as `ahead` says.
fn assert_complete(report: &Value, ahead: bool) {
    assert_eq!(report["session_started_ahead"], ahead, "{report:#}");
    assert_eq!(report["complete"], true, "{report:#}");
    assert_eq!(report["counts"]["slices_begun"], 10, "{report:#}");
    assert_eq!(report["counts"]["slices_ended"], 10, "{report:#}");
    assert_eq!(report["track_events_lost"], 0, "{report:#}");
    assert!(
        report["service_packets"].as_u64().unwrap() > 0,
        "{report:#}"
    );
}

#[test]
fn a_session_started_ahead_on_its_own_thread_is_the_one_the_trace_uses() {
    let (mut sink, dir) = sink_in("session-ahead");
    let set_up = std::thread::spawn(sink.session_set_up(Duration::ZERO));
    let ahead = Arc::clone(sink.ahead.as_ref().unwrap());
    // Waits for a first batch; this one comes after the session is ready.
    ahead.want();
    ahead.wait_until_answered();
    set_up.join().unwrap();
    // Started, but nothing in the run folder until the first batch.
    assert!(!dir.exists());
    let report = ten_regions_and_finish(&mut sink, &dir);
    assert_complete(&report, true);
    assert!(
        report["session"]["ready_ms"].as_f64().is_some(),
        "{report:#}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_session_set_up_that_never_ran_leaves_the_start_to_the_first_batch() {
    let (mut sink, dir) = sink_in("session-never-ran");
    // As when the set-up thread could not be started: the closure is dropped unrun.
    drop(sink.session_set_up(Duration::ZERO));
    assert_complete(&ten_regions_and_finish(&mut sink, &dir), false);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_run_that_ends_before_the_set_up_began_has_no_session_and_leads_with_its_own_clocks() {
    let (mut sink, dir) = sink_in("session-never-began");
    let set_up = std::thread::spawn(sink.session_set_up(Duration::from_secs(3600)));
    let report = ten_regions_and_finish(&mut sink, &dir);
    // The end cancelled the set-up that was still waiting: its thread returns.
    set_up.join().unwrap();
    assert_eq!(report["session_started_ahead"], false, "{report:#}");
    assert_eq!(report["session"]["service"], false, "{report:#}");
    assert!(report["session"]["ready_ms"].is_null(), "{report:#}");
    assert!(
        report["session"]["file_started_ms"].as_f64().is_some(),
        "{report:#}"
    );
    assert_eq!(report["service_packets"], 0, "{report:#}");
    assert_eq!(report["complete"], true, "{report:#}");
    assert_eq!(report["counts"]["slices_ended"], 10, "{report:#}");
    assert_eq!(report["track_events_lost"], 0, "{report:#}");
    // The file's first packet is Metron's clock snapshot: on Metron's sequence (field 10
    // = 8), a `clock_snapshot` (field 6) whose first clock (field 1) has id (field 1) 6,
    // BOOTTIME.
    let bytes = std::fs::read(dir.join("trace.pftrace")).unwrap();
    assert_eq!(bytes[0], 0x0a, "a Trace.packet first");
    let at = (0..32)
        .find(|&i| bytes[i..i + 3] == [0x50, 0x08, 0x32])
        .expect("a clock snapshot on Metron's sequence in the first packet");
    assert_eq!(bytes[at + 4], 0x0a, "a clock");
    assert_eq!(&bytes[at + 6..at + 8], &[0x08, 6], "BOOTTIME first");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn empty_regions_encode_as_their_begin_and_end_events_do() {
    let (a, b, c) = (
        region_site("empty a"),
        region_site("empty b"),
        region_site("empty c"),
    );
    let thread = main_thread();
    let t0 = clock::monotonic_ns();
    // Gaps and lengths of one, two and three varint bytes; `c` new to the sequence midway.
    let mut regions = Vec::new();
    let mut at = t0 + 1_000;
    for (i, (gap, len)) in [
        (5, 40),
        (200, 90),
        (3, 300),
        (20_000, 7),
        (1, 1),
        (0, 70_000),
    ]
    .iter()
    .cycle()
    .take(60)
    .enumerate()
    {
        let site = [a, b, if i > 30 { c } else { a }][i % 3];
        at += gap;
        regions.push(EmptyRegion {
            site,
            begin_ns: at,
            end_ns: at + len,
        });
        at += len;
    }
    let events: Vec<Event<'static>> = regions.iter().flat_map(EmptyRegion::events).collect();
    let more = Present {
        continues: true,
        ..Present::REGIONS_ONLY
    };
    // Both sinks set up the thread with one region first (written out), then take the
    // same regions as events or as a run: the bytes they encode must be the same.
    let encode = |test: &str, as_run: bool| {
        let (mut sink, dir) = sink_in(test);
        sink.events(
            &thread,
            &EmptyRegion {
                site: a,
                begin_ns: t0,
                end_ns: t0 + 10,
            }
            .events(),
        );
        assert!(sink.enc.buf.is_empty(), "the first batch was written out");
        if as_run {
            sink.empty_regions(&thread, &regions);
        } else {
            sink.batch(&thread, &events, more);
        }
        let bytes = sink.enc.buf.clone();
        let counts = (
            sink.enc.packets,
            sink.counts.slices_begun,
            sink.counts.track_events,
        );
        let _ = std::fs::remove_dir_all(&dir);
        (bytes, counts)
    };
    let (as_events, counted) = encode("empty-as-events", false);
    let (as_run, run_counted) = encode("empty-as-run", true);
    assert!(as_events.len() > 60 * 20, "{} bytes", as_events.len());
    assert_eq!(as_run, as_events, "the same packets");
    assert_eq!(run_counted, counted);
}

#[test]
fn categories_parse_lists_and_name_what_is_accepted() {
    assert_eq!(Categories::parse("all").unwrap(), Categories::ALL);
    let c = Categories::parse("regions, marks").unwrap();
    assert!(c.regions && c.marks && !c.counters && !c.process);
    let e = Categories::parse("regions,gpu").unwrap_err();
    assert!(e.contains("\"gpu\"") && e.contains("accepted: all, regions"));
}
