//! The byte layout of every Range Profiler and profiler-host parameter struct as Metron
//! declares it, for `tests/gpu_headers.rs` to compare with the CUDA headers.

use crate::sys_profiler::*;

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
