//! The profiler host API's parameter structs (`cupti_profiler_host.h`, CUDA 13), written by
//! hand from the header (checked by `tests/gpu_headers.rs`); [`crate::sys_profiler`] resolves
//! and calls the functions that take them.

use crate::sys_profiler_params::{struct_size, Params};
use std::ffi::{c_char, c_void};

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
