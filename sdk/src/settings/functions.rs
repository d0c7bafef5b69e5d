//! `METRON_FUNCTIONS*`: which functions' calls become regions without a change to the source.
//! The engines (`metron-functions`, the hooks in libmetron, the Python package) read these
//! values; their meaning is documented in the user guide's chapter "Functions without changing
//! the source" (`docs/src/functions.md`).

/// What `METRON_FUNCTIONS_MIN_INSTRUCTIONS=auto` becomes when `METRON_FUNCTIONS` matches every
/// name: rocprof-sys-instrument's default, which keeps short leaf functions of a big program
/// out.
pub const AUTO_MIN_INSTRUCTIONS_FOR_EVERYTHING: u64 = 1024;

/// Which shared libraries' functions may be selected (`METRON_FUNCTIONS_IN`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FunctionLibraries {
    /// The executable's functions only (the default).
    ExecutableOnly,
    /// Every loaded library's too (`all`).
    All,
    /// The libraries whose file name contains one of these words.
    Named(Vec<String>),
}

/// The engine asked for (`METRON_FUNCTIONS_ENGINE`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FunctionEngine {
    /// Whatever the program's build allows.
    Auto,
    /// libmetron's `__cyg_profile_func_enter/exit` (`-finstrument-functions`).
    InstrumentFunctions,
}

/// The function selection in force.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FunctionSettings {
    /// `METRON_FUNCTIONS`: the expression a function's demangled name must match; empty: off.
    pub pattern: String,
    /// `METRON_FUNCTIONS_EXCLUDE`: names matching it are never selected; empty: none.
    pub exclude: String,
    /// `METRON_FUNCTIONS_MIN_INSTRUCTIONS`, `auto` resolved.
    pub min_instructions: u64,
    /// `METRON_FUNCTIONS_IN`.
    pub libraries: FunctionLibraries,
    /// `METRON_FUNCTIONS_ENGINE`.
    pub engine: FunctionEngine,
}

impl FunctionSettings {
    /// Builds the selection from the registry's checked values (a rejected value has already
    /// been replaced by its default and reported).
    pub(crate) fn from_values(
        pattern: String,
        exclude: String,
        min_instructions: &str,
        libraries: &str,
        engine: &str,
    ) -> FunctionSettings {
        let min_instructions = match min_instructions.parse::<u64>() {
            Ok(n) => n,
            Err(_) if matches_every_name(&pattern) => AUTO_MIN_INSTRUCTIONS_FOR_EVERYTHING,
            Err(_) => 0,
        };
        let words: Vec<String> = libraries
            .split(',')
            .map(str::trim)
            .filter(|w| !w.is_empty())
            .map(String::from)
            .collect();
        let libraries = if words.is_empty() {
            FunctionLibraries::ExecutableOnly
        } else if words.iter().any(|w| w.eq_ignore_ascii_case("all")) {
            FunctionLibraries::All
        } else {
            FunctionLibraries::Named(words)
        };
        let engine = match engine {
            "instrument-functions" => FunctionEngine::InstrumentFunctions,
            _ => FunctionEngine::Auto,
        };
        FunctionSettings {
            pattern,
            exclude,
            min_instructions,
            libraries,
            engine,
        }
    }

    /// Whether any function is to be selected at all.
    pub fn enabled(&self) -> bool {
        !self.pattern.is_empty()
    }

    /// Whether functions of the shared library at `path` may be selected (the executable's
    /// always may).
    pub fn library_selected(&self, path: &str) -> bool {
        let file = path.rsplit('/').next().unwrap_or(path);
        match &self.libraries {
            FunctionLibraries::ExecutableOnly => false,
            FunctionLibraries::All => true,
            FunctionLibraries::Named(words) => words.iter().any(|w| file.contains(w.as_str())),
        }
    }
}

/// Whether `pattern` is one of the spellings of "every name" (what `auto` keys on).
pub fn matches_every_name(pattern: &str) -> bool {
    matches!(
        pattern.trim(),
        "." | ".*" | ".+" | "^" | "^.*" | "^.+" | "^.*$" | "^.+$" | "(?s)." | "(?s).*"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_keeps_short_functions_out_only_when_everything_is_selected() {
        let every = FunctionSettings::from_values(".".into(), "".into(), "auto", "", "auto");
        assert_eq!(every.min_instructions, AUTO_MIN_INSTRUCTIONS_FOR_EVERYTHING);
        let named = FunctionSettings::from_values("^fib$".into(), "".into(), "auto", "", "auto");
        assert_eq!(named.min_instructions, 0);
        let explicit = FunctionSettings::from_values(".".into(), "".into(), "7", "", "auto");
        assert_eq!(explicit.min_instructions, 7);
    }

    #[test]
    fn libraries_are_matched_by_file_name() {
        let s = FunctionSettings::from_values("f".into(), "".into(), "0", "libfoo, libbar", "");
        assert!(s.library_selected("/usr/lib/x86_64-linux-gnu/libfoo.so.1"));
        assert!(!s.library_selected("/opt/libfoo/libbaz.so"));
        let none = FunctionSettings::from_values("f".into(), "".into(), "0", "", "");
        assert!(!none.library_selected("/usr/lib/libfoo.so"));
        let all = FunctionSettings::from_values("f".into(), "".into(), "0", "ALL", "");
        assert!(all.library_selected("/usr/lib/libfoo.so"));
    }
}
