//! The metric-file reader on arbitrary text (Metron's layout and rocprofiler's): never a
//! panic or a stack overflow; errors are short however long the input, and a file that
//! loads can plan and evaluate every metric it defines.
#![no_main]

use libfuzzer_sys::fuzz_target;
use metron_metrics::MetricSet;

/// Messages quote at most a few cut pieces of input.
const MAX_MESSAGE_CHARS: usize = 2000;

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
    match MetricSet::from_xml("fuzz.xml", text) {
        Ok(set) => {
            let names: Vec<String> = set.metrics().keys().cloned().collect();
            let _ = set.needed_counters(&names);
            for name in &names {
                let _ = set.evaluate(name, &|_| Some(&[2.0][..]));
            }
            let mut merged = MetricSet::default_cpu();
            let _ = merged.merge(set);
        }
        Err(e) => {
            // "fuzz.xml" and positions are short; the rest is cut input.
            check_message(&e.to_string());
        }
    }
});
