use metron::components::{PageFaults, WallClock};

#[derive(metron::Bundle, Default)]
struct Unknown {
    wall: WallClock,
    #[bundle(no_start, skip_stop)]
    faults: PageFaults,
}

fn main() {}
