#![deny(unused_must_use)]

fn main() {
    metron::scope!("dropped at once");
}
