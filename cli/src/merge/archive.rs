//! `ranks.tar`: every rank's trace as `rank<N>.pftrace` plus a `perfetto_manifest.json` (the
//! trace manifest format of perfetto.dev, "Trace manifest format", version 1): each file is
//! attributed to a machine named after its host and `REALTIME` is the merged timeline, so
//! Perfetto (v58.2 and later) opens the archive as one multi-machine trace aligned by each
//! file's own clock snapshots. Each rank's trace keeps its clocks and service packets; only
//! its track uuids, flow ids and process name are made those of the merged trace, so ranks of
//! one host (one machine) cannot collide. Written as a plain POSIX ustar archive, each trace
//! streamed into it.

use super::inputs::RankRun;
use serde_json::{json, Value};
use std::io::{self, Seek, SeekFrom, Write};

/// The manifest for `members` (archive member name, run) in the archive.
pub(crate) fn manifest(members: &[(String, &RankRun)]) -> Value {
    let files: Vec<Value> = members
        .iter()
        .map(|(path, run)| json!({"path": path, "machine": {"name": machine_name(run)}}))
        .collect();
    json!({
        "perfetto_manifest": {
            "version": 1,
            "trace_time": {"clock": "REALTIME"},
            "files": files,
            "attributes": {
                "metron.ranks": members.len() as i64,
                "metron.rank_files": members
                    .iter()
                    .map(|(path, run)| format!("{path}=rank {} ({}, {})", run.rank, run.host, run.pid))
                    .collect::<Vec<_>>()
                    .join("; "),
            },
        }
    })
}

/// A run's machine: its host name (runs of one host share the machine and its clocks).
fn machine_name(run: &RankRun) -> String {
    if run.host.is_empty() {
        "unknown-host".to_string()
    } else {
        run.host.clone()
    }
}

/// Writes a ustar archive member header for a regular file of `size` bytes.
fn header(out: &mut impl Write, name: &str, size: u64, mtime: u64) -> io::Result<()> {
    if name.len() > 100 {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("archive member name {name:?} is longer than 100 bytes"),
        ));
    }
    let mut h = [0u8; 512];
    h[..name.len()].copy_from_slice(name.as_bytes());
    h[100..108].copy_from_slice(b"0000644\0");
    h[108..116].copy_from_slice(b"0000000\0");
    h[116..124].copy_from_slice(b"0000000\0");
    if size < 0o77777777777 {
        h[124..136].copy_from_slice(format!("{size:011o}\0").as_bytes());
    } else {
        // GNU base-256 for members of 8 GiB and more.
        h[124] = 0x80;
        h[128..136].copy_from_slice(&size.to_be_bytes());
    }
    h[136..148].copy_from_slice(format!("{:011o}\0", mtime.min(0o77777777777)).as_bytes());
    h[148..156].copy_from_slice(b"        ");
    h[156] = b'0';
    h[257..263].copy_from_slice(b"ustar\0");
    h[263..265].copy_from_slice(b"00");
    let sum: u32 = h.iter().map(|&b| u32::from(b)).sum();
    h[148..156].copy_from_slice(format!("{sum:06o}\0 ").as_bytes());
    out.write_all(&h)
}

fn pad(out: &mut impl Write, size: u64) -> io::Result<()> {
    let rem = (size % 512) as usize;
    if rem != 0 {
        out.write_all(&[0u8; 512][..512 - rem])?;
    }
    Ok(())
}

/// Appends member `name` with the bytes of `data`.
pub(crate) fn add_bytes(
    out: &mut impl Write,
    name: &str,
    data: &[u8],
    mtime: u64,
) -> io::Result<()> {
    header(out, name, data.len() as u64, mtime)?;
    out.write_all(data)?;
    pad(out, data.len() as u64)
}

/// Appends member `name` with what `body` writes: a header with size 0 first, rewritten with
/// the real size once the body is written (so a member can be streamed without knowing its
/// size, or holding it).
pub(crate) fn add_written<W: Write + Seek>(
    out: &mut W,
    name: &str,
    mtime: u64,
    body: impl FnOnce(&mut W) -> io::Result<()>,
) -> io::Result<()> {
    let start = out.stream_position()?;
    header(out, name, 0, mtime)?;
    body(out)?;
    let end = out.stream_position()?;
    let size = end - start - 512;
    pad(out, size)?;
    let after = out.stream_position()?;
    out.seek(SeekFrom::Start(start))?;
    header(out, name, size, mtime)?;
    out.seek(SeekFrom::Start(after))?;
    Ok(())
}

/// Ends the archive (two zero blocks).
pub(crate) fn finish(out: &mut impl Write) -> io::Result<()> {
    out.write_all(&[0u8; 1024])
}
