//! Metron's set-up slices (`metron set-up`, recorded by the GPU backend around first-launch
//! work that cannot move off the program's timeline) are taken out of the wall time of every
//! region that contains them, exactly, and said in the summary: synthetic events with chosen
//! timestamps through the summary sink, read back from `summary.json` and `summary.txt`.

use metron::sinks::summary::{SummarySink, SETUP_REGION};
use metron::{Callsite, CallsiteKind, EmptyRegion, Event, Present, RunInfo, Sink, ThreadInfo};
use serde_json::Value;

static STEP: Callsite = Callsite::new(
    "step",
    file!(),
    line!(),
    module_path!(),
    CallsiteKind::Region,
    &[],
);
static LAUNCH: Callsite = Callsite::new(
    "launch",
    file!(),
    line!(),
    module_path!(),
    CallsiteKind::Region,
    &[],
);
static SETUP: Callsite = Callsite::new(
    SETUP_REGION,
    file!(),
    line!(),
    module_path!(),
    CallsiteKind::Region,
    &[],
);

fn begin(ts_ns: u64, site: &'static Callsite) -> Event<'static> {
    Event::Begin { ts_ns, site }
}

fn end(begin_ns: u64, ts_ns: u64, site: &'static Callsite) -> Event<'static> {
    Event::plain_end(begin_ns, ts_ns, site)
}

/// The node named `name` among `nodes` (a `children` or `regions` array).
fn node<'a>(nodes: &'a Value, name: &str) -> &'a Value {
    nodes
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["name"] == name)
        .unwrap_or_else(|| panic!("no region {name} in {nodes}"))
}

/// The two steps of the test below, as events.
fn two_steps(t0: u64) -> [Event<'static>; 10] {
    [
        begin(t0, &STEP),
        begin(t0 + 100_000, &LAUNCH),
        begin(t0 + 105_000, &SETUP),
        end(t0 + 105_000, t0 + 600_105_000, &SETUP),
        end(t0 + 100_000, t0 + 600_120_000, &LAUNCH),
        end(t0, t0 + 601_200_000, &STEP),
        begin(t0 + 700_000_000, &STEP),
        begin(t0 + 700_100_000, &LAUNCH),
        end(t0 + 700_100_000, t0 + 700_120_000, &LAUNCH),
        end(t0 + 700_000_000, t0 + 701_200_000, &STEP),
    ]
}

/// `summary.json` and `summary.txt` of a summary sink fed by `feed` on one thread.
fn summary_of(
    test: &str,
    t0: u64,
    feed: impl FnOnce(&mut SummarySink, &ThreadInfo),
) -> (Value, String) {
    let dir =
        std::env::temp_dir().join(format!("metron-setup-slices-{test}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut sink = SummarySink::new();
    let thread = ThreadInfo {
        tid: 7,
        name: "main".into(),
        index: 0,
        is_metron: false,
    };
    feed(&mut sink, &thread);
    let run = RunInfo {
        output_dir: dir.clone(),
        pid: 7,
        exe: "setup_slices".into(),
        argv: vec![],
        hostname: "test".into(),
        start_realtime_ns: 0,
        start_ns: t0,
        end_ns: t0 + 800_000_000,
    };
    sink.finish(&run).unwrap();
    let json: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap();
    let text = std::fs::read_to_string(dir.join("summary.txt")).unwrap();
    std::fs::remove_dir_all(&dir).ok();
    (json, text)
}

#[test]
fn regions_containing_a_set_up_slice_lose_exactly_its_time() {
    // Two iterations of `step > launch`; the first launch carries a 600 ms set-up slice
    // (CUPTI's first PC-sampled launch), the second none. Each step is 1.2 ms of real work,
    // each launch 0.02 ms.
    let t0 = 1_000_000_000u64;
    let (json, text) = summary_of("events", t0, |sink, thread| {
        sink.events(thread, &two_steps(t0))
    });
    let step = node(&json["merged"], "step");
    let wall = &step["metrics"]["wall_clock.elapsed"];
    // Both steps read their real work: 1.2 ms each, the first one's 600 ms of set-up out.
    assert_eq!(wall["count"], 2, "{step}");
    assert_eq!(wall["total"].as_f64().unwrap(), 2_400_000.0, "{wall}");
    assert_eq!(wall["min"].as_f64(), wall["max"].as_f64(), "{wall}");
    assert_eq!(wall["setup_excluded"], 600_000_000u64, "{wall}");
    let launch = node(&step["children"], "launch");
    let lw = &launch["metrics"]["wall_clock.elapsed"];
    assert_eq!(lw["total"].as_f64().unwrap(), 40_000.0, "{lw}");
    assert_eq!(lw["setup_excluded"], 600_000_000u64, "{lw}");
    // The slice itself is kept, whole, under the region it interrupted; the launch's self
    // time does not lose it twice.
    let setup = node(&launch["children"], SETUP_REGION);
    assert_eq!(
        setup["metrics"]["wall_clock.elapsed"]["total"]
            .as_f64()
            .unwrap(),
        600_000_000.0
    );
    assert_eq!(lw["self"].as_f64().unwrap(), 40_000.0, "{lw}");
    assert_eq!(json["setup"]["slices"], 1);
    assert_eq!(json["setup"]["ns"], 600_000_000u64);
    assert!(
        text.contains("metron set-up: 1 slice(s), 600.000 ms"),
        "summary.txt does not name the set-up:\n{text}"
    );
}

#[test]
fn empty_regions_handed_over_as_runs_make_the_same_summary() {
    // The flusher hands regions with nothing inside as runs (`Sink::empty_regions`) between
    // batches of the other events: the set-up slice (inside the first launch) and the second
    // launch are such regions. The summary must not tell the difference.
    let t0 = 1_000_000_000u64;
    let steps = two_steps(t0);
    let (as_events, text_events) =
        summary_of("as-events", t0, |sink, thread| sink.events(thread, &steps));
    let (as_runs, text_runs) = summary_of("as-runs", t0, |sink, thread| {
        let more = Present {
            continues: true,
            ..Present::REGIONS_ONLY
        };
        sink.batch(thread, &steps[..2], more);
        sink.empty_regions(
            thread,
            &[EmptyRegion {
                site: &SETUP,
                begin_ns: t0 + 105_000,
                end_ns: t0 + 600_105_000,
            }],
        );
        sink.batch(thread, &steps[4..7], more);
        sink.empty_regions(
            thread,
            &[EmptyRegion {
                site: &LAUNCH,
                begin_ns: t0 + 700_100_000,
                end_ns: t0 + 700_120_000,
            }],
        );
        sink.batch(thread, &steps[9..], Present::REGIONS_ONLY);
    });
    assert_eq!(as_runs, as_events);
    assert_eq!(text_runs, text_events);
    assert_eq!(
        as_runs["setup"]["slices"], 1,
        "the set-up slice was seen as one"
    );
}
