//! Per-thread pointers reached through a TLS descriptor (the x86-64 "GNU2" TLS dialect): a
//! `lea`, a call that returns at once (`mov rax, [rax+8]; ret`) and a load relative to the
//! thread pointer: five instructions (and the registers a call may clobber), where a Rust `thread_local!` in a shared library calls
//! `__tls_get_addr` (the general-dynamic model: about 11 instructions more, per access).
//!
//! Stable Rust cannot ask for another TLS model, so the slots are defined in assembly, in
//! `.tbss`, and reached with the descriptor sequence. The initial-exec model (two instructions)
//! was tried and rejected: it marks the library `STATIC_TLS`, which puts the library's whole
//! TLS block (about 29 KB: every `thread_local!` of Metron) into the static TLS area, and
//! `dlopen` (NVTX's injection, Python's `ctypes`) then fails with "cannot allocate memory in
//! static TLS block". A descriptor resolves to the static offset when the library is loaded
//! with the program (linked, `LD_PRELOAD`) and to glibc's dynamic resolver when it is
//! `dlopen`ed; in the static library the linker relaxes it to a constant offset.
//!
//! The slots hold only pointers (16 bytes): the C API's and NVTX's per-thread state stay in
//! their `thread_local!`s, whose addresses are stable for the life of the thread; a slot
//! caches that address on the thread's first call. Before that, the C API's slot is null and
//! NVTX's holds the address of [`NVTX_IDLE`], a depth its fast paths refuse, so that they need
//! no null check.
//!
//! The symbol is hidden: one set of slots per copy of the library (the shared and the static
//! library in one process each have theirs), reached from every object file of this crate.
//!
//! Elsewhere than x86-64 Linux the slots are an ordinary `thread_local!`.

#[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
use std::cell::Cell;

/// Which pointer.
#[derive(Clone, Copy)]
#[repr(usize)]
pub(crate) enum Slot {
    /// `thread_state::STATE`.
    CApi = 0,
    /// `nvtx::THREAD`.
    Nvtx = 1,
}

/// What NVTX's slot points at before the thread's first NVTX call: a depth (the first field of
/// NVTX's per-thread state, `nvtx::thread`) that its fast paths refuse, sending the call to the
/// slow path, which finds the thread's state. Never written.
pub(crate) static NVTX_IDLE: u32 = u32::MAX;

#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
std::arch::global_asm!(
    ".pushsection .tdata,\"awT\",@progbits",
    ".p2align 3",
    ".globl metron_c_fast_tls_slots",
    ".hidden metron_c_fast_tls_slots",
    ".type metron_c_fast_tls_slots,@object",
    ".size metron_c_fast_tls_slots,16",
    "metron_c_fast_tls_slots:",
    ".quad 0",
    ".quad {idle}",
    ".popsection",
    idle = sym NVTX_IDLE,
);

/// The address of this thread's slots.
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
#[inline(always)]
fn slots() -> *mut *const u8 {
    let offset: usize;
    // SAFETY: the TLS descriptor sequence of the x86-64 psABI (`-mtls-dialect=gnu2`): the call
    // returns in rax the offset of the slots from the thread pointer. The ABI says it
    // preserves every other register. glibc's dynamic resolver (`_dl_tlsdesc_dynamic`, when
    // the library was `dlopen`ed) saves and restores every integer register a C call may
    // clobber before it calls `__tls_get_addr`, but before 2.40 not the vector registers
    // (glibc bug 31372), so those are declared clobbered; the integer registers stay live
    // across the call, which saved 2 to 4 instructions per C call pair in spills (measured
    // against declaring all of the C ABI's). It may use the stack below the stack pointer
    // (`nostack` is not given, so the compiler keeps nothing there).
    unsafe {
        std::arch::asm!(
            "lea rax, [rip + metron_c_fast_tls_slots@TLSDESC]",
            "call qword ptr [rax + metron_c_fast_tls_slots@TLSCALL]",
            out("rax") offset,
            out("xmm0") _, out("xmm1") _, out("xmm2") _, out("xmm3") _,
            out("xmm4") _, out("xmm5") _, out("xmm6") _, out("xmm7") _,
            out("xmm8") _, out("xmm9") _, out("xmm10") _, out("xmm11") _,
            out("xmm12") _, out("xmm13") _, out("xmm14") _, out("xmm15") _,
        );
    }
    let tp: usize;
    // SAFETY: `fs:0` holds the thread pointer (the TCB's pointer to itself) on x86-64 Linux.
    unsafe {
        std::arch::asm!(
            "mov {tp}, qword ptr fs:[0]",
            tp = out(reg) tp,
            options(nostack, preserves_flags, readonly, pure),
        );
    }
    tp.wrapping_add(offset) as *mut *const u8
}

/// The pointer in `slot` of the calling thread (until [`set`]: null for [`Slot::CApi`], the
/// address of [`NVTX_IDLE`] for [`Slot::Nvtx`]).
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
#[inline(always)]
pub(crate) fn get(slot: Slot) -> *const u8 {
    // SAFETY: `slots()` is this thread's 16-byte slot object; `slot` is 0 or 1.
    unsafe { *slots().add(slot as usize) }
}

/// Stores `ptr` in `slot` of the calling thread.
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
pub(crate) fn set(slot: Slot, ptr: *const u8) {
    // SAFETY: as in `get`.
    unsafe { *slots().add(slot as usize) = ptr }
}

#[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
thread_local! {
    static SLOTS: [Cell<*const u8>; 2] = const {
        [
            Cell::new(std::ptr::null()),
            Cell::new(std::ptr::addr_of!(NVTX_IDLE).cast()),
        ]
    };
}

/// The pointer in `slot` of the calling thread (as the x86-64 [`get`]).
#[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
#[inline(always)]
pub(crate) fn get(slot: Slot) -> *const u8 {
    SLOTS.with(|s| s[slot as usize].get())
}

/// Stores `ptr` in `slot` of the calling thread.
#[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
pub(crate) fn set(slot: Slot, ptr: *const u8) {
    SLOTS.with(|s| s[slot as usize].set(ptr))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_thread_has_its_own_slots() {
        let a = 0x1000 as *const u8;
        let idle = std::ptr::addr_of!(NVTX_IDLE) as usize;
        set(Slot::CApi, a);
        assert_eq!(get(Slot::CApi), a);
        std::thread::spawn(move || {
            assert!(get(Slot::CApi).is_null());
            assert_eq!(
                get(Slot::Nvtx) as usize,
                idle,
                "NVTX's slot starts at the idle depth"
            );
            set(Slot::Nvtx, 0x2000 as *const u8);
            assert_eq!(get(Slot::Nvtx), 0x2000 as *const u8);
        })
        .join()
        .unwrap();
        assert_eq!(get(Slot::CApi), a);
        set(Slot::CApi, std::ptr::null());
    }
}
