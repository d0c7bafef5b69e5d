//! One module's debug data: an addr2line [`Loader`] over the file that has the DWARF (the
//! module itself, or its separate debug file), and the module's own symbol table as the
//! fallback. Built once, on the first address that falls in the module.

use crate::sys;
use addr2line::Loader;
use object::{Object, ObjectSection, ObjectSymbol, SymbolKind};
use std::borrow::Cow;
use std::path::{Path, PathBuf};

/// Where separate debug files live (`.build-id/xx/yyyy.debug` and mirrored paths).
const DEBUG_ROOT: &str = "/usr/lib/debug";

/// A function symbol with its size.
struct Sym {
    addr: u64,
    size: u64,
    global: bool,
    name: Box<str>,
}

/// What one function lookup found at an address (inside one module).
pub(crate) struct Found {
    /// Demangled function name (DWARF, else symbol table).
    pub(crate) function: Option<String>,
    /// Source file, when the line table knows it.
    pub(crate) file: Option<String>,
    /// Source line, when the line table knows it.
    pub(crate) line: Option<u32>,
}

/// The debug data of one module.
pub(crate) struct ModuleDebug {
    dwarf: Option<Loader>,
    symbols: Vec<Sym>,
    /// File address ranges of executable sections: DWARF is asked only about these (the
    /// ranges of functions the linker dropped start at 0 and would claim the ELF header).
    text: Vec<(u64, u64)>,
    /// The file the DWARF came from (the module or its separate debug file).
    pub(crate) debug_file: Option<PathBuf>,
}

impl ModuleDebug {
    /// Reads what `path` offers. Never fails: a missing or corrupt file yields an empty
    /// `ModuleDebug` (every lookup then falls back to `module+offset`).
    /// `separate`: also look for a separate debug file when the module has no DWARF.
    pub(crate) fn load(path: &Path, separate: bool) -> ModuleDebug {
        let mut debug = ModuleDebug {
            dwarf: None,
            symbols: Vec::new(),
            text: Vec::new(),
            debug_file: None,
        };
        let Ok(map) = sys::map_file(path) else {
            return debug;
        };
        let Ok(obj) = object::File::parse(&*map) else {
            return debug;
        };
        debug.symbols = function_symbols(&obj);
        debug.text = obj
            .sections()
            .filter(|s| s.kind() == object::SectionKind::Text && s.size() > 0)
            .map(|s| (s.address(), s.address().saturating_add(s.size())))
            .collect();
        let dwarf_path = if has_dwarf(&obj) {
            Some(path.to_path_buf())
        } else if separate {
            separate_debug_file(&obj, path)
        } else {
            None
        };
        if let Some(p) = dwarf_path {
            // A debug file's symbol table is the full one when the module kept only .dynsym.
            if p != path && debug.symbols.len() < 64 {
                if let Ok(map) = sys::map_file(&p) {
                    if let Ok(dobj) = object::File::parse(&*map) {
                        let more = function_symbols(&dobj);
                        if more.len() > debug.symbols.len() {
                            debug.symbols = more;
                        }
                    }
                }
            }
            // A panic inside the DWARF parser on a corrupt file must not take the flusher
            // down: it is caught and the module keeps its symbol table.
            let loaded = std::panic::catch_unwind(|| Loader::new(&p).ok())
                .ok()
                .flatten();
            if loaded.is_some() {
                debug.debug_file = Some(p);
            }
            debug.dwarf = loaded;
        }
        debug
    }

    /// The symbol table of an ELF image that has no file: the vDSO, copied from memory. It
    /// has no DWARF; its exported functions (`clock_gettime`, `gettimeofday`, ...) are named.
    pub(crate) fn from_image(image: &[u8]) -> ModuleDebug {
        let mut debug = ModuleDebug {
            dwarf: None,
            symbols: Vec::new(),
            text: Vec::new(),
            debug_file: None,
        };
        if let Ok(obj) = object::File::parse(image) {
            debug.symbols = function_symbols(&obj);
        }
        debug
    }

    /// True when DWARF was found for the module.
    pub(crate) fn has_dwarf(&self) -> bool {
        self.dwarf.is_some()
    }

    /// Frames at file address `probe`, innermost first (inlined callees, then the function
    /// that contains them). Empty when neither DWARF nor the symbol table knows it.
    pub(crate) fn lookup(&self, probe: u64, out: &mut Vec<Found>) {
        out.clear();
        let in_text = self.text.iter().any(|&(s, e)| s <= probe && probe < e);
        if let Some(loader) = self.dwarf.as_ref().filter(|_| in_text) {
            let found = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                let mut frames = Vec::new();
                if let Ok(mut iter) = loader.find_frames(probe) {
                    while let Ok(Some(frame)) = iter.next() {
                        let function = frame
                            .function
                            .as_ref()
                            .and_then(|f| f.demangle().ok())
                            .map(Cow::into_owned);
                        let (file, line) = match &frame.location {
                            Some(l) => (l.file.map(str::to_owned), l.line),
                            None => (None, None),
                        };
                        frames.push(Found {
                            function,
                            file,
                            line,
                        });
                    }
                }
                frames
            }));
            if let Ok(frames) = found {
                *out = frames;
            }
        }
        // The outermost frame is the real function: name it from the symbol table, whose
        // demangled name is the full path (`<T as Trait>::method`, `crate::module::f`), where
        // DWARF without linkage names (`debug = "line-tables-only"`) has only `method`; and
        // when DWARF has no name at all (assembly, a unit without a subprogram entry).
        {
            if let Some(name) = self.symbol(probe) {
                let name = addr2line::demangle_auto(Cow::Borrowed(name), None).into_owned();
                match out.last_mut() {
                    Some(f) => f.function = Some(name),
                    None => out.push(Found {
                        function: Some(name),
                        file: None,
                        line: None,
                    }),
                }
            }
        }
    }

    /// The function symbol whose `[addr, addr + size)` holds `probe`.
    fn symbol(&self, probe: u64) -> Option<&str> {
        let end = self.symbols.partition_point(|s| s.addr <= probe);
        // Symbols may overlap (aliases, nested labels): look at a few before the last one.
        self.symbols[..end]
            .iter()
            .rev()
            .take(8)
            .find(|s| probe < s.addr.saturating_add(s.size.max(1)))
            .map(|s| &*s.name)
    }
}

/// True when the object carries line tables.
fn has_dwarf(obj: &object::File<'_>) -> bool {
    obj.section_by_name(".debug_info")
        .is_some_and(|s| s.size() > 0 && s.kind() != object::SectionKind::UninitializedData)
}

/// Function symbols (`.symtab`, else `.dynsym`), sorted by address, with sizes.
fn function_symbols(obj: &object::File<'_>) -> Vec<Sym> {
    let mut out = Vec::new();
    let mut add = |sym: object::Symbol<'_, '_>| {
        if sym.kind() == SymbolKind::Text && sym.address() != 0 && sym.is_definition() {
            if let Ok(name) = sym.name() {
                if !name.is_empty() {
                    out.push(Sym {
                        addr: sym.address(),
                        size: sym.size(),
                        global: sym.is_global(),
                        name: name.into(),
                    });
                }
            }
        }
    };
    let mut any = false;
    for sym in obj.symbols() {
        any = true;
        add(sym);
    }
    if !any {
        for sym in obj.dynamic_symbols() {
            add(sym);
        }
    }
    // Aliases share an address: keep one, the name a user would call (`getpid`, not
    // `__GI___getpid`): global before local, fewer leading underscores, shorter.
    out.sort_by(|a, b| a.addr.cmp(&b.addr).then_with(|| rank(a).cmp(&rank(b))));
    out.dedup_by_key(|s| s.addr);
    out
}

fn rank(s: &Sym) -> (bool, usize, usize) {
    let underscores = s.name.len() - s.name.trim_start_matches('_').len();
    (!s.global, underscores, s.name.len())
}

/// The separate debug file of a stripped module: by build id under `/usr/lib/debug/.build-id`,
/// then by `.gnu_debuglink` next to the module, in its `.debug/` folder and under
/// `/usr/lib/debug/<dir>/` (gdb's search order). Only a file that really has DWARF counts.
fn separate_debug_file(obj: &object::File<'_>, path: &Path) -> Option<PathBuf> {
    let mut candidates = Vec::new();
    if let Ok(Some(id)) = obj.build_id() {
        if id.len() >= 2 {
            let hex: String = id.iter().map(|b| format!("{b:02x}")).collect();
            candidates.push(
                Path::new(DEBUG_ROOT)
                    .join(".build-id")
                    .join(&hex[..2])
                    .join(format!("{}.debug", &hex[2..])),
            );
        }
    }
    if let Ok(Some((name, _crc))) = obj.gnu_debuglink() {
        if let (Ok(name), Some(dir)) = (std::str::from_utf8(name), path.parent()) {
            if !name.is_empty() && !name.contains('/') {
                candidates.push(dir.join(name));
                candidates.push(dir.join(".debug").join(name));
                let rel = dir.strip_prefix("/").unwrap_or(dir);
                candidates.push(Path::new(DEBUG_ROOT).join(rel).join(name));
            }
        }
    }
    candidates.into_iter().find(|c| {
        c.as_path() != path
            && sys::map_file(c)
                .ok()
                .and_then(|m| object::File::parse(&*m).ok().map(|o| has_dwarf(&o)))
                .unwrap_or(false)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_or_corrupt_file_gives_an_empty_module_not_a_panic() {
        let missing = ModuleDebug::load(Path::new("/nonexistent/libnothing.so"), true);
        assert!(!missing.has_dwarf() && missing.symbols.is_empty());
        let dir = std::env::temp_dir().join(format!("metron-symbols-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let corrupt = dir.join("corrupt.so");
        // An ELF magic followed by garbage.
        let mut bytes = b"\x7fELF\x02\x01\x01\0".to_vec();
        bytes.extend((0..4096u32).map(|i| (i * 7919 % 251) as u8));
        std::fs::write(&corrupt, bytes).unwrap();
        let m = ModuleDebug::load(&corrupt, true);
        let mut out = Vec::new();
        m.lookup(0x1234, &mut out);
        assert!(out.is_empty());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
