//! A joined copy's side of the ABI: thin wrappers over the owner's table ([`OwnerApi`]), and
//! the forwarding of this copy's call-site registrations to the owner's table.

use super::abi::{self, OwnerApi, Str};
use crate::run_report::RunReport;
use metron_core::callsite::{forward_to, Callsite, CallsiteKind, Forwarding};

/// The owner copy's functions, once this copy joined it.
static OWNER: std::sync::OnceLock<&'static OwnerApi> = std::sync::OnceLock::new();

/// Sends this copy's registrations to the owner copy's table (called once, while this copy
/// decides to join `owner`, before `main`). The functions read `owner` from [`OWNER`], not
/// from the role being decided.
pub(super) fn forward_call_sites(owner: &'static OwnerApi) {
    if OWNER.set(owner).is_err() {
        return;
    }
    forward_to(Forwarding {
        register: |site| OWNER.get().map_or(0, |o| register_site(o, site)),
        intern: |name, kind| OWNER.get().map_or(0, |o| intern(o, name, kind)),
        describe: |id| OWNER.get().and_then(|o| describe(o, id)),
    });
}

/// Registers `site`'s description with the owner; its header word there.
pub(crate) fn register_site(api: &OwnerApi, site: &Callsite) -> u64 {
    let fields: Vec<Vec<abi::FieldDesc>> = site
        .components
        .iter()
        .map(|c| {
            c.named_fields()
                .iter()
                .map(|f| abi::FieldDesc {
                    name: Str::of(f.name),
                    unit: abi::unit_code(f.unit),
                })
                .collect()
        })
        .collect();
    let components: Vec<abi::ComponentDesc> = site
        .components
        .iter()
        .zip(&fields)
        .map(|(c, f)| abi::ComponentDesc {
            name: Str::of(c.name),
            description: Str::of(c.description),
            cost: Str::of(c.cost),
            fields: f.as_ptr(),
            n_fields: f.len(),
        })
        .collect();
    let desc = abi::SiteDesc {
        name: Str::of(site.name),
        file: Str::of(site.file),
        module: Str::of(site.module),
        line: site.line,
        kind: abi::kind_code(site.kind),
        components: components.as_ptr(),
        n_components: components.len(),
    };
    // SAFETY: `desc` and everything it points at live until the call returns.
    unsafe { (api.register_site)(&desc) }
}

/// The owner's id of `name`.
pub(crate) fn intern(api: &OwnerApi, name: &str, kind: CallsiteKind) -> u32 {
    // SAFETY: `name` lives for the call.
    unsafe { (api.intern)(Str::of(name), abi::kind_code(kind)) }
}

/// What the owner knows of `id`: its name (in the owner's never-unloaded memory), kind and
/// number of components.
pub(crate) fn describe(api: &OwnerApi, id: u32) -> Option<(&'static str, CallsiteKind, usize)> {
    let mut out = abi::SiteOut {
        name: Str::of(""),
        kind: 0,
        n_components: 0,
    };
    // SAFETY: `out` is a valid out-value for the call.
    if !unsafe { (api.describe)(id, &mut out) } {
        return None;
    }
    let name: &'static str = if out.name.len == 0 {
        ""
    } else {
        // SAFETY: the owner hands out a leaked UTF-8 string of its own, and owners are pinned
        // in memory for the life of the process.
        unsafe {
            std::str::from_utf8_unchecked(std::slice::from_raw_parts(out.name.ptr, out.name.len))
        }
    };
    Some((name, abi::kind_of(out.kind), out.n_components))
}

/// The owner's `finish`.
pub(crate) fn finish(api: &OwnerApi) -> Option<RunReport> {
    let mut buf = vec![0u8; 1 << 16];
    let mut out = abi::FinishOut {
        written: 0,
        dropped: 0,
        text: abi::TextOut {
            buf: buf.as_mut_ptr(),
            cap: buf.len(),
            len: 0,
        },
    };
    // SAFETY: `out` and its buffer are valid for the call.
    if !unsafe { (api.finish)(&mut out) } {
        return None;
    }
    let text = String::from_utf8_lossy(&buf[..out.text.len]).into_owned();
    let mut lines = text.lines().map(std::path::PathBuf::from);
    Some(RunReport {
        output_dir: lines.next().unwrap_or_default(),
        files: lines.collect(),
        records_written: out.written,
        records_dropped: out.dropped,
    })
}

/// The owner's `set_output_path`.
pub(crate) fn set_output_path(
    api: &OwnerApi,
    template: &str,
) -> Result<std::path::PathBuf, String> {
    let mut buf = vec![0u8; 1 << 14];
    let mut out = abi::TextOut {
        buf: buf.as_mut_ptr(),
        cap: buf.len(),
        len: 0,
    };
    // SAFETY: `template`, `out` and its buffer are valid for the call.
    let ok = unsafe { (api.set_output_path)(Str::of(template), &mut out) };
    let text = String::from_utf8_lossy(&buf[..out.len]).into_owned();
    if ok {
        Ok(text.into())
    } else {
        Err(text)
    }
}

/// The owner's `add_sink` (same build only; the caller checked).
pub(crate) fn add_sink(api: &OwnerApi, sink: Box<dyn crate::Sink>) {
    let raw = Box::into_raw(Box::new(sink));
    // SAFETY: same build: the owner takes back the `Box<Box<dyn Sink>>` made here, of the same
    // layout.
    unsafe { (api.add_sink)(raw.cast()) }
}

/// The owner's `add_metadata_section` (same build only; the caller checked).
pub(crate) fn add_section(api: &OwnerApi, name: &'static str, section: fn() -> serde_json::Value) {
    let pair: (&'static str, fn() -> serde_json::Value) = (name, section);
    // SAFETY: same build: the owner reads the pair, of the same layout, during the call; the
    // name and the function live in this copy, which is pinned in memory.
    unsafe { (api.add_section)((&pair as *const (&str, fn() -> serde_json::Value)).cast()) }
}
