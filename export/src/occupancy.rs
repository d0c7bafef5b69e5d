//! Theoretical occupancy of an NVIDIA kernel launch: the one model of it in Metron. The NVIDIA
//! backend computes `kernels.csv`'s `KernelOccupancy` with it, and the occupancy file
//! (`session.occupancy`) derives its limited-wave columns from it. It lives in this crate
//! because this is the lowest crate both reach (`metron` and `metron-sinks` depend on it, and
//! the backend depends on them); it is plain arithmetic with no dependency.
//!
//! The model: warps per block are threads / 32 rounded up; registers are allocated per warp in
//! units of 256; shared memory per block is the kernel's (static + dynamic) plus what the
//! driver reserves per block, against the SM's whole shared memory (the carveout the driver
//! picks when the kernel needs it). Resident blocks per SM are the tightest of the four
//! limits (threads, blocks, registers, shared memory).
//!
//! It leaves out two details of CUDA's occupancy calculator (`cuda_occupancy.h`): registers
//! are split over the SM's four sub-partitions (a warp cannot straddle two), and the
//! per-block register limit. Where 65,536 registers do not divide evenly among the warps
//! (e.g. 37 registers per thread, 320 threads per block: the calculator says 4 blocks, this
//! model 5) the model can be one block higher; for the usual register counts (powers of two,
//! multiples of 8 per thread) both agree.

/// The per-SM limits of a device that occupancy needs (CUDA device attributes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SmLimits {
    /// Max resident threads per SM.
    pub threads_per_sm: i64,
    /// Max resident blocks per SM.
    pub blocks_per_sm: i64,
    /// 32-bit registers per SM.
    pub registers_per_sm: i64,
    /// Shared memory per SM, bytes.
    pub shared_per_sm: i64,
    /// Shared memory the driver reserves per block, bytes.
    pub reserved_shared_per_block: i64,
}

/// What each device limit allows one kernel launch on one SM, in blocks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockLimits {
    /// Warps per block (threads / 32, rounded up).
    pub warps_per_block: i64,
    /// Max resident warps per SM (threads per SM / 32).
    pub max_warps: i64,
    /// Blocks that fit by the threads per SM.
    pub by_threads: i64,
    /// Blocks per SM (the device's block count limit).
    pub by_blocks: i64,
    /// Blocks that fit by registers (`i64::MAX` when the kernel uses none).
    pub by_registers: i64,
    /// Blocks that fit by shared memory (`i64::MAX` when the kernel and driver use none).
    pub by_shared: i64,
}

impl BlockLimits {
    /// Resident blocks per SM: the tightest limit.
    pub fn blocks(&self) -> i64 {
        self.by_threads
            .min(self.by_blocks)
            .min(self.by_registers)
            .min(self.by_shared)
            .max(0)
    }

    /// Theoretical occupancy: active warps / max warps per SM.
    pub fn occupancy(&self) -> f32 {
        (self.blocks() * self.warps_per_block) as f32 / self.max_warps as f32
    }
}

/// The per-limit block counts of a launch of `block_threads` threads per block, `registers`
/// per thread and `shared_per_block` bytes of shared memory (`None` without threads).
pub fn block_limits(
    l: &SmLimits,
    block_threads: i64,
    registers: i64,
    shared_per_block: i64,
) -> Option<BlockLimits> {
    if block_threads <= 0 || l.threads_per_sm <= 0 {
        return None;
    }
    let warps_per_block = (block_threads + 31) / 32;
    let max_warps = l.threads_per_sm / 32;
    let by_registers = if registers <= 0 {
        i64::MAX
    } else {
        let per_warp = (registers * 32 + 255) / 256 * 256;
        (l.registers_per_sm / per_warp) / warps_per_block
    };
    let per_block = shared_per_block + l.reserved_shared_per_block;
    let by_shared = if per_block <= 0 {
        i64::MAX
    } else {
        l.shared_per_sm / per_block
    };
    Some(BlockLimits {
        warps_per_block,
        max_warps,
        by_threads: max_warps / warps_per_block,
        by_blocks: l.blocks_per_sm.max(1),
        by_registers,
        by_shared,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// sm_90 (H100): the device attributes CUDA reports.
    const SM_90: SmLimits = SmLimits {
        threads_per_sm: 2048,
        blocks_per_sm: 32,
        registers_per_sm: 65536,
        shared_per_sm: 233_472,
        reserved_shared_per_block: 1024,
    };

    fn blocks_and_occupancy(threads: i64, registers: i64, shared: i64) -> (i64, f32) {
        let b = block_limits(&SM_90, threads, registers, shared).unwrap();
        (b.blocks(), b.occupancy())
    }

    #[test]
    fn sm_90_matches_the_cuda_occupancy_calculator() {
        // (threads, registers per thread, shared bytes per block) -> (active blocks per SM,
        // occupancy), as CUDA's occupancy calculator gives them for compute capability 9.0.
        // Full: 8 blocks of 8 warps, limited by threads and registers at once.
        assert_eq!(blocks_and_occupancy(256, 32, 0), (8, 1.0));
        // Registers: 64 per thread is 2,048 per warp, 32 warps, 4 blocks: 50 %.
        assert_eq!(blocks_and_occupancy(256, 64, 0), (4, 0.5));
        // 128 per thread: 16 warps, 4 blocks of 4 warps: 25 %.
        assert_eq!(blocks_and_occupancy(128, 128, 0), (4, 0.25));
        // 255 per thread (256 allocated): 8 warps, one block of 8 warps: 12.5 %.
        assert_eq!(blocks_and_occupancy(256, 255, 0), (1, 0.125));
        // 40 per thread: 1,280 per warp, 51 warps, 12 blocks of 4 warps: 75 %.
        assert_eq!(blocks_and_occupancy(128, 40, 0), (12, 0.75));
        // Shared memory: 48 KiB + 1 KiB reserved per block, 4 blocks in 228 KiB: 50 %.
        assert_eq!(blocks_and_occupancy(256, 32, 48 * 1024), (4, 0.5));
        // 100 KiB per block: 2 blocks: 25 %.
        assert_eq!(blocks_and_occupancy(256, 16, 100 * 1024), (2, 0.25));
        // Blocks: 32 blocks of 1 warp at most: 50 %; of 2 warps: 100 %.
        assert_eq!(blocks_and_occupancy(32, 16, 0), (32, 0.5));
        assert_eq!(blocks_and_occupancy(64, 16, 0), (32, 1.0));
        // 1,024 threads: 2 blocks; 96 threads (3 warps): 21 blocks, 63 of 64 warps.
        assert_eq!(blocks_and_occupancy(1024, 32, 0), (2, 1.0));
        assert_eq!(blocks_and_occupancy(96, 0, 0), (21, 63.0 / 64.0));
    }

    #[test]
    fn limits_a_kernel_does_not_use_do_not_limit_it() {
        let b = block_limits(&SM_90, 256, 0, 0).unwrap();
        assert_eq!(b.by_registers, i64::MAX);
        let no_reserve = SmLimits {
            reserved_shared_per_block: 0,
            ..SM_90
        };
        assert_eq!(
            block_limits(&no_reserve, 256, 0, 0).unwrap().by_shared,
            i64::MAX
        );
        assert_eq!(block_limits(&SM_90, 0, 16, 0), None);
    }
}
