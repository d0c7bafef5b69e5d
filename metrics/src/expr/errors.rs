//! The expression language's errors and the "did you mean" suggestions they carry.

use super::{fmt, Pos, Reduction};
use crate::cut::cut_input;

/// What went wrong while parsing an expression.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParseErrorKind {
    /// A token other than the expected one was found.
    Expected {
        /// What the parser expected, e.g. `a number, counter or '('`.
        expected: String,
        /// The token after which it expected it, if any (e.g. `*`).
        after: Option<String>,
        /// What it found, e.g. `')'` or `end of expression`.
        found: String,
    },
    /// A call `f(...)` of a function that is not one of `sum`, `max`, `min`, `avg`.
    UnknownFunction {
        /// The function name used.
        name: String,
    },
    /// A numeric literal that does not parse, e.g. `1e`.
    MalformedNumber {
        /// The literal text.
        text: String,
    },
    /// Parentheses and unary minus nest deeper than [`MAX_NESTING`]; the position is the
    /// token that went past the limit.
    TooDeep {
        /// The limit, [`MAX_NESTING`].
        limit: usize,
    },
    /// More binary operators than [`MAX_OPERATORS`]; the position is the first one past it.
    TooLong {
        /// The limit, [`MAX_OPERATORS`].
        limit: usize,
    },
}

/// An expression parse error with its position in the source file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    /// Where the offending token starts.
    pub pos: Pos,
    /// What went wrong.
    pub kind: ParseErrorKind,
}

impl fmt::Display for ParseError {
    /// Formats as `line:column: message`; file-level errors prefix the file name.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: ", self.pos)?;
        match &self.kind {
            ParseErrorKind::Expected {
                expected,
                after,
                found,
            } => {
                write!(f, "expected {expected}")?;
                if let Some(after) = after {
                    write!(f, " after '{after}'")?;
                }
                write!(f, ", found {found}")
            }
            ParseErrorKind::UnknownFunction { name } => write!(
                f,
                "unknown function '{}' (known functions: {})",
                cut_input(name),
                Reduction::NAMES.join(", ")
            ),
            ParseErrorKind::MalformedNumber { text } => {
                write!(f, "malformed number '{}'", cut_input(text))
            }
            ParseErrorKind::TooDeep { limit } => write!(
                f,
                "parentheses and unary minus nest deeper than {limit} levels here; \
                 at most {limit} are accepted"
            ),
            ParseErrorKind::TooLong { limit } => write!(
                f,
                "more than {limit} operators in one expression; at most {limit} are accepted"
            ),
        }
    }
}

impl std::error::Error for ParseError {}

/// An error while checking or evaluating an expression.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EvalError {
    /// A name that is not a known counter.
    UnknownCounter {
        /// The name as written.
        name: String,
        /// Known names close to it (edit distance), best first.
        close: Vec<String>,
        /// When nothing is close: the known names (possibly truncated), else empty.
        available: Vec<String>,
    },
    /// The lookup returned no values for a counter that the expression uses.
    MissingValue {
        /// The counter name.
        name: String,
    },
    /// A counter with zero instances used by `max`/`min`/`avg` (or outside a reduction).
    EmptyCounter {
        /// The counter name.
        name: String,
    },
    /// A divisor evaluated to exactly zero.
    DivisionByZero {
        /// The whole expression text.
        expr: String,
        /// The text of the divisor sub-expression.
        divisor: String,
    },
}

impl fmt::Display for EvalError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::UnknownCounter {
                name,
                close,
                available,
            } => {
                write!(f, "unknown counter '{}'", cut_input(name))?;
                if !close.is_empty() {
                    write!(f, " (did you mean {}?)", quoted_list(close, "or"))
                } else if !available.is_empty() {
                    let available: Vec<_> = available.iter().map(|n| cut_input(n)).collect();
                    write!(f, " (available: {})", available.join(", "))
                } else {
                    Ok(())
                }
            }
            Self::MissingValue { name } => {
                write!(f, "no value supplied for counter '{}'", cut_input(name))
            }
            Self::EmptyCounter { name } => {
                write!(f, "counter '{}' has no instance values", cut_input(name))
            }
            Self::DivisionByZero { expr, divisor } => write!(
                f,
                "division by zero in '{}': divisor '{}' evaluated to 0",
                cut_input(expr),
                cut_input(divisor)
            ),
        }
    }
}

impl std::error::Error for EvalError {}

pub(crate) fn quoted_list(names: &[String], conj: &str) -> String {
    let quoted: Vec<String> = names
        .iter()
        .map(|n| format!("'{}'", cut_input(n)))
        .collect();
    match quoted.len() {
        0 => String::new(),
        1 => quoted[0].clone(),
        n => format!("{} {conj} {}", quoted[..n - 1].join(", "), quoted[n - 1]),
    }
}

/// Levenshtein distance over characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, &cb) in b.iter().enumerate() {
            let cost = usize::from(ca != cb);
            cur[j + 1] = (prev[j] + cost).min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

/// Names among `known` close to `name`: equal ignoring case, or within an edit distance of
/// `max(2, len/3)`; best first, at most three.
pub fn close_names<'a>(name: &str, known: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let limit = (name.chars().count() / 3).max(2);
    let mut scored: Vec<(usize, &str)> = known
        .into_iter()
        .filter_map(|k| {
            let d = if k.eq_ignore_ascii_case(name) {
                0
            } else {
                edit_distance(&k.to_ascii_lowercase(), &name.to_ascii_lowercase())
            };
            (d <= limit && k != name).then_some((d, k))
        })
        .collect();
    scored.sort();
    scored.dedup();
    scored
        .into_iter()
        .take(3)
        .map(|(_, k)| k.to_owned())
        .collect()
}

/// Builds an [`EvalError::UnknownCounter`] for `name` given the known names.
pub(crate) fn unknown_counter<'a>(
    name: &str,
    known: impl IntoIterator<Item = &'a str> + Clone,
) -> EvalError {
    let close = close_names(name, known.clone());
    let available = if close.is_empty() {
        let mut all: Vec<String> = known.into_iter().map(str::to_owned).collect();
        all.sort();
        all.dedup();
        if all.len() > 12 {
            all.truncate(12);
            all.push("...".to_owned());
        }
        all
    } else {
        Vec::new()
    };
    EvalError::UnknownCounter {
        name: name.to_owned(),
        close,
        available,
    }
}
