//! The owning copy's side of the ABI: the functions other copies call. Each runs this copy's
//! own implementation and never unwinds into the caller (a panic becomes a refusal).

use super::abi::{self, FinishOut, OwnerApi, SiteDesc, SiteOut, Str, TextOut};
use crate::record::Slot;
use crate::{runtime, thread_buffer};
// The owner's own table: this copy owns the process, so nothing is forwarded.
use metron_core::callsite;
use std::ffi::c_void;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// The table the claim page points at (lent by the lifecycle layer: `shared_runtime::serve`).
pub(crate) static API: OwnerApi = OwnerApi {
    size: std::mem::size_of::<OwnerApi>(),
    register_site,
    describe,
    intern,
    write,
    write_slots,
    pause_thread,
    resume_thread,
    thread_paused,
    collecting,
    set_collecting,
    mark_used,
    flush,
    finish,
    set_output_path,
    add_sink,
    add_section,
};

fn guarded<T>(refused: T, f: impl FnOnce() -> T) -> T {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or(refused)
}

unsafe extern "C" fn register_site(desc: *const SiteDesc) -> u64 {
    guarded(0, || {
        // SAFETY: the caller passes a valid description for the call (see `SiteDesc`).
        let desc = unsafe { &*desc };
        let leak = |s: Str| -> &'static str {
            // SAFETY: as above, every string of the description is valid for the call.
            Box::leak(unsafe { s.to_owned_lossy() }.into_boxed_str())
        };
        let components: &[abi::ComponentDesc] = if desc.n_components == 0 {
            &[]
        } else {
            // SAFETY: as above.
            unsafe { std::slice::from_raw_parts(desc.components, desc.n_components) }
        };
        let components: Vec<metron_components::ComponentInfo> = components
            .iter()
            // SAFETY: as above.
            .map(|c| unsafe { abi::component_from(c) })
            .collect();
        let site: &'static callsite::Callsite = Box::leak(Box::new(callsite::Callsite::new(
            leak(desc.name),
            leak(desc.file),
            desc.line,
            leak(desc.module),
            abi::kind_of(desc.kind),
            Box::leak(components.into_boxed_slice()),
        )));
        site.tagged_header()
    })
}

unsafe extern "C" fn describe(id: u32, out: *mut SiteOut) -> bool {
    guarded(false, || match callsite::resolve(id) {
        Some(site) => {
            // SAFETY: the caller passes a writable out-value.
            let out = unsafe { &mut *out };
            out.name = Str::of(site.name);
            out.kind = abi::kind_code(site.kind);
            out.n_components = site.components.len();
            true
        }
        None => false,
    })
}

unsafe extern "C" fn intern(name: Str, kind: u8) -> u32 {
    guarded(0, || {
        // SAFETY: the caller passes a string valid for the call.
        let name = unsafe { name.to_owned_lossy() };
        callsite::intern(&name, abi::kind_of(kind))
    })
}

extern "C" fn write(ticks: u64, header: u64, drop_weight: u64, ends_region: bool) -> bool {
    guarded(false, || {
        (ends_region || runtime::collecting())
            && thread_buffer::write(ticks, header, drop_weight, ends_region)
    })
}

unsafe extern "C" fn write_slots(
    slots: *const Slot,
    n: usize,
    drop_weight: u64,
    ends_region: bool,
) -> bool {
    guarded(false, || {
        if n == 0 || n > 255 || !(ends_region || runtime::collecting()) {
            return false;
        }
        // SAFETY: the caller passes `n` valid slots for the call.
        let src = unsafe { std::slice::from_raw_parts(slots, n) };
        thread_buffer::write_with(n, drop_weight, ends_region, |dst| dst.copy_from_slice(src))
    })
}

extern "C" fn pause_thread() {
    guarded((), thread_buffer::pause_thread)
}

extern "C" fn resume_thread() {
    guarded((), thread_buffer::resume_thread)
}

extern "C" fn thread_paused() -> bool {
    guarded(false, thread_buffer::thread_paused)
}

extern "C" fn collecting() -> bool {
    guarded(false, runtime::started_and_collecting)
}

extern "C" fn set_collecting(on: bool) {
    guarded((), || runtime::set_collecting(on))
}

extern "C" fn mark_used() {
    guarded((), runtime::mark_used)
}

extern "C" fn flush() {
    guarded((), runtime::flush)
}

unsafe extern "C" fn finish(out: *mut FinishOut) -> bool {
    guarded(false, || {
        runtime::mark_used();
        let Some(report) = runtime::finish() else {
            return false;
        };
        // SAFETY: the caller passes a writable out-value whose text buffer is writable for
        // its capacity.
        let out = unsafe { &mut *out };
        out.written = report.records_written;
        out.dropped = report.records_dropped;
        let mut text = report.output_dir.display().to_string();
        for file in &report.files {
            text.push('\n');
            text.push_str(&file.display().to_string());
        }
        // SAFETY: as above.
        unsafe { out.text.put(&text) };
        true
    })
}

unsafe extern "C" fn set_output_path(template: Str, out: *mut TextOut) -> bool {
    guarded(false, || {
        // SAFETY: the caller passes a string valid for the call.
        let template = unsafe { template.to_owned_lossy() };
        let result = crate::runtime::set_output_path_reporting(&template);
        let text = match &result {
            Ok(dir) => dir.display().to_string(),
            Err(e) => e.clone(),
        };
        // SAFETY: the caller passes a writable out-value with a buffer of its capacity.
        unsafe { (*out).put(&text) };
        result.is_ok()
    })
}

unsafe extern "C" fn add_sink(raw: *mut c_void) {
    // SAFETY: same build (checked by the caller): `raw` is a `Box<Box<dyn Sink>>` of the
    // same layout from `Box::into_raw`, handed over once.
    let sink = unsafe { Box::from_raw(raw.cast::<Box<dyn crate::Sink>>()) };
    guarded((), move || runtime::add_sink(*sink))
}

unsafe extern "C" fn add_section(pair: *const c_void) {
    guarded((), || {
        // SAFETY: same build (checked by the caller): `pair` points at a
        // `(&'static str, fn() -> Value)` of the same layout, valid for the call.
        let (name, section) = unsafe { *pair.cast::<(&'static str, fn() -> serde_json::Value)>() };
        crate::metadata::add_section(name, section);
    })
}
