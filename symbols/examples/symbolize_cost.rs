//! What naming one address costs in each module of a running process, from cold: for each
//! address given, a new `Symbolizer` for the process reads the module's symbol table (and DWARF,
//! where it has some) and names the address. For finding which modules make the end of a
//! sampled run slow (a PyTorch process maps libraries of hundreds of MB).
//!
//! Usage: symbolize_cost PID ADDR...   (addresses in hex, e.g. 0x7f12a0001000)

use metron_symbols::Symbolizer;
use std::time::Instant;

fn main() {
    let mut args = std::env::args().skip(1);
    let Some(pid) = args.next().and_then(|p| p.parse::<u32>().ok()) else {
        eprintln!("usage: symbolize_cost PID ADDR...");
        std::process::exit(2);
    };
    for text in args {
        let Ok(addr) = u64::from_str_radix(text.trim_start_matches("0x"), 16) else {
            eprintln!("not a hex address: {text}");
            continue;
        };
        let mut s = Symbolizer::for_process(pid);
        let module = s
            .module_at(addr)
            .map_or_else(|| "?".to_string(), |m| m.path.display().to_string());
        let start = Instant::now();
        let frames = s.symbolize(addr);
        let seconds = start.elapsed().as_secs_f64();
        let first = frames
            .first()
            .map_or_else(|| "-".to_string(), |f| f.function.to_string());
        println!("{seconds:8.3} s  {module}  {first}");
    }
}
