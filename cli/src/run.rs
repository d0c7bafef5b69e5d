//! `metron run [flags] [--] cmd args`.

use metron::settings::{SettingSpec, Settings, REGISTRY};
use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// The C ABI version of the runtime library this command expects.
pub(crate) const ABI_VERSION: u32 = 1;

/// Settings that `metron run` sets itself (no flag).
const NOT_FLAGS: &[&str] = &["METRON_PRELOAD"];

/// The flag of a setting: `METRON_BUFFER_SIZE` → `--buffer-size`.
pub(crate) fn flag_of(name: &str) -> String {
    format!(
        "--{}",
        name.trim_start_matches("METRON_")
            .to_ascii_lowercase()
            .replace('_', "-")
    )
}

fn flag_settings() -> impl Iterator<Item = &'static SettingSpec> {
    REGISTRY.iter().filter(|s| !NOT_FLAGS.contains(&s.name))
}

fn help() -> String {
    let mut text = String::from(
        "\
Usage: metron run [flags] [--] <command> [args...]

Runs <command> with Metron preloaded (LD_PRELOAD=libmetron.so, METRON_PRELOAD=1). The program
needs no change: its run folder has its process, main thread and duration, plus every region
it records through Metron, and its NVTX markers (NVTX_INJECTION64_PATH=libmetron.so, unless
already set) and ROCTx markers, and in processes that use CUDA their kernels, copies and CUDA API
calls through CUPTI (CUDA_INJECTION64_PATH=libmetron.so, unless already set), and in processes
that use ROCm their kernel dispatches, async copies and HSA calls (HSA_TOOLS_LIB, Metron added
to the list). The command runs as a child and `metron run` waits for its whole process
tree, which writes one run folder (each process in a folder of its own inside it;
METRON_PROCESSES=separate: the command replaces this process and each program writes its own
folder); a forked child that does not exec is turned off (METRON_FORK). The exit status is
the command's.

Flags (each sets the METRON_* variable in brackets; `--flag value` or `--flag=value`):
  -o, --output <path>             same as --output-path
      --library <path>            the runtime library (default: next to this command, or
                                  $METRON_LIBRARY)
      --passes <auto|N>           run the command once per hardware-counter pass (auto: as
                                  many as METRON_PERF_EVENTS/METRON_METRICS need) and merge
                                  the runs into one summary.json plus passes.json
      --sample                    sample every thread's call stack (same as --sampling on;
                                  see also `metron sample --help`)
      --exclude <regex>           same as --functions-exclude
      --min-instructions <n|auto> same as --functions-min-instructions
",
    );
    for spec in flag_settings() {
        text.push_str(&format!(
            "      {:<30}  {} [{}, default {}]\n          accepts {}\n",
            format!("{} <value>", flag_of(spec.name)),
            spec.description,
            spec.name,
            spec.default,
            spec.kind.accepted()
        ));
    }
    text.push_str(
        "
Examples:
  metron run -- ./app input.txt
  metron run --output-path /tmp/runs/%exe%-%pid% --buffer-size 4M -- python3 -c 'print(1)'
  metron run --signals on -- ./server        # write the outputs on Ctrl-C too
  metron run --functions '^(solve|fib)$' -- ./app   # each call of solve and fib a region
",
    );
    text
}

/// What the command line asked for.
struct Plan {
    env: Vec<(&'static str, String)>,
    library: Option<PathBuf>,
    /// `--passes auto|N`: run the command once per counter pass and merge.
    passes: Option<String>,
    command: Vec<OsString>,
}

fn parse(args: &[String]) -> Result<Option<Plan>, String> {
    let mut plan = Plan {
        env: Vec::new(),
        library: None,
        passes: None,
        command: Vec::new(),
    };
    let mut i = 0;
    while i < args.len() {
        let arg = &args[i];
        if arg == "--" {
            plan.command = args[i + 1..].iter().map(OsString::from).collect();
            break;
        }
        if arg == "-h" || arg == "--help" {
            return Ok(None);
        }
        if !arg.starts_with('-') || arg == "-" {
            plan.command = args[i..].iter().map(OsString::from).collect();
            break;
        }
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f.to_string(), Some(v.to_string())),
            _ => (arg.clone(), None),
        };
        let value = |i: &mut usize| -> Result<String, String> {
            if let Some(v) = &inline {
                return Ok(v.clone());
            }
            *i += 1;
            args.get(*i)
                .cloned()
                .ok_or_else(|| format!("metron run: {flag} needs a value"))
        };
        match flag.as_str() {
            "-o" | "--output" => {
                let v = value(&mut i)?;
                plan.env.push(("METRON_OUTPUT_PATH", v));
            }
            "--library" => plan.library = Some(PathBuf::from(value(&mut i)?)),
            "--passes" => plan.passes = Some(value(&mut i)?),
            // Short for `--sampling on` (what `metron sample` does).
            "--sample" => plan.env.push(("METRON_SAMPLING", "on".into())),
            // The short spellings of rocprof-sys-instrument and uftrace, beside `--functions`.
            "--exclude" | "--min-instructions" => {
                let name = if flag == "--exclude" {
                    "METRON_FUNCTIONS_EXCLUDE"
                } else {
                    "METRON_FUNCTIONS_MIN_INSTRUCTIONS"
                };
                let spec = flag_settings()
                    .find(|s| s.name == name)
                    .expect("registered setting");
                let v = value(&mut i)?;
                check(spec, &flag, &v)?;
                plan.env.push((spec.name, v));
            }
            _ => {
                let Some(spec) = flag_settings().find(|s| flag_of(s.name) == flag) else {
                    return Err(format!(
                        "metron run: unknown flag {flag}; run `metron run --help` for the flags (put the command after --)"
                    ));
                };
                let v = value(&mut i)?;
                check(spec, &flag, &v)?;
                plan.env.push((spec.name, v));
            }
        }
        i += 1;
    }
    if plan.command.is_empty() {
        return Err(
            "metron run: no command given; usage: metron run [flags] -- <command> [args...]".into(),
        );
    }
    Ok(Some(plan))
}

/// Checks a flag's value with the registry's own parser.
fn check(spec: &SettingSpec, flag: &str, value: &str) -> Result<(), String> {
    let parsed = Settings::from_lookup(|name| (name == spec.name).then(|| value.to_string()));
    match parsed.errors.iter().find(|e| e.name == spec.name) {
        Some(e) => Err(format!(
            "metron run: {flag} {value:?} is not accepted: expected {} ({})",
            e.accepted, spec.name
        )),
        None if value.trim().is_empty() => Err(format!(
            "metron run: {flag} needs a non-empty value: {} ({})",
            spec.kind.accepted(),
            spec.name
        )),
        None => Ok(()),
    }
}

/// Finds `libmetron.so`: `--library`, `$METRON_LIBRARY`, then next to this command
/// (`<prefix>/bin/metron` → `<prefix>/lib/libmetron.so`; a cargo target dir has both in one
/// folder).
fn find_library(explicit: Option<PathBuf>) -> Result<PathBuf, String> {
    if let Some(path) = explicit.or_else(|| std::env::var_os("METRON_LIBRARY").map(PathBuf::from)) {
        return if path.is_file() {
            Ok(absolute(&path))
        } else {
            Err(format!(
                "metron run: the runtime library {} does not exist",
                path.display()
            ))
        };
    }
    let exe = std::env::current_exe().map_err(|e| format!("metron run: {e}"))?;
    let dir = exe.parent().unwrap_or(Path::new("."));
    let candidates = [
        dir.join("../lib/libmetron.so"),
        dir.join("libmetron.so"),
        dir.join("../lib64/libmetron.so"),
    ];
    for c in &candidates {
        if c.is_file() {
            return Ok(absolute(c));
        }
    }
    Err(format!(
        "metron run: cannot find libmetron.so (looked in {}); install Metron with scripts/install.sh, or pass --library PATH or set METRON_LIBRARY",
        candidates
            .iter()
            .map(|c| c.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    ))
}

fn absolute(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
}

pub(crate) fn main(args: &[String]) -> ExitCode {
    let plan = match parse(args) {
        Ok(Some(plan)) => plan,
        Ok(None) => {
            print!("{}", help());
            return ExitCode::SUCCESS;
        }
        Err(message) => {
            eprintln!("{message}");
            return ExitCode::from(crate::USAGE);
        }
    };
    let library = match find_library(plan.library) {
        Ok(path) => path,
        Err(message) => {
            eprintln!("{message}");
            return ExitCode::from(1);
        }
    };
    // A command that cannot be started leaves nothing behind (no empty `metron-output/`).
    if let Err(e) = findable(&plan.command[0]) {
        return spawn_failed(&plan.command[0].to_string_lossy(), &e);
    }
    let mut command = std::process::Command::new(&plan.command[0]);
    command.args(&plan.command[1..]);
    for (name, value) in &plan.env {
        command.env(name, value);
    }
    // One place for every process of the run: a relative default would follow each child's
    // working directory.
    let output_set = plan.env.iter().any(|(n, _)| *n == "METRON_OUTPUT_PATH")
        || std::env::var_os("METRON_OUTPUT_PATH").is_some();
    if !output_set {
        if let Ok(cwd) = std::env::current_dir() {
            let default = REGISTRY
                .iter()
                .find(|s| s.name == "METRON_OUTPUT_PATH")
                .map_or("metron-output/%exe%-%pid%-%time%", |s| s.default);
            command.env("METRON_OUTPUT_PATH", cwd.join(default));
        }
    }
    // NVTX v3 markers (PyTorch, NCCL, ...) reach the runtime through NVTX's injection hook,
    // unless the user already points it at another tool.
    match std::env::var_os("NVTX_INJECTION64_PATH").filter(|v| !v.is_empty()) {
        Some(existing) if Path::new(&existing) != library.as_path() => eprintln!(
            "metron run: NVTX_INJECTION64_PATH is already set ({}); leaving it, so NVTX \
             markers go to that tool instead of Metron",
            existing.to_string_lossy()
        ),
        Some(_) => {}
        None => {
            command.env("NVTX_INJECTION64_PATH", &library);
        }
    }
    // CUDA: the driver calls `InitializeInjection` in the library from `cuInit`, so CUPTI
    // starts only in processes that use CUDA (see user-api/src/cuda_injection.rs).
    match std::env::var_os("CUDA_INJECTION64_PATH").filter(|v| !v.is_empty()) {
        Some(existing) if Path::new(&existing) != library.as_path() => eprintln!(
            "metron run: CUDA_INJECTION64_PATH is already set ({}); leaving it, so GPU \
             activity goes to that tool instead of Metron",
            existing.to_string_lossy()
        ),
        Some(_) => {}
        None => {
            command.env("CUDA_INJECTION64_PATH", &library);
        }
    }
    // AMD: the HSA runtime loads every library of HSA_TOOLS_LIB (space-separated) during
    // `hsa_init` and calls its `OnLoad` with the API table (see user-api/src/amd_tools.rs);
    // another tool already listed keeps its place, Metron is added after it.
    let tools = match std::env::var_os("HSA_TOOLS_LIB").filter(|v| !v.is_empty()) {
        Some(existing)
            if existing
                .to_string_lossy()
                .split(' ')
                .any(|t| Path::new(t) == library.as_path()) =>
        {
            existing
        }
        Some(existing) => {
            let mut both = existing;
            both.push(" ");
            both.push(&library);
            both
        }
        None => library.clone().into_os_string(),
    };
    command.env("HSA_TOOLS_LIB", tools);
    let mut preload = library.into_os_string();
    if let Some(existing) = std::env::var_os("LD_PRELOAD").filter(|v| !v.is_empty()) {
        preload.push(":");
        preload.push(existing);
    }
    command.env("LD_PRELOAD", preload);
    command.env("METRON_PRELOAD", "1");
    if let Some(passes) = &plan.passes {
        let template = plan
            .env
            .iter()
            .rev()
            .find(|(n, _)| *n == "METRON_OUTPUT_PATH")
            .map(|(_, v)| PathBuf::from(v))
            .unwrap_or_else(crate::passes::default_template);
        return crate::passes::run(passes, command, &plan.env, &template.to_string_lossy());
    }
    let tree = plan
        .env
        .iter()
        .rev()
        .find(|(n, _)| *n == "METRON_PROCESSES")
        .map(|(_, v)| v.clone())
        .or_else(|| std::env::var("METRON_PROCESSES").ok())
        .is_none_or(|mode| mode.trim() != "separate");
    let exe = Path::new(&plan.command[0]).file_name().map_or_else(
        || "program".to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    // A process of a tree that is already being run (`metron run` inside `metron run`) or a
    // rank launched by `mpirun` under one writes as the outer run says.
    if tree && std::env::var_os("METRON_RUN_FOLDER").is_none() {
        let template = plan
            .env
            .iter()
            .rev()
            .find(|(n, _)| *n == "METRON_OUTPUT_PATH")
            .map(|(_, v)| v.clone())
            .or_else(|| std::env::var("METRON_OUTPUT_PATH").ok())
            .map(|t| absolute(Path::new(&t)))
            .unwrap_or_else(|| {
                absolute(Path::new(
                    REGISTRY
                        .iter()
                        .find(|s| s.name == "METRON_OUTPUT_PATH")
                        .map_or("metron-output/%exe%-%pid%-%time%", |s| s.default),
                ))
            });
        return crate::tree::run(command, &template, &exe);
    }
    let error = command.exec();
    spawn_failed(&plan.command[0].to_string_lossy(), &error)
}

/// Whether `program` names a file `execvp` could run: a path (with a `/`) that exists, or a
/// name found in `PATH`. `Err` is the error the start would have given (not found, or
/// permission denied for a file that is not executable).
fn findable(program: &std::ffi::OsStr) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let executable = |p: &Path| {
        std::fs::metadata(p)
            .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
            .unwrap_or(false)
    };
    let path = Path::new(program);
    if program.as_encoded_bytes().contains(&b'/') {
        return match std::fs::metadata(path) {
            Ok(_) if executable(path) => Ok(()),
            Ok(_) => Err(std::io::ErrorKind::PermissionDenied.into()),
            Err(e) => Err(e),
        };
    }
    let search = std::env::var_os("PATH").unwrap_or_else(|| "/usr/bin:/bin".into());
    if std::env::split_paths(&search).any(|dir| executable(&dir.join(path))) {
        Ok(())
    } else {
        Err(std::io::ErrorKind::NotFound.into())
    }
}

/// The exit status and message for a command that could not be started.
pub(crate) fn spawn_failed(shown: &str, error: &std::io::Error) -> ExitCode {
    match error.kind() {
        std::io::ErrorKind::NotFound => {
            eprintln!("metron run: {shown}: command not found");
            ExitCode::from(127)
        }
        std::io::ErrorKind::PermissionDenied => {
            eprintln!("metron run: {shown}: permission denied");
            ExitCode::from(126)
        }
        _ => {
            eprintln!("metron run: cannot run {shown}: {error}");
            ExitCode::from(126)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn flags_become_metron_variables() {
        let plan = parse(&args(&[
            "--buffer-size",
            "4M",
            "--flush-interval=250ms",
            "-o",
            "/tmp/x",
            "--",
            "ls",
            "-l",
        ]))
        .unwrap()
        .unwrap();
        assert_eq!(
            plan.env,
            vec![
                ("METRON_BUFFER_SIZE", "4M".to_string()),
                ("METRON_FLUSH_INTERVAL", "250ms".to_string()),
                ("METRON_OUTPUT_PATH", "/tmp/x".to_string()),
            ]
        );
        assert_eq!(
            plan.command,
            vec![OsString::from("ls"), OsString::from("-l")]
        );
    }

    #[test]
    fn the_command_may_follow_without_a_separator() {
        let plan = parse(&args(&["--summary", "on", "make", "-j2"]))
            .unwrap()
            .unwrap();
        assert_eq!(plan.command.len(), 2);
    }

    #[test]
    fn unknown_flags_and_bad_values_are_refused_with_what_is_accepted() {
        let e = parse(&args(&["--frobnicate", "--", "ls"])).err().unwrap();
        assert!(e.contains("unknown flag --frobnicate"), "{e}");
        let e = parse(&args(&["--buffer-size", "12Q", "--", "ls"]))
            .err()
            .unwrap();
        assert!(
            e.contains("METRON_BUFFER_SIZE") && e.contains("K, M or G"),
            "{e}"
        );
        let e = parse(&args(&["--buffer-size"])).err().unwrap();
        assert!(e.contains("needs a value"), "{e}");
        let e = parse(&args(&["--summary", "on"])).err().unwrap();
        assert!(e.contains("no command"), "{e}");
    }

    #[test]
    fn every_setting_but_preload_has_a_flag() {
        let text = help();
        for spec in REGISTRY {
            assert_eq!(
                text.contains(&flag_of(spec.name)),
                spec.name != "METRON_PRELOAD",
                "{}",
                spec.name
            );
        }
    }

    #[test]
    fn function_flags_become_the_functions_settings_and_a_bad_expression_is_refused() {
        let plan = parse(&args(&[
            "--functions",
            "^(fib|leaf)$",
            "--exclude=leaf",
            "--min-instructions",
            "10",
            "--functions-in",
            "libknown",
            "--",
            "./app",
        ]))
        .unwrap()
        .unwrap();
        assert_eq!(
            plan.env,
            vec![
                ("METRON_FUNCTIONS", "^(fib|leaf)$".to_string()),
                ("METRON_FUNCTIONS_EXCLUDE", "leaf".to_string()),
                ("METRON_FUNCTIONS_MIN_INSTRUCTIONS", "10".to_string()),
                ("METRON_FUNCTIONS_IN", "libknown".to_string()),
            ]
        );
        let e = parse(&args(&["--functions", "fib(", "--", "./app"]))
            .err()
            .unwrap();
        assert!(
            e.contains("METRON_FUNCTIONS") && e.contains("regular expression"),
            "{e}"
        );
        let e = parse(&args(&["--min-instructions", "many", "--", "./app"]))
            .err()
            .unwrap();
        assert!(e.contains("auto, or a whole number"), "{e}");
    }
}
