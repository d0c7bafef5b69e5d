//! The debug annotations of one trace event, by name.
//!
//! An event carries one to three (a kernel: its launch text and correlation id), so they are a
//! short list kept in name order rather than a map: a map allocates a node of eleven entries
//! for its first, which made a decoded kernel slice cost 0.6 KB more.

use std::fmt;
use std::ops::Index;

/// A debug annotation's value.
#[derive(Clone, Debug, PartialEq)]
pub enum Arg {
    /// `uint_value` or `bool_value`.
    U(u64),
    /// `int_value`.
    I(i64),
    /// `double_value`.
    F(f64),
    /// `string_value`.
    S(String),
}

impl fmt::Display for Arg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Arg::U(v) => write!(f, "{v}"),
            Arg::I(v) => write!(f, "{v}"),
            Arg::F(v) => write!(f, "{v}"),
            Arg::S(v) => f.write_str(v),
        }
    }
}

/// Name → value, in name order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Args(Vec<(String, Arg)>);

impl Args {
    /// No annotation.
    pub fn new() -> Args {
        Args(Vec::new())
    }

    /// The value named `name`.
    pub fn get(&self, name: &str) -> Option<&Arg> {
        self.find(name).ok().map(|i| &self.0[i].1)
    }

    /// Whether one is named `name`.
    pub fn contains_key(&self, name: &str) -> bool {
        self.find(name).is_ok()
    }

    /// Sets `name` to `value`; returns the value it replaced.
    pub fn insert(&mut self, name: String, value: Arg) -> Option<Arg> {
        match self.find(&name) {
            Ok(i) => Some(std::mem::replace(&mut self.0[i].1, value)),
            Err(i) => {
                self.0.insert(i, (name, value));
                None
            }
        }
    }

    /// `(name, value)` in name order.
    pub fn iter(&self) -> impl Iterator<Item = (&String, &Arg)> {
        self.0.iter().map(|(k, v)| (k, v))
    }

    /// The names, in order.
    pub fn keys(&self) -> impl Iterator<Item = &String> {
        self.0.iter().map(|(k, _)| k)
    }

    /// How many.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there is none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    fn find(&self, name: &str) -> Result<usize, usize> {
        self.0.binary_search_by(|(k, _)| k.as_str().cmp(name))
    }
}

impl Index<&str> for Args {
    type Output = Arg;

    /// The value named `name`; panics when there is none (as a map's index does).
    fn index(&self, name: &str) -> &Arg {
        self.get(name)
            .unwrap_or_else(|| panic!("no annotation named {name:?}"))
    }
}

impl Extend<(String, Arg)> for Args {
    fn extend<I: IntoIterator<Item = (String, Arg)>>(&mut self, items: I) {
        for (k, v) in items {
            self.insert(k, v);
        }
    }
}

impl IntoIterator for Args {
    type Item = (String, Arg);
    type IntoIter = std::vec::IntoIter<(String, Arg)>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.into_iter()
    }
}

impl<'a> IntoIterator for &'a Args {
    type Item = (&'a String, &'a Arg);
    type IntoIter = std::iter::Map<
        std::slice::Iter<'a, (String, Arg)>,
        fn(&'a (String, Arg)) -> (&'a String, &'a Arg),
    >;

    fn into_iter(self) -> Self::IntoIter {
        self.0.iter().map(|(k, v)| (k, v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kept_in_name_order_and_replaced_by_name() {
        let mut a = Args::new();
        assert_eq!(a.insert("status".into(), Arg::U(1)), None);
        assert_eq!(a.insert("launch".into(), Arg::S("grid".into())), None);
        assert_eq!(a.insert("status".into(), Arg::U(2)), Some(Arg::U(1)));
        assert_eq!(a.keys().collect::<Vec<_>>(), ["launch", "status"]);
        assert_eq!(a["status"], Arg::U(2));
        assert_eq!(a.get("none"), None);
        assert!(a.contains_key("launch") && a.len() == 2);
    }
}
