//! Every async request is a range: a tokio server shape (2 workers, 400 requests, each a
//! spawned task whose `#[tracing::instrument]` handler awaits two short sleeps and calls a
//! `#[metron::profile] async fn`, `MetronLayer` over the registry). Requests served by one
//! worker from start to end are in the latency table as much as those that moved between
//! workers: the table's count is the number of requests exactly, and its mean agrees with the
//! program's own clock (within 2 %). The `#[profile]` call is one async range per call beside
//! its per-poll regions; a call done in one poll is its one region and no async range.

use metron_tests::{emit_data, scenario, threads, Scenario};
use metron_tracing::MetronLayer;
use serde_json::{json, Value};
use std::time::{Duration, Instant};
use tracing_subscriber::prelude::*;

const REQUESTS: u64 = 400;
const WORKERS: usize = 2;

/// Suspended once (a sleep), so its call is an async range.
#[metron::profile]
async fn lookup(request: u64) -> u64 {
    tokio::time::sleep(Duration::from_millis(1)).await;
    request * 2
}

/// Done in its first poll: per-poll region only.
#[metron::profile]
async fn ready(request: u64) -> u64 {
    request + 1
}

#[tracing::instrument]
async fn handler(request: u64) -> u64 {
    tokio::time::sleep(Duration::from_millis(4)).await;
    let a = lookup(request).await;
    tokio::time::sleep(Duration::from_millis(4)).await;
    a + ready(request).await
}

fn serve() -> Vec<Duration> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(WORKERS)
        .enable_time()
        .build()
        .unwrap();
    runtime.block_on(async {
        let mut tasks = Vec::new();
        for request in 0..REQUESTS {
            tasks.push(tokio::spawn(async move {
                // The program's own measurement of the request: the handler's call (where
                // its span is created) to its completion.
                let start = Instant::now();
                let out = handler(request).await;
                assert_eq!(out, request * 3 + 1);
                start.elapsed()
            }));
            // Requests arrive over time, not all at once.
            if request % 20 == 19 {
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
        }
        let mut latencies = Vec::new();
        for t in tasks {
            latencies.push(t.await.unwrap());
        }
        latencies
    })
}

scenario! {
    fn scenario_tokio_requests() {
        tracing_subscriber::registry().with(MetronLayer::new()).init();
        let latencies = serve();
        let mean_ns = latencies.iter().map(|d| d.as_nanos() as f64).sum::<f64>()
            / latencies.len() as f64;
        emit_data(&json!({ "requests": latencies.len(), "mean_ns": mean_ns }));
    }
}

fn range<'a>(summary: &'a Value, name: &str) -> &'a Value {
    summary["async_ranges"]["ranges"]
        .as_array()
        .expect("async_ranges.ranges")
        .iter()
        .find(|r| r["name"] == name)
        .unwrap_or_else(|| panic!("no async range {name}: {}", summary["async_ranges"]))
}

/// Regions named `name` over every thread (each poll is one).
fn regions(summary: &Value, name: &str) -> u64 {
    fn walk(nodes: &Value, name: &str) -> u64 {
        nodes.as_array().map_or(0, |a| {
            a.iter()
                .map(|n| {
                    u64::from(n["name"] == name) * n["count"].as_u64().unwrap_or(0)
                        + walk(&n["children"], name)
                })
                .sum()
        })
    }
    threads(summary)
        .iter()
        .map(|t| walk(&t["regions"], name))
        .sum()
}

#[test]
fn every_request_is_one_async_range_and_the_mean_matches_the_programs_clock() {
    let run = Scenario::new("scenario_tokio_requests").run();
    let data = run.data();
    assert_eq!(data["requests"], REQUESTS);
    let summary = run.summary();

    let handler = range(&summary, "handler");
    assert_eq!(handler["count"], REQUESTS, "{handler}");
    let mean = handler["mean_ns"].as_f64().unwrap();
    let own = data["mean_ns"].as_f64().unwrap();
    println!(
        "handler: {} ranges, mean {:.3} ms (program: {:.3} ms), p50 {} p90 {} p99 {} max {} ns",
        handler["count"],
        mean / 1e6,
        own / 1e6,
        handler["p50_ns"],
        handler["p90_ns"],
        handler["p99_ns"],
        handler["max_ns"]
    );
    assert!(
        (mean / own - 1.0).abs() <= 0.02,
        "async table mean {mean} ns against the program's {own} ns"
    );
    // Percentiles are ordered and inside [min, max]; every request slept 8 ms at least.
    let p = |k: &str| handler[k].as_f64().unwrap();
    assert!(p("min_ns") >= 8e6, "{handler}");
    assert!(p("min_ns") <= p("p50_ns") && p("p50_ns") <= p("p90_ns"));
    assert!(p("p90_ns") <= p("p99_ns") && p("p99_ns") <= p("max_ns"));
    assert_eq!(summary["async_ranges"]["unmatched_ends"], 0);
    assert_eq!(summary["async_ranges"]["open_at_exit"], 0);

    // `#[profile]` on an async fn: one range per call beside its per-poll regions (two polls
    // per call at least, one before and one after its sleep).
    let lookup = range(&summary, "lookup");
    assert_eq!(lookup["count"], REQUESTS, "{lookup}");
    assert!(lookup["min_ns"].as_f64().unwrap() >= 1e6, "{lookup}");
    assert!(regions(&summary, "lookup") >= 2 * REQUESTS);
    // A call done in its first poll is a region only.
    assert_eq!(regions(&summary, "ready"), REQUESTS);
    assert!(
        summary["async_ranges"]["ranges"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["name"] != "ready"),
        "{}",
        summary["async_ranges"]
    );
    // The latency table in summary.txt has the percentile columns.
    let text = run.summary_text();
    let table = &text[text.find("async ranges").unwrap_or(0)..];
    println!("{table}");
    assert!(text.contains(" p50 |") && text.contains(" p99 |"), "{text}");
}
