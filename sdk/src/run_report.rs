//! What a finished run wrote: returned by `metron::finish`, whether this copy of Metron ran
//! the run or joined another copy's (see `shared_runtime`).

use std::path::PathBuf;

/// What a finished run wrote.
#[derive(Clone, Debug)]
pub struct RunReport {
    /// The run folder.
    pub output_dir: PathBuf,
    /// Files written, `metadata.json` last.
    pub files: Vec<PathBuf>,
    /// Records decoded over all threads.
    pub records_written: u64,
    /// Records dropped over all threads.
    pub records_dropped: u64,
}
