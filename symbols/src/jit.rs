//! Names of JIT-compiled code: `/tmp/perf-<pid>.map` and `jit-<pid>.dump`.
//!
//! Runtimes that generate machine code into anonymous executable memory (CPython ≥ 3.12 with
//! its perf trampolines, Node `--perf-basic-prof`, the JVM with perf-map-agent, .NET, Julia,
//! LuaJIT) describe it in one of two files that `perf` reads, and so does Metron:
//!
//! - **perf map** (`/tmp/perf-<pid>.map`): text, one line per code range,
//!   `START SIZE name` (hexadecimal, with or without `0x`). The file grows while the program
//!   runs; it is read from where the last read stopped whenever an address falls outside what
//!   was read and the file grew since, so a sample of code compiled late is still named.
//! - **jitdump** (`jit-<pid>.dump`, found in `/tmp`, the current directory or among the
//!   process's mappings, since a runtime `mmap`s it for `perf` to see): binary records of
//!   code loads (`JIT_CODE_LOAD`: address, size, name) and their line tables
//!   (`JIT_CODE_DEBUG_INFO`), read incrementally the same way. A code load with debug info
//!   gets the file and line of its first entry.
//!
//! A range written again (a runtime reusing memory) takes the newer name.
//!
//! **Python frames.** CPython names a trampoline `py::qualname:file.py`; it becomes the
//! frame `py::qualname (file.py:line)`, `line` being the line of the function's `def` in the
//! source file (the perf map has no line: it is looked up once per function in the file,
//! which is read once), or the line of the jitdump's debug info where there is one. Frames
//! of other runtimes keep the runtime's name.

use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

/// One named range of JIT code.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct JitSymbol {
    /// End of the range (exclusive).
    pub(crate) end: u64,
    /// The name to show (`py::f (app.py:12)` for Python).
    pub(crate) function: String,
    /// Source file, when known.
    pub(crate) file: Option<String>,
    /// Source line, when known.
    pub(crate) line: Option<u32>,
}

/// A file read in pieces as it grows.
#[derive(Default)]
struct Growing {
    path: Option<PathBuf>,
    /// Bytes consumed so far (complete lines or records).
    offset: u64,
    /// Size at the last read.
    seen_len: u64,
}

impl Growing {
    /// The bytes appended since the last read, if the file grew (`None` when it did not or
    /// cannot be read).
    fn new_bytes(&mut self) -> Option<Vec<u8>> {
        let path = self.path.as_ref()?;
        let len = std::fs::metadata(path).ok()?.len();
        if len <= self.seen_len {
            return None;
        }
        self.seen_len = len;
        let mut f = File::open(path).ok()?;
        f.seek(SeekFrom::Start(self.offset)).ok()?;
        let mut out = Vec::new();
        f.take(len - self.offset).read_to_end(&mut out).ok()?;
        Some(out)
    }
}

/// The JIT code of one process, by start address.
pub(crate) struct JitMaps {
    pid: u32,
    symbols: BTreeMap<u64, JitSymbol>,
    perf_map: Growing,
    jitdump: Growing,
    /// Debug info of jitdump code loads not yet seen, by code address: (file, line).
    pending_lines: HashMap<u64, (String, u32)>,
    /// Line of each Python function's `def`, by (file, name), and the lines of files read.
    def_lines: HashMap<(String, String), Option<u32>>,
    sources: HashMap<String, Option<Vec<String>>>,
    /// When the jitdump was last looked for (at most once a second: a look reads
    /// `/proc/<pid>/maps`, and lookups that miss can be many).
    jitdump_searched: Option<std::time::Instant>,
    /// Ranges read from the perf map and from jitdumps.
    pub(crate) read_perf_map: u64,
    pub(crate) read_jitdump: u64,
}

impl JitMaps {
    /// The JIT maps of process `pid` (nothing is read until the first lookup).
    pub(crate) fn new(pid: u32) -> JitMaps {
        JitMaps {
            pid,
            symbols: BTreeMap::new(),
            perf_map: Growing {
                path: Some(perf_map_path(pid)),
                ..Growing::default()
            },
            jitdump: Growing::default(),
            pending_lines: HashMap::new(),
            def_lines: HashMap::new(),
            sources: HashMap::new(),
            jitdump_searched: None,
            read_perf_map: 0,
            read_jitdump: 0,
        }
    }

    /// The process these maps describe.
    pub(crate) fn pid(&self) -> u32 {
        self.pid
    }

    /// The symbol holding `addr`; reads what the files gained since the last read when
    /// nothing read so far holds it.
    pub(crate) fn lookup(&mut self, addr: u64) -> Option<&JitSymbol> {
        if self.find(addr).is_none() {
            self.refresh();
        }
        self.find(addr).map(|start| &self.symbols[&start])
    }

    fn find(&self, addr: u64) -> Option<u64> {
        let (&start, s) = self.symbols.range(..=addr).next_back()?;
        (addr < s.end).then_some(start)
    }

    /// [`JitMaps::refresh`], looking for a jitdump whenever it was last looked for.
    pub(crate) fn read_now(&mut self) {
        self.jitdump_searched = None;
        self.refresh();
    }

    /// Reads what the perf map and the jitdump gained since the last read.
    pub(crate) fn refresh(&mut self) {
        if let Some(bytes) = self.perf_map.new_bytes() {
            // Only complete lines: a line being written is read next time.
            let complete = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
            self.perf_map.offset += complete as u64;
            for line in String::from_utf8_lossy(&bytes[..complete]).lines() {
                if let Some((start, size, name)) = parse_perf_map_line(line) {
                    self.add(start, size, name.to_string(), None);
                    self.read_perf_map += 1;
                }
            }
        }
        if self.jitdump.path.is_none()
            && self
                .jitdump_searched
                .is_none_or(|t| t.elapsed() >= std::time::Duration::from_secs(1))
        {
            self.jitdump_searched = Some(std::time::Instant::now());
            self.jitdump.path = find_jitdump(self.pid);
        }
        if let Some(bytes) = self.jitdump.new_bytes() {
            let consumed = self.read_jitdump_records(&bytes);
            self.jitdump.offset += consumed as u64;
        }
    }

    /// Parses jitdump records from `bytes` (the file from the current offset); returns the
    /// bytes consumed (complete records, and the header at the start of the file).
    fn read_jitdump_records(&mut self, bytes: &[u8]) -> usize {
        let mut at = 0;
        if self.jitdump.offset == 0 {
            // Header: magic, version, header size, elf_mach, pad, pid, timestamp, flags.
            match (u32_at(bytes, 0), u32_at(bytes, 8)) {
                (Some(JITDUMP_MAGIC), Some(size)) if bytes.len() >= size as usize => {
                    at = size as usize
                }
                // Another byte order, or not a jitdump: never read again.
                (Some(_), Some(_)) => {
                    self.jitdump.path = None;
                    return 0;
                }
                _ => return 0,
            }
        }
        while let (Some(id), Some(size)) = (u32_at(bytes, at), u32_at(bytes, at + 4)) {
            let size = size as usize;
            if size < 16 || at + size > bytes.len() {
                break;
            }
            let body = &bytes[at + 16..at + size];
            match id {
                JIT_CODE_LOAD => {
                    // pid, tid, vma, code_addr, code_size, code_index, name\0, code.
                    if let (Some(addr), Some(len)) = (u64_at(body, 16), u64_at(body, 24)) {
                        let name = c_string(body.get(40..).unwrap_or(&[]));
                        let line = self.pending_lines.remove(&addr);
                        self.add(addr, len, name, line);
                        self.read_jitdump += 1;
                    }
                }
                JIT_CODE_DEBUG_INFO => {
                    // code_addr, nr_entry, entries {addr, line, discrim, file\0}: the first.
                    if let (Some(addr), Some(n), Some(line)) =
                        (u64_at(body, 0), u64_at(body, 8), u32_at(body, 24))
                    {
                        if n > 0 {
                            let file = c_string(body.get(32..).unwrap_or(&[]));
                            self.pending_lines.insert(addr, (file, line));
                        }
                    }
                }
                _ => {}
            }
            at += size;
        }
        at
    }

    /// Adds a range (a newer one replaces one at the same start).
    fn add(&mut self, start: u64, size: u64, name: String, line: Option<(String, u32)>) {
        if size == 0 {
            return;
        }
        let symbol = match python_name(&name) {
            Some((qualname, file)) => {
                let (file, line) = match line {
                    Some((f, l)) => (f, Some(l)),
                    None => {
                        let l = self.def_line(file, qualname);
                        (file.to_string(), l)
                    }
                };
                let base = Path::new(&file)
                    .file_name()
                    .map_or(file.clone(), |b| b.to_string_lossy().into_owned());
                let function = match line {
                    Some(l) => format!("py::{qualname} ({base}:{l})"),
                    None => format!("py::{qualname} ({base})"),
                };
                JitSymbol {
                    end: start.saturating_add(size),
                    function,
                    file: Some(file),
                    line,
                }
            }
            None => JitSymbol {
                end: start.saturating_add(size),
                file: line.as_ref().map(|(f, _)| f.clone()),
                line: line.map(|(_, l)| l),
                function: if name.is_empty() {
                    format!("[jit]+{start:#x}")
                } else {
                    name
                },
            },
        };
        self.symbols.insert(start, symbol);
    }

    /// The line of `def name` (the last part of `qualname`) in Python source `file`, read
    /// once per file.
    fn def_line(&mut self, file: &str, qualname: &str) -> Option<u32> {
        let key = (file.to_string(), qualname.to_string());
        if let Some(&l) = self.def_lines.get(&key) {
            return l;
        }
        let lines = self
            .sources
            .entry(file.to_string())
            .or_insert_with(|| {
                std::fs::read_to_string(file)
                    .ok()
                    .map(|s| s.lines().map(str::to_string).collect())
            })
            .as_deref();
        let line = lines.and_then(|lines| def_line_in(lines, qualname));
        self.def_lines.insert(key, line);
        line
    }
}

const JITDUMP_MAGIC: u32 = 0x4A69_5444;
const JIT_CODE_LOAD: u32 = 0;
const JIT_CODE_DEBUG_INFO: u32 = 2;

/// `/tmp/perf-<pid>.map`.
pub(crate) fn perf_map_path(pid: u32) -> PathBuf {
    PathBuf::from(format!("/tmp/perf-{pid}.map"))
}

/// Where process `pid`'s jitdump is: a mapping of it (runtimes `mmap` it for perf), else
/// `/tmp` or the current directory.
fn find_jitdump(pid: u32) -> Option<PathBuf> {
    let name = format!("jit-{pid}.dump");
    if let Ok(maps) = std::fs::read_to_string(format!("/proc/{pid}/maps")) {
        for line in maps.lines() {
            if let Some(path) = line.split_whitespace().nth(5) {
                if path.ends_with(&format!("/{name}")) {
                    return Some(PathBuf::from(path));
                }
            }
        }
    }
    [PathBuf::from("/tmp").join(&name), PathBuf::from(&name)]
        .into_iter()
        .find(|p| p.exists())
}

/// `START SIZE name` (hexadecimal, `0x` optional).
fn parse_perf_map_line(line: &str) -> Option<(u64, u64, &str)> {
    let mut parts = line.trim_end().splitn(3, ' ');
    let hex = |s: &str| u64::from_str_radix(s.trim_start_matches("0x"), 16).ok();
    let start = hex(parts.next()?)?;
    let size = hex(parts.next()?)?;
    Some((start, size, parts.next().unwrap_or("")))
}

/// `py::qualname:file` → (qualname, file).
fn python_name(name: &str) -> Option<(&str, &str)> {
    name.strip_prefix("py::")?.split_once(':')
}

/// The 1-based line of the `def` (or `class`) of the last part of `qualname` in `lines`;
/// line 1 for `<module>`.
fn def_line_in(lines: &[String], qualname: &str) -> Option<u32> {
    let name = qualname.rsplit('.').next()?;
    if name == "<module>" {
        return Some(1);
    }
    if name.starts_with('<') {
        return None;
    }
    lines
        .iter()
        .position(|l| {
            let l = l.trim_start();
            let l = l.strip_prefix("async ").unwrap_or(l);
            ["def ", "class "].iter().any(|kw| {
                l.strip_prefix(kw).is_some_and(|rest| {
                    rest.strip_prefix(name)
                        .is_some_and(|after| after.starts_with(['(', ':', '[']))
                })
            })
        })
        .map(|i| i as u32 + 1)
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_ne_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_ne_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

/// The NUL-terminated string at the start of `b` (lossy UTF-8).
fn c_string(b: &[u8]) -> String {
    let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    String::from_utf8_lossy(&b[..end]).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn perf_map_lines_parse_with_or_without_0x() {
        assert_eq!(
            parse_perf_map_line("7f00a000 40 py::work:/tmp/app.py"),
            Some((0x7f00_a000, 0x40, "py::work:/tmp/app.py"))
        );
        assert_eq!(
            parse_perf_map_line("0x1000 0x10 LazyCompile:*foo bar.js:3"),
            Some((0x1000, 0x10, "LazyCompile:*foo bar.js:3"))
        );
        assert_eq!(parse_perf_map_line("garbage"), None);
    }

    #[test]
    fn python_frames_get_the_line_of_their_def() {
        let lines: Vec<String> = [
            "import os",
            "",
            "class A:",
            "    async def run(self):",
            "def f(x):",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        assert_eq!(def_line_in(&lines, "f"), Some(5));
        assert_eq!(def_line_in(&lines, "A.run"), Some(4));
        assert_eq!(def_line_in(&lines, "A"), Some(3));
        assert_eq!(def_line_in(&lines, "<module>"), Some(1));
        assert_eq!(def_line_in(&lines, "g"), None);
    }

    /// A jitdump with one code load preceded by its debug info, then a record cut short.
    fn jitdump(pid: u32) -> Vec<u8> {
        let mut b = Vec::new();
        for w in [JITDUMP_MAGIC, 1, 40, 62, 0, pid] {
            b.extend(w.to_ne_bytes());
        }
        b.extend(0u64.to_ne_bytes());
        b.extend(0u64.to_ne_bytes());
        // Debug info: code_addr, nr_entry, {addr, line, discrim, file}.
        let mut body = Vec::new();
        for w in [0x5000u64, 1, 0x5000] {
            body.extend(w.to_ne_bytes());
        }
        body.extend(7u32.to_ne_bytes());
        body.extend(0u32.to_ne_bytes());
        body.extend(b"/src/app.py\0");
        record(&mut b, JIT_CODE_DEBUG_INFO, &body);
        let mut body = Vec::new();
        body.extend(pid.to_ne_bytes());
        body.extend(pid.to_ne_bytes());
        for w in [0x5000u64, 0x5000, 0x80, 1] {
            body.extend(w.to_ne_bytes());
        }
        body.extend(b"py::work:/src/app.py\0");
        body.extend([0xc3; 0x80]);
        record(&mut b, JIT_CODE_LOAD, &body);
        b
    }

    fn record(b: &mut Vec<u8>, id: u32, body: &[u8]) {
        b.extend(id.to_ne_bytes());
        b.extend((16 + body.len() as u32).to_ne_bytes());
        b.extend(0u64.to_ne_bytes());
        b.extend(body);
    }

    #[test]
    fn a_growing_perf_map_and_a_jitdump_are_read_as_they_grow() {
        let dir = std::env::temp_dir().join(format!("metron-jit-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let map = dir.join("perf.map");
        let dump = dir.join("jit.dump");
        std::fs::write(&map, "1000 100 first\n2000 10 sec").unwrap();
        let full = jitdump(4242);
        std::fs::write(&dump, &full[..full.len() - 10]).unwrap();
        let mut maps = JitMaps::new(4242);
        maps.perf_map.path = Some(map.clone());
        maps.jitdump.path = Some(dump.clone());
        assert_eq!(maps.lookup(0x10ff).unwrap().function, "first");
        // The second line is not complete yet, the code load not whole.
        assert!(maps.lookup(0x2000).is_none());
        assert!(maps.lookup(0x5000).is_none());
        let mut f = std::fs::OpenOptions::new().append(true).open(&map).unwrap();
        f.write_all(b"ond\n3000 0x20 third\n").unwrap();
        std::fs::write(&dump, &full).unwrap();
        assert_eq!(maps.lookup(0x2008).unwrap().function, "second");
        assert_eq!(maps.lookup(0x301f).unwrap().function, "third");
        assert!(maps.lookup(0x3020).is_none());
        let py = maps.lookup(0x5010).unwrap();
        assert_eq!(py.function, "py::work (app.py:7)");
        assert_eq!(
            (py.file.as_deref(), py.line),
            (Some("/src/app.py"), Some(7))
        );
        assert_eq!((maps.read_perf_map, maps.read_jitdump), (3, 1));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
