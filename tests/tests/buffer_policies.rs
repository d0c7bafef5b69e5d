//! Buffer policies: lossless loses nothing, discard drops and reports the exact count —
//! through the runtime (reading `metadata.json`, `summary.json` and the stderr line) and
//! through the generic `metron::buffer::BufferedService` API directly.

use metron::buffer::{Batch, BufferConfig, BufferedService, CallbackThread, Policy};
use metron::{Event, RunInfo, Sink, ThreadInfo};
use metron_tests::{emit_data, find, scenario, shape, thread_named, threads, Scenario};
use serde_json::json;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

// ---------------------------------------------------------------------------------------------
// Through the runtime.

const LOSSLESS_THREADS: u64 = 4;
const LOSSLESS_PAIRS: u64 = 5_000_000;

scenario! {
    fn scenario_lossless_ten_million_records() {
        let handles: Vec<_> = (0..LOSSLESS_THREADS)
            .map(|t| {
                std::thread::Builder::new()
                    .name(format!("lossless-{t}"))
                    .spawn(|| {
                        let _thread = metron::scope!("thread");
                        for _ in 0..LOSSLESS_PAIRS / LOSSLESS_THREADS {
                            let _pair = metron::scope!("pair");
                        }
                    })
                    .expect("spawn")
            })
            .collect();
        for h in handles {
            h.join().expect("a producer panicked");
        }
    }
}

#[test]
fn lossless_through_a_4k_buffer_keeps_every_one_of_ten_million_records() {
    let run = Scenario::new("scenario_lossless_ten_million_records")
        .env("METRON_BUFFER_SIZE", "4K")
        .env("METRON_BUFFER_POLICY", "lossless")
        .run();
    let per_thread = LOSSLESS_PAIRS / LOSSLESS_THREADS;
    // Two records per region: the pairs and one `thread` region per thread.
    let records_in = 2 * LOSSLESS_PAIRS + 2 * LOSSLESS_THREADS;
    assert!(records_in >= 10_000_000);

    let metadata = run.metadata();
    assert_eq!(metadata["buffer"]["policy"], "lossless");
    assert_eq!(metadata["buffer"]["segment_bytes"], 4096);
    assert_eq!(metadata["records"]["written"], records_in);
    assert_eq!(metadata["records"]["dropped"], 0);
    for t in 0..LOSSLESS_THREADS {
        let thread = thread_named(&metadata, &format!("lossless-{t}"));
        assert_eq!(thread["records_written"], 2 * per_thread + 2);
        assert_eq!(thread["records_dropped"], 0);
        assert_eq!(thread["unbalanced_ends"], 0);
        assert_eq!(thread["malformed"], 0);
    }

    let summary = run.summary();
    for t in 0..LOSSLESS_THREADS {
        let thread = thread_named(&summary, &format!("lossless-{t}"));
        assert_eq!(
            shape(&thread["regions"]),
            format!("thread×1{{pair×{per_thread}}}")
        );
    }
    assert_eq!(
        shape(&summary["merged"]),
        format!("thread×{LOSSLESS_THREADS}{{pair×{LOSSLESS_PAIRS}}}")
    );

    let (dir, written, dropped) = run.wrote_line().expect("the `metron: wrote` line");
    assert_eq!(dir, run.output_dir);
    assert_eq!((written, dropped), (records_in, 0));
    eprintln!(
        "lossless: {records_in} records in {:.1} s (child process, release build expected)",
        run.elapsed.as_secs_f64()
    );
}

/// A user sink that blocks the flusher on its first batch until released.
struct BlockingSink {
    first: bool,
    gate: Arc<Gate>,
}

#[derive(Default)]
struct Gate {
    entered: AtomicBool,
    released: Mutex<bool>,
    cv: Condvar,
}

impl Gate {
    fn release(&self) {
        *self.released.lock().unwrap() = true;
        self.cv.notify_all();
    }

    fn wait(&self, limit: Duration) {
        let released = self.released.lock().unwrap();
        let (released, timeout) = self
            .cv
            .wait_timeout_while(released, limit, |r| !*r)
            .unwrap();
        assert!(*released || !timeout.timed_out());
    }
}

impl Sink for BlockingSink {
    fn name(&self) -> &str {
        "blocking"
    }

    fn events(&mut self, _thread: &ThreadInfo, _events: &[Event<'_>]) {
        if std::mem::take(&mut self.first) {
            self.gate.entered.store(true, Ordering::Release);
            self.gate.wait(Duration::from_secs(60));
        }
    }

    fn finish(&mut self, _run: &RunInfo) -> std::io::Result<Vec<PathBuf>> {
        Ok(Vec::new())
    }
}

/// Pairs recorded after the flusher is known to be blocked.
const PAIRS_WHILE_BLOCKED: u64 = 100_000;

scenario! {
    fn scenario_discard_with_a_blocked_flusher() {
        let gate = Arc::new(Gate::default());
        metron::add_sink(Box::new(BlockingSink { first: true, gate: Arc::clone(&gate) }));
        let mut pairs = 0u64;
        // Fill the first segment: its hand-over wakes the flusher, which then blocks in the sink.
        while !gate.entered.load(Ordering::Acquire) {
            {
                let _pair = metron::scope!("pair");
            }
            pairs += 1;
            assert!(pairs < 50_000_000, "the flusher never called the sink");
        }
        for _ in 0..PAIRS_WHILE_BLOCKED {
            let _pair = metron::scope!("pair");
        }
        pairs += PAIRS_WHILE_BLOCKED;
        gate.release();
        emit_data(&json!({ "pairs": pairs }));
    }
}

#[test]
fn discard_with_a_blocked_flusher_drops_and_reports_the_exact_count() {
    let run = Scenario::new("scenario_discard_with_a_blocked_flusher")
        .env("METRON_BUFFER_SIZE", "4K")
        .env("METRON_BUFFER_POLICY", "discard")
        .run();
    let pairs = run.data()["pairs"].as_u64().unwrap();
    let attempted = 2 * pairs;

    let metadata = run.metadata();
    assert_eq!(metadata["buffer"]["policy"], "discard");
    let written = metadata["records"]["written"].as_u64().unwrap();
    let dropped = metadata["records"]["dropped"].as_u64().unwrap();
    assert_eq!(
        written + dropped,
        attempted,
        "every attempted record is written or counted as dropped"
    );
    // While the flusher is blocked, a producer has its current and one spare segment
    // (2 x 256 slots); everything after that is dropped.
    assert!(dropped > 0);
    assert!(
        dropped >= 2 * PAIRS_WHILE_BLOCKED - 512,
        "dropped {dropped} of {attempted}"
    );

    let (_, line_written, line_dropped) = run.wrote_line().expect("the `metron: wrote` line");
    assert_eq!((line_written, line_dropped), (written, dropped));

    // The summary reports the drops on the thread that lost them.
    let summary = run.summary();
    let lost: u64 = threads(&summary)
        .iter()
        .map(|t| t["records_dropped"].as_u64().unwrap())
        .sum();
    assert_eq!(lost, dropped);
    let pair = find(&summary["merged"], &["pair"]);
    assert!(pair["count"].as_u64().unwrap() <= pairs);
    assert!(run
        .summary_text()
        .contains(&format!("{dropped} records dropped on this thread")));
}

// ---------------------------------------------------------------------------------------------
// The backlog limit: a program that records faster than the flusher writes is held (or drops,
// counted) at METRON_BUFFER_BACKLOG instead of growing its memory until exit.

/// Regions recorded by the backlog scenarios.
const BACKLOG_PAIRS: u64 = 10_000_000;
/// The backlog limit they run with, and the pairs that fill it (16 bytes per record, two
/// records per pair).
const BACKLOG_LIMIT: u64 = 16 << 20;
const PAIRS_IN_LIMIT: u64 = BACKLOG_LIMIT / 32;

/// Peak resident memory of this process so far, in bytes (`getrusage`).
fn peak_rss_bytes() -> u64 {
    // SAFETY: `getrusage` fills the zero-initialised struct it is given; RUSAGE_SELF is valid.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        assert_eq!(libc::getrusage(libc::RUSAGE_SELF, &mut usage), 0);
        usage
    };
    usage.ru_maxrss as u64 * 1024
}

/// Records [`BACKLOG_PAIRS`] on this thread while the flusher is stuck in a user sink until
/// the recording has passed the backlog limit (it is held there, or drops, by the policy),
/// then ends the run and reports the process's peak RSS, which covers the whole run.
fn record_past_a_stuck_flusher() {
    let gate = Arc::new(Gate::default());
    metron::add_sink(Box::new(BlockingSink {
        first: true,
        gate: Arc::clone(&gate),
    }));
    let done = Arc::new(std::sync::atomic::AtomicU64::new(0));
    // Releases the flusher once the recording has stopped advancing (held at the limit; under
    // the drop policy: once the limit's worth of records was produced since the flusher got
    // stuck). No time is asserted; the waits only pace the releaser.
    let releaser = {
        let (gate, done) = (Arc::clone(&gate), Arc::clone(&done));
        std::thread::spawn(move || {
            while !gate.entered.load(Ordering::Acquire) {
                std::thread::sleep(Duration::from_millis(1));
            }
            let from = done.load(Ordering::Relaxed);
            let mut last = from;
            loop {
                std::thread::sleep(Duration::from_millis(200));
                let now = done.load(Ordering::Relaxed);
                // Held (possibly since before the flusher reached the sink), or, dropping,
                // past the limit's worth.
                if now == last || now >= from + PAIRS_IN_LIMIT + 65_536 {
                    break;
                }
                last = now;
            }
            gate.release();
        })
    };
    for i in 0..BACKLOG_PAIRS {
        {
            let _pair = metron::scope!("pair");
        }
        done.store(i + 1, Ordering::Relaxed);
    }
    releaser.join().expect("the releaser");
    metron::finish();
    emit_data(&json!({ "peak_rss_bytes": peak_rss_bytes() }));
}

scenario! {
    fn scenario_backlog_limit_holds_the_recording() {
        record_past_a_stuck_flusher();
    }
}

#[test]
fn ten_million_regions_through_a_16m_backlog_hold_the_recording_lose_nothing_and_stay_small() {
    let run = Scenario::new("scenario_backlog_limit_holds_the_recording")
        .env("METRON_BUFFER_BACKLOG", "16M")
        .run();
    let metadata = run.metadata();
    let buffer = &metadata["buffer"];
    assert_eq!(buffer["backlog_policy"], "block", "{buffer}");
    let backlog = &buffer["backlog"];
    assert_eq!(backlog["limit_bytes"], BACKLOG_LIMIT, "{backlog}");
    // Held at the limit (the flusher was stuck), and for a measured time ...
    assert!(backlog["blocked_times"].as_u64().unwrap() >= 1, "{backlog}");
    assert!(backlog["blocked_ns"].as_u64().unwrap() > 0, "{backlog}");
    // ... never past it ...
    assert!(
        backlog["peak_bytes"].as_u64().unwrap() <= BACKLOG_LIMIT,
        "{backlog}"
    );
    assert_eq!(backlog["drops_at_limit"], 0, "{backlog}");
    // ... and nothing lost: every region is in the summary.
    assert_eq!(metadata["records"]["dropped"], 0);
    assert_eq!(metadata["records"]["written"], 2 * BACKLOG_PAIRS);
    let summary = run.summary();
    assert_eq!(find(&summary["merged"], &["pair"])["count"], BACKLOG_PAIRS);
    // The last stderr line says how long recording was held.
    let line = run
        .stderr
        .lines()
        .rev()
        .find(|l| l.starts_with("metron: wrote "))
        .unwrap();
    assert!(line.contains("; recording held "), "{line}");
    assert!(line.contains("METRON_BUFFER_BACKLOG=16384K"), "{line}");
    // The whole run (10^7 regions, summary and trace written) fits in 100 MB.
    let rss = run.data()["peak_rss_bytes"].as_u64().unwrap();
    eprintln!(
        "10^7 regions, 16 MiB backlog: peak RSS {:.1} MB",
        rss as f64 / 1e6
    );
    assert!(rss <= 100_000_000, "peak RSS {rss} bytes");
}

scenario! {
    fn scenario_backlog_limit_drops() {
        record_past_a_stuck_flusher();
    }
}

#[test]
fn at_the_backlog_limit_the_drop_policy_drops_and_counts_exactly() {
    let run = Scenario::new("scenario_backlog_limit_drops")
        .env("METRON_BUFFER_BACKLOG", "16M")
        .env("METRON_BUFFER_BACKLOG_POLICY", "drop")
        .run();
    let metadata = run.metadata();
    let backlog = &metadata["buffer"]["backlog"];
    assert_eq!(metadata["buffer"]["backlog_policy"], "drop");
    assert!(
        backlog["drops_at_limit"].as_u64().unwrap() >= 1,
        "{backlog}"
    );
    assert_eq!(backlog["blocked_times"], 0, "{backlog}");
    assert!(
        backlog["peak_bytes"].as_u64().unwrap() <= BACKLOG_LIMIT,
        "{backlog}"
    );
    let written = metadata["records"]["written"].as_u64().unwrap();
    let dropped = metadata["records"]["dropped"].as_u64().unwrap();
    assert!(dropped > 0);
    assert_eq!(
        written + dropped,
        2 * BACKLOG_PAIRS,
        "every record written or counted"
    );
    let (_, line_written, line_dropped) = run.wrote_line().expect("the `metron: wrote` line");
    assert_eq!((line_written, line_dropped), (written, dropped));
    let line = run
        .stderr
        .lines()
        .rev()
        .find(|l| l.starts_with("metron: wrote "))
        .unwrap();
    assert!(line.contains("at the backlog limit"), "{line}");
}

// ---------------------------------------------------------------------------------------------
// The generic BufferedService API, in process.

/// What a callback saw: records per producer index, and dropped counts per batch.
#[derive(Default)]
struct Seen {
    records: BTreeMap<u64, Vec<u64>>,
    dropped: Vec<u64>,
    batches: usize,
}

fn collector(seen: &Arc<Mutex<Seen>>) -> impl FnMut(Batch<'_, u64>) + Send + 'static {
    let seen = Arc::clone(seen);
    move |batch| {
        let mut seen = seen.lock().unwrap();
        seen.batches += 1;
        seen.records
            .entry(batch.producer.index)
            .or_default()
            .extend_from_slice(batch.records);
        seen.dropped.push(batch.dropped);
    }
}

#[test]
fn discard_keeps_the_current_and_the_spare_segment_and_drops_exactly_the_rest() {
    const BYTES: usize = 4096;
    const CAPACITY: u64 = (BYTES / std::mem::size_of::<u64>()) as u64; // records per segment
    const N: u64 = 10_000;
    let seen = Arc::new(Mutex::new(Seen::default()));
    let (release, released) = mpsc::channel::<()>();
    let released = Mutex::new(released);
    let mut collect = collector(&seen);
    let mut first = true;
    let thread = CallbackThread::spawn("test-discard", None);
    let service = BufferedService::<u64>::new(
        "discard-test",
        BufferConfig {
            bytes: BYTES,
            watermark_percent: 100,
            policy: Policy::Discard,
        },
        thread.clone(),
        move |batch| {
            collect(batch);
            if std::mem::take(&mut first) {
                // Block the callback thread on its first batch.
                let _ = released
                    .lock()
                    .unwrap()
                    .recv_timeout(Duration::from_secs(60));
            }
        },
    );
    let mut producer = service.producer();
    let stored = (0..N).filter(|i| producer.push(*i)).count() as u64;
    assert_eq!(stored, 2 * CAPACITY, "a producer holds two segments");
    assert_eq!(producer.dropped(), N - 2 * CAPACITY);
    release.send(()).unwrap();
    drop(producer);
    service.flush();
    thread.stop();

    let seen = seen.lock().unwrap();
    let records: Vec<u64> = seen.records.values().flatten().copied().collect();
    assert_eq!(
        records,
        (0..2 * CAPACITY).collect::<Vec<_>>(),
        "the first 2C records arrive, in order"
    );
    assert_eq!(
        seen.dropped.iter().sum::<u64>(),
        N - 2 * CAPACITY,
        "the drop count arrives with the batches"
    );
}

#[test]
fn lossless_delivers_every_record_of_every_producer_in_order_even_with_a_slow_callback() {
    const PRODUCERS: u64 = 4;
    const PER_PRODUCER: u64 = 200_000;
    let seen = Arc::new(Mutex::new(Seen::default()));
    let mut collect = collector(&seen);
    let thread = CallbackThread::spawn("test-lossless", Some(Duration::from_millis(1)));
    let service = BufferedService::<u64>::new(
        "lossless-test",
        BufferConfig {
            bytes: 4096,
            watermark_percent: 50,
            policy: Policy::Lossless,
        },
        thread.clone(),
        move |batch| {
            collect(batch);
            // Slower than the producers: segments pile up instead of records being lost.
            std::thread::sleep(Duration::from_micros(50));
        },
    );
    let producers: Vec<_> = (0..PRODUCERS)
        .map(|p| {
            let service = service.clone();
            std::thread::spawn(move || {
                let mut producer = service.producer();
                for i in 0..PER_PRODUCER {
                    assert!(producer.push(p << 32 | i), "lossless never refuses");
                }
                producer.dropped()
            })
        })
        .collect();
    for p in producers {
        assert_eq!(p.join().unwrap(), 0);
    }
    service.flush();
    thread.stop();

    let seen = seen.lock().unwrap();
    assert_eq!(seen.records.len(), PRODUCERS as usize);
    for records in seen.records.values() {
        let tag = records[0] >> 32;
        let expected: Vec<u64> = (0..PER_PRODUCER).map(|i| tag << 32 | i).collect();
        assert!(
            *records == expected,
            "producer {tag}: {} records, not all in order",
            records.len()
        );
    }
    assert!(seen.dropped.iter().all(|d| *d == 0));
    // 4096 bytes = 512 records; a 50% watermark hands a segment over every 256 records.
    assert!(seen.batches >= (PRODUCERS * PER_PRODUCER / 256) as usize);
    assert!(
        service.segments_mapped() > 2 * PRODUCERS,
        "memory grows when the callback is slow ({} segments)",
        service.segments_mapped()
    );
}
