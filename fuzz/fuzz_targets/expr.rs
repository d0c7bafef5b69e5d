//! The expression parser and evaluator on arbitrary text: never a panic or a stack overflow
//! (the seed corpus holds the 4,096 '(' that once overflowed the recursive parser); an
//! expression that parses evaluates to a number or an error, its positions lie inside the
//! input, and every message is short however long the input (quoted input is cut).
#![no_main]

use libfuzzer_sys::fuzz_target;
use metron_metrics::Expr;

/// Messages quote at most a few cut pieces of input.
const MAX_MESSAGE_CHARS: usize = 1000;

fn check_message(message: &str) {
    assert!(
        message.chars().count() <= MAX_MESSAGE_CHARS,
        "message of {} chars: {message:.300}",
        message.chars().count()
    );
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match Expr::parse(text) {
        Ok(expr) => {
            let lines = text.lines().count().max(1) as u32;
            for (_, pos) in expr.references() {
                assert!(pos.line >= 1 && pos.line <= lines, "{pos} outside {text:?}");
            }
            let values = [1.5, 0.0, -2.0];
            if let Err(e) = expr.evaluate(&|name| match name.len() % 3 {
                0 => Some(&values[..1]),
                1 => Some(&values[..]),
                _ => None,
            }) {
                check_message(&e.to_string());
            }
        }
        Err(e) => {
            let lines = text.split('\n').count() as u32;
            assert!(e.pos.line >= 1 && e.pos.line <= lines, "{e:?} outside {text:?}");
            check_message(&e.to_string());
        }
    }
});
