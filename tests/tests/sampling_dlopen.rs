//! A library loaded with `dlopen` after sampling started is unwound through: its code has no
//! frame pointer, so only its own CFI (picked up by the sampler's module-list rebuild) finds
//! the caller of a sample taken inside it.

mod sampling_support;

use metron_tests::{emit_data, scenario, Scenario};
use sampling_support::{function_range, gettid, SampleLog};
use serde_json::json;
use std::ffi::CString;
use std::hint::black_box;
use std::process::Command;

const HOT_C: &str = r#"
unsigned long lib_spin(unsigned long n) {
    volatile unsigned long x = 1;
    for (unsigned long i = 0; i < n; i++) x = x * 6364136223846793005UL + i;
    return x;
}
"#;

type Spin = extern "C" fn(u64) -> u64;

#[inline(never)]
fn call_lib(spin: Spin) -> u64 {
    let mut acc = 0;
    for _ in 0..200 {
        acc ^= black_box(spin(2_000_000));
    }
    acc
}

scenario! {
    fn scenario_dlopen_after_start() {
        let log = SampleLog::install();
        // Let the sampler build its first module list without the library, and arm this
        // thread: spin until its first CPU-time sample is in (on a loaded machine the sampler
        // may take longer than the library's spin below; once seen, it stays armed).
        let armed_by = std::time::Instant::now() + std::time::Duration::from_secs(20);
        while log.cpu_stacks(gettid()).is_empty() && std::time::Instant::now() < armed_by {
            let mut x = 1u64;
            for i in 0..200_000u64 {
                x = black_box(x.wrapping_mul(6364136223846793005).wrapping_add(i));
            }
            metron::flush();
        }
        let path = CString::new(std::env::var("SAMPLING_TEST_LIB").unwrap()).unwrap();
        // SAFETY: loads a library we compiled, which has no constructors; the symbol is
        // looked up by name and has the C signature of `Spin`.
        let spin: Spin = unsafe {
            let handle = libc::dlopen(path.as_ptr(), libc::RTLD_NOW);
            assert!(!handle.is_null(), "dlopen failed");
            let sym = libc::dlsym(handle, c"lib_spin".as_ptr());
            assert!(!sym.is_null());
            std::mem::transmute::<*mut libc::c_void, Spin>(sym)
        };
        black_box(call_lib(spin));
        metron::flush();
        let lib_start = spin as *const () as u64;
        let caller = function_range(call_lib as *const () as usize);
        let stacks = log.cpu_stacks(gettid());
        let in_lib: Vec<_> = stacks.iter().filter(|s| (lib_start..lib_start + 0x100).contains(&s[0])).collect();
        let through = in_lib
            .iter()
            .filter(|s| s.len() > 1 && (caller.0 as u64..caller.1 as u64).contains(&s[1]))
            .count();
        emit_data(&json!({"in_lib": in_lib.len(), "through": through, "samples": stacks.len()}));
    }
}

#[test]
fn a_library_loaded_later_is_unwound_through() {
    let dir = std::env::temp_dir().join(format!("metron-sampling-dlopen-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let source = dir.join("hot.c");
    std::fs::write(&source, HOT_C).unwrap();
    let lib = dir.join("libhot.so");
    let status = Command::new("cc")
        .args(["-shared", "-fPIC", "-O2", "-fomit-frame-pointer", "-o"])
        .arg(&lib)
        .arg(&source)
        .status();
    match status {
        Ok(s) if s.success() => {}
        other => {
            println!("SKIP: no C compiler to build the test library ({other:?})");
            return;
        }
    }
    let run = Scenario::new("scenario_dlopen_after_start")
        .env("METRON_SAMPLING", "on")
        .env("SAMPLING_TEST_LIB", lib.to_str().unwrap())
        .run();
    let data = run.data();
    println!("{data}");
    let in_lib = data["in_lib"].as_f64().unwrap();
    assert!(in_lib >= 100.0, "{data}");
    assert!(
        data["through"].as_f64().unwrap() >= 0.95 * in_lib,
        "samples inside the library unwind to its caller: {data}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
