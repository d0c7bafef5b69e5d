//! N kernel dispatches through Metron's AMD interception against the in-process stand-in
//! runtime, for counting Metron's instructions per dispatch under callgrind:
//! `valgrind --tool=callgrind --toggle-collect='*sys_hooks*on_packets*'
//!  --toggle-collect='*sys_hooks*on_completion*' target/release/examples/dispatch_loop 10000`
//!
//! With `api` after N, it makes N traced HSA API calls instead (`hsa_signal_store_relaxed`
//! through the table, selected by `METRON_GPU_AMD_HSA_API`):
//! `valgrind --tool=callgrind --toggle-collect='*sys_api_trace*hsa_signal_store_relaxed*'
//!  target/release/examples/dispatch_loop 10000 api`

fn main() {
    let n: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(10_000);
    let api = std::env::args().nth(2).as_deref() == Some("api");
    // Metron reads METRON_TRACE before main (its runtime starts from a constructor): set it and
    // run again once.
    if std::env::var_os("METRON_TRACE").is_none() {
        use std::os::unix::process::CommandExt;
        let err = std::process::Command::new(std::env::current_exe().expect("own path"))
            .args(std::env::args_os().skip(1))
            .env("METRON_TRACE", "false")
            .exec();
        panic!("cannot re-execute with METRON_TRACE=false: {err}");
    }
    std::env::set_var("METRON_GPU_AMD_HSA_API", "hsa_signal_store_relaxed");
    metron::init();
    metron_gpu_amd::fake_runtime::install().expect("the stand-in runtime installs");
    let _region = metron::scope!("dispatching");
    if api {
        for i in 0..n {
            metron_gpu_amd::fake_runtime::signal_store_relaxed(1, std::hint::black_box(i as i64));
        }
        println!("api_calls={n}");
        return;
    }
    let mut written = 0;
    for _ in 0..n {
        written = std::hint::black_box(metron_gpu_amd::fake_runtime::dispatch());
    }
    println!("dispatches={written}");
}
