//! Every error kind with its exact message.

use metron_metrics::{EvalError, Expr, MetricSet, MetricsError, ParseErrorKind, Pos};

fn parse_err(src: &str) -> String {
    Expr::parse(src).unwrap_err().to_string()
}

#[test]
fn parse_errors_standalone() {
    assert_eq!(
        parse_err("1 + 2 * )"),
        "1:9: expected a number, counter or '(' after '*', found ')'"
    );
    assert_eq!(
        parse_err(""),
        "1:1: expected a number, counter or '(', found end of expression"
    );
    assert_eq!(
        parse_err("a +"),
        "1:4: expected a number, counter or '(' after '+', found end of expression"
    );
    assert_eq!(
        parse_err("(a + b"),
        "1:7: expected ')' to close the '(' at 1:1 after 'b', found end of expression"
    );
    assert_eq!(
        parse_err("a b"),
        "1:3: expected an operator or end of expression after 'a', found 'b'"
    );
    assert_eq!(
        parse_err("a)"),
        "1:2: expected an operator or end of expression (unbalanced ')') after 'a', found ')'"
    );
    assert_eq!(
        parse_err("a # b"),
        "1:3: expected an operator or end of expression after 'a', found '#'"
    );
    assert_eq!(parse_err("2 * 1e+"), "1:5: malformed number '1e+'");
    assert_eq!(
        parse_err("sum(1)"),
        "1:5: expected a counter name after 'sum(', found '1'"
    );
    assert_eq!(
        parse_err("max(a b)"),
        "1:7: expected ')' after 'a', found 'b'"
    );
    assert_eq!(
        parse_err("x +\n  median(cores)"),
        "2:3: unknown function 'median' (known functions: sum, max, min, avg)"
    );
    let e = Expr::parse("median(x)").unwrap_err();
    assert_eq!(e.pos, Pos { line: 1, column: 1 });
    assert_eq!(
        e.kind,
        ParseErrorKind::UnknownFunction {
            name: "median".into()
        }
    );
}

#[test]
fn eval_errors() {
    let e = Expr::parse("100 * L1.MISS / (L1.CYCLES - L1.MISS)").unwrap();
    let err = e
        .evaluate(&|n| match n {
            "L1.MISS" | "L1.CYCLES" => Some(&[5.0][..]),
            _ => None,
        })
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "division by zero in '100 * L1.MISS / (L1.CYCLES - L1.MISS)': \
         divisor '(L1.CYCLES - L1.MISS)' evaluated to 0"
    );
    assert_eq!(
        err,
        EvalError::DivisionByZero {
            expr: "100 * L1.MISS / (L1.CYCLES - L1.MISS)".into(),
            divisor: "(L1.CYCLES - L1.MISS)".into(),
        }
    );

    let missing = e.evaluate(&|_| None).unwrap_err();
    assert_eq!(
        missing.to_string(),
        "no value supplied for counter 'L1.MISS'"
    );

    let ipc = Expr::parse("instrucions / cycles").unwrap();
    assert_eq!(
        ipc.check_counters(&["cycles", "instructions", "branches"])
            .unwrap_err()
            .to_string(),
        "unknown counter 'instrucions' (did you mean 'instructions'?)"
    );
    let far = Expr::parse("zzz").unwrap();
    assert_eq!(
        far.check_counters(&["cycles", "instructions"])
            .unwrap_err()
            .to_string(),
        "unknown counter 'zzz' (available: cycles, instructions)"
    );
    assert!(ipc.check_counters(&["instrucions", "cycles"]).is_ok());
}

fn load_err(text: &str) -> MetricsError {
    MetricSet::from_xml("metrics.xml", text).unwrap_err()
}

const COUNTERS: &str = r#"<metrics>
  <arch name="gpu">
    <counter name="L1.MISS" block="L1" event="33"/>
    <counter name="L1.CYCLES" block="L1" event="0"/>
  </arch>
"#;

#[test]
fn file_parse_error_has_file_line_column() {
    let text = format!("{COUNTERS}  <metric name=\"R\" expr=\"100*L1.MISS*)\"/>\n</metrics>");
    let err = load_err(&text);
    assert_eq!(
        err.to_string(),
        "metrics.xml:6:38: expected a number, counter or '(' after '*', found ')'"
    );
    assert!(matches!(err, MetricsError::Parse { ref metric, .. } if metric == "R"));

    // A multi-line attribute value: the position follows the file's lines.
    let text = format!("{COUNTERS}  <metric name=\"R\"\n    expr=\"L1.MISS /\n      foo(L1.CYCLES)\"/>\n</metrics>");
    assert_eq!(
        load_err(&text).to_string(),
        "metrics.xml:8:7: unknown function 'foo' (known functions: sum, max, min, avg)"
    );
}

#[test]
fn unknown_reference() {
    let text =
        format!("{COUNTERS}  <metric name=\"R\" expr=\"100 * L1.MIS / L1.CYCLES\"/>\n</metrics>");
    assert_eq!(
        load_err(&text).to_string(),
        "metrics.xml:6:32: metric 'R' refers to unknown counter or metric 'L1.MIS' (did you mean 'L1.MISS'?)"
    );
    let text = format!("{COUNTERS}  <metric name=\"R\" expr=\"qqqqq\"/>\n</metrics>");
    assert_eq!(
        load_err(&text).to_string(),
        "metrics.xml:6:26: metric 'R' refers to unknown counter or metric 'qqqqq'"
    );
}

#[test]
fn duplicates() {
    let text = format!("{COUNTERS}  <metric name=\"R\" expr=\"L1.MISS\"/>\n  <metric name=\"R\" expr=\"L1.CYCLES\"/>\n</metrics>");
    assert_eq!(
        load_err(&text).to_string(),
        "metrics.xml:7:3: duplicate metric 'R' (first defined at metrics.xml:6:3)"
    );
    let text = r#"<metrics>
  <arch name="a">
    <counter name="c" block="b" event="1"/>
    <counter name="c" block="b" event="2"/>
  </arch>
</metrics>"#;
    assert_eq!(
        load_err(text).to_string(),
        "metrics.xml:4:5: duplicate counter 'c' in arch 'a' (first defined at metrics.xml:3:5)"
    );
    let text = r#"<metrics>
  <arch name="a"/>
  <arch name="a"/>
</metrics>"#;
    assert_eq!(
        load_err(text).to_string(),
        "metrics.xml:3:3: duplicate arch 'a' (first defined at metrics.xml:2:3)"
    );
    let text = format!("{COUNTERS}  <metric name=\"L1.MISS\" expr=\"1\"/>\n</metrics>");
    assert_eq!(
        load_err(&text).to_string(),
        "metrics.xml:6:3: duplicate name 'L1.MISS': metric has the name of a counter (first defined at metrics.xml:3:5)"
    );
}

#[test]
fn cycles() {
    let text = format!(
        "{COUNTERS}  <metric name=\"IPC\" expr=\"X * 2\"/>\n  <metric name=\"X\" expr=\"L1.MISS + IPC\"/>\n</metrics>"
    );
    let err = load_err(&text);
    assert_eq!(
        err.to_string(),
        "metrics.xml:7:36: metrics refer to each other in a cycle: IPC -> X -> IPC"
    );
    assert!(matches!(err, MetricsError::Cycle { ref path, .. } if path == &["IPC", "X", "IPC"]));

    let text = format!("{COUNTERS}  <metric name=\"S\" expr=\"S + 1\"/>\n</metrics>");
    assert_eq!(
        load_err(&text).to_string(),
        "metrics.xml:6:26: metrics refer to each other in a cycle: S -> S"
    );
}

#[test]
fn schema_and_xml_errors() {
    assert_eq!(
        load_err("<metrics><metric name=\"a\"/></metrics>").to_string(),
        "metrics.xml:1:10: <metric> is missing the 'expr' attribute"
    );
    assert_eq!(
        load_err("<metrics>\n  <metric name=\"a\" exp=\"1\"/></metrics>").to_string(),
        "metrics.xml:2:20: unknown attribute 'exp' on <metric> (expected name, expr, descr, unit)"
    );
    assert_eq!(
        load_err("<metrics><group/></metrics>").to_string(),
        "metrics.xml:1:10: unknown element <group> in <metrics> (expected <arch>, <metric>, <global> or an architecture section such as <gfx9>)"
    );
    assert_eq!(
        load_err("<counters/>").to_string(),
        "metrics.xml:1:1: unknown element <counters> at the top level (expected <arch>, <metric>, <global> or an architecture section such as <gfx9>)"
    );
    assert_eq!(
        load_err("<metrics><arch name=\"a\"><counter name=\"c\" block=\"b\" event=\"0xZZ\"/></arch></metrics>")
            .to_string(),
        "metrics.xml:1:53: counter 'c': event '0xZZ' is not a decimal or 0x-hex integer"
    );
    let xml = load_err("<metrics>\n<metric name=\"a\" expr=\"1\">\n</metrics>");
    assert!(matches!(xml, MetricsError::Xml { .. }));
    assert!(xml.to_string().starts_with("metrics.xml:3:"), "{xml}");
}

#[test]
fn api_errors() {
    let set = MetricSet::default_cpu();
    assert_eq!(
        set.needed_counters(["IPX"]).unwrap_err().to_string(),
        "unknown metric or counter 'IPX' (did you mean 'IPC' or 'CPI'?)"
    );
    let err = set
        .evaluate("IPC", &|n| match n {
            "cycles" => Some(&[0.0][..]),
            "instructions" => Some(&[10.0][..]),
            _ => None,
        })
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "metric 'IPC': division by zero in 'instructions / cycles': divisor 'cycles' evaluated to 0"
    );
    let err = set.evaluate("IPC", &|_| None).unwrap_err();
    assert_eq!(
        err.to_string(),
        "metric 'IPC': no value supplied for counter 'instructions'"
    );
    let err = MetricSet::from_file("/nonexistent/metrics.xml").unwrap_err();
    assert!(matches!(err, MetricsError::Io { .. }));
    assert!(err
        .to_string()
        .starts_with("/nonexistent/metrics.xml: cannot read: "));
}
