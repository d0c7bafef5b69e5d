//! The functions each engine made regions and those it skipped, with the reason: the
//! `functions` section of `metadata.json` and one line on stderr at the end of the run.

use crate::selection::SkipReason;
use crate::shadow_stack::Repairs;
use serde_json::{json, Value};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// One function listed in the report.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Listed {
    /// Its demangled name.
    pub name: String,
    /// Its module (the executable: empty).
    pub module: String,
    /// Its address in the module's file.
    pub file_address: u64,
    /// Why it was skipped; `None` when selected.
    pub skipped: Option<SkipReason>,
}

/// What one engine decided, and what its shadow stacks repaired.
pub struct Report {
    engine: &'static str,
    listed: Mutex<Vec<Listed>>,
    not_matched: AtomicU64,
    library_not_selected: AtomicU64,
    no_symbol: AtomicU64,
    table_full: AtomicU64,
    ended_without_exit: AtomicU64,
    ended_at_thread_exit: AtomicU64,
    too_deep: AtomicU64,
}

impl Report {
    /// An empty report of the engine named `engine`.
    pub const fn new(engine: &'static str) -> Report {
        Report {
            engine,
            listed: Mutex::new(Vec::new()),
            not_matched: AtomicU64::new(0),
            library_not_selected: AtomicU64::new(0),
            no_symbol: AtomicU64::new(0),
            table_full: AtomicU64::new(0),
            ended_without_exit: AtomicU64::new(0),
            ended_at_thread_exit: AtomicU64::new(0),
            too_deep: AtomicU64::new(0),
        }
    }

    /// A verdict. Functions whose names did not match, outside the libraries asked for, or
    /// without a symbol are only counted: on a big program they are most functions.
    pub fn decided(&self, verdict: Result<(), SkipReason>, listed: impl FnOnce() -> Listed) {
        let counter = match verdict {
            Err(SkipReason::NotMatched) => &self.not_matched,
            Err(SkipReason::LibraryNotSelected) => &self.library_not_selected,
            Err(SkipReason::NoSymbol) => &self.no_symbol,
            Err(SkipReason::TableFull) => &self.table_full,
            _ => {
                let mut entry = listed();
                entry.skipped = verdict.err();
                self.listed
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push(entry);
                return;
            }
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// A thread's shadow-stack repairs (added when it reports them: at its end, or at the end
    /// of the run for the thread that writes the outputs).
    pub fn repaired(&self, repairs: Repairs, ended_at_thread_exit: u64) {
        self.ended_without_exit
            .fetch_add(repairs.ended_without_exit, Ordering::Relaxed);
        self.too_deep.fetch_add(repairs.too_deep, Ordering::Relaxed);
        self.ended_at_thread_exit
            .fetch_add(ended_at_thread_exit, Ordering::Relaxed);
    }

    fn lists(&self) -> (Vec<Listed>, Vec<Listed>) {
        let mut all = self
            .listed
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        all.sort_by(|a, b| a.name.cmp(&b.name).then(a.module.cmp(&b.module)));
        all.into_iter().partition(|l| l.skipped.is_none())
    }

    /// The `functions` section of `metadata.json`.
    pub fn to_json(&self, settings: Value) -> Value {
        let (selected, skipped) = self.lists();
        let module = |m: &str| {
            if m.is_empty() {
                "(executable)".to_string()
            } else {
                m.to_string()
            }
        };
        json!({
            "engine": self.engine,
            "settings": settings,
            "selected": selected.iter().map(|l| json!({
                "name": l.name,
                "module": module(&l.module),
                "address": format!("{:#x}", l.file_address),
            })).collect::<Vec<_>>(),
            "skipped": skipped.iter().map(|l| json!({
                "name": l.name,
                "module": module(&l.module),
                "address": format!("{:#x}", l.file_address),
                "reason": l.skipped.map(SkipReason::word),
            })).collect::<Vec<_>>(),
            "not_matched": self.not_matched.load(Ordering::Relaxed),
            "in_libraries_not_selected": self.library_not_selected.load(Ordering::Relaxed),
            "without_symbol": self.no_symbol.load(Ordering::Relaxed),
            "decision_table_full": self.table_full.load(Ordering::Relaxed),
            "shadow_stack": {
                "ended_without_exit": self.ended_without_exit.load(Ordering::Relaxed),
                "ended_at_thread_exit": self.ended_at_thread_exit.load(Ordering::Relaxed),
                "too_deep": self.too_deep.load(Ordering::Relaxed),
                "depth": crate::shadow_stack::DEPTH,
            },
        })
    }

    /// The line on stderr: how many functions were made regions and how many skipped, why.
    pub fn stderr_line(&self) -> String {
        let (selected, skipped) = self.lists();
        let mut reasons: Vec<(&'static str, usize)> = Vec::new();
        for l in &skipped {
            let word = l.skipped.map(SkipReason::word).unwrap_or_default();
            match reasons.iter_mut().find(|(w, _)| *w == word) {
                Some((_, n)) => *n += 1,
                None => reasons.push((word, 1)),
            }
        }
        let mut line = format!(
            "metron: functions ({} engine): {} made regions, {} skipped",
            self.engine,
            selected.len(),
            skipped.len()
        );
        if !reasons.is_empty() {
            let why: Vec<String> = reasons.iter().map(|(w, n)| format!("{n} {w}")).collect();
            line.push_str(&format!(" ({})", why.join("; ")));
        }
        let too_deep = self.too_deep.load(Ordering::Relaxed);
        if too_deep > 0 {
            line.push_str(&format!(
                "; {too_deep} calls deeper than {} open function regions not recorded",
                crate::shadow_stack::DEPTH
            ));
        }
        line.push_str("; the list is in metadata.json (functions)");
        line
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listed(name: &str) -> Listed {
        Listed {
            name: name.into(),
            module: String::new(),
            file_address: 0x1130,
            skipped: None,
        }
    }

    #[test]
    fn selected_and_skipped_functions_are_listed_with_reasons_and_the_rest_counted() {
        let r = Report::new("instrument-functions");
        r.decided(Ok(()), || listed("fib"));
        r.decided(Err(SkipReason::TooShort), || listed("leaf"));
        r.decided(Err(SkipReason::NotMatched), || unreachable!());
        r.repaired(
            Repairs {
                ended_without_exit: 3,
                too_deep: 0,
            },
            1,
        );
        let j = r.to_json(json!({}));
        assert_eq!(j["selected"][0]["name"], "fib");
        assert_eq!(j["selected"][0]["module"], "(executable)");
        assert_eq!(
            j["skipped"][0]["reason"],
            "fewer instructions than METRON_FUNCTIONS_MIN_INSTRUCTIONS"
        );
        assert_eq!(j["not_matched"], 1);
        assert_eq!(j["shadow_stack"]["ended_without_exit"], 3);
        assert_eq!(
            r.stderr_line(),
            "metron: functions (instrument-functions engine): 1 made regions, 1 skipped (1 fewer instructions than METRON_FUNCTIONS_MIN_INSTRUCTIONS); the list is in metadata.json (functions)"
        );
    }
}
