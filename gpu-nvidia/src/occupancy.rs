//! A device's limits as the driver reports them, and the theoretical occupancy of a launch
//! (`kernels.csv`'s `KernelOccupancy`) by the one occupancy model,
//! [`metron_export::occupancy`], which the occupancy export shares.

use crate::sys;
use serde_json::{json, Value};

pub use metron_export::occupancy::BlockLimits;

/// The device limits occupancy needs.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct Limits {
    /// Max resident threads per SM.
    pub threads_per_sm: i32,
    /// Max resident blocks per SM.
    pub blocks_per_sm: i32,
    /// 32-bit registers per SM.
    pub registers_per_sm: i32,
    /// Shared memory per SM, bytes.
    pub shared_per_sm: i32,
    /// Shared memory the driver reserves per block, bytes.
    pub reserved_shared_per_block: i32,
}

impl Limits {
    /// The limits in the occupancy model's terms.
    fn sm(&self) -> metron_export::occupancy::SmLimits {
        metron_export::occupancy::SmLimits {
            threads_per_sm: i64::from(self.threads_per_sm),
            blocks_per_sm: i64::from(self.blocks_per_sm),
            registers_per_sm: i64::from(self.registers_per_sm),
            shared_per_sm: i64::from(self.shared_per_sm),
            reserved_shared_per_block: i64::from(self.reserved_shared_per_block),
        }
    }
}

/// The per-limit block counts of a launch (`None` without threads); see [`occupancy`].
/// `metron export` reports them as the reference profiler's limited-wave counts,
/// `blocks * warps_per_block`.
pub fn block_limits(
    l: &Limits,
    block_threads: i64,
    registers: u16,
    shared_per_block: i64,
) -> Option<BlockLimits> {
    metron_export::occupancy::block_limits(
        &l.sm(),
        block_threads,
        i64::from(registers),
        shared_per_block,
    )
}

/// Theoretical occupancy (active warps / max warps per SM) from the launch configuration and
/// the device limits; warps and registers allocated per warp in units of 256 registers.
pub fn occupancy(
    l: &Limits,
    block_threads: i64,
    registers: u16,
    shared_per_block: i64,
) -> Option<f32> {
    Some(block_limits(l, block_threads, registers, shared_per_block)?.occupancy())
}

pub(crate) fn limits_of(driver: &sys::Driver, device: u32) -> Option<Limits> {
    let d = device as i32;
    Some(Limits {
        threads_per_sm: driver.attribute(d, 39)?,
        blocks_per_sm: driver.attribute(d, 106)?,
        registers_per_sm: driver.attribute(d, 82)?,
        shared_per_sm: driver.attribute(d, 81)?,
        reserved_shared_per_block: driver.attribute(d, 111).unwrap_or(0),
    })
}

/// A device's limits as `metadata.json` lists them (`gpu.devices[i].limits`): [`Limits`] and
/// the SM count, warp size, max threads per block and compute capability (`None` where the
/// driver did not answer).
pub(crate) fn limits_json(driver: &sys::Driver, device: u32, limits: &Limits) -> Value {
    let d = device as i32;
    let mut v = json!(limits);
    v["sm_count"] = json!(driver.attribute(d, 16));
    v["warp_size"] = json!(driver.attribute(d, 10));
    v["max_threads_per_block"] = json!(driver.attribute(d, 1));
    v["compute_capability"] = match (driver.attribute(d, 75), driver.attribute(d, 76)) {
        (Some(major), Some(minor)) => json!(format!("{major}.{minor}")),
        _ => Value::Null,
    };
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn occupancy_follows_the_tightest_limit() {
        // H100: 2048 threads, 32 blocks, 64K registers, 228 KiB shared per SM, 1 KiB reserved.
        let h100 = Limits {
            threads_per_sm: 2048,
            blocks_per_sm: 32,
            registers_per_sm: 65536,
            shared_per_sm: 233472,
            reserved_shared_per_block: 1024,
        };
        assert_eq!(occupancy(&h100, 256, 16, 0), Some(1.0));
        // 128 registers per thread: 16 warps of 256 threads → 2 blocks → 16 of 64 warps.
        assert_eq!(occupancy(&h100, 256, 128, 0), Some(0.25));
        // 100 KiB shared per block: 2 blocks of 8 warps.
        assert_eq!(occupancy(&h100, 256, 16, 100 * 1024), Some(0.25));
        assert_eq!(occupancy(&h100, 0, 16, 0), None);
        // The terms: 128 registers limit to 2 blocks, threads to 8, blocks to 32.
        let b = block_limits(&h100, 256, 128, 0).unwrap();
        assert_eq!(
            (b.by_registers, b.by_threads, b.by_blocks, b.by_shared),
            (2, 8, 32, 233472 / 1024)
        );
        assert_eq!((b.blocks(), b.warps_per_block, b.max_warps), (2, 8, 64));
        assert_eq!(
            block_limits(&h100, 256, 0, 0).unwrap().by_registers,
            i64::MAX
        );
    }
}
