//! Rust [`tracing`](https://docs.rs/tracing) spans and events recorded by Metron.
//!
//! Applications and libraries that already carry `tracing` spans (`#[instrument]`,
//! `info_span!`, `Instrument` on futures) get Metron regions, instants and async slices from
//! them with no change to their code, in the same per-thread buffers, summary and Perfetto
//! trace as Metron's own regions. Two entry points:
//!
//! - [`MetronLayer`]: a `tracing_subscriber::Layer`, for a `Registry` shared with `fmt`,
//!   `EnvFilter` and other layers;
//! - [`MetronSubscriber`]: a standalone `tracing::Subscriber` that does only this, the
//!   cheapest path.
//!
//! ```
//! use tracing_subscriber::prelude::*;
//!
//! tracing_subscriber::registry()
//!     .with(metron_tracing::MetronLayer::new())
//!     .init();
//! // or: tracing::subscriber::set_global_default(metron_tracing::MetronSubscriber::new())
//! ```
//!
//! # Mapping
//! | `tracing` | Metron |
//! | --- | --- |
//! | call site (`&'static Metadata`) | a call site, interned once (name, file, line; target as the module) |
//! | span enter / exit | region begin / end on the entering thread (so each poll of an instrumented future is a region on the polling thread) |
//! | span suspended at least once (entered more than once), or entered or closed on another thread than its creator | also an async slice from creation to close, cookie = span id: one per request in the summary's async table (count, mean, p50/p90/p99, max) |
//! | event | an instant named like the call site (`event src/main.rs:12`) |
//! | level | with `with_level_prefix(true)`, the first word of the name (`"INFO load"`); Metron call sites have no category field |
//! | fields (`with_fields(true)`) | annotations: a span's on every region of the span, an event's on the region open around it |
//!
//! # Design constraints
//! Nothing on the recording path takes a lock or formats text unless fields are asked for
//! (and then only `dyn Debug` values are formatted there; numbers, booleans and strings are
//! stored as they are and formatted by the flusher). Call sites are looked up by metadata
//! address in a lock-free table; registration (naming, interning) runs once per call site.
//!
//! # Overhead
//! Instructions per `info_span!("pair").entered()` pair, callgrind, on the project's 2-core
//! x86-64 VM (`benches/src/bin/tracing_pairs.rs`; the user guide's Performance chapter (`docs/src/performance.md`) has the
//! whole table):
//!
//! | path | total | Metron's share |
//! | --- | ---: | ---: |
//! | [`MetronSubscriber`] | 322 | 147 (against 175 for a minimal recording subscriber) |
//! | `Registry` + [`MetronLayer`] | 990 | 213 (against 777 for the `Registry` with an empty layer) |
//!
//! About 30 of each share are the two region records themselves (what a `metron::scope!` pair
//! costs); the rest is the per-span bookkeeping in the span table (`table.rs`) and one clock
//! read per span for the async rule (`with_async_slices(false)` saves it), and 8 for the
//! flags of the async rule (a store at a span's first entry, an atomic `or` at later ones).
//!
//! # Async slices
//! A span suspended at least once (entered more than once), or entered on or closed on a
//! thread other than the one that created it, is also an async slice from its creation to its
//! close, whatever thread closes it; see `span.rs` for why both of its records are written at
//! the close.

mod fields;
mod layer;
mod sites;
mod span;
mod subscriber;
mod table;

pub use layer::MetronLayer;
pub use subscriber::MetronSubscriber;
