//! Unwinding another process's samples: the stack copy the kernel took with each sample
//! (`PERF_SAMPLE_STACK_USER`, from SP) and its BP/SP/IP, walked by framehop, the unwinder of
//! in-process sampling, over the DWARF CFI (`.eh_frame` with its `.eh_frame_hdr` index) of the
//! target's modules, read from their files (in-process sampling reads them from memory). A
//! read outside the copy ends the walk. Where framehop finds no more than the first frame
//! (code with no CFI: JIT code, a stack copy cut short), the kernel's frame-pointer walk
//! (`PERF_SAMPLE_CALLCHAIN`) is used when it found more.

use framehop::x86_64::{CacheX86_64, UnwindRegsX86_64, UnwinderX86_64};
use framehop::{ExplicitModuleSectionInfo, Unwinder};
use metron_symbols::process::ProcessModule;
use object::{Object, ObjectSection, ObjectSegment};

/// Most frames kept per stack.
const MAX_FRAMES: usize = 128;

/// The target's modules, as framehop sees them.
pub(crate) struct TargetUnwinder {
    unwinder: UnwinderX86_64<Vec<u8>>,
    cache: CacheX86_64,
    /// (path, bias) of the modules added, to add only new ones on a refresh.
    known: Vec<(String, u64)>,
    /// Modules with unwind information.
    pub(crate) modules: usize,
}

impl TargetUnwinder {
    /// An unwinder with no module yet.
    pub(crate) fn new() -> TargetUnwinder {
        TargetUnwinder {
            unwinder: UnwinderX86_64::new(),
            cache: CacheX86_64::new(),
            known: Vec::new(),
            modules: 0,
        }
    }

    /// Adds the modules of `modules` not added yet (a target that `dlopen`ed a library).
    pub(crate) fn add_modules(&mut self, modules: &[ProcessModule]) {
        for m in modules {
            if self.known.iter().any(|(p, b)| *p == m.path && *b == m.bias) {
                continue;
            }
            self.known.push((m.path.clone(), m.bias));
            if let Some(module) = module_from_file(m) {
                self.unwinder.add_module(module);
                self.modules += 1;
            }
        }
    }

    /// The stack of a sample, innermost first: `ip`, then return addresses.
    pub(crate) fn unwind(
        &mut self,
        ip: u64,
        regs: Option<[u64; 3]>,
        stack: &[u8],
        callchain: &[u64],
    ) -> Vec<u64> {
        let mut out = vec![ip];
        if let Some([bp, sp, _]) = regs {
            let mut read = |addr: u64| {
                let off = addr.checked_sub(sp).ok_or(())? as usize;
                let word = stack.get(off..off + 8).ok_or(())?;
                Ok(u64::from_ne_bytes(word.try_into().map_err(|_| ())?))
            };
            let mut frames = self.unwinder.iter_frames(
                ip,
                UnwindRegsX86_64::new(ip, sp, bp),
                &mut self.cache,
                &mut read,
            );
            // The first frame is `ip` itself.
            let _ = frames.next();
            while out.len() < MAX_FRAMES {
                match frames.next() {
                    Ok(Some(frame)) => out.push(frame.address()),
                    _ => break,
                }
            }
        }
        if out.len() <= 1 && callchain.len() > 1 {
            out = callchain.iter().copied().take(MAX_FRAMES).collect();
            out[0] = ip;
        }
        out
    }
}

/// A framehop module from the file of `m`: its `.eh_frame_hdr`, `.eh_frame` and `.text`.
fn module_from_file(m: &ProcessModule) -> Option<framehop::Module<Vec<u8>>> {
    let data = std::fs::read(&m.path).ok()?;
    let obj = object::File::parse(&*data).ok()?;
    let section = |name: &str| {
        let s = obj.section_by_name(name)?;
        let bytes = s.data().ok()?.to_vec();
        Some((s.address()..s.address() + bytes.len() as u64, bytes))
    };
    let (hdr_svma, hdr) = section(".eh_frame_hdr")?;
    let (eh_svma, eh) = section(".eh_frame")?;
    let text = section(".text");
    let lo = obj.segments().map(|s| s.address()).min()?;
    let hi = obj.segments().map(|s| s.address() + s.size()).max()?;
    let info = ExplicitModuleSectionInfo {
        base_svma: 0,
        text_svma: text.as_ref().map(|t| t.0.clone()),
        text: text.map(|t| t.1),
        eh_frame_svma: Some(eh_svma),
        eh_frame: Some(eh),
        eh_frame_hdr_svma: Some(hdr_svma),
        eh_frame_hdr: Some(hdr),
        ..Default::default()
    };
    Some(framehop::Module::new(
        m.path.clone(),
        m.bias.wrapping_add(lo)..m.bias.wrapping_add(hi),
        m.bias,
        info,
    ))
}
