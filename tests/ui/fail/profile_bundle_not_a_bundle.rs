#[metron::profile(bundle = String)]
fn work() {}

fn main() {
    work();
}
