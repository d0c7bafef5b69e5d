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

pub use crate::sys_profiler_host::*;
use crate::sys_profiler_params::struct_size;
pub use crate::sys_profiler_params::Params;
pub use crate::sys_profiler_range::*;

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

/// Calls `f(&mut params)` and checks its result (also PM sampling's calls).
pub(crate) fn call<P>(
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
    pub(crate) ptrs: Vec<*const c_char>,
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
pub struct Object(pub(crate) *mut c_void);

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
    pub fn host_init(&self, c: &Cupti, chip: &CStr, availability: &[u8]) -> Result<Object, String> {
        self.host_init_for(c, RANGE_PROFILER, chip, availability)
    }

    /// `cuptiProfilerHostInitialize(profiler_type, chip, availability)` (the range profiler's
    /// or PM sampling's host object). `chip` and `availability` must outlive the host object:
    /// CUPTI may keep the pointers (NVIDIA's PM sampling sample keeps both for the whole run;
    /// freeing them made decoding fail on the H100).
    pub fn host_init_for(
        &self,
        c: &Cupti,
        profiler_type: i32,
        chip: &CStr,
        availability: &[u8],
    ) -> Result<Object, String> {
        let mut p = HostInitializeParams::new();
        p.profiler_type = profiler_type;
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
