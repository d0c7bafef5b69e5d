//! `session.atp`, `session.occupancy` and `api.log` at the end of a run (`METRON_EXPORT`, off
//! by default): written by `metron-export` from the files the other sinks wrote (the trace,
//! `kernels.csv`, `metadata.json`), so this sink finishes late and records nothing while the
//! program runs. `metron export --format ... DIR` writes the same files afterwards.

use crate::sink::{Event, RunInfo, Sink, ThreadInfo};
use metron_export::Format;
use serde_json::{json, Value};
use std::path::PathBuf;
use std::time::Instant;

/// The export sink.
pub struct ExportSink {
    formats: Vec<Format>,
    report: Option<Value>,
}

impl ExportSink {
    /// A sink that writes `formats` at the end of the run.
    pub fn new(formats: Vec<Format>) -> ExportSink {
        ExportSink {
            formats,
            report: None,
        }
    }
}

impl Sink for ExportSink {
    fn name(&self) -> &str {
        "export"
    }

    fn events(&mut self, _thread: &ThreadInfo, _events: &[Event<'_>]) {}

    fn finish(&mut self, run: &RunInfo) -> std::io::Result<Vec<PathBuf>> {
        let start = Instant::now();
        let files = metron_export::write_formats(&run.output_dir, &self.formats)?;
        self.report = Some(json!({
            "formats": self.formats.iter().map(|f| f.name()).collect::<Vec<_>>(),
            "files": files
                .iter()
                .filter_map(|f| f.file_name().map(|n| n.to_string_lossy().into_owned()))
                .collect::<Vec<_>>(),
            "seconds": start.elapsed().as_secs_f64(),
        }));
        Ok(files)
    }

    fn finishes_late(&self) -> bool {
        // After metadata.json, which the exports read.
        true
    }

    fn metadata(&self) -> Option<Value> {
        self.report.clone()
    }
}
