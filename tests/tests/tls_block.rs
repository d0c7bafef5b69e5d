//! `libmetron.so`'s thread-local block stays small enough that glibc gives it static TLS when
//! it is `dlopen`ed (as NVTX's injection does): the NVTX and C fast paths then reach their
//! per-thread state with a 2-instruction TLS descriptor resolution instead of the 17 of glibc's
//! dynamic resolver (`user-api/src/thread_block.rs`, `docs/src/performance.md`).
mod c_api_support;

use c_api_support::*;
use object::read::elf::ProgramHeader;
use std::process::Command;

/// glibc's spare static TLS for `dlopen`ed libraries (`glibc.rtld.optional_static_tls`, 512
/// bytes by default), less room for alignment and for another library that got there first.
const BUDGET: u64 = 480;

#[test]
fn the_thread_local_block_fits_the_spare_static_tls() {
    let lib = artifacts().lib();
    let data = std::fs::read(&lib).expect("read libmetron.so");
    let file = object::File::parse(&*data).expect("parse libmetron.so");
    let object::File::Elf64(elf) = &file else {
        panic!("libmetron.so is not a 64-bit ELF file");
    };
    let endian = elf.endian();
    let tls = elf
        .elf_program_headers()
        .iter()
        .find(|p| p.p_type(endian) == object::elf::PT_TLS)
        .map(|p| p.p_memsz(endian))
        .expect("a PT_TLS segment");
    assert!(
        tls <= BUDGET,
        "libmetron.so's thread-local block is {tls} bytes, over the {BUDGET} that keep it in \
         glibc's spare static TLS when it is dlopen'ed: keep large per-thread state on the \
         heap (user-api/src/thread_block.rs) or box it (list them with \
         `readelf -sW libmetron.so | awk '$4==\"TLS\"' | sort -k3 -n`)"
    );
}

#[test]
fn a_dlopened_libmetron_gets_static_tls() {
    let dir = temp_dir("static-tls");
    let exe = dir.join("static_tls");
    let out = Command::new("cc")
        .args(["-std=c99", "-Wall", "-Wextra", "-Werror", "-O1"])
        .arg(program("static_tls.c"))
        .arg("-o")
        .arg(&exe)
        .args(["-ldl", "-lpthread"])
        .output()
        .expect("run the C compiler");
    assert_success(&out, "compiling static_tls.c");
    let lib = artifacts().lib().display().to_string();
    let out = run_in(&exe, &dir, &[&lib], &[]);
    assert_success(&out, "static_tls");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("static_tls=1"),
        "glibc gave the dlopen'ed libmetron.so dynamic TLS: {stdout}"
    );
}
