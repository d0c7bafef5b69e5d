use metron::components::WallClock;

#[derive(metron::Bundle)]
enum Either {
    Wall(WallClock),
    Nothing,
}

fn main() {}
