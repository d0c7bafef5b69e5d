//! Unwinding a thread's stack from a signal context (or from normal code) with framehop.
//!
//! # Why framehop, and not frame pointers
//! Rust release builds, libc and most system libraries are compiled without frame pointers, so
//! a frame-pointer walk stops (or goes astray) at the first such function: the callers of a
//! `memcpy`, a `sqrt` or a `write` are lost. framehop reads the DWARF CFI of `.eh_frame`
//! (through the `.eh_frame_hdr` index every linked module has), which every function that can
//! unwind carries, and falls back to frame pointers only where a module has no CFI. With its
//! `MustNotAllocateDuringUnwind` policy and a cache created ahead of time, an unwind makes no
//! heap call and takes no lock, so it can run in the signal handler.
//!
//! # The module list
//! The unwinder needs the address range and unwind sections of every loaded module. They are
//! read from memory, not from files: `dl_iterate_phdr` gives each module's load bias and
//! program headers, `PT_GNU_EH_FRAME` locates `.eh_frame_hdr`, whose `eh_frame_ptr` locates
//! `.eh_frame` (which runs to the end of its `PT_LOAD` segment at most). The list is built by
//! the sampler's manager thread, never in the handler, together with a snapshot of the
//! readable mappings (`/proc/self/maps`) that bounds stack reads. It is published as one
//! [`View`] through an atomic pointer ([`sys::Published`]): a handler sees the old view or the
//! new one, never a half-built one. The manager rebuilds it when the loader's `dlpi_adds` /
//! `dlpi_subs` counters change (a `dlopen` or `dlclose`), so modules loaded later are unwound
//! through as soon as the manager's next pass (every 20 ms). The list is built inside
//! `dl_iterate_phdr`'s callback, under the loader's lock, so no module is unmapped while it is
//! read. A module unloaded later stays in the list until the next pass; `unload` keeps
//! handlers out of the view around each `dlclose` and marks the view stale after it, so a
//! handler never reads unmapped unwind data (where Metron's `dlclose` is the one called).
//!
//! # Stack reads
//! framehop asks for stack words through a callback; ours reads only inside `[sp, top)` where
//! `top` is the end of the sampled thread's stack: the range the thread registered itself
//! (`pthread_getattr_np`) when it did, else the end of the readable mapping holding `sp` in
//! the view's snapshot. A thread whose `sp` is in no known mapping yields its `pc` alone.

use super::sys::{self, LoadedModule, ModuleBytes};
use framehop::x86_64::{CacheX86_64, UnwindRegsX86_64, UnwinderX86_64};
use framehop::{ExplicitModuleSectionInfo, MustNotAllocateDuringUnwind, Unwinder};

/// The unwinder's per-thread cache (rule cache and gimli's fixed-size evaluation storage).
pub(crate) type Cache = CacheX86_64<MustNotAllocateDuringUnwind>;

/// Most frames kept per stack.
pub(crate) const MAX_FRAMES: usize = 128;

/// Everything a handler needs to unwind, published as one value.
pub(crate) struct View {
    unwinder: UnwinderX86_64<ModuleBytes, MustNotAllocateDuringUnwind>,
    /// Readable mappings, sorted by start.
    maps: Vec<(u64, u64)>,
    /// The loader counters this view was built for.
    pub(crate) counters: (u64, u64),
    /// Modules with unwind information, for metadata.
    pub(crate) modules: usize,
    /// The unload generation the view describes (see `unload`).
    generation: u64,
}

impl View {
    /// Builds a view of the modules loaded now (allocates, reads `/proc/self/maps`).
    pub(crate) fn build() -> View {
        let started = super::unload::build_started();
        let mut unwinder = UnwinderX86_64::new();
        let mut count = 0;
        let counters = sys::visit_loaded_modules(|m| {
            if let Some(module) = framehop_module(m) {
                unwinder.add_module(module);
                count += 1;
            }
        });
        View {
            unwinder,
            maps: sys::readable_mappings(),
            counters,
            modules: count,
            generation: super::unload::build_finished(started),
        }
    }

    /// Whether no module was unloaded since the view was built, so its module memory is
    /// still mapped. Async-signal-safe; meaningful inside `Published::read`.
    #[inline]
    pub(crate) fn is_current(&self) -> bool {
        super::unload::view_is_current(self.generation)
    }

    /// The end of the readable mapping that holds `sp`.
    fn mapping_end(&self, sp: u64) -> Option<u64> {
        let i = self.maps.partition_point(|(start, _)| *start <= sp);
        let (start, end) = *self.maps.get(i.checked_sub(1)?)?;
        (start <= sp && sp < end).then_some(end)
    }
}

/// A framehop module for a loaded module with an `.eh_frame_hdr`, or `None`.
fn framehop_module(m: &LoadedModule) -> Option<framehop::Module<ModuleBytes>> {
    let lo = m.loads.iter().map(|s| s.vaddr).min()?;
    let hi = m.loads.iter().map(|s| s.vaddr + s.memsz).max()?;
    let text = m.loads.iter().find(|s| s.executable);
    let hdr = m.eh_frame_hdr?;
    let hdr_bytes = m.bytes(hdr.vaddr, hdr.memsz)?;
    if hdr_bytes.len() < 8 || hdr_bytes[0] != 1 {
        return None;
    }
    // eh_frame_ptr: encoded by byte 1; GNU ld and lld write pcrel|sdata4 (0x1b) or
    // datarel|sdata4 (0x3b, relative to the header).
    let field = hdr.vaddr + 4;
    let eh_frame = match hdr_bytes[1] {
        0x1b => field.wrapping_add(m.read_i32(field)? as i64 as u64),
        0x3b => hdr.vaddr.wrapping_add(m.read_i32(field)? as i64 as u64),
        _ => return None,
    };
    let segment = m
        .loads
        .iter()
        .find(|s| eh_frame >= s.vaddr && eh_frame < s.vaddr + s.memsz)?;
    let eh_frame_len = segment.vaddr + segment.memsz - eh_frame;
    let info = ExplicitModuleSectionInfo {
        base_svma: 0,
        text_svma: text.map(|t| t.vaddr..t.vaddr + t.memsz),
        text: text.and_then(|t| m.bytes(t.vaddr, t.memsz)),
        eh_frame_svma: Some(eh_frame..eh_frame + eh_frame_len),
        eh_frame: m.bytes(eh_frame, eh_frame_len),
        eh_frame_hdr_svma: Some(hdr.vaddr..hdr.vaddr + hdr.memsz),
        eh_frame_hdr: Some(hdr_bytes),
        ..Default::default()
    };
    Some(framehop::Module::new(
        m.name.clone(),
        m.base + lo..m.base + hi,
        m.base,
        info,
    ))
}

/// Unwinds from (`pc`, `sp`, `bp`) into `out`, innermost first: `out[0] = pc`, then return
/// addresses. `stack` is the thread's registered stack range, if any. Returns the number of
/// frames. Async-signal-safe: no allocation, no lock.
#[inline]
pub(crate) fn unwind(
    view: &View,
    cache: &mut Cache,
    (pc, sp, bp): (u64, u64, u64),
    stack: Option<(u64, u64)>,
    out: &mut [u64],
) -> usize {
    if out.is_empty() {
        return 0;
    }
    out[0] = pc;
    let top = match stack {
        Some((lo, hi)) if lo <= sp && sp < hi => Some(hi),
        _ => view.mapping_end(sp),
    };
    let Some(top) = top else {
        return 1;
    };
    let mut read = |addr: u64| sys::read_word_within(addr, sp, top);
    let mut frames =
        view.unwinder
            .iter_frames(pc, UnwindRegsX86_64::new(pc, sp, bp), cache, &mut read);
    let mut n = 0;
    while n < out.len() {
        match frames.next() {
            Ok(Some(frame)) => {
                out[n] = frame.address();
                n += 1;
            }
            _ => break,
        }
    }
    n.max(1)
}

/// A new, preallocated unwinder cache (boxed: it is large).
pub(crate) fn new_cache() -> Box<Cache> {
    Box::new(Cache::new_in())
}

/// Unwinds the calling thread (normal context, not a signal handler) from `regs`, which a
/// still-running function read with [`sys::current_registers`]: `out[0]` is the return
/// address into that function's caller (frame 0, inside the function, is left out).
pub(crate) fn unwind_from(
    view: &View,
    cache: &mut Cache,
    regs: (u64, u64, u64),
    stack: Option<(u64, u64)>,
    out: &mut [u64],
) -> usize {
    let mut all = [0u64; MAX_FRAMES + 2];
    let n = unwind(view, cache, regs, stack, &mut all);
    let first = 1.min(n);
    let kept = (n - first).min(out.len());
    out[..kept].copy_from_slice(&all[first..first + kept]);
    kept
}
