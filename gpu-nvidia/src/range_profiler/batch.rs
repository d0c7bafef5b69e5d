//! Region mode's user ranges, batched: what a counted region costs on its own thread.
//!
//! **One pass.** A session's profiler is started once (`Start`) and stays started while
//! region instances come and go: each instance is one `PushRange` .. `PopRange` in the
//! counter-data image, which holds [`Batch::capacity`] ranges, each under a name of its own
//! (its number in the image: CUPTI adds up the ranges of one name, measured on the H200 as
//! 16 instances decoded as one range of exactly 16 times one instance's instructions). Only when the image is full,
//! at the end of the run or when a caller asks, the image is closed: `Stop`, `DecodeData`,
//! and a fresh image is bound (`SetConfig`: under user replay a new `Start` after a complete
//! pass set writes range 0 again) while the full one is handed out, with the instances it
//! holds in order, to be evaluated off the region's thread. A region instance thus pays a
//! push and a pop; one instance in `capacity` also pays the close.
//!
//! **N passes, across instances.** A metric set that needs N passes cannot be counted in one
//! instance of a region, but a region that repeats (a training step, a solver iteration) can
//! give pass k to its k-th instance: a *pass set* is one range replayed N times under user
//! replay, each pass a `Start`, `PushRange`, `PopRange`, `Stop` around one instance of the
//! same region name; after the N-th `Stop` reports every pass submitted, the image is decoded
//! and its one range holds each metric from the instance of the pass that collected it.
//! A context collects one pass set at a time: while region `a` collects, instances of other
//! names read NaN with the reason; when it completes, the next set goes to the first
//! instance of a name with the fewest completed sets, so names that alternate take turns.
//! A set still incomplete at the end of the run reads NaN: the region repeated fewer than N
//! times after its set began.
//!
//! **One range at a time per context.** The GPU's counters cannot tell apart two ranges open
//! at once on a context, and user ranges nest only one level in one pass: an instance that
//! begins while another range is open (on this thread: nested; on another: overlapping) is
//! refused, and the open one is marked when another thread begins or launches meanwhile.
//!
//! Everything here is plain logic over [`RangeCalls`], the seam to CUPTI: the session's
//! implementation calls the Range Profiler, the tests a fake that records the calls.

use std::collections::HashMap;

/// A region instance's range: numbered from 1 in the order instances begin (0 is Metron's
/// own warm-up range, never delivered).
pub type RangeId = u64;

/// The Range Profiler calls a batch makes on one context's profiler object.
pub trait RangeCalls {
    /// A closed, decoded counter-data image.
    type Image;
    /// `cuptiRangeProfilerStart`.
    fn start(&mut self) -> Result<(), String>;
    /// `cuptiRangeProfilerPushRange` of the image's range number `slot` (CUPTI adds ranges of
    /// one name together, so each range of an image has its own name).
    fn push(&mut self, slot: usize) -> Result<(), String>;
    /// `cuptiRangeProfilerPopRange`.
    fn pop(&mut self) -> Result<(), String>;
    /// `cuptiRangeProfilerStop`: whether every pass of the pass set is submitted.
    fn stop(&mut self) -> Result<bool, String>;
    /// `cuptiRangeProfilerDecodeData`: how many ranges were dropped.
    fn decode(&mut self) -> Result<usize, String>;
    /// Hands out the decoded image and binds a fresh one (`SetConfig`) for the next `Start`.
    fn rotate(&mut self) -> Result<Self::Image, String>;
}

/// One range of a closed image: the instances whose counts it holds, one per pass (pass k
/// of the set in `instances[k]`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Slot {
    /// The region name (its call site id).
    pub name: u32,
    /// The instances, in pass order.
    pub instances: Vec<RangeId>,
    /// Why the range's values are not the instance's own (another thread's work was counted).
    pub spoiled: Option<String>,
}

/// A closed image: range `i` of `image` holds `slots[i]`.
#[derive(Debug)]
pub struct Closed<I> {
    /// The decoded image (`None` when closing it failed: every slot reads NaN with `error`).
    pub image: Option<I>,
    /// The ranges in image order.
    pub slots: Vec<Slot>,
    /// Why the image could not be read.
    pub error: Option<String>,
    /// Ranges CUPTI dropped (the last ones of `slots`).
    pub dropped: usize,
    /// Passes the metric set needs (each slot combines this many instances).
    pub passes: usize,
}

/// A region instance the batch could not count, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refused(pub String);

/// The range that is open (pushed, not yet popped).
#[derive(Clone, Copy, Debug)]
struct Open {
    id: RangeId,
    name: u32,
    owner: u32,
    /// Another thread that began a region or launched work while this one was open.
    foreign: Option<u32>,
}

/// The pass set a context collects for one region name (N > 1 passes).
#[derive(Clone, Debug)]
struct PassSet {
    name: u32,
    /// Instances so far, pass k in `[k]`.
    instances: Vec<RangeId>,
    /// Why one of them is not the region's own work.
    spoiled: Option<String>,
    /// Instances of other names refused since this set's last instance.
    others_since: usize,
}

/// One context's batch of user ranges.
#[derive(Debug)]
pub struct Batch {
    capacity: usize,
    passes: usize,
    started: bool,
    open: Option<Open>,
    /// Ranges popped into the current image (one pass).
    slots: Vec<Slot>,
    /// The pass set being collected (N passes).
    set: Option<PassSet>,
    /// Completed pass sets per region name.
    sets_done: HashMap<u32, u64>,
    /// A pass set given up (its region stopped repeating), to be reported as NaN.
    abandoned: Option<(Slot, String)>,
    /// The image must be replaced (a pass set was given up midway) before the next `Start`.
    needs_fresh_image: bool,
}

impl Batch {
    /// A batch of `capacity` ranges per image for a metric set of `passes` passes.
    pub fn new(capacity: usize, passes: usize) -> Batch {
        Batch {
            capacity: capacity.max(1),
            passes: passes.max(1),
            started: false,
            open: None,
            slots: Vec::new(),
            set: None,
            sets_done: HashMap::new(),
            abandoned: None,
            needs_fresh_image: false,
        }
    }

    /// Ranges an image holds.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Passes the metric set needs.
    pub fn passes(&self) -> usize {
        self.passes
    }

    /// Whether a range is open, and the thread that opened it.
    pub fn open_owner(&self) -> Option<u32> {
        self.open.map(|o| o.owner)
    }

    /// Thread `tid` launched work on the context: an open range of another thread would
    /// count it.
    pub fn launched(&mut self, tid: u32) {
        if let Some(o) = self.open.as_mut() {
            if o.owner != tid && o.foreign.is_none() {
                o.foreign = Some(tid);
            }
        }
    }

    /// Opens instance `id` of region `name` on thread `tid`: `Start` when the profiler is not
    /// started, `PushRange`.
    pub fn begin<C: RangeCalls>(
        &mut self,
        calls: &mut C,
        id: RangeId,
        name: u32,
        tid: u32,
    ) -> Result<(), Refused> {
        if let Some(o) = self.open.as_mut() {
            if o.owner == tid {
                return Err(Refused(
                    "another GPU-counted region is open on this thread (user ranges nest one \
                     level in a pass: the outer region counts this one's kernels)"
                        .into(),
                ));
            }
            o.foreign.get_or_insert(tid);
            return Err(Refused(format!(
                "a region of thread {} is counted on this GPU at the same time: the GPU's \
                 counters cannot tell overlapping regions apart (both read NaN; kernel mode \
                 gives per-kernel values summed per region)",
                o.owner
            )));
        }
        if self.passes > 1 {
            let chosen = self.choose_set(name);
            if std::mem::take(&mut self.needs_fresh_image) {
                // CUPTI would take the next Start for the given-up set's next pass.
                let _ = calls.rotate();
            }
            chosen?;
        }
        if !self.started {
            calls.start().map_err(Refused)?;
            self.started = true;
        }
        let slot = if self.passes == 1 {
            self.slots.len()
        } else {
            0
        };
        if let Err(e) = calls.push(slot) {
            // The profiler stays started; the instance reads NaN.
            return Err(Refused(e));
        }
        self.open = Some(Open {
            id,
            name,
            owner: tid,
            foreign: None,
        });
        Ok(())
    }

    /// With N passes: instance of `name` may join the pass set (starting one if none is in
    /// progress and `name` has the fewest completed sets of the names seen).
    fn choose_set(&mut self, name: u32) -> Result<(), Refused> {
        if let Some(s) = self.set.as_mut() {
            if s.name != name {
                s.others_since += 1;
            }
            if s.others_since > self.passes {
                // The region stopped repeating: N instances of others began since its last.
                let s = self.set.take().expect("checked");
                // A region that stopped repeating no longer takes part in the turns.
                self.sets_done.remove(&s.name);
                let why = format!(
                    "the metric set needs {} passes, one per instance of the region, and this \
                     region repeated only {} time(s) before {} instances of other regions \
                     began (its pass set was given up)",
                    self.passes,
                    s.instances.len(),
                    s.others_since
                );
                self.needs_fresh_image = true;
                self.abandoned = Some((
                    Slot {
                        name: s.name,
                        instances: s.instances,
                        spoiled: None,
                    },
                    why,
                ));
            }
        }
        let done = *self.sets_done.entry(name).or_insert(0);
        match &self.set {
            Some(s) if s.name == name => Ok(()),
            Some(s) => Err(Refused(format!(
                "the metric set needs {} passes, collected one per instance across the \
                 instances of one region name at a time: this GPU is collecting pass {} of {} \
                 for another region (call site {}), so this instance is not counted",
                self.passes,
                s.instances.len() + 1,
                self.passes,
                s.name
            ))),
            None => {
                let fewest = self.sets_done.values().copied().min().unwrap_or(0);
                if done > fewest {
                    return Err(Refused(format!(
                        "the metric set needs {} passes, one per instance: this region has \
                         {done} complete pass set(s) and waits while a region with fewer \
                         takes its turn",
                        self.passes
                    )));
                }
                self.set = Some(PassSet {
                    name,
                    instances: Vec::new(),
                    spoiled: None,
                    others_since: 0,
                });
                Ok(())
            }
        }
    }

    /// Closes the open range of thread `tid` (`PopRange`); returns an image when this range
    /// filled it (or completed a pass set), to be evaluated. `Err` when the range itself
    /// cannot be counted.
    pub fn end<C: RangeCalls>(
        &mut self,
        calls: &mut C,
        tid: u32,
    ) -> Result<Option<Closed<C::Image>>, Refused> {
        let Some(open) = self.open else {
            return Err(Refused(
                "no GPU-counted region is open on this thread".into(),
            ));
        };
        if open.owner != tid {
            return Err(Refused(format!(
                "the counted range on this GPU belongs to thread {}",
                open.owner
            )));
        }
        self.open = None;
        if let Err(e) = calls.pop() {
            // A range that did not pop leaves the profiler in an unknown state: the image is
            // dropped, its ranges read NaN, and so does this one.
            let mut closed = self.fail(calls, format!("PopRange failed: {e}"));
            closed.slots.push(Slot {
                name: open.name,
                instances: vec![open.id],
                spoiled: None,
            });
            return Ok(Some(closed));
        }
        let spoiled = open.foreign.map(|other| {
            format!(
                "thread {other} launched GPU work on this GPU while this region was counted: \
                 its values would include that work (kernel mode gives per-kernel values \
                 summed per region)"
            )
        });
        if self.passes == 1 {
            self.slots.push(Slot {
                name: open.name,
                instances: vec![open.id],
                spoiled,
            });
            return Ok((self.slots.len() >= self.capacity).then(|| self.close(calls)));
        }
        // N passes: each instance is one pass, closed by `Stop`.
        let set = self.set.as_mut().expect("a pass set is chosen at begin");
        set.instances.push(open.id);
        set.others_since = 0;
        if set.spoiled.is_none() {
            set.spoiled = spoiled;
        }
        self.started = false;
        match calls.stop() {
            Ok(all) => {
                let complete = set.instances.len() >= self.passes;
                if all != complete {
                    let why = format!(
                        "CUPTI reports every pass submitted = {all} after pass {} of {}",
                        set.instances.len(),
                        self.passes
                    );
                    return Ok(Some(self.fail(calls, why)));
                }
                if !complete {
                    return Ok(None);
                }
                let set = self.set.take().expect("checked");
                *self.sets_done.entry(set.name).or_insert(0) += 1;
                let slot = Slot {
                    name: set.name,
                    instances: set.instances,
                    spoiled: set.spoiled,
                };
                Ok(Some(self.decode_and_rotate(calls, vec![slot])))
            }
            Err(e) => Ok(Some(self.fail(calls, format!("Stop failed: {e}")))),
        }
    }

    /// Closes the current image (one pass; nothing while a range is open or none is
    /// pending): `Stop`, `DecodeData`, a fresh image. With N passes an incomplete set stays.
    pub fn flush<C: RangeCalls>(&mut self, calls: &mut C) -> Option<Closed<C::Image>> {
        if self.open.is_some() || self.passes > 1 || !self.started {
            return None;
        }
        Some(self.close(calls))
    }

    /// The end of the run: the image closed (one pass), or the incomplete pass set handed out
    /// as NaN with the reason (N passes).
    pub fn finish<C: RangeCalls>(&mut self, calls: &mut C) -> Option<Closed<C::Image>> {
        if let Some(open) = self.open.take() {
            // A region still open at the end: its range never popped.
            let _ = calls.pop();
            self.slots.push(Slot {
                name: open.name,
                instances: vec![open.id],
                spoiled: Some("the region was still open at the end of the run".into()),
            });
        }
        if self.passes == 1 {
            return self.started.then(|| self.close(calls));
        }
        let set = self.set.take()?;
        let n = set.instances.len();
        if self.started {
            let _ = calls.stop();
            self.started = false;
        }
        Some(Closed {
            image: None,
            slots: vec![Slot {
                name: set.name,
                instances: set.instances,
                spoiled: None,
            }],
            error: Some(format!(
                "the metric set needs {} passes, one per instance of the region, and this \
                 region repeated only {n} time(s) after its pass set began",
                self.passes
            )),
            dropped: 0,
            passes: self.passes,
        })
    }

    /// A pass set given up since the last call (its instances read NaN with the reason).
    pub fn take_abandoned<I>(&mut self) -> Option<Closed<I>> {
        let (slot, why) = self.abandoned.take()?;
        Some(Closed {
            image: None,
            slots: vec![slot],
            error: Some(why),
            dropped: 0,
            passes: self.passes,
        })
    }

    /// Forgets what the image holds (Metron's own warm-up range): `Stop` if started, a fresh
    /// image, no pass set in progress.
    pub fn discard<C: RangeCalls>(&mut self, calls: &mut C) {
        if self.started {
            let _ = calls.stop();
            self.started = false;
        }
        let _ = calls.rotate();
        self.slots.clear();
        if let Some(set) = self.set.take() {
            // Metron's own range takes no turn from the program's regions.
            self.sets_done.remove(&set.name);
        }
        self.open = None;
    }

    /// `Stop`, `DecodeData` and a fresh image, one pass.
    fn close<C: RangeCalls>(&mut self, calls: &mut C) -> Closed<C::Image> {
        let slots = std::mem::take(&mut self.slots);
        if !self.started {
            return Closed {
                image: None,
                slots,
                error: None,
                dropped: 0,
                passes: 1,
            };
        }
        self.started = false;
        match calls.stop() {
            Ok(true) => self.decode_and_rotate(calls, slots),
            Ok(false) => {
                let mut c = self.decode_and_rotate(calls, slots);
                c.error = Some("CUPTI wants more passes of these ranges (user replay)".into());
                c
            }
            Err(e) => {
                let mut c = self.fail(calls, format!("Stop failed: {e}"));
                c.slots = slots;
                c
            }
        }
    }

    fn decode_and_rotate<C: RangeCalls>(
        &mut self,
        calls: &mut C,
        slots: Vec<Slot>,
    ) -> Closed<C::Image> {
        let passes = self.passes;
        let decoded = calls.decode();
        let image = calls.rotate();
        match (decoded, image) {
            (Ok(dropped), Ok(image)) => Closed {
                image: Some(image),
                slots,
                error: None,
                dropped,
                passes,
            },
            (Err(e), _) | (_, Err(e)) => Closed {
                image: None,
                slots,
                error: Some(e),
                dropped: 0,
                passes,
            },
        }
    }

    /// After a failed call: the profiler is stopped and a fresh image bound; what the image
    /// held (ranges of one pass, or the pass set) comes back as NaN with `why`.
    fn fail<C: RangeCalls>(&mut self, calls: &mut C, why: String) -> Closed<C::Image> {
        if self.started {
            let _ = calls.stop();
            self.started = false;
        }
        let _ = calls.rotate();
        let mut slots = std::mem::take(&mut self.slots);
        if let Some(set) = self.set.take() {
            slots.push(Slot {
                name: set.name,
                instances: set.instances,
                spoiled: set.spoiled,
            });
        }
        Closed {
            image: None,
            slots,
            error: Some(why),
            dropped: 0,
            passes: self.passes,
        }
    }
}

#[cfg(test)]
#[path = "batch_tests.rs"]
mod tests;
