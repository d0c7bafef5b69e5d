//! A run that ends before the first rate's window has passed is converted with a rate over the
//! span it lasted ([`clock::calibration_now`]), without waiting out the window: every tick it
//! converts lies inside that span. One test in its own binary: the calibration is
//! process-wide, and no other test may have measured it first.

use metron_components::clock::{self, TICK_SOURCE};

#[test]
fn a_calibration_without_waiting_predicts_the_clock_over_its_span() {
    let (ticks0, mono0) = clock::reference();
    let mut inside = Vec::new();
    // A few paired reads inside the span, before the rate is measured.
    for _ in 0..8 {
        inside.push((clock::now_ticks(), clock::monotonic_ns()));
        std::hint::black_box(&inside);
    }
    let cal = clock::calibration_now();
    assert_eq!(
        (cal.ticks0, cal.mono0),
        (ticks0, mono0),
        "the rate is measured from the reference point"
    );
    if TICK_SOURCE != "tsc" {
        assert_eq!(cal.ns_per_tick, 1.0, "{TICK_SOURCE} ticks are nanoseconds");
        return;
    }
    assert!(
        cal.ns_per_tick > 0.01 && cal.ns_per_tick < 100.0,
        "a rate of {} ns per tick",
        cal.ns_per_tick
    );
    // Each read pair was taken one after the other (tick, then clock), so the prediction is
    // off by the pair's own gap and the reads' error: microseconds at worst, never the
    // milliseconds a wrong rate would give over a long run.
    for (ticks, mono) in inside {
        let predicted = cal.to_monotonic_ns(ticks) as i64;
        let error = predicted - mono as i64;
        assert!(
            error.abs() < 50_000,
            "ticks {ticks} predicted at {predicted} ns, read at {mono} ns"
        );
    }
    // Once the process-wide calibration exists, it is the one given.
    let measured = *clock::calibration();
    assert_eq!(clock::calibration_now(), measured);
}
