//! Gives libmetron.so its soname, so programs linked against it by full path (CMake) record
//! `libmetron.so` as the library they need, found through the rpath or `LD_LIBRARY_PATH`.
fn main() {
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libmetron.so");
    println!("cargo:rerun-if-changed=build.rs");
}
