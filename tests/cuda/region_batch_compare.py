"""Region-mode GPU counters, batched: the cost per counted region and the values, from the run
folders and logs `region_batch_plan.sh` leaves in DIR.

    python3 region_batch_compare.py DIR

Cost: median region wall time (ITER lines, iterations 5 and later) of each configuration,
minus the same program's median under `metron run` without counters. Values: each region's
statistics in summary.json (`gpu.gpu_counters.by_region`) against kernel mode's per-kernel
values (kernels.csv) and ncu's (--csv --page raw).
"""
import csv
import json
import os
import statistics
import sys

D = sys.argv[1]


def iters(log, region=None):
    out = []
    for line in open(os.path.join(D, log)):
        if not line.startswith("ITER "):
            continue
        f = dict(kv.split("=", 1) for kv in line.split()[1:])
        if int(f["i"]) < 5 or (region and f["region"] != region):
            continue
        out.append(float(f["region_us"]))
    return out


def med(xs):
    return statistics.median(xs) if xs else float("nan")


def by_region(run):
    try:
        s = json.load(open(os.path.join(D, run, "summary.json")))
    except OSError as e:
        return {"error": str(e)}
    c = (s.get("gpu") or {}).get("gpu_counters") or {}
    return {r["region"]: r for r in c.get("by_region", [])}


def kernel_values(run, metric):
    path = os.path.join(D, run, "kernels.csv")
    if not os.path.exists(path):
        return []
    rows = csv.DictReader(l for l in open(path) if not l.startswith("#"))
    return [float(r[metric]) for r in rows if "fma_kernel" in r.get("Method", r.get("Name", "")) and r.get(metric) not in ("", "nan", None)]


def ncu_means(path):
    if not os.path.exists(path):
        return {}
    lines = [l for l in open(path) if l.startswith('"')]
    rows = [r for r in csv.DictReader(lines) if r.get("ID", "").isdigit()]
    means = {}
    for k in rows[0].keys() if rows else []:
        vals = []
        for r in rows:
            try:
                vals.append(float(r[k].replace(",", "")))
            except (ValueError, AttributeError):
                pass
        if vals and ("__" in k):
            means[k] = statistics.mean(vals)
    return means


print("== cost per counted region (median of region wall time, iterations >= 5)")
base = {}
for name, log, ref, region in [
    ("plain (no tool), 1 ms kernel", "plain.log", None, "step"),
    ("metron, no counters, 1 ms kernel", "base.log", None, "step"),
    ("region mode, 1 metric, 1 ms kernel", "reg1.log", "base.log", "step"),
    ("region mode, 2 metrics, 1 ms kernel", "reg2.log", "base.log", "step"),
    ("region mode, 1 metric, 16 ranges per image", "reg1_r16.log", "base.log", "step"),
    ("region mode, 1 metric, 1024 ranges per image", "reg1_r1024.log", "base.log", "step"),
    ("before: a Start..Stop per region, 1 metric", "before.log", "base.log", "step"),
    ("kernel mode, 2 metrics, 1 ms kernel", "km2.log", "base.log", "step"),
    ("metron, no counters, short kernel", "base_s.log", None, "step"),
    ("region mode, 1 metric, short kernel", "reg1_s.log", "base_s.log", "step"),
    ("metron, no counters, two threads", "base_t.log", None, None),
    ("region mode, 2 metrics, two threads", "reg_t.log", "base_t.log", None),
    ("region mode, many metrics (N passes)", "regN.log", "base.log", "step"),
    ("ncu, 2 metrics (its region wall)", "ncu_cost.log", "plain.log", "step"),
]:
    if not os.path.exists(os.path.join(D, log)):
        print(f"  {name}: no log")
        continue
    xs = iters(log, region)
    m = med(xs)
    over = ""
    if ref and os.path.exists(os.path.join(D, ref)):
        r = med(iters(ref, region))
        over = f"  over {ref}: {m - r:+.1f} us"
    q = sorted(xs)
    p90 = q[int(0.9 * (len(q) - 1))] if q else float("nan")
    print(f"  {name}: n={len(xs)} median {m:.1f} us  p90 {p90:.1f} us  max {max(xs) if xs else float('nan'):.1f} us{over}")

print("== values: region mode by region vs kernel mode per kernel")
km = kernel_values("km2", "smsp__inst_executed.sum")
if km:
    print(f"  kernel mode fma_kernel smsp__inst_executed.sum: n={len(km)} min {min(km):.0f} max {max(km):.0f}")
for run in ["reg1", "reg2", "reg1_r16", "reg1_r1024", "reg1_s", "reg_t", "regN", "before"]:
    rows = by_region(run)
    if "error" in rows:
        print(f"  {run}: {rows['error']}")
        continue
    for region, r in rows.items():
        st = r.get("stats", {}).get("smsp__inst_executed.sum", {})
        print(f"  {run} {region}: instances {r.get('instances')} nan {r.get('nan')} combined {json.dumps(r.get('combined'))[:120]}"
              f" inst min {st.get('min')} max {st.get('max')} mean {st.get('mean')}")
        for why in r.get("nan_reasons", [])[:2]:
            print(f"      NaN: {why[:200]}")
    try:
        c = json.load(open(os.path.join(D, run, "metadata.json")))["gpu"]["counters"]
        print(f"    {run} metadata: passes {c.get('passes')} counted {c.get('regions_counted')} refused {c.get('regions_refused')} images {c.get('region_images_evaluated')} eval_ns {c.get('region_evaluate_ns')} dropped {c.get('ranges_dropped')}")
        steps = c.get("region_steps") or {}
        print("    steps (us per call): " + ", ".join(f"{k} {v['ns'] / max(v['count'], 1) / 1000:.1f}x{v['count']}" for k, v in steps.items()))
    except (OSError, KeyError, TypeError) as e:
        print(f"    {run} metadata: {e}")

print("== N passes across instances: region means vs kernel mode (kernel replay) and ncu")
ncu = ncu_means(os.path.join(D, "ncuN.csv"))
rows = by_region("regN")
step = rows.get("step", {}) if isinstance(rows, dict) else {}
kmN = {}
path = os.path.join(D, "kmN", "kernels.csv")
if os.path.exists(path):
    kr = [r for r in csv.DictReader(l for l in open(path) if not l.startswith("#")) if "fma_kernel" in r.get("Method", "")]
    for m in (step.get("stats") or {}):
        vals = [float(r[m]) for r in kr if r.get(m) not in ("", "nan", None)]
        if vals:
            kmN[m] = statistics.mean(vals)
worst = 0.0
for m, st in sorted((step.get("stats") or {}).items()):
    mean = st.get("mean")
    k = kmN.get(m)
    n = ncu.get(m)
    rel_k = (mean / k - 1) * 100 if k else float("nan")
    rel_n = (mean / n - 1) * 100 if n else float("nan")
    spread = f"min {st.get('min'):.4g} max {st.get('max'):.4g}" if st.get("min") is not None else ""
    print(f"  {m}: region mean {mean:.6g} ({spread}, n={st.get('count')})  kernel mode {k if k is None else f'{k:.6g}'} ({rel_k:+.2f} %)  ncu {n if n is None else f'{n:.6g}'} ({rel_n:+.2f} %)")
