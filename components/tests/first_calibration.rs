//! The first calibration waits out its window asleep, from the reference point read earlier:
//! Metron's start-up reads only the reference, so the program's first thread no longer spins
//! 2 ms on the TSC, and the flusher, which asks for the rate first, takes no CPU from the
//! program while it waits. One test in its own binary: the calibration is process-wide.

use metron_components::clock::{self, CALIBRATION_WINDOW_NS, TICK_SOURCE};
use metron_components::{Component, ThreadCpuClock};

#[test]
fn the_first_calibration_sleeps_out_its_window_from_the_reference() {
    let (ticks0, mono0) = clock::reference();
    let mut cpu = ThreadCpuClock::default();
    cpu.start();
    let cal = *clock::calibration();
    cpu.stop();
    let waited = clock::monotonic_ns() - mono0;
    assert_eq!(
        (cal.ticks0, cal.mono0),
        (ticks0, mono0),
        "the rate is measured from the reference point"
    );
    if TICK_SOURCE != "tsc" {
        eprintln!("skipped the window's check: the ticks are {TICK_SOURCE}, no rate to measure");
        return;
    }
    assert!(
        waited >= CALIBRATION_WINDOW_NS,
        "measured after {waited} ns, before the {CALIBRATION_WINDOW_NS} ns window had passed"
    );
    // Asleep, the thread is charged a few system calls, not the window (a spin would be charged
    // all of it: the CPU time can only be less than the wall time, never more, whatever the load).
    let charged = cpu.value();
    assert!(
        charged < CALIBRATION_WINDOW_NS / 4,
        "the wait took {charged} ns of the thread's CPU time: it spun"
    );
}
