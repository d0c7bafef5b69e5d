//! The Range Profiler's parameter structs (`cupti_range_profiler.h`, CUDA 13), written by
//! hand from the header (checked by `tests/gpu_headers.rs`); [`crate::sys_profiler`] resolves
//! and calls the functions that take them.

use crate::sys_profiler_params::{struct_size, Params};
use std::ffi::{c_char, c_void};

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
