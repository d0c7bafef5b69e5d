use metron::components::WallClock;

#[derive(metron::Bundle, Default)]
struct Generic<C: metron::Component> {
    wall: WallClock,
    other: C,
}

fn main() {}
