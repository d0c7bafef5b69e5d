//! Records the compiler and target this copy of Metron is built with: copies of Metron in one
//! process share Rust objects only when both match (see `shared_runtime::abi::BUILD`).

use std::process::Command;

fn main() {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let version = Command::new(&rustc)
        .arg("--version")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|| "rustc (unknown version)".into());
    let target = std::env::var("TARGET").unwrap_or_else(|_| "unknown-target".into());
    println!("cargo:rustc-env=METRON_BUILD_RUSTC={version}");
    println!("cargo:rustc-env=METRON_BUILD_TARGET={target}");
    println!("cargo:rerun-if-env-changed=RUSTC");
}
