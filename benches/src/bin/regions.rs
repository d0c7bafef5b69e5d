//! The whole-process workload of `docs/src/performance.md` ("The back end keeps up"): one
//! thread records regions as fast as it can with Metron's defaults on, then `main` returns and
//! the process exits once Metron has written its run folder.
//!
//! ```text
//! regions pairs N    N `scope!` pairs on the main thread
//! regions names N    N regions, each under its own computed name (interned once, by id)
//! regions nested N   N regions, each holding one region with nothing inside (2N regions)
//! regions threads K N    K threads, each N `scope!` pairs (the back end's threads at work)
//! ```
//!
//! It prints how long the recording took and when `main` returned (seconds since start); the
//! caller times the whole process (`/usr/bin/time -v`: wall and peak RSS).

use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let usage = "usage: regions pairs|names|nested N, or regions threads K N";
    let mode = args.get(1).map(String::as_str).unwrap_or("pairs");
    let n: u64 = args
        .get(2)
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000_000);
    let start = Instant::now();
    match mode {
        "pairs" => {
            for _ in 0..n {
                let _r = metron::scope!("r");
            }
        }
        "nested" => {
            for _ in 0..n {
                let _outer = metron::scope!("outer");
                let _inner = metron::scope!("inner");
            }
        }
        "names" => {
            for i in 0..n {
                let id = metron::intern(&format!("name {i}"), metron::CallsiteKind::Region);
                metron::by_id::begin(id);
                metron::by_id::end(id);
            }
        }
        "threads" => {
            let k = n;
            let per: u64 = args
                .get(3)
                .and_then(|v| v.parse().ok())
                .unwrap_or(2_500_000);
            let workers: Vec<_> = (0..k)
                .map(|_| {
                    std::thread::spawn(move || {
                        for _ in 0..per {
                            let _r = metron::scope!("r");
                        }
                    })
                })
                .collect();
            for w in workers {
                w.join().expect("a recording thread");
            }
            let recorded = start.elapsed().as_secs_f64();
            println!(
                "recorded {} regions on {k} threads in {recorded:.3} s ({:.1} M regions/s)",
                k * per,
                (k * per) as f64 / recorded / 1e6
            );
            println!("main returns at {:.3} s", start.elapsed().as_secs_f64());
            return;
        }
        _ => {
            eprintln!("{usage}");
            std::process::exit(2);
        }
    }
    let recorded = start.elapsed().as_secs_f64();
    println!(
        "recorded {n} regions in {recorded:.3} s ({:.1} M regions/s)",
        n as f64 / recorded / 1e6
    );
    println!("main returns at {:.3} s", start.elapsed().as_secs_f64());
}
