//! Helpers shared by the integration tests.
//!
//! Metron's runtime is process-global and writes its run folder when the process exits, so
//! every test that looks at a run does so from the outside: it re-executes its own test
//! binary for exactly one *scenario* (a `#[test]` that does nothing unless
//! [`SCENARIO_ENV`] is set), with `METRON_OUTPUT_PATH` pointing at a fresh temporary folder,
//! and then reads `summary.json`, `metadata.json` and the child's stderr.
//!
//! ```ignore
//! metron_tests::scenario! {
//!     fn scenario_two_regions() {
//!         let _a = metron::scope!("a");
//!     }
//! }
//!
//! #[test]
//! fn a_region_is_counted() {
//!     let run = Scenario::new("scenario_two_regions").run();
//!     let a = find(&run.main_thread()["regions"], &["a"]);
//!     assert_eq!(a["count"], 1);
//! }
//! ```

use serde_json::Value;
use std::io::Read;
use std::path::PathBuf;
use std::process::{Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

pub mod fake_gpu;
pub mod recording;
pub mod split;

/// Set (to `1`) in the child process; a scenario test runs only when it is set.
pub const SCENARIO_ENV: &str = "METRON_TEST_SCENARIO";

/// Prefix of the stdout line through which a scenario hands values to its test.
pub const DATA_PREFIX: &str = "METRON_TEST_DATA ";

/// How long a child may run before it is killed and the test fails.
const CHILD_TIMEOUT: Duration = Duration::from_secs(180);

/// True inside a child started by [`Scenario::run`].
pub fn in_scenario() -> bool {
    std::env::var_os(SCENARIO_ENV).is_some()
}

/// Declares a scenario: a `#[test]` that returns at once unless it runs in a child started by
/// [`Scenario::run`].
#[macro_export]
macro_rules! scenario {
    ($(#[$meta:meta])* fn $name:ident() $body:block) => {
        $(#[$meta])*
        #[test]
        fn $name() {
            if !$crate::in_scenario() {
                return;
            }
            $body
        }
    };
}

/// Prints `value` for the parent test to read with [`Run::data`]. Call it once per scenario.
pub fn emit_data(value: &Value) {
    println!("{DATA_PREFIX}{value}");
}

/// A child run of one scenario test of the current test binary.
pub struct Scenario {
    name: String,
    env: Vec<(String, String)>,
}

impl Scenario {
    /// The scenario test named `name` (a test of the calling test binary).
    pub fn new(name: &str) -> Scenario {
        Scenario {
            name: name.to_string(),
            env: Vec::new(),
        }
    }

    /// Sets an environment variable of the child (every inherited `METRON_*` is removed first).
    pub fn env(mut self, key: &str, value: &str) -> Scenario {
        self.env.push((key.to_string(), value.to_string()));
        self
    }

    /// Runs the scenario in a child process and waits for it. Panics, with the child's output,
    /// if it fails, times out, or its test filter did not select exactly one test.
    /// Children of one test binary run one at a time, so timings are not disturbed by the
    /// other scenarios of the same binary.
    pub fn run(self) -> Run {
        let run = self.run_unchecked();
        assert!(
            run.status.success() && run.stdout.contains("test result: ok. 1 passed"),
            "scenario {} failed ({}; it must run exactly one test).\nstdout:\n{}\nstderr:\n{}",
            run.name,
            run.status,
            run.stdout,
            run.stderr
        );
        run
    }

    /// [`Scenario::run`] without judging how the child ended: for scenarios that crash.
    pub fn run_unchecked(self) -> Run {
        static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());
        let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
        let output_dir = fresh_dir(&self.name);
        let exe = std::env::current_exe().expect("the test binary's path");
        let mut command = Command::new(exe);
        command
            .args([&self.name, "--exact", "--nocapture", "--test-threads=1"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (key, _) in std::env::vars_os() {
            if key.to_string_lossy().starts_with("METRON_") {
                command.env_remove(key);
            }
        }
        command
            .env(SCENARIO_ENV, "1")
            .env("METRON_OUTPUT_PATH", &output_dir);
        for (key, value) in &self.env {
            command.env(key, value);
        }
        let started = Instant::now();
        let mut child = command.spawn().expect("start the scenario child");
        let stdout = reader(child.stdout.take().expect("piped stdout"));
        let stderr = reader(child.stderr.take().expect("piped stderr"));
        let status = loop {
            if let Some(status) = child.try_wait().expect("wait for the child") {
                break status;
            }
            if started.elapsed() > CHILD_TIMEOUT {
                let _ = child.kill();
                let _ = child.wait();
                panic!(
                    "scenario {} ran longer than {CHILD_TIMEOUT:?}; killed.\nstdout:\n{}\nstderr:\n{}",
                    self.name,
                    stdout.join().unwrap_or_default(),
                    stderr.join().unwrap_or_default()
                );
            }
            std::thread::sleep(Duration::from_millis(5));
        };
        Run {
            name: self.name,
            output_dir,
            status,
            stdout: stdout.join().expect("stdout reader"),
            stderr: stderr.join().expect("stderr reader"),
            elapsed: started.elapsed(),
        }
    }
}

fn reader(mut pipe: impl Read + Send + 'static) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = pipe.read_to_end(&mut bytes);
        String::from_utf8_lossy(&bytes).into_owned()
    })
}

/// A path under the temporary folder that does not exist yet (Metron creates it).
fn fresh_dir(name: &str) -> PathBuf {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!(
        "metron-tests-{}-{}-{name}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// What a finished child run left: its output folder, exit status, stdout and stderr.
/// The folder is removed when the `Run` is dropped, unless the test is failing.
pub struct Run {
    /// The scenario's name.
    pub name: String,
    /// `METRON_OUTPUT_PATH` of the child (the run folder, if Metron wrote one).
    pub output_dir: PathBuf,
    /// The child's exit status.
    pub status: ExitStatus,
    /// Everything the child printed on stdout.
    pub stdout: String,
    /// Everything the child printed on stderr.
    pub stderr: String,
    /// Wall time of the child.
    pub elapsed: Duration,
}

impl Run {
    /// A file of the run folder, parsed as JSON.
    pub fn json(&self, file: &str) -> Value {
        let path = self.output_dir.join(file);
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
            panic!(
                "{} was not written ({e}).\nstderr of {}:\n{}",
                path.display(),
                self.name,
                self.stderr
            )
        });
        serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("{} is not valid JSON: {e}\n{text}", path.display()))
    }

    /// `summary.json`.
    pub fn summary(&self) -> Value {
        self.json("summary.json")
    }

    /// `metadata.json`.
    pub fn metadata(&self) -> Value {
        self.json("metadata.json")
    }

    /// `summary.txt`.
    pub fn summary_text(&self) -> String {
        let path = self.output_dir.join("summary.txt");
        std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("{} was not written: {e}", path.display()))
    }

    /// The value the scenario printed with [`emit_data`].
    pub fn data(&self) -> Value {
        let line = self
            .stdout
            .lines()
            .find_map(|l| l.split_once(DATA_PREFIX).map(|(_, rest)| rest))
            .unwrap_or_else(|| {
                panic!(
                    "scenario {} printed no data line.\nstdout:\n{}",
                    self.name, self.stdout
                )
            });
        serde_json::from_str(line).expect("the data line is JSON")
    }

    /// Parses Metron's last stderr line, `metron: wrote DIR (N records, D dropped)`, into
    /// `(DIR, N, D)`.
    pub fn wrote_line(&self) -> Option<(PathBuf, u64, u64)> {
        let line = self
            .stderr
            .lines()
            .rev()
            .find(|l| l.starts_with("metron: wrote "))?;
        let rest = line.strip_prefix("metron: wrote ")?;
        // Notes may follow the counts (`; refused: ...`, `; recording held ...`).
        rest.match_indices(" (").find_map(|(at, _)| {
            let counts = rest[at + 2..].split_once(" dropped)")?.0;
            let (records, dropped) = counts.split_once(" records, ")?;
            Some((
                PathBuf::from(&rest[..at]),
                records.parse().ok()?,
                dropped.parse().ok()?,
            ))
        })
    }
}

impl Drop for Run {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!(
                "kept the run folder of {} for inspection: {}",
                self.name,
                self.output_dir.display()
            );
        } else {
            let _ = std::fs::remove_dir_all(&self.output_dir);
        }
    }
}

/// The `threads` array of `summary.json` or `metadata.json`.
pub fn threads(doc: &Value) -> &Vec<Value> {
    doc["threads"].as_array().expect("a threads array")
}

/// The thread of `summary.json` or `metadata.json` whose name is `name`.
pub fn thread_named<'a>(doc: &'a Value, name: &str) -> &'a Value {
    let name_of = |t: &Value| {
        if t["name"].is_string() {
            t["name"].clone()
        } else {
            t["thread"]["name"].clone()
        }
    };
    threads(doc)
        .iter()
        .find(|t| name_of(t) == name)
        .unwrap_or_else(|| {
            panic!(
                "no thread named {name:?}; threads: {:?}",
                threads(doc).iter().map(name_of).collect::<Vec<_>>()
            )
        })
}

/// A compact, ordered picture of a region tree: `a×1{b×3{c×6}, d×1}`. Children appear in the
/// order Metron lists them (first occurrence), so comparing shapes checks names, nesting,
/// counts and order at once.
pub fn shape(regions: &Value) -> String {
    regions
        .as_array()
        .expect("a regions array")
        .iter()
        .map(|node| {
            let children = shape(&node["children"]);
            let name = node["name"].as_str().expect("a region name");
            let count = &node["count"];
            if children.is_empty() {
                format!("{name}×{count}")
            } else {
                format!("{name}×{count}{{{children}}}")
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The node at `path` (region names from the top) of a regions array.
pub fn find<'a>(regions: &'a Value, path: &[&str]) -> &'a Value {
    let mut level = regions;
    let mut node = None;
    for name in path {
        let found = level
            .as_array()
            .expect("a regions array")
            .iter()
            .find(|n| n["name"] == *name)
            .unwrap_or_else(|| {
                panic!(
                    "no region {name:?} on the path {path:?}; tree: {}",
                    shape(regions)
                )
            });
        level = &found["children"];
        node = Some(found);
    }
    node.expect("a non-empty path")
}

/// A statistic (`count`, `total`, `mean`, `min`, `max`, `stddev`, `pct_parent`, `self`) of a
/// metric of a region node, as f64.
pub fn stat(node: &Value, metric: &str, stat: &str) -> f64 {
    node["metrics"][metric][stat].as_f64().unwrap_or_else(|| {
        panic!(
            "region {} has no {metric}.{stat}: {}",
            node["name"], node["metrics"]
        )
    })
}

/// A JSON array of numbers as f64s; panics on anything else.
pub fn f64s(array: &Value) -> Vec<f64> {
    array
        .as_array()
        .unwrap_or_else(|| panic!("not an array: {array}"))
        .iter()
        .map(|v| v.as_f64().unwrap_or_else(|| panic!("not a number: {v}")))
        .collect()
}

/// Population standard deviation.
pub fn stddev(values: &[f64]) -> f64 {
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    (values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n).sqrt()
}

/// Runs the independent trace validator (`tests/perfetto/validate_trace.py`, the official
/// Perfetto protos) over `trace` with `args` and returns its JSON; panics with its report when
/// a check fails, and with how to install it when it cannot run.
pub fn validated_trace(trace: &std::path::Path, args: &[&str]) -> Value {
    let validator =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("perfetto/validate_trace.py");
    let out = Command::new("python3")
        .arg(validator)
        .arg(trace)
        .args(args)
        .output()
        .expect("python3 runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_ne!(
        out.status.code(),
        Some(2),
        "validate_trace.py could not run (scripts/install-deps.sh installs Python's perfetto \
         package): {stderr}"
    );
    let json: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("validator output is not JSON ({e}): {stderr}"));
    assert!(
        out.status.success(),
        "{} does not validate: {stderr}\nchecks: {}",
        trace.display(),
        json["checks"]
    );
    json
}
