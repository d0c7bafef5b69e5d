//! Shared by the device probes (`pc_probe`, `region_probe`): a hand-written PTX kernel
//! (`spin`: each thread adds up `n` numbers, JIT-compiled, so no line information) loaded and
//! launched through the CUDA driver API, with `libcuda.so.1` loaded at run time so the examples
//! build without CUDA.

use std::ffi::{c_char, c_int, c_uint, c_void, CString};

const PTX: &str = r#"
.version 7.5
.target sm_75
.address_size 64
.visible .entry spin(.param .u64 p_out, .param .u32 p_n)
{
  .reg .pred p;
  .reg .b32 i, n, acc, tid;
  .reg .b64 ptr, off;
  ld.param.u64 ptr, [p_out];
  ld.param.u32 n, [p_n];
  mov.u32 tid, %tid.x;
  mov.u32 acc, 0;
  mov.u32 i, 0;
LOOP:
  add.u32 acc, acc, i;
  add.u32 i, i, 1;
  setp.lt.u32 p, i, n;
  @p bra LOOP;
  cvta.to.global.u64 ptr, ptr;
  mul.wide.u32 off, tid, 4;
  add.u64 ptr, ptr, off;
  st.global.u32 [ptr], acc;
  ret;
}
"#;

type Fn0 = unsafe extern "C" fn(c_uint) -> c_int;
type FnDev = unsafe extern "C" fn(*mut c_int, c_int) -> c_int;
type FnRetain = unsafe extern "C" fn(*mut *mut c_void, c_int) -> c_int;
type FnSet = unsafe extern "C" fn(*mut c_void) -> c_int;
type FnLoad = unsafe extern "C" fn(*mut *mut c_void, *const c_void) -> c_int;
type FnGet = unsafe extern "C" fn(*mut *mut c_void, *mut c_void, *const c_char) -> c_int;
type FnAlloc = unsafe extern "C" fn(*mut u64, usize) -> c_int;
type FnSync = unsafe extern "C" fn() -> c_int;
type FnLaunch = unsafe extern "C" fn(
    *mut c_void,
    c_uint,
    c_uint,
    c_uint,
    c_uint,
    c_uint,
    c_uint,
    c_uint,
    *mut c_void,
    *mut *mut c_void,
    *mut *mut c_void,
) -> c_int;

fn sym<T: Copy>(h: *mut c_void, name: &str) -> T {
    let c = CString::new(name).unwrap();
    // SAFETY: a valid handle and NUL-terminated name.
    let p = unsafe { libc::dlsym(h, c.as_ptr()) };
    assert!(!p.is_null(), "{name} not found");
    // SAFETY: T is the C signature of `name` (cuda.h), pointer-sized.
    unsafe { std::mem::transmute_copy(&p) }
}

fn check(what: &str, r: c_int) {
    assert_eq!(r, 0, "{what} failed with CUDA error {r}");
}

/// The `spin` kernel, loaded in the primary context of device 0.
pub struct SpinKernel {
    launch: FnLaunch,
    sync: FnSync,
    function: *mut c_void,
    out: u64,
}

impl SpinKernel {
    /// Loads the driver and the kernel; panics with the failing call's CUDA error.
    pub fn load() -> SpinKernel {
        // SAFETY: a NUL-terminated library name.
        let h = unsafe { libc::dlopen(c"libcuda.so.1".as_ptr(), libc::RTLD_NOW) };
        assert!(!h.is_null(), "libcuda.so.1 not found");
        let init: Fn0 = sym(h, "cuInit");
        let device_get: FnDev = sym(h, "cuDeviceGet");
        let retain: FnRetain = sym(h, "cuDevicePrimaryCtxRetain");
        let set_current: FnSet = sym(h, "cuCtxSetCurrent");
        let load: FnLoad = sym(h, "cuModuleLoadData");
        let get_function: FnGet = sym(h, "cuModuleGetFunction");
        let alloc: FnAlloc = sym(h, "cuMemAlloc_v2");
        let ptx = CString::new(PTX).unwrap();
        let (mut dev, mut ctx, mut module, mut function, mut out) = (
            0,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            0u64,
        );
        // SAFETY: every call gets valid out-pointers and the handles the previous calls
        // returned.
        unsafe {
            check("cuInit", init(0));
            check("cuDeviceGet", device_get(&mut dev, 0));
            check("cuDevicePrimaryCtxRetain", retain(&mut ctx, dev));
            check("cuCtxSetCurrent", set_current(ctx));
            check("cuModuleLoadData", load(&mut module, ptx.as_ptr().cast()));
            check(
                "cuModuleGetFunction",
                get_function(&mut function, module, c"spin".as_ptr()),
            );
            check("cuMemAlloc", alloc(&mut out, 4096));
        }
        SpinKernel {
            launch: sym(h, "cuLaunchKernel"),
            sync: sym(h, "cuCtxSynchronize"),
            function,
            out,
        }
    }

    /// Launches `blocks` blocks of 32 threads that each add up `n` numbers, and waits.
    pub fn run(&self, blocks: u32, n: u32) {
        let mut p_out = self.out;
        let mut p_n = n;
        let mut params = [
            (&mut p_out as *mut u64).cast::<c_void>(),
            (&mut p_n as *mut u32).cast::<c_void>(),
        ];
        // SAFETY: `function` is the loaded kernel taking (u64, u32); params point at live
        // locals.
        unsafe {
            check(
                "cuLaunchKernel",
                (self.launch)(
                    self.function,
                    blocks,
                    1,
                    1,
                    32,
                    1,
                    1,
                    0,
                    std::ptr::null_mut(),
                    params.as_mut_ptr(),
                    std::ptr::null_mut(),
                ),
            );
            check("cuCtxSynchronize", (self.sync)());
        }
    }
}
