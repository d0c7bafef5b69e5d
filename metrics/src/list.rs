//! A list of metrics as a user writes it in a setting (`METRON_GPU_METRICS`): names separated
//! by commas, and derived metrics written `name=expression` in the metric layer's language,
//! whose references are counted too. Shared by the NVIDIA and AMD GPU backends.

use crate::{cut_input, Expr};

/// Names split on commas, trimmed, empty ones and repeats dropped.
pub fn split_list(raw: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for m in raw.split(',').map(str::trim).filter(|m| !m.is_empty()) {
        if !out.iter().any(|o| o == m) {
            out.push(m.to_string());
        }
    }
    out
}

/// What a metric list asks for.
#[derive(Debug)]
pub struct MetricList {
    /// The hardware metrics or counters to count (listed, then referenced by derived ones), no
    /// repeats.
    pub hardware: Vec<String>,
    /// `(name, expression source, parsed)`.
    pub derived: Vec<(String, String, Expr)>,
}

impl MetricList {
    /// Parses a list (`Err` names the entry whose expression does not parse).
    pub fn parse(raw: &str) -> Result<MetricList, String> {
        let mut list = MetricList {
            hardware: Vec::new(),
            derived: Vec::new(),
        };
        let add = |hw: &mut Vec<String>, m: &str| {
            if !hw.iter().any(|o| o == m) {
                hw.push(m.to_string());
            }
        };
        for entry in split_list(raw) {
            match entry.split_once('=') {
                None => add(&mut list.hardware, &entry),
                Some((name, source)) => {
                    let (name, source) = (name.trim(), source.trim());
                    let expr = Expr::parse(source).map_err(|e| {
                        format!(
                            "derived GPU metric {}={}: {e}",
                            cut_input(name),
                            cut_input(source)
                        )
                    })?;
                    for r in expr.names() {
                        add(&mut list.hardware, r);
                    }
                    list.derived
                        .push((name.to_string(), source.to_string(), expr));
                }
            }
        }
        Ok(list)
    }

    /// Every column name: hardware metrics, then derived ones.
    pub fn columns(&self) -> Vec<String> {
        let mut c = self.hardware.clone();
        c.extend(self.derived.iter().map(|d| d.0.clone()));
        c
    }

    /// The derived values for one set of hardware values (NaN when an expression fails, e.g.
    /// a division by zero).
    pub fn derive(&self, hardware: &[f64]) -> Vec<f64> {
        self.derived
            .iter()
            .map(|(_, _, e)| {
                e.evaluate(&|n| {
                    self.hardware
                        .iter()
                        .position(|h| h == n)
                        .and_then(|i| hardware.get(i))
                        .map(std::slice::from_ref)
                })
                .unwrap_or(f64::NAN)
            })
            .collect()
    }
}
