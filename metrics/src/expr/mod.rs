//! The derived-metric expression language: lexer, parser, AST and evaluator.
//!
//! See the crate documentation for the grammar.

use std::collections::BTreeSet;
use std::fmt;

mod errors;
mod parse;

pub use errors::{close_names, EvalError, ParseError, ParseErrorKind};
pub(crate) use errors::{quoted_list, unknown_counter};

/// The deepest nesting of parentheses and unary minus an expression may have. Deeper input
/// is refused with [`ParseErrorKind::TooDeep`] at the token that goes past it, so hostile
/// input (20,000 `(`) gets an error instead of overflowing the parser's stack.
pub const MAX_NESTING: usize = 256;

/// The most binary operators (`+ - * /`) one expression may have. A chain `a+b+c+...` is a
/// tree as deep as it is long, and evaluating, walking and dropping it recurse; this keeps
/// them within a small stack. Longer input is refused with [`ParseErrorKind::TooLong`].
pub const MAX_OPERATORS: usize = 4096;

/// A position in a source text: 1-based line and 1-based column (in characters).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Pos {
    /// 1-based line number.
    pub line: u32,
    /// 1-based column number, counted in characters.
    pub column: u32,
}

impl fmt::Display for Pos {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.line, self.column)
    }
}

/// A reduction over the instance values of a multi-instance counter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Reduction {
    /// `sum(X)`: the sum of all instance values (0 for no instances).
    Sum,
    /// `max(X)`: the largest instance value.
    Max,
    /// `min(X)`: the smallest instance value.
    Min,
    /// `avg(X)`: the arithmetic mean of the instance values.
    Avg,
}

impl Reduction {
    /// The function names the language knows, in the order they are listed in errors.
    pub const NAMES: [&'static str; 4] = ["sum", "max", "min", "avg"];

    fn from_name(name: &str) -> Option<Self> {
        match name {
            "sum" => Some(Self::Sum),
            "max" => Some(Self::Max),
            "min" => Some(Self::Min),
            "avg" => Some(Self::Avg),
            _ => None,
        }
    }

    /// The function's name as written in expressions.
    pub fn name(self) -> &'static str {
        match self {
            Self::Sum => "sum",
            Self::Max => "max",
            Self::Min => "min",
            Self::Avg => "avg",
        }
    }

    /// Applies the reduction; `None` when `max`/`min`/`avg` get no values.
    fn apply(self, values: &[f64]) -> Option<f64> {
        match self {
            Self::Sum => Some(values.iter().sum()),
            Self::Max => values.iter().copied().reduce(f64::max),
            Self::Min => values.iter().copied().reduce(f64::min),
            Self::Avg => {
                if values.is_empty() {
                    None
                } else {
                    Some(values.iter().sum::<f64>() / values.len() as f64)
                }
            }
        }
    }
}

/// A binary arithmetic operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BinOp {
    /// `+`
    Add,
    /// `-`
    Sub,
    /// `*`
    Mul,
    /// `/`
    Div,
}

/// A node of a parsed expression.
#[derive(Debug, Clone, PartialEq)]
pub enum Node {
    /// A numeric literal.
    Number(f64),
    /// A reference to a counter (or, inside a metric file, to another metric).
    Ref {
        /// The referenced name.
        name: String,
        /// Where the name starts in the source file.
        pos: Pos,
    },
    /// Unary minus.
    Neg(Box<Spanned>),
    /// A binary operation.
    Binary {
        /// The operator.
        op: BinOp,
        /// Left operand.
        lhs: Box<Spanned>,
        /// Right operand.
        rhs: Box<Spanned>,
    },
    /// A reduction `f(name)` over a counter's instance values.
    Reduce {
        /// The reduction function.
        func: Reduction,
        /// The reduced counter (or metric) name.
        name: String,
        /// Where the name starts in the source file.
        pos: Pos,
    },
}

/// A node together with the byte range of the expression text it was parsed from.
#[derive(Debug, Clone, PartialEq)]
pub struct Spanned {
    /// The node.
    pub node: Node,
    /// Byte range in [`Expr::source`].
    pub span: std::ops::Range<usize>,
}

// ---------------------------------------------------------------------------------------
// Expr
// ---------------------------------------------------------------------------------------

/// The values a name resolves to during evaluation.
pub(crate) enum Values<'v> {
    /// A counter's instance values.
    Slice(&'v [f64]),
    /// A single value (e.g. another metric's result).
    Scalar(f64),
}

/// A parsed expression: parse once with [`Expr::parse`], evaluate many times with
/// [`Expr::evaluate`].
#[derive(Debug, Clone, PartialEq)]
pub struct Expr {
    source: String,
    root: Spanned,
}

impl Expr {
    /// Parses `source`; error positions are line/column within `source` (starting at 1:1).
    pub fn parse(source: &str) -> Result<Self, ParseError> {
        Self::parse_with_positions(source, &|offset| {
            text_pos(source, offset, Pos { line: 1, column: 1 })
        })
    }

    /// Parses `source`, mapping byte offsets within it to file positions with `pos_of`
    /// (used by the metric-file loader so errors point into the file).
    pub fn parse_with_positions(
        source: &str,
        pos_of: &dyn Fn(usize) -> Pos,
    ) -> Result<Self, ParseError> {
        let root = parse::parse_root(source, pos_of)?;
        Ok(Self {
            source: source.to_owned(),
            root,
        })
    }

    /// The expression text as parsed.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// The root of the AST.
    pub fn root(&self) -> &Spanned {
        &self.root
    }

    /// Every referenced name (plain or inside a reduction) with its position, in source order.
    pub fn references(&self) -> Vec<(&str, Pos)> {
        // An explicit stack: a long operator chain is a deep tree.
        let mut out = Vec::new();
        let mut todo = vec![&self.root];
        while let Some(n) = todo.pop() {
            match &n.node {
                Node::Number(_) => {}
                Node::Ref { name, pos } | Node::Reduce { name, pos, .. } => {
                    out.push((name.as_str(), *pos));
                }
                Node::Neg(inner) => todo.push(inner),
                Node::Binary { lhs, rhs, .. } => {
                    todo.push(rhs);
                    todo.push(lhs);
                }
            }
        }
        out
    }

    /// The set of referenced names.
    pub fn names(&self) -> BTreeSet<&str> {
        self.references().into_iter().map(|(n, _)| n).collect()
    }

    /// Checks that every referenced name is in `available`; the error lists close names
    /// (or, when none is close, what is available).
    pub fn check_counters(&self, available: &[&str]) -> Result<(), EvalError> {
        for (name, _) in self.references() {
            if !available.contains(&name) {
                return Err(unknown_counter(name, available.iter().copied()));
            }
        }
        Ok(())
    }

    /// Evaluates the expression. `lookup` gives a counter's instance values (a scalar counter
    /// is a 1-element slice). A multi-instance counter used outside a reduction contributes
    /// the **sum** of its instances (like `sum(X)`); one with no instances is an error there.
    pub fn evaluate<'v>(
        &self,
        lookup: &dyn Fn(&str) -> Option<&'v [f64]>,
    ) -> Result<f64, EvalError> {
        self.eval_with(&|name| {
            lookup(name)
                .map(Values::Slice)
                .ok_or_else(|| EvalError::MissingValue {
                    name: name.to_owned(),
                })
        })
    }

    pub(crate) fn eval_with<'v>(
        &self,
        resolve: &dyn Fn(&str) -> Result<Values<'v>, EvalError>,
    ) -> Result<f64, EvalError> {
        self.eval_node(&self.root, resolve)
    }

    /// Evaluates `root` left to right with an explicit stack (a long operator chain is a
    /// deep tree; a metric may refer to metrics, so recursion here would multiply).
    fn eval_node<'v>(
        &self,
        root: &Spanned,
        resolve: &dyn Fn(&str) -> Result<Values<'v>, EvalError>,
    ) -> Result<f64, EvalError> {
        enum Step<'n> {
            Visit(&'n Spanned),
            Apply(&'n Spanned),
        }
        let mut work = vec![Step::Visit(root)];
        let mut values: Vec<f64> = Vec::new();
        while let Some(step) = work.pop() {
            match step {
                Step::Visit(n) => match &n.node {
                    Node::Number(v) => values.push(*v),
                    Node::Ref { name, .. } => values.push(match resolve(name)? {
                        Values::Scalar(v) => v,
                        Values::Slice([]) => {
                            return Err(EvalError::EmptyCounter { name: name.clone() });
                        }
                        Values::Slice(vs) => vs.iter().sum(),
                    }),
                    Node::Reduce { func, name, .. } => values.push(match resolve(name)? {
                        Values::Scalar(v) => v,
                        Values::Slice(vs) => func
                            .apply(vs)
                            .ok_or_else(|| EvalError::EmptyCounter { name: name.clone() })?,
                    }),
                    Node::Neg(inner) => {
                        work.push(Step::Apply(n));
                        work.push(Step::Visit(inner));
                    }
                    Node::Binary { lhs, rhs, .. } => {
                        work.push(Step::Apply(n));
                        work.push(Step::Visit(rhs));
                        work.push(Step::Visit(lhs));
                    }
                },
                Step::Apply(n) => {
                    // Every Visit pushed one value; an Apply follows its operands'.
                    let b = values.pop().unwrap_or(f64::NAN);
                    let v = match &n.node {
                        Node::Binary { op, rhs, .. } => {
                            let a = values.pop().unwrap_or(f64::NAN);
                            match op {
                                BinOp::Add => a + b,
                                BinOp::Sub => a - b,
                                BinOp::Mul => a * b,
                                BinOp::Div => {
                                    if b == 0.0 {
                                        return Err(EvalError::DivisionByZero {
                                            expr: self.source.clone(),
                                            divisor: self.source[rhs.span.clone()].to_owned(),
                                        });
                                    }
                                    a / b
                                }
                            }
                        }
                        _ => -b,
                    };
                    values.push(v);
                }
            }
        }
        Ok(values.pop().unwrap_or(f64::NAN))
    }
}

impl fmt::Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.source)
    }
}

impl std::str::FromStr for Expr {
    type Err = ParseError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

/// The position of byte `offset` in `text`, whose first character is at `origin`.
pub(crate) fn text_pos(text: &str, offset: usize, origin: Pos) -> Pos {
    let mut pos = origin;
    for c in text[..offset.min(text.len())].chars() {
        if c == '\n' {
            pos.line += 1;
            pos.column = 1;
        } else {
            pos.column += 1;
        }
    }
    pos
}

#[cfg(test)]
mod tests {
    use super::*;

    fn eval(src: &str, vars: &[(&str, &[f64])]) -> Result<f64, EvalError> {
        let e = Expr::parse(src).unwrap();
        e.evaluate(&|n| vars.iter().find(|(k, _)| *k == n).map(|(_, v)| *v))
    }

    fn num(src: &str) -> f64 {
        eval(src, &[]).unwrap()
    }

    #[test]
    fn precedence_and_associativity() {
        assert_eq!(num("1 + 2 * 3"), 7.0);
        assert_eq!(num("(1 + 2) * 3"), 9.0);
        assert_eq!(num("10 - 4 - 3"), 3.0);
        assert_eq!(num("100 / 10 / 5"), 2.0);
        assert_eq!(num("2 * 3 / 4"), 1.5);
        assert_eq!(num("8 - 2 * 3 + 1"), 3.0);
    }

    #[test]
    fn numbers() {
        assert_eq!(num("42"), 42.0);
        assert_eq!(num("0.5"), 0.5);
        assert_eq!(num(".25"), 0.25);
        assert_eq!(num("1e3"), 1000.0);
        assert_eq!(num("2.5E-2"), 0.025);
        assert_eq!(num("1e+2"), 100.0);
    }

    #[test]
    fn unary_minus() {
        assert_eq!(num("-3"), -3.0);
        assert_eq!(num("--3"), 3.0);
        assert_eq!(num("-2 * 3"), -6.0);
        assert_eq!(num("4 - -2"), 6.0);
        assert_eq!(num("-(1 + 2) * 2"), -6.0);
        assert_eq!(num("2 * -3"), -6.0);
    }

    #[test]
    fn identifiers() {
        let v: &[(&str, &[f64])] = &[
            ("L1.MISS", &[25.0]),
            ("L1.CYCLES", &[200.0]),
            ("cache-misses", &[3.0]),
            ("a_b", &[5.0]),
        ];
        assert_eq!(eval("100*L1.MISS/L1.CYCLES", v).unwrap(), 12.5);
        assert_eq!(eval("cache-misses - 1", v).unwrap(), 2.0);
        assert_eq!(eval("a_b-1", v).unwrap(), 4.0);
    }

    #[test]
    fn reductions_and_implicit_sum() {
        let v: &[(&str, &[f64])] = &[("se", &[1.0, 5.0, 3.0, 7.0]), ("one", &[2.0])];
        assert_eq!(eval("sum(se)", v).unwrap(), 16.0);
        assert_eq!(eval("max(se)", v).unwrap(), 7.0);
        assert_eq!(eval("min(se)", v).unwrap(), 1.0);
        assert_eq!(eval("avg(se)", v).unwrap(), 4.0);
        assert_eq!(eval("se", v).unwrap(), 16.0);
        assert_eq!(eval("max(se) / avg(se) * one", v).unwrap(), 3.5);
        assert_eq!(eval("sum(one)", v).unwrap(), 2.0);
    }

    #[test]
    fn empty_counter() {
        let v: &[(&str, &[f64])] = &[("none", &[])];
        assert_eq!(eval("sum(none)", v).unwrap(), 0.0);
        assert_eq!(
            eval("max(none)", v).unwrap_err().to_string(),
            "counter 'none' has no instance values"
        );
        assert_eq!(
            eval("none + 1", v).unwrap_err().to_string(),
            "counter 'none' has no instance values"
        );
    }

    #[test]
    fn references_listed() {
        let e = Expr::parse("a + sum(b) * (c - a)").unwrap();
        assert_eq!(
            e.references(),
            vec![
                ("a", Pos { line: 1, column: 1 }),
                ("b", Pos { line: 1, column: 9 }),
                (
                    "c",
                    Pos {
                        line: 1,
                        column: 15
                    }
                ),
                (
                    "a",
                    Pos {
                        line: 1,
                        column: 19
                    }
                ),
            ]
        );
        assert_eq!(e.names().into_iter().collect::<Vec<_>>(), ["a", "b", "c"]);
    }

    #[test]
    fn close_names_ranked() {
        let known = ["instructions", "cycles", "cache-misses", "Cycles"];
        assert_eq!(close_names("cylces", known), ["Cycles", "cycles"]);
        assert_eq!(close_names("instrucions", known), ["instructions"]);
        assert!(close_names("zzz", known).is_empty());
    }
}
