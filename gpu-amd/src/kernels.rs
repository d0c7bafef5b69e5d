//! Kernel names and descriptors, by kernel object. Filled when an executable is frozen (the
//! wrapped `hsa_executable_freeze`: every kernel symbol, its name, and its descriptor through
//! the loader extension's host copy); read by the drain thread. A dispatch only carries the
//! kernel object, so the application thread never touches this table.

use crate::descriptor::{self, KernelInfo};
use metron::gpu::GpuRecord;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// A kernel as the code object describes it.
#[derive(Clone, Debug)]
pub struct Kernel {
    /// Demangled name, without the `.kd` suffix of the descriptor symbol.
    pub name: Arc<str>,
    /// From the kernel descriptor (all zero when the loader gave no host copy).
    pub info: KernelInfo,
}

static KERNELS: Mutex<Option<HashMap<u64, Kernel>>> = Mutex::new(None);

/// The symbol name as a kernel name: `.kd` dropped (code object v3+ names the descriptor
/// `<kernel>.kd`), Itanium names demangled.
pub fn display_name(symbol: &str) -> String {
    metron::gpu::demangle_kernel(symbol.strip_suffix(".kd").unwrap_or(symbol))
}

/// Adds the kernels of a frozen executable: `(symbol name, kernel object, descriptor bytes)`.
pub fn add(symbols: Vec<(String, u64, Option<[u8; 64]>)>, arch: &str) {
    let mut table = KERNELS.lock().unwrap_or_else(|e| e.into_inner());
    let map = table.get_or_insert_with(HashMap::new);
    for (symbol, object, bytes) in symbols {
        let info = bytes.map_or_else(KernelInfo::default, |d| descriptor::decode(&d, arch));
        map.insert(
            object,
            Kernel {
                name: display_name(&symbol).into(),
                info,
            },
        );
    }
}

/// Adds one kernel by id (ROCprofiler-SDK's kernel ids; the HSA path uses kernel objects: only
/// one path traces a process).
pub fn insert(id: u64, kernel: Kernel) {
    KERNELS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get_or_insert_with(HashMap::new)
        .insert(id, kernel);
}

/// Fills a kernel record's launch geometry and resources from its dispatch (both AMD paths):
/// AQL grids count work-items where Metron's records count work-groups, and the dispatch's
/// group segment is the kernel's static LDS plus the dynamic part.
pub fn describe_dispatch(
    r: &mut GpuRecord,
    grid: [u32; 3],
    workgroup: [u32; 3],
    group_segment: u32,
    private_segment: u32,
    info: &KernelInfo,
) {
    for d in 0..3 {
        let wg = workgroup[d].max(1);
        r.block[d] = i32::try_from(workgroup[d]).unwrap_or(i32::MAX);
        r.grid[d] = i32::try_from(grid[d].div_ceil(wg)).unwrap_or(i32::MAX);
    }
    r.static_shared = info.static_lds.min(group_segment) as i32;
    r.dynamic_shared = group_segment.saturating_sub(info.static_lds) as i32;
    r.local_per_thread = private_segment;
    r.registers = info.vgprs;
    r.scalar_registers = info.sgprs;
}

/// The kernel at `object`, if an executable holding it was frozen.
pub fn get(object: u64) -> Option<Kernel> {
    KERNELS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .as_ref()?
        .get(&object)
        .cloned()
}

/// How many kernels are known.
pub fn count() -> usize {
    KERNELS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .as_ref()
        .map_or(0, HashMap::len)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptor_symbols_become_readable_kernel_names() {
        assert_eq!(
            display_name("_Z10vector_addPKfS0_Pfi.kd"),
            "vector_add(float const*, float const*, float*, int)"
        );
        assert_eq!(display_name("plain_kernel.kd"), "plain_kernel");
        assert_eq!(display_name("no_suffix"), "no_suffix");
    }
}
