//! `scope!`, `begin!`, `counter!`, `mark!` and `annotate!` in their accepted forms.

use metron::components::{PageFaults, WallClock};

#[derive(metron::Bundle, Default)]
struct Faults {
    faults: PageFaults,
    wall: WallClock,
}

const NAME: &str = "from a const";

fn main() {
    let _a = metron::scope!("literal");
    let _b = metron::scope!(NAME);
    let _c = metron::scope!("with a bundle", Faults);
    let r = metron::begin!("explicit");
    let rb = metron::begin!("explicit with a bundle", Faults);
    rb.end();
    r.end();
    metron::counter!("u8", 1u8);
    metron::counter!("i64", -3i64);
    metron::counter!("f32", 0.5f32);
    metron::counter!("usize", vec![1, 2].len());
    metron::mark!("mark");
    metron::annotate!("int", 1);
    metron::annotate!("float", 2.5);
    metron::annotate!("bool", false);
    metron::annotate!("str", "text");
    let owned = String::from("owned");
    metron::annotate!("string", &owned);
}
