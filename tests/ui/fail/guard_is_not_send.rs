fn main() {
    let guard = metron::scope!("here");
    std::thread::spawn(move || drop(guard));
}
