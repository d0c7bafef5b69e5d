//! The GPU backends' join of kernel launches with Metron regions, as a sink: it keeps
//! `correlation id → region` from the launch annotations ([`crate::sink::gpu::LAUNCH_KEY`]),
//! in the [`GpuContext`] the GPU sinks resolve their kernels against when they write (at the
//! end of the run, when every launch annotation has been seen), and hands region-mode GPU
//! counter values (`gpu.<metric>` annotations) to the summary. [`backend_sinks`] are the sinks
//! every GPU backend gets when it registers (`metron::gpu::set_backend`).

use crate::annotation::AnnotationValue;
use crate::sink::gpu::{is_launch_key, GpuContext};
use crate::sink::{Event, RunInfo, Sink, ThreadInfo};
use std::path::PathBuf;

/// The sinks a GPU backend's registration adds: the launch join and `kernels.csv`.
pub fn backend_sinks(context: GpuContext) -> Vec<Box<dyn Sink>> {
    vec![
        Box::new(JoinSink(context.clone())),
        Box::new(super::kernels_csv::KernelsCsvSink::with_context(context)),
    ]
}

/// Keeps `correlation id → region` from the launch annotations, in the context it fills.
pub struct JoinSink(pub GpuContext);

impl Sink for JoinSink {
    fn name(&self) -> &str {
        "gpu_join"
    }

    fn empty_regions(&mut self, _thread: &ThreadInfo, _regions: &[crate::sink::EmptyRegion]) {
        // Regions are not this output's.
    }

    fn events(&mut self, thread: &ThreadInfo, events: &[Event<'_>]) {
        let mut launches = Vec::new();
        for e in events {
            if let Event::Annotation {
                region, key, value, ..
            } = *e
            {
                if !is_launch_key(key) {
                    // Region-mode GPU counter values (`gpu.<metric>`) for the summary.
                    if let Some(r) = region {
                        super::gpu_summary::add_region_annotation(r.name, key.name, &value);
                    }
                    continue;
                }
                let corr = match value {
                    AnnotationValue::U64(v) => v as u32,
                    AnnotationValue::I64(v) => v as u32,
                    _ => continue,
                };
                launches.push((corr, region.map_or("(no region)", |r| r.name), thread.tid));
            }
        }
        self.0.join(launches);
    }

    fn finish(&mut self, _run: &RunInfo) -> std::io::Result<Vec<PathBuf>> {
        Ok(Vec::new())
    }
}
