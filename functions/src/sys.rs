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

/// The stack pointer a `longjmp` to `env` restores: glibc's x86-64 `jmp_buf` keeps it at
/// `__jmpbuf[6]`, mangled with the thread's pointer guard (`PTR_MANGLE`: `xor` with
/// `%fs:0x30`, then rotate left by 17). `None` elsewhere. Callers check the result once against
/// a `setjmp` of their own ([`setjmp_layout_is_known`]) before trusting it.
///
/// # Safety
/// `env` points at a `jmp_buf` filled by `setjmp` on the calling thread.
#[cfg(all(target_arch = "x86_64", target_os = "linux", target_env = "gnu"))]
pub unsafe fn longjmp_stack_pointer(env: *const u64) -> Option<usize> {
    // SAFETY: `env` is a filled jmp_buf, whose first eight words are the saved registers.
    let mangled = unsafe { env.add(6).read() };
    let guard: u64;
    // SAFETY: reads the pointer guard from the thread control block (glibc's tcbhead_t keeps
    // it at offset 0x30 on x86-64); no memory is written.
    unsafe {
        std::arch::asm!("mov {}, fs:0x30", out(reg) guard, options(nostack, readonly, preserves_flags))
    };
    Some((mangled.rotate_right(17) ^ guard) as usize)
}

/// See the x86-64 glibc version: unknown layout elsewhere.
///
/// # Safety
/// None needed: nothing is read.
#[cfg(not(all(target_arch = "x86_64", target_os = "linux", target_env = "gnu")))]
pub unsafe fn longjmp_stack_pointer(_env: *const u64) -> Option<usize> {
    None
}

extern "C" {
    fn _setjmp(env: *mut u64) -> libc::c_int;
}

/// Whether [`longjmp_stack_pointer`] reads this C library's `jmp_buf` right: a `setjmp` made
/// here must give back a stack pointer within a page of this function's own.
pub fn setjmp_layout_is_known() -> bool {
    // 200 words: more than any `sigjmp_buf` (glibc's is 25 words on x86-64).
    let mut env = [0u64; 200];
    // SAFETY: `env` is larger than a jmp_buf; nothing ever `longjmp`s to it, so `_setjmp`
    // returns exactly once, like an ordinary call.
    unsafe { _setjmp(env.as_mut_ptr()) };
    let here = stack_pointer();
    // SAFETY: `env` was just filled by `_setjmp` on this thread.
    match unsafe { longjmp_stack_pointer(env.as_ptr()) } {
        Some(sp) => sp.abs_diff(here) < 4096,
        None => false,
    }
}

#[cfg(target_arch = "x86_64")]
std::arch::global_asm!(
    ".pushsection .text.metron_functions_call_hook,\"ax\",@progbits",
    ".p2align 4",
    ".globl metron_functions_call_hook",
    ".hidden metron_functions_call_hook",
    ".type metron_functions_call_hook,@function",
    // (hook) -> the stack pointer at the `call` of hook(NULL, NULL)
    "metron_functions_call_hook:",
    "push rbx",
    "mov rax, rdi",
    "mov rbx, rsp",
    "xor edi, edi",
    "xor esi, esi",
    "call rax",
    "mov rax, rbx",
    "pop rbx",
    "ret",
    ".size metron_functions_call_hook, .-metron_functions_call_hook",
    ".popsection",
);

#[cfg(target_arch = "x86_64")]
extern "C" {
    fn metron_functions_call_hook(hook: usize) -> usize;
}

/// Calls `hook(NULL, NULL)` and returns the stack pointer its caller had at the `call`: with
/// the stack pointer the hook read inside itself, the distance between the two, which is
/// fixed for a compiled function (`None` where this is not built).
///
/// # Safety
/// `hook` accepts two null pointers and returns normally.
pub unsafe fn stack_pointer_at_call(
    hook: unsafe extern "C" fn(*mut libc::c_void, *mut libc::c_void),
) -> Option<usize> {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: the helper keeps the ABI (callee-saved rbx restored, the stack 16-byte
        // aligned at the call) and calls `hook` with two null pointers, which it accepts.
        Some(unsafe { metron_functions_call_hook(hook as usize) })
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = hook;
        None
    }
}
