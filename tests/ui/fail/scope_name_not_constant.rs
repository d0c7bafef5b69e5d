fn main() {
    let name = format!("region {}", 1);
    let _g = metron::scope!(&name);
}
