//! Everything `unsafe` in this crate: walking the loaded objects with `dl_iterate_phdr` and
//! mapping files. Each block states its contract.

use std::ffi::{c_int, c_void, CStr};
use std::fs::File;
use std::path::Path;

/// One object the dynamic loader has loaded (the executable, a shared object, the vDSO).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct LoadedObject {
    /// `dlpi_name`: empty for the executable, a path for shared objects.
    pub(crate) name: Vec<u8>,
    /// `dlpi_addr`: runtime address minus the address in the file (the load bias).
    pub(crate) bias: u64,
    /// Runtime `[start, end)` of each `PT_LOAD` segment.
    pub(crate) segments: Vec<(u64, u64)>,
}

/// What one walk collects.
struct Walk {
    objects: Vec<LoadedObject>,
}

/// `dl_iterate_phdr` callback: copies one object's name, bias and load segments.
///
/// Runs on the calling thread while the loader's lock is held; it only reads the structure it
/// is handed and pushes into the `Vec` behind `data`. It must not unwind into libc, so the body
/// runs under `catch_unwind`.
// The `as u64` casts are identities on 64-bit targets, widenings of the Elf32 types on 32-bit.
#[allow(clippy::unnecessary_cast)]
extern "C" fn collect(info: *mut libc::dl_phdr_info, _size: usize, data: *mut c_void) -> c_int {
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        if info.is_null() || data.is_null() {
            return;
        }
        // SAFETY:
        // - `data` is the `&mut Walk` passed to `dl_iterate_phdr` by `loaded_objects`, alive and
        //   not otherwise borrowed for the duration of the walk.
        // - `info` is non-null and points to a `dl_phdr_info` that libc keeps valid for the
        //   duration of this callback.
        let (walk, info) = unsafe { (&mut *(data as *mut Walk), &*info) };
        let name = if info.dlpi_name.is_null() {
            Vec::new()
        } else {
            // SAFETY: a non-null `dlpi_name` is a NUL-terminated string owned by the loader,
            // valid during the callback; it is copied before returning.
            unsafe { CStr::from_ptr(info.dlpi_name) }
                .to_bytes()
                .to_vec()
        };
        let bias = info.dlpi_addr as u64;
        let mut segments = Vec::new();
        if !info.dlpi_phdr.is_null() {
            for i in 0..usize::from(info.dlpi_phnum) {
                // SAFETY: `dlpi_phdr` points to `dlpi_phnum` program headers that stay valid
                // during the callback; `i < dlpi_phnum`.
                let ph = unsafe { &*info.dlpi_phdr.add(i) };
                if ph.p_type == libc::PT_LOAD && ph.p_memsz > 0 {
                    let start = bias.wrapping_add(ph.p_vaddr as u64);
                    segments.push((start, start.saturating_add(ph.p_memsz as u64)));
                }
            }
        }
        walk.objects.push(LoadedObject {
            name,
            bias,
            segments,
        });
    }));
    // 0 continues the walk; a panic stops it (what was collected so far is kept).
    c_int::from(result.is_err())
}

/// Every object loaded now, in the loader's order (the executable first).
pub(crate) fn loaded_objects() -> Vec<LoadedObject> {
    let mut walk = Walk {
        objects: Vec::new(),
    };
    // SAFETY:
    // - `collect` matches the callback type and never unwinds (catch_unwind).
    // - `walk` outlives the call, and only `collect` touches it during the call.
    unsafe {
        libc::dl_iterate_phdr(Some(collect), &mut walk as *mut Walk as *mut c_void);
    }
    walk.objects
}

/// `dl_iterate_phdr` callback that reads `dlpi_adds`/`dlpi_subs` of the first object and stops.
#[allow(clippy::unnecessary_cast)]
extern "C" fn generation(info: *mut libc::dl_phdr_info, size: usize, data: *mut c_void) -> c_int {
    // glibc added the two counters after `dlpi_phnum`; older libcs pass a smaller `size`.
    let needed = std::mem::offset_of!(libc::dl_phdr_info, dlpi_subs)
        + std::mem::size_of::<libc::c_ulonglong>();
    if info.is_null() || data.is_null() || size < needed {
        return 1;
    }
    // SAFETY:
    // - `data` is the `&mut Option<(u64, u64)>` passed by `load_generation`, alive for the call.
    // - `info` is non-null, valid during the callback, and `size` says it has both counters.
    unsafe {
        let out = &mut *(data as *mut Option<(u64, u64)>);
        *out = Some(((*info).dlpi_adds as u64, (*info).dlpi_subs as u64));
    }
    1
}

/// How many objects the loader has loaded and unloaded so far (`dlpi_adds`, `dlpi_subs`):
/// when this changes, the module list must be read again. `None` if the libc does not say.
pub(crate) fn load_generation() -> Option<(u64, u64)> {
    let mut out: Option<(u64, u64)> = None;
    // SAFETY:
    // - `generation` matches the callback type and cannot panic (no indexing, no allocation).
    // - `out` outlives the call, and only `generation` touches it during the call.
    unsafe {
        libc::dl_iterate_phdr(
            Some(generation),
            &mut out as *mut Option<(u64, u64)> as *mut c_void,
        );
    }
    out
}

/// A copy of the vDSO's ELF image, from the segment the loader reported for it (the vDSO
/// has no file), rounded up to whole pages. `None` unless `(start, end)` is exactly the first
/// segment of the object named `linux-vdso.so.1` in the loader's list now, page-aligned, and
/// not larger than 1 MiB.
pub(crate) fn vdso_image(start: u64, end: u64) -> Option<Vec<u8>> {
    let listed = loaded_objects()
        .into_iter()
        .any(|o| o.name.starts_with(b"linux-vdso") && o.segments.first() == Some(&(start, end)));
    // The section headers lie past the segment's end but within its last page: mappings are
    // whole pages, so the rounded-up range is mapped too.
    // SAFETY: `sysconf` only reads a system constant.
    let page = u64::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).ok()?;
    if page == 0 || !page.is_power_of_two() || start % page != 0 {
        return None;
    }
    let end = end.checked_add(page - 1)? & !(page - 1);
    let len = usize::try_from(end.checked_sub(start)?).ok()?;
    if !listed || start == 0 || len == 0 || len > 1 << 20 {
        return None;
    }
    // SAFETY:
    // - `[start, end)` is the vDSO's loaded segment as the dynamic loader reports it right now
    //   (checked above), rounded up to whole pages: mapped readable by the kernel for the life
    //   of the process, never unmapped or written by user code.
    // - It is only read here, and copied before returning.
    let bytes = unsafe { std::slice::from_raw_parts(start as usize as *const u8, len) };
    Some(bytes.to_vec())
}

/// Maps `path` read-only.
///
/// The mapping is private and read-only; a file truncated by someone else while mapped would
/// fault on access (SIGBUS), the usual caveat of every mmap-based symbolizer (binutils,
/// addr2line's own loader). Object files of a running process are not rewritten in place by
/// ordinary tools (they write a new file and rename it).
pub(crate) fn map_file(path: &Path) -> std::io::Result<memmap2::Mmap> {
    let file = File::open(path)?;
    // SAFETY: see above: a read-only private mapping of a file that is not modified in place.
    unsafe { memmap2::Mmap::map(&file) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_executable_comes_first_and_has_load_segments() {
        let objects = loaded_objects();
        assert!(!objects.is_empty());
        assert!(objects[0].name.is_empty(), "{:?}", objects[0]);
        assert!(!objects[0].segments.is_empty());
        let here = the_executable_comes_first_and_has_load_segments as *const () as usize as u64;
        assert!(objects[0]
            .segments
            .iter()
            .any(|&(s, e)| s <= here && here < e));
    }

    #[test]
    fn the_load_generation_is_known_on_glibc() {
        let g = load_generation().expect("glibc reports dlpi_adds");
        assert!(g.0 >= 1);
    }
}
