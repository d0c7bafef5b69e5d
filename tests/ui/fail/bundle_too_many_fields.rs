use metron::components::{ContextSwitches, PageFaults};

// 17 components of 2 fields: 34 f64 values, more than one record holds (32).
#[derive(metron::Bundle, Default)]
struct Huge {
    a: PageFaults,
    b: PageFaults,
    c: PageFaults,
    d: PageFaults,
    e: PageFaults,
    f: PageFaults,
    g: PageFaults,
    h: PageFaults,
    i: ContextSwitches,
    j: ContextSwitches,
    k: ContextSwitches,
    l: ContextSwitches,
    m: ContextSwitches,
    n: ContextSwitches,
    o: ContextSwitches,
    p: ContextSwitches,
    q: ContextSwitches,
}

fn main() {}
