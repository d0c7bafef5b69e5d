#!/usr/bin/env python3
"""The barrier program (tests/causal/barrier.c) under Coz 0.2.2's and Metron's delay rules,
simulated on an ideal machine (each thread has a core, no noise), to show where the two
tools' predictions part and why.

Both tools insert the same delays by the same rules (Coz's add_delays / catch_up / pre_block /
post_block); they differ in *when* a sample's delay becomes visible to the other threads:

- Metron handles each sample in its own signal handler: the sampled thread's delay count
  grows at once, and the handler's delay step publishes or pays it.
- Coz 0.2.2 (libcoz/profiler.cpp) lets perf buffer the samples and processes them only when a
  CPU-time timer fires, every SampleBatchSize = 10 samples (10 ms of the thread's CPU time);
  catch_up(), called before a thread unlocks, signals or enters a barrier, runs add_delays()
  without draining the buffer, so up to 10 ms of the thread's samples are not yet counted.
  A thread that runs the selected line therefore publishes its delays in chunks of up to
  10 x d, at a moment unrelated to the program's synchronisation; when the chunk is larger
  than the other threads' slack, the thread that pays it holds up the barrier for longer
  than the line would have saved, and the prediction falls short.

Usage: coz-model.py [UNIT_MS ...]   (default: 1 20; prints both tools' predictions for the
critical and the slack line at 10-40 %, against the construction).
"""
import sys

PERIOD = 1.0  # ms of CPU time per sample
BATCH = 10  # Coz: samples per processing run


class Thread:
    def __init__(self, line, work):
        self.line, self.work = line, work
        self.left = work  # ms of work left in this round
        self.cpu = 0.0  # ms of CPU since the last sample
        self.samples_pending = 0  # Coz: selected samples in the perf buffer
        self.batch = 0  # Coz: samples since the last processing run
        self.local = 0.0
        self.pre_block = 0.0
        self.sleep = 0.0  # ms of sleep left
        self.blocked = False


def simulate(tool, unit, selected, speedup):
    """The period of a round that `tool` measures for `selected` at `speedup` (ms): 2500
    rounds of the construction, in steps of a hundredth of a unit."""
    DT, wall = unit / 100.0, 5000.0 * unit
    d = PERIOD * speedup / 100.0
    # Units a little off the whole milliseconds, so samples and Coz's 10 ms processing runs
    # fall at every phase of a round (on a real machine, jitter does this).
    unit *= 1.0379
    threads = [Thread("critical", 2 * unit), Thread("slack", unit)]
    state = {"global": 0.0}
    rounds, t = 0, 0.0

    def add_delays(th):
        g = state["global"]
        if th.local > g:
            state["global"] = th.local
        elif th.local < g:
            th.sleep += g - th.local
            th.local = g  # what it will have slept when the sleep ends

    def on_sample(th):
        hit = th.line == selected
        if tool == "metron":
            if hit:
                th.local += d
            add_delays(th)
        else:
            th.samples_pending += hit
            th.batch += 1
            if th.batch == BATCH:
                th.batch = 0
                th.local += d * th.samples_pending
                th.samples_pending = 0
                add_delays(th)

    def arrive(th):
        # pthread_barrier_wait: catch_up (pay first if behind), then pre_block.
        add_delays(th)
        if th.sleep > 0:
            th.arriving = True
            return 0
        th.arriving = False
        th.pre_block = state["global"]
        th.blocked = True
        return 1

    for th in threads:
        th.arriving = False
    arrived = 0
    while t < wall:
        for th in threads:
            budget = DT  # this step's time, spent exactly: sleep, then work up to events
            while budget > 1e-12 and not th.blocked:
                if th.sleep > 0:
                    use = min(th.sleep, budget)
                    th.sleep -= use
                    budget -= use
                    continue
                if th.arriving:
                    arrived += arrive(th)
                    continue
                use = min(budget, th.left, PERIOD - th.cpu)
                th.left -= use
                th.cpu += use
                budget -= use
                if th.cpu >= PERIOD - 1e-12:
                    th.cpu = 0.0
                    on_sample(th)
                if th.left <= 1e-12:
                    arrived += arrive(th)
        if arrived == 2:
            # The barrier opens: post_block(true) credits the delays inserted meanwhile.
            for th in threads:
                th.local += state["global"] - th.pre_block
                th.blocked = False
                th.left = th.work
                if tool == "metron":
                    add_delays(th)
            arrived = 0
            rounds += 1
        t += DT
    duration = wall - state["global"]
    return duration / rounds


def main():
    units = [float(u) for u in sys.argv[1:]] or [1.0, 20.0]
    print(f"{'unit':>6} {'line':<9} {'speedup':>7} {'truth':>6} {'Metron':>7} {'Coz':>7}")
    for unit in units:
        base = {tool: simulate(tool, unit, "none", 0) for tool in ("metron", "coz")}
        for line in ("critical", "slack"):
            for s in (10, 20, 30, 40):
                truth = min(s, 50) if line == "critical" else 0
                pred = {
                    tool: 100.0 * (base[tool] - simulate(tool, unit, line, s)) / base[tool]
                    for tool in ("metron", "coz")
                }
                print(
                    f"{unit:>5.0f}ms {line:<9} {s:>6}% {truth:>+5}% {pred['metron']:>+6.1f}% {pred['coz']:>+6.1f}%"
                )


if __name__ == "__main__":
    main()
