//! Names the symbol through which this crate asks `metron` to register a call site (see
//! `callsite.rs`): it carries a fingerprint of Metron's version, the compiler and the target,
//! so that two copies of Metron built differently in one process (a static copy inside
//! another library) never call each other's registration with a `Callsite` of another layout.
//! `metron`'s build script reads the name, the compiler and the target from this crate's
//! `links` metadata.

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
    let package = std::env::var("CARGO_PKG_VERSION").unwrap_or_default();
    // FNV-1a, 64 bits: a name, not a secret.
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in format!("metron {package}; {version}; {target}").bytes() {
        hash = (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3);
    }
    // Two underscores: an implementation symbol, not part of the C API (`metron_*`), although a
    // shared library exports it.
    let symbol = format!("__metron_register_callsite_{hash:016x}");
    println!("cargo:rustc-env=METRON_CALLSITE_SYMBOL={symbol}");
    println!("cargo:callsite_symbol={symbol}");
    // For `metron`'s build script (`shared_runtime::abi::BUILD`).
    println!("cargo:rustc_version={version}");
    println!("cargo:target={target}");
    println!("cargo:rerun-if-env-changed=RUSTC");
}
