//! Checking Metron's hand-written FFI layouts against real C headers: a C or C++ program
//! compiled with the headers prints one value per C expression (`offsetof`, `sizeof`, a
//! constant), and each must equal Metron's.

use std::path::Path;
use std::process::Command;

/// The C expression for a layout entry: `"sizeof T"`, `"STRUCT_SIZE T"` (`T_STRUCT_SIZE`),
/// `"PARAMS_SIZE T"` (`TSize`, as cupti_pcsampling.h names them) or `"T.field"`
/// (`offsetof(T, field)`; a nested `field.member` works in C++).
pub fn layout_expr(name: &str) -> String {
    if let Some(ty) = name.strip_prefix("sizeof ") {
        format!("sizeof({ty})")
    } else if let Some(ty) = name.strip_prefix("STRUCT_SIZE ") {
        format!("{ty}_STRUCT_SIZE")
    } else if let Some(ty) = name.strip_prefix("PARAMS_SIZE ") {
        format!("{ty}Size")
    } else {
        let (ty, field) = name.split_once('.').expect("Struct.field");
        format!("offsetof({ty}, {field})")
    }
}

/// Compiles `prelude` (the includes) and a `main` printing each of `exprs`, runs it, and
/// returns the values; `Err` with a reason to skip when no compiler exists.
pub fn print_values(
    tag: &str,
    prelude: &str,
    exprs: &[String],
    include: &Path,
    cpp: bool,
) -> Result<Vec<u64>, String> {
    let mut c = format!("#include <stdio.h>\n#include <stddef.h>\n{prelude}\nint main(void){{\n");
    for e in exprs {
        c.push_str(&format!(
            "printf(\"%llu\\n\", (unsigned long long)({e}));\n"
        ));
    }
    c.push_str("return 0;}\n");
    let stdout = compile_and_run(tag, &c, include, cpp)?;
    let values: Vec<u64> = stdout.lines().map(|l| l.trim().parse().unwrap()).collect();
    assert_eq!(values.len(), exprs.len());
    Ok(values)
}

/// Compiles the whole program `source` against the headers in `include`, runs it, and returns
/// what it printed; `Err` with a reason to skip when no compiler exists.
pub fn compile_and_run(
    tag: &str,
    source: &str,
    include: &Path,
    cpp: bool,
) -> Result<String, String> {
    let dir = std::env::temp_dir().join(format!("metron-headers-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let src = dir.join(if cpp { "program.cpp" } else { "program.c" });
    let exe = dir.join("program");
    std::fs::write(&src, source).unwrap();
    let compiler = if cpp {
        std::env::var("CXX").unwrap_or_else(|_| "c++".into())
    } else {
        std::env::var("CC").unwrap_or_else(|_| "cc".into())
    };
    let out = Command::new(&compiler)
        .arg("-I")
        .arg(include)
        .arg(&src)
        .arg("-o")
        .arg(&exe)
        .output()
        .map_err(|_| format!("no C/C++ compiler ({compiler})"))?;
    assert!(
        out.status.success(),
        "compiling against {}: {}",
        include.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let run = Command::new(&exe).output().unwrap();
    assert!(run.status.success(), "{} failed", exe.display());
    let _ = std::fs::remove_dir_all(&dir);
    Ok(String::from_utf8_lossy(&run.stdout).into_owned())
}

/// Asserts each of Metron's values equals the header's, naming the first that differs.
pub fn assert_same(ours: &[(&str, u64)], theirs: &[u64], headers: &str) {
    for ((name, ours), theirs) in ours.iter().zip(theirs) {
        assert_eq!(
            ours, theirs,
            "{name}: Metron assumes {ours}, {headers} says {theirs}"
        );
    }
}
