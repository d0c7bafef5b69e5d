//! Criterion benches of the `PerfCounters` component: one start/stop pair (two reads of each
//! of the thread's perf groups), for one software group and for the default three software
//! events (which need two groups: task-clock alone, the others together), against the
//! `getrusage` components that count the same things.

use criterion::{criterion_group, criterion_main, Criterion};
use metron::components::perf::{self, parse_list};
use metron::components::{ContextSwitches, PageFaults, PerfCounters};
use metron::Component;

fn pair<C: Component>(c: &mut C) {
    c.start();
    c.stop();
    std::hint::black_box(c.value());
}

fn components(c: &mut Criterion) {
    // The configuration is per process: the three default software events.
    let (events, errors) = parse_list(perf::DEFAULT_EVENTS);
    let config = perf::configure(events, errors);
    let mut group = c.benchmark_group("component_pair");
    if config.events.is_empty() {
        println!(
            "SKIPPED perf_counters: no perf event opens here: {:?}",
            config.messages()
        );
    } else {
        let mut perf = PerfCounters::default();
        group.bench_function(
            "perf_counters(task-clock,page-faults,context-switches)",
            |b| b.iter(|| pair(&mut perf)),
        );
    }
    let mut faults = PageFaults::default();
    group.bench_function("page_faults(getrusage)", |b| b.iter(|| pair(&mut faults)));
    let mut switches = ContextSwitches::default();
    group.bench_function("context_switches(getrusage)", |b| {
        b.iter(|| pair(&mut switches))
    });
    group.finish();
}

criterion_group!(benches, components);
criterion_main!(benches);
