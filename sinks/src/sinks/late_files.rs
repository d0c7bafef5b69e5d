//! Sinks that write files at the end of a run from the files the other sinks wrote, and record
//! nothing while the program runs. They finish late (after `metadata.json` and the trace),
//! and report in `metadata.json` what they wrote and how long it took:
//! - `report` (`METRON_REPORT`, on by default): `flamegraph.svg`, `regions.svg` and
//!   `report.html`, made by `metron-report` (`metron report DIR` writes the same afterwards);
//! - `export` (`METRON_EXPORT`, off by default): `session.atp`, `session.occupancy` and
//!   `api.log`, made by `metron-export` (`metron export --format ... DIR`).

use crate::sink::{Event, RunInfo, Sink, ThreadInfo};
use metron_export::Format;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// What a late sink writes: the files, from the run folder.
type Write = Box<dyn FnMut(&Path) -> std::io::Result<Vec<PathBuf>> + Send>;

/// A sink that writes files from the run folder at the end of the run.
pub struct LateFilesSink {
    name: &'static str,
    write: Write,
    /// Fields of its `metadata.json` section besides `files` and `seconds`.
    about: Value,
    report: Option<Value>,
}

impl LateFilesSink {
    /// `flamegraph.svg`, `regions.svg` and `report.html` (`metron-report`).
    pub fn pictures() -> LateFilesSink {
        LateFilesSink {
            name: "report",
            write: Box::new(metron_report::write_pictures),
            about: json!({}),
            report: None,
        }
    }

    /// The exports of `formats` (`metron-export`).
    pub fn export(formats: Vec<Format>) -> LateFilesSink {
        let about = json!({ "formats": formats.iter().map(|f| f.name()).collect::<Vec<_>>() });
        LateFilesSink {
            name: "export",
            write: Box::new(move |dir| metron_export::write_formats(dir, &formats)),
            about,
            report: None,
        }
    }
}

impl Sink for LateFilesSink {
    fn name(&self) -> &str {
        self.name
    }

    fn events(&mut self, _thread: &ThreadInfo, _events: &[Event<'_>]) {}

    fn finish(&mut self, run: &RunInfo) -> std::io::Result<Vec<PathBuf>> {
        let start = Instant::now();
        let files = (self.write)(&run.output_dir)?;
        let mut report = self.about.clone();
        report["files"] = files
            .iter()
            .filter_map(|f| f.file_name().map(|n| n.to_string_lossy().into_owned()))
            .collect::<Vec<_>>()
            .into();
        report["seconds"] = start.elapsed().as_secs_f64().into();
        self.report = Some(report);
        Ok(files)
    }

    fn finishes_late(&self) -> bool {
        // After metadata.json, which the pictures show and the exports read.
        true
    }

    fn metadata(&self) -> Option<Value> {
        self.report.clone()
    }
}
