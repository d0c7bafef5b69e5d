//! The hot path makes no heap allocation: after the first region on a thread, 10^5 rounds of
//! every kind of record (scope, `#[profile]`, `begin!`/`end()`, counter, mark, integer
//! annotation, bundle scope) allocate nothing on that thread, nor do the hand-overs of full
//! segments to the flusher. A counting global allocator
//! counts the allocations of the measuring thread only.

use metron::components::{ThreadCpuClock, WallClock};
use metron_tests::{emit_data, find, scenario, Scenario};
use serde_json::json;
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};

/// Counts allocations (alloc, alloc_zeroed, realloc) made by threads that set `COUNTING`.
struct CountingAllocator;

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

thread_local! {
    // `const` and no destructor: reading it never allocates.
    static COUNTING: Cell<bool> = const { Cell::new(false) };
}

fn count() {
    if COUNTING.try_with(Cell::get).unwrap_or(false) {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
    }
}

// SAFETY: every method forwards to the system allocator with the caller's arguments.
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count();
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count();
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count();
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: CountingAllocator = CountingAllocator;

/// Allocations made by the calling thread while running `f`.
fn allocations_during(f: impl FnOnce()) -> u64 {
    let before = ALLOCATIONS.load(Ordering::Relaxed);
    COUNTING.with(|c| c.set(true));
    f();
    COUNTING.with(|c| c.set(false));
    ALLOCATIONS.load(Ordering::Relaxed) - before
}

#[derive(metron::Bundle, Default)]
struct Timers {
    wall: WallClock,
    cpu: ThreadCpuClock,
    /// The default software events: a group read per start and stop.
    perf: metron::components::PerfCounters,
}

#[metron::profile]
fn profiled(x: u64) -> u64 {
    std::hint::black_box(x) + 1
}

const ROUNDS: u64 = 100_000;

/// One round of every hot-path operation.
#[inline(never)]
fn one_round(i: u64) -> u64 {
    let _scope = metron::scope!("scope");
    let r = metron::begin!("explicit");
    let x = profiled(i);
    metron::counter!("counter", i);
    metron::mark!("mark");
    metron::annotate!("annotation", i);
    {
        let _bundle = metron::scope!("bundle", Timers);
    }
    r.end();
    x
}

scenario! {
    fn scenario_hot_path() {
        // The first round on this thread may allocate: call-site ids, the thread's buffer.
        let first = allocations_during(|| {
            one_round(0);
        });
        let rounds = allocations_during(|| {
            for i in 1..=ROUNDS {
                std::hint::black_box(one_round(i));
            }
        });
        // The counter itself works: a Box allocates once.
        let control = allocations_during(|| {
            std::hint::black_box(Box::new(1u64));
        });
        emit_data(&json!({ "first": first, "rounds": rounds, "control": control }));
    }
}

#[test]
fn a_hundred_thousand_rounds_of_every_record_kind_allocate_nothing_after_the_first() {
    // A buffer large enough for every record (no segment hand-over in the window) and no
    // periodic flush.
    let run = Scenario::new("scenario_hot_path")
        .env("METRON_BUFFER_SIZE", "64M")
        .env("METRON_FLUSH_INTERVAL", "0")
        .run();
    let data = run.data();
    assert_eq!(data["control"], 1, "the counting allocator counts");
    assert!(
        data["first"].as_u64().unwrap() > 0,
        "the first round registers call sites and the thread's buffer"
    );
    assert_eq!(
        data["rounds"], 0,
        "allocations in {ROUNDS} rounds after the first"
    );

    // The rounds were really recorded.
    let summary = run.summary();
    let tree = &summary["merged"];
    let rounds = ROUNDS + 1;
    assert_eq!(find(tree, &["scope"])["count"], rounds);
    assert_eq!(find(tree, &["scope", "explicit"])["count"], rounds);
    assert_eq!(
        find(tree, &["scope", "explicit", "profiled"])["count"],
        rounds
    );
    let bundle = find(tree, &["scope", "explicit", "bundle"]);
    assert_eq!(bundle["count"], rounds);
    assert!(
        bundle["metrics"]["thread_cpu_clock.time"]["total"]
            .as_f64()
            .unwrap()
            > 0.0
    );
    assert_eq!(summary["marks"], json!([{"name": "mark", "count": rounds}]));
    assert_eq!(summary["counters"][0]["count"], rounds);
    let metadata = run.metadata();
    // Per round: 4 regions (8 records), a counter, a mark and an annotation.
    assert_eq!(metadata["records"]["written"], 11 * rounds);
    assert_eq!(metadata["records"]["dropped"], 0);
}

/// Rounds between flushes in the segment hand-over scenario: at 11 records of at least one
/// 16-byte slot a round, 2,000 rounds fill about five 64 KiB segments.
const ROUNDS_PER_CHUNK: u64 = 2_000;
const CHUNKS: u64 = 50;

scenario! {
    fn scenario_hot_path_segment_handover() {
        // Warm-up: the thread's buffer, call sites, and enough segments mapped and recycled
        // that the hand-overs below take them from the free pool.
        for i in 0..10 * ROUNDS_PER_CHUNK {
            std::hint::black_box(one_round(i));
        }
        metron::flush();
        let mut rounds = 0;
        for chunk in 0..CHUNKS {
            rounds += allocations_during(|| {
                for i in 0..ROUNDS_PER_CHUNK {
                    std::hint::black_box(one_round(chunk * ROUNDS_PER_CHUNK + i));
                }
            });
            // Outside the count: the flusher reads the sealed segments and recycles them.
            metron::flush();
        }
        emit_data(&json!({ "rounds": rounds }));
    }
}

#[test]
fn handing_full_segments_to_the_flusher_allocates_nothing() {
    // Small segments: every chunk of rounds seals several, each handed over on the recording
    // thread (the cold path of a record: the sealed queue, a segment from the free pool).
    let run = Scenario::new("scenario_hot_path_segment_handover")
        .env("METRON_BUFFER_SIZE", "64K")
        .env("METRON_FLUSH_INTERVAL", "0")
        .run();
    let data = run.data();
    let recorded = (10 + CHUNKS) * ROUNDS_PER_CHUNK;
    let metadata = run.metadata();
    assert_eq!(metadata["records"]["written"], 11 * recorded);
    assert_eq!(metadata["records"]["dropped"], 0);
    let hand_overs = CHUNKS * ROUNDS_PER_CHUNK * 11 * 16 / (64 << 10);
    assert!(hand_overs >= 4 * CHUNKS, "the window hands segments over");
    assert_eq!(
        data["rounds"],
        0,
        "allocations in {} rounds with at least {hand_overs} segment hand-overs",
        CHUNKS * ROUNDS_PER_CHUNK
    );
}

scenario! {
    fn scenario_amd_dispatch() {
        metron_gpu_amd::fake_runtime::install().expect("the fake HSA runtime installs");
        let _region = metron::scope!("dispatching");
        let first = allocations_during(|| {
            metron_gpu_amd::fake_runtime::dispatch();
        });
        let dispatches = allocations_during(|| {
            for _ in 0..ROUNDS {
                std::hint::black_box(metron_gpu_amd::fake_runtime::dispatch());
            }
        });
        let written = metron_gpu_amd::fake_runtime::dispatch();
        // HSA API calls through Metron's wrapper (METRON_GPU_AMD_HSA_API selects this one).
        metron_gpu_amd::fake_runtime::signal_store_relaxed(1, 0);
        let api_calls = allocations_during(|| {
            for i in 0..ROUNDS {
                metron_gpu_amd::fake_runtime::signal_store_relaxed(1, i as i64);
            }
        });
        emit_data(&json!({ "first": first, "dispatches": dispatches, "written": written,
                           "api_calls": api_calls }));
    }
}

/// The AMD dispatch path (Metron's intercept handler and its completion handler, against the
/// in-process stand-in runtime) allocates nothing: the signal pool and the record queue are
/// made once, at the queue's creation and at `OnLoad`. Nor does a traced HSA API call.
#[test]
fn amd_dispatch_interception_and_completion_allocate_nothing() {
    for counted in [false, true] {
        let mut scenario = Scenario::new("scenario_amd_dispatch")
            .env("METRON_BUFFER_SIZE", "64M")
            .env("METRON_FLUSH_INTERVAL", "0")
            .env("METRON_GPU_AMD_RECORDS", "1000000")
            .env("METRON_GPU_AMD_HSA_API", "hsa_signal_store_relaxed");
        if counted {
            // Counted dispatches: start, dispatch and stop packets, the counters read back.
            scenario = scenario.env("METRON_GPU_METRICS", "SQ_WAVES,GRBM_COUNT,w=SQ_WAVES/2");
        }
        let run = scenario.run();
        let data = run.data();
        let packets = if counted { 3 } else { 1 };
        assert_eq!(
            data["written"],
            packets * (ROUNDS + 2),
            "every packet reached the writer"
        );
        assert_eq!(
            data["dispatches"], 0,
            "allocations in {ROUNDS} dispatches (counted: {counted})"
        );
        assert_eq!(
            data["api_calls"], 0,
            "allocations in {ROUNDS} traced HSA API calls"
        );
        let gpu = &run.metadata()["gpu"];
        assert_eq!(gpu["backend"], "hsa", "{gpu}");
        assert_eq!(gpu["untimed_no_free_signal"], 0, "{gpu}");
        assert_eq!(gpu["records"]["api_calls"], ROUNDS + 1, "{gpu}");
        assert_eq!(gpu["dropped_queue_full"], 0, "{gpu}");
        assert_eq!(gpu["records"]["kernels"], ROUNDS + 2, "{gpu}");
        if counted {
            assert_eq!(gpu["counters"]["kernels_counted"], ROUNDS + 2, "{gpu}");
        }
    }
}
