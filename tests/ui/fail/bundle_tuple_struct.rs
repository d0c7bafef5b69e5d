use metron::components::{ThreadCpuClock, WallClock};

#[derive(metron::Bundle, Default)]
struct Tuple(WallClock, ThreadCpuClock);

fn main() {}
