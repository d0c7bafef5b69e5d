//! Symbolization throughput against binutils `addr2line -f -i -C` on the same addresses: 4000
//! addresses spread over this benchmark binary's `.text`, every one distinct, each tool
//! starting cold (ours: a new `Symbolizer`, module list read, DWARF context built lazily;
//! binutils: a new process that reads the file). Prints the ratio at the end.

use criterion::{criterion_group, Criterion};
use metron_symbols::reference::{binutils_addr2line, text_addresses};
use metron_symbols::Symbolizer;
use std::hint::black_box;
use std::time::{Duration, Instant};

const ADDRESSES: usize = 4000;

fn setup() -> (std::path::PathBuf, Vec<u64>, u64) {
    let exe = std::env::current_exe().expect("current exe");
    let addrs = text_addresses(&exe, ADDRESSES);
    let bias = Symbolizer::new()
        .modules()
        .find(|m| m.path == std::path::Path::new("/proc/self/exe"))
        .map(|m| m.bias)
        .expect("the executable is a module");
    (exe, addrs, bias)
}

fn ours(addrs: &[u64], bias: u64) -> usize {
    let mut s = Symbolizer::new();
    addrs.iter().map(|&a| s.symbolize(a + bias).len()).sum()
}

fn bench(c: &mut Criterion) {
    let (exe, addrs, bias) = setup();
    let have_binutils = binutils_addr2line(&exe, &addrs[..1]).is_some();
    let mut g = c.benchmark_group("symbolize_4000_addresses");
    g.sample_size(10);
    g.measurement_time(Duration::from_secs(8));
    g.bench_function("metron_symbols_cold", |b| {
        b.iter(|| black_box(ours(black_box(&addrs), bias)))
    });
    if have_binutils {
        g.bench_function("binutils_addr2line", |b| {
            b.iter(|| black_box(binutils_addr2line(&exe, black_box(&addrs)).map(|r| r.len())))
        });
    }
    g.finish();

    // The ratio, measured here directly (median of 5 runs each).
    let median = |f: &mut dyn FnMut()| {
        let mut t: Vec<f64> = (0..5)
            .map(|_| {
                let s = Instant::now();
                f();
                s.elapsed().as_secs_f64()
            })
            .collect();
        t.sort_by(f64::total_cmp);
        t[2]
    };
    let mine = median(&mut || {
        black_box(ours(&addrs, bias));
    });
    if have_binutils {
        let theirs = median(&mut || {
            black_box(binutils_addr2line(&exe, &addrs));
        });
        println!(
            "symbolize {} addresses: metron-symbols {:.1} ms ({:.0} addresses/s), binutils \
             addr2line {:.1} ms ({:.0} addresses/s): ratio {:.2}x",
            addrs.len(),
            mine * 1e3,
            addrs.len() as f64 / mine,
            theirs * 1e3,
            addrs.len() as f64 / theirs,
            theirs / mine
        );
    } else {
        println!(
            "binutils addr2line not found: ours alone {:.1} ms",
            mine * 1e3
        );
    }
}

criterion_group!(benches, bench);

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
}
