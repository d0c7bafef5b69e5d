//! Export: `metron_info_iterate`, the counters, metrics and traces of a device.

use super::*;
use metron::info::{self, InfoItem, InfoKind};
use std::ffi::CString;
use std::ops::ControlFlow;

/// `metron_info`.
#[repr(C)]
pub struct Info {
    /// `sizeof(metron_info)`.
    pub struct_size: u32,
    /// `METRON_INFO_*`.
    pub kind: u32,
    /// Device name.
    pub device: *const c_char,
    /// Name.
    pub name: *const c_char,
    /// Description.
    pub description: *const c_char,
    /// Group, unit or setting.
    pub detail: *const c_char,
    /// Metric formula or "".
    pub expression: *const c_char,
    /// 1 when available.
    pub available: i32,
    /// Why not, or "".
    pub reason: *const c_char,
}

/// `metron_info_callback`.
pub type InfoCallback = Option<unsafe extern "C" fn(info: *const Info, user: *mut c_void) -> i32>;

/// `METRON_INFO_*` values.
const KINDS: [(u32, InfoKind); 3] = [
    (1, InfoKind::Counter),
    (2, InfoKind::Metric),
    (3, InfoKind::Trace),
];

/// Calls `callback` for every item of `kind` on `device`.
///
/// # Safety
/// `device` is NULL or a NUL-terminated string; `callback` is NULL or a function that may be
/// called with a pointer valid for the duration of the call and `user`.
#[no_mangle]
pub unsafe extern "C" fn metron_info_iterate(
    device: *const c_char,
    kind: u32,
    callback: InfoCallback,
    user: *mut c_void,
) -> Status {
    call(|| {
        let Some(callback) = callback else {
            return Err(Failure::new(
                ERROR_NULL_ARGUMENT,
                "metron_info_iterate: callback is NULL".to_string(),
            ));
        };
        let device = if device.is_null() {
            "cpu".to_string()
        } else {
            // SAFETY: non-NULL; the caller passes a NUL-terminated string.
            unsafe { CStr::from_ptr(device) }
                .to_string_lossy()
                .into_owned()
        };
        let Some(&(_, kind)) = KINDS.iter().find(|(k, _)| *k == kind) else {
            return Err(Failure::new(
                ERROR_INVALID_ARGUMENT,
                format!("metron_info_iterate: kind {kind} is not one of METRON_INFO_COUNTER (1), METRON_INFO_METRIC (2), METRON_INFO_TRACE (3)"),
            ));
        };
        let items = info::list(&device, kind).map_err(|e| {
            Failure::new(ERROR_INVALID_ARGUMENT, format!("metron_info_iterate: {e}"))
        })?;
        for item in &items {
            if visit(item, callback, user).is_break() {
                break;
            }
        }
        Ok(())
    })
}

fn visit(
    item: &InfoItem,
    callback: unsafe extern "C" fn(*const Info, *mut c_void) -> i32,
    user: *mut c_void,
) -> ControlFlow<()> {
    let text = |s: &str| CString::new(s.replace('\0', " ")).unwrap_or_default();
    let device = text(&item.device);
    let name = text(&item.name);
    let description = text(&item.description);
    let detail = text(&item.detail);
    let expression = text(&item.expression);
    let reason = text(item.reason.as_deref().unwrap_or(""));
    let kind = KINDS
        .iter()
        .find(|(_, k)| *k == item.kind)
        .map_or(0, |(n, _)| *n);
    let info = Info {
        struct_size: std::mem::size_of::<Info>() as u32,
        kind,
        device: device.as_ptr(),
        name: name.as_ptr(),
        description: description.as_ptr(),
        detail: detail.as_ptr(),
        expression: expression.as_ptr(),
        available: item.available as i32,
        reason: reason.as_ptr(),
    };
    // SAFETY: `info` and the strings it points to live until after the call; the caller of
    // metron_info_iterate vouched for `callback` and `user`.
    let stop = unsafe { callback(&info, user) };
    if stop == 0 {
        ControlFlow::Continue(())
    } else {
        ControlFlow::Break(())
    }
}
