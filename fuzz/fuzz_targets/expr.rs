//! The expression parser and evaluator on arbitrary text: never a panic; an expression that
//! parses evaluates to a number or an error, and its positions lie inside the input.
#![no_main]

use libfuzzer_sys::fuzz_target;
use metron_metrics::Expr;

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
            let _ = expr.evaluate(&|name| match name.len() % 3 {
                0 => Some(&values[..1]),
                1 => Some(&values[..]),
                _ => None,
            });
        }
        Err(e) => {
            let lines = text.split('\n').count() as u32;
            assert!(e.pos.line >= 1 && e.pos.line <= lines, "{e:?} outside {text:?}");
            let _ = e.to_string();
        }
    }
});
