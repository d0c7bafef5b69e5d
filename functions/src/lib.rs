//! Functions as regions without a change to the source (`metron run --functions REGEX`).
//!
//! Every engine that catches a function's entry and exit shares what is here:
//!
//! - [`selection`]: `METRON_FUNCTIONS*` compiled once (the expressions, the instruction
//!   minimum, the libraries allowed), and the verdict for one function;
//! - [`catalog`]: the functions of a loaded module, from its ELF symbol table, demangled;
//! - [`decisions`]: the per-function verdict, decided once on the function's first call and
//!   cached in a lock-free table keyed by its address, so a call never runs a regular
//!   expression;
//! - [`shadow_stack`]: the per-thread stack of open function regions that `longjmp`, C++
//!   exceptions and thread exit cannot unbalance;
//! - [`report`]: the functions selected and skipped (with the reason), for `metadata.json`
//!   and the line on stderr.
//!
//! The engines, one per file under [`engine`]: [`engine::instrument_functions`] serves the
//! `__cyg_profile_func_enter/exit` hooks of code built with `-finstrument-functions` (the hooks
//! themselves are exports of libmetron, `user-api/src/functions_hooks.rs`).
//!
//! # Speed
//! A call of a selected function costs one probe of the decision table, a push and a pop of
//! the shadow stack and a region begin and end by id; see the user guide's chapter "Functions
//! without changing the source" (`docs/src/functions.md`) for the measured figures.

pub mod catalog;
pub mod decisions;
pub mod engine;
pub mod instructions;
pub mod report;
pub mod selection;
pub mod shadow_stack;
mod sys;

pub use sys::{
    longjmp_stack_pointer, setjmp_layout_is_known, stack_pointer, stack_pointer_at_call,
};
