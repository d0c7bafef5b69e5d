//! The `Backtrace` component captures the call stack at region begin through the sampler's
//! unwinder; it reaches sinks as `Event::Sample` with `SampleTrigger::RegionBegin(site)`, on
//! the region's thread, with or without the sampler running.

mod sampling_support;

use metron_tests::{emit_data, scenario, Scenario};
use sampling_support::{function_range, gettid, SampleLog};
use serde_json::json;
use std::hint::black_box;

#[derive(Default, metron::Bundle)]
struct WithStack {
    stack: metron::Backtrace,
}

#[inline(never)]
fn traced(n: u64) -> u64 {
    let _g = metron::scope!("traced", WithStack);
    black_box(n * 3)
}

#[inline(never)]
fn outer_caller() -> u64 {
    let mut acc = 0;
    for i in 0..10 {
        acc += traced(i);
    }
    acc
}

scenario! {
    fn scenario_backtraces() {
        let log = SampleLog::install();
        black_box(outer_caller());
        let worker = std::thread::spawn(|| {
            black_box(outer_caller());
            gettid()
        })
        .join()
        .unwrap();
        metron::flush();
        let traced_range = function_range(traced as *const () as usize);
        let outer_range = function_range(outer_caller as *const () as usize);
        let inside = |pc: u64, (lo, hi): (usize, usize)| (lo as u64..hi as u64).contains(&pc);
        let mut threads = Vec::new();
        for tid in [gettid(), worker] {
            let samples: Vec<_> = log.all().into_iter().filter(|(t, s)| *t == tid && s.trigger == "region").collect();
            let named = samples.iter().filter(|(_, s)| s.region == Some("traced")).count();
            let in_traced = samples.iter().filter(|(_, s)| inside(s.frames[0], traced_range)).count();
            let then_outer = samples.iter().filter(|(_, s)| s.frames.len() > 1 && inside(s.frames[1], outer_range)).count();
            let first = samples.first().map(|(_, s)| format!("{:x?}", s.frames)).unwrap_or_default();
            threads.push(json!({"samples": samples.len(), "named": named, "in_traced": in_traced, "then_outer": then_outer, "first": first, "traced": format!("{traced_range:x?}"), "outer": format!("{outer_range:x?}")}));
        }
        emit_data(&json!({ "threads": threads }));
    }
}

fn check(run: metron_tests::Run) {
    let data = run.data();
    println!("{data}");
    for t in data["threads"].as_array().unwrap() {
        assert_eq!(t["samples"], 10, "{t}");
        assert_eq!(t["named"], 10, "{t}");
        assert_eq!(
            t["in_traced"], 10,
            "frames[0] is the region's call site: {t}"
        );
        assert_eq!(
            t["then_outer"], 10,
            "frames[1] returns into the caller: {t}"
        );
    }
}

#[test]
fn a_backtrace_at_region_begin_names_its_region_and_the_callers() {
    check(Scenario::new("scenario_backtraces").run());
}

#[test]
fn backtraces_work_alongside_the_sampler() {
    check(
        Scenario::new("scenario_backtraces")
            .env("METRON_SAMPLING", "on")
            .run(),
    );
}
