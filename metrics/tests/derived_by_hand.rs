//! Property: a derived metric evaluated from counter values equals the same formula computed
//! by hand in Rust, for random counter values and random formulas built from + - * / and
//! parentheses; and the built-in CPU metrics equal their textbook definitions.

use metron_metrics::{Expr, MetricSet};
use proptest::prelude::*;

/// A random formula over counters a, b, c: its text and the same formula as a closure.
#[derive(Clone, Debug)]
enum Formula {
    Counter(usize),
    Number(f64),
    Add(Box<Formula>, Box<Formula>),
    Sub(Box<Formula>, Box<Formula>),
    Mul(Box<Formula>, Box<Formula>),
    Div(Box<Formula>, Box<Formula>),
}

const NAMES: [&str; 3] = ["cycles", "instructions", "L1-dcache-load-misses"];

impl Formula {
    fn text(&self) -> String {
        match self {
            Formula::Counter(i) => NAMES[*i].to_string(),
            Formula::Number(n) => format!("{n:?}"),
            Formula::Add(a, b) => format!("({} + {})", a.text(), b.text()),
            Formula::Sub(a, b) => format!("({} - {})", a.text(), b.text()),
            Formula::Mul(a, b) => format!("{} * {}", a.text(), b.text()),
            Formula::Div(a, b) => format!("({}) / ({})", a.text(), b.text()),
        }
    }

    /// The value, or None where a divisor is exactly 0 (the evaluator's error case).
    fn by_hand(&self, v: &[f64; 3]) -> Option<f64> {
        Some(match self {
            Formula::Counter(i) => v[*i],
            Formula::Number(n) => *n,
            Formula::Add(a, b) => a.by_hand(v)? + b.by_hand(v)?,
            Formula::Sub(a, b) => a.by_hand(v)? - b.by_hand(v)?,
            Formula::Mul(a, b) => a.by_hand(v)? * b.by_hand(v)?,
            Formula::Div(a, b) => {
                let d = b.by_hand(v)?;
                if d == 0.0 {
                    return None;
                }
                a.by_hand(v)? / d
            }
        })
    }
}

fn formula() -> impl Strategy<Value = Formula> {
    let leaf = prop_oneof![
        (0..3usize).prop_map(Formula::Counter),
        (0u32..1000).prop_map(|n| Formula::Number(n as f64 / 4.0)),
    ];
    leaf.prop_recursive(4, 24, 2, |inner| {
        prop_oneof![
            (inner.clone(), inner.clone()).prop_map(|(a, b)| Formula::Add(a.into(), b.into())),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| Formula::Sub(a.into(), b.into())),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| Formula::Mul(a.into(), b.into())),
            (inner.clone(), inner).prop_map(|(a, b)| Formula::Div(a.into(), b.into())),
        ]
    })
}

proptest! {
    #[test]
    fn evaluation_equals_the_formula_by_hand(
        f in formula(),
        values in prop::array::uniform3(0u32..1_000_000),
    ) {
        let v = values.map(f64::from);
        let expr = Expr::parse(&f.text()).unwrap();
        let got = expr.evaluate(&|name| {
            NAMES.iter().position(|n| *n == name).map(|i| std::slice::from_ref(&v[i]))
        });
        match f.by_hand(&v) {
            Some(expected) => {
                let got = got.unwrap();
                prop_assert!(
                    got == expected || (got - expected).abs() <= 1e-9 * expected.abs().max(1.0),
                    "{} = {} by the evaluator, {} by hand", f.text(), got, expected
                );
            }
            None => prop_assert!(got.is_err(), "{} divides by zero", f.text()),
        }
    }

    #[test]
    fn built_in_cpu_metrics_equal_their_definitions(
        cycles in 1u32..u32::MAX,
        instructions in 0u32..u32::MAX,
        refs in 1u32..u32::MAX,
        misses in 0u32..u32::MAX,
    ) {
        let set = MetricSet::default_cpu();
        let value = |name: &str| -> Option<f64> {
            Some(match name {
                "cycles" => cycles as f64,
                "instructions" => instructions as f64,
                "cache-references" => refs as f64,
                "cache-misses" => misses as f64,
                _ => return None,
            })
        };
        let cells: Vec<(&str, [f64; 1])> = ["cycles", "instructions", "cache-references", "cache-misses"]
            .iter()
            .map(|n| (*n, [value(n).unwrap()]))
            .collect();
        let lookup = |name: &str| cells.iter().find(|(n, _)| *n == name).map(|(_, v)| &v[..]);
        let ipc = set.evaluate("IPC", &lookup).unwrap();
        prop_assert_eq!(ipc, instructions as f64 / cycles as f64);
        let ratio = set.evaluate("cache_miss_ratio", &lookup).unwrap();
        prop_assert!((ratio - 100.0 * misses as f64 / refs as f64).abs() <= 1e-9 * ratio.abs().max(1.0));
    }
}
