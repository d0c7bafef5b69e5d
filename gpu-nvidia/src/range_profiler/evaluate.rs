//! Region mode's closed counter-data images, evaluated off the regions' threads: one thread
//! of Metron's own (`metron-gpu-eval`) evaluates each range of an image
//! (`cuptiProfilerHostEvaluateToGpuValues`, host work only), adds the derived metrics, and
//! hands every instance's outcome to the summary by its range number
//! (`metron::sinks::gpu_region_ranges`).

use super::batch::{Closed, RangeId};
use super::*;
use metron::sinks::gpu_region_ranges::{self as late, RangeOutcome};
use std::sync::mpsc;

/// A closed image and what evaluating it needs.
pub(super) struct Job {
    pub(super) closed: Closed<Vec<u8>>,
    pub(super) cupti: Cupti,
    pub(super) profiler: Profiler,
    /// The session's host object (a pointer CUPTI owns, valid while the session lives: sessions
    /// are never torn down before the process ends).
    pub(super) host: usize,
    pub(super) metrics: Vec<String>,
    pub(super) spec: Arc<Spec>,
}

enum Msg {
    Job(Box<Job>),
    /// Answered once every job sent before it is evaluated.
    Barrier(mpsc::Sender<()>),
}

static WORKER: Mutex<Option<mpsc::Sender<Msg>>> = Mutex::new(None);
/// Range numbers whose values a caller waits for (the `GpuCounters` component), and the
/// values once evaluated.
static WANTED: Mutex<Vec<(RangeId, Option<Values>)>> = Mutex::new(Vec::new());

/// A range's values, or why it has none.
type Values = Result<Vec<f64>, String>;
/// Images evaluated and ranges evaluated.
pub(super) static IMAGES_EVALUATED: AtomicU64 = AtomicU64::new(0);
pub(super) static EVALUATE_NS: AtomicU64 = AtomicU64::new(0);

/// Evaluates `job` on the worker (started on first use; inline when no thread can start).
pub(super) fn submit(job: Job) {
    let mut w = WORKER.lock().unwrap_or_else(|e| e.into_inner());
    if w.is_none() {
        let (tx, rx) = mpsc::channel::<Msg>();
        let spawned = std::thread::Builder::new()
            .name("metron-gpu-eval".into())
            .spawn(move || {
                for msg in rx {
                    match msg {
                        Msg::Job(job) => run(*job),
                        Msg::Barrier(done) => {
                            let _ = done.send(());
                        }
                    }
                }
            });
        if spawned.is_ok() {
            *w = Some(tx);
        }
    }
    let job = match w.as_ref() {
        Some(tx) => match tx.send(Msg::Job(Box::new(job))) {
            Ok(()) => return,
            Err(mpsc::SendError(Msg::Job(job))) => *job,
            Err(_) => return,
        },
        None => job,
    };
    drop(w);
    run(job);
}

/// Waits until every image submitted so far is evaluated and delivered.
pub(super) fn drain() {
    let (tx, rx) = mpsc::channel();
    let sent = WORKER
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .as_ref()
        .is_some_and(|w| w.send(Msg::Barrier(tx)).is_ok());
    if sent {
        let _ = rx.recv();
    }
}

/// A caller will wait for range `id`'s values ([`take_values`]).
pub(super) fn want(id: RangeId) {
    WANTED
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push((id, None));
}

/// The values of a range asked for with [`want`] (after [`drain`]).
pub(super) fn take_values(id: RangeId) -> Result<Vec<f64>, String> {
    let mut w = WANTED.lock().unwrap_or_else(|e| e.into_inner());
    match w.iter().position(|(i, _)| *i == id) {
        Some(k) => w.swap_remove(k).1.unwrap_or_else(|| {
            Err("its range was not decoded yet (the image is still open)".into())
        }),
        None => Err("its range was not asked for".into()),
    }
}

fn run(job: Job) {
    let t0 = crate::timestamp();
    let Job {
        closed,
        cupti,
        profiler,
        host,
        metrics,
        spec,
    } = job;
    let names = Names::new(&metrics);
    // Range index in the image of each range number (the pushed name), read once per image.
    let mut index_of: Option<HashMap<usize, usize>> = None;
    let outcomes = outcomes(&closed, |image, slot| {
        let names = names.as_ref().map_err(Clone::clone)?;
        let index_of = match &mut index_of {
            Some(m) => m,
            None => index_of.insert(range_indices(&cupti, profiler, image)?),
        };
        let Some(&index) = index_of.get(&slot) else {
            return Err(format!(
                "CUPTI decoded {} of this image's ranges, not this one ({} dropped: more ranges \
                 than the image holds, METRON_GPU_REGION_RANGES)",
                index_of.len(),
                closed.dropped
            ));
        };
        let mut values =
            profiler.evaluate(&cupti, Object(host as *mut c_void), image, index, names)?;
        let derived = spec.derive(&values);
        values.extend(derived);
        Ok(values)
    });
    IMAGES_EVALUATED.fetch_add(1, Ordering::Relaxed);
    deliver(outcomes);
    EVALUATE_NS.fetch_add(crate::timestamp().saturating_sub(t0), Ordering::Relaxed);
}

/// Range number (the name it was pushed with, `/`-delimited under its parents) → its index
/// in the decoded image; a name that is not a number keeps its index.
fn range_indices(
    cupti: &Cupti,
    p: Profiler,
    image: &[u8],
) -> Result<HashMap<usize, usize>, String> {
    let n = p.ranges_in(cupti, image)?;
    let mut map = HashMap::new();
    for i in 0..n {
        let name = p.range_name(cupti, image, i).unwrap_or_default();
        let slot = name
            .rsplit('/')
            .next()
            .and_then(|s| s.parse().ok())
            .unwrap_or(i);
        map.insert(slot, i);
    }
    Ok(map)
}

/// Hands outcomes to the summary (and to a caller waiting for one); Metron's warm-up range
/// (number 0) is left out.
fn deliver(outcomes: Vec<(RangeId, RangeOutcome)>) {
    {
        let mut wanted = WANTED.lock().unwrap_or_else(|e| e.into_inner());
        for (id, slot) in wanted.iter_mut() {
            if let Some((_, o)) = outcomes.iter().find(|(i, _)| i == id) {
                *slot = Some(match o {
                    RangeOutcome::Values(v) | RangeOutcome::Combined { values: v, .. } => {
                        Ok(v.clone())
                    }
                    RangeOutcome::PassOf { first } => Err(format!(
                        "this instance gave one pass of the metric set; the combined values \
                         are on range {first}"
                    )),
                    RangeOutcome::Nan(why) => Err(why.clone()),
                });
            }
        }
    }
    let mut samples = REGION_SAMPLES.lock().unwrap_or_else(|e| e.into_inner());
    for (id, o) in &outcomes {
        if *id == 0 {
            continue;
        }
        match o {
            RangeOutcome::Values(v) | RangeOutcome::Combined { values: v, .. } => {
                if samples.len() < SAMPLES {
                    samples.push(v.clone());
                }
            }
            RangeOutcome::Nan(why) => {
                refuse(why.clone());
            }
            RangeOutcome::PassOf { .. } => {}
        }
    }
    drop(samples);
    late::record(outcomes.into_iter().filter(|(id, _)| *id != 0).collect());
}

/// Each instance of a closed image and its outcome; `evaluate(image, i)` gives range `i`'s
/// values. Pure over `evaluate` (tested with a fake).
pub(super) fn outcomes<I>(
    closed: &Closed<I>,
    mut evaluate: impl FnMut(&I, usize) -> Result<Vec<f64>, String>,
) -> Vec<(RangeId, RangeOutcome)> {
    let mut out = Vec::new();
    for (i, slot) in closed.slots.iter().enumerate() {
        let values = match (&closed.image, &closed.error) {
            (_, Some(e)) => Err(e.clone()),
            (None, None) => Err("the image was not decoded".into()),
            (Some(image), None) => match &slot.spoiled {
                Some(why) => Err(why.clone()),
                None => evaluate(image, i),
            },
        };
        let first = slot.instances.first().copied().unwrap_or(0);
        for (k, &id) in slot.instances.iter().enumerate() {
            let o = match (&values, closed.passes, k) {
                (Err(e), _, _) => RangeOutcome::Nan(e.clone()),
                (Ok(v), 1, _) => RangeOutcome::Values(v.clone()),
                (Ok(v), passes, 0) => RangeOutcome::Combined {
                    values: v.clone(),
                    passes,
                },
                (Ok(_), _, _) => RangeOutcome::PassOf { first },
            };
            out.push((id, o));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::batch::Slot;
    use super::*;

    fn slot(instances: Vec<RangeId>, spoiled: Option<&str>) -> Slot {
        Slot {
            name: 1,
            instances,
            spoiled: spoiled.map(str::to_string),
        }
    }

    #[test]
    fn each_instance_gets_its_range_or_the_reason() {
        let closed = Closed {
            image: Some(()),
            slots: vec![
                slot(vec![1], None),
                slot(vec![2], Some("thread 9 launched")),
                slot(vec![3], None),
            ],
            error: None,
            dropped: 1,
            passes: 1,
        };
        let got = outcomes(&closed, |_, i| match i {
            2 => Err("dropped".into()),
            i => Ok(vec![i as f64 * 10.0]),
        });
        assert_eq!(
            got,
            vec![
                (1, RangeOutcome::Values(vec![0.0])),
                (2, RangeOutcome::Nan("thread 9 launched".into())),
                (3, RangeOutcome::Nan("dropped".into())),
            ]
        );
    }

    #[test]
    fn a_pass_set_gives_its_values_to_its_first_instance_and_names_it_on_the_others() {
        let closed = Closed {
            image: Some(()),
            slots: vec![slot(vec![4, 5, 6], None)],
            error: None,
            dropped: 0,
            passes: 3,
        };
        let got = outcomes(&closed, |_, _| Ok(vec![7.0]));
        assert_eq!(
            got,
            vec![
                (
                    4,
                    RangeOutcome::Combined {
                        values: vec![7.0],
                        passes: 3
                    }
                ),
                (5, RangeOutcome::PassOf { first: 4 }),
                (6, RangeOutcome::PassOf { first: 4 }),
            ]
        );
        let failed: Closed<()> = Closed {
            image: None,
            slots: vec![slot(vec![8], None)],
            error: Some("repeated only 1 time".into()),
            dropped: 0,
            passes: 3,
        };
        assert_eq!(
            outcomes(&failed, |_, _| Ok(vec![1.0])),
            vec![(8, RangeOutcome::Nan("repeated only 1 time".into()))]
        );
    }
}
