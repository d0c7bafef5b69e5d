//! User sinks see the decoded events: `metron::flush()` delivers them before exit, annotations
//! arrive with their values and regions, and `#[metron::profile]` on an `async fn` records one
//! region per poll.

use metron_tests::recording::{of_kind, recording_sink};
use metron_tests::{emit_data, find, scenario, shape, threads, Scenario};
use serde_json::{json, Value};
use std::future::Future;
use std::pin::Pin;
use std::sync::mpsc;
use std::task::{Context, Poll, Waker};

// ---------------------------------------------------------------------------------------------

scenario! {
    fn scenario_explicit_flush() {
        let seen = recording_sink();
        // The runtime's start wakes the flusher once (to apply the interval); let that wake
        // pass, after which it drains only when woken by a full buffer, a thread exit or flush().
        std::thread::sleep(std::time::Duration::from_millis(100));
        for _ in 0..3 {
            let _g = metron::scope!("before_flush");
        }
        metron::counter!("flushed_counter", 42);
        // A second thread that is still alive (and holds its buffer) when flush() is called.
        let (recorded_tx, recorded_rx) = mpsc::channel();
        let (done_tx, done_rx) = mpsc::channel::<()>();
        let worker = std::thread::Builder::new()
            .name("alive".into())
            .spawn(move || {
                metron::mark!("from_alive_thread");
                recorded_tx.send(()).unwrap();
                done_rx.recv().unwrap();
            })
            .unwrap();
        recorded_rx.recv().unwrap();
        let before = seen.lock().unwrap().len();
        metron::flush();
        let after: Vec<Value> = seen.lock().unwrap().clone();
        done_tx.send(()).unwrap();
        worker.join().unwrap();
        emit_data(&json!({ "before": before, "after": after }));
    }
}

#[test]
fn flush_delivers_every_threads_events_to_a_user_sink_before_exit() {
    let run = Scenario::new("scenario_explicit_flush")
        .env("METRON_FLUSH_INTERVAL", "0")
        .run();
    let data = run.data();
    assert_eq!(data["before"], 0, "nothing is delivered before flush()");
    let after = data["after"].as_array().unwrap();
    let ends = of_kind(after, "end");
    assert_eq!(ends.len(), 3);
    assert!(ends.iter().all(|e| e["name"] == "before_flush"));
    assert_eq!(of_kind(after, "begin").len(), 3);
    assert_eq!(
        of_kind(after, "counter"),
        [
            &json!({"kind": "counter", "name": "flushed_counter", "value": 42.0, "thread": after[0]["thread"]})
        ]
    );
    let marks = of_kind(after, "mark");
    assert_eq!(marks.len(), 1);
    assert_eq!(marks[0]["thread"], "alive");
    // The sink's own output file is written at the end of the run, next to the summary.
    let recorded: Value = run.json("recorded-events.json");
    assert_eq!(recorded.as_array().unwrap().len(), after.len());
}

// ---------------------------------------------------------------------------------------------

/// 300 bytes of two-byte characters: cut to 240 bytes (120 characters).
fn long_text() -> String {
    "é".repeat(150)
}

scenario! {
    fn scenario_annotations() {
        let _seen = recording_sink();
        metron::annotate!("orphan", 1u8);
        let _outer = metron::scope!("outer");
        metron::annotate!("rows", 1024u32);
        {
            let _inner = metron::scope!("inner");
            metron::annotate!("delta", -5i64);
            metron::annotate!("ratio", 0.25f64);
            metron::annotate!("ok", true);
            metron::annotate!("label", "héllo");
            let text = long_text();
            metron::annotate!("long", &text);
        }
        metron::annotate!("after_inner", 7usize);
    }
}

#[test]
fn annotations_reach_sinks_with_their_typed_values_and_the_innermost_open_region() {
    let run = Scenario::new("scenario_annotations").run();
    let events: Value = run.json("recorded-events.json");
    let annotations: Vec<Value> = of_kind(events.as_array().unwrap(), "annotation")
        .into_iter()
        .map(|a| json!([a["key"], a["region"], a["value"]]))
        .collect();
    let cut: String = long_text().chars().take(120).collect();
    assert_eq!(cut.len(), 240);
    assert_eq!(
        annotations,
        [
            json!(["orphan", null, {"u64": 1}]),
            json!(["rows", "outer", {"u64": 1024}]),
            json!(["delta", "inner", {"i64": -5}]),
            json!(["ratio", "inner", {"f64": 0.25}]),
            json!(["ok", "inner", {"bool": true}]),
            json!(["label", "inner", {"str": "héllo"}]),
            json!(["long", "inner", {"str": cut}]),
            json!(["after_inner", "outer", {"u64": 7}]),
        ]
    );
    // Annotations do not disturb the region tree.
    assert_eq!(shape(&run.summary()["merged"]), "outer×1{inner×1}");
}

// ---------------------------------------------------------------------------------------------

/// A future that is pending on its first poll and ready on the second.
struct YieldOnce(bool);

impl Future for YieldOnce {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if std::mem::replace(&mut self.0, true) {
            Poll::Ready(())
        } else {
            cx.waker().wake_by_ref();
            Poll::Pending
        }
    }
}

#[metron::profile]
async fn two_polls(x: u64) -> u64 {
    {
        let _g = metron::scope!("before_yield");
    }
    YieldOnce(false).await;
    let _g = metron::scope!("after_yield");
    x + 1
}

#[metron::profile(name = "renamed_async")]
async fn named_async() -> u64 {
    YieldOnce(false).await;
    YieldOnce(false).await;
    two_polls(1).await
}

/// Polls `future` to completion on this thread, recording a region between polls.
fn block_on<F: Future>(future: F) -> (F::Output, usize) {
    let mut future = std::pin::pin!(future);
    let mut cx = Context::from_waker(Waker::noop());
    let mut polls = 0;
    loop {
        polls += 1;
        if let Poll::Ready(out) = future.as_mut().poll(&mut cx) {
            return (out, polls);
        }
        let _between = metron::scope!("between_polls");
    }
}

scenario! {
    fn scenario_async() {
        let (out, polls) = block_on(two_polls(41));
        assert_eq!((out, polls), (42, 2));
        let (out, polls) = block_on(named_async());
        assert_eq!((out, polls), (2, 4));
    }
}

#[test]
fn an_async_fn_with_profile_records_one_region_per_poll_and_none_while_suspended() {
    let run = Scenario::new("scenario_async").run();
    let summary = run.summary();
    // two_polls: polled twice (pending, then ready); the region closes at each return from
    // poll, so the executor's region between the polls is not nested inside it.
    assert_eq!(
        shape(&summary["merged"]),
        "two_polls×2{before_yield×1, after_yield×1}, between_polls×4, renamed_async×4{two_polls×2{before_yield×1, after_yield×1}}"
    );
    let node = find(&summary["merged"], &["renamed_async"]);
    assert!(node["file"]
        .as_str()
        .unwrap()
        .ends_with("sinks_and_async.rs"));
    let metadata = run.metadata();
    let main = &threads(&metadata)[0];
    assert_eq!(main["unbalanced_ends"], 0);
    assert_eq!(main["open_at_exit"], 0);
}
