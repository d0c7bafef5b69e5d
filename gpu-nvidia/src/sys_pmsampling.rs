//! The CUPTI PM Sampling API (`cupti_pmsampling.h`, CUDA 12.6+) as Metron calls it: the
//! parameter structs, the function table resolved from libcupti, and the profiler-host calls
//! with `CUPTI_PROFILER_TYPE_PM_SAMPLING` (the Range Profiler's `sys_profiler.rs` holds the
//! host structs; its own wrappers initialize the host for the Range Profiler only). Layouts
//! are listed by [`layouts`] for checking against the header.

use crate::sys::struct_size;
use crate::sys::{sym, Cupti, CuptiResult};
use crate::sys_profiler::{call, HostEvaluateToGpuValuesParams, Names, Object, Params, Profiler};
use std::ffi::{c_char, c_void, CStr};

/// `CUPTI_PROFILER_TYPE_PM_SAMPLING`.
pub const PROFILER_TYPE_PM_SAMPLING: i32 = 1;
/// `CUPTI_PM_SAMPLING_TRIGGER_MODE_GPU_SYSCLK_INTERVAL`: the interval is in GPU cycles.
pub const TRIGGER_SYSCLK: i32 = 0;
/// `CUPTI_PM_SAMPLING_TRIGGER_MODE_GPU_TIME_INTERVAL`: the interval is in ns.
pub const TRIGGER_TIME: i32 = 1;
/// `CUPTI_PM_SAMPLING_DECODE_STOP_REASON_COUNTER_DATA_FULL`.
pub const STOP_COUNTER_DATA_FULL: i32 = 1;
/// `CUPTI_PM_SAMPLING_DECODE_STOP_REASON_END_OF_RECORDS`.
#[allow(dead_code)]
pub const STOP_END_OF_RECORDS: i32 = 2;
/// `CUPTI_ERROR_OUT_OF_MEMORY` from `DecodeData`: the hardware buffer overflowed.
pub const ERROR_OUT_OF_MEMORY: CuptiResult = 13;

/// `CUpti_PmSampling_SetConfig_Params`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct SetConfigParams {
    pub struct_size: usize,
    pub priv_: *mut c_void,
    pub object: *mut c_void,
    pub config_size: usize,
    pub config: *const u8,
    pub hardware_buffer_size: usize,
    pub sampling_interval: u64,
    pub trigger_mode: i32,
    pub append_mode: i32,
}
impl Params for SetConfigParams {
    const SIZE: usize = struct_size!(SetConfigParams, append_mode);
}

/// `CUpti_PmSampling_Enable_Params`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct EnableParams {
    pub struct_size: usize,
    pub priv_: *mut c_void,
    pub device_index: usize,
    pub object: *mut c_void,
}
impl Params for EnableParams {
    const SIZE: usize = struct_size!(EnableParams, object);
}

/// `CUpti_PmSampling_Disable_Params`, `_Start_Params`, `_Stop_Params` (same layout).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct ObjectParams {
    pub struct_size: usize,
    pub priv_: *mut c_void,
    pub object: *mut c_void,
}
impl Params for ObjectParams {
    const SIZE: usize = struct_size!(ObjectParams, object);
}

/// `CUpti_PmSampling_DecodeData_Params`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct DecodeDataParams {
    pub struct_size: usize,
    pub priv_: *mut c_void,
    pub object: *mut c_void,
    pub counter_data: *mut u8,
    pub counter_data_size: usize,
    pub stop_reason: i32,
    pub overflow: u8,
}
impl Params for DecodeDataParams {
    const SIZE: usize = struct_size!(DecodeDataParams, overflow);
}

/// `CUpti_PmSampling_GetCounterAvailability_Params`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct GetCounterAvailabilityParams {
    pub struct_size: usize,
    pub priv_: *mut c_void,
    pub device_index: usize,
    pub image_size: usize,
    pub image: *mut u8,
}
impl Params for GetCounterAvailabilityParams {
    const SIZE: usize = struct_size!(GetCounterAvailabilityParams, image);
}

/// `CUpti_PmSampling_GetCounterDataSize_Params`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct GetCounterDataSizeParams {
    pub struct_size: usize,
    pub priv_: *mut c_void,
    pub object: *mut c_void,
    pub metric_names: *const *const c_char,
    pub num_metrics: usize,
    pub max_samples: u32,
    pub counter_data_size: usize,
}
impl Params for GetCounterDataSizeParams {
    const SIZE: usize = struct_size!(GetCounterDataSizeParams, counter_data_size);
}

/// `CUpti_PmSampling_CounterDataImage_Initialize_Params`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct CounterDataInitParams {
    pub struct_size: usize,
    pub priv_: *mut c_void,
    pub object: *mut c_void,
    pub counter_data_size: usize,
    pub counter_data: *mut u8,
}
impl Params for CounterDataInitParams {
    const SIZE: usize = struct_size!(CounterDataInitParams, counter_data);
}

/// `CUpti_PmSampling_GetCounterDataInfo_Params`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct GetCounterDataInfoParams {
    pub struct_size: usize,
    pub priv_: *mut c_void,
    pub counter_data: *const u8,
    pub counter_data_size: usize,
    pub num_total: usize,
    pub num_populated: usize,
    pub num_completed: usize,
}
impl Params for GetCounterDataInfoParams {
    const SIZE: usize = struct_size!(GetCounterDataInfoParams, num_completed);
}

/// `CUpti_PmSampling_CounterData_GetSampleInfo_Params`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct GetSampleInfoParams {
    pub struct_size: usize,
    pub priv_: *mut c_void,
    pub object: *mut c_void,
    pub counter_data: *const u8,
    pub counter_data_size: usize,
    pub sample_index: usize,
    pub start: u64,
    pub end: u64,
}
impl Params for GetSampleInfoParams {
    const SIZE: usize = struct_size!(GetSampleInfoParams, end);
}

type F<P> = unsafe extern "C" fn(*mut P) -> CuptiResult;

/// The PM sampling functions of libcupti, with the Range Profiler's table for the host calls.
#[derive(Clone, Copy)]
pub struct PmApi {
    pub prof: Profiler,
    pub set_config: F<SetConfigParams>,
    pub enable: F<EnableParams>,
    pub disable: F<ObjectParams>,
    pub start: F<ObjectParams>,
    pub stop: F<ObjectParams>,
    pub decode: F<DecodeDataParams>,
    pub availability: F<GetCounterAvailabilityParams>,
    pub data_size: F<GetCounterDataSizeParams>,
    pub data_init: F<CounterDataInitParams>,
    pub data_info: F<GetCounterDataInfoParams>,
    pub sample_info: F<GetSampleInfoParams>,
}

// SAFETY: function pointers into a libcupti that is never unloaded.
unsafe impl Send for PmApi {}
// SAFETY: as above; the table is immutable.
unsafe impl Sync for PmApi {}

/// A CUPTI object handle (PM sampling object or profiler host object).
#[derive(Clone, Copy, Debug)]
pub struct Handle(pub *mut c_void);
// SAFETY: handles are used by one thread at a time, under the PM sampling state lock.
unsafe impl Send for Handle {}

impl PmApi {
    /// Resolves the functions from a libcupti handle (`Err` on CUPTI older than 12.6).
    pub fn load(handle: *mut c_void) -> Result<PmApi, String> {
        let prof = Profiler::load(handle)?;
        // SAFETY: each type is the C signature in cupti_pmsampling.h (one parameter-struct
        // pointer, CUptiResult); the handle is a libcupti dlopen that is never closed.
        unsafe {
            Ok(PmApi {
                prof,
                set_config: sym(handle, "cuptiPmSamplingSetConfig")?,
                enable: sym(handle, "cuptiPmSamplingEnable")?,
                disable: sym(handle, "cuptiPmSamplingDisable")?,
                start: sym(handle, "cuptiPmSamplingStart")?,
                stop: sym(handle, "cuptiPmSamplingStop")?,
                decode: sym(handle, "cuptiPmSamplingDecodeData")?,
                availability: sym(handle, "cuptiPmSamplingGetCounterAvailability")?,
                data_size: sym(handle, "cuptiPmSamplingGetCounterDataSize")?,
                data_init: sym(handle, "cuptiPmSamplingCounterDataImageInitialize")?,
                data_info: sym(handle, "cuptiPmSamplingGetCounterDataInfo")?,
                sample_info: sym(handle, "cuptiPmSamplingCounterDataGetSampleInfo")?,
            })
        }
    }

    /// `cuptiPmSamplingGetCounterAvailability(device)` (size, then image).
    pub fn counter_availability(&self, c: &Cupti, device: usize) -> Result<Vec<u8>, String> {
        let mut p = GetCounterAvailabilityParams::new();
        p.device_index = device;
        call(
            "cuptiPmSamplingGetCounterAvailability",
            self.availability,
            c,
            &mut p,
        )?;
        let mut image = vec![0u8; p.image_size];
        p.image = image.as_mut_ptr();
        call(
            "cuptiPmSamplingGetCounterAvailability",
            self.availability,
            c,
            &mut p,
        )?;
        Ok(image)
    }

    /// `cuptiProfilerHostInitialize(PM_SAMPLING, chip, availability)` (see
    /// [`Profiler::host_init_for`]: `chip` and `avail` must outlive the host object).
    pub fn host_init(&self, c: &Cupti, chip: &CStr, avail: &[u8]) -> Result<Handle, String> {
        self.prof
            .host_init_for(c, PROFILER_TYPE_PM_SAMPLING, chip, avail)
            .map(|host| Handle(host.0))
    }

    /// `cuptiProfilerHostDeinitialize`.
    pub fn host_deinit(&self, c: &Cupti, host: Handle) {
        let _ = self.prof.host_deinit(c, Object(host.0));
    }

    /// The config image of `names` and its pass count (the profiler host API's steps).
    pub fn config_image(
        &self,
        c: &Cupti,
        host: Handle,
        names: &Names,
    ) -> Result<(Vec<u8>, usize), String> {
        let mut image = self.prof.config_image(c, Object(host.0), names)?;
        let passes = self.prof.num_passes(c, &mut image)?;
        Ok((image, passes))
    }

    /// `cuptiPmSamplingEnable(device)`.
    pub fn enable_on(&self, c: &Cupti, device: usize) -> Result<Handle, String> {
        let mut p = EnableParams::new();
        p.device_index = device;
        call("cuptiPmSamplingEnable", self.enable, c, &mut p)?;
        Ok(Handle(p.object))
    }

    /// `cuptiPmSamplingSetConfig`.
    pub fn set_config_on(
        &self,
        c: &Cupti,
        obj: Handle,
        config: &[u8],
        hw_buffer: usize,
        interval: u64,
        trigger: i32,
    ) -> Result<(), String> {
        let mut p = SetConfigParams::new();
        p.object = obj.0;
        p.config_size = config.len();
        p.config = config.as_ptr();
        p.hardware_buffer_size = hw_buffer;
        p.sampling_interval = interval;
        p.trigger_mode = trigger;
        p.append_mode = 0;
        call("cuptiPmSamplingSetConfig", self.set_config, c, &mut p)
    }

    /// `cuptiPmSamplingStart`/`Stop`/`Disable` (`which`: 0, 1, 2).
    pub fn object_call(&self, c: &Cupti, obj: Handle, which: u8) -> Result<(), String> {
        let mut p = ObjectParams::new();
        p.object = obj.0;
        let (what, f) = match which {
            0 => ("cuptiPmSamplingStart", self.start),
            1 => ("cuptiPmSamplingStop", self.stop),
            _ => ("cuptiPmSamplingDisable", self.disable),
        };
        call(what, f, c, &mut p)
    }

    /// `cuptiPmSamplingGetCounterDataSize` for `max_samples` samples.
    pub fn data_size_for(
        &self,
        c: &Cupti,
        obj: Handle,
        names: &Names,
        max_samples: u32,
    ) -> Result<usize, String> {
        let mut p = GetCounterDataSizeParams::new();
        p.object = obj.0;
        p.metric_names = names.ptrs.as_ptr();
        p.num_metrics = names.ptrs.len();
        p.max_samples = max_samples;
        call(
            "cuptiPmSamplingGetCounterDataSize",
            self.data_size,
            c,
            &mut p,
        )?;
        Ok(p.counter_data_size)
    }

    /// `cuptiPmSamplingCounterDataImageInitialize`.
    pub fn data_init_on(&self, c: &Cupti, obj: Handle, image: &mut [u8]) -> Result<(), String> {
        let mut p = CounterDataInitParams::new();
        p.object = obj.0;
        p.counter_data_size = image.len();
        p.counter_data = image.as_mut_ptr();
        call(
            "cuptiPmSamplingCounterDataImageInitialize",
            self.data_init,
            c,
            &mut p,
        )
    }

    /// `cuptiPmSamplingDecodeData`: `(CUPTI result, stop reason, overflow)`.
    pub fn decode_into(&self, obj: Handle, image: &mut [u8]) -> (CuptiResult, i32, bool) {
        let mut p = DecodeDataParams::new();
        p.object = obj.0;
        p.counter_data = image.as_mut_ptr();
        p.counter_data_size = image.len();
        // SAFETY: an initialized parameter struct; the image outlives the call.
        let r = unsafe { (self.decode)(&mut p) };
        (r, p.stop_reason, p.overflow != 0)
    }

    /// `cuptiPmSamplingGetCounterDataInfo`: `(total, populated, completed)`.
    pub fn data_info_of(&self, c: &Cupti, image: &[u8]) -> Result<(usize, usize, usize), String> {
        let mut p = GetCounterDataInfoParams::new();
        p.counter_data = image.as_ptr();
        p.counter_data_size = image.len();
        call(
            "cuptiPmSamplingGetCounterDataInfo",
            self.data_info,
            c,
            &mut p,
        )?;
        Ok((p.num_total, p.num_populated, p.num_completed))
    }

    /// `cuptiPmSamplingCounterDataGetSampleInfo`: the sample's `(start, end)` timestamps.
    pub fn sample_times(
        &self,
        c: &Cupti,
        obj: Handle,
        image: &[u8],
        index: usize,
    ) -> Result<(u64, u64), String> {
        let mut p = GetSampleInfoParams::new();
        p.object = obj.0;
        p.counter_data = image.as_ptr();
        p.counter_data_size = image.len();
        p.sample_index = index;
        call(
            "cuptiPmSamplingCounterDataGetSampleInfo",
            self.sample_info,
            c,
            &mut p,
        )?;
        Ok((p.start, p.end))
    }

    /// `cuptiProfilerHostEvaluateToGpuValues` of sample `index` into `values` (one per name).
    pub fn evaluate_into(
        &self,
        c: &Cupti,
        host: Handle,
        image: &[u8],
        index: usize,
        names: &Names,
        values: &mut [f64],
    ) -> Result<(), String> {
        debug_assert_eq!(values.len(), names.ptrs.len());
        let mut p = HostEvaluateToGpuValuesParams::new();
        p.host = host.0;
        p.counter_data = image.as_ptr();
        p.counter_data_size = image.len();
        p.range_index = index;
        p.metric_names = names.ptrs.as_ptr();
        p.num_metrics = names.ptrs.len();
        p.values = values.as_mut_ptr();
        call(
            "cuptiProfilerHostEvaluateToGpuValues",
            self.prof.host_evaluate_to_gpu_values,
            c,
            &mut p,
        )
    }
}

/// `("CStruct.field", offset)`, `("sizeof CStruct", size)`, `("STRUCT_SIZE CStruct", value)`
/// of the PM sampling parameter structs, for checking against `cupti_pmsampling.h`.
pub fn layouts() -> Vec<(&'static str, usize)> {
    use std::mem::{offset_of, size_of};
    vec![
        (
            "sizeof CUpti_PmSampling_SetConfig_Params",
            size_of::<SetConfigParams>(),
        ),
        (
            "STRUCT_SIZE CUpti_PmSampling_SetConfig_Params",
            SetConfigParams::SIZE,
        ),
        (
            "CUpti_PmSampling_SetConfig_Params.samplingInterval",
            offset_of!(SetConfigParams, sampling_interval),
        ),
        (
            "CUpti_PmSampling_SetConfig_Params.triggerMode",
            offset_of!(SetConfigParams, trigger_mode),
        ),
        (
            "STRUCT_SIZE CUpti_PmSampling_Enable_Params",
            EnableParams::SIZE,
        ),
        (
            "STRUCT_SIZE CUpti_PmSampling_Start_Params",
            ObjectParams::SIZE,
        ),
        (
            "sizeof CUpti_PmSampling_DecodeData_Params",
            size_of::<DecodeDataParams>(),
        ),
        (
            "STRUCT_SIZE CUpti_PmSampling_DecodeData_Params",
            DecodeDataParams::SIZE,
        ),
        (
            "CUpti_PmSampling_DecodeData_Params.decodeStopReason",
            offset_of!(DecodeDataParams, stop_reason),
        ),
        (
            "CUpti_PmSampling_DecodeData_Params.overflow",
            offset_of!(DecodeDataParams, overflow),
        ),
        (
            "STRUCT_SIZE CUpti_PmSampling_GetCounterAvailability_Params",
            GetCounterAvailabilityParams::SIZE,
        ),
        (
            "sizeof CUpti_PmSampling_GetCounterDataSize_Params",
            size_of::<GetCounterDataSizeParams>(),
        ),
        (
            "STRUCT_SIZE CUpti_PmSampling_GetCounterDataSize_Params",
            GetCounterDataSizeParams::SIZE,
        ),
        (
            "CUpti_PmSampling_GetCounterDataSize_Params.maxSamples",
            offset_of!(GetCounterDataSizeParams, max_samples),
        ),
        (
            "STRUCT_SIZE CUpti_PmSampling_CounterDataImage_Initialize_Params",
            CounterDataInitParams::SIZE,
        ),
        (
            "STRUCT_SIZE CUpti_PmSampling_GetCounterDataInfo_Params",
            GetCounterDataInfoParams::SIZE,
        ),
        (
            "STRUCT_SIZE CUpti_PmSampling_CounterData_GetSampleInfo_Params",
            GetSampleInfoParams::SIZE,
        ),
        (
            "CUpti_PmSampling_CounterData_GetSampleInfo_Params.startTimestamp",
            offset_of!(GetSampleInfoParams, start),
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Offsets and sizes computed by hand from cupti_pmsampling.h (CUDA 13.0, LP64).
    #[test]
    fn layouts_match_the_header() {
        let l: std::collections::HashMap<_, _> = layouts().into_iter().collect();
        assert_eq!(l["sizeof CUpti_PmSampling_SetConfig_Params"], 64);
        assert_eq!(l["STRUCT_SIZE CUpti_PmSampling_SetConfig_Params"], 64);
        assert_eq!(l["CUpti_PmSampling_SetConfig_Params.samplingInterval"], 48);
        assert_eq!(l["CUpti_PmSampling_SetConfig_Params.triggerMode"], 56);
        assert_eq!(l["STRUCT_SIZE CUpti_PmSampling_Enable_Params"], 32);
        assert_eq!(l["STRUCT_SIZE CUpti_PmSampling_Start_Params"], 24);
        assert_eq!(l["CUpti_PmSampling_DecodeData_Params.decodeStopReason"], 40);
        assert_eq!(l["CUpti_PmSampling_DecodeData_Params.overflow"], 44);
        assert_eq!(l["STRUCT_SIZE CUpti_PmSampling_DecodeData_Params"], 45);
        assert_eq!(
            l["CUpti_PmSampling_GetCounterDataSize_Params.maxSamples"],
            40
        );
        assert_eq!(
            l["STRUCT_SIZE CUpti_PmSampling_GetCounterDataSize_Params"],
            56
        );
        assert_eq!(
            l["STRUCT_SIZE CUpti_PmSampling_GetCounterDataInfo_Params"],
            56
        );
        assert_eq!(
            l["STRUCT_SIZE CUpti_PmSampling_CounterData_GetSampleInfo_Params"],
            64
        );
    }
}
