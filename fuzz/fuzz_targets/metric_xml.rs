//! The metric-file reader on arbitrary text: never a panic; errors render, and a file that
//! loads can plan and evaluate every metric it defines.
#![no_main]

use libfuzzer_sys::fuzz_target;
use metron_metrics::MetricSet;

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
            let _ = e.to_string();
        }
    }
});
