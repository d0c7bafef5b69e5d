//! Symbolization of instruction addresses of the running process, off the hot path.
//!
//! A [`Symbolizer`] turns an address into frames — demangled function, source file, line,
//! inlined callees first — for the executable and every shared object loaded in the process.
//! It is what Metron's sinks use on the flusher thread to name the addresses of call-stack
//! samples; nothing here is async-signal-safe or meant for the hot path.
//!
//! # How
//! - **Modules**: read with `dl_iterate_phdr` (name, load bias, `PT_LOAD` segments). An
//!   address outside every known module makes the symbolizer ask the loader whether objects
//!   were loaded or unloaded since (`dlpi_adds`/`dlpi_subs`) and read the list again, so
//!   modules `dlopen`ed later are found.
//! - **One context per module**, built on the first address that falls in it and kept: an
//!   [`addr2line::Loader`] (mmap, lazy DWARF parsing, split DWARF) over the module, or over its
//!   separate debug file (`/usr/lib/debug/.build-id/xx/yyyy.debug`, `.gnu_debuglink`).
//! - **Names**: inlined frames by DWARF; the outermost frame (the function that holds the
//!   address) by its ELF symbol, demangled, which is the full path where DWARF without linkage
//!   names (`debug = "line-tables-only"`) has only the last segment.
//! - **Fallbacks, never an empty frame**: DWARF (function, file, line, inlined frames), else
//!   the module's symbol table (`.symtab`, else `.dynsym`, demangled), else `module+0xoffset`
//!   (the file address); for an address in no module, the process's perf map
//!   (`/tmp/perf-<pid>.map`) and jitdump (`jit-<pid>.dump`), read as they grow (JIT code,
//!   Python functions as `py::function (file.py:line)`: `jit.rs`); else `[unknown]+0xaddress`.
//!   The vDSO, which has no file, is named from its image in memory.
//! - **Another process**: [`Symbolizer::for_process`] reads the modules of a process from
//!   `/proc/<pid>/maps` instead of the loader (`process.rs`), for `metron sample --pid`.
//! - **Cache**: every address is symbolized once per [`Symbolizer`].
//!
//! Corrupt or missing files never panic: they fall back as above.
//!
//! # Speed
//! Measured on the 2-core VM (`cargo bench -p metron-symbols`, README "Performance"): 4000
//! distinct addresses of the bench binary, cold (module list and DWARF context built inside
//! the measurement), in 147 ms, against 734 ms for binutils `addr2line -f -i -C` on the same
//! addresses: 5.0× faster (4.1–4.2× in criterion's estimates). Agreement with binutils on
//! 4000 addresses of the test binary: 100 % of file:line answers, 99.9 % of function names
//! (`tests/matches_binutils.rs`).
//!
//! # Example
//! ```
//! #[inline(never)]
//! fn hot_loop(n: u64) -> u64 {
//!     (0..n).map(std::hint::black_box).sum()
//! }
//!
//! let mut symbolizer = metron_symbols::Symbolizer::new();
//! let frames = symbolizer.symbolize(hot_loop as fn(u64) -> u64 as usize as u64);
//! // Innermost first: the last frame is the function itself, the others were inlined into it.
//! assert!(frames.last().unwrap().function.ends_with("hot_loop"));
//! ```

pub mod cubin;
mod jit;
mod module;
pub mod process;
pub mod reference;
mod sys;

use module::{Found, ModuleDebug};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

/// One frame of a symbolized address.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Frame {
    /// Demangled function name; `module+0xoffset` when nothing better is known. Never empty.
    pub function: String,
    /// Source file, when the line tables know it.
    pub file: Option<String>,
    /// Source line, when the line tables know it (0 is reported as `None`).
    pub line: Option<u32>,
    /// File name of the module (executable or shared object); `[unknown]` outside every module.
    pub module: Arc<str>,
    /// True when this frame was inlined into the next one (its caller) in the same slice.
    pub inlined: bool,
}

impl Frame {
    /// `file:line`, `file`, or `None`.
    pub fn location(&self) -> Option<String> {
        match (&self.file, self.line) {
            (Some(f), Some(l)) => Some(format!("{f}:{l}")),
            (Some(f), None) => Some(f.clone()),
            _ => None,
        }
    }
}

/// A module of the process, as the loader reported it.
#[derive(Clone, Debug)]
pub struct ModuleInfo {
    /// The file (for the executable, `/proc/self/exe`, which stays valid if it is replaced).
    pub path: PathBuf,
    /// Short name for frames: the file name.
    pub name: Arc<str>,
    /// Load bias: runtime address minus file address.
    pub bias: u64,
    /// Runtime `[start, end)` of its loaded segments.
    pub segments: Vec<(u64, u64)>,
}

struct Module {
    info: ModuleInfo,
    /// Built on first use.
    debug: Option<ModuleDebug>,
}

/// Counters of what a [`Symbolizer`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SymbolizerStats {
    /// Distinct addresses symbolized (cache misses).
    pub addresses: u64,
    /// Lookups answered from the cache.
    pub cache_hits: u64,
    /// Module contexts built.
    pub modules_loaded: u64,
    /// Of those, modules that had DWARF (in the file or a separate debug file).
    pub modules_with_dwarf: u64,
    /// Times the module list was read again after a miss.
    pub rescans: u64,
    /// Addresses that fell outside every module.
    pub unknown: u64,
    /// Of those, addresses named by a perf map or jitdump (JIT code, Python functions).
    pub jit: u64,
    /// Ranges read from `/tmp/perf-<pid>.map` so far.
    pub perf_map_entries: u64,
    /// Code loads read from `jit-<pid>.dump` so far.
    pub jitdump_entries: u64,
}

/// Symbolizes addresses of this process. See the crate docs.
pub struct Symbolizer {
    /// Sorted by first segment start.
    modules: Vec<Module>,
    /// (runtime start, end, index into `modules`) of every segment, sorted.
    segments: Vec<(u64, u64, usize)>,
    generation: Option<(u64, u64)>,
    cache: HashMap<u64, Box<[Frame]>>,
    unknown_module: Arc<str>,
    scratch: Vec<Found>,
    stats: SymbolizerStats,
    separate_debug_files: bool,
    /// The process whose addresses these are: `None` for this one (its modules from the
    /// loader), else another one (its modules from `/proc/<pid>/maps`).
    target: Option<u32>,
    /// `/proc/<pid>/maps` of the target at its last read (a miss reads it again if changed).
    target_maps: String,
    /// JIT code of the process (perf map, jitdump), made on the first address outside every
    /// module; made again after a fork (another pid).
    jit: Option<jit::JitMaps>,
    jit_module: Arc<str>,
}

impl Default for Symbolizer {
    fn default() -> Self {
        Symbolizer::new()
    }
}

impl Symbolizer {
    /// A symbolizer for the current process; reads the module list now (debug data is read
    /// lazily, per module, on first use).
    pub fn new() -> Symbolizer {
        let mut s = Symbolizer {
            modules: Vec::new(),
            segments: Vec::new(),
            generation: None,
            cache: HashMap::new(),
            unknown_module: Arc::from("[unknown]"),
            scratch: Vec::new(),
            stats: SymbolizerStats::default(),
            separate_debug_files: true,
            target: None,
            target_maps: String::new(),
            jit: None,
            jit_module: Arc::from("[jit]"),
        };
        s.rescan();
        s
    }

    /// A symbolizer for the addresses of another process, `pid` (what `metron sample --pid`
    /// samples from outside): its modules are read from `/proc/<pid>/maps` (again when an
    /// address falls outside every module and the mappings changed), their files from their
    /// paths; its JIT code from its perf map and jitdump. Its vDSO is not named.
    pub fn for_process(pid: u32) -> Symbolizer {
        let mut s = Symbolizer::new();
        s.target = Some(pid);
        s.modules.clear();
        s.rescan();
        s
    }

    /// The process whose addresses this symbolizer names.
    pub fn pid(&self) -> u32 {
        self.target.unwrap_or_else(std::process::id)
    }

    /// Reads what the process's perf map and jitdump gained since they were last read, now:
    /// called when the process exits (a file written by a process that exits before Metron
    /// symbolizes its samples is read then, while it is surely there).
    pub fn read_jit_maps(&mut self) {
        self.jit_maps().read_now();
        self.note_jit_stats();
    }

    fn jit_maps(&mut self) -> &mut jit::JitMaps {
        let pid = self.pid();
        if self.jit.as_ref().is_none_or(|j| j.pid() != pid) {
            self.jit = Some(jit::JitMaps::new(pid));
        }
        self.jit.as_mut().expect("just made")
    }

    fn note_jit_stats(&mut self) {
        if let Some(j) = &self.jit {
            self.stats.perf_map_entries = j.read_perf_map;
            self.stats.jitdump_entries = j.read_jitdump;
        }
    }

    /// Whether to look for separate debug files (`/usr/lib/debug`, `.gnu_debuglink`) of
    /// modules without DWARF (default: yes). Off, such modules are named from their symbol
    /// tables only. Applies to modules not yet used.
    pub fn separate_debug_files(mut self, on: bool) -> Symbolizer {
        self.separate_debug_files = on;
        self
    }

    /// The modules known now.
    pub fn modules(&self) -> impl Iterator<Item = &ModuleInfo> {
        self.modules.iter().map(|m| &m.info)
    }

    /// The module that holds runtime address `addr`, if one known now does.
    pub fn module_at(&self, addr: u64) -> Option<&ModuleInfo> {
        self.module_of(addr).map(|i| &self.modules[i].info)
    }

    /// What it did so far.
    pub fn stats(&self) -> SymbolizerStats {
        self.stats
    }

    /// Reads the module list again, keeping the contexts of modules still loaded at the same
    /// address.
    fn rescan(&mut self) {
        self.generation = sys::load_generation();
        let mut old: Vec<Module> = std::mem::take(&mut self.modules);
        let mut modules = Vec::new();
        let objects = match self.target {
            None => sys::loaded_objects(),
            Some(pid) => {
                self.target_maps =
                    std::fs::read_to_string(format!("/proc/{pid}/maps")).unwrap_or_default();
                process::loaded_objects(pid)
            }
        };
        for (i, obj) in objects.into_iter().enumerate() {
            if obj.segments.is_empty() {
                continue;
            }
            let (path, name) = if obj.name.is_empty() && i == 0 && self.target.is_none() {
                let real = std::fs::read_link("/proc/self/exe").ok();
                let name = real
                    .as_deref()
                    .and_then(Path::file_name)
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_else(|| "[exe]".into());
                (PathBuf::from("/proc/self/exe"), name)
            } else {
                let path = PathBuf::from(String::from_utf8_lossy(&obj.name).into_owned());
                let name = path
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_else(|| format!("[module {i}]"));
                (path, name)
            };
            let keep = old
                .iter()
                .position(|m| m.info.path == path && m.info.bias == obj.bias)
                .map(|p| old.swap_remove(p));
            modules.push(match keep {
                Some(m) => m,
                None => Module {
                    info: ModuleInfo {
                        path,
                        name: Arc::from(name),
                        bias: obj.bias,
                        segments: obj.segments,
                    },
                    debug: None,
                },
            });
        }
        modules.sort_by_key(|m| m.info.segments.first().map_or(0, |s| s.0));
        self.segments = modules
            .iter()
            .enumerate()
            .flat_map(|(i, m)| m.info.segments.iter().map(move |&(s, e)| (s, e, i)))
            .collect();
        self.segments.sort_unstable();
        self.modules = modules;
    }

    /// Whether the module list may have changed since it was read: the loader's counters for
    /// this process, the mappings for another one.
    fn modules_may_have_changed(&self) -> bool {
        match self.target {
            None => sys::load_generation() != self.generation,
            Some(pid) => std::fs::read_to_string(format!("/proc/{pid}/maps"))
                .is_ok_and(|maps| maps != self.target_maps),
        }
    }

    fn module_of(&self, addr: u64) -> Option<usize> {
        let i = self.segments.partition_point(|s| s.0 <= addr);
        let &(start, end, module) = self.segments.get(i.checked_sub(1)?)?;
        (start <= addr && addr < end).then_some(module)
    }

    /// Frames at `addr`, looked up as is (an interrupted instruction; for a return address
    /// use [`Symbolizer::symbolize_return`]). Innermost first; never empty.
    pub fn symbolize(&mut self, addr: u64) -> &[Frame] {
        if self.cache.contains_key(&addr) {
            self.stats.cache_hits += 1;
        } else {
            let frames = self.resolve(addr);
            self.cache.insert(addr, frames);
        }
        &self.cache[&addr]
    }

    /// Frames of the call that returns to `ret` (looked up at `ret - 1`, inside the call).
    pub fn symbolize_return(&mut self, ret: u64) -> &[Frame] {
        self.symbolize(ret.saturating_sub(1))
    }

    /// Symbolizes every address of `addrs` (as is), each distinct one once; then
    /// [`Symbolizer::cached`] answers for them without `&mut`.
    pub fn symbolize_all(&mut self, addrs: impl IntoIterator<Item = u64>) {
        for a in addrs {
            self.symbolize(a);
        }
    }

    /// Frames of an address already symbolized.
    pub fn cached(&self, addr: u64) -> Option<&[Frame]> {
        self.cache.get(&addr).map(|f| &**f)
    }

    /// The lookup addresses of a stack as the samplers record it: `frames[0]` as is (the
    /// interrupted instruction), the others minus one (return addresses).
    pub fn lookup_addresses(frames: &[u64]) -> impl Iterator<Item = u64> + '_ {
        frames
            .iter()
            .enumerate()
            .map(|(i, &a)| if i == 0 { a } else { a.saturating_sub(1) })
    }

    fn resolve(&mut self, addr: u64) -> Box<[Frame]> {
        self.stats.addresses += 1;
        let mut module = self.module_of(addr);
        if module.is_none() && self.modules_may_have_changed() {
            self.stats.rescans += 1;
            self.rescan();
            module = self.module_of(addr);
        }
        let Some(index) = module else {
            self.stats.unknown += 1;
            // Anonymous memory: JIT code, if the process described it.
            let found = self.jit_maps().lookup(addr).cloned();
            self.note_jit_stats();
            if let Some(s) = found {
                self.stats.jit += 1;
                return Box::new([Frame {
                    function: s.function,
                    file: s.file,
                    line: s.line,
                    module: Arc::clone(&self.jit_module),
                    inlined: false,
                }]);
            }
            return Box::new([Frame {
                function: format!("[unknown]+{addr:#x}"),
                file: None,
                line: None,
                module: Arc::clone(&self.unknown_module),
                inlined: false,
            }]);
        };
        let m = &mut self.modules[index];
        if m.debug.is_none() {
            let debug = if m.info.name.starts_with("linux-vdso") {
                let (start, end) = m.info.segments.first().copied().unwrap_or((0, 0));
                sys::vdso_image(start, end)
                    .map(|image| ModuleDebug::from_image(&image))
                    .unwrap_or_else(|| ModuleDebug::load(&m.info.path, false))
            } else {
                ModuleDebug::load(&m.info.path, self.separate_debug_files)
            };
            self.stats.modules_loaded += 1;
            self.stats.modules_with_dwarf += u64::from(debug.has_dwarf());
            m.debug = Some(debug);
        }
        let probe = addr.wrapping_sub(m.info.bias);
        let name = Arc::clone(&m.info.name);
        if let Some(debug) = &m.debug {
            debug.lookup(probe, &mut self.scratch);
        }
        let n = self.scratch.len();
        if n == 0 {
            return Box::new([Frame {
                function: format!("{name}+{probe:#x}"),
                file: None,
                line: None,
                module: name,
                inlined: false,
            }]);
        }
        self.scratch
            .drain(..)
            .enumerate()
            .map(|(i, f)| Frame {
                function: f
                    .function
                    .filter(|s| !s.is_empty())
                    .unwrap_or_else(|| format!("{name}+{probe:#x}")),
                file: f.file,
                line: f.line.filter(|&l| l != 0),
                module: Arc::clone(&name),
                inlined: i + 1 < n,
            })
            .collect()
    }
}

/// The process-wide symbolizer, shared by Metron's sinks (they run on the flusher thread;
/// contexts built for one sink serve the others).
pub fn shared() -> &'static Mutex<Symbolizer> {
    static SHARED: OnceLock<Mutex<Symbolizer>> = OnceLock::new();
    SHARED.get_or_init(|| Mutex::new(Symbolizer::new()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[inline(never)]
    fn marker_function_for_tests(x: u64) -> u64 {
        std::hint::black_box(x).wrapping_mul(31)
    }

    #[test]
    fn a_function_pointer_names_its_function() {
        let mut s = Symbolizer::new();
        let addr = marker_function_for_tests as fn(u64) -> u64 as usize as u64;
        let frames = s.symbolize(addr).to_vec();
        let last = frames.last().unwrap();
        assert!(
            last.function.contains("marker_function_for_tests"),
            "{frames:?}"
        );
        assert!(!last.inlined);
        assert!(
            last.file.as_deref().is_some_and(|f| f.ends_with("lib.rs")),
            "{frames:?}"
        );
        assert_eq!(s.stats().addresses, 1);
        s.symbolize(addr);
        assert_eq!(s.stats().cache_hits, 1);
    }

    #[test]
    fn the_vdso_is_named_from_its_image_in_memory() {
        let mut s = Symbolizer::new();
        let Some(vdso) = s
            .modules()
            .find(|m| m.name.starts_with("linux-vdso"))
            .cloned()
        else {
            return; // no vDSO in this process
        };
        // A function of the vDSO: find `clock_gettime` through its own symbol table.
        let image = sys::vdso_image(vdso.segments[0].0, vdso.segments[0].1).expect("image");
        let obj = object::File::parse(&*image).expect("the vDSO parses");
        use object::{Object, ObjectSymbol};
        let sym = obj
            .dynamic_symbols()
            .find(|s| s.name().is_ok_and(|n| n.ends_with("clock_gettime")))
            .expect("the vDSO exports clock_gettime");
        let frames = s.symbolize(sym.address() + vdso.bias + 1).to_vec();
        assert!(frames[0].function.ends_with("clock_gettime"), "{frames:?}");
        assert!(frames[0].module.starts_with("linux-vdso"));
    }

    #[test]
    fn an_address_outside_every_module_is_unknown_plus_address() {
        let mut s = Symbolizer::new();
        let frames = s.symbolize(0x10);
        assert_eq!(frames.len(), 1);
        assert_eq!(frames[0].function, "[unknown]+0x10");
        assert_eq!(&*frames[0].module, "[unknown]");
    }
}
