//! Sinks that write files at the end of a run from the files the other sinks wrote, and record
//! nothing while the program runs. They finish late (after `metadata.json` and the trace),
//! and report in `metadata.json` what they wrote and how long it took:
//! - `report` (`METRON_REPORT`, on by default): `critical_path.txt`/`.json` for a run with GPU
//!   work (`metron-whatif`, which adds their top rows to `summary.txt` and `summary.json`),
//!   then `flamegraph.svg`, `regions.svg` and
//!   `report.html`, made by `metron-report` (`metron report DIR` writes the same afterwards),
//!   at the end of every run whatever the size of its files: `metron-report` reads of
//!   `summary.json` only what the pictures show, and folds flame-graph frames narrower than a
//!   pixel; what it folded is reported under `folded`;
//! - `export` (`METRON_EXPORT`, off by default): `session.atp`, `session.occupancy` and
//!   `api.log`, made by `metron-export` (`metron export --format ... DIR`).

use crate::sink::{Event, MetadataNeed, RunInfo, Sink, ThreadInfo};
use metron_export::Format;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

/// What a late sink writes: the files, from the run folder (and the run's metadata, when the
/// sink takes it from memory), and what it has to say besides (fields of its `metadata.json`
/// section).
type Write =
    Box<dyn FnMut(&Path, Option<Arc<Value>>) -> std::io::Result<(Vec<PathBuf>, Value)> + Send>;

/// A sink that writes files from the run folder at the end of the run.
pub struct LateFilesSink {
    name: &'static str,
    write: Write,
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
            write: Box::new(|dir, metadata| {
                // The critical path first: report.html shows it. A failure of it (even a
                // panic) is reported and costs the run none of its other files.
                let critical = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    metron_whatif::files::write(dir, metadata.as_deref())
                }));
                let (mut files, critical_path) = match critical {
                    Ok(Ok(Ok(written))) => (
                        written.files,
                        // The summary sink's files were written before (it finishes early);
                        // one that could not take the critical path is left as it was.
                        written
                            .summary_error
                            .map_or(Value::Null, |e| json!({ "summary_error": e })),
                    ),
                    Ok(Ok(Err(skipped))) => (Vec::new(), json!({ "skipped": skipped })),
                    Ok(Err(e)) => (Vec::new(), json!({ "error": e.to_string() })),
                    Err(_) => (
                        Vec::new(),
                        json!({ "error": "the critical path's computation panicked" }),
                    ),
                };
                let pictures = metron_report::write_pictures_given(dir, metadata)?;
                let folded: serde_json::Map<String, Value> = pictures
                    .folded
                    .iter()
                    .map(|(file, folding)| (file.to_string(), json!(folding)))
                    .collect();
                files.extend(pictures.files);
                let mut about = json!({ "folded": folded });
                if !critical_path.is_null() {
                    about["critical_path"] = critical_path;
                }
                Ok((files, about))
            }),
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
            write: Box::new(move |dir, _| {
                Ok((metron_export::write_formats(dir, &formats)?, json!({})))
            }),
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
        let (files, said) = (self.write)(&run.output_dir, self.run_metadata.take())?;
        let mut report = self.about.clone();
        if let (Some(report), Some(said)) = (report.as_object_mut(), said.as_object()) {
            report.extend(said.clone());
        }
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
