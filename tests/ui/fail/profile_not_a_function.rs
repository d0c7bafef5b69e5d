#[metron::profile]
struct NotAFunction {
    x: u32,
}

fn main() {}
