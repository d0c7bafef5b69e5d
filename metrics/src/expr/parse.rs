//! The expression language's lexer and recursive-descent parser: text to a [`Spanned`] tree,
//! with errors that point at the offending token.

use super::{
    BinOp, Node, ParseError, ParseErrorKind, Pos, Reduction, Spanned, MAX_NESTING, MAX_OPERATORS,
};
use crate::cut::cut_input;

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

/// Parses `source` into its root node; `pos_of` maps a byte offset to a position for errors.
pub(super) fn parse_root(
    source: &str,
    pos_of: &dyn Fn(usize) -> Pos,
) -> Result<Spanned, ParseError> {
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
    Ok(root)
}
