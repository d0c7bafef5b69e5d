//! The few foreign calls of this crate: which loaded module holds an address (`dladdr1`), and
//! the bytes of a function's code in memory.

use std::ffi::CStr;

/// The loaded module that holds an address.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ModuleOf {
    /// The file; empty for the executable (the dynamic loader names it so).
    pub(crate) path: String,
    /// What the loader added to the file's addresses (the link map's `l_addr`).
    pub(crate) bias: u64,
}

/// The module that holds `addr`, or `None` when no loaded module does (JIT code).
pub(crate) fn module_of(addr: u64) -> Option<ModuleOf> {
    let mut info: libc::Dl_info = libc::Dl_info {
        dli_fname: std::ptr::null(),
        dli_fbase: std::ptr::null_mut(),
        dli_sname: std::ptr::null(),
        dli_saddr: std::ptr::null_mut(),
    };
    let mut map: *mut libc::c_void = std::ptr::null_mut();
    // SAFETY: `info` and `map` are valid for writes; RTLD_DL_LINKMAP makes `dladdr1` store a
    // `struct link_map *` into `map`. The address is only compared, never dereferenced.
    let found = unsafe {
        libc::dladdr1(
            addr as *const libc::c_void,
            &mut info,
            &mut map,
            RTLD_DL_LINKMAP,
        )
    };
    if found == 0 || map.is_null() {
        return None;
    }
    // glibc's `struct link_map` begins with `ElfW(Addr) l_addr; char *l_name;`.
    let map = map as *const LinkMapHead;
    // SAFETY: `dladdr1` returned a live link map of a loaded module; its first two fields have
    // this layout on every glibc target, and the loader keeps it while the module is loaded.
    let (bias, name) = unsafe { ((*map).l_addr, (*map).l_name) };
    let path = if name.is_null() {
        String::new()
    } else {
        // SAFETY: `l_name` is a NUL-terminated string owned by the loader.
        unsafe { CStr::from_ptr(name) }
            .to_string_lossy()
            .into_owned()
    };
    Some(ModuleOf {
        path,
        bias: bias as u64,
    })
}

/// `dladdr1`'s request for the module's link map (glibc's `<dlfcn.h>`; not in the `libc` crate).
const RTLD_DL_LINKMAP: libc::c_int = 2;

#[repr(C)]
struct LinkMapHead {
    l_addr: usize,
    l_name: *const libc::c_char,
}

/// The `len` bytes of code at `addr` of a loaded module.
///
/// # Safety
/// `addr..addr + len` lies inside a mapped, readable segment of a module that stays loaded
/// while the slice is used (a function's extent from its module's symbol table).
pub(crate) unsafe fn code<'a>(addr: u64, len: usize) -> &'a [u8] {
    // SAFETY: forwarded contract.
    unsafe { std::slice::from_raw_parts(addr as *const u8, len) }
}

/// The calling function's stack pointer: deeper frames have smaller values (x86-64 and
/// AArch64 stacks grow down). Approximated elsewhere by the address of a local.
#[inline(always)]
pub fn stack_pointer() -> usize {
    #[cfg(target_arch = "x86_64")]
    {
        let sp: usize;
        // SAFETY: reads a register into a local; touches no memory, no flags.
        unsafe {
            std::arch::asm!("mov {}, rsp", out(reg) sp, options(nomem, nostack, preserves_flags))
        };
        sp
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let here = 0u8;
        std::ptr::addr_of!(here) as usize
    }
}
