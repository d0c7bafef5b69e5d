//! Expansion of `METRON_OUTPUT_PATH` templates.

use std::path::PathBuf;

/// Values the template keys expand to.
pub(crate) struct PathKeys<'a> {
    pub(crate) pid: u32,
    pub(crate) exe: &'a str,
    pub(crate) hostname: &'a str,
    /// UTC start time as `YYYYMMDD-HHMMSS`.
    pub(crate) time: &'a str,
    /// Rank in the job (launcher variables, [`crate::ranks`]); 0 without a launcher.
    pub(crate) rank: u32,
    /// Ranks in the job; 1 without a launcher, `None` when the launcher gave a rank only.
    pub(crate) size: Option<u32>,
}

impl PathKeys<'_> {
    /// `rank` and `size` of this process: the launcher's, or rank 0 of 1 without one.
    pub(crate) fn this_rank() -> (u32, Option<u32>) {
        crate::ranks::detect().map_or((0, Some(1)), |r| (r.rank, r.size))
    }
}

/// The keys a template may hold, for messages.
pub(crate) const ACCEPTED_KEYS: &str =
    "%pid%, %exe%, %hostname%, %time%, %rank%, %size%, %env{NAME}%";

/// Expands `%pid%`, `%exe%`, `%hostname%`, `%time%`, `%rank%` (0 without a launcher), `%size%`
/// (1 without a launcher, `unknown-size` when the launcher gave no size) and `%env{NAME}%`
/// (empty if unset).
/// Returns the path and the keys it did not know (left as written).
pub(crate) fn expand(
    template: &str,
    keys: &PathKeys<'_>,
    env: impl Fn(&str) -> Option<String>,
) -> (PathBuf, Vec<String>) {
    let mut out = String::new();
    let mut unknown = Vec::new();
    let mut rest = template;
    while let Some(start) = rest.find('%') {
        out.push_str(&rest[..start]);
        let after = &rest[start + 1..];
        let Some(end) = after.find('%') else {
            out.push_str(&rest[start..]);
            rest = "";
            break;
        };
        let key = &after[..end];
        match key {
            "pid" => out.push_str(&keys.pid.to_string()),
            "exe" => out.push_str(keys.exe),
            "hostname" => out.push_str(keys.hostname),
            "time" => out.push_str(keys.time),
            "rank" => out.push_str(&keys.rank.to_string()),
            "size" => match keys.size {
                Some(size) => out.push_str(&size.to_string()),
                None => out.push_str("unknown-size"),
            },
            _ if key.starts_with("env{") && key.ends_with('}') => {
                out.push_str(&env(&key[4..key.len() - 1]).unwrap_or_default());
            }
            _ => {
                unknown.push(format!("%{key}%"));
                out.push_str(&rest[start..start + end + 2]);
            }
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    (PathBuf::from(out), unknown)
}

/// `dir`, or `dir-2`, `dir-3`, ... if a finished run already wrote there: after `exec` the
/// new program has the same pid and often the same start second, and must not overwrite the
/// folder the old program wrote just before.
pub(crate) fn not_yet_written(dir: PathBuf) -> PathBuf {
    let written = |d: &PathBuf| d.join("metadata.json").exists();
    if !written(&dir) {
        return dir;
    }
    (2u32..)
        .map(|n| PathBuf::from(format!("{}-{n}", dir.display())))
        .find(|d| !written(d))
        .expect("some suffix is free")
}

/// `YYYYMMDD-HHMMSS` (UTC) of Unix time `secs`.
pub(crate) fn utc_stamp(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // Civil-from-days (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}{month:02}{day:02}-{:02}{:02}{:02}",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// Expands `template` as a run started now by this process would, with `exe` as the program
/// name; unknown keys stay as written. For tools that run programs several times into one
/// folder (`metron run --passes`).
pub fn expand_now(template: &str, exe: &str) -> PathBuf {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let hostname = crate::sys::hostname();
    let time = utc_stamp(secs);
    let (rank, size) = PathKeys::this_rank();
    let keys = PathKeys {
        pid: crate::sys::getpid(),
        exe,
        hostname: &hostname,
        time: &time,
        rank,
        size,
    };
    expand(template, &keys, |n| std::env::var(n).ok()).0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_key_expands() {
        let keys = PathKeys {
            pid: 42,
            exe: "app",
            hostname: "node7",
            time: "20260101-000000",
            rank: 5,
            size: Some(8),
        };
        let env = |name: &str| (name == "RANK").then(|| "3".to_string());
        let (path, unknown) = expand(
            "out/%exe%-%pid%-%hostname%-%time%-r%env{RANK}%%env{NOPE}%-%rank%of%size%",
            &keys,
            env,
        );
        assert_eq!(
            path,
            PathBuf::from("out/app-42-node7-20260101-000000-r3-5of8")
        );
        assert!(unknown.is_empty());
    }

    #[test]
    fn rank_keys_without_a_launcher_or_size() {
        let mut keys = PathKeys {
            pid: 1,
            exe: "a",
            hostname: "h",
            time: "t",
            rank: 0,
            size: Some(1),
        };
        let (path, unknown) = expand("r%rank%-%size%", &keys, |_| None);
        assert_eq!((path, unknown.len()), (PathBuf::from("r0-1"), 0));
        keys.rank = 7;
        keys.size = None;
        let (path, _) = expand("r%rank%-%size%", &keys, |_| None);
        assert_eq!(path, PathBuf::from("r7-unknown-size"));
    }

    #[test]
    fn unknown_keys_are_kept_and_reported() {
        let keys = PathKeys {
            pid: 1,
            exe: "a",
            hostname: "h",
            time: "t",
            rank: 0,
            size: Some(1),
        };
        let (path, unknown) = expand("x/%ranks%/%pid%", &keys, |_| None);
        assert_eq!(path, PathBuf::from("x/%ranks%/1"));
        assert_eq!(unknown, vec!["%ranks%".to_string()]);
    }

    #[test]
    fn a_folder_holding_a_finished_run_is_not_reused() {
        let base =
            std::env::temp_dir().join(format!("metron-not-yet-written-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        std::fs::create_dir_all(&base).unwrap();
        assert_eq!(
            not_yet_written(base.clone()),
            base,
            "an empty folder is fine"
        );
        std::fs::write(base.join("metadata.json"), "{}").unwrap();
        let second = not_yet_written(base.clone());
        assert_eq!(second, PathBuf::from(format!("{}-2", base.display())));
        std::fs::create_dir_all(&second).unwrap();
        std::fs::write(second.join("metadata.json"), "{}").unwrap();
        assert_eq!(
            not_yet_written(base.clone()),
            PathBuf::from(format!("{}-3", base.display()))
        );
        std::fs::remove_dir_all(&base).unwrap();
        std::fs::remove_dir_all(&second).unwrap();
    }

    #[test]
    fn utc_stamps_are_civil_dates() {
        assert_eq!(utc_stamp(0), "19700101-000000");
        assert_eq!(utc_stamp(1_795_397_492), "20261123-013132");
    }
}
