#[metron::profile(name = "ok", level = 3)]
fn work() {}

fn main() {
    work();
}
