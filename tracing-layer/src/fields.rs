//! Field values as Metron annotations (only when asked for with `with_fields(true)`).
//!
//! Integers, floats, booleans and strings are stored as they are: the flusher formats them
//! when it writes the outputs. Only values that `tracing` hands over as `dyn Debug` (and
//! `dyn Error`) have to be formatted on the recording thread, because they are borrowed.

use crate::sites::Site;
use metron::AnnotationValue;
use std::fmt::Write as _;
use tracing_core::field::{Field, Visit};

/// A field value owned by a span.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum OwnedValue {
    I64(i64),
    U64(u64),
    F64(f64),
    Bool(bool),
    Str(String),
}

impl OwnedValue {
    /// The value as an annotation.
    pub(crate) fn as_annotation(&self) -> AnnotationValue<'_> {
        match self {
            OwnedValue::I64(v) => AnnotationValue::I64(*v),
            OwnedValue::U64(v) => AnnotationValue::U64(*v),
            OwnedValue::F64(v) => AnnotationValue::F64(*v),
            OwnedValue::Bool(v) => AnnotationValue::Bool(*v),
            OwnedValue::Str(v) => AnnotationValue::Str(v),
        }
    }
}

/// Collects the values of a span's fields (keys are the call site's interned annotation keys).
pub(crate) struct FieldValues {
    site: &'static Site,
    values: Vec<(u32, OwnedValue)>,
}

impl FieldValues {
    pub(crate) fn new(site: &'static Site) -> FieldValues {
        FieldValues {
            site,
            values: Vec::new(),
        }
    }

    pub(crate) fn into_values(self) -> Vec<(u32, OwnedValue)> {
        self.values
    }

    fn push(&mut self, field: &Field, value: OwnedValue) {
        if let Some(&key) = self.site.field_keys.get(field.index()) {
            self.values.push((key, value));
        }
    }
}

impl Visit for FieldValues {
    fn record_i64(&mut self, field: &Field, value: i64) {
        self.push(field, OwnedValue::I64(value));
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.push(field, OwnedValue::U64(value));
    }
    fn record_f64(&mut self, field: &Field, value: f64) {
        self.push(field, OwnedValue::F64(value));
    }
    fn record_bool(&mut self, field: &Field, value: bool) {
        self.push(field, OwnedValue::Bool(value));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.push(field, OwnedValue::Str(value.to_owned()));
    }
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.push(field, OwnedValue::Str(format!("{value:?}")));
    }
}

/// Writes an event's fields as annotations of the innermost open region of this thread
/// (Metron annotates regions, not instants), right after the event's instant.
pub(crate) struct EventAnnotations {
    site: &'static Site,
    /// Reused for values that must be formatted (`dyn Debug`).
    text: String,
}

impl EventAnnotations {
    pub(crate) fn record(site: &'static Site, event: &tracing_core::Event<'_>) {
        let mut v = EventAnnotations {
            site,
            text: String::new(),
        };
        event.record(&mut v);
    }

    fn emit(&self, field: &Field, value: AnnotationValue<'_>) {
        if let Some(&key) = self.site.field_keys.get(field.index()) {
            metron::by_id::annotate(key, value);
        }
    }
}

impl Visit for EventAnnotations {
    fn record_i64(&mut self, field: &Field, value: i64) {
        self.emit(field, AnnotationValue::I64(value));
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.emit(field, AnnotationValue::U64(value));
    }
    fn record_f64(&mut self, field: &Field, value: f64) {
        self.emit(field, AnnotationValue::F64(value));
    }
    fn record_bool(&mut self, field: &Field, value: bool) {
        self.emit(field, AnnotationValue::Bool(value));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.emit(field, AnnotationValue::Str(value));
    }
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        let mut text = std::mem::take(&mut self.text);
        text.clear();
        let _ = write!(text, "{value:?}");
        self.emit(field, AnnotationValue::Str(&text));
        self.text = text;
    }
}
