//! N kernel dispatches through Metron's AMD interception against the in-process stand-in
//! runtime, for counting Metron's instructions per dispatch under callgrind:
//! `valgrind --tool=callgrind --toggle-collect='*sys_hooks*on_packets*'
//!  --toggle-collect='*sys_hooks*on_completion*' target/release/examples/dispatch_loop 10000`

fn main() {
    let n: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(10_000);
    std::env::set_var("METRON_TRACE", "false");
    metron::init();
    metron_gpu_amd::fake_runtime::install().expect("the stand-in runtime installs");
    let _region = metron::scope!("dispatching");
    let mut written = 0;
    for _ in 0..n {
        written = std::hint::black_box(metron_gpu_amd::fake_runtime::dispatch());
    }
    println!("dispatches={written}");
}
