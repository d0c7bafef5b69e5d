//! The values a region can be annotated with.

/// A value attached to a region with `metron::annotate!`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum AnnotationValue<'a> {
    /// A signed integer.
    I64(i64),
    /// An unsigned integer.
    U64(u64),
    /// A float.
    F64(f64),
    /// A boolean.
    Bool(bool),
    /// Text (cut to 240 bytes, at a character boundary).
    Str(&'a str),
}

macro_rules! annotation_from {
    ($($t:ty => $variant:ident as $as:ty),*) => {$(
        impl From<$t> for AnnotationValue<'_> {
            fn from(v: $t) -> Self {
                AnnotationValue::$variant(v as $as)
            }
        }
    )*};
}
annotation_from!(i8 => I64 as i64, i16 => I64 as i64, i32 => I64 as i64, i64 => I64 as i64, isize => I64 as i64,
    u8 => U64 as u64, u16 => U64 as u64, u32 => U64 as u64, u64 => U64 as u64, usize => U64 as u64,
    f32 => F64 as f64, f64 => F64 as f64);

impl From<bool> for AnnotationValue<'_> {
    fn from(v: bool) -> Self {
        AnnotationValue::Bool(v)
    }
}

impl<'a> From<&'a str> for AnnotationValue<'a> {
    fn from(v: &'a str) -> Self {
        AnnotationValue::Str(v)
    }
}

impl<'a> From<&'a String> for AnnotationValue<'a> {
    fn from(v: &'a String) -> Self {
        AnnotationValue::Str(v)
    }
}
