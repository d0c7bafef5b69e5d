//! The wall-clock offset of each rank to rank 0, estimated with ping-pongs over MPI at
//! `MPI_Init` and `MPI_Finalize`, for `metron merge` to put the ranks on one timeline
//! (`metadata.json` `mpi.clock_offset_to_rank0`).

use super::{clock_sync, flavor, pmpi, StatusSpace, WORLD};
use std::ffi::c_int;
use std::sync::Mutex;

/// This rank's wall clock against rank 0's, from ping-pongs over MPI.
#[derive(Clone, Copy)]
struct ClockOffset {
    /// Rank 0's `CLOCK_REALTIME` minus this rank's, ns.
    offset_ns: i64,
    /// Round trip of the exchange the estimate comes from: the estimate is within ±rtt/2.
    rtt_ns: u64,
    /// This rank's `CLOCK_REALTIME` at the exchange.
    at_realtime_ns: u64,
}

/// Estimates at `MPI_Init` (0) and `MPI_Finalize` (1).
static CLOCK_OFFSETS: Mutex<[Option<ClockOffset>; 2]> = Mutex::new([None, None]);

/// Tag of the clock exchange (below 32767, the smallest `MPI_TAG_UB` MPI allows).
const CLOCK_TAG: c_int = 32_001;
/// Ping-pongs per rank; the one with the shortest round trip is kept.
const CLOCK_ROUNDS: usize = 8;

fn realtime_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid out-pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Estimates this rank's wall-clock offset to rank 0 (slot 0: at `MPI_Init`, 1: at
/// `MPI_Finalize`): each rank in turn sends rank 0 its time `CLOCK_ROUNDS` times and rank 0
/// answers with its own; the answer is taken as read halfway through the round trip. Runs
/// inside the wrapper, before the program's first or after its last MPI call, on
/// `MPI_COMM_WORLD` with a tag of its own, so it cannot meet the program's messages. Every
/// rank must take part (rank 0 waits for each): `METRON_MPI_CLOCK_SYNC=false` turns it off
/// for jobs where only some ranks run under Metron.
pub(super) fn exchange_clocks(slot: usize) {
    if !clock_sync() {
        return;
    }
    let (Some(world), Some(byte)) = (flavor().comm_world(), flavor().byte()) else {
        return;
    };
    let Some((rank, size)) = *WORLD.lock().unwrap_or_else(|e| e.into_inner()) else {
        return;
    };
    if size < 2 {
        return;
    }
    let p = pmpi();
    let mut status = StatusSpace([0; 64]);
    let mut buf = [0u8; 8];
    if rank == 0 {
        for peer in 1..size {
            for _ in 0..CLOCK_ROUNDS {
                // SAFETY: 8 bytes into `buf` from `peer`; our own status space.
                let rc = unsafe {
                    (p.recv)(
                        buf.as_mut_ptr().cast(),
                        8,
                        byte,
                        peer,
                        CLOCK_TAG,
                        world,
                        status.0.as_mut_ptr().cast(),
                    )
                };
                let now = realtime_ns().to_le_bytes();
                // SAFETY: 8 bytes of `now` to `peer`.
                let rc2 = unsafe { (p.send)(now.as_ptr().cast(), 8, byte, peer, CLOCK_TAG, world) };
                if rc != 0 || rc2 != 0 {
                    return;
                }
            }
        }
        let at = realtime_ns();
        CLOCK_OFFSETS.lock().unwrap_or_else(|e| e.into_inner())[slot] = Some(ClockOffset {
            offset_ns: 0,
            rtt_ns: 0,
            at_realtime_ns: at,
        });
        return;
    }
    let mut best: Option<ClockOffset> = None;
    for _ in 0..CLOCK_ROUNDS {
        let t0 = realtime_ns();
        let sent = t0.to_le_bytes();
        // SAFETY: 8 bytes of `sent` to rank 0, then 8 bytes into `buf` from rank 0; our own
        // status space.
        let ok = unsafe {
            (p.send)(sent.as_ptr().cast(), 8, byte, 0, CLOCK_TAG, world) == 0
                && (p.recv)(
                    buf.as_mut_ptr().cast(),
                    8,
                    byte,
                    0,
                    CLOCK_TAG,
                    world,
                    status.0.as_mut_ptr().cast(),
                ) == 0
        };
        let t1 = realtime_ns();
        if !ok {
            return;
        }
        if t1 < t0 {
            continue; // the wall clock stepped during the round trip
        }
        let reference = u64::from_le_bytes(buf);
        let middle = t0 + (t1 - t0) / 2;
        let estimate = ClockOffset {
            offset_ns: (i128::from(reference) - i128::from(middle)) as i64,
            rtt_ns: t1 - t0,
            at_realtime_ns: middle,
        };
        if best.is_none_or(|b| estimate.rtt_ns < b.rtt_ns) {
            best = Some(estimate);
        }
    }
    CLOCK_OFFSETS.lock().unwrap_or_else(|e| e.into_inner())[slot] = best;
}

pub(super) fn offsets_json() -> serde_json::Value {
    let offsets = *CLOCK_OFFSETS.lock().unwrap_or_else(|e| e.into_inner());
    let one = |o: Option<ClockOffset>| {
        o.map(|o| {
            serde_json::json!({
                "offset_ns": o.offset_ns,
                "rtt_ns": o.rtt_ns,
                "at_realtime_ns": o.at_realtime_ns,
            })
        })
    };
    serde_json::json!({
        "what": "rank 0's CLOCK_REALTIME minus this rank's, from the shortest of 8 MPI ping-pongs with rank 0 (within +-rtt_ns/2)",
        "init": one(offsets[0]),
        "finalize": one(offsets[1]),
    })
}
