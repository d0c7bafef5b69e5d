//! Helpers of the C API and CLI tests: build `libmetron` and `metron` with the same cargo
//! profile and target folder as the running test, compile C programs against them, run them,
//! and read their run folders.
#![allow(dead_code)]

use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

/// Where the built artifacts are.
pub struct Artifacts {
    /// `target/<profile>`: libmetron.so, libmetron.a and the metron binary.
    pub dir: PathBuf,
    /// `user-api/include`.
    pub include: PathBuf,
    /// The workspace root.
    pub root: PathBuf,
    /// `--release` when the tests run in release.
    pub release: bool,
}

impl Artifacts {
    pub fn lib(&self) -> PathBuf {
        self.dir.join("libmetron.so")
    }
    pub fn metron(&self) -> PathBuf {
        self.dir.join("metron")
    }
    pub fn target_dir(&self) -> PathBuf {
        self.dir
            .parent()
            .expect("profile dir has a parent")
            .to_path_buf()
    }
}

/// Builds `metron-user` and `metron-cli` once per test binary (cargo's lock serialises
/// concurrent test binaries).
pub fn artifacts() -> &'static Artifacts {
    static BUILT: OnceLock<Artifacts> = OnceLock::new();
    BUILT.get_or_init(|| {
        let exe = std::env::current_exe().expect("test exe");
        let dir = exe
            .parent()
            .and_then(Path::parent)
            .expect("target/<profile>/deps/<test>")
            .to_path_buf();
        let release = dir.file_name().is_some_and(|n| n == "release");
        let root = Path::new(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .expect("workspace root")
            .to_path_buf();
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let mut build = Command::new(cargo);
        build
            .current_dir(&root)
            .args(["build", "--quiet", "-p", "metron-user", "-p", "metron-cli"])
            .env("CARGO_TARGET_DIR", dir.parent().unwrap());
        if release {
            build.arg("--release");
        }
        let out = build.output().expect("run cargo build");
        assert!(
            out.status.success(),
            "cargo build of metron-user and metron-cli failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        Artifacts {
            dir,
            include: root.join("user-api/include"),
            root,
            release,
        }
    })
}

/// A fresh, empty folder under the system temp dir.
pub fn temp_dir(name: &str) -> PathBuf {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(0);
    let dir = std::env::temp_dir().join(format!(
        "metron-test-{name}-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create temp dir");
    dir
}

/// Compiles C (`.c`) or C++ (`.cpp`) `source` against libmetron.so with warnings as errors;
/// returns the executable.
pub fn compile(source: &Path, out_dir: &Path, extra: &[&str]) -> PathBuf {
    let a = artifacts();
    let cpp = source.extension().is_some_and(|e| e == "cpp");
    let exe = out_dir.join(source.file_stem().unwrap());
    let mut cc = Command::new(if cpp { "c++" } else { "cc" });
    cc.arg(if cpp { "-std=c++17" } else { "-std=c99" })
        .args(["-Wall", "-Wextra", "-Werror", "-pedantic", "-O1", "-g"])
        .arg("-D_DEFAULT_SOURCE")
        .arg("-I")
        .arg(&a.include)
        .args(extra)
        .arg(source)
        .arg("-o")
        .arg(&exe)
        .arg(format!("-L{}", a.dir.display()))
        .arg(format!("-Wl,-rpath,{}", a.dir.display()))
        .args(["-lmetron", "-lpthread"]);
    let out = cc.output().expect("run the C compiler");
    assert!(
        out.status.success(),
        "compiling {} failed:\n{}",
        source.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    exe
}

/// A test program of `tests/tests/c_api_programs/`.
pub fn program(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/c_api_programs")
        .join(name)
}

/// Runs `exe` with its run folder at `out/run` (`METRON_TRACE` off to keep it quick).
pub fn run_in(exe: &Path, out: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(exe);
    cmd.args(args)
        .env("METRON_OUTPUT_PATH", out.join("run"))
        .env("METRON_TRACE", "false")
        .env_remove("METRON_PRELOAD")
        .env_remove("LD_PRELOAD");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("run the program")
}

/// Reads `file` (JSON) of a run folder.
pub fn read_json(dir: &Path, file: &str) -> Value {
    let path = dir.join(file);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()))
}

/// Region path ("a/b/c") → count, from a `regions` or `merged` array of summary.json.
pub fn region_counts(nodes: &Value) -> BTreeMap<String, u64> {
    fn walk(nodes: &Value, prefix: &str, out: &mut BTreeMap<String, u64>) {
        for n in nodes.as_array().into_iter().flatten() {
            let path = format!("{prefix}{}", n["name"].as_str().unwrap_or("?"));
            *out.entry(path.clone()).or_default() += n["count"].as_u64().unwrap_or(0);
            walk(&n["children"], &format!("{path}/"), out);
        }
    }
    let mut out = BTreeMap::new();
    walk(nodes, "", &mut out);
    out
}

/// `[("a", 1), ...]` as a map, for comparisons.
pub fn counts(pairs: &[(&str, u64)]) -> BTreeMap<String, u64> {
    pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
}

/// Every run folder directly under `dir`.
pub fn run_folders(dir: &Path) -> Vec<PathBuf> {
    let mut all: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .map(|e| e.path())
                .filter(|p| p.is_dir())
                .collect()
        })
        .unwrap_or_default();
    all.sort();
    all
}

/// Fails with the program's output when it did not exit 0.
pub fn assert_success(out: &Output, what: &str) {
    assert!(
        out.status.success(),
        "{what} failed ({:?}):\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Links `source` (C or C++) with `libmetron.a`; extra arguments go before the library.
pub fn compile_static(source: &Path, out: &Path, extra: &[&str]) -> PathBuf {
    let a = artifacts();
    let cpp = source.extension().is_some_and(|e| e == "cpp");
    let mut cc = Command::new(if cpp { "c++" } else { "cc" });
    cc.arg(if cpp { "-std=c++17" } else { "-std=c99" })
        .args(["-Wall", "-Wextra", "-Werror", "-O1", "-g", "-fPIC"])
        .arg("-I")
        .arg(&a.include)
        .args(extra)
        .arg(source)
        .arg("-o")
        .arg(out)
        .arg(a.dir.join("libmetron.a"))
        .args([
            "-lstdc++",
            "-lgcc_s",
            "-lutil",
            "-lrt",
            "-lpthread",
            "-lm",
            "-ldl",
        ]);
    let result = cc.output().expect("run the compiler");
    assert!(
        result.status.success(),
        "compiling {} with libmetron.a failed:\n{}",
        source.display(),
        String::from_utf8_lossy(&result.stderr)
    );
    out.to_path_buf()
}
