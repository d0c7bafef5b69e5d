//! Everything unsafe about the CUPTI Range Profiler (`cupti_range_profiler.h`,
//! `cupti_profiler_host.h`, `cupti_profiler_target.h`, `cupti_target.h`, CUDA 13): the
//! parameter structs, written by hand from the headers (checked by `tests/gpu_headers.rs`),
//! the functions resolved from libcupti, and safe wrappers that return `Err(text)` with
//! CUPTI's own words for the error.
//!
//! Every parameter struct starts with `structSize` (the header's `*_STRUCT_SIZE`: the offset of
//! the last field plus its size, [`Params::SIZE`]) and `pPriv` (null).

use crate::sys::{sym, Cupti, CuptiResult, CUPTI_SUCCESS};
use std::ffi::{c_char, c_void, CStr, CString};

/// `CUPTI_PROFILER_STRUCT_SIZE(type, lastfield)`.
macro_rules! struct_size {
    ($t:ty, $f:ident) => {{
        // The size of the field, through a function of the field's type (no value needed).
        const fn size_of_field<T, F>(_: fn(&T) -> &F) -> usize {
            std::mem::size_of::<F>()
        }
        std::mem::offset_of!($t, $f) + size_of_field::<$t, _>(|s: &$t| &s.$f)
    }};
}

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

/// `CUPTI_PROFILER_TYPE_RANGE_PROFILER`.
pub const RANGE_PROFILER: i32 = 0;
/// `CUPTI_AutoRange`.
pub const AUTO_RANGE: i32 = 1;
/// `CUPTI_UserRange`.
pub const USER_RANGE: i32 = 2;
/// `CUPTI_KernelReplay`.
pub const KERNEL_REPLAY: i32 = 2;
/// `CUPTI_UserReplay`.
pub const USER_REPLAY: i32 = 3;

/// `CUpti_Profiler_Initialize_Params`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct InitializeParams {
    /// `structSize`.
    pub struct_size: usize,
    /// `pPriv`.
    pub priv_: *mut c_void,
}

impl Params for InitializeParams {
    const SIZE: usize = struct_size!(InitializeParams, priv_);
}

/// `CUpti_Profiler_DeInitialize_Params`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct DeInitializeParams {
    /// `structSize`.
    pub struct_size: usize,
    /// `pPriv`.
    pub priv_: *mut c_void,
}

impl Params for DeInitializeParams {
    const SIZE: usize = struct_size!(DeInitializeParams, priv_);
}

/// `CUpti_Device_GetChipName_Params`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct GetChipNameParams {
    /// `structSize`.
    pub struct_size: usize,
    /// `pPriv`.
    pub priv_: *mut c_void,
    /// `deviceIndex`.
    pub device_index: usize,
    /// `pChipName`.
    pub chip_name: *const c_char,
}

impl Params for GetChipNameParams {
    const SIZE: usize = struct_size!(GetChipNameParams, chip_name);
}

/// `CUpti_Profiler_GetCounterAvailability_Params`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct GetCounterAvailabilityParams {
    /// `structSize`.
    pub struct_size: usize,
    /// `pPriv`.
    pub priv_: *mut c_void,
    /// `ctx`.
    pub ctx: *mut c_void,
    /// `counterAvailabilityImageSize`.
    pub image_size: usize,
    /// `pCounterAvailabilityImage`.
    pub image: *mut u8,
}

impl Params for GetCounterAvailabilityParams {
    const SIZE: usize = struct_size!(GetCounterAvailabilityParams, image);
}

/// `CUpti_Profiler_Host_Initialize_Params`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct HostInitializeParams {
    /// `structSize`.
    pub struct_size: usize,
    /// `pPriv`.
    pub priv_: *mut c_void,
    /// `profilerType`.
    pub profiler_type: i32,
    /// `pChipName`.
    pub chip_name: *const c_char,
    /// `pCounterAvailabilityImage`.
    pub availability: *const u8,
    /// `pHostObject`.
    pub host: *mut c_void,
}

impl Params for HostInitializeParams {
    const SIZE: usize = struct_size!(HostInitializeParams, host);
}

/// `CUpti_Profiler_Host_Deinitialize_Params`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct HostDeinitializeParams {
    /// `structSize`.
    pub struct_size: usize,
    /// `pPriv`.
    pub priv_: *mut c_void,
    /// `pHostObject`.
    pub host: *mut c_void,
}

impl Params for HostDeinitializeParams {
    const SIZE: usize = struct_size!(HostDeinitializeParams, host);
}

/// `CUpti_Profiler_Host_GetMetricProperties_Params`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct HostGetMetricPropertiesParams {
    /// `structSize`.
    pub struct_size: usize,
    /// `pPriv`.
    pub priv_: *mut c_void,
    /// `pHostObject`.
    pub host: *mut c_void,
    /// `pMetricName`.
    pub metric_name: *const c_char,
    /// `pDescription`.
    pub description: *const c_char,
    /// `pHwUnit`.
    pub hw_unit: *const c_char,
    /// `pDimUnit`.
    pub dim_unit: *const c_char,
    /// `metricType`.
    pub metric_type: i32,
}

impl Params for HostGetMetricPropertiesParams {
    const SIZE: usize = struct_size!(HostGetMetricPropertiesParams, metric_type);
}

/// `CUpti_Profiler_Host_ConfigAddMetrics_Params`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct HostConfigAddMetricsParams {
    /// `structSize`.
    pub struct_size: usize,
    /// `pPriv`.
    pub priv_: *mut c_void,
    /// `pHostObject`.
    pub host: *mut c_void,
    /// `ppMetricNames`.
    pub metric_names: *const *const c_char,
    /// `numMetrics`.
    pub num_metrics: usize,
}

impl Params for HostConfigAddMetricsParams {
    const SIZE: usize = struct_size!(HostConfigAddMetricsParams, num_metrics);
}

/// `CUpti_Profiler_Host_GetConfigImageSize_Params`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct HostGetConfigImageSizeParams {
    /// `structSize`.
    pub struct_size: usize,
    /// `pPriv`.
    pub priv_: *mut c_void,
    /// `pHostObject`.
    pub host: *mut c_void,
    /// `configImageSize`.
    pub config_image_size: usize,
}

impl Params for HostGetConfigImageSizeParams {
    const SIZE: usize = struct_size!(HostGetConfigImageSizeParams, config_image_size);
}

/// `CUpti_Profiler_Host_GetConfigImage_Params`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct HostGetConfigImageParams {
    /// `structSize`.
    pub struct_size: usize,
    /// `pPriv`.
    pub priv_: *mut c_void,
    /// `pHostObject`.
    pub host: *mut c_void,
    /// `configImageSize`.
    pub config_image_size: usize,
    /// `pConfigImage`.
    pub config_image: *mut u8,
}

impl Params for HostGetConfigImageParams {
    const SIZE: usize = struct_size!(HostGetConfigImageParams, config_image);
}

/// `CUpti_Profiler_Host_GetNumOfPasses_Params`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct HostGetNumOfPassesParams {
    /// `structSize`.
    pub struct_size: usize,
    /// `pPriv`.
    pub priv_: *mut c_void,
    /// `configImageSize`.
    pub config_image_size: usize,
    /// `pConfigImage`.
    pub config_image: *mut u8,
    /// `numOfPasses`.
    pub num_passes: usize,
}

impl Params for HostGetNumOfPassesParams {
    const SIZE: usize = struct_size!(HostGetNumOfPassesParams, num_passes);
}

/// `CUpti_Profiler_Host_EvaluateToGpuValues_Params`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct HostEvaluateToGpuValuesParams {
    /// `structSize`.
    pub struct_size: usize,
    /// `pPriv`.
    pub priv_: *mut c_void,
    /// `pHostObject`.
    pub host: *mut c_void,
    /// `pCounterDataImage`.
    pub counter_data: *const u8,
    /// `counterDataImageSize`.
    pub counter_data_size: usize,
    /// `rangeIndex`.
    pub range_index: usize,
    /// `ppMetricNames`.
    pub metric_names: *const *const c_char,
    /// `numMetrics`.
    pub num_metrics: usize,
    /// `pMetricValues`.
    pub values: *mut f64,
}

impl Params for HostEvaluateToGpuValuesParams {
    const SIZE: usize = struct_size!(HostEvaluateToGpuValuesParams, values);
}

/// `CUpti_RangeProfiler_Enable_Params`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct EnableParams {
    /// `structSize`.
    pub struct_size: usize,
    /// `pPriv`.
    pub priv_: *mut c_void,
    /// `ctx`.
    pub ctx: *mut c_void,
    /// `pRangeProfilerObject`.
    pub object: *mut c_void,
}

impl Params for EnableParams {
    const SIZE: usize = struct_size!(EnableParams, object);
}

/// `CUpti_RangeProfiler_Disable_Params`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct DisableParams {
    /// `structSize`.
    pub struct_size: usize,
    /// `pPriv`.
    pub priv_: *mut c_void,
    /// `pRangeProfilerObject`.
    pub object: *mut c_void,
}

impl Params for DisableParams {
    const SIZE: usize = struct_size!(DisableParams, object);
}

/// `CUpti_RangeProfiler_SetConfig_Params`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct SetConfigParams {
    /// `structSize`.
    pub struct_size: usize,
    /// `pPriv`.
    pub priv_: *mut c_void,
    /// `pRangeProfilerObject`.
    pub object: *mut c_void,
    /// `configSize`.
    pub config_size: usize,
    /// `pConfig`.
    pub config: *const u8,
    /// `counterDataImageSize`.
    pub counter_data_size: usize,
    /// `pCounterDataImage`.
    pub counter_data: *mut u8,
    /// `range`.
    pub range: i32,
    /// `replayMode`.
    pub replay_mode: i32,
    /// `maxRangesPerPass`.
    pub max_ranges_per_pass: usize,
    /// `numNestingLevels`.
    pub num_nesting_levels: u16,
    /// `minNestingLevel`.
    pub min_nesting_level: u16,
    /// `passIndex`.
    pub pass_index: usize,
    /// `targetNestingLevel`.
    pub target_nesting_level: u16,
}

impl Params for SetConfigParams {
    const SIZE: usize = struct_size!(SetConfigParams, target_nesting_level);
}

/// `CUpti_RangeProfiler_Start_Params`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct StartParams {
    /// `structSize`.
    pub struct_size: usize,
    /// `pPriv`.
    pub priv_: *mut c_void,
    /// `pRangeProfilerObject`.
    pub object: *mut c_void,
}

impl Params for StartParams {
    const SIZE: usize = struct_size!(StartParams, object);
}

/// `CUpti_RangeProfiler_Stop_Params`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct StopParams {
    /// `structSize`.
    pub struct_size: usize,
    /// `pPriv`.
    pub priv_: *mut c_void,
    /// `pRangeProfilerObject`.
    pub object: *mut c_void,
    /// `passIndex`.
    pub pass_index: usize,
    /// `targetNestingLevel`.
    pub target_nesting_level: usize,
    /// `isAllPassSubmitted`.
    pub is_all_pass_submitted: u8,
}

impl Params for StopParams {
    const SIZE: usize = struct_size!(StopParams, is_all_pass_submitted);
}

/// `CUpti_RangeProfiler_PushRange_Params`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct PushRangeParams {
    /// `structSize`.
    pub struct_size: usize,
    /// `pPriv`.
    pub priv_: *mut c_void,
    /// `pRangeProfilerObject`.
    pub object: *mut c_void,
    /// `pRangeName`.
    pub range_name: *const c_char,
}

impl Params for PushRangeParams {
    const SIZE: usize = struct_size!(PushRangeParams, range_name);
}

/// `CUpti_RangeProfiler_PopRange_Params`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct PopRangeParams {
    /// `structSize`.
    pub struct_size: usize,
    /// `pPriv`.
    pub priv_: *mut c_void,
    /// `pRangeProfilerObject`.
    pub object: *mut c_void,
}

impl Params for PopRangeParams {
    const SIZE: usize = struct_size!(PopRangeParams, object);
}

/// `CUpti_RangeProfiler_DecodeData_Params`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct DecodeDataParams {
    /// `structSize`.
    pub struct_size: usize,
    /// `pPriv`.
    pub priv_: *mut c_void,
    /// `pRangeProfilerObject`.
    pub object: *mut c_void,
    /// `numOfRangeDropped`.
    pub num_ranges_dropped: usize,
}

impl Params for DecodeDataParams {
    const SIZE: usize = struct_size!(DecodeDataParams, num_ranges_dropped);
}

/// `CUpti_RangeProfiler_GetCounterDataSize_Params`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct GetCounterDataSizeParams {
    /// `structSize`.
    pub struct_size: usize,
    /// `pPriv`.
    pub priv_: *mut c_void,
    /// `pRangeProfilerObject`.
    pub object: *mut c_void,
    /// `pMetricNames`.
    pub metric_names: *const *const c_char,
    /// `numMetrics`.
    pub num_metrics: usize,
    /// `maxNumOfRanges`.
    pub max_ranges: usize,
    /// `maxNumRangeTreeNodes`.
    pub max_range_tree_nodes: u32,
    /// `counterDataSize`.
    pub counter_data_size: usize,
}

impl Params for GetCounterDataSizeParams {
    const SIZE: usize = struct_size!(GetCounterDataSizeParams, counter_data_size);
}

/// `CUpti_RangeProfiler_CounterDataImage_Initialize_Params`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct CounterDataImageInitializeParams {
    /// `structSize`.
    pub struct_size: usize,
    /// `pPriv`.
    pub priv_: *mut c_void,
    /// `pRangeProfilerObject`.
    pub object: *mut c_void,
    /// `counterDataSize`.
    pub counter_data_size: usize,
    /// `pCounterData`.
    pub counter_data: *mut u8,
}

impl Params for CounterDataImageInitializeParams {
    const SIZE: usize = struct_size!(CounterDataImageInitializeParams, counter_data);
}

/// `CUpti_RangeProfiler_GetCounterDataInfo_Params`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct GetCounterDataInfoParams {
    /// `structSize`.
    pub struct_size: usize,
    /// `pPriv`.
    pub priv_: *mut c_void,
    /// `pCounterDataImage`.
    pub counter_data: *const u8,
    /// `counterDataImageSize`.
    pub counter_data_size: usize,
    /// `numTotalRanges`.
    pub num_total_ranges: usize,
}

impl Params for GetCounterDataInfoParams {
    const SIZE: usize = struct_size!(GetCounterDataInfoParams, num_total_ranges);
}

/// `CUpti_RangeProfiler_CounterData_GetRangeInfo_Params`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct GetRangeInfoParams {
    /// `structSize`.
    pub struct_size: usize,
    /// `pPriv`.
    pub priv_: *mut c_void,
    /// `pCounterDataImage`.
    pub counter_data: *const u8,
    /// `counterDataImageSize`.
    pub counter_data_size: usize,
    /// `rangeIndex`.
    pub range_index: usize,
    /// `rangeDelimiter`.
    pub range_delimiter: *const c_char,
    /// `rangeName`.
    pub range_name: *const c_char,
}

impl Params for GetRangeInfoParams {
    const SIZE: usize = struct_size!(GetRangeInfoParams, range_name);
}

/// `CUpti_Profiler_Host_GetBaseMetrics_Params`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct HostGetBaseMetricsParams {
    /// `structSize`.
    pub struct_size: usize,
    /// `pPriv`.
    pub priv_: *mut c_void,
    /// `pHostObject`.
    pub host: *mut c_void,
    /// `metricType`.
    pub metric_type: i32,
    /// `ppMetricNames`.
    pub metric_names: *mut *const c_char,
    /// `numMetrics`.
    pub num_metrics: usize,
}

impl Params for HostGetBaseMetricsParams {
    const SIZE: usize = struct_size!(HostGetBaseMetricsParams, num_metrics);
}

/// `CUpti_Profiler_Host_GetSubMetrics_Params`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct HostGetSubMetricsParams {
    /// `structSize`.
    pub struct_size: usize,
    /// `pPriv`.
    pub priv_: *mut c_void,
    /// `pHostObject`.
    pub host: *mut c_void,
    /// `metricType`.
    pub metric_type: i32,
    /// `pMetricName`.
    pub metric_name: *const c_char,
    /// `numOfSubmetrics`.
    pub num_sub_metrics: usize,
    /// `ppSubMetrics`.
    pub sub_metrics: *mut *const c_char,
}

impl Params for HostGetSubMetricsParams {
    const SIZE: usize = struct_size!(HostGetSubMetricsParams, sub_metrics);
}

/// Properties of one metric (`cuptiProfilerHostGetMetricProperties`).
#[derive(Clone, Debug, Default)]
pub struct MetricProperties {
    /// `pDescription`.
    pub description: String,
    /// `pHwUnit`.
    pub hw_unit: String,
    /// `pDimUnit`.
    pub dim_unit: String,
    /// `metricType`.
    pub metric_type: i32,
}

/// Copies a CUPTI-owned C string (null: empty).
fn owned(p: *const c_char) -> String {
    if p.is_null() {
        return String::new();
    }
    // SAFETY: non-null pointers CUPTI returns in parameter structs are NUL-terminated strings
    // owned by CUPTI (the host object), valid at least until the next call; copied at once.
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

/// The Range Profiler and profiler-host functions of libcupti.
#[derive(Clone, Copy)]
pub struct Profiler {
    /// `cuptiProfilerInitialize`.
    pub profiler_initialize: unsafe extern "C" fn(*mut InitializeParams) -> CuptiResult,
    /// `cuptiProfilerDeInitialize`.
    pub profiler_deinitialize: unsafe extern "C" fn(*mut DeInitializeParams) -> CuptiResult,
    /// `cuptiDeviceGetChipName`.
    pub device_get_chip_name: unsafe extern "C" fn(*mut GetChipNameParams) -> CuptiResult,
    /// `cuptiProfilerGetCounterAvailability`.
    pub get_counter_availability:
        unsafe extern "C" fn(*mut GetCounterAvailabilityParams) -> CuptiResult,
    /// `cuptiProfilerHostInitialize`.
    pub host_initialize: unsafe extern "C" fn(*mut HostInitializeParams) -> CuptiResult,
    /// `cuptiProfilerHostDeinitialize`.
    pub host_deinitialize: unsafe extern "C" fn(*mut HostDeinitializeParams) -> CuptiResult,
    /// `cuptiProfilerHostGetMetricProperties`.
    pub host_get_metric_properties:
        unsafe extern "C" fn(*mut HostGetMetricPropertiesParams) -> CuptiResult,
    /// `cuptiProfilerHostGetBaseMetrics`.
    pub host_get_base_metrics: unsafe extern "C" fn(*mut HostGetBaseMetricsParams) -> CuptiResult,
    /// `cuptiProfilerHostGetSubMetrics`.
    pub host_get_sub_metrics: unsafe extern "C" fn(*mut HostGetSubMetricsParams) -> CuptiResult,
    /// `cuptiProfilerHostConfigAddMetrics`.
    pub host_config_add_metrics:
        unsafe extern "C" fn(*mut HostConfigAddMetricsParams) -> CuptiResult,
    /// `cuptiProfilerHostGetConfigImageSize`.
    pub host_get_config_image_size:
        unsafe extern "C" fn(*mut HostGetConfigImageSizeParams) -> CuptiResult,
    /// `cuptiProfilerHostGetConfigImage`.
    pub host_get_config_image: unsafe extern "C" fn(*mut HostGetConfigImageParams) -> CuptiResult,
    /// `cuptiProfilerHostGetNumOfPasses`.
    pub host_get_num_of_passes: unsafe extern "C" fn(*mut HostGetNumOfPassesParams) -> CuptiResult,
    /// `cuptiProfilerHostEvaluateToGpuValues`.
    pub host_evaluate_to_gpu_values:
        unsafe extern "C" fn(*mut HostEvaluateToGpuValuesParams) -> CuptiResult,
    /// `cuptiRangeProfilerEnable`.
    pub enable: unsafe extern "C" fn(*mut EnableParams) -> CuptiResult,
    /// `cuptiRangeProfilerDisable`.
    pub disable: unsafe extern "C" fn(*mut DisableParams) -> CuptiResult,
    /// `cuptiRangeProfilerSetConfig`.
    pub set_config: unsafe extern "C" fn(*mut SetConfigParams) -> CuptiResult,
    /// `cuptiRangeProfilerStart`.
    pub start: unsafe extern "C" fn(*mut StartParams) -> CuptiResult,
    /// `cuptiRangeProfilerStop`.
    pub stop: unsafe extern "C" fn(*mut StopParams) -> CuptiResult,
    /// `cuptiRangeProfilerPushRange`.
    pub push_range: unsafe extern "C" fn(*mut PushRangeParams) -> CuptiResult,
    /// `cuptiRangeProfilerPopRange`.
    pub pop_range: unsafe extern "C" fn(*mut PopRangeParams) -> CuptiResult,
    /// `cuptiRangeProfilerDecodeData`.
    pub decode_data: unsafe extern "C" fn(*mut DecodeDataParams) -> CuptiResult,
    /// `cuptiRangeProfilerGetCounterDataSize`.
    pub get_counter_data_size: unsafe extern "C" fn(*mut GetCounterDataSizeParams) -> CuptiResult,
    /// `cuptiRangeProfilerCounterDataImageInitialize`.
    pub counter_data_image_initialize:
        unsafe extern "C" fn(*mut CounterDataImageInitializeParams) -> CuptiResult,
    /// `cuptiRangeProfilerGetCounterDataInfo`.
    pub get_counter_data_info: unsafe extern "C" fn(*mut GetCounterDataInfoParams) -> CuptiResult,
    /// `cuptiRangeProfilerCounterDataGetRangeInfo`.
    pub get_range_info: unsafe extern "C" fn(*mut GetRangeInfoParams) -> CuptiResult,
}

/// Calls `f(&mut params)` and checks its result.
fn call<P>(
    what: &str,
    f: unsafe extern "C" fn(*mut P) -> CuptiResult,
    cupti: &Cupti,
    p: &mut P,
) -> Result<(), String> {
    // SAFETY: `p` is a valid, initialized parameter struct of the type `f` takes (the types
    // are tied by the Profiler field declarations); pointers inside it are set by the caller to
    // buffers that outlive the call.
    let r = unsafe { f(p) };
    if r == CUPTI_SUCCESS {
        Ok(())
    } else {
        Err(format!("{what} failed: {}", cupti.result_string(r)))
    }
}

/// Metric names as C strings, with the pointer array CUPTI takes.
pub struct Names {
    _owned: Vec<CString>,
    ptrs: Vec<*const c_char>,
}

// SAFETY: the pointers point into `_owned`, which moves with them and is never mutated.
unsafe impl Send for Names {}

impl Names {
    /// From metric names (a name with a NUL is an error).
    pub fn new(names: &[String]) -> Result<Names, String> {
        let owned = names
            .iter()
            .map(|n| CString::new(n.as_str()).map_err(|_| format!("metric {n:?}: NUL in name")))
            .collect::<Result<Vec<_>, _>>()?;
        let ptrs = owned.iter().map(|c| c.as_ptr()).collect();
        Ok(Names {
            _owned: owned,
            ptrs,
        })
    }

    /// The number of names.
    pub fn len(&self) -> usize {
        self.ptrs.len()
    }

    /// True when there are none.
    pub fn is_empty(&self) -> bool {
        self.ptrs.is_empty()
    }
}

/// An opaque CUPTI object (host object or range profiler object).
#[derive(Clone, Copy, Debug)]
pub struct Object(*mut c_void);

// SAFETY: CUPTI's objects are handles used under Metron's counter lock, never concurrently.
unsafe impl Send for Object {}

impl Profiler {
    /// Resolves the functions from a libcupti handle.
    pub fn load(handle: *mut c_void) -> Result<Profiler, String> {
        // SAFETY: each type is the C signature in the CUPTI 13 headers (one parameter-struct
        // pointer, CUptiResult); the handle is a libcupti dlopen that is never closed.
        unsafe {
            Ok(Profiler {
                profiler_initialize: sym(handle, "cuptiProfilerInitialize")?,
                profiler_deinitialize: sym(handle, "cuptiProfilerDeInitialize")?,
                device_get_chip_name: sym(handle, "cuptiDeviceGetChipName")?,
                get_counter_availability: sym(handle, "cuptiProfilerGetCounterAvailability")?,
                host_initialize: sym(handle, "cuptiProfilerHostInitialize")?,
                host_deinitialize: sym(handle, "cuptiProfilerHostDeinitialize")?,
                host_get_metric_properties: sym(handle, "cuptiProfilerHostGetMetricProperties")?,
                host_get_base_metrics: sym(handle, "cuptiProfilerHostGetBaseMetrics")?,
                host_get_sub_metrics: sym(handle, "cuptiProfilerHostGetSubMetrics")?,
                host_config_add_metrics: sym(handle, "cuptiProfilerHostConfigAddMetrics")?,
                host_get_config_image_size: sym(handle, "cuptiProfilerHostGetConfigImageSize")?,
                host_get_config_image: sym(handle, "cuptiProfilerHostGetConfigImage")?,
                host_get_num_of_passes: sym(handle, "cuptiProfilerHostGetNumOfPasses")?,
                host_evaluate_to_gpu_values: sym(handle, "cuptiProfilerHostEvaluateToGpuValues")?,
                enable: sym(handle, "cuptiRangeProfilerEnable")?,
                disable: sym(handle, "cuptiRangeProfilerDisable")?,
                set_config: sym(handle, "cuptiRangeProfilerSetConfig")?,
                start: sym(handle, "cuptiRangeProfilerStart")?,
                stop: sym(handle, "cuptiRangeProfilerStop")?,
                push_range: sym(handle, "cuptiRangeProfilerPushRange")?,
                pop_range: sym(handle, "cuptiRangeProfilerPopRange")?,
                decode_data: sym(handle, "cuptiRangeProfilerDecodeData")?,
                get_counter_data_size: sym(handle, "cuptiRangeProfilerGetCounterDataSize")?,
                counter_data_image_initialize: sym(
                    handle,
                    "cuptiRangeProfilerCounterDataImageInitialize",
                )?,
                get_counter_data_info: sym(handle, "cuptiRangeProfilerGetCounterDataInfo")?,
                get_range_info: sym(handle, "cuptiRangeProfilerCounterDataGetRangeInfo")?,
            })
        }
    }

    /// `cuptiProfilerInitialize`.
    pub fn initialize(&self, c: &Cupti) -> Result<(), String> {
        let mut p = InitializeParams::new();
        call(
            "cuptiProfilerInitialize",
            self.profiler_initialize,
            c,
            &mut p,
        )
    }

    /// `cuptiProfilerDeInitialize`.
    pub fn deinitialize(&self, c: &Cupti) -> Result<(), String> {
        let mut p = DeInitializeParams::new();
        call(
            "cuptiProfilerDeInitialize",
            self.profiler_deinitialize,
            c,
            &mut p,
        )
    }

    /// `cuptiDeviceGetChipName(device)` (e.g. `GH100`).
    pub fn chip_name(&self, c: &Cupti, device: usize) -> Result<String, String> {
        let mut p = GetChipNameParams::new();
        p.device_index = device;
        call(
            "cuptiDeviceGetChipName",
            self.device_get_chip_name,
            c,
            &mut p,
        )?;
        if p.chip_name.is_null() {
            return Err("cuptiDeviceGetChipName returned no name".into());
        }
        // SAFETY: CUPTI returned a NUL-terminated static string.
        Ok(unsafe { CStr::from_ptr(p.chip_name) }
            .to_string_lossy()
            .into_owned())
    }

    /// `cuptiProfilerGetCounterAvailability` of `ctx` (size, then image).
    pub fn counter_availability(&self, c: &Cupti, ctx: *mut c_void) -> Result<Vec<u8>, String> {
        let mut p = GetCounterAvailabilityParams::new();
        p.ctx = ctx;
        call(
            "cuptiProfilerGetCounterAvailability",
            self.get_counter_availability,
            c,
            &mut p,
        )?;
        let mut image = vec![0u8; p.image_size];
        p.image = image.as_mut_ptr();
        call(
            "cuptiProfilerGetCounterAvailability",
            self.get_counter_availability,
            c,
            &mut p,
        )?;
        Ok(image)
    }

    /// `cuptiProfilerHostInitialize(RANGE_PROFILER, chip, availability)`.
    /// `chip` and `availability` must outlive the host object: CUPTI may keep the pointers (as
    /// PM sampling's host object does, where freeing them made decoding fail on the H100).
    pub fn host_init(&self, c: &Cupti, chip: &CStr, availability: &[u8]) -> Result<Object, String> {
        let mut p = HostInitializeParams::new();
        p.profiler_type = RANGE_PROFILER;
        p.chip_name = chip.as_ptr();
        p.availability = availability.as_ptr();
        call(
            "cuptiProfilerHostInitialize",
            self.host_initialize,
            c,
            &mut p,
        )?;
        Ok(Object(p.host))
    }

    /// `cuptiProfilerHostDeinitialize`.
    pub fn host_deinit(&self, c: &Cupti, host: Object) -> Result<(), String> {
        let mut p = HostDeinitializeParams::new();
        p.host = host.0;
        call(
            "cuptiProfilerHostDeinitialize",
            self.host_deinitialize,
            c,
            &mut p,
        )
    }

    /// `cuptiProfilerHostGetBaseMetrics(metric_type)`: the base metric names.
    pub fn base_metrics(
        &self,
        c: &Cupti,
        host: Object,
        metric_type: i32,
    ) -> Result<Vec<String>, String> {
        let mut p = HostGetBaseMetricsParams::new();
        p.host = host.0;
        p.metric_type = metric_type;
        call(
            "cuptiProfilerHostGetBaseMetrics",
            self.host_get_base_metrics,
            c,
            &mut p,
        )?;
        Ok(strings(p.metric_names, p.num_metrics))
    }

    /// `cuptiProfilerHostGetSubMetrics(metric_type, name)`: the submetric suffixes.
    pub fn sub_metrics(
        &self,
        c: &Cupti,
        host: Object,
        metric_type: i32,
        name: &str,
    ) -> Result<Vec<String>, String> {
        let n = CString::new(name).map_err(|_| format!("metric {name:?}: NUL in name"))?;
        let mut p = HostGetSubMetricsParams::new();
        p.host = host.0;
        p.metric_type = metric_type;
        p.metric_name = n.as_ptr();
        call(
            "cuptiProfilerHostGetSubMetrics",
            self.host_get_sub_metrics,
            c,
            &mut p,
        )?;
        Ok(strings(p.sub_metrics, p.num_sub_metrics))
    }

    /// `cuptiProfilerHostGetMetricProperties`: description, units and type of `name`.
    pub fn metric_properties(
        &self,
        c: &Cupti,
        host: Object,
        name: &str,
    ) -> Result<MetricProperties, String> {
        let n = CString::new(name).map_err(|_| format!("metric {name:?}: NUL in name"))?;
        let mut p = HostGetMetricPropertiesParams::new();
        p.host = host.0;
        p.metric_name = n.as_ptr();
        call(
            &format!("cuptiProfilerHostGetMetricProperties({name})"),
            self.host_get_metric_properties,
            c,
            &mut p,
        )?;
        Ok(MetricProperties {
            description: owned(p.description),
            hw_unit: owned(p.hw_unit),
            dim_unit: owned(p.dim_unit),
            metric_type: p.metric_type,
        })
    }

    /// `cuptiProfilerHostGetMetricProperties`: `Ok(description)` when the metric exists.
    pub fn metric_description(
        &self,
        c: &Cupti,
        host: Object,
        name: &str,
    ) -> Result<String, String> {
        let n = CString::new(name).map_err(|_| format!("metric {name:?}: NUL in name"))?;
        let mut p = HostGetMetricPropertiesParams::new();
        p.host = host.0;
        p.metric_name = n.as_ptr();
        call(
            &format!("cuptiProfilerHostGetMetricProperties({name})"),
            self.host_get_metric_properties,
            c,
            &mut p,
        )?;
        if p.description.is_null() {
            return Ok(String::new());
        }
        // SAFETY: CUPTI returned a NUL-terminated string owned by the host object.
        Ok(unsafe { CStr::from_ptr(p.description) }
            .to_string_lossy()
            .into_owned())
    }

    /// `ConfigAddMetrics`, `GetConfigImageSize`, `GetConfigImage`: the config image.
    pub fn config_image(&self, c: &Cupti, host: Object, names: &Names) -> Result<Vec<u8>, String> {
        let mut p = HostConfigAddMetricsParams::new();
        p.host = host.0;
        p.metric_names = names.ptrs.as_ptr();
        p.num_metrics = names.len();
        call(
            "cuptiProfilerHostConfigAddMetrics",
            self.host_config_add_metrics,
            c,
            &mut p,
        )?;
        let mut s = HostGetConfigImageSizeParams::new();
        s.host = host.0;
        call(
            "cuptiProfilerHostGetConfigImageSize",
            self.host_get_config_image_size,
            c,
            &mut s,
        )?;
        let mut image = vec![0u8; s.config_image_size];
        let mut g = HostGetConfigImageParams::new();
        g.host = host.0;
        g.config_image_size = image.len();
        g.config_image = image.as_mut_ptr();
        call(
            "cuptiProfilerHostGetConfigImage",
            self.host_get_config_image,
            c,
            &mut g,
        )?;
        Ok(image)
    }

    /// `cuptiProfilerHostGetNumOfPasses` of a config image.
    pub fn num_passes(&self, c: &Cupti, config: &mut [u8]) -> Result<usize, String> {
        let mut p = HostGetNumOfPassesParams::new();
        p.config_image_size = config.len();
        p.config_image = config.as_mut_ptr();
        call(
            "cuptiProfilerHostGetNumOfPasses",
            self.host_get_num_of_passes,
            c,
            &mut p,
        )?;
        Ok(p.num_passes)
    }

    /// `cuptiRangeProfilerEnable(ctx)`.
    pub fn enable_on(&self, c: &Cupti, ctx: *mut c_void) -> Result<Object, String> {
        let mut p = EnableParams::new();
        p.ctx = ctx;
        call("cuptiRangeProfilerEnable", self.enable, c, &mut p)?;
        Ok(Object(p.object))
    }

    /// `cuptiRangeProfilerDisable`.
    pub fn disable_on(&self, c: &Cupti, object: Object) -> Result<(), String> {
        let mut p = DisableParams::new();
        p.object = object.0;
        call("cuptiRangeProfilerDisable", self.disable, c, &mut p)
    }

    /// `cuptiRangeProfilerGetCounterDataSize` for `max_ranges` ranges.
    pub fn counter_data_size(
        &self,
        c: &Cupti,
        object: Object,
        names: &Names,
        max_ranges: usize,
    ) -> Result<usize, String> {
        let mut p = GetCounterDataSizeParams::new();
        p.object = object.0;
        p.metric_names = names.ptrs.as_ptr();
        p.num_metrics = names.len();
        p.max_ranges = max_ranges;
        p.max_range_tree_nodes = max_ranges as u32;
        call(
            "cuptiRangeProfilerGetCounterDataSize",
            self.get_counter_data_size,
            c,
            &mut p,
        )?;
        Ok(p.counter_data_size)
    }

    /// `cuptiRangeProfilerCounterDataImageInitialize` of `image`.
    pub fn counter_data_init(
        &self,
        c: &Cupti,
        object: Object,
        image: &mut [u8],
    ) -> Result<(), String> {
        let mut p = CounterDataImageInitializeParams::new();
        p.object = object.0;
        p.counter_data_size = image.len();
        p.counter_data = image.as_mut_ptr();
        call(
            "cuptiRangeProfilerCounterDataImageInitialize",
            self.counter_data_image_initialize,
            c,
            &mut p,
        )
    }

    /// `cuptiRangeProfilerSetConfig`: `range` and `replay` as in the header, one nesting level,
    /// pass 0. CUPTI keeps the pointers: `config` and `image` must live until the profiler is
    /// disabled (the caller keeps them in its state).
    #[allow(clippy::too_many_arguments)]
    pub fn set_config_on(
        &self,
        c: &Cupti,
        object: Object,
        config: &[u8],
        image: &mut [u8],
        range: i32,
        replay: i32,
        max_ranges: usize,
    ) -> Result<(), String> {
        let mut p = SetConfigParams::new();
        p.object = object.0;
        p.config_size = config.len();
        p.config = config.as_ptr();
        p.counter_data_size = image.len();
        p.counter_data = image.as_mut_ptr();
        p.range = range;
        p.replay_mode = replay;
        p.max_ranges_per_pass = max_ranges;
        p.num_nesting_levels = 1;
        p.min_nesting_level = 1;
        p.pass_index = 0;
        p.target_nesting_level = 1;
        call("cuptiRangeProfilerSetConfig", self.set_config, c, &mut p)
    }

    /// `cuptiRangeProfilerStart`.
    pub fn start_on(&self, c: &Cupti, object: Object) -> Result<(), String> {
        let mut p = StartParams::new();
        p.object = object.0;
        call("cuptiRangeProfilerStart", self.start, c, &mut p)
    }

    /// `cuptiRangeProfilerStop`: `isAllPassSubmitted`.
    pub fn stop_on(&self, c: &Cupti, object: Object) -> Result<bool, String> {
        let mut p = StopParams::new();
        p.object = object.0;
        call("cuptiRangeProfilerStop", self.stop, c, &mut p)?;
        Ok(p.is_all_pass_submitted != 0)
    }

    /// `cuptiRangeProfilerPushRange(name)`.
    pub fn push_on(&self, c: &Cupti, object: Object, name: &CStr) -> Result<(), String> {
        let mut p = PushRangeParams::new();
        p.object = object.0;
        p.range_name = name.as_ptr();
        call("cuptiRangeProfilerPushRange", self.push_range, c, &mut p)
    }

    /// `cuptiRangeProfilerPopRange`.
    pub fn pop_on(&self, c: &Cupti, object: Object) -> Result<(), String> {
        let mut p = PopRangeParams::new();
        p.object = object.0;
        call("cuptiRangeProfilerPopRange", self.pop_range, c, &mut p)
    }

    /// `cuptiRangeProfilerDecodeData`: the number of ranges dropped.
    pub fn decode_on(&self, c: &Cupti, object: Object) -> Result<usize, String> {
        let mut p = DecodeDataParams::new();
        p.object = object.0;
        call("cuptiRangeProfilerDecodeData", self.decode_data, c, &mut p)?;
        Ok(p.num_ranges_dropped)
    }

    /// `cuptiRangeProfilerGetCounterDataInfo`: ranges in the image.
    pub fn ranges_in(&self, c: &Cupti, image: &[u8]) -> Result<usize, String> {
        let mut p = GetCounterDataInfoParams::new();
        p.counter_data = image.as_ptr();
        p.counter_data_size = image.len();
        call(
            "cuptiRangeProfilerGetCounterDataInfo",
            self.get_counter_data_info,
            c,
            &mut p,
        )?;
        Ok(p.num_total_ranges)
    }

    /// `cuptiRangeProfilerCounterDataGetRangeInfo`: the name of range `index` (auto ranges:
    /// CUPTI's name for the kernel's range; user ranges: the pushed names, `/`-delimited).
    pub fn range_name(&self, c: &Cupti, image: &[u8], index: usize) -> Result<String, String> {
        let mut p = GetRangeInfoParams::new();
        p.counter_data = image.as_ptr();
        p.counter_data_size = image.len();
        p.range_index = index;
        p.range_delimiter = c"/".as_ptr();
        call(
            "cuptiRangeProfilerCounterDataGetRangeInfo",
            self.get_range_info,
            c,
            &mut p,
        )?;
        Ok(owned(p.range_name))
    }

    /// `cuptiProfilerHostEvaluateToGpuValues` of range `index`: one value per metric.
    pub fn evaluate(
        &self,
        c: &Cupti,
        host: Object,
        image: &[u8],
        index: usize,
        names: &Names,
    ) -> Result<Vec<f64>, String> {
        let mut values = vec![0f64; names.len()];
        let mut p = HostEvaluateToGpuValuesParams::new();
        p.host = host.0;
        p.counter_data = image.as_ptr();
        p.counter_data_size = image.len();
        p.range_index = index;
        p.metric_names = names.ptrs.as_ptr();
        p.num_metrics = names.len();
        p.values = values.as_mut_ptr();
        call(
            "cuptiProfilerHostEvaluateToGpuValues",
            self.host_evaluate_to_gpu_values,
            c,
            &mut p,
        )?;
        Ok(values)
    }
}

/// Copies `n` C strings from a CUPTI-owned array (null array: none).
fn strings(array: *mut *const c_char, n: usize) -> Vec<String> {
    if array.is_null() {
        return Vec::new();
    }
    (0..n)
        .map(|i| {
            // SAFETY: CUPTI returned an array of `n` string pointers owned by the host object,
            // valid until the next call on it; `i < n`.
            owned(unsafe { *array.add(i) })
        })
        .collect()
}

/// `(C struct.field, offset)`, `(sizeof C struct, size)` and `(STRUCT_SIZE C struct, the
/// header macro's value)` of every parameter struct, for `tests/gpu_headers.rs`.
pub fn layouts() -> Vec<(&'static str, usize)> {
    use std::mem::{offset_of, size_of};
    vec![
        (
            "sizeof CUpti_Profiler_Host_GetBaseMetrics_Params",
            size_of::<HostGetBaseMetricsParams>(),
        ),
        (
            "STRUCT_SIZE CUpti_Profiler_Host_GetBaseMetrics_Params",
            HostGetBaseMetricsParams::SIZE,
        ),
        (
            "CUpti_Profiler_Host_GetBaseMetrics_Params.pPriv",
            offset_of!(HostGetBaseMetricsParams, priv_),
        ),
        (
            "CUpti_Profiler_Host_GetBaseMetrics_Params.pHostObject",
            offset_of!(HostGetBaseMetricsParams, host),
        ),
        (
            "CUpti_Profiler_Host_GetBaseMetrics_Params.metricType",
            offset_of!(HostGetBaseMetricsParams, metric_type),
        ),
        (
            "CUpti_Profiler_Host_GetBaseMetrics_Params.ppMetricNames",
            offset_of!(HostGetBaseMetricsParams, metric_names),
        ),
        (
            "CUpti_Profiler_Host_GetBaseMetrics_Params.numMetrics",
            offset_of!(HostGetBaseMetricsParams, num_metrics),
        ),
        (
            "sizeof CUpti_Profiler_Host_GetSubMetrics_Params",
            size_of::<HostGetSubMetricsParams>(),
        ),
        (
            "STRUCT_SIZE CUpti_Profiler_Host_GetSubMetrics_Params",
            HostGetSubMetricsParams::SIZE,
        ),
        (
            "CUpti_Profiler_Host_GetSubMetrics_Params.pPriv",
            offset_of!(HostGetSubMetricsParams, priv_),
        ),
        (
            "CUpti_Profiler_Host_GetSubMetrics_Params.pHostObject",
            offset_of!(HostGetSubMetricsParams, host),
        ),
        (
            "CUpti_Profiler_Host_GetSubMetrics_Params.metricType",
            offset_of!(HostGetSubMetricsParams, metric_type),
        ),
        (
            "CUpti_Profiler_Host_GetSubMetrics_Params.pMetricName",
            offset_of!(HostGetSubMetricsParams, metric_name),
        ),
        (
            "CUpti_Profiler_Host_GetSubMetrics_Params.numOfSubmetrics",
            offset_of!(HostGetSubMetricsParams, num_sub_metrics),
        ),
        (
            "CUpti_Profiler_Host_GetSubMetrics_Params.ppSubMetrics",
            offset_of!(HostGetSubMetricsParams, sub_metrics),
        ),
        (
            "sizeof CUpti_Profiler_Initialize_Params",
            size_of::<InitializeParams>(),
        ),
        (
            "STRUCT_SIZE CUpti_Profiler_Initialize_Params",
            InitializeParams::SIZE,
        ),
        (
            "sizeof CUpti_Profiler_DeInitialize_Params",
            size_of::<DeInitializeParams>(),
        ),
        (
            "STRUCT_SIZE CUpti_Profiler_DeInitialize_Params",
            DeInitializeParams::SIZE,
        ),
        (
            "sizeof CUpti_Device_GetChipName_Params",
            size_of::<GetChipNameParams>(),
        ),
        (
            "STRUCT_SIZE CUpti_Device_GetChipName_Params",
            GetChipNameParams::SIZE,
        ),
        (
            "CUpti_Device_GetChipName_Params.deviceIndex",
            offset_of!(GetChipNameParams, device_index),
        ),
        (
            "CUpti_Device_GetChipName_Params.pChipName",
            offset_of!(GetChipNameParams, chip_name),
        ),
        (
            "sizeof CUpti_Profiler_GetCounterAvailability_Params",
            size_of::<GetCounterAvailabilityParams>(),
        ),
        (
            "STRUCT_SIZE CUpti_Profiler_GetCounterAvailability_Params",
            GetCounterAvailabilityParams::SIZE,
        ),
        (
            "CUpti_Profiler_GetCounterAvailability_Params.ctx",
            offset_of!(GetCounterAvailabilityParams, ctx),
        ),
        (
            "CUpti_Profiler_GetCounterAvailability_Params.counterAvailabilityImageSize",
            offset_of!(GetCounterAvailabilityParams, image_size),
        ),
        (
            "CUpti_Profiler_GetCounterAvailability_Params.pCounterAvailabilityImage",
            offset_of!(GetCounterAvailabilityParams, image),
        ),
        (
            "sizeof CUpti_Profiler_Host_Initialize_Params",
            size_of::<HostInitializeParams>(),
        ),
        (
            "STRUCT_SIZE CUpti_Profiler_Host_Initialize_Params",
            HostInitializeParams::SIZE,
        ),
        (
            "CUpti_Profiler_Host_Initialize_Params.profilerType",
            offset_of!(HostInitializeParams, profiler_type),
        ),
        (
            "CUpti_Profiler_Host_Initialize_Params.pChipName",
            offset_of!(HostInitializeParams, chip_name),
        ),
        (
            "CUpti_Profiler_Host_Initialize_Params.pCounterAvailabilityImage",
            offset_of!(HostInitializeParams, availability),
        ),
        (
            "CUpti_Profiler_Host_Initialize_Params.pHostObject",
            offset_of!(HostInitializeParams, host),
        ),
        (
            "sizeof CUpti_Profiler_Host_Deinitialize_Params",
            size_of::<HostDeinitializeParams>(),
        ),
        (
            "STRUCT_SIZE CUpti_Profiler_Host_Deinitialize_Params",
            HostDeinitializeParams::SIZE,
        ),
        (
            "CUpti_Profiler_Host_Deinitialize_Params.pHostObject",
            offset_of!(HostDeinitializeParams, host),
        ),
        (
            "sizeof CUpti_Profiler_Host_GetMetricProperties_Params",
            size_of::<HostGetMetricPropertiesParams>(),
        ),
        (
            "STRUCT_SIZE CUpti_Profiler_Host_GetMetricProperties_Params",
            HostGetMetricPropertiesParams::SIZE,
        ),
        (
            "CUpti_Profiler_Host_GetMetricProperties_Params.pHostObject",
            offset_of!(HostGetMetricPropertiesParams, host),
        ),
        (
            "CUpti_Profiler_Host_GetMetricProperties_Params.pMetricName",
            offset_of!(HostGetMetricPropertiesParams, metric_name),
        ),
        (
            "CUpti_Profiler_Host_GetMetricProperties_Params.pDescription",
            offset_of!(HostGetMetricPropertiesParams, description),
        ),
        (
            "CUpti_Profiler_Host_GetMetricProperties_Params.pHwUnit",
            offset_of!(HostGetMetricPropertiesParams, hw_unit),
        ),
        (
            "CUpti_Profiler_Host_GetMetricProperties_Params.pDimUnit",
            offset_of!(HostGetMetricPropertiesParams, dim_unit),
        ),
        (
            "CUpti_Profiler_Host_GetMetricProperties_Params.metricType",
            offset_of!(HostGetMetricPropertiesParams, metric_type),
        ),
        (
            "sizeof CUpti_Profiler_Host_ConfigAddMetrics_Params",
            size_of::<HostConfigAddMetricsParams>(),
        ),
        (
            "STRUCT_SIZE CUpti_Profiler_Host_ConfigAddMetrics_Params",
            HostConfigAddMetricsParams::SIZE,
        ),
        (
            "CUpti_Profiler_Host_ConfigAddMetrics_Params.pHostObject",
            offset_of!(HostConfigAddMetricsParams, host),
        ),
        (
            "CUpti_Profiler_Host_ConfigAddMetrics_Params.ppMetricNames",
            offset_of!(HostConfigAddMetricsParams, metric_names),
        ),
        (
            "CUpti_Profiler_Host_ConfigAddMetrics_Params.numMetrics",
            offset_of!(HostConfigAddMetricsParams, num_metrics),
        ),
        (
            "sizeof CUpti_Profiler_Host_GetConfigImageSize_Params",
            size_of::<HostGetConfigImageSizeParams>(),
        ),
        (
            "STRUCT_SIZE CUpti_Profiler_Host_GetConfigImageSize_Params",
            HostGetConfigImageSizeParams::SIZE,
        ),
        (
            "CUpti_Profiler_Host_GetConfigImageSize_Params.pHostObject",
            offset_of!(HostGetConfigImageSizeParams, host),
        ),
        (
            "CUpti_Profiler_Host_GetConfigImageSize_Params.configImageSize",
            offset_of!(HostGetConfigImageSizeParams, config_image_size),
        ),
        (
            "sizeof CUpti_Profiler_Host_GetConfigImage_Params",
            size_of::<HostGetConfigImageParams>(),
        ),
        (
            "STRUCT_SIZE CUpti_Profiler_Host_GetConfigImage_Params",
            HostGetConfigImageParams::SIZE,
        ),
        (
            "CUpti_Profiler_Host_GetConfigImage_Params.pHostObject",
            offset_of!(HostGetConfigImageParams, host),
        ),
        (
            "CUpti_Profiler_Host_GetConfigImage_Params.configImageSize",
            offset_of!(HostGetConfigImageParams, config_image_size),
        ),
        (
            "CUpti_Profiler_Host_GetConfigImage_Params.pConfigImage",
            offset_of!(HostGetConfigImageParams, config_image),
        ),
        (
            "sizeof CUpti_Profiler_Host_GetNumOfPasses_Params",
            size_of::<HostGetNumOfPassesParams>(),
        ),
        (
            "STRUCT_SIZE CUpti_Profiler_Host_GetNumOfPasses_Params",
            HostGetNumOfPassesParams::SIZE,
        ),
        (
            "CUpti_Profiler_Host_GetNumOfPasses_Params.configImageSize",
            offset_of!(HostGetNumOfPassesParams, config_image_size),
        ),
        (
            "CUpti_Profiler_Host_GetNumOfPasses_Params.pConfigImage",
            offset_of!(HostGetNumOfPassesParams, config_image),
        ),
        (
            "CUpti_Profiler_Host_GetNumOfPasses_Params.numOfPasses",
            offset_of!(HostGetNumOfPassesParams, num_passes),
        ),
        (
            "sizeof CUpti_Profiler_Host_EvaluateToGpuValues_Params",
            size_of::<HostEvaluateToGpuValuesParams>(),
        ),
        (
            "STRUCT_SIZE CUpti_Profiler_Host_EvaluateToGpuValues_Params",
            HostEvaluateToGpuValuesParams::SIZE,
        ),
        (
            "CUpti_Profiler_Host_EvaluateToGpuValues_Params.pHostObject",
            offset_of!(HostEvaluateToGpuValuesParams, host),
        ),
        (
            "CUpti_Profiler_Host_EvaluateToGpuValues_Params.pCounterDataImage",
            offset_of!(HostEvaluateToGpuValuesParams, counter_data),
        ),
        (
            "CUpti_Profiler_Host_EvaluateToGpuValues_Params.counterDataImageSize",
            offset_of!(HostEvaluateToGpuValuesParams, counter_data_size),
        ),
        (
            "CUpti_Profiler_Host_EvaluateToGpuValues_Params.rangeIndex",
            offset_of!(HostEvaluateToGpuValuesParams, range_index),
        ),
        (
            "CUpti_Profiler_Host_EvaluateToGpuValues_Params.ppMetricNames",
            offset_of!(HostEvaluateToGpuValuesParams, metric_names),
        ),
        (
            "CUpti_Profiler_Host_EvaluateToGpuValues_Params.numMetrics",
            offset_of!(HostEvaluateToGpuValuesParams, num_metrics),
        ),
        (
            "CUpti_Profiler_Host_EvaluateToGpuValues_Params.pMetricValues",
            offset_of!(HostEvaluateToGpuValuesParams, values),
        ),
        (
            "sizeof CUpti_RangeProfiler_Enable_Params",
            size_of::<EnableParams>(),
        ),
        (
            "STRUCT_SIZE CUpti_RangeProfiler_Enable_Params",
            EnableParams::SIZE,
        ),
        (
            "CUpti_RangeProfiler_Enable_Params.ctx",
            offset_of!(EnableParams, ctx),
        ),
        (
            "CUpti_RangeProfiler_Enable_Params.pRangeProfilerObject",
            offset_of!(EnableParams, object),
        ),
        (
            "sizeof CUpti_RangeProfiler_Disable_Params",
            size_of::<DisableParams>(),
        ),
        (
            "STRUCT_SIZE CUpti_RangeProfiler_Disable_Params",
            DisableParams::SIZE,
        ),
        (
            "CUpti_RangeProfiler_Disable_Params.pRangeProfilerObject",
            offset_of!(DisableParams, object),
        ),
        (
            "sizeof CUpti_RangeProfiler_SetConfig_Params",
            size_of::<SetConfigParams>(),
        ),
        (
            "STRUCT_SIZE CUpti_RangeProfiler_SetConfig_Params",
            SetConfigParams::SIZE,
        ),
        (
            "CUpti_RangeProfiler_SetConfig_Params.pRangeProfilerObject",
            offset_of!(SetConfigParams, object),
        ),
        (
            "CUpti_RangeProfiler_SetConfig_Params.configSize",
            offset_of!(SetConfigParams, config_size),
        ),
        (
            "CUpti_RangeProfiler_SetConfig_Params.pConfig",
            offset_of!(SetConfigParams, config),
        ),
        (
            "CUpti_RangeProfiler_SetConfig_Params.counterDataImageSize",
            offset_of!(SetConfigParams, counter_data_size),
        ),
        (
            "CUpti_RangeProfiler_SetConfig_Params.pCounterDataImage",
            offset_of!(SetConfigParams, counter_data),
        ),
        (
            "CUpti_RangeProfiler_SetConfig_Params.range",
            offset_of!(SetConfigParams, range),
        ),
        (
            "CUpti_RangeProfiler_SetConfig_Params.replayMode",
            offset_of!(SetConfigParams, replay_mode),
        ),
        (
            "CUpti_RangeProfiler_SetConfig_Params.maxRangesPerPass",
            offset_of!(SetConfigParams, max_ranges_per_pass),
        ),
        (
            "CUpti_RangeProfiler_SetConfig_Params.numNestingLevels",
            offset_of!(SetConfigParams, num_nesting_levels),
        ),
        (
            "CUpti_RangeProfiler_SetConfig_Params.minNestingLevel",
            offset_of!(SetConfigParams, min_nesting_level),
        ),
        (
            "CUpti_RangeProfiler_SetConfig_Params.passIndex",
            offset_of!(SetConfigParams, pass_index),
        ),
        (
            "CUpti_RangeProfiler_SetConfig_Params.targetNestingLevel",
            offset_of!(SetConfigParams, target_nesting_level),
        ),
        (
            "sizeof CUpti_RangeProfiler_Start_Params",
            size_of::<StartParams>(),
        ),
        (
            "STRUCT_SIZE CUpti_RangeProfiler_Start_Params",
            StartParams::SIZE,
        ),
        (
            "CUpti_RangeProfiler_Start_Params.pRangeProfilerObject",
            offset_of!(StartParams, object),
        ),
        (
            "sizeof CUpti_RangeProfiler_Stop_Params",
            size_of::<StopParams>(),
        ),
        (
            "STRUCT_SIZE CUpti_RangeProfiler_Stop_Params",
            StopParams::SIZE,
        ),
        (
            "CUpti_RangeProfiler_Stop_Params.pRangeProfilerObject",
            offset_of!(StopParams, object),
        ),
        (
            "CUpti_RangeProfiler_Stop_Params.passIndex",
            offset_of!(StopParams, pass_index),
        ),
        (
            "CUpti_RangeProfiler_Stop_Params.targetNestingLevel",
            offset_of!(StopParams, target_nesting_level),
        ),
        (
            "CUpti_RangeProfiler_Stop_Params.isAllPassSubmitted",
            offset_of!(StopParams, is_all_pass_submitted),
        ),
        (
            "sizeof CUpti_RangeProfiler_PushRange_Params",
            size_of::<PushRangeParams>(),
        ),
        (
            "STRUCT_SIZE CUpti_RangeProfiler_PushRange_Params",
            PushRangeParams::SIZE,
        ),
        (
            "CUpti_RangeProfiler_PushRange_Params.pRangeProfilerObject",
            offset_of!(PushRangeParams, object),
        ),
        (
            "CUpti_RangeProfiler_PushRange_Params.pRangeName",
            offset_of!(PushRangeParams, range_name),
        ),
        (
            "sizeof CUpti_RangeProfiler_PopRange_Params",
            size_of::<PopRangeParams>(),
        ),
        (
            "STRUCT_SIZE CUpti_RangeProfiler_PopRange_Params",
            PopRangeParams::SIZE,
        ),
        (
            "CUpti_RangeProfiler_PopRange_Params.pRangeProfilerObject",
            offset_of!(PopRangeParams, object),
        ),
        (
            "sizeof CUpti_RangeProfiler_DecodeData_Params",
            size_of::<DecodeDataParams>(),
        ),
        (
            "STRUCT_SIZE CUpti_RangeProfiler_DecodeData_Params",
            DecodeDataParams::SIZE,
        ),
        (
            "CUpti_RangeProfiler_DecodeData_Params.pRangeProfilerObject",
            offset_of!(DecodeDataParams, object),
        ),
        (
            "CUpti_RangeProfiler_DecodeData_Params.numOfRangeDropped",
            offset_of!(DecodeDataParams, num_ranges_dropped),
        ),
        (
            "sizeof CUpti_RangeProfiler_GetCounterDataSize_Params",
            size_of::<GetCounterDataSizeParams>(),
        ),
        (
            "STRUCT_SIZE CUpti_RangeProfiler_GetCounterDataSize_Params",
            GetCounterDataSizeParams::SIZE,
        ),
        (
            "CUpti_RangeProfiler_GetCounterDataSize_Params.pRangeProfilerObject",
            offset_of!(GetCounterDataSizeParams, object),
        ),
        (
            "CUpti_RangeProfiler_GetCounterDataSize_Params.pMetricNames",
            offset_of!(GetCounterDataSizeParams, metric_names),
        ),
        (
            "CUpti_RangeProfiler_GetCounterDataSize_Params.numMetrics",
            offset_of!(GetCounterDataSizeParams, num_metrics),
        ),
        (
            "CUpti_RangeProfiler_GetCounterDataSize_Params.maxNumOfRanges",
            offset_of!(GetCounterDataSizeParams, max_ranges),
        ),
        (
            "CUpti_RangeProfiler_GetCounterDataSize_Params.maxNumRangeTreeNodes",
            offset_of!(GetCounterDataSizeParams, max_range_tree_nodes),
        ),
        (
            "CUpti_RangeProfiler_GetCounterDataSize_Params.counterDataSize",
            offset_of!(GetCounterDataSizeParams, counter_data_size),
        ),
        (
            "sizeof CUpti_RangeProfiler_CounterDataImage_Initialize_Params",
            size_of::<CounterDataImageInitializeParams>(),
        ),
        (
            "STRUCT_SIZE CUpti_RangeProfiler_CounterDataImage_Initialize_Params",
            CounterDataImageInitializeParams::SIZE,
        ),
        (
            "CUpti_RangeProfiler_CounterDataImage_Initialize_Params.pRangeProfilerObject",
            offset_of!(CounterDataImageInitializeParams, object),
        ),
        (
            "CUpti_RangeProfiler_CounterDataImage_Initialize_Params.counterDataSize",
            offset_of!(CounterDataImageInitializeParams, counter_data_size),
        ),
        (
            "CUpti_RangeProfiler_CounterDataImage_Initialize_Params.pCounterData",
            offset_of!(CounterDataImageInitializeParams, counter_data),
        ),
        (
            "sizeof CUpti_RangeProfiler_CounterData_GetRangeInfo_Params",
            size_of::<GetRangeInfoParams>(),
        ),
        (
            "STRUCT_SIZE CUpti_RangeProfiler_CounterData_GetRangeInfo_Params",
            GetRangeInfoParams::SIZE,
        ),
        (
            "CUpti_RangeProfiler_CounterData_GetRangeInfo_Params.rangeIndex",
            offset_of!(GetRangeInfoParams, range_index),
        ),
        (
            "CUpti_RangeProfiler_CounterData_GetRangeInfo_Params.rangeName",
            offset_of!(GetRangeInfoParams, range_name),
        ),
        (
            "sizeof CUpti_RangeProfiler_GetCounterDataInfo_Params",
            size_of::<GetCounterDataInfoParams>(),
        ),
        (
            "STRUCT_SIZE CUpti_RangeProfiler_GetCounterDataInfo_Params",
            GetCounterDataInfoParams::SIZE,
        ),
        (
            "CUpti_RangeProfiler_GetCounterDataInfo_Params.pCounterDataImage",
            offset_of!(GetCounterDataInfoParams, counter_data),
        ),
        (
            "CUpti_RangeProfiler_GetCounterDataInfo_Params.counterDataImageSize",
            offset_of!(GetCounterDataInfoParams, counter_data_size),
        ),
        (
            "CUpti_RangeProfiler_GetCounterDataInfo_Params.numTotalRanges",
            offset_of!(GetCounterDataInfoParams, num_total_ranges),
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::{offset_of, size_of};

    #[test]
    fn set_config_matches_the_header() {
        // From cupti_range_profiler.h (x86-64): range at 56, targetNestingLevel at 88.
        assert_eq!(offset_of!(SetConfigParams, range), 56);
        assert_eq!(offset_of!(SetConfigParams, max_ranges_per_pass), 64);
        assert_eq!(offset_of!(SetConfigParams, target_nesting_level), 88);
        assert_eq!(SetConfigParams::SIZE, 90);
        assert_eq!(size_of::<SetConfigParams>(), 96);
        assert_eq!(StopParams::SIZE, 41);
        assert_eq!(InitializeParams::SIZE, 16);
        let p = StopParams::new();
        assert_eq!(p.struct_size, 41);
        assert!(p.priv_.is_null());
    }
}
