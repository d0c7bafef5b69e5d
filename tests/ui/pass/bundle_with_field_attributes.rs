//! A bundle of several components, with every field attribute.

use metron::components::{
    ContextSwitches, CpuClock, PageFaults, PageRss, PeakRss, SystemClock, ThreadCpuClock,
    UserClock, WallClock,
};
use metron::Bundle;

#[derive(metron::Bundle, Default)]
pub struct Everything {
    wall: WallClock,
    cpu: CpuClock,
    #[bundle(no_start)]
    thread_cpu: ThreadCpuClock,
    #[bundle(no_stop)]
    user: UserClock,
    #[bundle(no_sample)]
    system: SystemClock,
    #[bundle(no_start, no_stop)]
    faults: PageFaults,
    #[bundle(no_start)]
    #[bundle(no_sample)]
    switches: ContextSwitches,
    peak: PeakRss,
    rss: PageRss,
}

fn main() {
    // 9 components, 11 fields.
    assert_eq!(Everything::COMPONENTS.len(), 9);
    assert_eq!(Everything::WORDS, 11);
    assert_eq!(Everything::COMPONENTS[5].name, "page_faults");
    let mut b = Everything::default();
    b.start();
    b.stop();
    b.sample();
    let mut out = [0.0; 11];
    b.write_fields(&mut out);
    let _g = metron::scope!("with everything", Everything);
}
