//! The batch over a fake Range Profiler that records its calls: ranges across images, passes
//! across instances, threads.

use super::*;

/// A fake Range Profiler: the calls in order; each image a number; `Stop` reports every pass
/// submitted once `passes` passes were stopped since the last fresh image.
#[derive(Default)]
struct Fake {
    calls: Vec<&'static str>,
    passes: usize,
    stopped: usize,
    image: u32,
    fail_pop: bool,
    /// The range numbers pushed.
    slots: Vec<usize>,
}

impl RangeCalls for Fake {
    type Image = u32;
    fn start(&mut self) -> Result<(), String> {
        self.calls.push("start");
        Ok(())
    }
    fn push(&mut self, slot: usize) -> Result<(), String> {
        self.calls.push("push");
        self.slots.push(slot);
        Ok(())
    }
    fn pop(&mut self) -> Result<(), String> {
        self.calls.push("pop");
        if self.fail_pop {
            return Err("CUPTI_ERROR_UNKNOWN".into());
        }
        Ok(())
    }
    fn stop(&mut self) -> Result<bool, String> {
        self.calls.push("stop");
        self.stopped += 1;
        Ok(self.stopped >= self.passes.max(1))
    }
    fn decode(&mut self) -> Result<usize, String> {
        self.calls.push("decode");
        Ok(0)
    }
    fn rotate(&mut self) -> Result<u32, String> {
        self.calls.push("rotate");
        self.stopped = 0;
        self.image += 1;
        Ok(self.image)
    }
}

fn ids(closed: &Closed<u32>) -> Vec<Vec<RangeId>> {
    closed.slots.iter().map(|s| s.instances.clone()).collect()
}

/// Begins and ends instance `id` of `name` on thread `tid`, returning what closed.
fn instance(b: &mut Batch, f: &mut Fake, id: RangeId, name: u32, tid: u32) -> Option<Closed<u32>> {
    b.begin(f, id, name, tid).expect("begins");
    b.end(f, tid).expect("ends")
}

#[test]
fn ranges_fill_an_image_and_only_a_full_image_is_stopped_and_decoded() {
    let mut f = Fake::default();
    let mut b = Batch::new(3, 1);
    let mut closed = Vec::new();
    for id in 1..=7 {
        let before = f.calls.len();
        if let Some(c) = instance(&mut b, &mut f, id, 10, 1) {
            closed.push(c);
        }
        let calls = &f.calls[before..];
        match id {
            1 | 4 | 7 => assert_eq!(calls[0], "start", "the first range of an image starts"),
            _ => assert_eq!(
                calls[..2],
                ["push", "pop"],
                "a range in the middle: push, pop only"
            ),
        }
    }
    assert_eq!(closed.len(), 2);
    assert_eq!(ids(&closed[0]), vec![vec![1], vec![2], vec![3]]);
    assert_eq!(ids(&closed[1]), vec![vec![4], vec![5], vec![6]]);
    assert_eq!((closed[0].image, closed[1].image), (Some(1), Some(2)));
    let end = b.finish(&mut f).expect("the last image closes at the end");
    assert_eq!(ids(&end), vec![vec![7]]);
    assert_eq!(end.image, Some(3));
    assert_eq!(
        f.slots,
        [0, 1, 2, 0, 1, 2, 0],
        "each range of an image has its own name"
    );
    assert_eq!(f.calls.iter().filter(|c| **c == "stop").count(), 3);
    assert!(b.finish(&mut f).is_none(), "nothing left");
}

#[test]
fn a_flush_closes_a_part_full_image_but_never_an_open_range() {
    let mut f = Fake::default();
    let mut b = Batch::new(100, 1);
    instance(&mut b, &mut f, 1, 10, 1);
    b.begin(&mut f, 2, 10, 1).unwrap();
    assert!(b.flush(&mut f).is_none(), "range 2 is open");
    assert!(b.end(&mut f, 1).unwrap().is_none());
    let c = b.flush(&mut f).expect("closes");
    assert_eq!(ids(&c), vec![vec![1], vec![2]]);
    assert!(b.flush(&mut f).is_none(), "not started again");
}

#[test]
fn nested_and_overlapping_instances_are_refused_and_the_open_one_is_marked() {
    let mut f = Fake::default();
    let mut b = Batch::new(8, 1);
    b.begin(&mut f, 1, 10, 1).unwrap();
    let nested = b.begin(&mut f, 2, 11, 1).unwrap_err();
    assert!(nested.0.contains("open on this thread"), "{}", nested.0);
    let other = b.begin(&mut f, 3, 12, 2).unwrap_err();
    assert!(other.0.contains("thread 1"), "{}", other.0);
    assert!(
        b.end(&mut f, 2).is_err(),
        "thread 2 cannot end thread 1's range"
    );
    assert!(b.end(&mut f, 1).unwrap().is_none());
    let c = b.finish(&mut f).unwrap();
    assert_eq!(ids(&c), vec![vec![1]]);
    let why = c.slots[0]
        .spoiled
        .as_deref()
        .expect("thread 2 began inside it");
    assert!(why.contains("thread 2"), "{why}");
}

#[test]
fn a_launch_of_another_thread_spoils_the_open_range_only() {
    let mut f = Fake::default();
    let mut b = Batch::new(8, 1);
    b.begin(&mut f, 1, 10, 1).unwrap();
    b.launched(1);
    b.launched(7);
    b.end(&mut f, 1).unwrap();
    instance(&mut b, &mut f, 2, 10, 1);
    let c = b.finish(&mut f).unwrap();
    assert!(c.slots[0].spoiled.as_deref().unwrap().contains("thread 7"));
    assert_eq!(c.slots[1].spoiled, None);
}

#[test]
fn a_failed_pop_drops_the_image_and_says_why() {
    let mut f = Fake::default();
    let mut b = Batch::new(8, 1);
    instance(&mut b, &mut f, 1, 10, 1);
    b.begin(&mut f, 2, 10, 1).unwrap();
    f.fail_pop = true;
    let c = b
        .end(&mut f, 1)
        .unwrap()
        .expect("the image comes back as NaN");
    assert_eq!(ids(&c), vec![vec![1], vec![2]]);
    assert!(c.image.is_none());
    assert!(c.error.as_deref().unwrap().contains("PopRange failed"));
    f.fail_pop = false;
    instance(&mut b, &mut f, 3, 10, 1);
    assert_eq!(
        ids(&b.finish(&mut f).unwrap()),
        vec![vec![3]],
        "a fresh image after"
    );
}

#[test]
fn two_threads_taking_turns_share_one_image_in_order() {
    use std::sync::{Arc, Mutex};
    let shared = Arc::new(Mutex::new((Batch::new(16, 1), Fake::default(), Vec::new())));
    let next = Arc::new(std::sync::atomic::AtomicU64::new(1));
    let threads: Vec<_> = (1..=2u32)
        .map(|tid| {
            let (shared, next) = (shared.clone(), next.clone());
            std::thread::spawn(move || {
                for _ in 0..50 {
                    let mut g = shared.lock().unwrap();
                    let (b, f, closed) = &mut *g;
                    let id = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    b.begin(f, id, 100 + tid, tid).unwrap();
                    if let Some(c) = b.end(f, tid).unwrap() {
                        closed.push(c);
                    }
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let mut g = shared.lock().unwrap();
    let (b, f, closed) = &mut *g;
    closed.extend(b.finish(f));
    let all: Vec<RangeId> = closed
        .iter()
        .flat_map(|c| c.slots.iter().map(|s| s.instances[0]))
        .collect();
    assert_eq!(
        all,
        (1..=100).collect::<Vec<_>>(),
        "every instance once, in order"
    );
    assert_eq!(closed.len(), 7, "6 full images of 16 and the last of 4");
    assert!(closed
        .iter()
        .all(|c| c.error.is_none() && c.slots.iter().all(|s| s.spoiled.is_none())));
}

#[test]
fn n_passes_take_one_instance_each_and_an_incomplete_set_says_why() {
    let mut f = Fake {
        passes: 3,
        ..Fake::default()
    };
    let mut b = Batch::new(256, 3);
    let mut closed = Vec::new();
    for id in 1..=7 {
        closed.extend(instance(&mut b, &mut f, id, 10, 1));
    }
    assert_eq!(closed.len(), 2);
    assert_eq!(ids(&closed[0]), vec![vec![1, 2, 3]]);
    assert_eq!(ids(&closed[1]), vec![vec![4, 5, 6]]);
    assert!(closed.iter().all(|c| c.image.is_some() && c.passes == 3));
    // Each instance is one pass: Start, Push, Pop, Stop; decoded after the third.
    assert_eq!(
        f.calls[..12],
        [
            "start", "push", "pop", "stop", "start", "push", "pop", "stop", "start", "push", "pop",
            "stop"
        ]
    );
    assert_eq!(f.calls[12..14], ["decode", "rotate"]);
    let end = b.finish(&mut f).unwrap();
    assert_eq!(ids(&end), vec![vec![7]]);
    assert!(end.image.is_none());
    let why = end.error.unwrap();
    assert!(
        why.contains("needs 3 passes") && why.contains("repeated only 1 time"),
        "{why}"
    );
}

#[test]
fn names_that_alternate_take_turns_at_pass_sets() {
    let mut f = Fake {
        passes: 2,
        ..Fake::default()
    };
    let mut b = Batch::new(256, 2);
    let mut closed = Vec::new();
    let mut refused = 0;
    for id in 1..=12u64 {
        let name = if id % 2 == 1 { 1 } else { 2 };
        match b.begin(&mut f, id, name, 1) {
            Ok(()) => closed.extend(b.end(&mut f, 1).unwrap()),
            Err(_) => refused += 1,
        }
    }
    let sets: Vec<(u32, Vec<RangeId>)> = closed
        .iter()
        .map(|c| (c.slots[0].name, c.slots[0].instances.clone()))
        .collect();
    assert_eq!(
        sets,
        vec![
            (1, vec![1, 3]),
            (2, vec![4, 6]),
            (1, vec![7, 9]),
            (2, vec![10, 12])
        ],
        "name 1 first; name 2 takes the next turn; then name 1 again"
    );
    assert_eq!(
        refused, 4,
        "an instance of the other name while a set is collected"
    );
}

#[test]
fn a_region_that_never_repeats_gives_up_its_pass_set_to_one_that_does() {
    let mut f = Fake {
        passes: 2,
        ..Fake::default()
    };
    let mut b = Batch::new(256, 2);
    instance(&mut b, &mut f, 1, 50, 1);
    let mut closed = Vec::new();
    for id in 2..=9 {
        if b.begin(&mut f, id, 60, 1).is_ok() {
            closed.extend(b.end(&mut f, 1).unwrap());
        }
        closed.extend(b.take_abandoned::<u32>());
    }
    let given_up = &closed[0];
    assert_eq!(ids(given_up), vec![vec![1]]);
    assert!(given_up
        .error
        .as_deref()
        .unwrap()
        .contains("repeated only 1 time"));
    assert_eq!(
        ids(&closed[1]),
        vec![vec![4, 5]],
        "after 3 others (more than 2 passes)"
    );
    assert_eq!(ids(&closed[2]), vec![vec![6, 7]]);
    assert_eq!(ids(&closed[3]), vec![vec![8, 9]]);
    assert!(closed[1..].iter().all(|c| c.image.is_some()));
}

#[test]
fn metron_s_own_warm_up_range_takes_no_turn_from_the_program() {
    let mut f = Fake {
        passes: 2,
        ..Fake::default()
    };
    let mut b = Batch::new(256, 2);
    b.begin(&mut f, 0, u32::MAX, 1).unwrap();
    b.end(&mut f, 1).unwrap();
    b.discard(&mut f);
    let mut sets = 0;
    for id in 1..=6 {
        sets += instance(&mut b, &mut f, id, 60, 1).into_iter().count();
    }
    assert_eq!(sets, 3, "every instance of the program's region takes part");
}
