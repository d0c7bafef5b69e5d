//! The CUPTI PC Sampling API (`cupti_pcsampling.h`, CUPTI 13) as Metron calls it: the
//! parameter structs, the sample-buffer layouts it reads, the resource-callback data (module
//! cubins, contexts) and the function table resolved from libcupti. Layouts are checked
//! against the headers by `tests/gpu_headers.rs` where the headers exist.
//!
//! `CUpti_PCSamplingPCData` and `CUpti_PCSamplingData` are `PACKED_ALIGNMENT` (packed, 8-byte
//! aligned): every field is naturally aligned, so `repr(C)` gives the same offsets.

use crate::sys::struct_size;
use crate::sys::{sym, Cupti, CuptiResult};
use std::ffi::{c_char, c_void};

/// `CUPTI_CB_DOMAIN_RESOURCE`.
pub const DOMAIN_RESOURCE: i32 = 3;
/// `CUPTI_CBID_RESOURCE_CONTEXT_CREATED`.
pub const CBID_CONTEXT_CREATED: u32 = 1;
/// `CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING`.
pub const CBID_CONTEXT_DESTROY_STARTING: u32 = 2;
/// `CUPTI_CBID_RESOURCE_MODULE_LOADED`.
pub const CBID_MODULE_LOADED: u32 = 6;
/// `CUPTI_CBID_RESOURCE_MODULE_UNLOAD_STARTING`.
pub const CBID_MODULE_UNLOAD_STARTING: u32 = 7;

/// `CUPTI_STALL_REASON_STRING_SIZE`.
pub const STALL_REASON_STRING_SIZE: usize = 128;

/// `CUpti_PCSamplingCollectionMode`.
pub mod mode {
    /// `CUPTI_PC_SAMPLING_COLLECTION_MODE_CONTINUOUS`.
    pub const CONTINUOUS: u32 = 1;
    /// `CUPTI_PC_SAMPLING_COLLECTION_MODE_KERNEL_SERIALIZED`.
    pub const KERNEL_SERIALIZED: u32 = 2;
}

/// `CUpti_PCSamplingConfigurationAttributeType`.
pub mod attr {
    /// `..._SAMPLING_PERIOD` (`samplingPeriodData.samplingPeriod`, u32).
    pub const SAMPLING_PERIOD: i32 = 1;
    /// `..._STALL_REASON` (`stallReasonData`: count, index array).
    pub const STALL_REASON: i32 = 2;
    /// `..._SCRATCH_BUFFER_SIZE` (size_t).
    pub const SCRATCH_BUFFER_SIZE: i32 = 3;
    /// `..._COLLECTION_MODE` (u32).
    pub const COLLECTION_MODE: i32 = 5;
    /// `..._OUTPUT_DATA_FORMAT` (u32; 1 = PARSED).
    pub const OUTPUT_DATA_FORMAT: i32 = 7;
    /// `..._SAMPLING_DATA_BUFFER` (pointer to a `CUpti_PCSamplingData`).
    pub const SAMPLING_DATA_BUFFER: i32 = 8;
}

/// `CUpti_PCSamplingStallReason` (8 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StallReason {
    /// `pcSamplingStallReasonIndex`.
    pub index: u32,
    /// `samples`.
    pub samples: u32,
}

/// `CUpti_PCSamplingPCData` (64 bytes): one PC and its samples per stall reason.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct PcData {
    /// `size`.
    pub size: usize,
    /// `cubinCrc`.
    pub cubin_crc: u64,
    /// `pcOffset` (from the function's start; equals nvdisasm's per-function offset).
    pub pc_offset: u64,
    /// `functionIndex`.
    pub function_index: u32,
    /// `pad`.
    pub pad: u32,
    /// `functionName`: malloc'ed by CUPTI, the caller frees it.
    pub function_name: *mut c_char,
    /// `stallReasonCount`: entries CUPTI wrote into `stall_reason`.
    pub stall_reason_count: usize,
    /// `stallReason`: caller-allocated, one entry per configured reason.
    pub stall_reason: *mut StallReason,
    /// `correlationId` (the launch's, kernel-serialized mode; 0 in continuous mode).
    pub correlation_id: u32,
}

/// `CUpti_PCSamplingData` (80 bytes): a buffer of PC records.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct SamplingData {
    /// `size`.
    pub size: usize,
    /// `collectNumPcs`: capacity of `p_pc_data`.
    pub collect_num_pcs: usize,
    /// `totalSamples`.
    pub total_samples: u64,
    /// `droppedSamples`.
    pub dropped_samples: u64,
    /// `totalNumPcs`: records written.
    pub total_num_pcs: usize,
    /// `remainingNumPcs`: records CUPTI still holds.
    pub remaining_num_pcs: usize,
    /// `rangeId`.
    pub range_id: u64,
    /// `pPcData`.
    pub p_pc_data: *mut PcData,
    /// `nonUsrKernelsTotalSamples`.
    pub non_usr_kernels_total_samples: u64,
    /// `hardwareBufferFull`.
    pub hardware_buffer_full: u8,
}

/// `CUpti_PCSamplingConfigurationInfo` (32 bytes): the type, the status CUPTI writes back,
/// and the attribute's union as three words.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct ConfigInfo {
    /// `attributeType`.
    pub attribute_type: i32,
    /// `attributeStatus`.
    pub attribute_status: CuptiResult,
    /// `attributeData` (union of at most 24 bytes).
    pub data: [u64; 3],
}

impl ConfigInfo {
    /// An attribute whose value is one integer (u32 or size_t, little endian: the first word).
    pub fn word(attribute_type: i32, value: u64) -> ConfigInfo {
        ConfigInfo {
            attribute_type,
            attribute_status: 0,
            data: [value, 0, 0],
        }
    }
}

/// `CUpti_PCSamplingConfigurationInfoParams`.
#[repr(C)]
pub struct ConfigInfoParams {
    /// `size`.
    pub size: usize,
    /// `pPriv`.
    pub p_priv: *mut c_void,
    /// `ctx`.
    pub ctx: *mut c_void,
    /// `numAttributes`.
    pub num_attributes: usize,
    /// `pPCSamplingConfigurationInfo`.
    pub info: *mut ConfigInfo,
}

/// `CUpti_PCSamplingEnableParams`, `...DisableParams`, `...StartParams`, `...StopParams`
/// (same layout: size, pPriv, ctx).
#[repr(C)]
pub struct CtxParams {
    /// `size`.
    pub size: usize,
    /// `pPriv`.
    pub p_priv: *mut c_void,
    /// `ctx`.
    pub ctx: *mut c_void,
}

/// `CUpti_PCSamplingGetDataParams`.
#[repr(C)]
pub struct GetDataParams {
    /// `size`.
    pub size: usize,
    /// `pPriv`.
    pub p_priv: *mut c_void,
    /// `ctx`.
    pub ctx: *mut c_void,
    /// `pcSamplingData`.
    pub data: *mut c_void,
}

/// `CUpti_PCSamplingGetNumStallReasonsParams`.
#[repr(C)]
pub struct NumStallReasonsParams {
    /// `size`.
    pub size: usize,
    /// `pPriv`.
    pub p_priv: *mut c_void,
    /// `ctx`.
    pub ctx: *mut c_void,
    /// `numStallReasons`.
    pub num: *mut usize,
}

/// `CUpti_PCSamplingGetStallReasonsParams`.
#[repr(C)]
pub struct StallReasonsParams {
    /// `size`.
    pub size: usize,
    /// `pPriv`.
    pub p_priv: *mut c_void,
    /// `ctx`.
    pub ctx: *mut c_void,
    /// `numStallReasons`.
    pub num: usize,
    /// `stallReasonIndex`.
    pub index: *mut u32,
    /// `stallReasons`: `num` caller-allocated buffers of [`STALL_REASON_STRING_SIZE`].
    pub names: *mut *mut c_char,
}

/// `CUpti_GetSassToSourceCorrelationParams`.
#[repr(C)]
pub struct SassToSourceParams {
    /// `size`.
    pub size: usize,
    /// `cubin`.
    pub cubin: *const c_void,
    /// `functionName`.
    pub function_name: *const c_char,
    /// `cubinSize`.
    pub cubin_size: usize,
    /// `lineNumber`.
    pub line_number: u32,
    /// `pcOffset`.
    pub pc_offset: u64,
    /// `fileName` (malloc'ed by CUPTI, the caller frees it).
    pub file_name: *mut c_char,
    /// `dirName` (malloc'ed by CUPTI, the caller frees it).
    pub dir_name: *mut c_char,
}

/// `CUpti_GetCubinCrcParams`.
#[repr(C)]
pub struct CubinCrcParams {
    /// `size`.
    pub size: usize,
    /// `cubinSize`.
    pub cubin_size: usize,
    /// `cubin`.
    pub cubin: *const c_void,
    /// `cubinCrc`.
    pub cubin_crc: u64,
}

/// `CUpti_ResourceData` (resource-domain callback data).
#[repr(C)]
pub struct ResourceData {
    /// `context`.
    pub context: *mut c_void,
    /// `resourceHandle` (a stream).
    pub resource_handle: *mut c_void,
    /// `resourceDescriptor` (a `CUpti_ModuleResourceData` for module callbacks).
    pub resource_descriptor: *mut c_void,
}

/// `CUpti_ModuleResourceData`.
#[repr(C)]
pub struct ModuleResourceData {
    /// `moduleId`.
    pub module_id: u32,
    /// `cubinSize`.
    pub cubin_size: usize,
    /// `pCubin`.
    pub cubin: *const c_char,
}

/// `CUpti_PCSamplingConfigurationInfoParamsSize`.
pub const CONFIG_INFO_PARAMS_SIZE: usize = struct_size!(ConfigInfoParams, info);
/// `CUpti_PCSamplingEnableParamsSize` (and Disable/Start/Stop).
pub const CTX_PARAMS_SIZE: usize = struct_size!(CtxParams, ctx);
/// `CUpti_PCSamplingGetDataParamsSize`.
pub const GET_DATA_PARAMS_SIZE: usize = struct_size!(GetDataParams, data);
/// `CUpti_PCSamplingGetNumStallReasonsParamsSize`.
pub const NUM_STALL_REASONS_PARAMS_SIZE: usize = struct_size!(NumStallReasonsParams, num);
/// `CUpti_PCSamplingGetStallReasonsParamsSize`.
pub const STALL_REASONS_PARAMS_SIZE: usize = struct_size!(StallReasonsParams, names);
/// `CUpti_GetSassToSourceCorrelationParamsSize`.
pub const SASS_TO_SOURCE_PARAMS_SIZE: usize = struct_size!(SassToSourceParams, dir_name);
/// `CUpti_GetCubinCrcParamsSize`.
pub const CUBIN_CRC_PARAMS_SIZE: usize = struct_size!(CubinCrcParams, cubin_crc);

type P<T> = unsafe extern "C" fn(*mut T) -> CuptiResult;

/// The PC Sampling functions, resolved from the same libcupti as [`Cupti`].
#[derive(Clone, Copy)]
pub struct PcSamplingApi {
    /// `cuptiPCSamplingEnable`.
    pub enable: P<CtxParams>,
    /// `cuptiPCSamplingDisable`.
    pub disable: P<CtxParams>,
    /// `cuptiPCSamplingGetData`.
    pub get_data: P<GetDataParams>,
    /// `cuptiPCSamplingSetConfigurationAttribute`.
    pub set_config: P<ConfigInfoParams>,
    /// `cuptiPCSamplingGetNumStallReasons`.
    pub num_stall_reasons: P<NumStallReasonsParams>,
    /// `cuptiPCSamplingGetStallReasons`.
    pub stall_reasons: P<StallReasonsParams>,
    /// `cuptiGetSassToSourceCorrelation`.
    pub sass_to_source: P<SassToSourceParams>,
    /// `cuptiGetCubinCrc`.
    pub cubin_crc: P<CubinCrcParams>,
}

impl PcSamplingApi {
    /// Resolves the functions from a libcupti handle.
    pub fn load(handle: *mut c_void) -> Result<PcSamplingApi, String> {
        // SAFETY: each type is the C signature in cupti_pcsampling.h (one pointer to the
        // params struct, CUptiResult back); the handle is a libcupti dlopen never closed.
        unsafe {
            Ok(PcSamplingApi {
                enable: sym(handle, "cuptiPCSamplingEnable")?,
                disable: sym(handle, "cuptiPCSamplingDisable")?,
                get_data: sym(handle, "cuptiPCSamplingGetData")?,
                set_config: sym(handle, "cuptiPCSamplingSetConfigurationAttribute")?,
                num_stall_reasons: sym(handle, "cuptiPCSamplingGetNumStallReasons")?,
                stall_reasons: sym(handle, "cuptiPCSamplingGetStallReasons")?,
                sass_to_source: sym(handle, "cuptiGetSassToSourceCorrelation")?,
                cubin_crc: sym(handle, "cuptiGetCubinCrc")?,
            })
        }
    }

    /// `cuptiPCSamplingEnable`/`Disable` on `ctx`.
    pub fn ctx_call(
        &self,
        cupti: &Cupti,
        what: &str,
        f: P<CtxParams>,
        ctx: *mut c_void,
    ) -> Result<(), String> {
        let mut p = CtxParams {
            size: CTX_PARAMS_SIZE,
            p_priv: std::ptr::null_mut(),
            ctx,
        };
        // SAFETY: a params struct of the declared size with a context CUPTI handed us.
        cupti.check(what, unsafe { f(&mut p) })
    }

    /// The device's stall reasons on `ctx` (after [`Self::enable`]): `(index, name)`.
    pub fn stall_reason_names(
        &self,
        cupti: &Cupti,
        ctx: *mut c_void,
    ) -> Result<Vec<(u32, String)>, String> {
        let mut n = 0usize;
        let mut p = NumStallReasonsParams {
            size: NUM_STALL_REASONS_PARAMS_SIZE,
            p_priv: std::ptr::null_mut(),
            ctx,
            num: &mut n,
        };
        // SAFETY: params of the declared size; `num` points at a live usize.
        cupti.check("cuptiPCSamplingGetNumStallReasons", unsafe {
            (self.num_stall_reasons)(&mut p)
        })?;
        let mut index = vec![0u32; n];
        let mut storage = vec![[0 as c_char; STALL_REASON_STRING_SIZE]; n];
        let mut names: Vec<*mut c_char> = storage.iter_mut().map(|b| b.as_mut_ptr()).collect();
        let mut q = StallReasonsParams {
            size: STALL_REASONS_PARAMS_SIZE,
            p_priv: std::ptr::null_mut(),
            ctx,
            num: n,
            index: index.as_mut_ptr(),
            names: names.as_mut_ptr(),
        };
        // SAFETY: `n` indices and `n` buffers of STALL_REASON_STRING_SIZE bytes, all live
        // until the call returns.
        cupti.check("cuptiPCSamplingGetStallReasons", unsafe {
            (self.stall_reasons)(&mut q)
        })?;
        Ok(index
            .iter()
            .zip(&storage)
            .map(|(&i, b)| {
                let bytes: Vec<u8> = b
                    .iter()
                    .take_while(|&&c| c != 0)
                    .map(|&c| c as u8)
                    .collect();
                (i, String::from_utf8_lossy(&bytes).into_owned())
            })
            .collect())
    }

    /// `cuptiGetCubinCrc` of a cubin image.
    pub fn crc(&self, cubin: &[u8]) -> Option<u64> {
        let mut p = CubinCrcParams {
            size: CUBIN_CRC_PARAMS_SIZE,
            cubin_size: cubin.len(),
            cubin: cubin.as_ptr().cast(),
            cubin_crc: 0,
        };
        // SAFETY: the cubin slice is live for the call; params of the declared size.
        (unsafe { (self.cubin_crc)(&mut p) } == crate::sys::CUPTI_SUCCESS).then_some(p.cubin_crc)
    }

    /// `cuptiGetSassToSourceCorrelation`: `(dir, file, line)` of `pc_offset` in `function`
    /// (mangled) of `cubin`; `None` without line information.
    pub fn source_line(
        &self,
        cubin: &[u8],
        function: &std::ffi::CStr,
        pc_offset: u64,
    ) -> Option<(String, String, u32)> {
        let mut p = SassToSourceParams {
            size: SASS_TO_SOURCE_PARAMS_SIZE,
            cubin: cubin.as_ptr().cast(),
            function_name: function.as_ptr(),
            cubin_size: cubin.len(),
            line_number: 0,
            pc_offset,
            file_name: std::ptr::null_mut(),
            dir_name: std::ptr::null_mut(),
        };
        // SAFETY: cubin and name are live for the call; params of the declared size.
        let r = unsafe { (self.sass_to_source)(&mut p) };
        // SAFETY: CUPTI malloc'ed the strings (or left them null); copied, then freed once.
        let take = |s: *mut c_char| unsafe {
            let out = crate::sys::c_str(s);
            if !s.is_null() {
                libc::free(s.cast());
            }
            out
        };
        let file = take(p.file_name);
        let dir = take(p.dir_name);
        (r == crate::sys::CUPTI_SUCCESS && p.line_number > 0 && !file.is_empty()).then_some((
            dir,
            file,
            p.line_number,
        ))
    }
}

/// `[("CStruct.field", offset), ...]` of fields of one struct.
macro_rules! offsets {
    ($c:literal, $t:ty { $($f:ident: $n:literal),* $(,)? }) => {
        [$((concat!($c, ".", $n), std::mem::offset_of!($t, $f))),*]
    };
}

/// `("CStruct.field", offset)`, `("sizeof CStruct", size)` and `("PARAMS_SIZE CStruct",
/// CStructSize)` of the PC Sampling layouts, for checking against `cupti_pcsampling.h`.
pub fn layouts() -> Vec<(&'static str, usize)> {
    use std::mem::size_of;
    let mut out = vec![
        (
            "sizeof CUpti_PCSamplingStallReason",
            size_of::<StallReason>(),
        ),
        ("sizeof CUpti_PCSamplingPCData", size_of::<PcData>()),
        ("sizeof CUpti_PCSamplingData", size_of::<SamplingData>()),
        (
            "sizeof CUpti_PCSamplingConfigurationInfo",
            size_of::<ConfigInfo>(),
        ),
        ("sizeof CUpti_ResourceData", size_of::<ResourceData>()),
        (
            "PARAMS_SIZE CUpti_PCSamplingConfigurationInfoParams",
            CONFIG_INFO_PARAMS_SIZE,
        ),
        ("PARAMS_SIZE CUpti_PCSamplingEnableParams", CTX_PARAMS_SIZE),
        ("PARAMS_SIZE CUpti_PCSamplingDisableParams", CTX_PARAMS_SIZE),
        ("PARAMS_SIZE CUpti_PCSamplingStartParams", CTX_PARAMS_SIZE),
        ("PARAMS_SIZE CUpti_PCSamplingStopParams", CTX_PARAMS_SIZE),
        (
            "PARAMS_SIZE CUpti_PCSamplingGetDataParams",
            GET_DATA_PARAMS_SIZE,
        ),
        (
            "PARAMS_SIZE CUpti_PCSamplingGetNumStallReasonsParams",
            NUM_STALL_REASONS_PARAMS_SIZE,
        ),
        (
            "PARAMS_SIZE CUpti_PCSamplingGetStallReasonsParams",
            STALL_REASONS_PARAMS_SIZE,
        ),
        (
            "PARAMS_SIZE CUpti_GetSassToSourceCorrelationParams",
            SASS_TO_SOURCE_PARAMS_SIZE,
        ),
        ("PARAMS_SIZE CUpti_GetCubinCrcParams", CUBIN_CRC_PARAMS_SIZE),
    ];
    out.extend(offsets!(
        "CUpti_PCSamplingPCData",
        PcData {
            cubin_crc: "cubinCrc",
            pc_offset: "pcOffset",
            function_index: "functionIndex",
            function_name: "functionName",
            stall_reason_count: "stallReasonCount",
            stall_reason: "stallReason",
            correlation_id: "correlationId",
        }
    ));
    out.extend(offsets!(
        "CUpti_PCSamplingData",
        SamplingData {
            collect_num_pcs: "collectNumPcs",
            total_samples: "totalSamples",
            dropped_samples: "droppedSamples",
            total_num_pcs: "totalNumPcs",
            remaining_num_pcs: "remainingNumPcs",
            range_id: "rangeId",
            p_pc_data: "pPcData",
            non_usr_kernels_total_samples: "nonUsrKernelsTotalSamples",
            hardware_buffer_full: "hardwareBufferFull",
        }
    ));
    out.extend(offsets!(
        "CUpti_PCSamplingConfigurationInfo",
        ConfigInfo {
            attribute_status: "attributeStatus",
            data: "attributeData",
        }
    ));
    out.extend(offsets!(
        "CUpti_PCSamplingConfigurationInfoParams",
        ConfigInfoParams {
            ctx: "ctx",
            info: "pPCSamplingConfigurationInfo",
        }
    ));
    out.extend(offsets!(
        "CUpti_PCSamplingEnableParams",
        CtxParams { ctx: "ctx" }
    ));
    out.extend(offsets!(
        "CUpti_PCSamplingGetDataParams",
        GetDataParams {
            data: "pcSamplingData",
        }
    ));
    out.extend(offsets!(
        "CUpti_PCSamplingGetStallReasonsParams",
        StallReasonsParams {
            index: "stallReasonIndex",
        }
    ));
    out.extend(offsets!(
        "CUpti_GetSassToSourceCorrelationParams",
        SassToSourceParams {
            line_number: "lineNumber",
            pc_offset: "pcOffset",
            file_name: "fileName",
        }
    ));
    out.extend(offsets!(
        "CUpti_GetCubinCrcParams",
        CubinCrcParams {
            cubin: "cubin",
            cubin_crc: "cubinCrc",
        }
    ));
    out.extend(offsets!(
        "CUpti_ResourceData",
        ResourceData {
            resource_descriptor: "resourceDescriptor",
        }
    ));
    out.extend(offsets!(
        "CUpti_ModuleResourceData",
        ModuleResourceData {
            cubin_size: "cubinSize",
            cubin: "pCubin",
        }
    ));
    out
}
