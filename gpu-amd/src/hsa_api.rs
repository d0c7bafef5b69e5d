//! `METRON_GPU_AMD_HSA_API`: which HSA API calls become `HSA API tid N` slices on the HSA
//! path, as `rocprofv3 --hsa-trace` (or `--hsa-core-trace`, `--hsa-amd-trace`) records them.
//!
//! The five entries Metron replaces anyway (`hsa_queue_create`, `hsa_queue_destroy`,
//! `hsa_executable_freeze`, `hsa_memory_copy`, `hsa_amd_memory_async_copy`) record through
//! their own hooks. Every other selected entry gets the pass-through wrapper of
//! `sys_api_trace.rs`; entries not selected stay the runtime's own and cost nothing.

use crate::api_calls;
use crate::api_table::{CORE_ENTRIES, ENTRIES, NAMES};
use crate::sys::{self, HsaApiTable};
use crate::sys_api_trace::{self, ORIGINAL};
use std::sync::atomic::Ordering;

/// The setting's name.
pub const SETTING: &str = "METRON_GPU_AMD_HSA_API";

/// The entries Metron's own hooks replace (recorded through those hooks, never re-wrapped).
pub const HOOKED: [&str; 5] = [
    "hsa_queue_create",
    "hsa_queue_destroy",
    "hsa_executable_freeze",
    "hsa_memory_copy",
    "hsa_amd_memory_async_copy",
];

/// What the setting asked for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Selection {
    /// By entry index: record this call.
    pub enabled: Vec<bool>,
    /// Items not understood (each message says what is accepted); the rest still applies.
    pub problems: Vec<String>,
}

/// The index of `name` among the table entries (`hsa_signal_create` → its index).
pub fn index_of(name: &str) -> Option<usize> {
    NAMES.iter().position(|n| *n == name)
}

/// Parses the setting: a comma-separated list of `wrapped` (the default: the five calls Metron
/// hooks), `core` (every `CoreApiTable` entry: `hsa.h`), `amd` (every `AmdExtTable` entry:
/// `hsa_ext_amd.h`), `all`, `none`, or function names.
pub fn parse(value: Option<&str>) -> Selection {
    let mut enabled = vec![false; ENTRIES];
    let mut problems = Vec::new();
    let value = value
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .unwrap_or("wrapped");
    for item in value.split(',').map(str::trim).filter(|i| !i.is_empty()) {
        let range = match item.to_ascii_lowercase().as_str() {
            "none" => {
                enabled.iter_mut().for_each(|e| *e = false);
                continue;
            }
            "wrapped" => {
                for name in HOOKED {
                    enabled[index_of(name).expect("hooked entries are table entries")] = true;
                }
                continue;
            }
            "core" => 0..CORE_ENTRIES,
            "amd" => CORE_ENTRIES..ENTRIES,
            "all" => 0..ENTRIES,
            _ => match index_of(item) {
                Some(_) if sys_api_trace::UNWRAPPED.contains(&item) => {
                    problems.push(format!(
                        "{SETTING}: `{item}` cannot be traced: its prototype is not in the \
                         headers Metron was built from"
                    ));
                    continue;
                }
                Some(i) => i..i + 1,
                None => {
                    problems.push(format!(
                        "{SETTING}: `{item}` is not an HSA API function; accepted: wrapped, \
                         core, amd, all, none, or function names of hsa.h and hsa_ext_amd.h \
                         such as hsa_signal_create ({ENTRIES} in all, `metron avail` lists \
                         them)"
                    ));
                    continue;
                }
            },
        };
        enabled[range].iter_mut().for_each(|e| *e = true);
    }
    Selection { enabled, problems }
}

/// One of the two API tables.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Table {
    /// `CoreApiTable`: `hsa.h`.
    Core,
    /// `AmdExtTable`: `hsa_ext_amd.h`.
    Amd,
}

impl Table {
    /// The setting's word for it.
    pub fn name(self) -> &'static str {
        match self {
            Table::Core => "core",
            Table::Amd => "amd",
        }
    }

    fn range(self) -> std::ops::Range<usize> {
        match self {
            Table::Core => 0..CORE_ENTRIES,
            Table::Amd => CORE_ENTRIES..ENTRIES,
        }
    }
}

/// The selected functions of `table`, and whether that is all of them (for ROCprofiler-SDK,
/// which takes operations per table).
pub fn selected_in(selection: &Selection, table: Table) -> (Vec<&'static str>, bool) {
    let range = table.range();
    let names: Vec<&'static str> = range
        .clone()
        .filter(|&i| selection.enabled[i])
        .map(|i| NAMES[i])
        .collect();
    let whole = names.len() == range.len();
    (names, whole)
}

/// Points every selected entry the runtime filled (other than Metron's own hooks) at its
/// wrapper, after saving the runtime's entry for the wrapper to call. `async_copy_hooked`:
/// Metron hooked `hsa_amd_memory_async_copy` (it does when the runtime times copies).
///
/// # Safety
/// `table` passed [`sys::check_table`]; called from `OnLoad`, before the application uses the
/// table and after Metron copied the entries it calls itself.
pub unsafe fn install(table: *mut HsaApiTable, selection: &Selection, async_copy_hooked: bool) {
    api_calls::select(&selection.enabled);
    let hooked: Vec<usize> = HOOKED
        .iter()
        .filter(|&&n| async_copy_hooked || n != "hsa_amd_memory_async_copy")
        .filter_map(|n| index_of(n))
        .collect();
    // SAFETY: the caller's contract.
    let [core, amd] = unsafe { sys::table_entries(table) };
    let slots = core.iter_mut().enumerate().chain(
        amd.iter_mut()
            .enumerate()
            .map(|(i, e)| (CORE_ENTRIES + i, e)),
    );
    for (id, slot) in slots {
        if !selection.enabled[id] || hooked.contains(&id) {
            continue;
        }
        let (Some(original), Some(wrapper)) = (*slot, sys_api_trace::wrapper(id)) else {
            continue;
        };
        ORIGINAL[id].store(original as usize, Ordering::Release);
        *slot = Some(wrapper);
    }
}

/// How many calls are recorded (the hooked ones count when selected).
pub fn traced_count() -> usize {
    (0..ENTRIES).filter(|&i| api_calls::enabled(i)).count()
}

/// Entries given a wrapper by [`install`] (those whose runtime entry it saved).
pub fn wrapped_count() -> usize {
    ORIGINAL
        .iter()
        .filter(|o| o.load(Ordering::Relaxed) != 0)
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(s: &Selection) -> Vec<&'static str> {
        (0..ENTRIES)
            .filter(|&i| s.enabled[i])
            .map(|i| NAMES[i])
            .collect()
    }

    #[test]
    fn the_default_is_the_hooked_calls() {
        let s = parse(None);
        assert_eq!(names(&s).len(), 5);
        for n in HOOKED {
            assert!(names(&s).contains(&n), "{n}");
        }
        assert_eq!(parse(Some(" ")), s);
    }

    #[test]
    fn groups_names_and_none_combine_in_order() {
        let core = parse(Some("core"));
        assert_eq!(names(&core).len(), CORE_ENTRIES);
        assert!(names(&core).contains(&"hsa_signal_create"));
        assert!(!names(&core).contains(&"hsa_amd_memory_pool_allocate"));
        let amd = parse(Some("amd"));
        assert_eq!(names(&amd).len(), ENTRIES - CORE_ENTRIES);
        assert_eq!(names(&parse(Some("all"))).len(), ENTRIES);
        assert_eq!(
            names(&parse(Some("hsa_signal_create, hsa_amd_memory_fill"))),
            ["hsa_signal_create", "hsa_amd_memory_fill"]
        );
        assert!(names(&parse(Some("all,none"))).is_empty());
        assert_eq!(
            names(&parse(Some("none,hsa_init"))),
            ["hsa_init"],
            "none clears what came before only"
        );
    }

    #[test]
    fn selections_split_by_table() {
        let s = parse(Some("amd,hsa_init"));
        assert_eq!(selected_in(&s, Table::Core), (vec!["hsa_init"], false));
        let (amd, whole) = selected_in(&s, Table::Amd);
        assert_eq!((amd.len(), whole), (ENTRIES - CORE_ENTRIES, true));
        assert_eq!(
            selected_in(&parse(Some("none")), Table::Core),
            (vec![], false)
        );
    }

    #[test]
    fn an_unknown_name_is_reported_and_the_rest_kept() {
        let s = parse(Some("hsa_signal_create,hsa_no_such_call"));
        assert_eq!(names(&s), ["hsa_signal_create"]);
        assert_eq!(s.problems.len(), 1);
        assert!(
            s.problems[0].contains("`hsa_no_such_call`"),
            "{:?}",
            s.problems
        );
        assert!(s.problems[0].contains("accepted: wrapped, core, amd, all, none"));
    }

    #[test]
    fn every_entry_has_a_wrapper_and_a_signature() {
        assert_eq!(NAMES.len(), ENTRIES);
        assert!(sys_api_trace::UNWRAPPED.is_empty());
        assert_eq!(sys_api_trace::SIGNATURES.len(), ENTRIES);
        assert!((0..ENTRIES).all(|i| sys_api_trace::wrapper(i).is_some()));
        assert!(
            NAMES[CORE_ENTRIES].starts_with("hsa_amd_"),
            "{}",
            NAMES[CORE_ENTRIES]
        );
        assert!(!NAMES[CORE_ENTRIES - 1].starts_with("hsa_amd_"));
    }
}
