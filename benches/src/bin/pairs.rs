//! Instruction-count harness: `pairs <impl> <n> [work]` runs `n` begin/end pairs of one
//! implementation (in chunks, with the implementation's housekeeping between chunks) and
//! exits.
//!
//! `pairs compare <impl> <rounds> [work]` times `<impl>` against the bare floor (`floor`) in
//! interleaved chunks, round after round, and prints the median ns per pair of each and their
//! ratio: on a shared machine, load that comes and goes hits both alike, unlike in two
//! separate criterion benches. `scripts/bench-callgrind.sh` runs it under callgrind with two values of `n` and
//! divides the difference of the counts by the difference of `n`, which cancels every setup
//! cost exactly. The hot path is the inclusive cost of `Impl::run_chunk` (or
//! `Impl::run_work_chunk` with `work`); the whole program's count adds the housekeeping and the
//! background threads (flushers, collectors).

use metron_benches::Impl;

fn main() {
    // METRON_ENABLED is read before main: the env-off row runs with it in the environment.
    let env_off = Some(Impl::MetronEnvOff.name());
    if std::env::args().nth(1).as_deref() == env_off
        || std::env::args().nth(2).as_deref() == env_off
    {
        metron_benches::configure_env_with(&[("METRON_ENABLED", "0")]);
    }
    metron_benches::configure_env();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage = || {
        let names: Vec<&str> = Impl::ALL.iter().map(|i| i.name()).collect();
        eprintln!("usage: pairs <impl> <n> [work]\nimpl: {}", names.join(", "));
        std::process::exit(2);
    };
    if args.len() < 2 {
        usage();
    }
    if args[0] == "compare" {
        let (Some(imp), Ok(rounds)) = (
            args.get(1).and_then(|a| Impl::parse(a)),
            args.get(2).map_or(Ok(200), |a| a.parse::<usize>()),
        ) else {
            usage();
            return;
        };
        compare(imp, rounds, args.get(3).is_some_and(|a| a == "work"));
        return;
    }
    let Some(imp) = Impl::parse(&args[0]) else {
        usage();
        return;
    };
    let Ok(n) = args[1].parse::<u64>() else {
        usage();
        return;
    };
    let work = args.get(2).is_some_and(|a| a == "work");
    imp.setup();
    let elapsed = if work {
        imp.run_work_timed(n)
    } else {
        imp.run_timed(n)
    };
    imp.teardown();
    eprintln!(
        "pairs: {} x {n}{}: {:.2} ns/pair",
        imp.name(),
        if work { " around work" } else { "" },
        elapsed.as_nanos() as f64 / n.max(1) as f64
    );
}

/// Times `imp` and the floor in interleaved chunks; prints the medians and their ratio.
fn compare(imp: Impl, rounds: usize, work: bool) {
    // One chunk of `imp` per timing (the floor runs the same count).
    let pairs = imp.chunk();
    let floor = Impl::Floor;
    imp.setup();
    let time = |i: Impl| {
        let d = if work {
            i.run_work_timed(pairs)
        } else {
            i.run_timed(pairs)
        };
        d.as_nanos() as f64 / pairs as f64
    };
    // Warm-up: first records, page faults, caches.
    for _ in 0..10 {
        time(floor);
        time(imp);
    }
    let mut a = Vec::with_capacity(rounds);
    let mut b = Vec::with_capacity(rounds);
    let mut bare = Vec::with_capacity(rounds);
    for _ in 0..rounds {
        a.push(time(floor));
        b.push(time(imp));
        if work {
            bare.push(Impl::run_bare_work_timed(pairs).as_nanos() as f64 / pairs as f64);
        }
    }
    imp.teardown();
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let (ma, mb) = (mean(&a), mean(&b));
    let (fa, fb) = (median(&mut a), median(&mut b));
    let p90 = |v: &[f64]| v[v.len() * 9 / 10];
    if work {
        let fw = median(&mut bare);
        println!(
            "around work: bare {fw:.2} ns, floor {fa:.2} ns ({:+.2}), {} {fb:.2} ns ({:+.2})",
            fa - fw,
            imp.name(),
            fb - fw
        );
    } else {
        println!(
            "floor {fa:.2} ns/pair, {} {fb:.2} ns/pair, ratio {:.3} (medians of {rounds} interleaved chunks of {pairs}; means {ma:.2} and {mb:.2}, ratio {:.3}; p90 {:.2} and {:.2})",
            imp.name(),
            fb / fa,
            mb / ma,
            p90(&a),
            p90(&b)
        );
    }
}
