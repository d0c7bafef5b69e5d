//! Splitting the counters a run needs into passes the hardware can count at once.
//!
//! The input is a list of *items*: each derived metric is one item holding every counter its
//! expression reads (they must be counted in the same pass, or the ratio mixes two runs), and
//! each counter asked for by name is an item of its own. A pass holds at most `capacity`
//! distinct counters; items may share counters, which then cost one slot.
//!
//! The plan has the fewest passes possible: this is bin packing with shared items, NP-hard in
//! general, so [`plan`] searches exactly — iterative deepening on the number of passes from the
//! lower bound `ceil(distinct counters / capacity)`, depth-first assignment of the items
//! (largest first) to passes with the usual symmetry break (an item opens at most one new
//! pass) — up to [`EXACT_LIMIT`] items, and falls back to first-fit decreasing beyond that
//! (stated in the plan). An item larger than `capacity` cannot be counted in one pass: it is
//! split into single counters and named in [`Plan::split`].

use std::collections::BTreeSet;

/// Up to this many items the plan is exact; beyond, first-fit decreasing.
pub const EXACT_LIMIT: usize = 16;

/// Counters that must be counted together (a derived metric), or one counter alone.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Item {
    /// What asked for them (metric or counter name), for messages.
    pub name: String,
    /// The counters.
    pub counters: BTreeSet<String>,
}

impl Item {
    /// An item named `name` needing `counters`.
    pub fn new<S: AsRef<str>>(name: &str, counters: impl IntoIterator<Item = S>) -> Item {
        Item {
            name: name.to_string(),
            counters: counters
                .into_iter()
                .map(|c| c.as_ref().to_string())
                .collect(),
        }
    }
}

/// The passes, each the set of counters to open in that run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    /// Counters of each pass, in pass order.
    pub passes: Vec<BTreeSet<String>>,
    /// Items larger than one pass: their counters were spread over passes.
    pub split: Vec<String>,
    /// True when the plan is proven minimal (exact search), false for first-fit decreasing.
    pub minimal: bool,
}

impl Plan {
    /// The pass (0-based) that counts every counter of `item`, if one does.
    pub fn pass_of(&self, item: &Item) -> Option<usize> {
        self.passes
            .iter()
            .position(|p| item.counters.iter().all(|c| p.contains(c)))
    }
}

/// Plans the passes for `items` with `capacity` counters per pass (at least 1).
pub fn plan(items: &[Item], capacity: usize) -> Plan {
    let capacity = capacity.max(1);
    let mut split = Vec::new();
    let mut work: Vec<BTreeSet<String>> = Vec::new();
    for item in items {
        if item.counters.len() > capacity {
            split.push(item.name.clone());
            work.extend(item.counters.iter().map(|c| BTreeSet::from([c.clone()])));
        } else if !item.counters.is_empty() {
            work.push(item.counters.clone());
        }
    }
    // An item contained in another adds nothing to the packing.
    work.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
    let mut kept: Vec<BTreeSet<String>> = Vec::new();
    for set in work {
        if !kept.iter().any(|k| set.is_subset(k)) {
            kept.push(set);
        }
    }
    if kept.is_empty() {
        return Plan {
            passes: Vec::new(),
            split,
            minimal: true,
        };
    }
    let distinct: BTreeSet<&String> = kept.iter().flatten().collect();
    let lower = distinct.len().div_ceil(capacity).max(1);
    if kept.len() <= EXACT_LIMIT {
        for bins in lower..=kept.len() {
            let mut passes = Vec::new();
            if assign(&kept, 0, bins, capacity, &mut passes) {
                return Plan {
                    passes,
                    split,
                    minimal: true,
                };
            }
        }
    }
    Plan {
        passes: first_fit(&kept, capacity),
        split,
        minimal: false,
    }
}

/// Depth-first: can `items[next..]` join `passes` without exceeding `bins` passes?
fn assign(
    items: &[BTreeSet<String>],
    next: usize,
    bins: usize,
    capacity: usize,
    passes: &mut Vec<BTreeSet<String>>,
) -> bool {
    let Some(item) = items.get(next) else {
        return true;
    };
    for p in 0..passes.len() {
        let added = item.difference(&passes[p]).count();
        if passes[p].len() + added > capacity {
            continue;
        }
        let before = passes[p].clone();
        passes[p].extend(item.iter().cloned());
        if assign(items, next + 1, bins, capacity, passes) {
            return true;
        }
        passes[p] = before;
    }
    if passes.len() < bins {
        passes.push(item.clone());
        if assign(items, next + 1, bins, capacity, passes) {
            return true;
        }
        passes.pop();
    }
    false
}

fn first_fit(items: &[BTreeSet<String>], capacity: usize) -> Vec<BTreeSet<String>> {
    let mut passes: Vec<BTreeSet<String>> = Vec::new();
    for item in items {
        match passes
            .iter_mut()
            .find(|p| p.len() + item.difference(p).count() <= capacity)
        {
            Some(p) => p.extend(item.iter().cloned()),
            None => passes.push(item.clone()),
        }
    }
    passes
}

#[cfg(test)]
mod tests {
    use super::*;

    fn items(sets: &[&[&str]]) -> Vec<Item> {
        sets.iter()
            .enumerate()
            .map(|(i, s)| Item::new(&format!("m{i}"), s.iter().copied()))
            .collect()
    }

    /// Every item is counted whole in some pass and no pass is over capacity.
    fn check_valid(items: &[Item], plan: &Plan, capacity: usize) {
        for p in &plan.passes {
            assert!(p.len() <= capacity, "{p:?} over {capacity}");
        }
        for item in items {
            if item.counters.len() <= capacity {
                assert!(
                    plan.pass_of(item).is_some(),
                    "{item:?} not whole in {plan:?}"
                );
            } else {
                for c in &item.counters {
                    assert!(plan.passes.iter().any(|p| p.contains(c)));
                }
            }
        }
    }

    /// The fewest passes, by trying every partition of the items (Bell-number many).
    fn brute_force(items: &[BTreeSet<String>], capacity: usize) -> usize {
        fn go(
            items: &[BTreeSet<String>],
            i: usize,
            bins: &mut Vec<BTreeSet<String>>,
            cap: usize,
            best: &mut usize,
        ) {
            if i == items.len() {
                *best = (*best).min(bins.len());
                return;
            }
            for b in 0..bins.len() {
                let merged: BTreeSet<String> = bins[b].union(&items[i]).cloned().collect();
                if merged.len() <= cap {
                    let before = std::mem::replace(&mut bins[b], merged);
                    go(items, i + 1, bins, cap, best);
                    bins[b] = before;
                }
            }
            bins.push(items[i].clone());
            go(items, i + 1, bins, cap, best);
            bins.pop();
        }
        let mut best = usize::MAX;
        go(items, 0, &mut Vec::new(), capacity, &mut best);
        best
    }

    #[test]
    fn one_pass_when_everything_fits() {
        let its = items(&[&["cycles", "instructions"], &["cycles"], &["branch-misses"]]);
        let plan = plan(&its, 4);
        assert_eq!(plan.passes.len(), 1);
        assert!(plan.minimal);
        check_valid(&its, &plan, 4);
    }

    #[test]
    fn shared_counters_cost_one_slot() {
        // IPC and CPI share both counters; with the cache ratio they need 4 slots: one pass.
        let its = items(&[
            &["instructions", "cycles"],
            &["cycles", "instructions"],
            &["cache-misses", "cache-references"],
        ]);
        assert_eq!(plan(&its, 4).passes.len(), 1);
        assert_eq!(plan(&its, 3).passes.len(), 2);
    }

    #[test]
    fn twelve_counters_in_three_passes_of_four() {
        // 12 distinct counters, capacity 4: the lower bound, 3, is reached.
        let its = items(&[
            &["a", "b", "c"],
            &["d", "e", "f"],
            &["g", "h"],
            &["i", "j"],
            &["k"],
            &["l"],
        ]);
        let plan = plan(&its, 4);
        assert_eq!(plan.passes.len(), 3);
        check_valid(&its, &plan, 4);
    }

    #[test]
    fn items_larger_than_a_pass_are_split_and_named() {
        let its = items(&[&["a", "b", "c", "d", "e"], &["f"]]);
        let plan = plan(&its, 2);
        assert_eq!(plan.split, ["m0"]);
        assert_eq!(plan.passes.len(), 3);
        check_valid(&its, &plan, 2);
    }

    #[test]
    fn plans_are_minimal_against_brute_force_on_small_sets() {
        // A deterministic pseudo-random family of small instances.
        let names = ["a", "b", "c", "d", "e", "f", "g", "h"];
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for case in 0..400 {
            let capacity = 2 + (next() % 3) as usize;
            let n = 1 + (next() % 7) as usize;
            let its: Vec<Item> = (0..n)
                .map(|i| {
                    let size = 1 + (next() % capacity as u64) as usize;
                    let set: BTreeSet<&str> =
                        (0..size).map(|_| names[(next() % 8) as usize]).collect();
                    Item::new(&format!("m{i}"), set)
                })
                .collect();
            let plan = plan(&its, capacity);
            check_valid(&its, &plan, capacity);
            let sets: Vec<BTreeSet<String>> = its.iter().map(|i| i.counters.clone()).collect();
            assert_eq!(
                plan.passes.len(),
                brute_force(&sets, capacity),
                "case {case}: {its:?} capacity {capacity} planned {plan:?}"
            );
            assert!(plan.minimal);
        }
    }

    #[test]
    fn many_items_fall_back_to_first_fit_and_say_so() {
        let its: Vec<Item> = (0..EXACT_LIMIT + 1)
            .map(|i| Item::new(&format!("m{i}"), [format!("c{i}")]))
            .collect();
        let plan = plan(&its, 4);
        assert!(!plan.minimal);
        assert_eq!(plan.passes.len(), (EXACT_LIMIT + 1).div_ceil(4));
        check_valid(&its, &plan, 4);
    }
}
