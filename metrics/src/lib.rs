//! Metric definitions for Metron's hardware-counter support: counter tables per
//! architecture, derived metrics defined by expressions, and the XML metric file format.
//!
//! # Expressions
//!
//! ```text
//! expr    := term (('+' | '-') term)*
//! term    := unary (('*' | '/') unary)*
//! unary   := '-' unary | primary
//! primary := NUMBER | NAME | FUNC '(' NAME ')' | '(' expr ')'
//! FUNC    := sum | max | min | avg
//! NUMBER  := 12 | 1.5 | .5 | 1e3 | 2.5E-2
//! NAME    := [A-Za-z_] [A-Za-z0-9_.]*   (e.g. L1.MISS, cycles, a_b)
//! ```
//!
//! A `-` directly between a name character and a letter belongs to the name, so `perf`
//! names such as `cache-misses` or `L1-dcache-loads` can be written bare; write `a - b`
//! (with spaces, or `a-1`) to subtract. `*`/`/` bind tighter than `+`/`-`; all binary
//! operators are left-associative.
//!
//! Input is bounded: parentheses and unary minus nest at most [`MAX_NESTING`] (256) levels
//! and one expression holds at most [`MAX_OPERATORS`] (4096) binary operators; past either,
//! parsing stops with an error at the offending token ([`ParseErrorKind::TooDeep`],
//! [`ParseErrorKind::TooLong`]). Every message that quotes input cuts it with [`cut_input`]
//! (80 characters and `…`).
//!
//! A counter may have several instance values (per core, per shader engine...). The
//! reductions `sum(X)`, `max(X)`, `min(X)`, `avg(X)` combine them; **a multi-instance
//! counter used outside a reduction contributes the sum of its instances**, like `sum(X)`.
//! Division by a divisor that evaluates to exactly 0 is an error
//! ([`EvalError::DivisionByZero`]) rather than an infinity or NaN.
//!
//! Parse once with [`Expr::parse`], evaluate many times with [`Expr::evaluate`]:
//!
//! ```
//! use metron_metrics::Expr;
//! let e = Expr::parse("100 * L1.MISS / sum(L1.CYCLES)").unwrap();
//! let v = e.evaluate(&|name| match name {
//!     "L1.MISS" => Some(&[30.0][..]),
//!     "L1.CYCLES" => Some(&[100.0, 200.0][..]),
//!     _ => None,
//! });
//! assert_eq!(v.unwrap(), 10.0);
//! ```
//!
//! # Metric files
//!
//! ```xml
//! <metrics>
//!   <arch name="perf-generic">              <!-- counters table of one architecture -->
//!     <counter name="cycles" block="hardware" event="0x0" descr="CPU cycles"/>
//!     <counter name="instructions" block="hardware" event="1"/>
//!   </arch>
//!   <metric name="IPC" expr="instructions / cycles" descr="instructions per cycle"/>
//!   <metric name="IPC_pct" expr="100 * IPC" unit="%"/>   <!-- metrics may use metrics -->
//! </metrics>
//! ```
//!
//! * The root is `<metrics>`; its children are `<arch>` and `<metric>` elements, in any order.
//! * rocprofiler's layout loads too, with or without a `<metrics>` root around it, attribute
//!   values quoted or not (`event=4`), `#` comment lines between sections:
//!
//!   ```xml
//!   <gfx9>
//!     <metric name=SQ_WAVES block=SQ event=4 descr="waves"></metric>
//!   </gfx9>
//!   <global>
//!     <metric name=WAVES_PER_CYCLE expr=SQ_WAVES/GRBM_COUNT></metric>
//!   </global>
//!   ```
//!
//!   A `<gfxN>` section (`gfx` then letters, digits, `_`) is the arch of that name: its
//!   `<metric name block event [descr]>` elements are counters (a `<metric name expr>` there
//!   is a derived metric). `<global>` holds `<metric name expr [descr unit]>` elements.
//! * `<arch name>` holds `<counter>` elements with the required attributes `name`, `block`
//!   (the counting unit) and `event` (decimal or `0x` hex id), and an optional `descr`.
//! * `<metric>` (global, for every arch) has the required `name` and `expr` and optional
//!   `descr` and `unit`. An expression may refer to counters of any arch and to other
//!   metrics, which are resolved recursively.
//! * Unknown elements or attributes are errors, as are duplicate arches, counters (per arch)
//!   and metrics within one file, names used both as a counter and a metric, references to
//!   unknown names (reported with file, line and column and close names) and cycles between
//!   metrics (reported with their path, `IPC -> X -> IPC`), and chains of metrics defined
//!   through other metrics deeper than [`MAX_METRIC_DEPTH`] (64).
//!
//! [`MetricSet::default_cpu`] loads the embedded [`DEFAULT_CPU_XML`] (generic `perf`
//! events: `cycles`, `instructions`, `cache-references`, `cache-misses`,
//! `branch-instructions`, `branch-misses`, `L1-dcache-loads`, `L1-dcache-load-misses`,
//! `task-clock`, `page-faults`, `context-switches`, `cpu-migrations` in arch
//! `perf-generic`; metrics `IPC`, `CPI`, `cache_miss_ratio`, `branch_miss_ratio`,
//! `L1D_miss_ratio`, the last three in %). [`MetricSet::default_cpu_with_user_file`] and
//! [`MetricSet::merge`] add a user file on top: **user definitions add to and override
//! the defaults** (same-named metric, or same-named counter in the same arch, replaces the
//! default one).

mod cut;
mod expr;
mod list;
pub mod passes;
mod set;
mod xml_text;

pub use cut::{cut_input, MAX_QUOTED_CHARS};
pub use expr::{
    close_names, BinOp, EvalError, Expr, Node, ParseError, ParseErrorKind, Pos, Reduction, Spanned,
    MAX_NESTING, MAX_OPERATORS,
};
pub use list::{split_list, MetricList};
pub use set::{
    Arch, Counter, Location, Metric, MetricSet, MetricsError, DEFAULT_AMD_GPU_FILE,
    DEFAULT_AMD_GPU_XML, DEFAULT_CPU_FILE, DEFAULT_CPU_XML, MAX_METRIC_DEPTH,
};
