//! The derived-metric expression language: lexer, parser, AST and evaluator.
//!
//! See the crate documentation for the grammar.

use std::collections::BTreeSet;
use std::fmt;

use crate::cut::cut_input;

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

// ---------------------------------------------------------------------------------------
// Lexer
// ---------------------------------------------------------------------------------------

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Num(f64),
    BadNum(String),
    Ident(String),
    Plus,
    Minus,
    Star,
    Slash,
    LParen,
    RParen,
    Bad(char),
    End,
}

#[derive(Debug, Clone)]
struct Token {
    tok: Tok,
    span: std::ops::Range<usize>,
}

fn is_ident_start(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_'
}

fn is_ident_continue(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '.'
}

fn lex(src: &str) -> Vec<Token> {
    let bytes = src.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < src.len() {
        let c = src[i..].chars().next().unwrap_or(' ');
        let start = i;
        if c.is_whitespace() {
            i += c.len_utf8();
            continue;
        }
        let tok = if c.is_ascii_digit()
            || (c == '.' && bytes.get(i + 1).is_some_and(u8::is_ascii_digit))
        {
            // digits [. digits] [e [+-] digits]
            while i < src.len() && bytes[i].is_ascii_digit() {
                i += 1;
            }
            if i < src.len() && bytes[i] == b'.' {
                i += 1;
                while i < src.len() && bytes[i].is_ascii_digit() {
                    i += 1;
                }
            }
            if i < src.len() && (bytes[i] == b'e' || bytes[i] == b'E') {
                i += 1;
                if i < src.len() && (bytes[i] == b'+' || bytes[i] == b'-') {
                    i += 1;
                }
                while i < src.len() && bytes[i].is_ascii_digit() {
                    i += 1;
                }
            }
            // Swallow trailing identifier characters so `12abc` is one malformed literal.
            while i < src.len() && is_ident_continue(bytes[i] as char) {
                i += 1;
            }
            let text = &src[start..i];
            match text.parse::<f64>() {
                Ok(v) if v.is_finite() => Tok::Num(v),
                _ => Tok::BadNum(text.to_owned()),
            }
        } else if is_ident_start(c) {
            i += 1;
            loop {
                match bytes.get(i) {
                    Some(&b) if is_ident_continue(b as char) => i += 1,
                    // `-` directly between an identifier character and a letter stays in the
                    // identifier, so perf names such as `cache-misses` can be written bare.
                    Some(b'-') if bytes.get(i + 1).is_some_and(u8::is_ascii_alphabetic) => i += 1,
                    _ => break,
                }
            }
            Tok::Ident(src[start..i].to_owned())
        } else {
            i += c.len_utf8();
            match c {
                '+' => Tok::Plus,
                '-' | '\u{2212}' => Tok::Minus,
                '*' | '\u{d7}' => Tok::Star,
                '/' | '\u{f7}' => Tok::Slash,
                '(' => Tok::LParen,
                ')' => Tok::RParen,
                other => Tok::Bad(other),
            }
        };
        out.push(Token {
            tok,
            span: start..i,
        });
    }
    out.push(Token {
        tok: Tok::End,
        span: src.len()..src.len(),
    });
    out
}

// ---------------------------------------------------------------------------------------
// Parser
// ---------------------------------------------------------------------------------------

struct Parser<'s> {
    src: &'s str,
    toks: Vec<Token>,
    at: usize,
    pos_of: &'s dyn Fn(usize) -> Pos,
    /// Open parentheses and unary minuses around the token being parsed.
    depth: usize,
    /// Binary operators parsed so far.
    operators: usize,
}

const OPERAND: &str = "a number, counter or '('";

impl Parser<'_> {
    fn peek(&self) -> &Token {
        &self.toks[self.at]
    }

    fn bump(&mut self) -> Token {
        let t = self.toks[self.at].clone();
        if self.at + 1 < self.toks.len() {
            self.at += 1;
        }
        t
    }

    fn found(&self, t: &Token) -> String {
        match &t.tok {
            Tok::End => "end of expression".to_owned(),
            _ => format!("'{}'", cut_input(&self.src[t.span.clone()])),
        }
    }

    fn prev_text(&self) -> Option<String> {
        (self.at > 0)
            .then(|| cut_input(&self.src[self.toks[self.at - 1].span.clone()]).into_owned())
    }

    /// Enters one level of nesting (a `(` or unary `-`, the current token); refused past
    /// [`MAX_NESTING`]. The caller leaves it with `self.depth -= 1`.
    fn enter(&mut self) -> Result<(), ParseError> {
        if self.depth >= MAX_NESTING {
            return Err(ParseError {
                pos: (self.pos_of)(self.peek().span.start),
                kind: ParseErrorKind::TooDeep { limit: MAX_NESTING },
            });
        }
        self.depth += 1;
        Ok(())
    }

    /// Counts one binary operator (the current token); refused past [`MAX_OPERATORS`].
    fn count_operator(&mut self) -> Result<(), ParseError> {
        if self.operators >= MAX_OPERATORS {
            return Err(ParseError {
                pos: (self.pos_of)(self.peek().span.start),
                kind: ParseErrorKind::TooLong {
                    limit: MAX_OPERATORS,
                },
            });
        }
        self.operators += 1;
        Ok(())
    }

    fn err_expected(&self, expected: &str, after: Option<String>) -> ParseError {
        let t = self.peek();
        if let Tok::BadNum(text) = &t.tok {
            return ParseError {
                pos: (self.pos_of)(t.span.start),
                kind: ParseErrorKind::MalformedNumber { text: text.clone() },
            };
        }
        ParseError {
            pos: (self.pos_of)(t.span.start),
            kind: ParseErrorKind::Expected {
                expected: expected.to_owned(),
                after,
                found: self.found(t),
            },
        }
    }

    fn expr(&mut self) -> Result<Spanned, ParseError> {
        let mut lhs = self.term()?;
        loop {
            let op = match self.peek().tok {
                Tok::Plus => BinOp::Add,
                Tok::Minus => BinOp::Sub,
                _ => return Ok(lhs),
            };
            self.count_operator()?;
            self.bump();
            let rhs = self.term()?;
            lhs = binary(op, lhs, rhs);
        }
    }

    fn term(&mut self) -> Result<Spanned, ParseError> {
        let mut lhs = self.unary()?;
        loop {
            let op = match self.peek().tok {
                Tok::Star => BinOp::Mul,
                Tok::Slash => BinOp::Div,
                _ => return Ok(lhs),
            };
            self.count_operator()?;
            self.bump();
            let rhs = self.unary()?;
            lhs = binary(op, lhs, rhs);
        }
    }

    fn unary(&mut self) -> Result<Spanned, ParseError> {
        if self.peek().tok == Tok::Minus {
            self.enter()?;
            let start = self.bump().span.start;
            let inner = self.unary()?;
            self.depth -= 1;
            let end = inner.span.end;
            return Ok(Spanned {
                node: Node::Neg(Box::new(inner)),
                span: start..end,
            });
        }
        self.primary()
    }

    fn primary(&mut self) -> Result<Spanned, ParseError> {
        let t = self.peek().clone();
        match t.tok {
            Tok::Num(v) => {
                self.bump();
                Ok(Spanned {
                    node: Node::Number(v),
                    span: t.span,
                })
            }
            Tok::Ident(name) => {
                self.bump();
                if self.peek().tok != Tok::LParen {
                    return Ok(Spanned {
                        node: Node::Ref {
                            name,
                            pos: (self.pos_of)(t.span.start),
                        },
                        span: t.span,
                    });
                }
                let Some(func) = Reduction::from_name(&name) else {
                    return Err(ParseError {
                        pos: (self.pos_of)(t.span.start),
                        kind: ParseErrorKind::UnknownFunction { name },
                    });
                };
                self.bump();
                let arg = self.peek().clone();
                let Tok::Ident(arg_name) = arg.tok else {
                    return Err(self.err_expected("a counter name", Some(format!("{name}("))));
                };
                self.bump();
                if self.peek().tok != Tok::RParen {
                    return Err(self.err_expected("')'", Some(cut_input(&arg_name).into_owned())));
                }
                let end = self.bump().span.end;
                Ok(Spanned {
                    node: Node::Reduce {
                        func,
                        name: arg_name,
                        pos: (self.pos_of)(arg.span.start),
                    },
                    span: t.span.start..end,
                })
            }
            Tok::LParen => {
                self.enter()?;
                self.bump();
                let inner = self.expr()?;
                self.depth -= 1;
                if self.peek().tok != Tok::RParen {
                    let open = (self.pos_of)(t.span.start);
                    return Err(self.err_expected(
                        &format!("')' to close the '(' at {open}"),
                        self.prev_text(),
                    ));
                }
                let end = self.bump().span.end;
                Ok(Spanned {
                    node: inner.node,
                    span: t.span.start..end,
                })
            }
            _ => Err(self.err_expected(OPERAND, self.prev_text())),
        }
    }
}

fn binary(op: BinOp, lhs: Spanned, rhs: Spanned) -> Spanned {
    let span = lhs.span.start..rhs.span.end;
    Spanned {
        node: Node::Binary {
            op,
            lhs: Box::new(lhs),
            rhs: Box::new(rhs),
        },
        span,
    }
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
        let mut p = Parser {
            src: source,
            toks: lex(source),
            at: 0,
            pos_of,
            depth: 0,
            operators: 0,
        };
        let root = p.expr()?;
        if p.peek().tok != Tok::End {
            let what = match p.peek().tok {
                Tok::RParen => "an operator or end of expression (unbalanced ')')",
                _ => "an operator or end of expression",
            };
            return Err(p.err_expected(what, p.prev_text()));
        }
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
