//! Room for the small outputs on a filling disk.
//!
//! The trace is written while the run goes on and can fill the disk; `summary.txt`,
//! `summary.json` and `metadata.json` are written at the end and would then find no space.
//! So when the run folder is first written, a reserve file (`.metron-reserve`, up to
//! [`RESERVE_BYTES`], at most half the space left) is allocated next to the trace; at the end it
//! is removed just before the small outputs are written, and the trace finishes last (see
//! `Sink::writes_while_running`). `metadata.json` goes into that room too, before the trace's
//! last part, where the disk may be short of room ([`room_for_the_end`]); with room to spare it
//! is written once, after the late outputs.

use std::io::Write;
use std::path::Path;

/// The most space kept for the small outputs.
pub(crate) const RESERVE_BYTES: u64 = 256 << 10;
const FILE: &str = ".metron-reserve";

/// Creates `dir` and the reserve in it (best effort: whatever fits).
pub fn reserve(dir: &Path) {
    if std::fs::create_dir_all(dir).is_err() {
        return;
    }
    let room = crate::sys::available_bytes(dir).map_or(RESERVE_BYTES, |free| free / 2);
    let bytes = RESERVE_BYTES.min(room) as usize;
    let Ok(mut file) = std::fs::File::create(dir.join(FILE)) else {
        return;
    };
    // Allocated, not `set_len`: a sparse file would hold no blocks. `fallocate` takes the
    // blocks without writing them (no page cache to fill now and write back after the run);
    // where the file system cannot, they are written.
    if crate::sys::allocate(&file, bytes as u64) {
        return;
    }
    let zeros = vec![0u8; 16 << 10];
    let mut written = 0;
    while written < bytes {
        let n = zeros.len().min(bytes - written);
        if file.write_all(&zeros[..n]).is_err() {
            break;
        }
        written += n;
    }
    // Not synced: a write takes its blocks from the free space when it is made (allocated at
    // once, or reserved by delayed allocation: ext4, xfs and btrfs count reserved blocks as
    // used), so the reserve holds in the page cache as well as on disk, and it is deleted at
    // the end, never needed on disk. `sync_data` here cost 1 to 12 ms on the flusher at the
    // start of every run on a busy VM.
}

/// Trace bytes past which a run on a disk with room to spare makes its reserve.
pub(crate) const RESERVE_PAST: u64 = 8 << 20;

/// Makes the reserve now where the disk is short of room for the end of the run (or its free
/// space is unknown); otherwise it waits for [`reserve_if_large`]. Creates `dir`.
pub fn reserve_if_short(dir: &Path) {
    if std::fs::create_dir_all(dir).is_ok() && !room_for_the_end(dir) {
        reserve(dir);
    }
}

/// Makes the reserve once the trace has written `trace_bytes` >= [`RESERVE_PAST`] (where
/// [`reserve_if_short`] found room and made none).
pub fn reserve_if_large(dir: &Path, trace_bytes: u64) {
    if trace_bytes >= RESERVE_PAST && !holds_reserve(dir) {
        reserve(dir);
    }
}

/// True when `dir` holds the reserve.
pub fn holds_reserve(dir: &Path) -> bool {
    dir.join(FILE).exists()
}

/// Free space past which the end of a run writes `metadata.json` once, after the late
/// outputs, instead of a first version before them into the reserve's room (see
/// [`room_for_the_end`]).
const ROOM_FOR_THE_END: u64 = 1 << 30;

/// True when the run folder's file system has room to spare for everything the end of a run
/// writes (summary, trace's last part, pictures, `metadata.json`): then `metadata.json` need
/// not be written first to be sure of its place. False where the free space is unknown.
pub fn room_for_the_end(dir: &Path) -> bool {
    crate::sys::available_bytes(dir).is_some_and(|free| free >= ROOM_FOR_THE_END)
}

/// Gives the reserve back (at the end, before the small outputs are written).
pub fn release(dir: &Path) {
    let _ = std::fs::remove_file(dir.join(FILE));
}
