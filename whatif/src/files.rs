//! `critical_path.txt` and `critical_path.json`: the critical-path table and the GPU's idle
//! time of a run, written into its folder at the end of a run that used a GPU (before
//! `report.html`, which shows the text) and by `metron report`; the run's summary gets their
//! top rows ([`crate::summary`]).

use crate::answer::answer;
use serde_json::Value;
use std::io;
use std::path::{Path, PathBuf};

pub use crate::file_names::{CRITICAL_PATH_JSON, CRITICAL_PATH_TXT};
/// A trace larger than this is not read at the end of the run (decoding it would lengthen the
/// end by seconds); `metron whatif DIR` reads it afterwards.
pub const LARGEST_TRACE_AT_END: u64 = 16 << 20;

/// What [`write`] did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Written {
    /// The two files (none for a run without GPU work).
    pub files: Vec<PathBuf>,
    /// Why the run's summary does not show the critical path, when a summary file could not
    /// take it (that file is left as it was; the two files are written all the same).
    pub summary_error: Option<String>,
}

/// Writes the two files when the folder's trace holds GPU work, then adds their top rows to
/// the folder's `summary.txt` and `summary.json` (replacing what an earlier call added);
/// returns what it wrote, or a note of why it was skipped. `metadata` is the run's (read from
/// the folder when `None`): a run whose trace has no GPU record is not read.
pub fn write(dir: &Path, metadata: Option<&Value>) -> io::Result<Result<Written, String>> {
    let from_file;
    let metadata = match metadata {
        Some(m) => Some(m),
        None => {
            from_file = std::fs::read(dir.join("metadata.json"))
                .ok()
                .and_then(|b| serde_json::from_slice::<Value>(&b).ok());
            from_file.as_ref()
        }
    };
    let gpu_records =
        metadata.and_then(|m| m["outputs"]["trace"]["gpu"]["records_written"].as_u64());
    if gpu_records == Some(0) {
        return Ok(Ok(Written::default()));
    }
    let trace = dir.join("trace.pftrace");
    let size = match std::fs::metadata(&trace) {
        Ok(m) => m.len(),
        Err(_) => return Ok(Ok(Written::default())),
    };
    if size > LARGEST_TRACE_AT_END {
        return Ok(Err(format!(
            "the trace is {} MB (over {} MB): run `metron whatif {}` for the critical path",
            size >> 20,
            LARGEST_TRACE_AT_END >> 20,
            dir.display()
        )));
    }
    let run = metron_export::Run::read_only(dir, metron_export::Parts::TRACE)?;
    let graph = crate::from_run(&run);
    if !graph
        .nodes
        .iter()
        .any(|n| matches!(n.kind, crate::graph::Kind::Op { .. }))
    {
        return Ok(Ok(Written::default()));
    }
    let a = answer(&graph, Vec::new(), None).map_err(io::Error::other)?;
    let txt = dir.join(CRITICAL_PATH_TXT);
    let json = dir.join(CRITICAL_PATH_JSON);
    std::fs::write(&txt, a.text())?;
    std::fs::write(
        &json,
        serde_json::to_string_pretty(&a.json()).unwrap_or_default(),
    )?;
    // After the two files, which the summary points to for the rest of the table.
    let summary_error = crate::summary::add(dir, &a).err();
    Ok(Ok(Written {
        files: vec![txt, json],
        summary_error,
    }))
}
