//! Known answers: recordings built by hand (times in µs, as a CUPTI trace of them would show),
//! whose replay unchanged must give back every recorded time, and whose predictions are
//! worked out by hand from the program's structure.

use metron_whatif::answer::answer;
use metron_whatif::critical::{self, Item};
use metron_whatif::graph::{Graph, Recording, ThreadRecord, Why};
use metron_whatif::replay::replay;
use metron_whatif::speedup::{Speedup, Speedups};

mod support;
use support::{assert_replays_exactly, call, op, predicted, region, US};

/// One thread: CPU `prep` 0–10, launch 10–12 of `k` (15–115), CPU 12–20, stream sync 20–117
/// (woken 2 µs after `k`), CPU `post` 117–131.
fn one_stream() -> Graph {
    Graph::build(&Recording {
        threads: vec![ThreadRecord {
            tid: 7,
            calls: vec![
                call("cudaLaunchKernel", 10, 12, &[1]),
                call("cuLaunchKernel", 10, 11, &[]),
                call("cudaStreamSynchronize", 20, 117, &[]),
            ],
            regions: vec![
                region("prep", 0, 10),
                region("post", 117, 131),
                region("step", 0, 131),
            ],
        }],
        ops: vec![op("k", "s1", 15, 115, 1)],
        ..Recording::default()
    })
}

#[test]
fn a_kernel_waited_for_by_a_sync_shortens_the_step() {
    let g = one_stream();
    assert_replays_exactly(&g);
    assert_eq!(g.blocked_syncs, 1);
    assert_eq!(predicted(&g, &[]), 131.0);
    // k 15–65, sync wakes at 67, post 67–81.
    assert_eq!(predicted(&g, &["k=50%"]), 81.0);
    assert_eq!(predicted(&g, &["k=10%"]), 121.0);
    // prep 0–5 moves everything 5 µs earlier.
    assert_eq!(predicted(&g, &["prep=50%"]), 126.0);
    // post is after the sync: its own 7 µs.
    assert_eq!(predicted(&g, &["post=50%"]), 124.0);
    // the step region covers all CPU time: 10 + 8 + 14 = 32 µs of CPU, 16 saved; the sync
    // hides the 8 µs before it (k still ends at 110 after its launch at 5).
    assert_eq!(predicted(&g, &["step=50%"]), 131.0 - 5.0 - 7.0);
    // A faster launch call moves the kernel; the nested driver call is part of it.
    assert_eq!(predicted(&g, &["cudaLaunchKernel=50%"]), 131.0);
    let a = answer(&g, vec![Speedup::parse("k=50%").unwrap()], Some("step")).unwrap();
    let (_, list) = a.per.unwrap();
    assert_eq!(list.len(), 1);
    assert_eq!(
        (list[0].recorded, list[0].replayed, list[0].predicted),
        (131 * US, 131 * US, 81 * US)
    );
}

#[test]
fn the_critical_path_of_one_stream_is_cpu_then_kernel_then_wake() {
    let g = one_stream();
    let (path, rows) = critical::table(&g, 10).unwrap();
    assert_eq!(path.length, 131 * US);
    let on = |item: Item| {
        path.items
            .iter()
            .find(|(i, _)| *i == item)
            .map(|(_, ns)| *ns)
    };
    assert_eq!(on(Item::Kernel("k".into())), Some(100 * US));
    assert_eq!(on(Item::Region("prep".into())), Some(10 * US));
    assert_eq!(on(Item::Region("post".into())), Some(14 * US));
    assert_eq!(on(Item::Latency(Why::Launch)), Some(5 * US));
    assert_eq!(on(Item::Latency(Why::Sync)), Some(2 * US));
    // CPU 12–20 is not on the path (the kernel was running).
    assert_eq!(path.length, (100 + 10 + 14 + 5 + 2) * US);
    let gain = |item: Item| {
        rows.iter()
            .find(|r| r.item == item)
            .and_then(|r| r.gain_if_2x)
    };
    assert_eq!(gain(Item::Kernel("k".into())), Some(50 * US));
    assert_eq!(gain(Item::Region("post".into())), Some(7 * US));
}

/// Two streams: `a` on s1 (5–105), `b` on s2 (7–57), then `c` on s2 held by an event on `a`
/// (starts 106, 1 µs after `a`), then a device sync 7–128 woken 2 µs after `c`.
fn two_streams() -> Graph {
    Graph::build(&Recording {
        threads: vec![ThreadRecord {
            tid: 1,
            calls: vec![
                call("cudaLaunchKernel", 0, 2, &[1]),
                call("cudaLaunchKernel", 2, 4, &[2]),
                call("cudaStreamWaitEvent", 4, 5, &[]),
                call("cudaLaunchKernel", 5, 7, &[3]),
                call("cudaDeviceSynchronize", 7, 128, &[]),
            ],
            regions: vec![region("step", 0, 130)],
        }],
        ops: vec![
            op("a", "s1", 5, 105, 1),
            op("b", "s2", 7, 57, 2),
            op("c", "s2", 106, 126, 3),
        ],
        ..Recording::default()
    })
}

#[test]
fn a_kernel_held_by_another_stream_follows_it_until_the_path_switches_streams() {
    let g = two_streams();
    assert_replays_exactly(&g);
    assert_eq!(g.inferred_other_stream, 1);
    assert_eq!(predicted(&g, &[]), 130.0);
    // b is off the critical path.
    assert_eq!(predicted(&g, &["b=50%"]), 130.0);
    // a shortened by 100·P: c starts 1 µs after the later of a and b (the gap the GPU took
    // after a, the event that decided c's start, now also after b); the step is c's end + 2
    // (the sync's wake-up) + 2 (CPU after it).
    assert_eq!(predicted(&g, &["a=10%"]), 120.0);
    assert_eq!(predicted(&g, &["a=25%"]), 105.0);
    // The switch: at P = 48 % a and b end together; past it the path runs through b.
    assert_eq!(predicted(&g, &["a=48%"]), 82.0);
    assert_eq!(predicted(&g, &["a=49%"]), 82.0);
    assert_eq!(predicted(&g, &["a=75%"]), 82.0);
    // After the switch, b is critical: 25 µs saved.
    assert_eq!(predicted(&g, &["a=75%", "b=50%"]), 82.0 - 25.0);
    let s = Speedups::resolve(vec![Speedup::parse("a=75%").unwrap()], &g).unwrap();
    let r = replay(&g, &s).unwrap();
    let p = critical::path(&g, &s, &r, r.last().unwrap());
    assert!(
        p.items.iter().any(|(i, _)| *i == Item::Kernel("b".into())),
        "{p:?}"
    );
    assert!(
        !p.items.iter().any(|(i, _)| *i == Item::Kernel("a".into())),
        "{p:?}"
    );
}

/// A launch-bound loop: each of 50 iterations is CPU 10 µs (`cpu`), a launch 2 µs, a 3 µs
/// kernel 4 µs after its launch began; a device sync at the end.
fn launch_bound() -> Graph {
    let mut calls = Vec::new();
    let mut regions = Vec::new();
    let mut ops = Vec::new();
    let mut t = 0;
    for i in 0..50u64 {
        regions.push(region("cpu", t, t + 10));
        calls.push(call("cudaLaunchKernel", t + 10, t + 12, &[i + 1]));
        ops.push(op("tiny", "s1", t + 14, t + 17, i + 1));
        t += 12;
    }
    // The last kernel ends at 12·49 + 17 = 605; the sync wakes 1 µs later.
    calls.push(call("cudaDeviceSynchronize", t, 606, &[]));
    regions.push(region("tail", 606, 616));
    Graph::build(&Recording {
        threads: vec![ThreadRecord {
            tid: 3,
            calls,
            regions,
        }],
        ops,
        ..Recording::default()
    })
}

#[test]
fn in_a_launch_bound_loop_a_faster_kernel_gains_only_its_last_instance() {
    let g = launch_bound();
    assert_replays_exactly(&g);
    assert_eq!(predicted(&g, &[]), 616.0);
    // Only the last kernel is on the path: 1.5 µs of 616 (< 1 %).
    assert_eq!(predicted(&g, &["tiny=50%"]), 614.5);
    // The CPU region is: 50 × 5 µs saved.
    assert_eq!(predicted(&g, &["cpu=50%"]), 616.0 - 250.0);
}

#[test]
fn blocking_copies_wait_for_their_own_work_and_graph_launches_for_each_node() {
    let g = Graph::build(&Recording {
        threads: vec![ThreadRecord {
            tid: 9,
            calls: vec![
                call("cudaGraphLaunch", 0, 3, &[1]),
                call("cudaMemcpy", 3, 40, &[2]),
            ],
            regions: vec![region("after", 40, 50)],
        }],
        ops: vec![
            op("g0", "s1", 5, 15, 1),
            op("g1", "s1", 16, 26, 1),
            op("CopyDtoH", "s1", 27, 38, 2),
        ],
        ..Recording::default()
    });
    assert_replays_exactly(&g);
    assert_eq!(g.blocked_syncs, 1);
    // g0 5 µs shorter: everything after it on the stream moves.
    assert_eq!(predicted(&g, &["g0=50%"]), 45.0);
    assert_eq!(predicted(&g, &["g*=50%"]), 40.0);
    assert_eq!(predicted(&g, &["CopyDtoH=100%"]), 39.0);
}

#[test]
fn two_threads_keep_their_own_program_order() {
    // Thread 1 launches x (long) and syncs its stream; thread 2 launches y on another stream
    // and syncs: a faster x shortens thread 1 only.
    let g = Graph::build(&Recording {
        threads: vec![
            ThreadRecord {
                tid: 1,
                calls: vec![
                    call("cudaLaunchKernel", 0, 2, &[1]),
                    call("cudaStreamSynchronize", 2, 104, &[]),
                ],
                regions: vec![region("t1", 0, 110)],
            },
            ThreadRecord {
                tid: 2,
                calls: vec![
                    call("cudaLaunchKernel", 1, 3, &[2]),
                    call("cudaStreamSynchronize", 3, 55, &[]),
                ],
                regions: vec![region("t2", 1, 60)],
            },
        ],
        ops: vec![op("x", "s1", 3, 103, 1), op("y", "s2", 4, 54, 2)],
        ..Recording::default()
    });
    assert_replays_exactly(&g);
    let a = answer(&g, vec![Speedup::parse("x=50%").unwrap()], Some("t2")).unwrap();
    assert_eq!(a.run.2, 60 * US);
    let (_, t2) = a.per.unwrap();
    assert_eq!(t2[0].predicted, 59 * US);
    let a = answer(&g, vec![Speedup::parse("x=50%").unwrap()], Some("t1")).unwrap();
    assert_eq!(a.per.unwrap().1[0].predicted, 60 * US);
}

#[test]
fn a_speedup_that_matches_nothing_says_what_the_run_has() {
    let g = one_stream();
    let err = Speedups::resolve(vec![Speedup::parse("gemm=50%").unwrap()], &g).unwrap_err();
    assert!(
        err.contains("\"gemm\" matches no kernel, region or API call"),
        "{err}"
    );
    assert!(
        err.contains("cudaLaunchKernel") && err.contains("prep"),
        "{err}"
    );
    let err = answer(&g, Vec::new(), Some("nope")).unwrap_err();
    assert!(err.contains("no region of that name"), "{err}");
}

#[test]
fn gpu_idle_time_is_split_by_its_cause() {
    // A launch-bound loop: 49 gaps of 9 µs between 3 µs kernels, each waiting for a launch.
    let idle = metron_whatif::idle::idle(&launch_bound());
    let s1 = &idle["s1"];
    assert_eq!(
        (
            s1.idle,
            s1.waiting_for_launches,
            s1.after_sync,
            s1.copies_only
        ),
        (441 * US, 441 * US, 0, 0)
    );
    // k1, a sync, 43 µs of CPU, k2; a copy then k3 on the same stream.
    let g = Graph::build(&Recording {
        threads: vec![ThreadRecord {
            tid: 1,
            calls: vec![
                call("cudaLaunchKernel", 0, 2, &[1]),
                call("cudaStreamSynchronize", 2, 107, &[]),
                call("cudaLaunchKernel", 150, 152, &[2]),
                call("cudaMemcpyAsync", 152, 153, &[3]),
                call("cudaLaunchKernel", 153, 154, &[4]),
                call("cudaStreamSynchronize", 154, 302, &[]),
            ],
            regions: Vec::new(),
        }],
        ops: vec![
            op("k1", "s1", 5, 105, 1),
            op("k2", "s1", 155, 255, 2),
            op("CopyDtoH", "s1", 255, 265, 3),
            op("k3", "s1", 266, 300, 4),
        ],
        ..Recording::default()
    });
    assert_replays_exactly(&g);
    let i = &metron_whatif::idle::idle(&g)["s1"];
    assert_eq!(i.span, 295 * US);
    assert_eq!(
        (i.idle, i.after_sync, i.copies_only, i.waiting_for_launches),
        (61 * US, 50 * US, 10 * US, US)
    );
    // A copy to the device just before the next kernel: the gap 105–172 is 20 µs of copy
    // (152–172) and, before it, 47 µs with nothing running after the sync returned at 107.
    let g = Graph::build(&Recording {
        threads: vec![ThreadRecord {
            tid: 1,
            calls: vec![
                call("cudaLaunchKernel", 0, 2, &[1]),
                call("cudaStreamSynchronize", 2, 107, &[]),
                call("cudaMemcpyAsync", 150, 151, &[2]),
                call("cudaLaunchKernel", 151, 152, &[3]),
                call("cudaStreamSynchronize", 152, 274, &[]),
            ],
            regions: Vec::new(),
        }],
        ops: vec![
            op("k1", "s1", 5, 105, 1),
            op("Memcpy HtoD", "s1", 152, 172, 2),
            op("k2", "s1", 172, 272, 3),
        ],
        ..Recording::default()
    });
    let i = &metron_whatif::idle::idle(&g)["s1"];
    assert_eq!(
        (i.idle, i.after_sync, i.copies_only, i.waiting_for_launches),
        (67 * US, 47 * US, 20 * US, 0)
    );
}

#[test]
fn copies_and_sets_on_the_critical_path_are_labelled_as_such() {
    // A set (3–8), a copy (8–28) and a kernel (28–78) on one stream, launched at 0, 1 and 2;
    // a stream sync woken 2 µs after the kernel, then CPU `post` 80–90. Each op after the
    // first starts when the one before it ends: the path is post, the wake-up, the kernel, the
    // copy, the set and the set's launch latency.
    let g = Graph::build(&Recording {
        threads: vec![ThreadRecord {
            tid: 4,
            calls: vec![
                call("cudaMemsetAsync", 0, 1, &[1]),
                call("cudaMemcpyAsync", 1, 2, &[2]),
                call("cudaLaunchKernel", 2, 3, &[3]),
                call("cudaStreamSynchronize", 3, 80, &[]),
            ],
            regions: vec![region("post", 80, 90)],
        }],
        ops: vec![
            op("Memset", "s1", 3, 8, 1),
            op("Memcpy HtoD", "s1", 8, 28, 2),
            op("k", "s1", 28, 78, 3),
        ],
        ..Recording::default()
    });
    assert_replays_exactly(&g);
    let (path, rows) = critical::table(&g, 10).unwrap();
    assert_eq!(path.length, 90 * US);
    let row = |label: &str| {
        rows.iter()
            .find(|r| r.item.label() == label)
            .map(|r| (r.on_path, r.gain_if_2x))
            .unwrap_or_else(|| panic!("no row {label:?} in {rows:?}"))
    };
    assert_eq!(row("kernel k"), (50 * US, Some(25 * US)));
    assert_eq!(row("copy Memcpy HtoD"), (20 * US, Some(10 * US)));
    assert_eq!(row("set Memset"), (5 * US, Some(5 * US / 2)));
    assert_eq!(row("region post"), (10 * US, Some(5 * US)));
    assert!(
        rows.iter()
            .all(|r| !r.item.label().starts_with("kernel Mem")),
        "{rows:?}"
    );
    let text = answer(&g, Vec::new(), None).unwrap().text();
    assert!(
        text.contains("  copy Memcpy HtoD ") && text.contains("  set Memset "),
        "{text}"
    );
}
