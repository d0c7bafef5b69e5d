//! Lists each GPU's PC-sampling stall reasons (`metron_gpu_nvidia::stall_reasons`), as CUPTI names
//! them, and whether a reason counts in totals (plain) or is a `_not_issued` detail.
//!
//!   cargo run --release -p metron-gpu-nvidia --example pc_stall_reasons

fn main() {
    let status = metron_gpu_nvidia::probe();
    if status.devices.is_empty() {
        println!(
            "no GPU: {}",
            status.reason.unwrap_or_else(|| "unknown".into())
        );
        return;
    }
    for d in &status.devices {
        match metron_gpu_nvidia::stall_reasons(d.index) {
            Ok(mut list) => {
                list.sort();
                println!("gpu{} {}: {} stall reasons", d.index, d.name, list.len());
                for (i, name) in list {
                    let kind = if metron_gpu_nvidia::pc_sampling::is_plain_reason(&name) {
                        "plain"
                    } else {
                        "detail"
                    };
                    println!("  {i:3} {kind:6} {name}");
                }
            }
            Err(e) => println!("gpu{} {}: none: {e}", d.index, d.name),
        }
    }
}
