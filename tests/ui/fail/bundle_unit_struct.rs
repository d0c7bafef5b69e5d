#[derive(metron::Bundle, Default)]
struct Empty;

fn main() {}
