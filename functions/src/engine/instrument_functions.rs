//! The engine of code built with `-finstrument-functions` (GCC, Clang): the compiler calls
//! `__cyg_profile_func_enter(fn, call_site)` after each function's prologue and
//! `__cyg_profile_func_exit(fn, call_site)` before each return (GCC on unwinding too).
//! libmetron exports the two hooks (`user-api/src/functions_hooks.rs`), so a program linked
//! with Metron or run under `metron run` (libmetron preloaded ahead of glibc's empty hooks)
//! reaches this engine.
//!
//! Every instrumented function calls the hooks, selected or not; what makes the unselected
//! cheap is that each function is decided once, on its first call, and the verdict cached
//! by address ([`DecisionTable`]): later calls probe the table and return.

use super::Decider;
use crate::decisions::{DecisionTable, SKIP};
use crate::report::Report;
use crate::selection::SkipReason;
use serde_json::Value;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Mutex;

/// Slots of the decision table: up to three quarters as many distinct instrumented functions
/// (196,608) are decided; calls of further ones run untraced and are counted.
pub const SLOTS: usize = 1 << 18;

static TABLE: DecisionTable<SLOTS> = DecisionTable::new();
static DECIDER: Mutex<Option<Decider>> = Mutex::new(None);
static REPORT: Report = Report::new("instrument-functions");

const UNKNOWN: u8 = 0;
const ON: u8 = 1;
const OFF: u8 = 2;
static STATE: AtomicU8 = AtomicU8::new(UNKNOWN);

/// Whether this engine is off for the run (`METRON_FUNCTIONS` empty): the hooks then return
/// after this one load. Unknown until the first hook call.
#[inline(always)]
pub fn off() -> bool {
    STATE.load(Ordering::Relaxed) == OFF
}

/// The verdict cached for the function at `address`: its region id or [`SKIP`]; `None` before
/// its first call was decided. Hot path: one probe of the table.
#[inline(always)]
pub fn cached(address: usize) -> Option<u32> {
    TABLE.get(address)
}

/// Decides the function at `address` on its first call: its region id (from `intern`, called
/// once per selected function) or [`SKIP`], cached for every later call. Cold path.
#[cold]
#[inline(never)]
pub fn decide(address: usize, intern: fn(&str) -> u32) -> u32 {
    if TABLE.len() >= SLOTS / 4 * 3 {
        REPORT.decided(Err(SkipReason::TableFull), || unreachable!());
        return SKIP;
    }
    let mut decider = DECIDER.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(v) = TABLE.get(address) {
        return v;
    }
    let decider = decider.get_or_insert_with(Decider::from_env);
    if !decider.enabled() {
        STATE.store(OFF, Ordering::Relaxed);
        return SKIP;
    }
    STATE.store(ON, Ordering::Relaxed);
    let (verdict, listed) = decider.decide(address);
    let value = match verdict {
        Ok(()) => intern(&listed.name),
        Err(_) => SKIP,
    };
    if !TABLE.insert(address, value) {
        REPORT.decided(Err(SkipReason::TableFull), || unreachable!());
        return SKIP;
    }
    REPORT.decided(verdict, || listed);
    value
}

/// Whether any function was decided under a non-empty `METRON_FUNCTIONS` (the report is then
/// worth writing).
pub fn used() -> bool {
    STATE.load(Ordering::Relaxed) == ON
}

/// The engine's report.
pub fn report() -> &'static Report {
    &REPORT
}

/// The `functions` section of `metadata.json`.
pub fn metadata() -> Value {
    let settings = DECIDER
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .as_ref()
        .map(Decider::settings_json)
        .unwrap_or(Value::Null);
    REPORT.to_json(settings)
}
