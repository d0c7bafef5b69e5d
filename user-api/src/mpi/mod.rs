//! MPI interposition through the profiling interface (PMPI): `libmetron.so` exports
//! `MPI_Init`, `MPI_Init_thread`, `MPI_Finalize`, `MPI_Send`, `MPI_Recv`, `MPI_Isend`,
//! `MPI_Irecv`, `MPI_Wait`, `MPI_Waitall`, `MPI_Waitany`, `MPI_Allreduce`, `MPI_Bcast` and
//! `MPI_Barrier` (and `MPI_Test`, `MPI_Testall`, `MPI_Request_free`, only to keep track of
//! requests). Where it comes before the MPI library in symbol lookup (preloaded by
//! `metron run`, or linked before `-lmpi`), each call becomes a region of that name around the
//! library's `PMPI_` function, found at run time with `dlsym`: no MPI headers or library at
//! build time, and a program without MPI never calls these.
//!
//! Annotations (debug annotations in the trace): `mpi.bytes` (count x type size; for a
//! receive, what arrived), `mpi.peer` (rank in the communicator; the actual source of a
//! receive), `mpi.tag`, `mpi.comm_size`, `mpi.root` (Bcast). On `MPI_COMM_WORLD` sends also
//! carry `mpi.dest` and receives `mpi.source` (world ranks) and both `mpi.msg`, the message's
//! number among those from the same source to the same destination with the same tag: MPI
//! does not let such messages overtake each other, so `metron merge` pairs the n-th send with
//! the n-th receive and draws a flow arrow between them. A receive posted with `MPI_Irecv` is
//! annotated on the `MPI_Wait` that completes it (where its data arrives); one completed by
//! `MPI_Waitall`, `MPI_Waitany` or a test gets no annotation or arrow (those calls are
//! regions with `mpi.requests`), and its request is forgotten so that a later request reusing
//! the handle is not taken for it.
//!
//! `METRON_MPI=false` turns recording off (the calls go straight to the library).
//!
//! # ABI
//! Handles (`MPI_Comm`, `MPI_Datatype`, `MPI_Op`, `MPI_Request`) are pointers in Open MPI and
//! `int`s in MPICH and its derivatives; both travel in one integer register or 8-byte stack
//! slot on x86-64 and AArch64 Linux, so they are passed through as a machine word. What
//! differs (the layout of `MPI_Status`, `MPI_COMM_WORLD`, `MPI_STATUS_IGNORE`, the width of
//! `MPI_Request`) is read per implementation, recognized at the first call: Open MPI by its
//! `ompi_mpi_comm_world` symbol, MPICH-based libraries by `MPI_Get_library_version`. An
//! unrecognized library gets regions with bytes but no peers or flows.

#![allow(non_snake_case)]

mod clock_offsets;
use clock_offsets::{exchange_clocks, offsets_json};

use crate::exports_regions::{metron_annotate_int64, metron_pop, metron_push};
use crate::{Annotation, AnnotationData};
use std::collections::HashMap;
use std::ffi::{c_char, c_int, c_void, CStr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

/// An MPI handle passed through as a machine word (see the module docs).
type Handle = usize;

type InitFn = unsafe extern "C" fn(*mut c_int, *mut *mut *mut c_char) -> c_int;
type InitThreadFn =
    unsafe extern "C" fn(*mut c_int, *mut *mut *mut c_char, c_int, *mut c_int) -> c_int;
type FinalizeFn = unsafe extern "C" fn() -> c_int;
type SendFn = unsafe extern "C" fn(*const c_void, c_int, Handle, c_int, c_int, Handle) -> c_int;
type RecvFn =
    unsafe extern "C" fn(*mut c_void, c_int, Handle, c_int, c_int, Handle, *mut c_void) -> c_int;
type IsendFn =
    unsafe extern "C" fn(*const c_void, c_int, Handle, c_int, c_int, Handle, *mut c_void) -> c_int;
type WaitFn = unsafe extern "C" fn(*mut c_void, *mut c_void) -> c_int;
type AllreduceFn =
    unsafe extern "C" fn(*const c_void, *mut c_void, c_int, Handle, Handle, Handle) -> c_int;
type BcastFn = unsafe extern "C" fn(*mut c_void, c_int, Handle, c_int, Handle) -> c_int;
type BarrierFn = unsafe extern "C" fn(Handle) -> c_int;
type HandleIntFn = unsafe extern "C" fn(Handle, *mut c_int) -> c_int;
type GetCountFn = unsafe extern "C" fn(*const c_void, Handle, *mut c_int) -> c_int;
type WaitallFn = unsafe extern "C" fn(c_int, *mut c_void, *mut c_void) -> c_int;
type WaitanyFn = unsafe extern "C" fn(c_int, *mut c_void, *mut c_int, *mut c_void) -> c_int;
type TestFn = unsafe extern "C" fn(*mut c_void, *mut c_int, *mut c_void) -> c_int;
type TestallFn = unsafe extern "C" fn(c_int, *mut c_void, *mut c_int, *mut c_void) -> c_int;
type RequestFreeFn = unsafe extern "C" fn(*mut c_void) -> c_int;

/// The library's `PMPI_` functions this module forwards to.
struct Pmpi {
    init: InitFn,
    init_thread: InitThreadFn,
    finalize: FinalizeFn,
    send: SendFn,
    recv: RecvFn,
    isend: IsendFn,
    irecv: RecvFn,
    wait: WaitFn,
    allreduce: AllreduceFn,
    bcast: BcastFn,
    barrier: BarrierFn,
    type_size: HandleIntFn,
    comm_size: HandleIntFn,
    comm_rank: HandleIntFn,
    get_count: GetCountFn,
    waitall: WaitallFn,
    waitany: WaitanyFn,
    test: TestFn,
    testall: TestallFn,
    request_free: RequestFreeFn,
}

/// What differs between MPI implementations.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Flavor {
    /// Open MPI: pointer handles; status {source, tag, error, ...}; STATUS_IGNORE = NULL.
    OpenMpi { comm_world: Handle, byte: Handle },
    /// MPICH, Intel MPI, MVAPICH, Cray MPICH: int handles; status {count_lo, count_hi,
    /// source, tag, error}; MPI_COMM_WORLD = 0x44000000; STATUS_IGNORE = 1.
    Mpich,
    /// Neither: regions with bytes only.
    Unknown,
}

impl Flavor {
    fn comm_world(self) -> Option<Handle> {
        match self {
            Flavor::OpenMpi { comm_world, .. } => Some(comm_world),
            Flavor::Mpich => Some(0x4400_0000),
            Flavor::Unknown => None,
        }
    }
    /// `MPI_BYTE`.
    fn byte(self) -> Option<Handle> {
        match self {
            Flavor::OpenMpi { byte, .. } => Some(byte),
            Flavor::Mpich => Some(0x4c00_010d),
            Flavor::Unknown => None,
        }
    }
    /// Byte offsets of `MPI_SOURCE` and `MPI_TAG` in `MPI_Status`.
    fn status_offsets(self) -> Option<(usize, usize)> {
        match self {
            Flavor::OpenMpi { .. } => Some((0, 4)),
            Flavor::Mpich => Some((8, 12)),
            Flavor::Unknown => None,
        }
    }
    fn is_status_ignore(self, status: *mut c_void) -> bool {
        status.is_null() || (self == Flavor::Mpich && status as usize == 1)
    }
    /// A request handle's value (it names the operation until the wait completes it).
    ///
    /// # Safety
    /// `request` points to a valid `MPI_Request`.
    unsafe fn request(self, request: *const c_void) -> usize {
        match self {
            // SAFETY: an MPICH request is an int.
            Flavor::Mpich => unsafe { *(request as *const u32) as usize },
            // SAFETY: an Open MPI request is a pointer; unknown libraries are read the same
            // way only where they are pointer-sized (never for peers).
            _ => unsafe { *(request as *const usize) },
        }
    }
    /// Bytes of one `MPI_Request` in an array of them.
    fn request_size(self) -> usize {
        match self {
            Flavor::Mpich => 4,
            _ => std::mem::size_of::<usize>(),
        }
    }
    fn name(self) -> &'static str {
        match self {
            Flavor::OpenMpi { .. } => "Open MPI",
            Flavor::Mpich => "MPICH-based",
            Flavor::Unknown => "unrecognized",
        }
    }
}

/// A symbol of the process (the global scope, then any loaded object), `None` where none is
/// loaded.
fn symbol(name: &CStr) -> Option<*mut c_void> {
    // SAFETY: RTLD_DEFAULT searches the global scope; `name` is NUL-terminated.
    let p = unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) };
    if p.is_null() {
        in_loaded_objects(name)
    } else {
        Some(p)
    }
}

/// `PMPI_<name>` of the MPI library (or, failing that, the next `MPI_<name>` after this one).
fn forward(pmpi_name: &CStr, mpi_name: &CStr) -> *mut c_void {
    if let Some(p) = symbol(pmpi_name) {
        return p;
    }
    // SAFETY: RTLD_NEXT looks after this library; `mpi_name` is NUL-terminated.
    let p = unsafe { libc::dlsym(libc::RTLD_NEXT, mpi_name.as_ptr()) };
    if p.is_null() {
        eprintln!(
            "metron: {} was called but no MPI library defines {} or a next {}; cannot go on",
            mpi_name.to_string_lossy(),
            pmpi_name.to_string_lossy(),
            mpi_name.to_string_lossy()
        );
        std::process::abort();
    }
    p
}

/// `name` in any loaded object, also those outside the global scope (an MPI library that a
/// Python extension loaded with `RTLD_LOCAL`).
fn in_loaded_objects(name: &CStr) -> Option<*mut c_void> {
    let mut paths: Vec<std::ffi::CString> = Vec::new();
    unsafe extern "C" fn each(
        info: *mut libc::dl_phdr_info,
        _size: libc::size_t,
        data: *mut c_void,
    ) -> c_int {
        // SAFETY: dl_iterate_phdr passes a valid info for the call and our `data`, the
        // Vec below.
        unsafe {
            let paths = &mut *data.cast::<Vec<std::ffi::CString>>();
            let name = (*info).dlpi_name;
            if !name.is_null() && *name != 0 {
                paths.push(CStr::from_ptr(name).to_owned());
            }
        }
        0
    }
    // SAFETY: `each` only reads the info it is given and pushes onto `paths`, which outlives
    // the call.
    unsafe { libc::dl_iterate_phdr(Some(each), (&mut paths as *mut Vec<_>).cast()) };
    paths.iter().find_map(|path| {
        // SAFETY: RTLD_NOLOAD only returns a handle to an object already loaded (taking a
        // reference we give back below); `path` and `name` are NUL-terminated.
        unsafe {
            let handle = libc::dlopen(path.as_ptr(), libc::RTLD_NOW | libc::RTLD_NOLOAD);
            if handle.is_null() {
                return None;
            }
            let p = libc::dlsym(handle, name.as_ptr());
            libc::dlclose(handle);
            (!p.is_null()).then_some(p)
        }
    })
}

macro_rules! resolve {
    ($ty:ty, $pmpi:literal, $mpi:literal) => {{
        let p = forward($pmpi, $mpi);
        // SAFETY: the symbol is the MPI function of that name, whose C signature `$ty`
        // states (handles as machine words, see the module docs).
        unsafe { std::mem::transmute::<*mut c_void, $ty>(p) }
    }};
}

fn pmpi() -> &'static Pmpi {
    static PMPI: OnceLock<Pmpi> = OnceLock::new();
    PMPI.get_or_init(|| Pmpi {
        init: resolve!(InitFn, c"PMPI_Init", c"MPI_Init"),
        init_thread: resolve!(InitThreadFn, c"PMPI_Init_thread", c"MPI_Init_thread"),
        finalize: resolve!(FinalizeFn, c"PMPI_Finalize", c"MPI_Finalize"),
        send: resolve!(SendFn, c"PMPI_Send", c"MPI_Send"),
        recv: resolve!(RecvFn, c"PMPI_Recv", c"MPI_Recv"),
        isend: resolve!(IsendFn, c"PMPI_Isend", c"MPI_Isend"),
        irecv: resolve!(RecvFn, c"PMPI_Irecv", c"MPI_Irecv"),
        wait: resolve!(WaitFn, c"PMPI_Wait", c"MPI_Wait"),
        allreduce: resolve!(AllreduceFn, c"PMPI_Allreduce", c"MPI_Allreduce"),
        bcast: resolve!(BcastFn, c"PMPI_Bcast", c"MPI_Bcast"),
        barrier: resolve!(BarrierFn, c"PMPI_Barrier", c"MPI_Barrier"),
        type_size: resolve!(HandleIntFn, c"PMPI_Type_size", c"MPI_Type_size"),
        comm_size: resolve!(HandleIntFn, c"PMPI_Comm_size", c"MPI_Comm_size"),
        comm_rank: resolve!(HandleIntFn, c"PMPI_Comm_rank", c"MPI_Comm_rank"),
        get_count: resolve!(GetCountFn, c"PMPI_Get_count", c"MPI_Get_count"),
        waitall: resolve!(WaitallFn, c"PMPI_Waitall", c"MPI_Waitall"),
        waitany: resolve!(WaitanyFn, c"PMPI_Waitany", c"MPI_Waitany"),
        test: resolve!(TestFn, c"PMPI_Test", c"MPI_Test"),
        testall: resolve!(TestallFn, c"PMPI_Testall", c"MPI_Testall"),
        request_free: resolve!(RequestFreeFn, c"PMPI_Request_free", c"MPI_Request_free"),
    })
}

fn flavor() -> Flavor {
    static FLAVOR: OnceLock<Flavor> = OnceLock::new();
    *FLAVOR.get_or_init(|| {
        if let Some(world) = symbol(c"ompi_mpi_comm_world") {
            if let Some(byte) = symbol(c"ompi_mpi_byte") {
                return Flavor::OpenMpi {
                    comm_world: world as Handle,
                    byte: byte as Handle,
                };
            }
        }
        type Version = unsafe extern "C" fn(*mut c_char, *mut c_int) -> c_int;
        if let Some(p) = symbol(c"PMPI_Get_library_version") {
            // SAFETY: MPI_Get_library_version(char *version, int *resultlen), callable
            // before MPI_Init; the buffer is larger than MPI_MAX_LIBRARY_VERSION_STRING
            // (8192 in MPICH, 256 in Open MPI).
            let text = unsafe {
                let f: Version = std::mem::transmute::<*mut c_void, Version>(p);
                let mut buf = vec![0 as c_char; 16384];
                let mut len: c_int = 0;
                f(buf.as_mut_ptr(), &mut len);
                CStr::from_ptr(buf.as_ptr()).to_string_lossy().into_owned()
            };
            if ["MPICH", "MVAPICH", "Intel(R) MPI", "CRAY MPICH"]
                .iter()
                .any(|m| text.contains(m))
            {
                return Flavor::Mpich;
            }
        }
        Flavor::Unknown
    })
}

/// `METRON_MPI` (default on), read once.
fn recording() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| {
        std::env::var("METRON_MPI")
            .ok()
            .and_then(|v| metron::settings::parse_bool(&v))
            .unwrap_or(true)
    })
}

/// `METRON_MPI_CLOCK_SYNC` (default on), read once.
fn clock_sync() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| {
        std::env::var("METRON_MPI_CLOCK_SYNC")
            .ok()
            .and_then(|v| metron::settings::parse_bool(&v))
            .unwrap_or(true)
    })
}

/// Messages numbered per (source, destination, tag) on `MPI_COMM_WORLD`, sent and received,
/// and receives posted with `MPI_Irecv` not yet completed.
#[derive(Default)]
struct Book {
    sent: HashMap<(c_int, c_int), i64>,
    received: HashMap<(c_int, c_int), i64>,
    pending: HashMap<usize, PendingRecv>,
}

/// MPI calls recorded as regions.
static CALLS: AtomicU64 = AtomicU64::new(0);

#[derive(Clone, Copy)]
struct PendingRecv {
    datatype: Handle,
    comm: Handle,
}

static BOOK: Mutex<Option<Book>> = Mutex::new(None);

fn with_book<T>(f: impl FnOnce(&mut Book) -> T) -> T {
    let mut book = BOOK.lock().unwrap_or_else(|e| e.into_inner());
    f(book.get_or_insert_with(Book::default))
}

/// The world rank and size seen by MPI itself (after `MPI_Init`).
static WORLD: Mutex<Option<(c_int, c_int)>> = Mutex::new(None);

fn int(key: &'static CStr, v: i64) -> Annotation {
    Annotation {
        key: key.as_ptr(),
        kind: crate::annotation_type::INT64,
        reserved: 0,
        value: AnnotationData { int64: v },
    }
}

/// A region named `name` with `notes` around `call`.
fn region<T>(name: &'static CStr, notes: &[Annotation], call: impl FnOnce() -> T) -> T {
    // SAFETY: `name` and every key are static NUL-terminated strings; `notes` is a valid
    // array of `notes.len()` annotations.
    let status = unsafe { metron_push(name.as_ptr(), notes.as_ptr(), notes.len()) };
    CALLS.fetch_add(1, Ordering::Relaxed);
    let result = call();
    if status == crate::errors::OK {
        metron_pop();
    }
    result
}

/// Annotates the innermost open region (the MPI call's) after the call.
fn annotate(key: &'static CStr, v: i64) {
    // SAFETY: `key` is a static NUL-terminated string.
    unsafe { metron_annotate_int64(key.as_ptr(), v) };
}

fn type_bytes(datatype: Handle, count: c_int) -> i64 {
    let mut size: c_int = 0;
    // SAFETY: PMPI_Type_size(datatype, &size) with the caller's datatype.
    let rc = unsafe { (pmpi().type_size)(datatype, &mut size) };
    if rc == 0 {
        i64::from(size) * i64::from(count)
    } else {
        -1
    }
}

fn comm_size(comm: Handle) -> i64 {
    let mut size: c_int = 0;
    // SAFETY: PMPI_Comm_size(comm, &size) with the caller's communicator.
    let rc = unsafe { (pmpi().comm_size)(comm, &mut size) };
    if rc == 0 {
        i64::from(size)
    } else {
        -1
    }
}

fn is_world(comm: Handle) -> bool {
    flavor().comm_world() == Some(comm)
}

/// Annotations of a send to `dest` with `tag` on `comm`.
fn send_notes(bytes: i64, dest: c_int, tag: c_int, comm: Handle) -> ([Annotation; 6], usize) {
    let mut notes = [
        int(c"mpi.bytes", bytes),
        int(c"mpi.peer", i64::from(dest)),
        int(c"mpi.tag", i64::from(tag)),
        int(c"mpi.comm_size", comm_size(comm)),
        int(c"mpi.dest", 0),
        int(c"mpi.msg", 0),
    ];
    if is_world(comm) && dest >= 0 {
        let n = with_book(|b| {
            let n = b.sent.entry((dest, tag)).or_insert(0);
            *n += 1;
            *n
        });
        notes[4] = int(c"mpi.dest", i64::from(dest));
        notes[5] = int(c"mpi.msg", n);
        (notes, 6)
    } else {
        (notes, 4)
    }
}

/// Annotates a completed receive from its status (`status` is the library's, never IGNORE).
fn annotate_received(status: *mut c_void, datatype: Handle, comm: Handle) {
    let f = flavor();
    let Some((source_at, tag_at)) = f.status_offsets() else {
        return;
    };
    // SAFETY: `status` is a status the library just filled; the offsets are those of this
    // implementation's MPI_SOURCE and MPI_TAG (ints).
    let (source, tag) = unsafe {
        (
            *(status.cast::<u8>().add(source_at) as *const c_int),
            *(status.cast::<u8>().add(tag_at) as *const c_int),
        )
    };
    let mut count: c_int = 0;
    // SAFETY: PMPI_Get_count(status, datatype, &count) on the filled status.
    if unsafe { (pmpi().get_count)(status, datatype, &mut count) } == 0 && count >= 0 {
        annotate(c"mpi.bytes", type_bytes(datatype, count));
    }
    annotate(c"mpi.peer", i64::from(source));
    annotate(c"mpi.tag", i64::from(tag));
    annotate(c"mpi.comm_size", comm_size(comm));
    if is_world(comm) && source >= 0 {
        let n = with_book(|b| {
            let n = b.received.entry((source, tag)).or_insert(0);
            *n += 1;
            *n
        });
        annotate(c"mpi.source", i64::from(source));
        annotate(c"mpi.msg", n);
    }
}

/// Space for an `MPI_Status` when the caller passed `MPI_STATUS_IGNORE` (larger than any
/// implementation's).
#[repr(C, align(8))]
struct StatusSpace([u8; 64]);

/// `metadata.json` section `mpi`.
fn metadata_section() -> serde_json::Value {
    let world = *WORLD.lock().unwrap_or_else(|e| e.into_inner());
    serde_json::json!({
        "clock_offset_to_rank0": offsets_json(),
        "interposed": recording(),
        "library": flavor().name(),
        "world_rank": world.map(|w| w.0),
        "world_size": world.map(|w| w.1),
        "calls_recorded": CALLS.load(Ordering::Relaxed),
    })
}

fn after_init() {
    if !recording() {
        return;
    }
    let (mut rank, mut size) = (0, 0);
    if let Some(world) = flavor().comm_world() {
        // SAFETY: MPI is initialized; `world` is this library's MPI_COMM_WORLD.
        let ok = unsafe {
            (pmpi().comm_rank)(world, &mut rank) == 0 && (pmpi().comm_size)(world, &mut size) == 0
        };
        if ok {
            *WORLD.lock().unwrap_or_else(|e| e.into_inner()) = Some((rank, size));
            exchange_clocks(0);
        }
    }
    metron::add_metadata_section("mpi", metadata_section);
}

/// # Safety
/// The MPI standard's contract for `MPI_Init`.
#[no_mangle]
pub unsafe extern "C" fn MPI_Init(argc: *mut c_int, argv: *mut *mut *mut c_char) -> c_int {
    let f = pmpi().init;
    if !recording() {
        // SAFETY: forwarded as received.
        return unsafe { f(argc, argv) };
    }
    // SAFETY: forwarded as received.
    let rc = region(c"MPI_Init", &[], || unsafe { f(argc, argv) });
    after_init();
    rc
}

/// # Safety
/// The MPI standard's contract for `MPI_Init_thread`.
#[no_mangle]
pub unsafe extern "C" fn MPI_Init_thread(
    argc: *mut c_int,
    argv: *mut *mut *mut c_char,
    required: c_int,
    provided: *mut c_int,
) -> c_int {
    let f = pmpi().init_thread;
    if !recording() {
        // SAFETY: forwarded as received.
        return unsafe { f(argc, argv, required, provided) };
    }
    // SAFETY: forwarded as received.
    let rc = region(c"MPI_Init_thread", &[], || unsafe {
        f(argc, argv, required, provided)
    });
    after_init();
    rc
}

/// # Safety
/// The MPI standard's contract for `MPI_Finalize`.
#[no_mangle]
pub unsafe extern "C" fn MPI_Finalize() -> c_int {
    let f = pmpi().finalize;
    if !recording() {
        // SAFETY: no arguments.
        return unsafe { f() };
    }
    exchange_clocks(1);
    // SAFETY: no arguments.
    region(c"MPI_Finalize", &[], || unsafe { f() })
}

/// # Safety
/// The MPI standard's contract for `MPI_Send`.
#[no_mangle]
pub unsafe extern "C" fn MPI_Send(
    buf: *const c_void,
    count: c_int,
    datatype: Handle,
    dest: c_int,
    tag: c_int,
    comm: Handle,
) -> c_int {
    let f = pmpi().send;
    if !recording() {
        // SAFETY: forwarded as received.
        return unsafe { f(buf, count, datatype, dest, tag, comm) };
    }
    let (notes, n) = send_notes(type_bytes(datatype, count), dest, tag, comm);
    // SAFETY: forwarded as received.
    region(c"MPI_Send", &notes[..n], || unsafe {
        f(buf, count, datatype, dest, tag, comm)
    })
}

/// # Safety
/// The MPI standard's contract for `MPI_Isend`.
#[no_mangle]
pub unsafe extern "C" fn MPI_Isend(
    buf: *const c_void,
    count: c_int,
    datatype: Handle,
    dest: c_int,
    tag: c_int,
    comm: Handle,
    request: *mut c_void,
) -> c_int {
    let f = pmpi().isend;
    if !recording() {
        // SAFETY: forwarded as received.
        return unsafe { f(buf, count, datatype, dest, tag, comm, request) };
    }
    let (notes, n) = send_notes(type_bytes(datatype, count), dest, tag, comm);
    // SAFETY: forwarded as received.
    region(c"MPI_Isend", &notes[..n], || unsafe {
        f(buf, count, datatype, dest, tag, comm, request)
    })
}

/// # Safety
/// The MPI standard's contract for `MPI_Recv`.
#[no_mangle]
pub unsafe extern "C" fn MPI_Recv(
    buf: *mut c_void,
    count: c_int,
    datatype: Handle,
    source: c_int,
    tag: c_int,
    comm: Handle,
    status: *mut c_void,
) -> c_int {
    let f = pmpi().recv;
    if !recording() {
        // SAFETY: forwarded as received.
        return unsafe { f(buf, count, datatype, source, tag, comm, status) };
    }
    let mut own = StatusSpace([0; 64]);
    let ignore = flavor().is_status_ignore(status);
    let st = if ignore {
        own.0.as_mut_ptr().cast()
    } else {
        status
    };
    region(c"MPI_Recv", &[], || {
        // SAFETY: forwarded as received, with our own status where the caller ignores it.
        let rc = unsafe { f(buf, count, datatype, source, tag, comm, st) };
        if rc == 0 {
            annotate_received(st, datatype, comm);
        }
        rc
    })
}

/// # Safety
/// The MPI standard's contract for `MPI_Irecv`.
#[no_mangle]
pub unsafe extern "C" fn MPI_Irecv(
    buf: *mut c_void,
    count: c_int,
    datatype: Handle,
    source: c_int,
    tag: c_int,
    comm: Handle,
    request: *mut c_void,
) -> c_int {
    let f = pmpi().irecv;
    if !recording() {
        // SAFETY: forwarded as received.
        return unsafe { f(buf, count, datatype, source, tag, comm, request) };
    }
    let notes = [
        int(c"mpi.bytes_posted", type_bytes(datatype, count)),
        int(c"mpi.peer", i64::from(source)),
        int(c"mpi.tag", i64::from(tag)),
    ];
    region(c"MPI_Irecv", &notes, || {
        // SAFETY: forwarded as received.
        let rc = unsafe { f(buf, count, datatype, source, tag, comm, request) };
        if rc == 0 && !request.is_null() && flavor() != Flavor::Unknown {
            // SAFETY: the library just stored the request handle there.
            let handle = unsafe { flavor().request(request) };
            with_book(|b| b.pending.insert(handle, PendingRecv { datatype, comm }));
        }
        rc
    })
}

/// # Safety
/// The MPI standard's contract for `MPI_Wait`.
#[no_mangle]
pub unsafe extern "C" fn MPI_Wait(request: *mut c_void, status: *mut c_void) -> c_int {
    let f = pmpi().wait;
    if !recording() {
        // SAFETY: forwarded as received.
        return unsafe { f(request, status) };
    }
    let pending = if request.is_null() || flavor() == Flavor::Unknown {
        None
    } else {
        // SAFETY: `request` points to the caller's request handle (read before the wait
        // frees it).
        let handle = unsafe { flavor().request(request) };
        with_book(|b| b.pending.remove(&handle))
    };
    let mut own = StatusSpace([0; 64]);
    let st = if pending.is_some() && flavor().is_status_ignore(status) {
        own.0.as_mut_ptr().cast()
    } else {
        status
    };
    region(c"MPI_Wait", &[], || {
        // SAFETY: forwarded as received, with our own status where the caller ignores it.
        let rc = unsafe { f(request, st) };
        if let (0, Some(p)) = (rc, pending) {
            annotate_received(st, p.datatype, p.comm);
        }
        rc
    })
}

/// # Safety
/// The MPI standard's contract for `MPI_Allreduce`.
#[no_mangle]
pub unsafe extern "C" fn MPI_Allreduce(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: c_int,
    datatype: Handle,
    op: Handle,
    comm: Handle,
) -> c_int {
    let f = pmpi().allreduce;
    if !recording() {
        // SAFETY: forwarded as received.
        return unsafe { f(sendbuf, recvbuf, count, datatype, op, comm) };
    }
    let notes = [
        int(c"mpi.bytes", type_bytes(datatype, count)),
        int(c"mpi.comm_size", comm_size(comm)),
    ];
    // SAFETY: forwarded as received.
    region(c"MPI_Allreduce", &notes, || unsafe {
        f(sendbuf, recvbuf, count, datatype, op, comm)
    })
}

/// # Safety
/// The MPI standard's contract for `MPI_Bcast`.
#[no_mangle]
pub unsafe extern "C" fn MPI_Bcast(
    buffer: *mut c_void,
    count: c_int,
    datatype: Handle,
    root: c_int,
    comm: Handle,
) -> c_int {
    let f = pmpi().bcast;
    if !recording() {
        // SAFETY: forwarded as received.
        return unsafe { f(buffer, count, datatype, root, comm) };
    }
    let notes = [
        int(c"mpi.bytes", type_bytes(datatype, count)),
        int(c"mpi.root", i64::from(root)),
        int(c"mpi.comm_size", comm_size(comm)),
    ];
    // SAFETY: forwarded as received.
    region(c"MPI_Bcast", &notes, || unsafe {
        f(buffer, count, datatype, root, comm)
    })
}

/// # Safety
/// The MPI standard's contract for `MPI_Barrier`.
#[no_mangle]
pub unsafe extern "C" fn MPI_Barrier(comm: Handle) -> c_int {
    let f = pmpi().barrier;
    if !recording() {
        // SAFETY: forwarded as received.
        return unsafe { f(comm) };
    }
    let notes = [int(c"mpi.comm_size", comm_size(comm))];
    // SAFETY: forwarded as received.
    region(c"MPI_Barrier", &notes, || unsafe { f(comm) })
}

/// Forgets the receives posted with `MPI_Irecv` among `count` requests at `requests` (they
/// complete in a call that does not annotate them): their handles may be reused by later
/// requests, which must not be taken for them.
fn forget_requests(requests: *const c_void, count: c_int) {
    let f = flavor();
    if requests.is_null() || f == Flavor::Unknown || count <= 0 {
        return;
    }
    with_book(|b| {
        if b.pending.is_empty() {
            return;
        }
        for i in 0..count as usize {
            // SAFETY: `requests` is the caller's array of `count` requests.
            let handle =
                unsafe { f.request(requests.cast::<u8>().add(i * f.request_size()).cast()) };
            b.pending.remove(&handle);
        }
    });
}

/// # Safety
/// The MPI standard's contract for `MPI_Waitall`.
#[no_mangle]
pub unsafe extern "C" fn MPI_Waitall(
    count: c_int,
    requests: *mut c_void,
    statuses: *mut c_void,
) -> c_int {
    let f = pmpi().waitall;
    if !recording() {
        // SAFETY: forwarded as received.
        return unsafe { f(count, requests, statuses) };
    }
    forget_requests(requests, count);
    let notes = [int(c"mpi.requests", i64::from(count))];
    // SAFETY: forwarded as received.
    region(c"MPI_Waitall", &notes, || unsafe {
        f(count, requests, statuses)
    })
}

/// # Safety
/// The MPI standard's contract for `MPI_Waitany`.
#[no_mangle]
pub unsafe extern "C" fn MPI_Waitany(
    count: c_int,
    requests: *mut c_void,
    index: *mut c_int,
    status: *mut c_void,
) -> c_int {
    let f = pmpi().waitany;
    if !recording() {
        // SAFETY: forwarded as received.
        return unsafe { f(count, requests, index, status) };
    }
    forget_requests(requests, count);
    let notes = [int(c"mpi.requests", i64::from(count))];
    // SAFETY: forwarded as received.
    region(c"MPI_Waitany", &notes, || unsafe {
        f(count, requests, index, status)
    })
}

/// # Safety
/// The MPI standard's contract for `MPI_Test`.
#[no_mangle]
pub unsafe extern "C" fn MPI_Test(
    request: *mut c_void,
    flag: *mut c_int,
    status: *mut c_void,
) -> c_int {
    if recording() {
        forget_requests(request, 1);
    }
    // SAFETY: forwarded as received.
    unsafe { (pmpi().test)(request, flag, status) }
}

/// # Safety
/// The MPI standard's contract for `MPI_Testall`.
#[no_mangle]
pub unsafe extern "C" fn MPI_Testall(
    count: c_int,
    requests: *mut c_void,
    flag: *mut c_int,
    statuses: *mut c_void,
) -> c_int {
    if recording() {
        forget_requests(requests, count);
    }
    // SAFETY: forwarded as received.
    unsafe { (pmpi().testall)(count, requests, flag, statuses) }
}

/// # Safety
/// The MPI standard's contract for `MPI_Request_free`.
#[no_mangle]
pub unsafe extern "C" fn MPI_Request_free(request: *mut c_void) -> c_int {
    if recording() {
        forget_requests(request, 1);
    }
    // SAFETY: forwarded as received.
    unsafe { (pmpi().request_free)(request) }
}
