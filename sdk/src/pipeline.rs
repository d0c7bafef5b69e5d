//! The flusher's work: decode slot batches into [`Event`]s, convert ticks to `CLOCK_MONOTONIC`
//! nanoseconds, check nesting, count, and feed the sinks.

use crate::buffer::Batch;
use crate::callsite::{self, Callsite};
use crate::record::{kind, value_type, Header, Slot};
use crate::region::AnnotationValue;
use crate::sink::{EmptyRegion, Event, Present, RunInfo, SampleTrigger, Sink, ThreadInfo};
use metron_components::clock::{self, Calibration};
use std::collections::HashMap;
use std::path::PathBuf;

/// Per-thread decoding state and counts (reported in `metadata.json`).
#[derive(Debug, Default, serde::Serialize)]
pub struct ThreadStats {
    /// The thread.
    pub thread: Option<ThreadInfo>,
    /// Records decoded.
    pub records_written: u64,
    /// Records dropped by the buffer policy.
    pub records_dropped: u64,
    /// Region ends that did not match the innermost open region.
    pub unbalanced_ends: u64,
    /// Regions still open when the run finished (closed by Metron).
    pub open_at_exit: u64,
    /// Regions still open when the process crashed, ended by Metron at the crash.
    pub open_at_crash: u64,
    /// Records whose id or layout could not be decoded.
    pub malformed: u64,
    /// Call stacks decoded (sampler and backtraces).
    pub samples: u64,
    #[serde(skip)]
    stack: Vec<(&'static Callsite, u64)>,
    #[serde(skip)]
    last_ns: u64,
}

pub(crate) struct Pipeline {
    sinks: Vec<Box<dyn Sink>>,
    threads: HashMap<u64, ThreadStats>,
    sites: Vec<&'static Callsite>,
    /// The latest thread key seen for each kernel thread id (samples find their thread here).
    by_tid: HashMap<u32, u64>,
    /// Keys made for threads first seen through their samples.
    sample_keys: std::collections::HashSet<u64>,
    /// The calibration the last batch was decoded with (refined per batch); none before the
    /// first (see [`Pipeline::calibration`]).
    calibration: Option<Calibration>,
    initial: Option<Calibration>,
    /// Set when the run ends: a first calibration from then on does not wait out its window.
    ending: bool,
    finished: bool,
    /// Whether any sink has been handed anything (after which the run folder cannot move).
    delivered: bool,
    /// The run folder: as the settings name it until claimed, then the one this run owns.
    output_dir: PathBuf,
    /// Whether `output_dir` is claimed (see [`crate::output_path::claim`]).
    claimed: bool,
    /// The claim on `output_dir`, held until the run's last file is written.
    claim: Option<crate::output_path::ClaimedFolder>,
    /// A second thread for the trace sink (`METRON_BACKEND_THREADS=2`), made at the first
    /// batch large enough to use it.
    backend: crate::backend_threads::BackendThreads,
    /// The allocation of the last batch's decoded events, kept empty between batches.
    event_buffer: Vec<Event<'static>>,
    /// A run of empty regions being decoded (handed over before the next other event).
    regions: Vec<EmptyRegion>,
}

impl Pipeline {
    pub(crate) fn new(sinks: Vec<Box<dyn Sink>>, output_dir: PathBuf) -> Pipeline {
        Pipeline {
            sinks,
            threads: HashMap::new(),
            sites: Vec::new(),
            by_tid: HashMap::new(),
            sample_keys: Default::default(),
            event_buffer: Vec::new(),
            regions: Vec::new(),
            calibration: None,
            initial: None,
            ending: false,
            finished: false,
            delivered: false,
            output_dir,
            claimed: false,
            claim: None,
            backend: crate::backend_threads::BackendThreads::new(1),
        }
    }

    /// Hands large batches to the sinks on `threads` threads (1 or 2).
    pub(crate) fn with_backend_threads(mut self, threads: usize) -> Pipeline {
        self.backend = crate::backend_threads::BackendThreads::new(threads);
        self
    }

    /// `metadata.json` `buffer.backend`: the threads and how many batches used both.
    pub(crate) fn backend_metadata(&self) -> serde_json::Value {
        self.backend.metadata()
    }

    /// Claims the run folder before the first records reach a sink that writes into it while
    /// the run goes on (the trace). Without such a sink nothing is written before the end, and
    /// a run that never ends normally (killed by a signal it does not handle) leaves no folder.
    fn claim_before_writing(&mut self) {
        if !self.claimed && self.sinks.iter().any(|s| s.writes_while_running()) {
            self.claim_output_dir();
        }
    }

    /// The run folder this run writes, claimed on first call: before the first records reach
    /// the sinks (the trace is written while the run goes on) or at the end. A folder another
    /// run has (or had) is never written: the run moves to a free suffix and says so.
    pub(crate) fn claim_output_dir(&mut self) -> PathBuf {
        if self.claimed {
            return self.output_dir.clone();
        }
        self.claimed = true;
        let dir = crate::output_path::claim(&self.output_dir).map(|claim| {
            let dir = claim.path().to_path_buf();
            self.claim = Some(claim);
            dir
        });
        match dir {
            Ok(dir) if dir != self.output_dir => {
                // Inside `metron run`'s process tree a program `exec`ed with the same name and
                // pid takes the next suffix as a matter of course; processes.json lists it.
                let in_tree = std::env::var_os("METRON_RUN_FOLDER")
                    .filter(|v| !v.is_empty())
                    .is_some_and(|tree| dir.starts_with(tree));
                if !in_tree {
                    crate::first_use::say(format!(
                        "the run folder {} is another run's; this run writes {}",
                        self.output_dir.display(),
                        dir.display()
                    ));
                }
                for sink in &mut self.sinks {
                    sink.output_dir_changed(&dir);
                }
                self.output_dir = dir;
            }
            Ok(_) => {}
            // The writes that follow fail and are reported with their outputs.
            Err(e) => crate::first_use::say(format!(
                "cannot create the run folder {}: {e}",
                self.output_dir.display()
            )),
        }
        self.output_dir.clone()
    }

    pub(crate) fn add_sink(&mut self, mut sink: Box<dyn Sink>) {
        // A sink added while the run goes on (a GPU backend's) learns the run folder now.
        sink.output_dir_changed(&self.output_dir);
        self.sinks.push(sink);
    }

    /// The run's files are all written: the folder's claim is let go (its files keep other runs
    /// out).
    pub(crate) fn release_claim(&mut self) {
        self.claim = None;
    }

    /// Moves the run folder of every sink to `dir`; false (and nothing changed) once a sink was
    /// handed anything, since it may have started writing into the old folder.
    pub(crate) fn move_output_dir(&mut self, dir: &std::path::Path) -> bool {
        if self.delivered {
            return false;
        }
        if self.claimed {
            // Claimed for nothing (an empty folder): give it back.
            self.claim = None;
            let _ = std::fs::remove_dir(&self.output_dir);
            self.claimed = false;
        }
        self.output_dir = dir.to_path_buf();
        for sink in &mut self.sinks {
            sink.output_dir_changed(dir);
        }
        true
    }

    /// The run is ending: what is left to decode lies between the clock's reference point and
    /// now, so a first calibration is measured over that span instead of waiting for the window
    /// ([`clock::calibration_now`]): a process that lives a millisecond does not wait 2 ms more
    /// at its exit.
    pub(crate) fn run_is_ending(&mut self) {
        self.ending = true;
    }

    /// The calibration the first batch was decoded with.
    pub(crate) fn initial_calibration(&self) -> Calibration {
        self.initial.unwrap_or_else(clock::calibration_now)
    }

    /// The calibration refined to now. The first one is measured here, on the flusher (or by
    /// whoever asks first), not when the pipeline is made at the program's start: measuring
    /// waits until the rate's window has passed since the clock's reference point.
    pub(crate) fn calibration(&mut self) -> Calibration {
        let cal = match self.calibration {
            Some(cal) => cal.refined(),
            None => {
                let first = if self.ending {
                    clock::calibration_now()
                } else {
                    *clock::calibration()
                };
                self.initial = Some(first);
                first.refined()
            }
        };
        self.calibration = Some(cal);
        cal
    }

    /// Once per record: kept inline (the compiler stopped inlining it on its own when the sinks
    /// moved to their own crate, +13 instructions per region in the flusher).
    #[inline(always)]
    fn site(&mut self, id: u32) -> Option<&'static Callsite> {
        let index = id.checked_sub(1)? as usize;
        if index >= self.sites.len() {
            callsite::snapshot(&mut self.sites);
        }
        self.sites.get(index).copied()
    }

    /// Decodes one batch and hands its events to every sink.
    pub(crate) fn consume(&mut self, batch: Batch<'_, Slot>) {
        if self.finished {
            return;
        }
        let cal = self.calibration();
        // A thread the sampler saw first keeps the key its samples got.
        let key = match self.by_tid.get(&batch.producer.tid) {
            Some(&k) if self.sample_keys.contains(&k) => k,
            _ => batch.producer.index,
        };
        self.by_tid.insert(batch.producer.tid, key);
        let mut state = self.threads.remove(&key).unwrap_or_default();
        if state.thread.is_none() {
            state.thread = Some(ThreadInfo {
                tid: batch.producer.tid,
                name: batch.producer.thread_name.clone(),
                index: batch.producer.index,
                is_metron: batch.producer.thread_name.starts_with("metron"),
            });
        }
        // The previous batch's allocation, reused (its pages are already in: a fresh one per
        // batch costs page faults); the collect runs in place for an empty vector.
        let mut events: Vec<Event<'_>> = std::mem::take(&mut self.event_buffer)
            .into_iter()
            .map(|_: Event<'static>| unreachable!("the kept buffer is empty"))
            .collect();
        let part = self.backend.part_events();
        // Runs of empty regions go to the sinks apart from the other events (one thread), in
        // the previous batch's allocation.
        let runs = self.backend.empty_region_runs();
        let mut regions = std::mem::take(&mut self.regions);
        regions.reserve(batch.records.len().min(part) / 2);
        events.reserve(batch.records.len().min(part.saturating_add(64)));
        let records = batch.records;
        // The thread's clock and count in locals for the loop (stored back after it).
        let mut last_ns = state.last_ns;
        let mut decoded = 0u64;
        let mut present = Present::REGIONS_ONLY;
        // Where the batch's last thread name is, if it has one (found as it is decoded rather
        // than by scanning the batch again).
        let mut renamed_at = None;
        // Regions with nothing inside decoded in a row (as events, before a run starts).
        let mut in_a_row = 0usize;
        let mut i = 0;
        // The batch in parts of about `part` records, each handed over before the next is
        // decoded (a record that ends a part may take the next one's first: a pair).
        let mut part_end = part.min(records.len());
        'records: loop {
            if i >= records.len() {
                break;
            }
            if i >= part_end {
                if !regions.is_empty() {
                    self.deliver_regions(&state, &mut regions);
                }
                if !events.is_empty() {
                    self.hand_over_part(&mut state, &mut events, &mut present, &mut renamed_at);
                }
                part_end = part_end.saturating_add(part).min(records.len());
            }
            while i < part_end {
                let slot = records[i];
                let head = Header::unpack(slot.header);
                // The common records first, in a few instructions each: a begin of a known call
                // site, and the end of the innermost open region without values.
                if head.extra == 0 {
                    if head.kind == kind::BEGIN {
                        let index = (head.id as usize).wrapping_sub(1);
                        if let Some(&site) = self.sites.get(index) {
                            last_ns = to_ns(&cal, slot.ticks).max(last_ns);
                            // Its end next (a region with nothing inside): both events without
                            // passing through the open-region stack.
                            if let Some(next) = records.get(i + 1) {
                                if next.header == crate::record::header(head.id, kind::END, 0, 0) {
                                    let begin_ns = last_ns;
                                    last_ns = to_ns(&cal, next.ticks).max(last_ns);
                                    let region = EmptyRegion {
                                        site,
                                        begin_ns,
                                        end_ns: last_ns,
                                    };
                                    // A run goes on, or starts once enough came in a row to
                                    // pay for handing it over apart: else two events.
                                    if regions.is_empty() && !(runs && in_a_row >= MIN_RUN) {
                                        events.extend_from_slice(&region.events());
                                        in_a_row += 1;
                                    } else {
                                        if !events.is_empty() {
                                            self.hand_over_part(
                                                &mut state,
                                                &mut events,
                                                &mut present,
                                                &mut renamed_at,
                                            );
                                        }
                                        regions.push(region);
                                    }
                                    decoded += 2;
                                    i += 2;
                                    continue;
                                }
                            }
                            in_a_row = 0;
                            if !regions.is_empty() {
                                self.deliver_regions(&state, &mut regions);
                            }
                            state.stack.push((site, last_ns));
                            events.push(Event::Begin {
                                ts_ns: last_ns,
                                site,
                            });
                            decoded += 1;
                            i += 1;
                            continue;
                        }
                    } else if head.kind == kind::END {
                        if let Some(&(site, begin_ns)) = state.stack.last() {
                            if site.id() == head.id {
                                in_a_row = 0;
                                if !regions.is_empty() {
                                    self.deliver_regions(&state, &mut regions);
                                }
                                last_ns = to_ns(&cal, slot.ticks).max(last_ns);
                                state.stack.pop();
                                events.push(Event::plain_end(begin_ns, last_ns, site));
                                decoded += 1;
                                i += 1;
                                continue;
                            }
                        }
                    }
                }
                let payload_end = i + 1 + head.extra as usize;
                if payload_end > records.len() {
                    state.malformed += 1;
                    break 'records;
                }
                in_a_row = 0;
                if !regions.is_empty() {
                    self.deliver_regions(&state, &mut regions);
                }
                let payload = &records[i + 1..payload_end];
                let raw_ns = to_ns(&cal, slot.ticks);
                // An async begin may carry a time read earlier (`by_id::async_begin_at_ticks`: a
                // `tracing` span known to be async only at its close); it lies on a track of its
                // own, so it keeps its time and does not move the thread's clock.
                let ts_ns = if head.kind == kind::ASYNC_BEGIN {
                    raw_ns
                } else {
                    last_ns = raw_ns.max(last_ns);
                    last_ns
                };
                decoded += 1;
                let before = events.len();
                self.decode(&mut state, head, ts_ns, payload, &mut events);
                if let Some(event) = events.get(before..) {
                    event.iter().for_each(|e| present.add(e));
                }
                if head.kind == kind::THREAD_NAME && events.len() > before {
                    renamed_at = Some(before);
                }
                i = payload_end;
            }
        }
        if !regions.is_empty() {
            self.deliver_regions(&state, &mut regions);
        }
        self.regions = regions;
        state.last_ns = last_ns;
        state.records_written += decoded;
        if batch.dropped > 0 {
            state.records_dropped += batch.dropped;
            events.push(Event::Dropped {
                ts_ns: state.last_ns,
                count: batch.dropped,
            });
            present.other = true;
        }
        self.hand_over(&mut state, &mut events, present, renamed_at);
        self.threads.insert(key, state);
        self.event_buffer = events
            .into_iter()
            .map(|_| unreachable!("cleared"))
            .collect();
    }

    /// Hands the run of empty regions decoded so far to every sink, and empties it.
    fn deliver_regions(&mut self, state: &ThreadStats, regions: &mut Vec<EmptyRegion>) {
        let thread = state.thread.as_ref().expect("set by consume");
        self.claim_before_writing();
        self.delivered = true;
        for sink in &mut self.sinks {
            sink.empty_regions(thread, regions);
        }
        regions.clear();
    }

    /// [`Pipeline::hand_over`] of a part of the batch (more follows): `present` and
    /// `renamed_at` start again for the next part.
    fn hand_over_part(
        &mut self,
        state: &mut ThreadStats,
        events: &mut Vec<Event<'_>>,
        present: &mut Present,
        renamed_at: &mut Option<usize>,
    ) {
        present.continues = true;
        self.hand_over(state, events, *present, renamed_at.take());
        *present = Present::REGIONS_ONLY;
    }

    /// Hands the events decoded so far of one thread's batch to every sink, and empties
    /// `events`. `renamed_at`: where the last thread name among them is.
    fn hand_over(
        &mut self,
        state: &mut ThreadStats,
        events: &mut Vec<Event<'_>>,
        present: Present,
        renamed_at: Option<usize>,
    ) {
        if let Some(Event::ThreadName { name, .. }) = renamed_at.and_then(|at| events.get(at)) {
            if let Some(thread) = state.thread.as_mut() {
                thread.name = (*name).to_string();
            }
        }
        let thread = state.thread.as_ref().expect("set by consume");
        self.claim_before_writing();
        self.delivered = true;
        self.backend
            .deliver(&mut self.sinks, thread, events, present);
        events.clear();
    }

    /// Decodes the sampler's records of thread `tid` (kind `SAMPLE` only, from its signal
    /// ring) and hands them to the sinks as that thread's events. Their timestamps are not
    /// clamped to the thread's region stream, which is delivered separately.
    pub(crate) fn consume_samples(&mut self, tid: u32, name: &str, records: &[Slot], dropped: u64) {
        if self.finished || (records.is_empty() && dropped == 0) {
            return;
        }
        let cal = self.calibration();
        let key = match self.by_tid.get(&tid) {
            Some(&k) => k,
            None => {
                let k = crate::buffer::ProducerInfo::next_index();
                self.by_tid.insert(tid, k);
                self.sample_keys.insert(k);
                k
            }
        };
        let mut state = self.threads.remove(&key).unwrap_or_default();
        if state.thread.is_none() {
            state.thread = Some(ThreadInfo {
                tid,
                name: name.to_string(),
                index: key,
                is_metron: name.starts_with("metron"),
            });
        }
        let mut events = Vec::with_capacity(records.len() / 4 + 1);
        let mut i = 0;
        while i < records.len() {
            let head = Header::unpack(records[i].header);
            let end = i + 1 + head.extra as usize;
            if end > records.len() || head.kind != kind::SAMPLE {
                state.malformed += 1;
                break;
            }
            let trigger = match head.aux & 3 {
                0 => SampleTrigger::CpuTime,
                _ => SampleTrigger::RealTime,
            };
            events.push(Event::Sample {
                ts_ns: cal.to_monotonic_ns(records[i].ticks),
                frames: addresses(&records[i + 1..end], (head.aux >> 2) as usize),
                trigger,
            });
            state.records_written += 1;
            state.samples += 1;
            i = end;
        }
        if dropped > 0 {
            state.records_dropped += dropped;
            let ts_ns = match events.last() {
                Some(Event::Sample { ts_ns, .. }) => *ts_ns,
                _ => state.last_ns,
            };
            events.push(Event::Dropped {
                ts_ns,
                count: dropped,
            });
        }
        let thread = state.thread.clone().expect("set above");
        self.claim_before_writing();
        self.delivered = true;
        for sink in &mut self.sinks {
            sink.events(&thread, &events);
        }
        self.threads.insert(key, state);
    }

    fn decode<'a>(
        &mut self,
        state: &mut ThreadStats,
        head: Header,
        ts_ns: u64,
        payload: &'a [Slot],
        events: &mut Vec<Event<'a>>,
    ) {
        match head.kind {
            kind::BEGIN => match self.site(head.id) {
                Some(site) => {
                    state.stack.push((site, ts_ns));
                    events.push(Event::Begin { ts_ns, site });
                }
                None => state.malformed += 1,
            },
            kind::END | kind::BUNDLE_END => {
                let values = if head.kind == kind::BUNDLE_END {
                    words(payload, head.aux as usize)
                } else {
                    &[]
                };
                match state
                    .stack
                    .iter()
                    .rposition(|(site, _)| site.id() == head.id)
                {
                    Some(pos) if pos + 1 == state.stack.len() => {
                        let (site, begin_ns) = state.stack.pop().expect("non-empty");
                        events.push(Event::End {
                            begin_ns,
                            ts_ns,
                            site,
                            values,
                            closed_by_metron: false,
                        });
                    }
                    Some(pos) => {
                        // Regions opened inside this one were never ended: close them here.
                        state.unbalanced_ends += (state.stack.len() - pos - 1) as u64;
                        while state.stack.len() > pos + 1 {
                            let (site, begin_ns) = state.stack.pop().expect("non-empty");
                            events.push(Event::End {
                                begin_ns,
                                ts_ns,
                                site,
                                values: &[],
                                closed_by_metron: true,
                            });
                        }
                        let (site, begin_ns) = state.stack.pop().expect("non-empty");
                        events.push(Event::End {
                            begin_ns,
                            ts_ns,
                            site,
                            values,
                            closed_by_metron: false,
                        });
                    }
                    None => state.unbalanced_ends += 1,
                }
            }
            kind::INSTANT => match self.site(head.id) {
                Some(site) => events.push(Event::Instant { ts_ns, site }),
                None => state.malformed += 1,
            },
            kind::COUNTER => match (self.site(head.id), payload.first()) {
                (Some(site), Some(slot)) => events.push(Event::Counter {
                    ts_ns,
                    site,
                    value: f64::from_bits(slot.ticks),
                }),
                _ => state.malformed += 1,
            },
            kind::ANNOTATION => {
                let value = match (head.aux & 0xF, payload.first()) {
                    (value_type::I64, Some(s)) => Some(AnnotationValue::I64(s.ticks as i64)),
                    (value_type::U64, Some(s)) => Some(AnnotationValue::U64(s.ticks)),
                    (value_type::F64, Some(s)) => {
                        Some(AnnotationValue::F64(f64::from_bits(s.ticks)))
                    }
                    (value_type::BOOL, Some(s)) => Some(AnnotationValue::Bool(s.ticks != 0)),
                    (value_type::STR, _) => Some(AnnotationValue::Str(text(
                        payload,
                        (head.aux >> 4) as usize,
                    ))),
                    _ => None,
                };
                match (self.site(head.id), value) {
                    (Some(key), Some(value)) => {
                        let region = state.stack.last().map(|(site, _)| *site);
                        events.push(Event::Annotation {
                            ts_ns,
                            region,
                            key,
                            value,
                        });
                    }
                    _ => state.malformed += 1,
                }
            }
            kind::ASYNC_BEGIN | kind::ASYNC_END => match (self.site(head.id), payload.first()) {
                (Some(site), Some(slot)) => events.push(if head.kind == kind::ASYNC_BEGIN {
                    Event::AsyncBegin {
                        ts_ns,
                        site,
                        cookie: slot.ticks,
                    }
                } else {
                    Event::AsyncEnd {
                        ts_ns,
                        site,
                        cookie: slot.ticks,
                    }
                }),
                _ => state.malformed += 1,
            },
            kind::SAMPLE => {
                // In the region stream: a backtrace, taken right after its region's begin.
                let frames = addresses(payload, (head.aux >> 2) as usize);
                match (head.aux & 3, state.stack.last()) {
                    (2, Some(&(site, _))) => {
                        state.samples += 1;
                        events.push(Event::Sample {
                            ts_ns,
                            frames,
                            trigger: SampleTrigger::RegionBegin(site),
                        });
                    }
                    _ => state.malformed += 1,
                }
            }
            kind::THREAD_NAME => events.push(Event::ThreadName {
                ts_ns,
                name: text(payload, head.aux as usize),
            }),
            _ => state.malformed += 1,
        }
    }

    /// Hands GPU activity records to every sink (nothing once the run finished).
    pub(crate) fn gpu_records(&mut self, records: &[crate::sink::GpuRecord]) {
        if self.finished {
            return;
        }
        self.claim_before_writing();
        self.delivered = true;
        for sink in &mut self.sinks {
            sink.gpu_records(records);
        }
    }

    /// Closes regions still open, hands the last events to the sinks and lets them write.
    /// After a crash (`crashed`) they are counted as `open_at_crash` instead of `open_at_exit`;
    /// either way they end at `run.end_ns`.
    pub(crate) fn finish(&mut self, run: &RunInfo, crashed: bool) -> (Vec<PathBuf>, Vec<String>) {
        self.finished = true;
        let end_ns = run.end_ns;
        for state in self.threads.values_mut() {
            if state.stack.is_empty() {
                continue;
            }
            let mut events = Vec::new();
            let open = state.stack.len() as u64;
            if crashed {
                state.open_at_crash += open;
            } else {
                state.open_at_exit += open;
            }
            // Never before the thread's last record: the run's end (a crash time) is converted
            // from ticks with a later clock refinement than the records decoded before it, and
            // may come out a few nanoseconds earlier than the last of them.
            let thread_end_ns = end_ns.max(state.last_ns);
            while let Some((site, begin_ns)) = state.stack.pop() {
                events.push(Event::End {
                    begin_ns,
                    ts_ns: thread_end_ns.max(begin_ns),
                    site,
                    values: &[],
                    closed_by_metron: true,
                });
            }
            let thread = state.thread.clone().expect("set on first batch");
            for sink in &mut self.sinks {
                sink.events(&thread, &events);
            }
        }
        self.finish_sinks(run, false)
    }

    /// Whether a late sink needs the run's metadata as `need` says.
    pub(crate) fn late_sinks_need(&self, need: crate::sink::MetadataNeed) -> bool {
        self.sinks
            .iter()
            .any(|s| s.finishes_late() && s.metadata_need() == need)
    }

    /// Hands the run's metadata (as it stands before the late sinks) to the late sinks that
    /// take it in memory.
    pub(crate) fn give_late_sinks_metadata(
        &mut self,
        metadata: &std::sync::Arc<serde_json::Value>,
    ) {
        let given = crate::sink::MetadataNeed::Given;
        for sink in self.sinks.iter_mut() {
            if sink.finishes_late() && sink.metadata_need() == given {
                sink.run_metadata(metadata);
            }
        }
    }

    /// Lets the sinks that write while the run goes on (the trace) and those that draw from
    /// the other outputs (the pictures) write their last part: after [`Pipeline::finish`] (and
    /// `metadata.json` where it goes first), so that a full disk takes none of the small
    /// outputs' space.
    pub(crate) fn finish_late(&mut self, run: &RunInfo) -> (Vec<PathBuf>, Vec<String>) {
        self.finish_sinks(run, true)
    }

    fn finish_sinks(&mut self, run: &RunInfo, late: bool) -> (Vec<PathBuf>, Vec<String>) {
        let mut files = Vec::new();
        let mut errors = Vec::new();
        // Among the late ones, the sinks that write while the run goes on (the trace,
        // `kernels.csv`) finish first: the others (pictures, exports) read their files, and a
        // GPU backend's sinks join the list after them.
        let mut order: Vec<usize> = (0..self.sinks.len())
            .filter(|&i| self.sinks[i].finishes_late() == late)
            .collect();
        order.sort_by_key(|&i| !self.sinks[i].writes_while_running());
        for i in order {
            let sink = &mut self.sinks[i];
            match sink.finish(run) {
                Ok(mut written) => files.append(&mut written),
                Err(e) => errors.push(format!("{} output failed: {e}", sink.name())),
            }
        }
        (files, errors)
    }

    /// Each sink's report for `metadata.json`, by sink name.
    pub(crate) fn sink_metadata(&self) -> serde_json::Map<String, serde_json::Value> {
        self.sinks
            .iter()
            .filter_map(|s| Some((s.name().to_string(), s.metadata()?)))
            .collect()
    }

    /// Per-thread counts, in thread order.
    pub(crate) fn thread_stats(&self) -> Vec<&ThreadStats> {
        let mut all: Vec<&ThreadStats> = self.threads.values().collect();
        all.sort_by_key(|s| s.thread.as_ref().map_or(0, |t| t.index));
        all
    }
}

/// Regions with nothing inside that must have come in a row, as events, before the next ones
/// go as a run ([`Sink::empty_regions`]): handing a run over costs every sink a call (about
/// 1,200 instructions for the defaults' sinks, with the events before it), and a region in a run
/// saves about 40, so short runs cost more than their events (a function's region holding one
/// small region: 1,063 instructions a region with runs of one, 436 with events). Counting
/// behind rather than looking ahead costs a region two instructions.
const MIN_RUN: usize = 32;

/// `cal.to_monotonic_ns(ticks)` without the call to `round` that `f64::round` makes on a
/// baseline x86-64 target (about 30 instructions per record) and with signed conversions (one
/// instruction each, where the unsigned ones take a dozen): for a value of at least 0, adding
/// one half and truncating rounds the same way (half away from zero), and a negative value
/// becomes 0, as `to_monotonic_ns` clamps it; every time is far below 2^52 ns, where the half
/// is exact.
#[inline(always)]
fn to_ns(cal: &Calibration, ticks: u64) -> u64 {
    let delta = ticks.wrapping_sub(cal.ticks0) as i64 as f64;
    ((cal.mono0 as i64 as f64 + delta * cal.ns_per_tick + 0.5) as i64).max(0) as u64
}

/// The first `count` f64 words of a payload.
fn words(payload: &[Slot], count: usize) -> &[f64] {
    let available = payload.len() * 2;
    // SAFETY: `Slot` is `repr(C)` of two u64 with no padding and 16-byte alignment, so the
    // payload's bytes are `available` properly aligned f64 values (any bit pattern is valid).
    let all = unsafe { std::slice::from_raw_parts(payload.as_ptr().cast::<f64>(), available) };
    &all[..count.min(available)]
}

/// The first `count` u64 words of a payload (sample frames).
fn addresses(payload: &[Slot], count: usize) -> &[u64] {
    let available = payload.len() * 2;
    // SAFETY: `Slot` is `repr(C)` of two u64 with no padding and 16-byte alignment, so the
    // payload's bytes are `available` properly aligned u64 values.
    let all = unsafe { std::slice::from_raw_parts(payload.as_ptr().cast::<u64>(), available) };
    &all[..count.min(available)]
}

/// The first `len` bytes of a payload as text (lossy cut at an invalid boundary).
fn text(payload: &[Slot], len: usize) -> &str {
    // SAFETY: `Slot` is plain bytes (`repr(C)`, two u64, no padding); viewing them as u8 is valid.
    let bytes =
        unsafe { std::slice::from_raw_parts(payload.as_ptr().cast::<u8>(), payload.len() * 16) };
    let bytes = &bytes[..len.min(bytes.len())];
    match std::str::from_utf8(bytes) {
        Ok(s) => s,
        Err(e) => std::str::from_utf8(&bytes[..e.valid_up_to()]).unwrap_or(""),
    }
}

/// One decoding pass over prepared region records, handed to `sinks`: the decoder's benchmark
/// (`benches/benches/backend.rs`) measures the flusher's work with it. Not part of the API.
#[doc(hidden)]
pub struct DecodeBench {
    pipeline: Pipeline,
    records: Vec<Slot>,
    producer: crate::buffer::ProducerInfo,
}

impl DecodeBench {
    /// `pairs` begin/end pairs of one call site, 30 ticks apart, for `sinks`, whose run
    /// folder is `dir`.
    pub fn new(sinks: Vec<Box<dyn Sink>>, dir: PathBuf, pairs: usize) -> DecodeBench {
        let id = callsite::intern("bench", crate::CallsiteKind::Region);
        let mut records = Vec::with_capacity(2 * pairs);
        for i in 0..pairs as u64 {
            records.push(Slot {
                ticks: 60 * i,
                header: crate::record::header(id, kind::BEGIN, 0, 0),
            });
            records.push(Slot {
                ticks: 60 * i + 30,
                header: crate::record::header(id, kind::END, 0, 0),
            });
        }
        DecodeBench {
            pipeline: Pipeline::new(sinks, dir),
            records,
            producer: crate::buffer::ProducerInfo {
                tid: crate::sys::gettid(),
                thread_name: "bench".into(),
                index: 0,
            },
        }
    }

    /// Decodes the records once (the same ones each time: the timestamps repeat, which the
    /// decoder clamps to the thread's latest) and hands the events to the sinks.
    pub fn run(&mut self) {
        self.pipeline.consume(Batch {
            producer: &self.producer,
            records: &self.records,
            dropped: 0,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    /// A record without payload of site `id`, `at` thousands of ticks after the clock's reference
    /// point.
    fn record_at(id: u32, kind: u8, at: u64) -> Slot {
        Slot {
            ticks: clock::calibration().ticks0 + 1_000 * at,
            header: crate::record::header(id, kind, 0, 0),
        }
    }

    /// An event as a line: what, site, times.
    fn line(event: &Event<'_>) -> String {
        match *event {
            Event::Begin { ts_ns, site } => format!("begin {} {ts_ns}", site.name),
            Event::End {
                begin_ns,
                ts_ns,
                site,
                closed_by_metron,
                ..
            } => format!("end {} {begin_ns} {ts_ns} {closed_by_metron}", site.name),
            other => format!("{other:?}"),
        }
    }

    /// Writes each event it gets as a [`line`].
    struct Lines(Arc<Mutex<Vec<String>>>);

    impl Sink for Lines {
        fn name(&self) -> &str {
            "lines"
        }
        fn events(&mut self, _thread: &ThreadInfo, events: &[Event<'_>]) {
            self.0.lock().unwrap().extend(events.iter().map(line));
        }
        fn finish(&mut self, _run: &RunInfo) -> std::io::Result<Vec<PathBuf>> {
            Ok(Vec::new())
        }
    }

    #[test]
    fn regions_with_nothing_inside_decode_as_nested_ones_do_across_batch_boundaries() {
        let a = callsite::intern("pair a", crate::CallsiteKind::Region);
        let b = callsite::intern("pair b", crate::CallsiteKind::Region);
        let base = clock::calibration().ticks0;
        let rec = |id, k, at: u64| record_at(id, k, at);
        let (begin, end) = (kind::BEGIN, kind::END);
        // a (empty), a { b (empty), b (empty) }, a whose end is in the next batch, then an
        // end of b that closes nothing (unbalanced) and an a left open until the end.
        let first = [
            rec(a, begin, 1),
            rec(a, end, 2),
            rec(a, begin, 3),
            rec(b, begin, 4),
            rec(b, end, 5),
            rec(b, begin, 6),
            rec(b, end, 7),
            rec(a, end, 8),
            rec(a, begin, 9),
        ];
        let second = [rec(a, end, 10), rec(b, end, 11), rec(a, begin, 12)];
        let lines = Arc::new(Mutex::new(Vec::new()));
        let mut pipeline = Pipeline::new(
            vec![Box::new(Lines(Arc::clone(&lines)))],
            std::env::temp_dir().join("metron-pipeline-pairs-unused"),
        );
        let producer = crate::buffer::ProducerInfo {
            tid: 1,
            thread_name: "t".into(),
            index: 7,
        };
        // Each batch's times through the calibration it was decoded with (refined per batch).
        let mut cals = Vec::new();
        for records in [&first[..], &second[..]] {
            pipeline.consume(Batch {
                producer: &producer,
                records,
                dropped: 0,
            });
            cals.push(pipeline.calibration.expect("decoded a batch"));
        }
        // The oracle: the same events written by hand from the records (a region's begin is
        // the time of its begin record).
        let t = |at: u64| to_ns(&cals[usize::from(at > 9)], base + 1_000 * at);
        let expected = [
            format!("begin pair a {}", t(1)),
            format!("end pair a {} {} false", t(1), t(2)),
            format!("begin pair a {}", t(3)),
            format!("begin pair b {}", t(4)),
            format!("end pair b {} {} false", t(4), t(5)),
            format!("begin pair b {}", t(6)),
            format!("end pair b {} {} false", t(6), t(7)),
            format!("end pair a {} {} false", t(3), t(8)),
            format!("begin pair a {}", t(9)),
            format!("end pair a {} {} false", t(9), t(10)),
            format!("begin pair a {}", t(12)),
        ];
        assert_eq!(*lines.lock().unwrap(), expected);
        let state = &pipeline.threads[&7];
        assert_eq!((state.records_written, state.unbalanced_ends), (12, 1));
        assert_eq!(state.stack.len(), 1, "the last a is still open");
    }

    /// What a sink was handed in one call.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    enum Call {
        /// `batch` with more of the batch to come.
        Part,
        /// `batch`, the batch's last call.
        Last,
        /// `empty_regions`.
        Regions,
    }

    /// Each call's events as lines (a run of empty regions as its begins and ends).
    type Calls = Vec<(Vec<String>, Call)>;

    /// Keeps every call it gets ([`Calls`]).
    struct Parts(Arc<Mutex<Calls>>);

    impl Sink for Parts {
        fn name(&self) -> &str {
            "parts"
        }
        fn events(&mut self, _thread: &ThreadInfo, _events: &[Event<'_>]) {
            unreachable!("the pipeline calls batch")
        }
        fn batch(&mut self, _thread: &ThreadInfo, events: &[Event<'_>], present: Present) {
            let lines = events.iter().map(line).collect();
            let call = if present.continues {
                Call::Part
            } else {
                Call::Last
            };
            self.0.lock().unwrap().push((lines, call));
        }
        fn empty_regions(&mut self, _thread: &ThreadInfo, regions: &[EmptyRegion]) {
            let lines = regions
                .iter()
                .flat_map(EmptyRegion::events)
                .map(|e| line(&e))
                .collect();
            self.0.lock().unwrap().push((lines, Call::Regions));
        }
        fn finish(&mut self, _run: &RunInfo) -> std::io::Result<Vec<PathBuf>> {
            Ok(Vec::new())
        }
    }

    /// A batch of `records` decoded by a pipeline with `threads` back-end threads: each call
    /// its sink got.
    fn decode_in_parts(records: &[Slot], threads: usize) -> (Calls, Calibration) {
        let calls = Arc::new(Mutex::new(Vec::new()));
        let mut pipeline = Pipeline::new(
            vec![Box::new(Parts(Arc::clone(&calls)))],
            std::env::temp_dir().join("metron-pipeline-parts-unused"),
        )
        .with_backend_threads(threads);
        let producer = crate::buffer::ProducerInfo {
            tid: 1,
            thread_name: "t".into(),
            index: 3,
        };
        pipeline.consume(Batch {
            producer: &producer,
            records,
            dropped: 0,
        });
        let calls = calls.lock().unwrap().clone();
        (calls, pipeline.calibration.expect("decoded a batch"))
    }

    /// Asserts `got` is `want`, naming the first difference (not printing every line).
    fn same(got: &[String], want: &[String], what: &str) {
        let first = got.iter().zip(want).position(|(g, w)| g != w);
        assert!(
            got.len() == want.len() && first.is_none(),
            "{what}: {} events against {}; first difference at {first:?}: {:?} against {:?}",
            got.len(),
            want.len(),
            first.map(|i| &got[i]),
            first.map(|i| &want[i]),
        );
    }

    fn joined(calls: &Calls) -> Vec<String> {
        calls.iter().flat_map(|(lines, _)| lines.clone()).collect()
    }

    #[test]
    fn empty_regions_go_as_runs_in_order_with_the_other_events() {
        use crate::backend_threads::PART_EVENTS;
        let outer = callsite::intern("parts outer", crate::CallsiteKind::Region);
        let pair = callsite::intern("parts pair", crate::CallsiteKind::Region);
        let rec = |id, k, at: usize| record_at(id, k, at as u64);
        // An outer region open across every part, one record to put the pairs off the parts'
        // boundaries (so that a pair's begin ends a part and its end starts the next), then
        // empty regions for three and a half parts, and the outer region's end.
        let mut records = vec![rec(outer, kind::BEGIN, 0)];
        let pairs = PART_EVENTS * 7 / 4;
        for p in 0..pairs {
            records.push(rec(pair, kind::BEGIN, 1 + 2 * p));
            records.push(rec(pair, kind::END, 2 + 2 * p));
        }
        records.push(rec(outer, kind::END, 1 + 2 * pairs));
        // The oracle, written from the records with a pipeline's calibration.
        let expected = |cal: &Calibration| {
            let t = |at: usize| to_ns(cal, clock::calibration().ticks0 + 1_000 * at as u64);
            let mut lines = vec![format!("begin parts outer {}", t(0))];
            for p in 0..pairs {
                let (b, e) = (t(1 + 2 * p), t(2 + 2 * p));
                lines.push(format!("begin parts pair {b}"));
                lines.push(format!("end parts pair {b} {e} false"));
            }
            lines.push(format!(
                "end parts outer {} {} false",
                t(0),
                t(1 + 2 * pairs)
            ));
            lines
        };
        // With a second back-end thread: one batch of events, whole.
        let (whole, cal) = decode_in_parts(&records, 2);
        assert_eq!(whole.len(), 1);
        assert_eq!(whole[0].1, Call::Last);
        same(&whole[0].0, &expected(&cal), "whole");
        // On one: the outer begin, a run of empty regions per part, the outer end last.
        let (calls, cal) = decode_in_parts(&records, 1);
        let kinds: Vec<Call> = calls.iter().map(|c| c.1).collect();
        let runs = records.len().div_ceil(PART_EVENTS);
        let mut want = vec![Call::Part];
        want.extend(std::iter::repeat_n(Call::Regions, runs));
        want.push(Call::Last);
        assert_eq!(kinds, want);
        // The first MIN_RUN regions come as events: a run starts once that many came in a row.
        assert_eq!(calls[0].0.len(), 1 + 2 * MIN_RUN);
        assert!(calls
            .iter()
            .all(|(lines, _)| lines.len() <= PART_EVENTS + 2));
        same(&joined(&calls), &expected(&cal), "the calls, joined");
    }

    #[test]
    fn short_runs_of_empty_regions_stay_events() {
        let outer = callsite::intern("short outer", crate::CallsiteKind::Region);
        let inner = callsite::intern("short inner", crate::CallsiteKind::Region);
        // A region holding one empty region, again and again; then MIN_RUN - 1 empty regions
        // in a row inside one more.
        let mut records = Vec::new();
        let mut at = 0u64;
        let mut push = |id, k| {
            records.push(record_at(id, k, at));
            at += 1;
        };
        for _ in 0..1_000 {
            push(outer, kind::BEGIN);
            push(inner, kind::BEGIN);
            push(inner, kind::END);
            push(outer, kind::END);
        }
        push(outer, kind::BEGIN);
        for _ in 0..MIN_RUN - 1 {
            push(inner, kind::BEGIN);
            push(inner, kind::END);
        }
        push(outer, kind::END);
        let (calls, _) = decode_in_parts(&records, 1);
        assert!(
            calls.iter().all(|(_, call)| *call != Call::Regions),
            "no run of empty regions: {:?}",
            calls.iter().map(|c| c.1).collect::<Vec<_>>()
        );
        assert_eq!(joined(&calls).len(), records.len());
    }

    #[test]
    fn a_long_batch_of_other_events_is_handed_over_in_parts() {
        use crate::backend_threads::PART_EVENTS;
        let nested = callsite::intern("parts nested", crate::CallsiteKind::Region);
        // Begins only (each region opens inside the one before): no empty region, every
        // record an event.
        let n = PART_EVENTS * 5 / 2;
        let records: Vec<Slot> = (0..n)
            .map(|at| record_at(nested, kind::BEGIN, at as u64))
            .collect();
        let (calls, cal) = decode_in_parts(&records, 1);
        let want: Vec<String> = (0..n as u64)
            .map(|at| {
                format!(
                    "begin parts nested {}",
                    to_ns(&cal, clock::calibration().ticks0 + 1_000 * at)
                )
            })
            .collect();
        let kinds: Vec<Call> = calls.iter().map(|c| c.1).collect();
        assert_eq!(kinds, vec![Call::Part, Call::Part, Call::Last]);
        assert!(calls.iter().all(|(lines, _)| lines.len() <= PART_EVENTS));
        same(&joined(&calls), &want, "the parts, joined");
    }

    #[test]
    fn the_fast_conversion_rounds_as_the_calibration_does() {
        let cal = Calibration {
            ns_per_tick: 0.408_163_265_3,
            ..*clock::calibration()
        };
        for i in 0..100_000u64 {
            let ticks = cal.ticks0.wrapping_add(i * 7_919).wrapping_sub(50_000);
            assert_eq!(
                to_ns(&cal, ticks),
                cal.to_monotonic_ns(ticks),
                "ticks {ticks}"
            );
        }
    }
}
