//! A shared object whose DWARF was moved to a separate file (`objcopy --only-keep-debug`,
//! `--add-gnu-debuglink`, as distributions ship `-dbg` packages) gets its file and line from
//! that file; with the debug file gone it falls back to its symbol table, and with no symbol
//! either to `module+offset`.
//!
//! Needs a C compiler and binutils' `objcopy` (scripts/install-deps.sh); skipped with the reason
//! printed when they are missing.

use metron_symbols::Symbolizer;
use std::ffi::CString;
use std::path::{Path, PathBuf};
use std::process::Command;

const SOURCE: &str = "\
int metron_debuglink_probe(int x) {
    return x * 3 + 1;
}

static int hidden(int x) { return x ^ 5; }
int (*metron_debuglink_hidden(void))(int) { return hidden; }
";

fn run(cmd: &mut Command) -> bool {
    cmd.status().is_ok_and(|s| s.success())
}

/// Builds `lib<name>.so` from SOURCE in `dir`, moves its DWARF to `lib<name>.so.debug` and
/// links it; with `keep_debug_file: false` the debug file is deleted afterwards, and with
/// `strip_all` the symbol table goes too (only `.dynsym` stays).
fn build(dir: &Path, name: &str, keep_debug_file: bool, strip_all: bool) -> Option<PathBuf> {
    let src = dir.join(format!("{name}.c"));
    std::fs::write(&src, SOURCE).ok()?;
    let lib = dir.join(format!("lib{name}.so"));
    let debug = dir.join(format!("lib{name}.so.debug"));
    let ok = run(Command::new("cc")
        .args(["-g", "-O1", "-shared", "-fPIC", "-o"])
        .arg(&lib)
        .arg(&src))
        && run(Command::new("objcopy")
            .arg("--only-keep-debug")
            .arg(&lib)
            .arg(&debug))
        && run(Command::new("objcopy")
            .arg(if strip_all {
                "--strip-all"
            } else {
                "--strip-debug"
            })
            .arg(format!("--add-gnu-debuglink={}", debug.display()))
            .arg(&lib));
    if !ok {
        return None;
    }
    if !keep_debug_file {
        std::fs::remove_file(&debug).ok()?;
    }
    Some(lib)
}

/// dlopens `lib` and returns the address of `symbol`.
fn load(lib: &Path, symbol: &str) -> u64 {
    let path = CString::new(lib.to_str().unwrap()).unwrap();
    // SAFETY: a NUL-terminated path; the library stays loaded (never closed).
    let handle = unsafe { libc::dlopen(path.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
    assert!(!handle.is_null(), "dlopen {}", lib.display());
    let name = CString::new(symbol).unwrap();
    // SAFETY: `handle` is a live handle; `name` is NUL-terminated.
    let addr = unsafe { libc::dlsym(handle, name.as_ptr()) } as u64;
    assert_ne!(addr, 0, "{symbol}");
    addr
}

#[test]
fn dwarf_in_a_separate_debug_file_is_found_through_the_debuglink() {
    let dir = std::env::temp_dir().join(format!("metron-debuglink-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (Some(with), Some(without), Some(bare)) = (
        build(&dir, "probe_with", true, false),
        build(&dir, "probe_without", false, false),
        build(&dir, "probe_bare", false, true),
    ) else {
        eprintln!("skipped: cc or objcopy is missing (scripts/install-deps.sh installs them)");
        return;
    };
    let a_with = load(&with, "metron_debuglink_probe");
    let a_without = load(&without, "metron_debuglink_probe");
    let hidden_bare = {
        let f = load(&bare, "metron_debuglink_hidden");
        // SAFETY: `f` is `int (*(*)(void))(int)` from the source above.
        let getter: extern "C" fn() -> extern "C" fn(i32) -> i32 =
            unsafe { std::mem::transmute(f) };
        getter() as *const () as u64
    };

    let mut s = Symbolizer::new();
    // The module has no DWARF of its own: the debuglink leads to the debug file.
    let frames = s.symbolize(a_with).to_vec();
    let f = frames.last().unwrap();
    assert_eq!(f.function, "metron_debuglink_probe", "{frames:?}");
    assert!(
        f.file
            .as_deref()
            .is_some_and(|p| p.ends_with("probe_with.c")),
        "{frames:?}"
    );
    // The function's first instruction belongs to its first line or to the `return`.
    assert!(matches!(f.line, Some(1) | Some(2)), "{frames:?}");
    assert_eq!(&*f.module, "libprobe_with.so");

    // The debug file is gone: the symbol table names the function, without a line.
    let frames = s.symbolize(a_without).to_vec();
    assert_eq!(frames.len(), 1);
    assert_eq!(frames[0].function, "metron_debuglink_probe");
    assert_eq!(frames[0].file, None);

    // Stripped of .symtab too: a static function has no name left, only module+offset.
    let frames = s.symbolize(hidden_bare).to_vec();
    let module = s.module_at(hidden_bare).expect("the module").clone();
    assert_eq!(
        frames[0].function,
        format!("libprobe_bare.so+{:#x}", hidden_bare - module.bias),
        "{frames:?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
