//! The engines that catch a selected function's entry and exit, one per file (uftrace's
//! `arch/x86_64` layout): [`instrument_functions`] serves code built with
//! `-finstrument-functions`. What they share is [`Decider`]: the verdict for one function,
//! from its address.

pub mod instrument_functions;

use crate::catalog::Catalog;
use crate::report::Listed;
use crate::selection::{Selection, SkipReason};
use metron::settings::{FunctionLibraries, FunctionSettings};
use serde_json::{json, Value};

/// Decides functions by address: finds the module, the symbol, and asks the selection.
/// Cold: it reads files, demangles and runs regular expressions.
pub struct Decider {
    selection: Selection,
    catalog: Catalog,
}

impl Decider {
    /// The selection of `settings`.
    pub fn new(settings: FunctionSettings) -> Decider {
        Decider {
            selection: Selection::new(settings),
            catalog: Catalog::default(),
        }
    }

    /// The selection of the process's `METRON_FUNCTIONS*` environment variables.
    pub fn from_env() -> Decider {
        Decider::new(metron::settings::Settings::from_env().functions)
    }

    /// Whether anything can be selected.
    pub fn enabled(&self) -> bool {
        self.selection.enabled()
    }

    /// The verdict for the function that starts at `address` of this process, with what the
    /// report lists about it.
    pub fn decide(&mut self, address: usize) -> (Result<(), SkipReason>, Listed) {
        let mut listed = Listed {
            name: format!("{address:#x}"),
            module: String::new(),
            file_address: address as u64,
            skipped: None,
        };
        let Some(module) = crate::sys::module_of(address as u64) else {
            return (Err(SkipReason::NoSymbol), listed);
        };
        listed.module = module.path.clone();
        let executable = module.path.is_empty();
        if !executable && !self.selection.settings.library_selected(&module.path) {
            return (Err(SkipReason::LibraryNotSelected), listed);
        }
        let functions = self.catalog.module(&module.path);
        let file_address = (address as u64).wrapping_sub(module.bias);
        listed.file_address = file_address;
        let Some(function) = functions.at(file_address) else {
            return (Err(SkipReason::NoSymbol), listed);
        };
        listed.name = function.name.clone();
        let size = function.size;
        let verdict = self.selection.judge(&function.name, || {
            // SAFETY: the extent is the function's own, from its module's symbol table plus
            // the bias of that module, which is loaded: one of its functions is running.
            unsafe { crate::instructions::count_loaded(address as u64, size) }
        });
        (verdict, listed)
    }

    /// The settings as `metadata.json` shows them.
    pub fn settings_json(&self) -> Value {
        settings_json(&self.selection.settings)
    }
}

/// `METRON_FUNCTIONS*` as `metadata.json`'s `functions.settings` shows them.
pub fn settings_json(s: &FunctionSettings) -> Value {
    json!({
        "pattern": s.pattern,
        "exclude": s.exclude,
        "min_instructions": s.min_instructions,
        "libraries": match &s.libraries {
            FunctionLibraries::ExecutableOnly => json!("executable"),
            FunctionLibraries::All => json!("all"),
            FunctionLibraries::Named(words) => json!(words),
        },
    })
}
