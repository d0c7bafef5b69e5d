//! Shared by the `sampling_*` tests: a sink that keeps every sample by thread, function
//! address ranges of the test binary, and the thread's CPU clock.
#![allow(dead_code)]

use metron::{Event, RunInfo, SampleTrigger, Sink, ThreadInfo};
use object::{Object, ObjectSymbol};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// One sample as the sink saw it.
#[derive(Clone, Debug)]
pub struct Seen {
    pub ts_ns: u64,
    pub frames: Vec<u64>,
    pub trigger: &'static str,
    pub region: Option<&'static str>,
}

/// Every sample delivered to sinks, by kernel thread id.
#[derive(Clone, Default)]
pub struct SampleLog(pub Arc<Mutex<HashMap<u32, Vec<Seen>>>>);

struct LogSink(SampleLog);

impl Sink for LogSink {
    fn name(&self) -> &str {
        "test-samples"
    }
    fn events(&mut self, thread: &ThreadInfo, events: &[Event<'_>]) {
        let mut map = (self.0).0.lock().unwrap();
        for e in events {
            if let Event::Sample {
                ts_ns,
                frames,
                trigger,
            } = e
            {
                let (trigger, region) = match trigger {
                    SampleTrigger::CpuTime => ("cpu", None),
                    SampleTrigger::RealTime => ("real", None),
                    SampleTrigger::RegionBegin(site) => ("region", Some(site.name)),
                };
                map.entry(thread.tid).or_default().push(Seen {
                    ts_ns: *ts_ns,
                    frames: frames.to_vec(),
                    trigger,
                    region,
                });
            }
        }
    }
    fn finish(&mut self, _run: &RunInfo) -> std::io::Result<Vec<PathBuf>> {
        Ok(Vec::new())
    }
}

impl SampleLog {
    /// A log fed by a new sink (starts the runtime).
    pub fn install() -> SampleLog {
        let log = SampleLog::default();
        metron::add_sink(Box::new(LogSink(log.clone())));
        log
    }

    /// The stacks of CPU-time samples of thread `tid`.
    pub fn cpu_stacks(&self, tid: u32) -> Vec<Vec<u64>> {
        self.of(tid, "cpu")
    }

    /// The CPU-time samples of thread `tid` taken between `from_ns` and `to_ns` (Metron's clock,
    /// `CLOCK_MONOTONIC`): a workload's, without what the thread did before or after it.
    pub fn cpu_stacks_between(&self, tid: u32, from_ns: u64, to_ns: u64) -> Vec<Vec<u64>> {
        self.stacks(tid, |s| {
            s.trigger == "cpu" && (from_ns..=to_ns).contains(&s.ts_ns)
        })
    }

    /// The stacks of samples of thread `tid` with `trigger` (`cpu`, `real`, `region`).
    pub fn of(&self, tid: u32, trigger: &str) -> Vec<Vec<u64>> {
        self.stacks(tid, |s| s.trigger == trigger)
    }

    /// The stacks of the samples of thread `tid` that `keep` selects.
    fn stacks(&self, tid: u32, keep: impl Fn(&Seen) -> bool) -> Vec<Vec<u64>> {
        self.0
            .lock()
            .unwrap()
            .get(&tid)
            .map(|v| {
                v.iter()
                    .filter(|s| keep(s))
                    .map(|s| s.frames.clone())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Every sample, all threads.
    pub fn all(&self) -> Vec<(u32, Seen)> {
        let map = self.0.lock().unwrap();
        map.iter()
            .flat_map(|(tid, v)| v.iter().map(move |s| (*tid, s.clone())))
            .collect()
    }
}

/// The run-time address range of the function at `addr` in this executable: from its symbol's
/// start to start + size (symbol table of /proc/self/exe, load bias from `addr`).
pub fn function_range(addr: usize) -> (usize, usize) {
    let data = std::fs::read("/proc/self/exe").expect("read /proc/self/exe");
    let file = object::File::parse(&*data).expect("parse /proc/self/exe");
    let symbols: Vec<_> = file
        .symbols()
        .filter(|s| s.kind() == object::SymbolKind::Text && s.size() > 0)
        .collect();
    // The bias is the same for every symbol: find the one whose biased range holds `addr`
    // by trying each symbol's bias (page-aligned biases only: PIE load addresses are).
    for s in &symbols {
        let bias = (addr as u64).wrapping_sub(s.address());
        if bias % 4096 != 0 {
            continue;
        }
        // Confirm the bias with a second symbol: `function_range` itself.
        let me = function_range as *const () as usize as u64;
        let confirmed = symbols.iter().any(|t| t.address().wrapping_add(bias) == me);
        if confirmed {
            return (addr, addr + s.size() as usize);
        }
    }
    panic!("no symbol for address {addr:#x}");
}

#[allow(unused_imports)] // not every sampling test reads the CPU clock
pub use metron_tests::split::thread_cpu_ns;

/// The calling thread's kernel id.
/// `CLOCK_MONOTONIC` in nanoseconds, the clock of the samples' `ts_ns`.
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec to write; CLOCK_MONOTONIC always exists.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

pub fn gettid() -> u32 {
    // SAFETY: gettid has no preconditions.
    unsafe { libc::gettid() as u32 }
}
