//! The AQLprofile extension (`hsa_ven_amd_aqlprofile.h`) and the AMD memory-pool calls that
//! counters need: the C types, and every `unsafe` call. Offsets and constants are checked
//! against the real headers by the `gpu_amd_headers` test.

use crate::sys::{DispatchPacket, Handle, Runtime, Status, SUCCESS};
use crate::sys_tables::{AmdExtTable, RawFn};
use std::ffi::c_void;

/// `HSA_EXTENSION_AMD_AQLPROFILE`.
pub const EXTENSION_AMD_AQLPROFILE: u16 = 0x202;
/// `HSA_VEN_AMD_AQLPROFILE_EVENT_TYPE_PMC`.
pub const EVENT_TYPE_PMC: u32 = 0;
/// `HSA_VEN_AMD_AQLPROFILE_INFO_COMMAND_BUFFER_SIZE`.
pub const INFO_COMMAND_BUFFER_SIZE: u32 = 0;
/// `HSA_VEN_AMD_AQLPROFILE_INFO_PMC_DATA_SIZE`.
pub const INFO_PMC_DATA_SIZE: u32 = 1;
/// `HSA_VEN_AMD_AQLPROFILE_INFO_PMC_DATA`.
pub const INFO_PMC_DATA: u32 = 2;
/// `HSA_VEN_AMD_AQLPROFILE_INFO_BLOCK_ID`: a block's id and instance count by name.
pub const INFO_BLOCK_ID: u32 = 5;
/// `HSA_PACKET_HEADER_BARRIER` bit.
pub const PACKET_HEADER_BARRIER: u16 = 8;
/// `HSA_AMD_MEMORY_POOL_INFO_SEGMENT`.
pub const POOL_INFO_SEGMENT: u32 = 0;
/// `HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS`.
pub const POOL_INFO_GLOBAL_FLAGS: u32 = 1;
/// `HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALLOWED`.
pub const POOL_INFO_RUNTIME_ALLOC_ALLOWED: u32 = 5;
/// `HSA_AMD_SEGMENT_GLOBAL`.
pub const SEGMENT_GLOBAL: u32 = 0;
/// `HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_KERNARG_INIT`.
pub const GLOBAL_FLAG_KERNARG_INIT: u32 = 1;
/// `HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_FINE_GRAINED`.
pub const GLOBAL_FLAG_FINE_GRAINED: u32 = 2;

/// The AQLprofile blocks Metron's counter file names (`hsa_ven_amd_aqlprofile_block_name_t`).
pub const BLOCKS: &[(&str, u32)] = &[
    ("CPC", 0),
    ("CPF", 1),
    ("GRBM", 3),
    ("SPI", 5),
    ("SQ", 6),
    ("TA", 10),
    ("TCC", 12),
    ("TCP", 13),
];

/// `hsa_ven_amd_aqlprofile_event_t`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Event {
    pub block_name: u32,
    pub block_index: u32,
    pub counter_id: u32,
}

/// `hsa_ven_amd_aqlprofile_descriptor_t`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct Descriptor {
    pub ptr: *mut c_void,
    pub size: u32,
}

/// `hsa_ven_amd_aqlprofile_profile_t`.
#[repr(C)]
#[derive(Debug)]
pub struct Profile {
    pub agent: Handle,
    pub kind: u32,
    pub events: *const Event,
    pub event_count: u32,
    pub parameters: *const c_void,
    pub parameter_count: u32,
    pub output_buffer: Descriptor,
    pub command_buffer: Descriptor,
}

impl Profile {
    /// A counter (PMC) profile of `agent` over `events`, with no buffers yet (AQLprofile sizes
    /// them through `get_info` before they are made).
    pub fn pmc(agent: Handle, events: &[Event]) -> Profile {
        let none = Descriptor {
            ptr: std::ptr::null_mut(),
            size: 0,
        };
        Profile {
            agent,
            kind: EVENT_TYPE_PMC,
            events: if events.is_empty() {
                std::ptr::null()
            } else {
                events.as_ptr()
            },
            event_count: events.len() as u32,
            parameters: std::ptr::null(),
            parameter_count: 0,
            output_buffer: none,
            command_buffer: none,
        }
    }
}

// SAFETY: a Profile is only used by one dispatch at a time (its counter slot is taken from a
// lock-free queue); the buffers it points at are Metron's, made once and never freed.
unsafe impl Send for Profile {}
// SAFETY: as above: no two threads use one Profile at the same time.
unsafe impl Sync for Profile {}

/// `hsa_ven_amd_aqlprofile_id_query_t`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct IdQuery {
    pub name: *const std::ffi::c_char,
    pub id: u32,
    pub instance_count: u32,
}

/// `hsa_ven_amd_aqlprofile_info_data_t` (the PMC member of its union).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct InfoData {
    pub sample_id: u32,
    /// The union that follows is 8-aligned (its trace member holds a pointer).
    pub _union_align: u32,
    pub event: Event,
    pub result: u64,
}

type DataCallback =
    unsafe extern "C" fn(info_type: u32, data: *mut InfoData, arg: *mut c_void) -> Status;

/// `hsa_ven_amd_aqlprofile_1_00_pfn_t`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct AqlprofileTable {
    pub version_major: RawFn,
    pub version_minor: RawFn,
    pub error_string: Option<unsafe extern "C" fn(text: *mut *const std::ffi::c_char) -> Status>,
    pub validate_event:
        Option<unsafe extern "C" fn(agent: Handle, event: *const Event, ok: *mut bool) -> Status>,
    pub start:
        Option<unsafe extern "C" fn(profile: *mut Profile, packet: *mut DispatchPacket) -> Status>,
    pub stop: Option<
        unsafe extern "C" fn(profile: *const Profile, packet: *mut DispatchPacket) -> Status,
    >,
    pub read: RawFn,
    pub legacy_get_pm4: RawFn,
    pub get_info: Option<
        unsafe extern "C" fn(profile: *const Profile, attribute: u32, value: *mut c_void) -> Status,
    >,
    pub iterate_data: Option<
        unsafe extern "C" fn(
            profile: *const Profile,
            callback: DataCallback,
            data: *mut c_void,
        ) -> Status,
    >,
}

// SAFETY: a table of function pointers the runtime keeps for the process's life.
unsafe impl Send for AqlprofileTable {}
// SAFETY: as above.
unsafe impl Sync for AqlprofileTable {}

type PoolCallback = unsafe extern "C" fn(pool: Handle, data: *mut c_void) -> Status;
type IteratePoolsFn =
    unsafe extern "C" fn(agent: Handle, callback: PoolCallback, data: *mut c_void) -> Status;
type PoolInfoFn = unsafe extern "C" fn(pool: Handle, attribute: u32, value: *mut c_void) -> Status;
type AllocateFn =
    unsafe extern "C" fn(pool: Handle, size: usize, flags: u32, ptr: *mut *mut c_void) -> Status;
type AllowAccessFn = unsafe extern "C" fn(
    count: u32,
    agents: *const Handle,
    flags: *const u32,
    ptr: *const c_void,
) -> Status;

/// The memory-pool entries of the AMD extension table (optional: counters only).
#[derive(Clone, Copy)]
pub struct PoolCalls {
    iterate_pools: IteratePoolsFn,
    pool_info: PoolInfoFn,
    allocate: AllocateFn,
    allow_access: AllowAccessFn,
}

/// Reads the memory-pool entries from the AMD extension table (before Metron replaces
/// anything); `None` if one is missing.
///
/// # Safety
/// `amd` is the runtime's live AMD extension table.
pub unsafe fn read_pool_calls(amd: *const AmdExtTable) -> Option<PoolCalls> {
    // SAFETY: the caller's contract.
    let amd = unsafe { &*amd };
    let filled = amd.version.minor_id as usize;
    let get = |offset: usize, f: RawFn| -> Option<unsafe extern "C" fn()> {
        (offset + std::mem::size_of::<RawFn>() <= filled)
            .then_some(f)
            .flatten()
    };
    use std::mem::offset_of;
    let iterate = get(
        offset_of!(AmdExtTable, hsa_amd_agent_iterate_memory_pools_fn),
        amd.hsa_amd_agent_iterate_memory_pools_fn,
    )?;
    let info = get(
        offset_of!(AmdExtTable, hsa_amd_memory_pool_get_info_fn),
        amd.hsa_amd_memory_pool_get_info_fn,
    )?;
    let allocate = get(
        offset_of!(AmdExtTable, hsa_amd_memory_pool_allocate_fn),
        amd.hsa_amd_memory_pool_allocate_fn,
    )?;
    let allow = get(
        offset_of!(AmdExtTable, hsa_amd_agents_allow_access_fn),
        amd.hsa_amd_agents_allow_access_fn,
    )?;
    // SAFETY: each entry is declared in hsa_api_trace.h with exactly these signatures
    // (hsa_amd_agent_iterate_memory_pools, hsa_amd_memory_pool_get_info,
    // hsa_amd_memory_pool_allocate, hsa_amd_agents_allow_access; checked by gpu_amd_headers).
    unsafe {
        Some(PoolCalls {
            iterate_pools: std::mem::transmute::<unsafe extern "C" fn(), IteratePoolsFn>(iterate),
            pool_info: std::mem::transmute::<unsafe extern "C" fn(), PoolInfoFn>(info),
            allocate: std::mem::transmute::<unsafe extern "C" fn(), AllocateFn>(allocate),
            allow_access: std::mem::transmute::<unsafe extern "C" fn(), AllowAccessFn>(allow),
        })
    }
}

impl PoolCalls {
    /// A buffer of `size` bytes in the host agent's fine-grained (or kernarg) system memory,
    /// which `gpu` may access: where AQLprofile's command and output buffers must live.
    pub fn alloc_system(&self, host: Handle, gpu: Handle, size: usize) -> Option<*mut c_void> {
        struct Find<'a> {
            calls: &'a PoolCalls,
            pool: Option<Handle>,
        }
        unsafe extern "C" fn each(pool: Handle, data: *mut c_void) -> Status {
            // SAFETY: `data` is the Find below, alive for the iteration.
            let find = unsafe { &mut *data.cast::<Find<'_>>() };
            let (mut segment, mut flags, mut alloc) = (u32::MAX, 0u32, false);
            // SAFETY: SEGMENT is hsa_amd_segment_t (32-bit), GLOBAL_FLAGS uint32_t,
            // RUNTIME_ALLOC_ALLOWED bool; valid out-pointers.
            unsafe {
                (find.calls.pool_info)(pool, POOL_INFO_SEGMENT, (&raw mut segment).cast());
                (find.calls.pool_info)(pool, POOL_INFO_GLOBAL_FLAGS, (&raw mut flags).cast());
                (find.calls.pool_info)(
                    pool,
                    POOL_INFO_RUNTIME_ALLOC_ALLOWED,
                    (&raw mut alloc).cast(),
                );
            }
            let fits = flags & (GLOBAL_FLAG_KERNARG_INIT | GLOBAL_FLAG_FINE_GRAINED) != 0;
            if segment == SEGMENT_GLOBAL && fits && alloc {
                find.pool = Some(pool);
                return crate::sys::INFO_BREAK;
            }
            SUCCESS
        }
        let mut find = Find {
            calls: self,
            pool: None,
        };
        // SAFETY: the callback matches the header's and only uses `data` as the Find.
        unsafe { (self.iterate_pools)(host, each, (&raw mut find).cast()) };
        let pool = find.pool?;
        let mut ptr: *mut c_void = std::ptr::null_mut();
        // SAFETY: a pool the runtime listed; valid out-pointer.
        if unsafe { (self.allocate)(pool, size, 0, &mut ptr) } != SUCCESS || ptr.is_null() {
            return None;
        }
        // SAFETY: `ptr` was just allocated from a pool; one agent, no flags.
        if unsafe { (self.allow_access)(1, &gpu, std::ptr::null(), ptr) } != SUCCESS {
            return None;
        }
        Some(ptr)
    }
}

impl Runtime {
    /// The AQLprofile extension's table, when the runtime offers it.
    pub fn aqlprofile(&self) -> Option<AqlprofileTable> {
        let get = self.major_extension_table?;
        let mut table = std::mem::MaybeUninit::<AqlprofileTable>::zeroed();
        // SAFETY: version 1 of the table; its size is passed, so the runtime writes no more;
        // all-zero is a valid AqlprofileTable (no entries).
        let s = unsafe {
            get(
                EXTENSION_AMD_AQLPROFILE,
                1,
                std::mem::size_of::<AqlprofileTable>(),
                table.as_mut_ptr().cast(),
            )
        };
        // SAFETY: zero-initialized, then possibly filled by the runtime: valid either way.
        let table = unsafe { table.assume_init() };
        let complete = table.validate_event.is_some()
            && table.start.is_some()
            && table.stop.is_some()
            && table.get_info.is_some()
            && table.iterate_data.is_some();
        (s == SUCCESS && complete).then_some(table)
    }
}

impl AqlprofileTable {
    /// Whether the agent counts `event`.
    pub fn valid(&self, agent: Handle, event: &Event) -> bool {
        let mut ok = false;
        self.validate_event
            // SAFETY: a valid event and out-pointer.
            .is_some_and(|f| unsafe { f(agent, event, &mut ok) } == SUCCESS)
            && ok
    }

    /// `get_info` for a `u32` attribute of a profile.
    pub fn info_u32(&self, profile: &Profile, attribute: u32) -> Option<u32> {
        let mut v = 0u32;
        // SAFETY: both attributes Metron asks for are uint32_t; `profile` is complete.
        let s = self
            .get_info
            .map(|f| unsafe { f(profile, attribute, (&raw mut v).cast()) })?;
        (s == SUCCESS).then_some(v)
    }

    /// How many instances the agent's block `name` has (`None`: AQLprofile does not say).
    pub fn instances(&self, agent: Handle, name: &str) -> Option<u32> {
        let name = std::ffi::CString::new(name).ok()?;
        let profile = Profile::pmc(agent, &[]);
        let mut query = IdQuery {
            name: name.as_ptr(),
            id: 0,
            instance_count: 0,
        };
        // SAFETY: BLOCK_ID reads the query's name (a live C string) and writes its id and
        // instance count; the profile only names the agent.
        let s = self
            .get_info
            .map(|f| unsafe { f(&profile, INFO_BLOCK_ID, (&raw mut query).cast()) })?;
        (s == SUCCESS && query.instance_count > 0).then_some(query.instance_count)
    }

    /// The start and stop packets of a profile (its buffers set).
    pub fn packets(&self, profile: &mut Profile) -> Option<(DispatchPacket, DispatchPacket)> {
        let (start, stop) = (self.start?, self.stop?);
        let mut a = DispatchPacket::default();
        let mut b = DispatchPacket::default();
        // SAFETY: a complete profile whose buffers are allocated; out-packets of 64 bytes
        // (hsa_ext_amd_aql_pm4_packet_t has the AQL packet size).
        let ok = unsafe { start(profile, &mut a) == SUCCESS && stop(profile, &mut b) == SUCCESS };
        ok.then_some((a, b))
    }

    /// Sums each event's results (over instances and samples) into `values` (by position in
    /// `events`). False if the runtime refused.
    pub fn read(&self, profile: &Profile, events: &[Event], values: &mut [u64]) -> bool {
        struct Acc<'a> {
            events: &'a [Event],
            values: &'a mut [u64],
        }
        unsafe extern "C" fn each(info_type: u32, data: *mut InfoData, arg: *mut c_void) -> Status {
            if info_type != INFO_PMC_DATA || data.is_null() {
                return SUCCESS;
            }
            // SAFETY: `arg` is the Acc below; `data` is the runtime's record for this call.
            let (acc, data) = unsafe { (&mut *arg.cast::<Acc<'_>>(), &*data) };
            if let Some(i) = acc.events.iter().position(|e| *e == data.event) {
                acc.values[i] = acc.values[i].wrapping_add(data.result);
            }
            SUCCESS
        }
        let Some(iterate) = self.iterate_data else {
            return false;
        };
        values.iter_mut().for_each(|v| *v = 0);
        let mut acc = Acc { events, values };
        // SAFETY: a profile whose stop packet completed; the callback only uses `arg` as Acc.
        unsafe { iterate(profile, each, (&raw mut acc).cast()) == SUCCESS }
    }
}

/// `(“C.field”, offset)` of the structs above, for the header check.
pub fn layouts() -> Vec<(&'static str, usize)> {
    use std::mem::{offset_of, size_of};
    vec![
        ("sizeof hsa_ven_amd_aqlprofile_event_t", size_of::<Event>()),
        (
            "hsa_ven_amd_aqlprofile_event_t.counter_id",
            offset_of!(Event, counter_id),
        ),
        (
            "sizeof hsa_ven_amd_aqlprofile_profile_t",
            size_of::<Profile>(),
        ),
        (
            "hsa_ven_amd_aqlprofile_profile_t.type",
            offset_of!(Profile, kind),
        ),
        (
            "hsa_ven_amd_aqlprofile_profile_t.events",
            offset_of!(Profile, events),
        ),
        (
            "hsa_ven_amd_aqlprofile_profile_t.event_count",
            offset_of!(Profile, event_count),
        ),
        (
            "hsa_ven_amd_aqlprofile_profile_t.parameters",
            offset_of!(Profile, parameters),
        ),
        (
            "hsa_ven_amd_aqlprofile_profile_t.output_buffer",
            offset_of!(Profile, output_buffer),
        ),
        (
            "hsa_ven_amd_aqlprofile_profile_t.command_buffer",
            offset_of!(Profile, command_buffer),
        ),
        (
            "sizeof hsa_ven_amd_aqlprofile_descriptor_t",
            size_of::<Descriptor>(),
        ),
        (
            "hsa_ven_amd_aqlprofile_descriptor_t.size",
            offset_of!(Descriptor, size),
        ),
        (
            "sizeof hsa_ext_amd_aql_pm4_packet_t",
            size_of::<DispatchPacket>(),
        ),
        (
            "hsa_ven_amd_aqlprofile_info_data_t.pmc_data.event",
            offset_of!(InfoData, event),
        ),
        (
            "sizeof hsa_ven_amd_aqlprofile_id_query_t",
            size_of::<IdQuery>(),
        ),
        (
            "hsa_ven_amd_aqlprofile_id_query_t.instance_count",
            offset_of!(IdQuery, instance_count),
        ),
        (
            "hsa_ven_amd_aqlprofile_info_data_t.pmc_data.result",
            offset_of!(InfoData, result),
        ),
        (
            "sizeof hsa_ven_amd_aqlprofile_1_00_pfn_t",
            size_of::<AqlprofileTable>(),
        ),
        (
            "hsa_ven_amd_aqlprofile_1_00_pfn_t.hsa_ven_amd_aqlprofile_validate_event",
            offset_of!(AqlprofileTable, validate_event),
        ),
        (
            "hsa_ven_amd_aqlprofile_1_00_pfn_t.hsa_ven_amd_aqlprofile_start",
            offset_of!(AqlprofileTable, start),
        ),
        (
            "hsa_ven_amd_aqlprofile_1_00_pfn_t.hsa_ven_amd_aqlprofile_get_info",
            offset_of!(AqlprofileTable, get_info),
        ),
        (
            "hsa_ven_amd_aqlprofile_1_00_pfn_t.hsa_ven_amd_aqlprofile_iterate_data",
            offset_of!(AqlprofileTable, iterate_data),
        ),
    ]
}

/// `("NAME", value)` of the constants above, for the header check.
pub fn constants() -> Vec<(&'static str, u64)> {
    let mut all = vec![
        (
            "HSA_EXTENSION_AMD_AQLPROFILE",
            u64::from(EXTENSION_AMD_AQLPROFILE),
        ),
        (
            "HSA_VEN_AMD_AQLPROFILE_EVENT_TYPE_PMC",
            u64::from(EVENT_TYPE_PMC),
        ),
        (
            "HSA_VEN_AMD_AQLPROFILE_INFO_COMMAND_BUFFER_SIZE",
            u64::from(INFO_COMMAND_BUFFER_SIZE),
        ),
        (
            "HSA_VEN_AMD_AQLPROFILE_INFO_PMC_DATA_SIZE",
            u64::from(INFO_PMC_DATA_SIZE),
        ),
        (
            "HSA_VEN_AMD_AQLPROFILE_INFO_PMC_DATA",
            u64::from(INFO_PMC_DATA),
        ),
        (
            "HSA_VEN_AMD_AQLPROFILE_INFO_BLOCK_ID",
            u64::from(INFO_BLOCK_ID),
        ),
        (
            "HSA_PACKET_HEADER_BARRIER",
            u64::from(PACKET_HEADER_BARRIER),
        ),
        (
            "HSA_AMD_MEMORY_POOL_INFO_SEGMENT",
            u64::from(POOL_INFO_SEGMENT),
        ),
        (
            "HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS",
            u64::from(POOL_INFO_GLOBAL_FLAGS),
        ),
        (
            "HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALLOWED",
            u64::from(POOL_INFO_RUNTIME_ALLOC_ALLOWED),
        ),
        ("HSA_AMD_SEGMENT_GLOBAL", u64::from(SEGMENT_GLOBAL)),
        (
            "HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_KERNARG_INIT",
            u64::from(GLOBAL_FLAG_KERNARG_INIT),
        ),
        (
            "HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_FINE_GRAINED",
            u64::from(GLOBAL_FLAG_FINE_GRAINED),
        ),
    ];
    for (name, id) in BLOCKS {
        let c = match *name {
            "CPC" => "HSA_VEN_AMD_AQLPROFILE_BLOCK_NAME_CPC",
            "CPF" => "HSA_VEN_AMD_AQLPROFILE_BLOCK_NAME_CPF",
            "GRBM" => "HSA_VEN_AMD_AQLPROFILE_BLOCK_NAME_GRBM",
            "SPI" => "HSA_VEN_AMD_AQLPROFILE_BLOCK_NAME_SPI",
            "SQ" => "HSA_VEN_AMD_AQLPROFILE_BLOCK_NAME_SQ",
            "TA" => "HSA_VEN_AMD_AQLPROFILE_BLOCK_NAME_TA",
            "TCC" => "HSA_VEN_AMD_AQLPROFILE_BLOCK_NAME_TCC",
            _ => "HSA_VEN_AMD_AQLPROFILE_BLOCK_NAME_TCP",
        };
        all.push((c, u64::from(*id)));
    }
    all
}
