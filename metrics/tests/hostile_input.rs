//! Hostile input: deep nesting, long operator chains, long metric chains
//! and huge names get a short error at a position, never a stack overflow or a 40 KB message.

use metron_metrics::{
    cut_input, Expr, MetricList, MetricSet, MetricsError, ParseErrorKind, Pos, MAX_METRIC_DEPTH,
    MAX_NESTING, MAX_OPERATORS, MAX_QUOTED_CHARS,
};

fn nested(depth: usize) -> String {
    format!("{}1{}", "(".repeat(depth), ")".repeat(depth))
}

#[test]
fn nesting_up_to_the_limit_parses_and_one_level_more_is_refused_at_its_position() {
    let ok = Expr::parse(&nested(MAX_NESTING)).expect("256 levels are accepted");
    assert_eq!(ok.evaluate(&|_| None).unwrap(), 1.0);

    let err = Expr::parse(&nested(MAX_NESTING + 1)).unwrap_err();
    assert_eq!(
        err.pos,
        Pos {
            line: 1,
            column: 257
        }
    );
    assert_eq!(err.kind, ParseErrorKind::TooDeep { limit: 256 });
    assert_eq!(
        err.to_string(),
        "1:257: parentheses and unary minus nest deeper than 256 levels here; at most 256 are accepted"
    );

    // Unary minus nests too, and mixes with parentheses.
    let minus = format!("{}1", "-".repeat(MAX_NESTING + 1));
    let err = Expr::parse(&minus).unwrap_err();
    assert_eq!(
        (err.pos.column, &err.kind),
        (257, &ParseErrorKind::TooDeep { limit: 256 })
    );
    let mixed = format!("x + {}x", "-(".repeat(200));
    let err = Expr::parse(&mixed).unwrap_err();
    assert_eq!(
        err.pos,
        Pos {
            line: 1,
            column: 5 + 256
        }
    );
}

#[test]
fn twenty_thousand_nested_parentheses_get_a_short_error_not_a_stack_overflow() {
    let err = Expr::parse(&nested(20_000)).unwrap_err();
    assert_eq!(err.kind, ParseErrorKind::TooDeep { limit: MAX_NESTING });
    assert_eq!(
        err.pos,
        Pos {
            line: 1,
            column: 257
        }
    );
    assert!(err.to_string().len() < 120, "{err}");
}

#[test]
fn the_fuzzers_crash_input_of_4096_open_parentheses_is_an_error() {
    // The shape of fuzz/artifacts/expr/crash-*: 4,096 '(' and nothing else.
    let err = Expr::parse(&"(".repeat(4096)).unwrap_err();
    assert_eq!(err.kind, ParseErrorKind::TooDeep { limit: MAX_NESTING });
    assert_eq!(
        err.pos,
        Pos {
            line: 1,
            column: 257
        }
    );
}

#[test]
fn operator_chains_past_the_limit_are_refused_and_long_ones_evaluate() {
    let chain = |ops: usize| format!("1{}", "+1".repeat(ops));
    let ok = Expr::parse(&chain(MAX_OPERATORS)).expect("4096 operators are accepted");
    assert_eq!(ok.evaluate(&|_| None).unwrap(), 4097.0);
    assert_eq!(ok.references().len(), 0);

    let err = Expr::parse(&chain(MAX_OPERATORS + 1)).unwrap_err();
    assert_eq!(err.kind, ParseErrorKind::TooLong { limit: 4096 });
    // The 4097th '+' is at column 2 + 2 * 4096.
    assert_eq!(
        err.pos,
        Pos {
            line: 1,
            column: 8194
        }
    );
    assert_eq!(
        err.to_string(),
        "1:8194: more than 4096 operators in one expression; at most 4096 are accepted"
    );
    let err = Expr::parse(&chain(200_000)).unwrap_err();
    assert_eq!(err.kind, ParseErrorKind::TooLong { limit: 4096 });
}

#[test]
fn a_metric_file_with_20000_nested_parentheses_is_an_error_with_file_line_column() {
    let text = format!(
        "<metrics>\n  <arch name=\"a\"><counter name=\"c\" block=\"b\" event=\"1\"/></arch>\n  <metric name=\"M\" expr=\"{}c{}\"/>\n</metrics>\n",
        "(".repeat(20_000),
        ")".repeat(20_000)
    );
    let err = MetricSet::from_xml("hostile.xml", &text).unwrap_err();
    assert!(matches!(err, MetricsError::Parse { ref metric, .. } if metric == "M"));
    // The 257th '(' of the value, which starts at column 26 of line 3.
    assert_eq!(
        err.to_string(),
        "hostile.xml:3:282: parentheses and unary minus nest deeper than 256 levels here; at most 256 are accepted"
    );
    // The built-in metrics stay usable when a user file is refused.
    let mut set = MetricSet::default_cpu();
    assert!(set.merge_xml("hostile.xml", &text).is_err());
    assert!(set.metric("IPC").is_some());
}

fn chain_file(names: impl Fn(usize) -> String, len: usize) -> String {
    let mut text = String::from(
        "<metrics>\n<arch name=\"a\"><counter name=\"c\" block=\"b\" event=\"1\"/></arch>\n",
    );
    for i in 0..len {
        let uses = if i + 1 < len {
            names(i + 1)
        } else {
            "c".into()
        };
        text.push_str(&format!(
            "<metric name=\"{}\" expr=\"{uses} + 1\"/>\n",
            names(i)
        ));
    }
    text.push_str("</metrics>\n");
    text
}

#[test]
fn metrics_defined_through_other_metrics_are_bounded_in_depth() {
    // m_i uses m_{i+1}; the search meets the top of the chain first ("m000" < "m001"...).
    let top_first = |i: usize| format!("m{i:03}");
    let set = MetricSet::from_xml("chain.xml", &chain_file(top_first, MAX_METRIC_DEPTH))
        .expect("a chain of 64 metrics loads");
    assert_eq!(set.evaluate("m000", &|_| Some(&[1.0][..])).unwrap(), 65.0);
    let err = MetricSet::from_xml("chain.xml", &chain_file(top_first, 1000)).unwrap_err();
    assert!(
        matches!(err, MetricsError::TooDeep { limit: 64, ref metric, .. } if metric == "m000"),
        "{err}"
    );
    assert!(
        err.to_string().ends_with(
            "metric 'm000' is defined through more than 64 levels of other metrics; at most 64 are accepted"
        ),
        "{err}"
    );
    // The search meets the bottom first ("m999" uses nothing but c, "m998" uses it...): the
    // heights it remembers still add up.
    let bottom_first = |i: usize| format!("m{:03}", 999 - i);
    let err = MetricSet::from_xml("chain.xml", &chain_file(bottom_first, 1000)).unwrap_err();
    assert!(matches!(err, MetricsError::TooDeep { .. }), "{err}");
    assert!(err.to_string().starts_with("chain.xml:"), "{err}");
}

#[test]
fn deeply_nested_xml_elements_are_an_error_not_a_crash() {
    let text = format!(
        "<metrics>{}{}</metrics>",
        "<a>".repeat(100_000),
        "</a>".repeat(100_000)
    );
    let err = MetricSet::from_xml("deep.xml", &text).unwrap_err();
    assert!(
        err.to_string()
            .starts_with("deep.xml:1:10: unknown element <a>"),
        "{err}"
    );
}

#[test]
fn messages_that_quote_input_cut_it_to_80_characters_and_an_ellipsis() {
    let long = "x".repeat(40_000);
    let cut = format!("{}…", "x".repeat(MAX_QUOTED_CHARS));
    assert_eq!(cut_input(&long), cut);

    let check = |message: String| {
        assert!(message.contains(&cut), "{message}");
        assert!(
            message.len() < 300,
            "{} bytes: {message:.300}",
            message.len()
        );
    };
    // A long name as an unknown function, an unexpected token, an unknown counter.
    check(Expr::parse(&format!("{long}(a)")).unwrap_err().to_string());
    check(Expr::parse(&format!("a {long}")).unwrap_err().to_string());
    check(
        Expr::parse(&long)
            .unwrap()
            .check_counters(&["cycles"])
            .unwrap_err()
            .to_string(),
    );
    // A division by zero quotes the whole expression.
    let sum = format!("1 / 0{}", " + 1".repeat(1_000));
    let message = Expr::parse(&sum)
        .unwrap()
        .evaluate(&|_| None)
        .unwrap_err()
        .to_string();
    assert!(
        message.starts_with("division by zero in '1 / 0 + 1 + 1"),
        "{message:.300}"
    );
    assert!(
        message.contains("…'") && message.len() < 300,
        "{message:.300}"
    );
    // A derived GPU metric that does not parse.
    let list_err = MetricList::parse(&format!("m={long} )")).unwrap_err();
    check(list_err);
    // A metric file: unknown reference, bad metric name, bad event.
    let file = format!(
        "<metrics><arch name=\"a\"><counter name=\"c\" block=\"b\" event=\"1\"/></arch><metric name=\"M\" expr=\"{long}\"/></metrics>"
    );
    check(MetricSet::from_xml("f.xml", &file).unwrap_err().to_string());
    let file = format!("<metrics><metric name=\"{long}(\" expr=\"1\"/></metrics>");
    check(MetricSet::from_xml("f.xml", &file).unwrap_err().to_string());
    let file = format!(
        "<metrics><arch name=\"a\"><counter name=\"c\" block=\"b\" event=\"{long}\"/></arch></metrics>"
    );
    check(MetricSet::from_xml("f.xml", &file).unwrap_err().to_string());
    check(
        MetricSet::default_cpu()
            .needed_counters([long.as_str()])
            .unwrap_err()
            .to_string(),
    );
}
