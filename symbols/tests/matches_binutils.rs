//! Symbolization of this test binary agrees with binutils `addr2line -f -i -C` on thousands of
//! addresses spread over its `.text` (inlined frames included), and the fallbacks name what has
//! no DWARF: a libc function by its symbol, a header byte as `module+offset`, an address in no
//! module as `[unknown]+address`, and a module `dlopen`ed after the symbolizer started.

use metron_symbols::reference::{as_reference, binutils_addr2line, text_addresses, Agreement};
use metron_symbols::Symbolizer;
use std::path::PathBuf;

/// Addresses compared with binutils.
const ADDRESSES: usize = 4000;

fn exe() -> PathBuf {
    std::env::current_exe().expect("current exe")
}

fn exe_module(s: &Symbolizer) -> metron_symbols::ModuleInfo {
    s.modules()
        .find(|m| m.path == std::path::Path::new("/proc/self/exe"))
        .expect("the executable is a module")
        .clone()
}

fn binutils_present() -> bool {
    std::process::Command::new("addr2line")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

#[test]
fn symbolization_agrees_with_binutils_addr2line_on_this_binary() {
    assert!(
        binutils_present(),
        "binutils addr2line is needed (apt-get install binutils)"
    );
    let mut s = Symbolizer::new();
    let module = exe_module(&s);
    let addrs = text_addresses(&exe(), ADDRESSES);
    assert_eq!(addrs.len(), ADDRESSES);
    let ours: Vec<_> = addrs
        .iter()
        .map(|&a| as_reference(s.symbolize(a + module.bias)))
        .collect();
    let reference = binutils_addr2line(&exe(), &addrs).expect("binutils addr2line ran");
    let a = Agreement::compare(&addrs, &ours, &reference);
    let inlined_frames: usize = reference.iter().map(|r| r.len().saturating_sub(1)).sum();
    println!(
        "symbolization vs binutils addr2line: {} addresses, {} frames ({} inlined in the \
         reference): functions {:.2} % ({:.2} % compared directly), file:line {:.2} %, \
         whole addresses {:.2} %",
        a.addresses,
        a.frames,
        inlined_frames,
        a.function_pct(),
        a.function_direct_pct(),
        a.location_pct(),
        a.address_pct()
    );
    for (addr, o, r) in &a.differences {
        println!("difference at {addr:#x}:\n  ours:     {o:?}\n  binutils: {r:?}");
    }
    assert!(
        inlined_frames > 100,
        "the address set should cover inlined code"
    );
    assert!(
        a.function_pct() >= 99.0,
        "functions agree on {:.2} % of frames",
        a.function_pct()
    );
    assert!(
        a.location_pct() >= 99.0,
        "file:line agree on {:.2} % of frames",
        a.location_pct()
    );
}

#[test]
fn a_libc_function_is_named_from_the_symbol_table_when_libc_has_no_dwarf() {
    // Without separate debug files libc has no DWARF: the name comes from .dynsym/.symtab.
    let mut s = Symbolizer::new().separate_debug_files(false);
    let addr = libc::getpid as *const () as usize as u64;
    let frames = s.symbolize(addr).to_vec();
    assert_eq!(frames.len(), 1, "{frames:?}");
    assert!(frames[0].module.starts_with("libc.so"), "{frames:?}");
    assert!(frames[0].function.contains("getpid"), "{frames:?}");
    assert_eq!(frames[0].file, None);
    // With them (libc6-dbg installed), the same address gets a file and line too.
    let mut s = Symbolizer::new();
    let frames = s.symbolize(addr).to_vec();
    assert!(
        frames.last().unwrap().function.contains("getpid"),
        "{frames:?}"
    );
    if s.stats().modules_with_dwarf > 0 {
        assert!(frames.last().unwrap().file.is_some(), "{frames:?}");
    }
}

#[test]
fn an_address_without_a_symbol_is_module_plus_offset() {
    let mut s = Symbolizer::new();
    let module = exe_module(&s);
    // The ELF header: mapped, in the executable, no function there.
    let start = module.segments.iter().map(|s| s.0).min().unwrap();
    let frames = s.symbolize(start).to_vec();
    assert_eq!(frames.len(), 1);
    assert_eq!(
        frames[0].function,
        format!("{}+{:#x}", module.name, start - module.bias)
    );
    // A heap address is in no module.
    let heap = Box::new(7u64);
    let addr = &*heap as *const u64 as u64;
    let frames = s.symbolize(addr).to_vec();
    assert_eq!(frames[0].function, format!("[unknown]+{addr:#x}"));
    assert_eq!(&*frames[0].module, "[unknown]");
}

#[test]
fn a_module_loaded_after_the_symbolizer_started_is_found() {
    let mut s = Symbolizer::new();
    let candidates = [
        "libz.so.1",
        "libbz2.so.1.0",
        "liblzma.so.5",
        "libexpat.so.1",
        "libffi.so.8",
    ];
    let loaded: Vec<String> = s.modules().map(|m| m.name.to_string()).collect();
    let Some(lib) = candidates.iter().find(|c| !loaded.iter().any(|l| l == *c)) else {
        panic!("none of {candidates:?} is available to dlopen");
    };
    let name = std::ffi::CString::new(*lib).unwrap();
    // SAFETY: a NUL-terminated library name; the handle is never closed (the library stays).
    let handle = unsafe { libc::dlopen(name.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
    if handle.is_null() {
        eprintln!("skipped: {lib} could not be dlopen'ed here");
        return;
    }
    let symbol = match *lib {
        "libz.so.1" => "zlibVersion",
        "libbz2.so.1.0" => "BZ2_bzlibVersion",
        "liblzma.so.5" => "lzma_version_string",
        "libexpat.so.1" => "XML_ExpatVersion",
        _ => "ffi_call",
    };
    let cname = std::ffi::CString::new(symbol).unwrap();
    // SAFETY: `handle` is a live handle from dlopen; `cname` is NUL-terminated.
    let addr = unsafe { libc::dlsym(handle, cname.as_ptr()) } as u64;
    assert_ne!(addr, 0);
    let frames = s.symbolize(addr).to_vec();
    assert_eq!(&*frames[0].module, *lib, "{frames:?}");
    assert!(
        frames.last().unwrap().function.contains(symbol),
        "{frames:?}"
    );
    assert_eq!(s.stats().rescans, 1);
}
