"""Every selected Python function a region: exact counts on a program whose answers are known,
for each engine the interpreter has, and filters decided once per code object."""

import json
import os
import sys
import textwrap
import unittest

from support import PROGRAMS, libmetron, run_python

KNOWN_ANSWER = os.path.join(PROGRAMS, "known_answer.py")
ENGINES = ["setprofile"] + (["monitoring"] if sys.version_info >= (3, 12) else [])
# The engine is chosen by version at import; a test of the other one starts it by hand.
WITH_ENGINE = textwrap.dedent("""
    import runpy, sys
    from metron import _functions
    _functions.start(sys.argv[1], None, engine=sys.argv[2])
    sys.argv = [sys.argv[3]]
    runpy.run_path(sys.argv[0], run_name="__main__")
""")


class KnownAnswers(unittest.TestCase):
    def check(self, run, preloaded=False):
        printed = json.loads(run.stdout)
        counts = run.region_counts()
        if preloaded:
            # The preloaded runtime's region of the whole program, named after the executable.
            self.assertEqual(counts.pop(os.path.basename(os.path.realpath(sys.executable))), 1)
        for name, expected in printed["answers"].items():
            if expected is None:
                continue
            self.assertEqual(counts.get(name), expected, name)
        self.assertEqual([n for n in counts if not n.startswith("known_answer.")], [], "regions of unselected functions")
        self.assertEqual(counts.get("known_answer.fib_calls"), 1)
        metadata = run.metadata()
        self.assertEqual(metadata["c_api"]["errors_total"], 0, metadata["c_api"])
        for thread in metadata["threads"]:
            self.assertEqual(thread["unbalanced_ends"], 0, thread)
            self.assertEqual(thread["open_at_exit"], 0, thread)
        self.assertNotIn("not recorded", run.stderr)

    def test_the_default_engine_counts_every_call_exactly(self):
        run = run_python(KNOWN_ANSWER, env={"METRON_FUNCTIONS": r"^known_answer\."})
        self.check(run)

    def test_under_the_preloaded_runtime_the_calls_land_in_its_run(self):
        # What `metron run --functions REGEX -- python3 app.py` does: libmetron preloaded,
        # METRON_FUNCTIONS set; the package's .pth starts the tracer, bound to that runtime.
        if libmetron() is None:
            self.skipTest("target/release/libmetron.so is not built (cargo build --release -p metron-user)")
        run = run_python(KNOWN_ANSWER, env={"METRON_FUNCTIONS": r"^known_answer\."}, preload=True)
        self.check(run, preloaded=True)
        self.assertEqual(os.listdir(os.path.dirname(run.folder)), ["run"], "one run folder")

    def test_each_engine_counts_every_call_exactly(self):
        for engine in ENGINES:
            with self.subTest(engine=engine):
                run = run_python(WITH_ENGINE, args=[r"^known_answer\.", engine, KNOWN_ANSWER])
                self.check(run)
        if sys.version_info < (3, 12):
            print("\nskipped: the sys.monitoring engine needs Python 3.12 or later (this is %s)" % sys.version.split()[0])


class Filters(unittest.TestCase):
    def test_exclude_wins_and_each_code_object_is_decided_once(self):
        run = run_python(textwrap.dedent("""
            import json
            from metron import _functions
            def kept(): pass
            def dropped(): pass
            for _ in range(1000):
                kept(); dropped()
            print(json.dumps(_functions.stats()))
        """), env={"METRON_FUNCTIONS": r"^__main__\.", "METRON_FUNCTIONS_EXCLUDE": r"dropped|<module>"})
        counts = run.region_counts()
        self.assertEqual(counts.get("__main__.kept"), 1000)
        self.assertNotIn("__main__.dropped", counts)
        selected, skipped, refused, too_deep = json.loads(run.stdout)
        self.assertEqual(selected, 1, "kept is the only selected code object")
        self.assertLess(skipped, 1000, "dropped was decided once, not per call")
        self.assertEqual((refused, too_deep), (0, 0))

    def test_a_file_name_selects_its_functions(self):
        run = run_python(KNOWN_ANSWER, env={"METRON_FUNCTIONS": r"programs/known_answer\.py$"})
        counts = run.region_counts()
        self.assertEqual(counts.get("known_answer.leaf"), 1000)

    def test_a_bad_expression_says_what_is_accepted(self):
        run = run_python("print('ran')", env={"METRON_FUNCTIONS": "(unclosed"})
        self.assertEqual(run.stdout, "ran\n", "the program runs on, untraced")
        self.assertIn("metron: Python function tracing is off: METRON_FUNCTIONS is not a regular expression", run.stderr)

    def test_calls_deeper_than_the_c_apis_limit_are_counted_and_said(self):
        run = run_python(textwrap.dedent("""
            def down(n):
                return 0 if n == 0 else down(n - 1)
            down(300)
        """), env={"METRON_FUNCTIONS": r"^__main__\.down$"})
        self.assertEqual(run.region_counts().get("__main__.down"), 256)
        self.assertIn("45 Python call(s) were not recorded", run.stderr)


if __name__ == "__main__":
    unittest.main()
