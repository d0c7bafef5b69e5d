use metron::components::WallClock;

#[derive(metron::Bundle, Default)]
struct Bad {
    wall: WallClock,
    count: u64,
}

fn main() {}
