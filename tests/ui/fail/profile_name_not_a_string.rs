#[metron::profile(name = work)]
fn work() {}

fn main() {
    work();
}
