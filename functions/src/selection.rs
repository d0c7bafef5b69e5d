//! `METRON_FUNCTIONS*` compiled once, and the verdict for one function.

use metron::settings::FunctionSettings;
use regex::Regex;

/// Why a function whose calls could be caught is not made a region.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SkipReason {
    /// Its name does not match `METRON_FUNCTIONS` (not listed one by one: only counted).
    NotMatched,
    /// Its name matches `METRON_FUNCTIONS_EXCLUDE`.
    Excluded,
    /// Fewer machine instructions than `METRON_FUNCTIONS_MIN_INSTRUCTIONS`.
    TooShort,
    /// It lives in a shared library that `METRON_FUNCTIONS_IN` does not name.
    LibraryNotSelected,
    /// No symbol names its address (a stripped module).
    NoSymbol,
    /// The decision table is full: the function runs untraced (counted).
    TableFull,
}

impl SkipReason {
    /// The word written into `metadata.json`.
    pub fn word(self) -> &'static str {
        match self {
            SkipReason::NotMatched => "not matched by METRON_FUNCTIONS",
            SkipReason::Excluded => "matched by METRON_FUNCTIONS_EXCLUDE",
            SkipReason::TooShort => "fewer instructions than METRON_FUNCTIONS_MIN_INSTRUCTIONS",
            SkipReason::LibraryNotSelected => {
                "in a shared library METRON_FUNCTIONS_IN does not name"
            }
            SkipReason::NoSymbol => "no symbol names the address (stripped module)",
            SkipReason::TableFull => "the decision table is full",
        }
    }
}

/// The selection in force, with its expressions compiled.
#[derive(Debug)]
pub struct Selection {
    /// The settings it was built from.
    pub settings: FunctionSettings,
    include: Option<Regex>,
    exclude: Option<Regex>,
}

impl Selection {
    /// Compiles the settings' expressions (the registry has already checked that they
    /// compile; one that does not selects nothing).
    pub fn new(settings: FunctionSettings) -> Selection {
        let compile = |p: &str| (!p.is_empty()).then(|| Regex::new(p).ok()).flatten();
        Selection {
            include: compile(&settings.pattern),
            exclude: compile(&settings.exclude),
            settings,
        }
    }

    /// Whether anything can be selected.
    pub fn enabled(&self) -> bool {
        self.include.is_some()
    }

    /// The verdict for a function named `name` with `instructions` machine instructions
    /// (asked only when the name matched: decoding costs more than matching).
    pub fn judge(&self, name: &str, instructions: impl FnOnce() -> u64) -> Result<(), SkipReason> {
        let Some(include) = &self.include else {
            return Err(SkipReason::NotMatched);
        };
        if !include.is_match(name) {
            return Err(SkipReason::NotMatched);
        }
        if self.exclude.as_ref().is_some_and(|e| e.is_match(name)) {
            return Err(SkipReason::Excluded);
        }
        if self.settings.min_instructions > 0 && instructions() < self.settings.min_instructions {
            return Err(SkipReason::TooShort);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use metron::settings::Settings;

    fn selection(pairs: &[(&str, &str)]) -> Selection {
        let s = Settings::from_lookup(|name| {
            pairs
                .iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.to_string())
        });
        Selection::new(s.functions)
    }

    #[test]
    fn a_name_is_selected_when_matched_not_excluded_and_long_enough() {
        let s = selection(&[
            ("METRON_FUNCTIONS", "^(fib|leaf|helper)$"),
            ("METRON_FUNCTIONS_EXCLUDE", "helper"),
            ("METRON_FUNCTIONS_MIN_INSTRUCTIONS", "10"),
        ]);
        assert_eq!(s.judge("fib", || 40), Ok(()));
        assert_eq!(s.judge("fibonacci", || 40), Err(SkipReason::NotMatched));
        assert_eq!(s.judge("helper", || 40), Err(SkipReason::Excluded));
        assert_eq!(s.judge("leaf", || 9), Err(SkipReason::TooShort));
    }

    #[test]
    fn instructions_are_counted_only_for_matched_names() {
        let s = selection(&[
            ("METRON_FUNCTIONS", "^a$"),
            ("METRON_FUNCTIONS_MIN_INSTRUCTIONS", "5"),
        ]);
        let verdict = s.judge("b", || {
            panic!("decoded a function whose name did not match")
        });
        assert_eq!(verdict, Err(SkipReason::NotMatched));
    }

    #[test]
    fn nothing_is_selected_when_the_setting_is_empty() {
        let s = selection(&[]);
        assert!(!s.enabled());
        assert_eq!(s.judge("main", || 100), Err(SkipReason::NotMatched));
    }
}
