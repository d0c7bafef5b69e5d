//! The operating-system calls and raw-memory access of the sampler. Every `unsafe` block of
//! `sampling` lives here, each with its contract; the rest of the module is safe code.

use std::cell::UnsafeCell;
use std::ffi::{c_int, c_void, CStr};
use std::io;
use std::ops::Deref;
use std::ptr;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicUsize, Ordering};
use std::sync::Mutex;

// Linux `fcntl` commands and owner type the `libc` crate does not export for glibc.
const F_SETSIG: c_int = 10;
const F_SETOWN_EX: c_int = 15;
const F_OWNER_TID: c_int = 0;
/// `PERF_EVENT_IOC_ENABLE`, `PERF_EVENT_IOC_DISABLE`.
const PERF_EVENT_IOC_ENABLE: libc::c_ulong = 0x2400;
const PERF_EVENT_IOC_DISABLE: libc::c_ulong = 0x2401;
const PERF_TYPE_SOFTWARE: u32 = 1;
const PERF_COUNT_SW_TASK_CLOCK: u64 = 1;

/// `struct f_owner_ex`.
#[repr(C)]
struct FOwnerEx {
    kind: c_int,
    pid: libc::pid_t,
}

/// `struct perf_event_attr` up to `PERF_ATTR_SIZE_VER5` (112 bytes), which every kernel since
/// 4.1 accepts.
#[repr(C)]
#[derive(Default)]
struct PerfEventAttr {
    kind: u32,
    size: u32,
    config: u64,
    sample_period: u64,
    sample_type: u64,
    read_format: u64,
    /// Bit field: disabled (bit 0), inherit (1), ..., exclude_kernel (5), exclude_hv (6).
    flags: u64,
    wakeup_events: u32,
    bp_type: u32,
    config1: u64,
    config2: u64,
    branch_sample_type: u64,
    sample_regs_user: u64,
    sample_stack_user: u32,
    clockid: i32,
    sample_regs_intr: u64,
    aux_watermark: u32,
    sample_max_stack: u16,
    reserved: u16,
}
static_assertions::const_assert_eq!(std::mem::size_of::<PerfEventAttr>(), 112);

const ATTR_DISABLED: u64 = 1 << 0;
const ATTR_EXCLUDE_KERNEL: u64 = 1 << 5;
const ATTR_EXCLUDE_HV: u64 = 1 << 6;

/// Opens a task-clock software event on thread `tid` (any CPU) that overflows every
/// `period_ns` of that thread's CPU time, created disabled. Retries with the kernel excluded
/// when `perf_event_paranoid` refuses the first form.
pub(super) fn open_task_clock(tid: u32, period_ns: u64) -> io::Result<c_int> {
    let mut last = io::Error::from_raw_os_error(libc::ENOSYS);
    for flags in [
        ATTR_DISABLED,
        ATTR_DISABLED | ATTR_EXCLUDE_KERNEL | ATTR_EXCLUDE_HV,
    ] {
        let attr = PerfEventAttr {
            kind: PERF_TYPE_SOFTWARE,
            size: std::mem::size_of::<PerfEventAttr>() as u32,
            config: PERF_COUNT_SW_TASK_CLOCK,
            sample_period: period_ns.max(1),
            flags,
            wakeup_events: 1,
            ..Default::default()
        };
        // SAFETY: `attr` is a fully initialised perf_event_attr of the size it states, alive for
        // the call; the other arguments are plain integers (pid = tid, cpu = -1, no group,
        // PERF_FLAG_FD_CLOEXEC = 8).
        let fd = unsafe {
            libc::syscall(
                libc::SYS_perf_event_open,
                &attr as *const PerfEventAttr,
                tid as libc::pid_t,
                -1 as c_int,
                -1 as c_int,
                8 as libc::c_ulong,
            )
        };
        if fd >= 0 {
            return Ok(fd as c_int);
        }
        last = io::Error::last_os_error();
    }
    Err(last)
}

/// Routes the overflow notifications of perf event `fd` to thread `tid` as signal `sig`
/// (`O_ASYNC`, `F_SETSIG`, `F_SETOWN_EX` with `F_OWNER_TID`), then enables it.
pub(super) fn route_and_enable(fd: c_int, sig: c_int, tid: u32) -> io::Result<()> {
    let owner = FOwnerEx {
        kind: F_OWNER_TID,
        pid: tid as libc::pid_t,
    };
    // SAFETY: plain fcntl/ioctl calls on a descriptor we own; `owner` lives for the call and
    // has the layout of `struct f_owner_ex`.
    let ok = unsafe {
        let fl = libc::fcntl(fd, libc::F_GETFL);
        fl >= 0
            && libc::fcntl(fd, libc::F_SETFL, fl | libc::O_ASYNC | libc::O_NONBLOCK) == 0
            && libc::fcntl(fd, F_SETSIG, sig) == 0
            && libc::fcntl(fd, F_SETOWN_EX, &owner as *const FOwnerEx) == 0
            && libc::ioctl(fd, PERF_EVENT_IOC_ENABLE, 0) == 0
    };
    if ok {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Stops perf event `fd` from counting (and signalling).
pub(super) fn disable_event(fd: c_int) {
    // SAFETY: ioctl on a descriptor we own; no memory is passed.
    unsafe { libc::ioctl(fd, PERF_EVENT_IOC_DISABLE, 0) };
}

/// The count of perf event `fd`: nanoseconds of task clock while enabled.
pub(super) fn read_count(fd: c_int) -> Option<u64> {
    let mut value = 0u64;
    // SAFETY: `value` is 8 writable bytes alive for the call.
    let n = unsafe { libc::read(fd, (&mut value as *mut u64).cast(), 8) };
    (n == 8).then_some(value)
}

/// Closes a descriptor we own.
pub(super) fn close(fd: c_int) {
    // SAFETY: `fd` is ours and not used after this call.
    unsafe { libc::close(fd) };
}

/// A POSIX timer.
#[derive(Clone, Copy, Debug)]
pub(super) struct Timer(libc::timer_t);
// SAFETY: a timer id is a process-wide handle usable from any thread.
unsafe impl Send for Timer {}

/// Creates a timer on `clock` that sends `sig` to thread `tid` with `value` in `si_value`
/// every `period_ns` of that clock.
pub(super) fn thread_timer(
    clock: libc::clockid_t,
    tid: u32,
    sig: c_int,
    value: usize,
    period_ns: u64,
) -> io::Result<Timer> {
    // SAFETY: an all-zero sigevent is a valid value (plain integers and a union).
    let mut event: libc::sigevent = unsafe { std::mem::zeroed() };
    event.sigev_notify = libc::SIGEV_THREAD_ID;
    event.sigev_signo = sig;
    event.sigev_value = libc::sigval {
        sival_ptr: value as *mut c_void,
    };
    event.sigev_notify_thread_id = tid as c_int;
    let mut id: libc::timer_t = ptr::null_mut();
    // SAFETY:
    // - `event` was fully initialised above.
    // - `id` is a valid out-pointer, read only when the call returns 0.
    let rc = unsafe { libc::timer_create(clock, &mut event, &mut id) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    let period = libc::timespec {
        tv_sec: (period_ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (period_ns % 1_000_000_000) as libc::c_long,
    };
    let spec = libc::itimerspec {
        it_interval: period,
        it_value: period,
    };
    // SAFETY: `id` was just created; `spec` lives for the call; no old value is asked for.
    if unsafe { libc::timer_settime(id, 0, &spec, ptr::null_mut()) } != 0 {
        let e = io::Error::last_os_error();
        // SAFETY: `id` is ours and deleted once.
        unsafe { libc::timer_delete(id) };
        return Err(e);
    }
    Ok(Timer(id))
}

/// Deletes a timer made by [`thread_timer`].
pub(super) fn delete_timer(timer: Timer) {
    // SAFETY: the timer is ours and deleted once (the caller drops its handle).
    unsafe { libc::timer_delete(timer.0) };
}

/// `SIGRTMIN` and `SIGRTMAX` as this C library defines them.
pub(super) fn realtime_signals() -> (c_int, c_int) {
    (libc::SIGRTMIN(), libc::SIGRTMAX())
}

/// True when `sig` has the default action (nobody installed a handler or ignored it).
pub(super) fn has_default_action(sig: c_int) -> bool {
    // SAFETY: an all-zero sigaction is a valid out-value.
    let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
    // SAFETY: query only (no new action); `old` is a valid out-pointer.
    let rc = unsafe { libc::sigaction(sig, ptr::null(), &mut old) };
    rc == 0 && old.sa_sigaction == libc::SIG_DFL
}

/// The sample handler's signature.
pub(super) type Handler = extern "C" fn(c_int, *mut libc::siginfo_t, *mut c_void);

/// Installs `handler` for `sig` with `SA_SIGINFO | SA_RESTART` (interrupted system calls are
/// restarted), all other signals left unblocked.
pub(super) fn install_handler(sig: c_int, handler: Handler) -> io::Result<()> {
    // SAFETY: an all-zero sigaction is a valid value; the fields are set below.
    let mut action: libc::sigaction = unsafe { std::mem::zeroed() };
    action.sa_sigaction = handler as usize;
    action.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART;
    // SAFETY: `action.sa_mask` is a valid sigset_t to initialise; `action` lives for the
    // call; `handler` is an `extern "C"` function of the SA_SIGINFO signature, static.
    let rc = unsafe {
        libc::sigemptyset(&mut action.sa_mask);
        libc::sigaction(sig, &action, ptr::null_mut())
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// What the handler needs from `siginfo_t`: the code, and the word at offset 24 of the
/// union, which is `si_fd` for an `O_ASYNC` notification and `si_value` for a timer.
pub(super) fn siginfo_code_and_word(info: *const libc::siginfo_t) -> (c_int, usize) {
    if info.is_null() {
        return (0, 0);
    }
    // SAFETY: the kernel passes a valid 128-byte siginfo_t to an SA_SIGINFO handler;
    // `si_code` is at offset 8 and the union word at 24 (x86-64 and aarch64 layouts).
    unsafe {
        let base = info.cast::<u8>();
        let code = base.add(8).cast::<c_int>().read();
        let word = base.add(24).cast::<usize>().read_unaligned();
        (code, word)
    }
}

/// `si_overrun` of a timer's signal (`si_code == SI_TIMER`): how many more expirations the
/// kernel merged into this signal because the previous one was still pending.
pub(super) fn timer_overrun(info: *const libc::siginfo_t) -> u32 {
    if info.is_null() {
        return 0;
    }
    // SAFETY: as in `siginfo_code_and_word`; the timer member of the union is `si_tid` at
    // offset 16 and `si_overrun` at 20 (x86-64 and aarch64 layouts).
    let overrun = unsafe { info.cast::<u8>().add(20).cast::<c_int>().read() };
    overrun.max(0) as u32
}

/// `si_fd` of an `O_ASYNC` notification (an `int`; the upper half of the word is `si_band`'s
/// neighbour, so only the low 32 bits count).
pub(super) fn fd_of(word: usize) -> c_int {
    word as u32 as c_int
}

/// The interrupted program counter, stack pointer and frame pointer (also read by the crash
/// handler).
pub(crate) fn interrupted_registers(ctx: *const c_void) -> Option<(u64, u64, u64)> {
    if ctx.is_null() {
        return None;
    }
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: for an SA_SIGINFO handler the third argument points at the interrupted
        // thread's `ucontext_t`, valid for the handler's duration.
        let uc = unsafe { &*ctx.cast::<libc::ucontext_t>() };
        let g = &uc.uc_mcontext.gregs;
        Some((
            g[libc::REG_RIP as usize] as u64,
            g[libc::REG_RSP as usize] as u64,
            g[libc::REG_RBP as usize] as u64,
        ))
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        None
    }
}

/// The registers of the function this is inlined into, at this point: (pc, sp, fp). Used to
/// unwind from normal (non-signal) context; always inlined, so that the frame they describe
/// is still live while the caller unwinds from them.
#[inline(always)]
pub(super) fn current_registers() -> (u64, u64, u64) {
    #[cfg(target_arch = "x86_64")]
    {
        let (pc, sp, bp): (u64, u64, u64);
        // SAFETY: reads rip (via lea), rsp and rbp into registers; touches no memory.
        unsafe {
            std::arch::asm!(
                "lea {pc}, [rip]",
                "mov {sp}, rsp",
                "mov {bp}, rbp",
                pc = out(reg) pc,
                sp = out(reg) sp,
                bp = out(reg) bp,
                options(nomem, nostack, preserves_flags)
            );
        }
        (pc, sp, bp)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        (0, 0, 0)
    }
}

/// `errno` of the calling thread.
pub(super) fn errno() -> c_int {
    // SAFETY: __errno_location returns this thread's errno, always valid (async-signal-safe).
    unsafe { *libc::__errno_location() }
}

/// Sets `errno` of the calling thread.
pub(super) fn set_errno(value: c_int) {
    // SAFETY: as in `errno`.
    unsafe { *libc::__errno_location() = value };
}

/// The calling thread's kernel id (a system call: async-signal-safe).
pub(super) fn gettid() -> u32 {
    // SAFETY: no preconditions, cannot fail.
    unsafe { libc::gettid() as u32 }
}

/// Process CPU time in nanoseconds.
pub(super) fn process_cputime_ns() -> u64 {
    clock_ns(libc::CLOCK_PROCESS_CPUTIME_ID)
}

/// `CLOCK_MONOTONIC` in nanoseconds.
pub(super) fn monotonic_ns() -> u64 {
    clock_ns(libc::CLOCK_MONOTONIC)
}

/// Sleeps about `ns` nanoseconds; returns how long it really slept (an interrupting signal
/// ends it early). Async-signal-safe: `nanosleep` and the vDSO clock.
pub(super) fn sleep_ns(ns: u64) -> u64 {
    let start = monotonic_ns();
    let request = libc::timespec {
        tv_sec: (ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (ns % 1_000_000_000) as libc::c_long,
    };
    // SAFETY: `request` is a valid timespec; a null remainder pointer is allowed.
    unsafe { libc::nanosleep(&request, std::ptr::null_mut()) };
    monotonic_ns().saturating_sub(start)
}

fn clock_ns(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid out-pointer for the call.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Reads the 8-byte word at `addr` when `[addr, addr + 8)` lies inside `[lo, hi)`, which the
/// caller guarantees is readable mapped memory (the sampled thread's own stack mapping).
#[inline]
pub(super) fn read_word_within(addr: u64, lo: u64, hi: u64) -> Result<u64, ()> {
    if addr < lo || addr.checked_add(8).is_none_or(|end| end > hi) {
        return Err(());
    }
    // SAFETY: the range check above keeps the read inside `[lo, hi)`, which the caller
    // guarantees is mapped and readable; stack words are plain integers (any value is valid).
    Ok(unsafe { ptr::read_volatile(addr as *const u64) })
}

/// Bytes of a loaded module's mapping, borrowed for as long as the module stays loaded.
#[derive(Clone, Copy, Debug)]
pub(super) struct ModuleBytes {
    ptr: *const u8,
    len: usize,
}

impl Default for ModuleBytes {
    fn default() -> Self {
        ModuleBytes {
            ptr: ptr::null(),
            len: 0,
        }
    }
}

// SAFETY: the bytes are read-only mapped memory of a loaded module, immutable while loaded.
unsafe impl Send for ModuleBytes {}
// SAFETY: as above.
unsafe impl Sync for ModuleBytes {}

impl Deref for ModuleBytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        if self.len == 0 {
            return &[];
        }
        // SAFETY: built by `loaded_modules` from a PT_LOAD segment (or a part of one) of a
        // module that was loaded then; its memory stays mapped and unchanged while the module
        // is loaded (see the module-list docs for `dlclose`).
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
}

/// One segment of a loaded module, as addresses relative to the module (SVMA).
#[derive(Clone, Copy, Debug)]
pub(super) struct Segment {
    pub(super) vaddr: u64,
    pub(super) memsz: u64,
    pub(super) executable: bool,
}

/// A module as `dl_iterate_phdr` reports it.
#[derive(Clone, Debug)]
pub(super) struct LoadedModule {
    pub(super) name: String,
    /// Load bias: actual address = `base + vaddr`.
    pub(super) base: u64,
    pub(super) loads: Vec<Segment>,
    /// `PT_GNU_EH_FRAME`: the `.eh_frame_hdr` section.
    pub(super) eh_frame_hdr: Option<Segment>,
}

impl LoadedModule {
    /// The module's bytes at `vaddr..vaddr + len` (must lie in one of its loaded segments).
    pub(super) fn bytes(&self, vaddr: u64, len: u64) -> Option<ModuleBytes> {
        let inside = self
            .loads
            .iter()
            .any(|s| vaddr >= s.vaddr && vaddr + len <= s.vaddr + s.memsz);
        inside.then_some(ModuleBytes {
            ptr: (self.base + vaddr) as *const u8,
            len: len as usize,
        })
    }

    /// Reads a little-endian u32/i32 field of the module's mapped memory at `vaddr`.
    pub(super) fn read_i32(&self, vaddr: u64) -> Option<i32> {
        let bytes = self.bytes(vaddr, 4)?;
        Some(i32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]))
    }
}

/// Calls `visit` with each module loaded now, inside `dl_iterate_phdr`'s callback: the loader
/// holds its lock meanwhile, so no `dlclose` can unmap a module while `visit` reads its memory
/// (Open MPI dlopens and dlcloses dozens of components in `MPI_Init`; reading a module's
/// `.eh_frame_hdr` after the iteration returned raced with them and faulted). `visit` may
/// allocate but must not call `dlopen`/`dlclose`. Returns the loader's (adds, subs) counters.
pub(super) fn visit_loaded_modules(mut visit: impl FnMut(&LoadedModule)) -> (u64, u64) {
    struct Out<'a> {
        visit: &'a mut dyn FnMut(&LoadedModule),
        counters: (u64, u64),
    }
    extern "C" fn each(info: *mut libc::dl_phdr_info, _size: usize, data: *mut c_void) -> c_int {
        // SAFETY: dl_iterate_phdr passes a valid info for the duration of the callback and
        // our `data` pointer, which is the `Out` below (not aliased elsewhere meanwhile).
        let (info, out) = unsafe { (&*info, &mut *data.cast::<Out>()) };
        out.counters = (info.dlpi_adds, info.dlpi_subs);
        let name = if info.dlpi_name.is_null() {
            String::new()
        } else {
            // SAFETY: a non-null dlpi_name is a NUL-terminated string owned by the loader.
            unsafe { CStr::from_ptr(info.dlpi_name) }
                .to_string_lossy()
                .into_owned()
        };
        let phdrs = if info.dlpi_phdr.is_null() {
            &[][..]
        } else {
            // SAFETY: dlpi_phdr points at dlpi_phnum program headers owned by the loader.
            unsafe { std::slice::from_raw_parts(info.dlpi_phdr, info.dlpi_phnum as usize) }
        };
        let mut module = LoadedModule {
            name,
            base: info.dlpi_addr,
            loads: Vec::new(),
            eh_frame_hdr: None,
        };
        for ph in phdrs {
            let seg = Segment {
                vaddr: ph.p_vaddr,
                memsz: ph.p_memsz,
                executable: ph.p_flags & libc::PF_X != 0,
            };
            match ph.p_type {
                libc::PT_LOAD => module.loads.push(seg),
                libc::PT_GNU_EH_FRAME => module.eh_frame_hdr = Some(seg),
                _ => {}
            }
        }
        // A panic must not unwind through the loader's frames (it holds its lock).
        let visit = &mut out.visit;
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| visit(&module)));
        0
    }
    let mut out = Out {
        visit: &mut visit,
        counters: (0, 0),
    };
    // SAFETY: `each` matches the callback signature and only uses `data` as `&mut Out`,
    // which outlives the call.
    unsafe { libc::dl_iterate_phdr(Some(each), (&mut out as *mut Out).cast()) };
    out.counters
}

/// The loader's (adds, subs) counters: cheap check whether the module list changed.
pub(super) fn module_counters() -> (u64, u64) {
    extern "C" fn first(info: *mut libc::dl_phdr_info, _size: usize, data: *mut c_void) -> c_int {
        // SAFETY: as in `loaded_modules`.
        let (info, out) = unsafe { (&*info, &mut *data.cast::<(u64, u64)>()) };
        *out = (info.dlpi_adds, info.dlpi_subs);
        1
    }
    let mut out = (0u64, 0u64);
    // SAFETY: as in `loaded_modules`; the callback stops after the first module.
    unsafe { libc::dl_iterate_phdr(Some(first), (&mut out as *mut (u64, u64)).cast()) };
    out
}

/// A value only one context uses at a time, taken with a non-blocking try-lock: the signal
/// handler's per-thread unwind cache. Async-signal-safe (one atomic swap); never blocks.
pub(super) struct TryCell<T> {
    busy: AtomicBool,
    value: UnsafeCell<T>,
}

// SAFETY: access to `value` is serialised by `busy` (acquire on take, release on drop).
unsafe impl<T: Send> Sync for TryCell<T> {}

impl<T> TryCell<T> {
    pub(super) fn new(value: T) -> Self {
        TryCell {
            busy: AtomicBool::new(false),
            value: UnsafeCell::new(value),
        }
    }

    /// Exclusive access, or `None` while someone else has it (e.g. a handler that
    /// interrupted a backtrace on the same thread).
    pub(super) fn try_take(&self) -> Option<TryGuard<'_, T>> {
        if self.busy.swap(true, Ordering::Acquire) {
            return None;
        }
        Some(TryGuard { cell: self })
    }
}

/// Exclusive access to a [`TryCell`]'s value.
pub(super) struct TryGuard<'a, T> {
    cell: &'a TryCell<T>,
}

impl<T> std::ops::Deref for TryGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: the guard holds `busy`, so no other reference to the value exists.
        unsafe { &*self.cell.value.get() }
    }
}

impl<T> std::ops::DerefMut for TryGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: as above, and `&mut self` makes this the only access through the guard.
        unsafe { &mut *self.cell.value.get() }
    }
}

impl<T> Drop for TryGuard<'_, T> {
    fn drop(&mut self) {
        self.cell.busy.store(false, Ordering::Release);
    }
}

/// A value published by one writer and read by signal handlers without locks: readers
/// announce themselves in a counter before loading the pointer, and a replaced value is freed
/// only after the writer has seen the counter at zero once since the replacement, so no reader
/// can still hold it. Readers never block, allocate or free.
pub(super) struct Published<T> {
    current: AtomicPtr<T>,
    readers: AtomicUsize,
    retired: Mutex<Vec<Box<T>>>,
}

impl<T> Published<T> {
    pub(super) const fn empty() -> Self {
        Published {
            current: AtomicPtr::new(ptr::null_mut()),
            readers: AtomicUsize::new(0),
            retired: Mutex::new(Vec::new()),
        }
    }

    /// Replaces the value (writer side; not from a signal handler).
    pub(super) fn publish(&self, value: Box<T>) {
        let old = self.current.swap(Box::into_raw(value), Ordering::SeqCst);
        let mut retired = self.retired.lock().unwrap_or_else(|e| e.into_inner());
        if !old.is_null() {
            // SAFETY: `old` came from `Box::into_raw` in an earlier `publish` and was just
            // unlinked; only readers that loaded it before the swap may still use it, and it
            // is freed in `reclaim` once they are gone.
            retired.push(unsafe { Box::from_raw(old) });
        }
        drop(retired);
        self.reclaim();
    }

    /// Frees replaced values if no reader is active now (writer side).
    pub(super) fn reclaim(&self) {
        let mut retired = self.retired.lock().unwrap_or_else(|e| e.into_inner());
        if !retired.is_empty() && self.readers.load(Ordering::SeqCst) == 0 {
            // A reader arriving after this load loads the new pointer (SeqCst order of the
            // swap in `publish`, this load, and the reader's increment then load).
            retired.clear();
        }
    }

    /// Readers inside [`Self::read`] now.
    pub(super) fn readers(&self) -> usize {
        self.readers.load(Ordering::SeqCst)
    }

    /// Calls `f` with the current value, if any. Async-signal-safe.
    #[inline]
    pub(super) fn read<R>(&self, f: impl FnOnce(Option<&T>) -> R) -> R {
        self.readers.fetch_add(1, Ordering::SeqCst);
        let p = self.current.load(Ordering::SeqCst);
        // SAFETY: a published pointer stays valid while `readers` counts us (see `reclaim`).
        let r = f(unsafe { p.as_ref() });
        self.readers.fetch_sub(1, Ordering::SeqCst);
        r
    }
}

/// `n` zeroed atomic words from the allocator's zeroed memory (a large one is a fresh
/// anonymous mapping, so its pages cost memory only once written).
pub(super) fn zeroed_words(n: usize) -> Box<[std::sync::atomic::AtomicU64]> {
    let words: Box<[u64]> = vec![0u64; n].into_boxed_slice();
    // SAFETY: `AtomicU64` has the same size, alignment and bit validity as `u64` (documented
    // by std on every platform with 64-bit atomics), so the boxed slice may change type; the
    // allocation's layout is unchanged, so the new box frees it correctly.
    unsafe { Box::from_raw(Box::into_raw(words) as *mut [std::sync::atomic::AtomicU64]) }
}

/// Thread ids of this process (`/proc/self/task`).
pub(super) fn thread_ids() -> Vec<u32> {
    match std::fs::read_dir("/proc/self/task") {
        Ok(dir) => dir
            .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
            .collect(),
        Err(_) => Vec::new(),
    }
}

/// A thread's kernel name (`/proc/self/task/<tid>/comm`).
pub(super) fn thread_name(tid: u32) -> Option<String> {
    std::fs::read_to_string(format!("/proc/self/task/{tid}/comm"))
        .ok()
        .map(|s| s.trim_end().to_string())
}

/// Readable mappings of this process, sorted (`/proc/self/maps`).
pub(super) fn readable_mappings() -> Vec<(u64, u64)> {
    let Ok(text) = std::fs::read_to_string("/proc/self/maps") else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for line in text.lines() {
        let mut parts = line.split_whitespace();
        let (Some(range), Some(perms)) = (parts.next(), parts.next()) else {
            continue;
        };
        if !perms.starts_with('r') {
            continue;
        }
        let Some((a, b)) = range.split_once('-') else {
            continue;
        };
        if let (Ok(a), Ok(b)) = (u64::from_str_radix(a, 16), u64::from_str_radix(b, 16)) {
            out.push((a, b));
        }
    }
    out.sort_unstable();
    out
}

/// The calling thread's stack range from `pthread_getattr_np` (not the main thread's, whose
/// size the C library guesses from the resource limit).
pub(super) fn own_stack_range() -> Option<(u64, u64)> {
    // SAFETY: an all-zero pthread_attr_t is a valid out-value for pthread_getattr_np.
    let mut attr: libc::pthread_attr_t = unsafe { std::mem::zeroed() };
    let mut addr: *mut c_void = ptr::null_mut();
    let mut size: usize = 0;
    // SAFETY: `attr`, `addr` and `size` are valid out-pointers; the attr is destroyed after
    // use exactly when pthread_getattr_np initialised it.
    let ok = unsafe {
        if libc::pthread_getattr_np(libc::pthread_self(), &mut attr) != 0 {
            return None;
        }
        let ok = libc::pthread_attr_getstack(&attr, &mut addr, &mut size) == 0;
        libc::pthread_attr_destroy(&mut attr);
        ok
    };
    (ok && !addr.is_null()).then(|| (addr as u64, addr as u64 + size as u64))
}
