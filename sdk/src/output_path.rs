//! Expansion of `METRON_OUTPUT_PATH` templates.

use std::path::{Path, PathBuf};

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

/// A run folder taken by this run, held while this value lives: an exclusive `flock` on the
/// folder, released when it is dropped (or the process ends). Claiming creates no file, so a
/// run's start and end allocate and free no inode for it (on ext4 without a journal a file
/// created soon after deletions costs up to 0.5 ms, and each deletion slows the next creates).
#[derive(Debug)]
pub struct ClaimedFolder {
    path: PathBuf,
    /// `None` where the file system has no locks and this run made the folder.
    _lock: Option<std::fs::File>,
}

impl ClaimedFolder {
    /// The folder.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// Takes a run folder for this run: `dir` when it does not exist or is empty, else the first
/// of `dir-2`, `dir-3`, ... that is. Two runs never get the same folder, whatever they race
/// on (processes of one job started together, an `exec`ed program with the old one's pid and
/// start second): the folder belongs to whoever holds its lock (a non-blocking exclusive
/// `flock` of the folder, the loser moves on), and a folder with anything in it is never
/// taken, so a finished run's folder stays its own after the lock is gone.
pub fn claim(dir: &Path) -> std::io::Result<ClaimedFolder> {
    if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)?;
    }
    for n in 1u32..=100_000 {
        let candidate = if n == 1 {
            dir.to_path_buf()
        } else {
            PathBuf::from(format!("{}-{n}", dir.display()))
        };
        let created = match std::fs::create_dir(&candidate) {
            Ok(()) => true,
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => false,
            Err(e) => return Err(e),
        };
        if !created && !is_empty_dir(&candidate) {
            continue;
        }
        let lock = match std::fs::File::open(&candidate) {
            Ok(lock) => lock,
            Err(_) if created => {
                return Ok(ClaimedFolder {
                    path: candidate,
                    _lock: None,
                })
            }
            Err(_) => continue,
        };
        match crate::sys::try_lock_exclusive(&lock) {
            crate::sys::TryLock::Held => {}
            crate::sys::TryLock::Taken => continue,
            // A file system without locks: still ours if we made the folder.
            crate::sys::TryLock::Unsupported if created => {
                return Ok(ClaimedFolder {
                    path: candidate,
                    _lock: None,
                })
            }
            crate::sys::TryLock::Unsupported => continue,
        }
        // A run that took the folder, wrote and finished between the look and the lock.
        if !created && !is_empty_dir(&candidate) {
            continue;
        }
        return Ok(ClaimedFolder {
            path: candidate,
            _lock: Some(lock),
        });
    }
    Err(std::io::Error::other(format!(
        "{} and 100,000 suffixed folders are all taken",
        dir.display()
    )))
}

fn is_empty_dir(dir: &Path) -> bool {
    std::fs::read_dir(dir).is_ok_and(|mut entries| entries.next().is_none())
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
    expand_for(template, exe, crate::sys::getpid(), secs)
}

/// Expands `template` for process `pid` of program `exe` started at Unix time `secs`: what
/// `metron run` names a run folder after the program it started.
pub fn expand_for(template: &str, exe: &str, pid: u32, secs: u64) -> PathBuf {
    let hostname = crate::sys::hostname();
    let time = utc_stamp(secs);
    let (rank, size) = PathKeys::this_rank();
    let keys = PathKeys {
        pid,
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
    fn a_folder_is_claimed_once_and_a_used_one_never() {
        let base = std::env::temp_dir().join(format!("metron-claim-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        std::fs::create_dir_all(&base).unwrap();
        let suffixed = |n: u32| PathBuf::from(format!("{}-{n}", base.display()));
        let first = claim(&base).unwrap();
        assert_eq!(first.path(), base, "an empty folder is taken");
        assert_eq!(
            std::fs::read_dir(&base).unwrap().count(),
            0,
            "claiming writes nothing into the folder"
        );
        let second = claim(&base).unwrap();
        assert_eq!(
            second.path(),
            suffixed(2),
            "a claimed one is not, while held"
        );
        // A finished run: its claim is gone but its files are there.
        std::fs::write(base.join("metadata.json"), "{}").unwrap();
        drop(first);
        assert_eq!(claim(&base).unwrap().path(), suffixed(3));
        // A run that ended with nothing written gives its empty folder back.
        drop(second);
        assert_eq!(claim(&suffixed(2)).unwrap().path(), suffixed(2));
        // A folder holding anything, even one hidden file, is never taken.
        let marked = base.join("marked");
        std::fs::create_dir_all(&marked).unwrap();
        std::fs::write(marked.join(".hidden"), "").unwrap();
        assert_eq!(
            claim(&marked).unwrap().path(),
            PathBuf::from(format!("{}-2", marked.display()))
        );
        // Eight threads racing for one name get eight folders.
        let racing = base.join("race");
        let got: Vec<ClaimedFolder> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..8)
                .map(|_| s.spawn(|| claim(&racing).unwrap()))
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let paths: std::collections::BTreeSet<&Path> = got.iter().map(|c| c.path()).collect();
        assert_eq!(paths.len(), 8, "{paths:?}");
        assert!(paths.iter().all(|d| d.starts_with(&base)));
        drop(got);
        for n in 2..=3 {
            std::fs::remove_dir_all(suffixed(n)).unwrap();
        }
        std::fs::remove_dir_all(&base).unwrap();
    }

    #[test]
    fn utc_stamps_are_civil_dates() {
        assert_eq!(utc_stamp(0), "19700101-000000");
        assert_eq!(utc_stamp(1_795_397_492), "20261123-013132");
    }
}
