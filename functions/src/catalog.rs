//! The functions of one loaded module, read from its ELF symbol table (`.symtab`, else
//! `.dynsym`) and demangled; looked up by address when a function is first called.

use object::{Object, ObjectSymbol, SymbolKind};
use std::collections::HashMap;
use std::sync::Arc;

/// One function of a module.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Function {
    /// Its address in the file (add the module's bias for the address in memory).
    pub file_address: u64,
    /// Its size in bytes (0 when the symbol table does not say).
    pub size: u64,
    /// Its demangled name without parameters (C++ `ns::Class::method`, Rust
    /// `crate::module::function` without the hash), or the symbol as it is.
    pub name: String,
}

/// The functions of one module, sorted by address.
#[derive(Debug, Default)]
pub struct ModuleFunctions {
    functions: Vec<Function>,
}

impl ModuleFunctions {
    /// Reads the symbol table of the ELF file at `path`; an unreadable file gives no
    /// functions (its calls are then skipped as having no symbol).
    pub fn read(path: &str) -> ModuleFunctions {
        match std::fs::read(path) {
            Ok(bytes) => ModuleFunctions::parse(&bytes),
            Err(_) => ModuleFunctions::default(),
        }
    }

    /// Parses an ELF image.
    pub fn parse(bytes: &[u8]) -> ModuleFunctions {
        let Ok(file) = object::File::parse(bytes) else {
            return ModuleFunctions::default();
        };
        let mut functions: Vec<Function> = file
            .symbols()
            .chain(file.dynamic_symbols())
            .filter(|s| s.kind() == SymbolKind::Text && s.is_definition() && s.address() != 0)
            .filter_map(|s| {
                Some(Function {
                    file_address: s.address(),
                    size: s.size(),
                    name: demangle(s.name().ok()?),
                })
            })
            .collect();
        // One entry per address: a global name before a local alias, a sized one before an
        // unsized one (`.symtab` and `.dynsym` repeat exported functions).
        functions.sort_by(|a, b| {
            a.file_address
                .cmp(&b.file_address)
                .then(b.size.cmp(&a.size))
        });
        functions.dedup_by_key(|f| f.file_address);
        ModuleFunctions { functions }
    }

    /// The function that starts at `file_address`.
    pub fn at(&self, file_address: u64) -> Option<&Function> {
        let i = self
            .functions
            .binary_search_by_key(&file_address, |f| f.file_address)
            .ok()?;
        self.functions.get(i)
    }

    /// How many functions the module has.
    pub fn len(&self) -> usize {
        self.functions.len()
    }

    /// Whether the module has none (stripped).
    pub fn is_empty(&self) -> bool {
        self.functions.is_empty()
    }
}

/// The modules read so far, by path (cold: behind the engine's lock).
#[derive(Debug, Default)]
pub struct Catalog {
    modules: HashMap<String, Arc<ModuleFunctions>>,
}

impl Catalog {
    /// The functions of the module at `path` (the executable: empty path), read on first use.
    pub fn module(&mut self, path: &str) -> Arc<ModuleFunctions> {
        if let Some(m) = self.modules.get(path) {
            return m.clone();
        }
        let file = if path.is_empty() {
            "/proc/self/exe"
        } else {
            path
        };
        let m = Arc::new(ModuleFunctions::read(file));
        self.modules.insert(path.to_string(), m.clone());
        m
    }
}

/// A symbol as users write the function's name: Rust (legacy and v0 manglings) without the
/// hash, C++ without parameters, anything else as it is.
pub fn demangle(symbol: &str) -> String {
    if let Ok(d) = rustc_demangle::try_demangle(symbol) {
        return format!("{d:#}");
    }
    if symbol.starts_with("_Z") {
        if let Ok(sym) = cpp_demangle::Symbol::new(symbol) {
            let options = cpp_demangle::DemangleOptions::new()
                .no_params()
                .no_return_type();
            if let Ok(text) = sym.demangle(&options) {
                return text;
            }
        }
    }
    symbol.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_demangled_as_users_write_them() {
        assert_eq!(demangle("_ZN2ns5Solve3runEi"), "ns::Solve::run");
        assert_eq!(
            demangle("_ZN4core3ptr13drop_in_place17h0123456789abcdefE"),
            "core::ptr::drop_in_place"
        );
        assert_eq!(demangle("fib"), "fib");
    }

    #[test]
    fn the_test_binary_finds_its_own_functions_by_address() {
        let m = ModuleFunctions::read("/proc/self/exe");
        assert!(m.len() > 100, "{} functions", m.len());
        let f = m
            .functions
            .iter()
            .find(|f| f.name.ends_with("names_are_demangled_as_users_write_them"))
            .expect("this test's function is in the symbol table");
        assert_eq!(m.at(f.file_address), Some(f));
        assert_eq!(m.at(f.file_address + 1), None);
    }
}
