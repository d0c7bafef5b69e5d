"""A program whose every function's call count is known in closed form.

Run with METRON_FUNCTIONS='^known_answer\\.' (the module is imported by name so its functions
are ``known_answer.<qualname>``); prints the answers and its own clock's reading of ``spin``
as JSON on stdout.
"""

import asyncio
import json
import sys
import threading
import time

FIB_N = 15
METHOD_CALLS = 1000
RAISES = 100
COROUTINES = 200
THREADS = 4
LEAVES_PER_THREAD = 250
GENERATOR_CALLS = 10
GENERATOR_YIELDS = 5
SPIN_NS = 200_000_000


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def fib_calls(n):
    # calls(n) = 1 + calls(n-1) + calls(n-2), calls(0) = calls(1) = 1: 2*F(n+1) - 1.
    a, b = 0, 1
    for _ in range(n + 1):
        a, b = b, a + b
    return 2 * a - 1


class Accumulator:
    def __init__(self):
        self.total = 0

    def add(self, x):
        self.total += x


def raise_innermost(i):
    raise ValueError(i)


def raise_middle(i):
    raise_innermost(i)


def raise_outer(i):
    raise_middle(i)


async def worker(i):
    await asyncio.sleep(0)
    return i


async def gather_workers():
    return sum(await asyncio.gather(*(worker(i) for i in range(COROUTINES))))


def leaf():
    return 1


def thread_body():
    for _ in range(LEAVES_PER_THREAD):
        leaf()


def countdown(n):
    for i in range(n):
        yield i


def spin(ns):
    end = time.perf_counter_ns() + ns
    while time.perf_counter_ns() < end:
        pass


def main():
    fib(FIB_N)
    acc = Accumulator()
    for i in range(METHOD_CALLS):
        acc.add(i)
    for i in range(RAISES):
        try:
            raise_outer(i)
        except ValueError:
            pass
    asyncio.run(gather_workers())
    threads = [threading.Thread(target=thread_body) for _ in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for _ in range(GENERATOR_CALLS):
        assert sum(countdown(GENERATOR_YIELDS)) == sum(range(GENERATOR_YIELDS))
    t0 = time.perf_counter_ns()
    spin(SPIN_NS)
    spun = time.perf_counter_ns() - t0
    return spun


def answers():
    """Region name -> count, for every function of this module the program calls."""
    return {
        "known_answer.fib": fib_calls(FIB_N),
        "known_answer.Accumulator.__init__": 1,
        "known_answer.Accumulator.add": METHOD_CALLS,
        "known_answer.raise_innermost": RAISES,
        "known_answer.raise_middle": RAISES,
        "known_answer.raise_outer": RAISES,
        "known_answer.worker": COROUTINES,
        # each worker awaits once: one later running stretch each
        "known_answer.worker (resumed)": COROUTINES,
        "known_answer.gather_workers": 1,
        "known_answer.gather_workers (resumed)": None,  # the event loop decides
        "known_answer.thread_body": THREADS,
        "known_answer.leaf": THREADS * LEAVES_PER_THREAD,
        "known_answer.countdown": GENERATOR_CALLS,
        # n yields: n later stretches (the last one ends the generator)
        "known_answer.countdown (resumed)": GENERATOR_CALLS * GENERATOR_YIELDS,
        "known_answer.spin": 1,
        "known_answer.main": 1,
    }


if __name__ == "__main__":
    sys.path.insert(0, __import__("os").path.dirname(__file__))
    import known_answer

    spun = known_answer.main()
    json.dump({"spin_ns": spun, "answers": known_answer.answers()}, sys.stdout)
