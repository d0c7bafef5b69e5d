"""The package's API: what reaches the run folder, bad input, one runtime, fork."""

import os
import tempfile
import textwrap
import tracemalloc
import unittest

# This process records too (the in-process tests): its run folder goes to a temporary place.
os.environ["METRON_OUTPUT_PATH"] = os.path.join(tempfile.mkdtemp(prefix="metron-python-"), "run")
import metron  # noqa: E402
from support import libmetron, run_python


class RegionsMarksCountersAndAnnotations(unittest.TestCase):
    def test_regions_marks_counters_and_annotations_reach_the_summary(self):
        run = run_python(textwrap.dedent("""
            import metron
            assert metron.binding()[0] == "embedded", metron.binding()
            step = metron.region("step")
            assert metron.region("step") is step
            for i in range(5):
                with step:
                    with metron.region("inner"):
                        metron.annotate("i", i)
                        metron.annotate("ratio", 0.5)
                        metron.annotate("tag", "x")
                    metron.counter("queue_depth", i)
                    metron.mark("tick")
            metron.flush()
        """))
        self.assertEqual(run.region_counts(), {"step": 5, "inner": 5})
        summary = run.summary()
        self.assertEqual([(m["name"], m["count"]) for m in summary["marks"]], [("tick", 5)])
        counters = {c["name"]: c for c in summary["counters"]}
        self.assertEqual(counters["queue_depth"]["count"], 5)
        self.assertEqual(counters["queue_depth"]["max"], 4.0)
        metadata = run.metadata()
        self.assertEqual(metadata["c_api"]["errors_total"], 0, metadata["c_api"])
        for thread in metadata["threads"]:
            self.assertEqual(thread["unbalanced_ends"], 0)
            self.assertEqual(thread["open_at_exit"], 0)

    def test_profile_records_one_region_per_call_of_functions_generators_and_coroutines(self):
        run = run_python(textwrap.dedent("""
            import asyncio, metron

            @metron.profile
            def plain(x):
                return x + 1

            @metron.profile(name="load")
            def named():
                return 1

            class Model:
                @metron.profile
                def forward(self, x):
                    return x * 2

            @metron.profile
            def numbers(n):
                yield from range(n)

            @metron.profile
            async def fetch(i):
                await asyncio.sleep(0)
                await asyncio.sleep(0)
                return i

            @metron.profile
            async def stream(n):
                for i in range(n):
                    await asyncio.sleep(0)
                    yield i

            @metron.profile
            def fails():
                raise KeyError("x")

            for i in range(7):
                assert plain(i) == i + 1
            named()
            m = Model()
            assert [m.forward(i) for i in range(3)] == [0, 2, 4]
            for _ in range(4):
                assert list(numbers(3)) == [0, 1, 2]

            async def main():
                assert await asyncio.gather(*(fetch(i) for i in range(10))) == list(range(10))
                assert [x async for x in stream(3)] == [0, 1, 2]
            asyncio.run(main())
            for _ in range(2):
                try:
                    fails()
                except KeyError:
                    pass
            assert plain.__name__ == "plain" and plain.__wrapped__ is not None
        """))
        counts = run.region_counts()
        self.assertEqual(counts["__main__.plain"], 7)
        self.assertEqual(counts["load"], 1)
        self.assertEqual(counts["__main__.Model.forward"], 3)
        self.assertEqual(counts["__main__.numbers"], 4)
        self.assertEqual(counts["__main__.numbers (resumed)"], 4 * 3)
        self.assertEqual(counts["__main__.fetch"], 10)
        self.assertEqual(counts["__main__.fetch (resumed)"], 10 * 2)
        self.assertEqual(counts["__main__.stream"], 1)
        self.assertEqual(counts["__main__.fails"], 2)
        self.assertEqual(run.metadata()["c_api"]["errors_total"], 0, run.metadata()["c_api"])


class BadInput(unittest.TestCase):
    def test_bad_input_gets_a_clear_error(self):
        with self.assertRaisesRegex(TypeError, "a region's name is a str"):
            metron.region(5)
        with self.assertRaisesRegex(ValueError, "NUL"):
            metron.mark("a\0b")
        with self.assertRaisesRegex(TypeError, "a str, an int or a float"):
            with metron.region("bad-annotation"):
                metron.annotate("k", [1])
        with self.assertRaisesRegex(ValueError, "fit in 64 bits"):
            with metron.region("bad-annotation"):
                metron.annotate("k", 1 << 70)
        with self.assertRaisesRegex(metron.MetronError, "."):
            metron.annotate("no-region-open", 1)

    def test_gpu_metrics_outside_a_region_mode_run_say_how_to_start_one(self):
        saved = {k: os.environ.pop(k, None) for k in ("METRON_GPU_COUNTER_MODE", "METRON_GPU_METRICS")}
        try:
            with self.assertRaisesRegex(ValueError, "--gpu-counter-mode region --gpu-metrics"):
                metron.region("step", gpu_metrics=["smsp__inst_executed.sum"])
            os.environ["METRON_GPU_COUNTER_MODE"] = "region"
            os.environ["METRON_GPU_METRICS"] = "dram__bytes_read.sum"
            with self.assertRaisesRegex(ValueError, "smsp__inst_executed.sum not counted"):
                metron.region("step", gpu_metrics=["smsp__inst_executed.sum"])
            self.assertEqual(metron.region("step", gpu_metrics="dram__bytes_read.sum").name, "step")
        finally:
            for k, v in saved.items():
                os.environ.pop(k, None)
                if v is not None:
                    os.environ[k] = v


class HotPath(unittest.TestCase):
    def test_a_region_block_allocates_no_python_memory(self):
        step = metron.region("alloc-check")

        def blocks(n):
            for _ in range(n):
                with step:
                    pass

        blocks(1000)
        tracemalloc.start()
        try:
            before = tracemalloc.take_snapshot()
            blocks(100_000)
            after = tracemalloc.take_snapshot()
        finally:
            tracemalloc.stop()
        grown = [s for s in after.compare_to(before, "lineno") if s.count_diff > 0 and "test_api" in str(s.traceback)]
        self.assertEqual(grown, [], "100,000 region blocks left Python allocations behind")


class OneRuntime(unittest.TestCase):
    def test_under_the_preloaded_runtime_the_package_joins_it(self):
        if libmetron() is None:
            self.skipTest("target/release/libmetron.so is not built (cargo build --release -p metron-user)")
        run = run_python(textwrap.dedent("""
            import metron
            kind, library = metron.binding()
            assert kind == "process", (kind, library)
            assert library.endswith("libmetron.so"), library
            for _ in range(3):
                with metron.region("joined"):
                    metron.mark("m")
        """), preload=True)
        parent = os.path.dirname(run.folder)
        self.assertEqual(os.listdir(parent), ["run"], "one run folder, written by one runtime")
        self.assertEqual(run.region_counts().get("joined"), 3)
        self.assertEqual(run.metadata()["runtime"]["role"], "owner")


class Fork(unittest.TestCase):
    def test_a_forked_child_records_nothing_and_the_parent_keeps_its_regions(self):
        run = run_python(textwrap.dedent("""
            import os, metron
            with metron.region("before-fork"):
                pass
            pid = os.fork()
            if pid == 0:
                with metron.region("in-child"):
                    metron.mark("child-mark")
                os._exit(0)
            _, status = os.waitpid(pid, 0)
            assert status == 0, status
            with metron.region("after-fork"):
                pass
        """))
        self.assertEqual(run.region_counts(), {"before-fork": 1, "after-fork": 1})
        self.assertEqual(run.summary()["marks"], [])


if __name__ == "__main__":
    unittest.main()
