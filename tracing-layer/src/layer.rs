//! [`MetronLayer`]: a `tracing_subscriber::Layer` that records into Metron, composable with
//! `fmt`, `EnvFilter` and any other layer over a `Registry`.
//!
//! What Metron keeps per span (its region id, creating thread and time) goes into the static
//! span table (`table.rs`) in `on_new_span`, keyed by the span's id: `on_enter` finds it there
//! with one hash and writes one record, `on_exit` likewise, and nothing touches the
//! registry's per-span data or extensions (a lookup in its slab, a `HashMap` and an allocation
//! per span). Only spans with fields (or that found no free table slot) keep a
//! [`SpanState`] in their extensions.

use crate::fields::EventAnnotations;
use crate::sites;
use crate::span::{created_ticks, Options, SpanState};
use crate::table;
use tracing_core::span::{Attributes, Id, Record};
use tracing_core::subscriber::{Interest, Subscriber};
use tracing_core::{Event, Metadata};
use tracing_subscriber::layer::{Context, Layer};
use tracing_subscriber::registry::LookupSpan;

/// A `tracing_subscriber::Layer` that turns spans into Metron regions (and async slices) and
/// events into instants.
///
/// ```
/// use tracing_subscriber::prelude::*;
///
/// let subscriber = tracing_subscriber::registry().with(metron_tracing::MetronLayer::new());
/// tracing::subscriber::with_default(subscriber, || {
///     let _span = tracing::info_span!("load").entered(); // a Metron region "load"
/// });
/// ```
///
/// It does not filter: a global filter (`EnvFilter` added with `.with(...)`) or a per-layer
/// filter (`MetronLayer::new().with_filter(...)`) decides what it sees.
#[derive(Clone, Debug)]
pub struct MetronLayer {
    options: Options,
}

impl Default for MetronLayer {
    fn default() -> Self {
        MetronLayer::new()
    }
}

impl MetronLayer {
    /// No fields, async slices on, plain names.
    pub fn new() -> MetronLayer {
        MetronLayer {
            options: Options {
                fields: false,
                level_prefix: false,
                async_slices: true,
            },
        }
    }

    /// Records span and event fields as annotations (off by default).
    pub fn with_fields(mut self, on: bool) -> Self {
        self.options.fields = on;
        self
    }

    /// Names regions and instants `"LEVEL name"` (e.g. `"INFO load"`), off by default.
    pub fn with_level_prefix(mut self, on: bool) -> Self {
        self.options.level_prefix = on;
        self
    }

    /// Makes spans that move between threads async slices (on by default).
    pub fn with_async_slices(mut self, on: bool) -> Self {
        self.options.async_slices = on;
        self
    }

    /// The span table key (and async cookie) of span `id`: the registry's id times an odd
    /// number made from this layer's address, so that the spans of two registries (a scoped
    /// default beside the global one) do not share keys. Multiplying by an odd number is a
    /// bijection that maps no non-zero id to 0; the one id that would map to `u64::MAX` is
    /// refused by `table::insert` (its span keeps its state in the extensions).
    #[inline(always)]
    fn key(&self, id: &Id) -> u64 {
        id.into_u64()
            .wrapping_mul(self as *const MetronLayer as u64 | 1)
    }
}

impl<S> Layer<S> for MetronLayer
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn register_callsite(&self, metadata: &'static Metadata<'static>) -> Interest {
        let _ = sites::site(metadata);
        Interest::always()
    }

    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let site = sites::site(attrs.metadata());
        if !self.options.fields {
            let region = site.id_for(self.options.level_prefix);
            if table::insert(self.key(id), region, created_ticks(self.options)) {
                return;
            }
        }
        // Fields, or no free slot in the table: the state goes into the span's extensions.
        let state = SpanState::new(site, self.options, Some(attrs));
        if let Some(span) = ctx.span(id) {
            span.extensions_mut().insert(state);
        }
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        if let Some(span) = ctx.span(id) {
            if let Some(state) = span.extensions().get::<SpanState>() {
                state.record(values);
            }
        }
    }

    #[inline]
    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        let site = sites::site(event.metadata());
        metron::by_id::mark(site.id_for(self.options.level_prefix));
        if self.options.fields {
            EventAnnotations::record(site, event);
        }
    }

    #[inline]
    fn on_enter(&self, id: &Id, ctx: Context<'_, S>) {
        if let Some(entry) = table::find(self.key(id)) {
            entry.enter();
        } else if let Some(span) = ctx.span(id) {
            if let Some(state) = span.extensions().get::<SpanState>() {
                state.enter();
            }
        }
    }

    #[inline]
    fn on_exit(&self, id: &Id, ctx: Context<'_, S>) {
        if let Some(entry) = table::find(self.key(id)) {
            metron::by_id::end(entry.region());
        } else if let Some(span) = ctx.span(id) {
            if let Some(state) = span.extensions().get::<SpanState>() {
                state.exit();
            }
        }
    }

    fn on_close(&self, id: Id, ctx: Context<'_, S>) {
        if let Some(entry) = table::find(self.key(&id)) {
            entry.close(self.options.async_slices, self.key(&id));
            return;
        }
        if let Some(span) = ctx.span(&id) {
            if let Some(state) = span.extensions().get::<SpanState>() {
                state.close(self.options, self.key(&id));
            }
        }
    }
}
