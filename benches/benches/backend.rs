//! Criterion benches of the back end: what the flusher does per region once the records are in
//! a segment. Each iteration decodes one batch of 4,096 begin/end pairs (8,192 records) and
//! hands it to the sinks: none (`decode`, the decoder alone), the summary (`decode+summary`),
//! the trace (`decode+trace`: encoding, and appending the packets to a file in a temporary
//! folder), or both (`decode+summary+trace`, the defaults' work). Throughput is in regions.
//! The whole process, recording thread included, is measured in instructions by callgrind:
//! see `docs/src/performance.md` ("The back end keeps up").

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use metron::sinks::perfetto::{Categories, PerfettoConfig, PerfettoSink, TraceFillPolicy};
use metron::sinks::summary::SummarySink;
use metron::{DecodeBench, Sink};
use std::path::PathBuf;
use std::time::Duration;

const PAIRS: usize = 4096;

fn folder(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("metron-bench-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

fn trace(dir: &std::path::Path) -> Box<dyn Sink> {
    let config = PerfettoConfig {
        file_name: "trace.pftrace".into(),
        buffer_bytes: 1 << 20,
        fill_policy: TraceFillPolicy::Discard,
        categories: Categories::ALL,
        write_interval: None,
        segment_bytes: 1 << 20,
        max_file_bytes: None,
    };
    Box::new(PerfettoSink::new(config, dir.to_path_buf()))
}

fn backend(c: &mut Criterion) {
    // No runtime: the benches feed the sinks themselves.
    std::env::set_var("METRON_ENABLED", "0");
    let mut group = c.benchmark_group("backend");
    group
        .throughput(Throughput::Elements(PAIRS as u64))
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .sample_size(30);
    type Make = fn(&std::path::Path) -> Vec<Box<dyn Sink>>;
    let cases: [(&str, Make); 4] = [
        ("decode", |_| Vec::new()),
        ("decode+summary", |_| vec![Box::new(SummarySink::new())]),
        ("decode+trace", |d| vec![trace(d)]),
        ("decode+summary+trace", |d| {
            vec![Box::new(SummarySink::new()), trace(d)]
        }),
    ];
    for (name, make) in cases {
        let dir = folder(name);
        let mut bench = DecodeBench::new(make(&dir), dir.clone(), PAIRS);
        group.bench_function(name, |b| b.iter(|| bench.run()));
        drop(bench);
        let _ = std::fs::remove_dir_all(&dir);
    }
    group.finish();
}

criterion_group!(benches, backend);
criterion_main!(benches);
