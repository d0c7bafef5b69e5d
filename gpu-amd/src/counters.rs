//! GPU counters per kernel dispatch on AMD, through the AQLprofile extension
//! (`METRON_GPU_METRICS`): the counters are named as in `metrics/data/amd_gpu.xml` (block and
//! counter id per GFX architecture, the rocprofiler v1 model), derived metrics as
//! `name=expression` or by the file's metric names.
//!
//! Set-up (at `OnLoad`, not on any packet): every event is validated for each GPU; each GPU
//! gets [`SLOTS_PER_GPU`] profiles, each with its command and output buffers in fine-grained
//! system memory the GPU may access, its start and stop packets made once, and a completion
//! signal of its own. Per dispatch (the intercept handler): a free profile is taken
//! (lock-free) and the dispatch is written as `start, dispatch, stop`, with the barrier bit on
//! `start` and `stop` so the counters cover that dispatch alone; the stop packet's signal runs
//! the completion handler, which reads the counters (`iterate_data`, summed over instances)
//! and frees the profile. When every profile is in use the dispatch runs uncounted (counted in
//! `metadata.json`). Counting serializes the counted dispatches of a queue.

use crate::agent::Agent;
use crate::sys::{DispatchPacket, Handle, Runtime};
use crate::sys_aqlprofile::{self as aql, AqlprofileTable, Descriptor, Event, PoolCalls, Profile};
use crossbeam_queue::ArrayQueue;
use metron_metrics::MetricList;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

/// Most counters per dispatch (the fixed record has room for this many values).
pub const MAX_COUNTERS: usize = 8;
/// Profiles (dispatches counted at once) per GPU.
pub const SLOTS_PER_GPU: usize = 16;
/// Most AQLprofile events per profile (a counter of a block with N instances is N events).
pub const MAX_EVENTS: usize = 128;

/// One profile: a dispatch's counters from start to stop.
pub struct Slot {
    pub signal: Handle,
    pub start: DispatchPacket,
    pub stop: DispatchPacket,
    /// Boxed: AQLprofile may keep its address.
    profile: Box<Profile>,
}

/// The counters of one GPU.
pub struct GpuSlots {
    pub slots: Box<[Slot]>,
    pub free: ArrayQueue<u32>,
    /// Every instance of every counter (the profiles point at this).
    events: Box<[Event]>,
    /// For each event, the counter (index in `list.hardware`) it adds to.
    counter_of: Box<[usize]>,
    /// Instances per counter.
    instances: Vec<u32>,
}

/// `(events, the counter of each event, instances per counter)`.
pub type Expanded = (Vec<Event>, Vec<usize>, Vec<u32>);

/// Each counter once per instance of its block (AQLprofile's `BLOCK_ID` query; 1 when it does
/// not say).
pub fn expand_instances(
    base: &[Event],
    instances_of: impl Fn(&Event) -> Option<u32>,
) -> Result<Expanded, String> {
    let (mut events, mut counter_of, mut counts) = (Vec::new(), Vec::new(), Vec::new());
    for (i, e) in base.iter().enumerate() {
        let n = instances_of(e).unwrap_or(1).clamp(1, MAX_EVENTS as u32);
        for index in 0..n {
            events.push(Event {
                block_index: index,
                ..*e
            });
            counter_of.push(i);
        }
        counts.push(n);
    }
    if events.len() > MAX_EVENTS {
        return Err(format!(
            "{} AQLprofile events once every block instance is counted; at most {MAX_EVENTS}",
            events.len()
        ));
    }
    Ok((events, counter_of, counts))
}

/// The counter set-up of the process.
pub struct Counters {
    pub list: MetricList,
    table: AqlprofileTable,
    /// By device index.
    pub gpus: Vec<GpuSlots>,
}

static COUNTERS: OnceLock<Counters> = OnceLock::new();
static ERROR: Mutex<Option<String>> = Mutex::new(None);
static COUNTED: AtomicU64 = AtomicU64::new(0);
static UNCOUNTED: AtomicU64 = AtomicU64::new(0);
static READ_FAILED: AtomicU64 = AtomicU64::new(0);

/// The counters, when set up.
pub fn get() -> Option<&'static Counters> {
    COUNTERS.get()
}

/// A dispatch ran uncounted (no free profile).
pub fn uncounted() {
    UNCOUNTED.fetch_add(1, Ordering::Relaxed);
}

/// The GFX architecture whose table applies to `arch`: itself, else its family (`gfx906` →
/// `gfx9`).
fn table_for<'a>(
    set: &'a metron_metrics::MetricSet,
    arch: &str,
) -> Option<&'a metron_metrics::Arch> {
    set.arch(arch).or_else(|| {
        let family = arch.get(..4)?;
        set.arch(family)
    })
}

/// `METRON_GPU_METRICS` with the file's metric names written out as `name=expression`.
fn expand(raw: &str, set: &metron_metrics::MetricSet, arch: &metron_metrics::Arch) -> String {
    metron_metrics::split_list(raw)
        .into_iter()
        .map(|entry| {
            if entry.contains('=') || arch.counters.contains_key(&entry) {
                return entry;
            }
            match set.metric(&entry) {
                Some(m) => format!("{entry}={}", m.expr),
                None => entry,
            }
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// The events of `list` on `arch` (`Err` names an unknown counter and lists the known ones).
pub fn events_of(
    list: &MetricList,
    arch_name: &str,
    arch: &metron_metrics::Arch,
) -> Result<Vec<Event>, String> {
    if list.hardware.len() > MAX_COUNTERS {
        return Err(format!(
            "{} AMD GPU counters asked for; at most {MAX_COUNTERS} per dispatch",
            list.hardware.len()
        ));
    }
    list.hardware
        .iter()
        .map(|name| {
            let c = arch.counters.get(name).ok_or_else(|| {
                format!(
                    "unknown AMD GPU counter {name} for {arch_name}; {} has: {} (and the derived \
                     metrics of metrics/data/amd_gpu.xml, or name=expression)",
                    arch.name,
                    arch.counters.keys().cloned().collect::<Vec<_>>().join(", ")
                )
            })?;
            let block = aql::BLOCKS.iter().find(|b| b.0 == c.block).ok_or_else(|| {
                format!(
                    "counter {name}: block {} is not an AQLprofile block Metron knows",
                    c.block
                )
            })?;
            Ok(Event {
                block_name: block.1,
                block_index: 0,
                counter_id: c.event as u32,
            })
        })
        .collect()
}

/// Sets counters up from `METRON_GPU_METRICS` (`raw`); on failure the reason is kept for
/// `metadata.json`, said on stderr, and dispatches are traced uncounted.
pub fn setup(rt: &Runtime, pools: Option<PoolCalls>, agents: &[Agent], raw: &str) {
    if let Err(why) = try_setup(rt, pools, agents, raw) {
        eprintln!("metron: AMD GPU counters are off: {why}");
        *ERROR.lock().unwrap_or_else(|e| e.into_inner()) = Some(why);
    }
}

fn try_setup(
    rt: &Runtime,
    pools: Option<PoolCalls>,
    agents: &[Agent],
    raw: &str,
) -> Result<(), String> {
    let set = metron_metrics::MetricSet::from_xml(
        metron_metrics::DEFAULT_AMD_GPU_FILE,
        metron_metrics::DEFAULT_AMD_GPU_XML,
    )
    .map_err(|e| e.to_string())?;
    let gpus: Vec<&Agent> = agents.iter().filter(|a| a.gpu).collect();
    let first = gpus.first().ok_or("no GPU agent")?;
    let arch = table_for(&set, &first.arch).ok_or_else(|| {
        format!(
            "no counter table for {} in amd_gpu.xml (it has {})",
            first.arch,
            set.arches().keys().cloned().collect::<Vec<_>>().join(", ")
        )
    })?;
    let list = MetricList::parse(&expand(raw, &set, arch))?;
    let base = events_of(&list, &first.arch, arch)?;
    let table = rt.aqlprofile().ok_or(
        "the runtime offers no AQLprofile extension (libhsa-amd-aqlprofile64.so not installed)",
    )?;
    let pools = pools.ok_or("the runtime's table has no memory-pool entries")?;
    let host = agents
        .iter()
        .find(|a| !a.gpu)
        .ok_or("no CPU agent for the profile buffers")?;
    let mut per_gpu = Vec::new();
    for gpu in &gpus {
        let block_name = |e: &Event| {
            aql::BLOCKS
                .iter()
                .find(|b| b.1 == e.block_name)
                .map_or("?", |b| b.0)
        };
        let (events, counter_of, instances) =
            expand_instances(&base, |e| table.instances(gpu.handle, block_name(e)))?;
        for (e, &i) in events.iter().zip(&counter_of) {
            if !table.valid(gpu.handle, e) {
                return Err(format!(
                    "{} ({}) does not count {}: AQLprofile rejects block {} instance {} counter {}",
                    gpu.name,
                    gpu.arch,
                    list.hardware[i],
                    block_name(e),
                    e.block_index,
                    e.counter_id
                ));
            }
        }
        let events = events.into_boxed_slice();
        let mut slots = Vec::with_capacity(SLOTS_PER_GPU);
        for _ in 0..SLOTS_PER_GPU {
            let mut profile = Box::new(Profile::pmc(gpu.handle, &events));
            let command = table
                .info_u32(&profile, aql::INFO_COMMAND_BUFFER_SIZE)
                .ok_or("AQLprofile gives no command buffer size")?;
            let output = table
                .info_u32(&profile, aql::INFO_PMC_DATA_SIZE)
                .ok_or("AQLprofile gives no PMC data size")?;
            let alloc = |size: u32| {
                pools
                    .alloc_system(host.handle, gpu.handle, size.max(64) as usize)
                    .ok_or("no fine-grained system memory for the profile buffers")
            };
            profile.command_buffer = Descriptor {
                ptr: alloc(command)?,
                size: command,
            };
            profile.output_buffer = Descriptor {
                ptr: alloc(output)?,
                size: output,
            };
            let (mut start, mut stop) = table
                .packets(&mut profile)
                .ok_or("AQLprofile made no start/stop packets")?;
            start.header |= 1 << aql::PACKET_HEADER_BARRIER;
            stop.header |= 1 << aql::PACKET_HEADER_BARRIER;
            let signal = rt.create_signal().ok_or("no signal for the stop packet")?;
            slots.push(Slot {
                signal,
                start,
                stop,
                profile,
            });
        }
        let free = ArrayQueue::new(slots.len());
        for i in 0..slots.len() {
            let _ = free.push(i as u32);
        }
        per_gpu.push(GpuSlots {
            slots: slots.into_boxed_slice(),
            free,
            events,
            counter_of: counter_of.into_boxed_slice(),
            instances,
        });
    }
    let derived: Vec<(String, String)> = list
        .derived
        .iter()
        .map(|(n, s, _)| (n.clone(), s.clone()))
        .collect();
    metron::sinks::kernels_csv::set_counter_metrics(list.columns(), derived);
    eprintln!(
        "metron: AMD GPU counters: {} on {} ({} GPU(s), {} dispatches counted at once per GPU; \
         counted dispatches are serialized)",
        list.columns().join(", "),
        first.arch,
        gpus.len(),
        SLOTS_PER_GPU
    );
    let _ = COUNTERS.set(Counters {
        list,
        table,
        gpus: per_gpu,
    });
    Ok(())
}

impl Counters {
    /// Reads the counters of `slot` on `device` after its stop packet completed: the hardware
    /// values (the first `n` of the array). `None` if the runtime refused.
    pub fn read(&self, device: u32, slot: u32) -> Option<([u64; MAX_COUNTERS], usize)> {
        let gpu = self.gpus.get(device as usize)?;
        let s = gpu.slots.get(slot as usize)?;
        let mut per_event = [0u64; MAX_EVENTS];
        let n = gpu.events.len();
        if self
            .table
            .read(&s.profile, &gpu.events, &mut per_event[..n])
        {
            COUNTED.fetch_add(1, Ordering::Relaxed);
            let mut values = [0u64; MAX_COUNTERS];
            for (v, &i) in per_event[..n].iter().zip(gpu.counter_of.iter()) {
                values[i] = values[i].wrapping_add(*v);
            }
            Some((values, self.list.hardware.len()))
        } else {
            READ_FAILED.fetch_add(1, Ordering::Relaxed);
            None
        }
    }
}

/// The `counters` part of `metadata.json`'s `gpu` section.
pub fn metadata() -> serde_json::Value {
    let error = ERROR.lock().unwrap_or_else(|e| e.into_inner()).clone();
    match (COUNTERS.get(), error) {
        (None, None) => serde_json::Value::Null,
        (c, error) => serde_json::json!({
            "metrics": c.map(|c| c.list.columns()),
            "instances_per_counter": c.and_then(|c| c.gpus.first()).map(|g| g.instances.clone()),
            "error": error,
            "kernels_counted": COUNTED.load(Ordering::Relaxed),
            "kernels_uncounted_no_free_profile": UNCOUNTED.load(Ordering::Relaxed),
            "reads_refused": READ_FAILED.load(Ordering::Relaxed),
            "profiles_per_gpu": SLOTS_PER_GPU,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set() -> metron_metrics::MetricSet {
        metron_metrics::MetricSet::from_xml(
            metron_metrics::DEFAULT_AMD_GPU_FILE,
            metron_metrics::DEFAULT_AMD_GPU_XML,
        )
        .unwrap()
    }

    #[test]
    fn counters_become_aqlprofile_events_of_the_architecture() {
        let set = set();
        let arch = table_for(&set, "gfx90a").unwrap();
        let list = MetricList::parse(&expand("SQ_WAVES,VALU_PER_WAVE", &set, arch)).unwrap();
        assert_eq!(list.hardware, ["SQ_WAVES", "SQ_INSTS_VALU"]);
        assert_eq!(
            list.columns(),
            ["SQ_WAVES", "SQ_INSTS_VALU", "VALU_PER_WAVE"]
        );
        let events = events_of(&list, "gfx90a", arch).unwrap();
        assert_eq!(
            events,
            [
                Event {
                    block_name: 6,
                    block_index: 0,
                    counter_id: 4
                },
                Event {
                    block_name: 6,
                    block_index: 0,
                    counter_id: 26
                }
            ]
        );
        assert_eq!(
            table_for(&set, "gfx906").unwrap().name,
            "gfx9",
            "the family's table"
        );
        assert!(table_for(&set, "gfx1100").is_none());
    }

    #[test]
    fn counters_of_blocks_with_instances_become_one_event_per_instance() {
        let sq = Event {
            block_name: 6,
            block_index: 0,
            counter_id: 4,
        };
        let tcc = Event {
            block_name: 12,
            block_index: 0,
            counter_id: 17,
        };
        let (events, counter_of, instances) =
            expand_instances(&[sq, tcc], |e| (e.block_name == 12).then_some(3)).unwrap();
        assert_eq!(instances, [1, 3]);
        assert_eq!(counter_of, [0, 1, 1, 1]);
        assert_eq!(
            events.iter().map(|e| e.block_index).collect::<Vec<_>>(),
            [0, 0, 1, 2]
        );
        assert!(expand_instances(&[sq, tcc], |_| Some(100))
            .unwrap_err()
            .contains("200 AQLprofile events once every block instance is counted; at most 128"));
    }

    #[test]
    fn an_unknown_counter_is_named_with_what_the_architecture_has() {
        let set = set();
        let arch = table_for(&set, "gfx90a").unwrap();
        let list = MetricList::parse("SQ_WAVES,TCC_HITS").unwrap();
        let e = events_of(&list, "gfx90a", arch).unwrap_err();
        assert!(
            e.contains("unknown AMD GPU counter TCC_HITS for gfx90a"),
            "{e}"
        );
        assert!(e.contains("SQ_INSTS_VALU"), "{e}");
        let nine = MetricList::parse("a,b,c,d,e,f,g,h,i").unwrap();
        assert!(events_of(&nine, "gfx90a", arch)
            .unwrap_err()
            .contains("at most 8"));
    }
}
