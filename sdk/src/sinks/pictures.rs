//! `flamegraph.svg`, `regions.svg` and `report.html` at the end of a run (`METRON_REPORT`,
//! on by default): made by `metron-report` from the files the other sinks wrote, so this sink
//! finishes late: after `metadata.json` and after the trace. `metron report DIR` writes the
//! same files from a folder afterwards.

use crate::sink::{Event, RunInfo, Sink, ThreadInfo};
use serde_json::{json, Value};
use std::path::PathBuf;
use std::time::Instant;

/// The pictures sink.
#[derive(Default)]
pub struct PicturesSink {
    report: Option<Value>,
}

impl PicturesSink {
    /// A sink that writes the pictures at the end of the run.
    pub fn new() -> PicturesSink {
        PicturesSink::default()
    }
}

impl Sink for PicturesSink {
    fn name(&self) -> &str {
        "report"
    }

    fn events(&mut self, _thread: &ThreadInfo, _events: &[Event<'_>]) {}

    fn finish(&mut self, run: &RunInfo) -> std::io::Result<Vec<PathBuf>> {
        let start = Instant::now();
        let files = metron_report::write_pictures(&run.output_dir)?;
        self.report = Some(json!({
            "files": files
                .iter()
                .filter_map(|f| f.file_name().map(|n| n.to_string_lossy().into_owned()))
                .collect::<Vec<_>>(),
            "seconds": start.elapsed().as_secs_f64(),
        }));
        Ok(files)
    }

    fn finishes_late(&self) -> bool {
        // After metadata.json, which the report shows.
        true
    }

    fn metadata(&self) -> Option<Value> {
        self.report.clone()
    }
}
