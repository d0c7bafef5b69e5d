//! The sample table: samples per (PC, stall reason) in a fixed-capacity table (no allocation
//! per record), the functions seen, CUPTI's counts, and the decode of a CUPTI buffer into them.

use super::*;

// ---------------------------------------------------------------------------------------------
// The table (no allocation after construction).

/// One sampled PC: where, and (serialized mode) which launch.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct PcKey {
    /// The cubin's CRC (`cuptiGetCubinCrc`).
    pub crc: u64,
    /// PC offset in the function.
    pub pc_offset: u64,
    /// Function index in the cubin.
    pub function_index: u32,
    /// Correlation id (0 in continuous mode).
    pub correlation: u32,
}

/// Samples per (PC, stall-reason index), open addressing, fixed capacity.
pub struct Table {
    keys: Vec<PcKey>,
    used: Vec<bool>,
    counts: Vec<u64>,
    len: usize,
    limit: usize,
    /// Samples of new PCs that found the table full.
    pub lost_samples: u64,
    /// Samples whose reason index was beyond [`MAX_REASON_INDEX`].
    pub unknown_reason_samples: u64,
}

impl Table {
    /// A table for `pcs` entries (all memory taken now).
    pub fn with_capacity(pcs: usize) -> Table {
        let slots = (pcs * 2).next_power_of_two().max(16);
        Table {
            keys: vec![PcKey::default(); slots],
            used: vec![false; slots],
            counts: vec![0; slots * MAX_REASON_INDEX],
            len: 0,
            limit: pcs,
            lost_samples: 0,
            unknown_reason_samples: 0,
        }
    }

    fn slot(&self, k: &PcKey) -> usize {
        let mut h = k.crc
            ^ k.pc_offset.rotate_left(17)
            ^ u64::from(k.function_index).rotate_left(33)
            ^ u64::from(k.correlation).rotate_left(47);
        h = h.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        (h >> 20) as usize & (self.keys.len() - 1)
    }

    /// Adds `samples` of reason `index` at `key`; false when the table was full (counted).
    pub fn add(&mut self, key: PcKey, index: u32, samples: u64) -> bool {
        if index as usize >= MAX_REASON_INDEX {
            self.unknown_reason_samples += samples;
            return true;
        }
        let mask = self.keys.len() - 1;
        let mut s = self.slot(&key);
        loop {
            if !self.used[s] {
                if self.len >= self.limit {
                    self.lost_samples += samples;
                    return false;
                }
                self.used[s] = true;
                self.keys[s] = key;
                self.len += 1;
                break;
            }
            if self.keys[s] == key {
                break;
            }
            s = (s + 1) & mask;
        }
        self.counts[s * MAX_REASON_INDEX + index as usize] += samples;
        true
    }

    /// Entries in use.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Every entry with its samples by reason index.
    pub fn entries(&self) -> impl Iterator<Item = (PcKey, &[u64])> + '_ {
        (0..self.keys.len())
            .filter(|&s| self.used[s])
            .map(move |s| {
                (
                    self.keys[s],
                    &self.counts[s * MAX_REASON_INDEX..(s + 1) * MAX_REASON_INDEX],
                )
            })
    }
}

/// Totals over every drain.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Sum of `totalSamples`.
    pub total_samples: u64,
    /// Sum of `droppedSamples`.
    pub dropped_samples: u64,
    /// Sum of `nonUsrKernelsTotalSamples`.
    pub non_user_samples: u64,
    /// Some buffer had `hardwareBufferFull` set.
    pub hardware_buffer_full: bool,
    /// PC records read.
    pub records: u64,
    /// Buffers read (GetData calls with records, configuration buffers).
    pub buffers: u64,
}

/// Function names by (cubin CRC, function index), copied once each.
#[derive(Default)]
pub struct Functions {
    names: HashMap<(u64, u32), CString>,
}

impl Functions {
    /// With room for `n` functions.
    pub fn with_capacity(n: usize) -> Functions {
        Functions {
            names: HashMap::with_capacity(n),
        }
    }

    /// The mangled name of a function.
    pub fn name(&self, crc: u64, index: u32) -> Option<&CString> {
        self.names.get(&(crc, index))
    }

    /// Records a name (tests, and the first sight of a function).
    pub fn insert(&mut self, crc: u64, index: u32, name: CString) {
        self.names.entry((crc, index)).or_insert(name);
    }
}

/// Adds the records of one CUPTI buffer to `table`, `functions` and `stats`.
///
/// # Safety
/// `data.p_pc_data` must hold `data.total_num_pcs` records (capped at `collect_num_pcs`),
/// each with `stall_reason_count` entries at `stall_reason` and a null or NUL-terminated
/// `function_name`, as CUPTI fills them.
pub unsafe fn ingest(
    data: &SamplingData,
    table: &mut Table,
    functions: &mut Functions,
    stats: &mut Stats,
) {
    let n = data.total_num_pcs.min(data.collect_num_pcs);
    stats.total_samples += data.total_samples;
    stats.dropped_samples += data.dropped_samples;
    stats.non_user_samples += data.non_usr_kernels_total_samples;
    stats.hardware_buffer_full |= data.hardware_buffer_full != 0;
    if n == 0 || data.p_pc_data.is_null() {
        return;
    }
    stats.buffers += 1;
    for i in 0..n {
        // SAFETY: i < total_num_pcs records (caller).
        let pc: &PcData = unsafe { &*data.p_pc_data.add(i) };
        stats.records += 1;
        let key = PcKey {
            crc: pc.cubin_crc,
            pc_offset: pc.pc_offset,
            function_index: pc.function_index,
            correlation: pc.correlation_id,
        };
        if functions.name(key.crc, key.function_index).is_none() && !pc.function_name.is_null() {
            // SAFETY: CUPTI's NUL-terminated name (caller); copied, not freed (CUPTI shares
            // it with other records until post-processing is over).
            let name = unsafe { std::ffi::CStr::from_ptr(pc.function_name) }.to_owned();
            functions.insert(key.crc, key.function_index, name);
        }
        if pc.stall_reason.is_null() {
            continue;
        }
        for r in 0..pc.stall_reason_count {
            // SAFETY: r < stall_reason_count entries (caller).
            let sr: StallReason = unsafe { *pc.stall_reason.add(r) };
            if sr.samples > 0 {
                table.add(key, sr.index, u64::from(sr.samples));
            }
        }
    }
}
