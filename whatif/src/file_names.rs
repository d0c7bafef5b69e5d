//! The names of the critical path's files in a run folder (what the summary points to).

/// The text file.
pub const CRITICAL_PATH_TXT: &str = "critical_path.txt";
/// The JSON file.
pub const CRITICAL_PATH_JSON: &str = "critical_path.json";
