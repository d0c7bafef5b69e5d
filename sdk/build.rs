//! Records the compiler and target this copy of Metron is built with: copies of Metron in one
//! process share Rust objects only when both match (see `shared_runtime::abi::BUILD`). Passes
//! on the name of the call-site registration symbol that metron-sinks calls (`callsite.rs`).
//! metron-sinks' build script finds all three (its `links` metadata), so that the two crates
//! never disagree about the build.

fn main() {
    for (key, var) in [
        ("RUSTC_VERSION", "METRON_BUILD_RUSTC"),
        ("TARGET", "METRON_BUILD_TARGET"),
        ("CALLSITE_SYMBOL", "METRON_CALLSITE_SYMBOL"),
    ] {
        let dep = format!("DEP_METRON_SINKS_{key}");
        println!("cargo:rerun-if-env-changed={dep}");
        let value = std::env::var(&dep)
            .unwrap_or_else(|_| panic!("metron-sinks' build script did not say {key}"));
        println!("cargo:rustc-env={var}={value}");
    }
}
