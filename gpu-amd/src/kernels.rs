//! Kernel names and descriptors, by kernel object. Filled when an executable is frozen (the
//! wrapped `hsa_executable_freeze`: every kernel symbol, its name, and its descriptor through
//! the loader extension's host copy); read by the drain thread. A dispatch only carries the
//! kernel object, so the application thread never touches this table.

use crate::descriptor::{self, KernelInfo};
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
