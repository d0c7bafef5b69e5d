//! Hardware and software counters of a run: which events `PerfCounters` opens, which derived
//! metrics are computed from them, and how they split into passes.
//!
//! Read once at start from `METRON_PERF_EVENTS`, `METRON_METRICS`, `METRON_METRICS_FILE`,
//! `METRON_PERF_GROUP_SIZE` and `METRON_PERF_PASS`. Every problem (unknown counter or metric,
//! a metric file that does not parse, an event this machine cannot count, a plan that needs
//! several passes) is said on stderr before the program runs and kept for `metadata.json`;
//! nothing here stops the run.

use metron_components::perf::{self, events::EventSpec, MAX_PERF_EVENTS};
use metron_metrics::passes::{self, Item, Plan};
use metron_metrics::MetricSet;
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::OnceLock;

/// The counter settings as written (see the registry in `settings/registry.rs`).
#[derive(Clone, Debug, Default)]
pub struct CounterSettings {
    /// `METRON_PERF_EVENTS`.
    pub events: String,
    /// `METRON_METRICS`.
    pub metrics: String,
    /// `METRON_METRICS_FILE`.
    pub metrics_file: String,
    /// `METRON_PERF_GROUP_SIZE`.
    pub group_size: String,
    /// `METRON_PERF_PASS`.
    pub pass: String,
}

/// Hardware counters one pass holds when the machine has no PMU to ask: the general-purpose
/// counters of one x86 core with SMT on.
pub const FALLBACK_GROUP_SIZE: usize = 4;

/// What the run counts and computes.
#[derive(Debug)]
pub struct CounterPlan {
    /// Built-in metric definitions plus the user's file.
    pub metric_set: MetricSet,
    /// Metrics asked for that this pass can compute (all their counters are counted).
    pub metrics: Vec<String>,
    /// Metrics asked for that another pass computes.
    pub metrics_elsewhere: Vec<String>,
    /// Hardware counters per pass.
    pub group_size: usize,
    /// Where `group_size` came from: `detected`, `configured` or `fallback`.
    pub group_size_source: &'static str,
    /// The pass plan of the hardware counters (empty when there are none).
    pub plan: Plan,
    /// The pass this run counts, from 1.
    pub pass: usize,
    /// Every problem found, as said on stderr.
    pub messages: Vec<String>,
}

static PLAN: OnceLock<CounterPlan> = OnceLock::new();

/// The plan in force, once the runtime has started.
pub fn plan() -> Option<&'static CounterPlan> {
    PLAN.get()
}

/// Works out the plan and configures `PerfCounters`; first call wins. Returns the plan to the
/// call that made it (which prints its messages and adds the [`metadata`] section), `None` to
/// later calls.
pub(crate) fn configure(settings: &CounterSettings) -> Option<&'static CounterPlan> {
    let mut first = false;
    let plan = PLAN.get_or_init(|| {
        first = true;
        build(settings)
    });
    first.then_some(plan)
}

/// The pass plan `settings` ask for, worked out without opening any counter group (the
/// hardware group size may be detected). For tools that run a program once per pass.
pub fn passes_for(settings: &CounterSettings) -> CounterPlan {
    plan_counters(settings).0
}

fn build(settings: &CounterSettings) -> CounterPlan {
    let (mut plan, counted, errors) = plan_counters(settings);
    if asked_for(settings) {
        let config = perf::configure(counted, errors);
        plan.messages.extend(config.messages());
    } else {
        // The default software events, which nobody asked for: opened (and probed) only if a
        // `PerfCounters` component is used, not at every run's start.
        perf::configure_deferred(counted, errors);
    }
    plan
}

/// Whether the settings ask for counters (events other than the defaults, or metrics).
fn asked_for(settings: &CounterSettings) -> bool {
    settings.events.trim() != perf::DEFAULT_EVENTS
        || names(&settings.metrics).next().is_some()
        || !settings.metrics_file.trim().is_empty()
}

fn plan_counters(
    settings: &CounterSettings,
) -> (CounterPlan, Vec<EventSpec>, Vec<perf::EventError>) {
    let mut messages = Vec::new();
    let (mut events, errors) = perf::parse_list(&settings.events);

    // The built-in definitions are parsed only when a metric is asked for.
    let mut metric_set = if names(&settings.metrics).next().is_some() {
        MetricSet::default_cpu()
    } else {
        MetricSet::default()
    };
    if !settings.metrics_file.trim().is_empty() {
        let path = settings.metrics_file.trim();
        match MetricSet::default_cpu_with_user_file(path) {
            Ok(set) => metric_set = set,
            Err(e) => messages.push(format!(
                "METRON_METRICS_FILE: {e}; the built-in metrics are used without this file"
            )),
        }
    }

    // Each metric is one pass item: its counters must be counted together.
    let mut metric_items: Vec<(String, Vec<EventSpec>)> = Vec::new();
    for name in names(&settings.metrics) {
        match metric_set.needed_counters([name]) {
            Ok(counters) => {
                let mut specs = Vec::new();
                let mut ok = true;
                for c in &counters {
                    match counter_spec(&metric_set, c) {
                        Ok(spec) => specs.push(spec),
                        Err(e) => {
                            messages.push(format!("METRON_METRICS: metric `{name}` needs {e}"));
                            ok = false;
                        }
                    }
                }
                if ok {
                    metric_items.push((name.to_string(), specs));
                }
            }
            Err(e) => messages.push(format!(
                "METRON_METRICS: {e}; accepted: {}",
                metric_set
                    .metrics()
                    .keys()
                    .cloned()
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
        }
    }
    for (_, specs) in &metric_items {
        for spec in specs {
            if !events.iter().any(|e| e.name == spec.name) {
                events.push(spec.clone());
            }
        }
    }

    // Only hardware counters are limited; software events are counted in every pass.
    let mut items: Vec<Item> = metric_items
        .iter()
        .map(|(name, specs)| {
            Item::new(
                name,
                specs.iter().filter(|s| s.is_hardware()).map(|s| &s.name),
            )
        })
        .collect();
    items.extend(
        events
            .iter()
            .filter(|e| e.is_hardware())
            .map(|e| Item::new(&e.name, [&e.name])),
    );
    let (group_size, group_size_source) = match settings.group_size.trim() {
        // Only worth asking the PMU when there is something to plan.
        "" | "auto" if items.is_empty() => (FALLBACK_GROUP_SIZE, "unused"),
        "" | "auto" => match perf::detect_hardware_group_size() {
            Some(n) => (n, "detected"),
            None => (FALLBACK_GROUP_SIZE, "fallback"),
        },
        text => match text.parse::<usize>() {
            Ok(n) if (1..=MAX_PERF_EVENTS).contains(&n) => (n, "configured"),
            _ => {
                messages.push(format!(
                    "METRON_PERF_GROUP_SIZE={text:?} is not accepted: expected auto or a number from 1 to {MAX_PERF_EVENTS}; using auto"
                ));
                (
                    perf::detect_hardware_group_size().unwrap_or(FALLBACK_GROUP_SIZE),
                    "fallback",
                )
            }
        },
    };

    let plan = passes::plan(&items, group_size);
    for name in &plan.split {
        messages.push(format!(
            "metric `{name}` needs more hardware counters than one pass holds ({group_size}); its counters are spread over passes, so its value mixes runs"
        ));
    }

    let passes_needed = plan.passes.len().max(1);
    let pass = match settings.pass.trim().parse::<usize>() {
        Ok(p) if (1..=passes_needed).contains(&p) => p,
        _ => {
            messages.push(format!(
                "METRON_PERF_PASS={:?} is not accepted: expected a number from 1 to {passes_needed} (the passes of this counter plan); using 1",
                settings.pass
            ));
            1
        }
    };
    if plan.passes.len() > 1 {
        let list = pass_listing(&plan).join("; ");
        messages.push(format!(
            "the hardware counters asked for need {} passes of at most {group_size} ({group_size_source} group size{}): {list}. This run counts pass {pass} (METRON_PERF_PASS); `metron run --passes auto -- CMD` runs every pass and merges them",
            plan.passes.len(),
            if plan.minimal { "; the fewest possible" } else { "; first-fit plan" }
        ));
    }
    let this_pass: BTreeSet<String> = plan.passes.get(pass - 1).cloned().unwrap_or_default();
    let counted: Vec<EventSpec> = events
        .into_iter()
        .filter(|e| !e.is_hardware() || this_pass.contains(&e.name))
        .collect();
    let mut metrics = Vec::new();
    let mut metrics_elsewhere = Vec::new();
    for (name, specs) in &metric_items {
        let here = specs
            .iter()
            .all(|s| !s.is_hardware() || this_pass.contains(&s.name));
        if here {
            metrics.push(name.clone());
        } else {
            metrics_elsewhere.push(name.clone());
        }
    }

    let counter_plan = CounterPlan {
        metric_set,
        metrics,
        metrics_elsewhere,
        group_size,
        group_size_source,
        plan,
        pass,
        messages,
    };
    (counter_plan, counted, errors)
}

/// `pass 1: cycles, instructions`, one line per pass, for messages.
pub fn pass_listing(plan: &Plan) -> Vec<String> {
    plan.passes
        .iter()
        .enumerate()
        .map(|(i, p)| {
            format!(
                "pass {}: {}",
                i + 1,
                p.iter().cloned().collect::<Vec<_>>().join(", ")
            )
        })
        .collect()
}

fn names(list: &str) -> impl Iterator<Item = &str> {
    list.split(',').map(str::trim).filter(|s| !s.is_empty())
}

/// The event of counter `name` of the metric set: its `perf` spelling when it has one, else
/// the block and event id of its `<counter>` element.
fn counter_spec(set: &MetricSet, name: &str) -> Result<EventSpec, String> {
    if let Ok(spec) = perf::parse_event(name) {
        return Ok(spec);
    }
    let counter = set
        .arches()
        .values()
        .find_map(|a| a.counters.get(name))
        .ok_or_else(|| format!("counter `{name}`, which no <counter> defines"))?;
    let kind = match counter.block.as_str() {
        "hardware" => perf::events::TYPE_HARDWARE,
        "software" => perf::events::TYPE_SOFTWARE,
        "hw-cache" => perf::events::TYPE_HW_CACHE,
        "raw" => perf::events::TYPE_RAW,
        other => {
            return Err(format!(
                "counter `{name}` of block `{other}`, which a CPU cannot count (blocks accepted here: hardware, software, hw-cache, raw)"
            ))
        }
    };
    let privilege = if kind == perf::events::TYPE_SOFTWARE {
        perf::events::Privilege::Both
    } else {
        perf::events::Privilege::User
    };
    Ok(EventSpec {
        name: name.to_string(),
        kind,
        config: counter.event,
        privilege,
    })
}

/// The value of each computable metric for one region, from its counter totals.
/// `total(counter)` is the region's total of `perf_counters.<counter>`, if counted.
pub fn derived(plan: &CounterPlan, total: &dyn Fn(&str) -> Option<f64>) -> Vec<(String, f64)> {
    let mut values: BTreeMap<String, [f64; 1]> = BTreeMap::new();
    for counter in plan
        .metric_set
        .needed_counters(&plan.metrics)
        .unwrap_or_default()
    {
        if let Some(v) = total(&counter) {
            values.insert(counter, [v]);
        }
    }
    let lookup = |c: &str| values.get(c).map(|v| &v[..]);
    plan.metrics
        .iter()
        .filter_map(|name| {
            let v = plan.metric_set.evaluate(name, &lookup).ok()?;
            v.is_finite().then(|| (name.clone(), v))
        })
        .collect()
}

/// The `perf_counters` section of `metadata.json`.
pub(crate) fn metadata() -> Value {
    let Some(plan) = PLAN.get() else {
        return Value::Null;
    };
    let Some(config) = perf::probed() else {
        // The default events, never used: not opened, so nothing is known of them.
        return json!({
            "events_not_opened": perf::configured_names(),
            "note": "no PerfCounters component was used: the default events (METRON_PERF_EVENTS) were never opened",
            "metrics": plan.metrics,
            "messages": plan.messages,
        });
    };
    json!({
        "events": config.events.iter().map(|e| json!({
            "name": e.name, "kind": e.kind_name(), "config": e.config,
        })).collect::<Vec<_>>(),
        "unavailable": config.unavailable.iter().map(|(e, why)| json!({
            "name": e.name, "kind": e.kind_name(), "reason": why,
        })).collect::<Vec<_>>(),
        "metrics": plan.metrics,
        "metrics_in_other_passes": plan.metrics_elsewhere,
        "group_size": plan.group_size,
        "group_size_source": plan.group_size_source,
        "passes": plan.plan.passes,
        "pass": plan.pass,
        "plan_minimal": plan.plan.minimal,
        "messages": plan.messages,
    })
}
