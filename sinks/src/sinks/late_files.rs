//! Sinks that write files at the end of a run from the files the other sinks wrote, and record
//! nothing while the program runs. They finish late (after `metadata.json` and the trace),
//! and report in `metadata.json` what they wrote and how long it took:
//! - `report` (`METRON_REPORT`, on by default): `flamegraph.svg`, `regions.svg` and
//!   `report.html`, made by `metron-report` (`metron report DIR` writes the same afterwards).
//!   `metron-report` reads `summary.json` whole, which takes about ten times its size in
//!   memory: past [`REPORT_MAX_SUMMARY_BYTES`] (a program with some 10^4 region names) the
//!   pictures are left out at the end of the run, said on stderr and in `metadata.json`, so
//!   that the run keeps its memory bound; `metron report DIR` still draws them;
//! - `export` (`METRON_EXPORT`, off by default): `session.atp`, `session.occupancy` and
//!   `api.log`, made by `metron-export` (`metron export --format ... DIR`).

use crate::sink::{Event, MetadataNeed, RunInfo, Sink, ThreadInfo};
use metron_export::Format;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

/// The largest `summary.json` the end of a run draws pictures from (see the module docs).
pub const REPORT_MAX_SUMMARY_BYTES: u64 = 16 << 20;

/// What a late sink writes: the files, from the run folder (and the run's metadata, when the
/// sink takes it from memory).
type Write = Box<dyn FnMut(&Path, Option<Arc<Value>>) -> std::io::Result<Vec<PathBuf>> + Send>;

/// A sink that writes files from the run folder at the end of the run.
pub struct LateFilesSink {
    name: &'static str,
    write: Write,
    /// The largest `summary.json` this sink reads (`None`: any).
    max_summary_bytes: Option<u64>,
    /// Fields of its `metadata.json` section besides `files` and `seconds`.
    about: Value,
    /// The exports read `metadata.json` from the run folder; the pictures take the run's
    /// metadata from memory ([`Sink::run_metadata`]).
    metadata_need: MetadataNeed,
    /// The run's metadata, handed over before `finish`.
    run_metadata: Option<Arc<Value>>,
    report: Option<Value>,
}

impl LateFilesSink {
    /// `flamegraph.svg`, `regions.svg` and `report.html` (`metron-report`).
    pub fn pictures() -> LateFilesSink {
        LateFilesSink {
            name: "report",
            write: Box::new(metron_report::write_pictures_given),
            max_summary_bytes: Some(REPORT_MAX_SUMMARY_BYTES),
            about: json!({}),
            metadata_need: MetadataNeed::Given,
            run_metadata: None,
            report: None,
        }
    }

    /// The exports of `formats` (`metron-export`).
    pub fn export(formats: Vec<Format>) -> LateFilesSink {
        let about = json!({ "formats": formats.iter().map(|f| f.name()).collect::<Vec<_>>() });
        LateFilesSink {
            name: "export",
            write: Box::new(move |dir, _| metron_export::write_formats(dir, &formats)),
            max_summary_bytes: None,
            about,
            metadata_need: MetadataNeed::File,
            run_metadata: None,
            report: None,
        }
    }
}

impl Sink for LateFilesSink {
    fn name(&self) -> &str {
        self.name
    }

    fn empty_regions(&mut self, _thread: &ThreadInfo, _regions: &[crate::sink::EmptyRegion]) {
        // Regions are not this output's.
    }

    fn events(&mut self, _thread: &ThreadInfo, _events: &[Event<'_>]) {}

    fn finish(&mut self, run: &RunInfo) -> std::io::Result<Vec<PathBuf>> {
        let start = Instant::now();
        let summary_bytes =
            std::fs::metadata(run.output_dir.join("summary.json")).map_or(0, |m| m.len());
        if let Some(max) = self.max_summary_bytes.filter(|max| summary_bytes > *max) {
            eprintln!(
                "metron: {}: summary.json is {} MB, more than the {} MB the end of a run reads; \
                 pictures left out (`metron report {}` draws them)",
                self.name,
                summary_bytes >> 20,
                max >> 20,
                run.output_dir.display()
            );
            let mut report = self.about.clone();
            report["files"] = json!([]);
            report["left_out"] = json!({ "summary_json_bytes": summary_bytes, "max_bytes": max });
            self.report = Some(report);
            return Ok(Vec::new());
        }
        let files = (self.write)(&run.output_dir, self.run_metadata.take())?;
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
        // After the run's metadata is known, which the pictures show and the exports read.
        true
    }

    fn metadata_need(&self) -> MetadataNeed {
        self.metadata_need
    }

    fn run_metadata(&mut self, metadata: &Arc<Value>) {
        self.run_metadata = Some(Arc::clone(metadata));
    }

    fn metadata(&self) -> Option<Value> {
        self.report.clone()
    }
}
