//! The CUPTI profiler APIs' parameter-struct convention, shared by the Range Profiler and
//! profiler-host declarations (`sys_profiler*.rs`): every struct starts with `structSize` (the
//! header's `*_STRUCT_SIZE`: the offset of the last field plus its size, [`Params::SIZE`]) and
//! `pPriv` (null).

pub(crate) use crate::sys::struct_size;

/// A parameter struct: its `*_STRUCT_SIZE`.
pub trait Params: Copy {
    /// `CUPTI_PROFILER_STRUCT_SIZE(type, last field)`.
    const SIZE: usize;
    /// All zero, with `structSize` set.
    fn new() -> Self {
        // SAFETY: every Params struct is plain data (integers and raw pointers), for which all
        // zero is a valid value; structSize is its first field (checked by the layout test).
        let mut p: Self = unsafe { std::mem::zeroed() };
        // SAFETY: the first field of every Params struct is `structSize: usize`.
        unsafe { *(&mut p as *mut Self).cast::<usize>() = Self::SIZE };
        p
    }
}
