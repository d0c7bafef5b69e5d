//! Regions nest per thread: four threads run known nested patterns of `scope!`,
//! `#[metron::profile]` (function and method) and `begin!`/`end()`, and `summary.json` shows
//! one exact tree per thread, the merged tree, and the thread names.

use metron_tests::{find, scenario, shape, stat, thread_named, threads, Scenario};
use serde_json::json;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};

const WORKERS: usize = 4;
/// Worker `i` runs `outer` this many times `(i + 1)` times.
const ROUNDS: usize = 50;
const LONG_NAME: &str = "worker-3 renamed with a name longer than fifteen bytes";

#[metron::profile(name = "inner")]
fn inner_work(x: u64) -> u64 {
    std::hint::black_box(x.wrapping_mul(31))
}

#[metron::profile]
fn outer() -> u64 {
    let mut sum = 0;
    for i in 0..3 {
        let _middle = metron::scope!("middle");
        for j in 0..2 {
            sum += inner_work(i * 2 + j);
        }
    }
    sum
}

/// Begins a region in one function...
fn start_phase() -> metron::Region {
    metron::begin!("explicit")
}

/// ...and ends it in another.
fn end_phase(region: metron::Region) {
    region.end();
}

struct Worker {
    index: usize,
}

impl Worker {
    #[metron::profile(name = "Worker::run")]
    fn run(&self) -> u64 {
        let mut sum = 0;
        for _ in 0..ROUNDS * (self.index + 1) {
            sum += outer();
        }
        let phase = start_phase();
        sum += inner_work(sum);
        end_phase(phase);
        sum
    }
}

scenario! {
    fn scenario_four_threads() {
        let spawn = metron::scope!("spawn_and_join");
        // Threads register in a known order (main first, then worker 0, 1, ...), then run
        // concurrently from a barrier.
        let turn = Arc::new(AtomicUsize::new(0));
        let barrier = Arc::new(Barrier::new(WORKERS));
        let handles: Vec<_> = (0..WORKERS)
            .map(|index| {
                let turn = Arc::clone(&turn);
                let barrier = Arc::clone(&barrier);
                std::thread::Builder::new()
                    .name(format!("worker-{index}"))
                    .spawn(move || {
                        while turn.load(Ordering::Acquire) != index {
                            std::thread::yield_now();
                        }
                        if index == 3 {
                            metron::set_thread_name(LONG_NAME);
                        }
                        metron::mark!("registered");
                        turn.store(index + 1, Ordering::Release);
                        barrier.wait();
                        Worker { index }.run()
                    })
                    .expect("spawn a worker")
            })
            .collect();
        for handle in handles {
            handle.join().expect("a worker panicked");
        }
        drop(spawn);
    }
}

#[test]
fn four_threads_each_get_their_own_exact_tree_and_the_merged_tree_adds_them_up() {
    let run = Scenario::new("scenario_four_threads")
        .env("METRON_BUFFER_SIZE", "4K")
        .run();
    let summary = run.summary();

    // The main thread's region does not adopt the workers' regions.
    let main = &threads(&summary)[0];
    assert_eq!(main["index"], 0);
    assert_eq!(shape(&main["regions"]), "spawn_and_join×1");

    for index in 0..WORKERS {
        let name = if index == 3 {
            LONG_NAME.to_string()
        } else {
            format!("worker-{index}")
        };
        let thread = thread_named(&summary, &name);
        assert_eq!(thread["index"], index + 1, "registration order of {name}");
        assert_eq!(thread["is_metron"], false);
        assert_eq!(thread["records_dropped"], 0);
        let n = ROUNDS * (index + 1);
        assert_eq!(
            shape(&thread["regions"]),
            format!(
                "Worker::run×1{{outer×{n}{{middle×{}{{inner×{}}}}}, explicit×1{{inner×1}}}}",
                3 * n,
                6 * n
            ),
            "tree of {name}"
        );
        // A parent lasts at least as long as its children together.
        let run_node = find(&thread["regions"], &["Worker::run"]);
        let outer_node = find(&thread["regions"], &["Worker::run", "outer"]);
        let middle = find(&thread["regions"], &["Worker::run", "outer", "middle"]);
        let wall = |n: &serde_json::Value| stat(n, "wall_clock.elapsed", "total");
        assert!(wall(run_node) >= wall(outer_node));
        assert!(wall(outer_node) >= wall(middle));
        // `#[profile]` records where the function is.
        assert!(outer_node["file"]
            .as_str()
            .unwrap()
            .ends_with("threads_and_nesting.rs"));
        assert_eq!(outer_node["module"], "threads_and_nesting");
    }

    let all: usize = (1..=WORKERS).map(|i| ROUNDS * i).sum();
    assert_eq!(
        shape(&summary["merged"]),
        format!(
            "spawn_and_join×1, Worker::run×{WORKERS}{{outer×{all}{{middle×{}{{inner×{}}}}}, explicit×{WORKERS}{{inner×{WORKERS}}}}}",
            3 * all,
            6 * all
        )
    );
    assert_eq!(
        summary["marks"],
        json!([{ "name": "registered", "count": WORKERS }])
    );

    // metadata.json counts every record: two per region, one per mark, one thread name.
    let metadata = run.metadata();
    let mut expected_total = 2; // spawn_and_join
    for index in 0..WORKERS {
        let name = if index == 3 {
            LONG_NAME.to_string()
        } else {
            format!("worker-{index}")
        };
        let regions = 3 + 10 * ROUNDS * (index + 1);
        let records = 2 * regions + 1 + usize::from(index == 3);
        let thread = thread_named(&metadata, &name);
        assert_eq!(thread["records_written"], records, "records of {name}");
        assert_eq!(thread["unbalanced_ends"], 0);
        assert_eq!(thread["open_at_exit"], 0);
        assert_eq!(thread["malformed"], 0);
        expected_total += records;
    }
    assert_eq!(metadata["records"]["written"], expected_total);
    assert_eq!(metadata["records"]["dropped"], 0);
    // The tiny buffer really was handed over many times.
    assert_eq!(metadata["buffer"]["segment_bytes"], 4096);
    assert!(metadata["buffer"]["segments_mapped"].as_u64().unwrap() > WORKERS as u64);

    // summary.txt names every thread.
    let text = run.summary_text();
    for name in ["worker-0", "worker-1", "worker-2", LONG_NAME] {
        assert!(
            text.contains(&format!("\"{name}\"")),
            "{name} in summary.txt"
        );
    }
    assert!(text.contains(&format!("merged across {} threads", WORKERS + 1)));
}
