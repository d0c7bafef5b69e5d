"""Metron from Python: regions, counters, marks and GPU counters per region.

    import metron

    with metron.region("step"):          # one region per block
        ...

    @metron.profile                      # one region per call (generators and coroutines too)
    def load(batch): ...

    metron.counter("queue_depth", 17)
    metron.mark("checkpoint")
    metron.annotate("epoch", 3)          # on the innermost open region of this thread
    metron.flush()

The process has one Metron runtime: under ``metron run``, or where a libmetron is already
loaded, the package records into it; alone it starts the runtime itself and writes the run
folder (``metron-output/<exe>-<pid>-<time>/``) at exit. Every Python function can be a region
without changing the source: ``metron run --functions REGEX -- python3 app.py`` (or
``METRON_FUNCTIONS=REGEX``); see the user guide's chapter "Using Metron from Python".
"""

import functools as _functools
import inspect as _inspect
import os as _os

from metron import _metron
# `region` is native: no Python frame between `with metron.region(name):` and the lookup.
from metron._metron import MetronError, Region, annotate, counter, flush, mark, region

__all__ = [
    "MetronError",
    "Region",
    "annotate",
    "binding",
    "counter",
    "flush",
    "mark",
    "profile",
    "region",
]

_begin = _metron._begin
_end = _metron._end
_region_id = _metron._region_id


def binding():
    """Which libmetron records for this process: ``("embedded", path)`` when the package
    started the runtime itself, ``("process", path)`` when it joined one loaded before it
    (``metron run``, a C extension linking libmetron)."""
    return _metron.binding()


def _configured_gpu_metrics():
    mode = _os.environ.get("METRON_GPU_COUNTER_MODE", "").strip().lower()
    metrics = [m.strip() for m in _os.environ.get("METRON_GPU_METRICS", "").split(",") if m.strip()]
    return mode, metrics


def _check_gpu_metrics(gpu_metrics):
    if isinstance(gpu_metrics, str):
        gpu_metrics = [gpu_metrics]
    wanted = list(gpu_metrics)
    mode, configured = _configured_gpu_metrics()
    if mode != "region" or not configured:
        raise ValueError(
            "gpu_metrics needs the run's GPU counters in region mode: start the program with "
            "`metron run --gpu-counter-mode region --gpu-metrics "
            + ",".join(wanted)
            + " -- python3 ...` (or set METRON_GPU_COUNTER_MODE=region and "
            "METRON_GPU_METRICS before the process starts)"
        )
    missing = [m for m in wanted if m not in configured]
    if missing:
        raise ValueError(
            "gpu_metrics %s not counted in this run; METRON_GPU_METRICS has %s"
            % (", ".join(missing), ", ".join(configured))
        )


# Called by the native `region` when `gpu_metrics` is given.
_metron._set_gpu_metrics_check(_check_gpu_metrics)


def _qualified(fn):
    module = getattr(fn, "__module__", None)
    qualname = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", repr(fn))
    return "%s.%s" % (module, qualname) if module else qualname


def profile(fn=None, *, name=None):
    """Records every call of ``fn`` as a region named ``module.qualname`` (or ``name``).

    A plain function is one region per call. A generator, async generator or ``async def``
    is one region per call as well: its first running stretch is the region ``name``, each
    later stretch (after a ``yield`` or ``await``) a region ``name (resumed)`` on the thread
    that runs it, so time suspended is not counted and no region stays open across an
    ``await`` (as ``#[metron::profile]`` on a Rust ``async fn``).

    Use as ``@metron.profile`` or ``@metron.profile(name="load")``.
    """
    if fn is None:
        return lambda f: profile(f, name=name)
    label = name or _qualified(fn)
    first = _region_id(label)
    if _inspect.isasyncgenfunction(fn):
        resumed = _region_id(label + " (resumed)")
        wrapper = _async_generator_wrapper(fn, first, resumed)
    elif _inspect.iscoroutinefunction(fn):
        resumed = _region_id(label + " (resumed)")
        wrapper = _coroutine_wrapper(fn, first, resumed)
    elif _inspect.isgeneratorfunction(fn):
        resumed = _region_id(label + " (resumed)")
        wrapper = _generator_wrapper(fn, first, resumed)
    else:
        # A native callable: no Python frame of its own between the caller and `fn`.
        wrapper = _metron.Profiled(fn, first)
    return _functools.wraps(fn)(wrapper)


def _generator_wrapper(fn, first, resumed):
    def wrapper(*args, **kwargs):
        gen = fn(*args, **kwargs)
        return (yield from _Stretches(gen, first, resumed))

    return wrapper


def _coroutine_wrapper(fn, first, resumed):
    async def wrapper(*args, **kwargs):
        return await _Stretches(fn(*args, **kwargs), first, resumed)

    return wrapper


def _async_generator_wrapper(fn, first, resumed):
    async def wrapper(*args, **kwargs):
        agen = fn(*args, **kwargs)
        ids = [first]
        try:
            while True:
                try:
                    value = await _Stretches(agen.__anext__(), ids[0], resumed)
                except StopAsyncIteration:
                    return
                ids[0] = resumed
                yield value
        finally:
            await agen.aclose()

    return wrapper


class _Stretches:
    """Drives a generator or coroutine, one region per running stretch (``send``/``throw``)."""

    __slots__ = ("_inner", "_next", "_resumed")

    def __init__(self, inner, first, resumed):
        self._inner = inner
        self._next = first
        self._resumed = resumed

    def __iter__(self):
        return self

    def __await__(self):
        return self

    def __next__(self):
        return self.send(None)

    def send(self, value):
        rid = self._next
        self._next = self._resumed
        _begin(rid)
        try:
            return self._inner.send(value)
        finally:
            _end(rid)

    def throw(self, *exc):
        rid = self._next
        self._next = self._resumed
        _begin(rid)
        try:
            return self._inner.throw(*exc)
        finally:
            _end(rid)

    def close(self):
        return self._inner.close()


def _gpu_injection():
    # Alone, the package's own libmetron is also CUDA's injection library (as under
    # `metron run`): the driver starts the GPU backend at cuInit, before the first kernel.
    kind, path = _metron.binding()
    if kind == "embedded" and path and "CUDA_INJECTION64_PATH" not in _os.environ:
        _os.environ["CUDA_INJECTION64_PATH"] = path


_gpu_injection()

if _os.environ.get("METRON_FUNCTIONS", "").strip():
    from metron import _functions

    try:
        _functions.start_from_environment()
    except (ValueError, RuntimeError) as _why:
        # The program runs on untraced rather than not at all; the reason is said once.
        import sys as _sys

        _sys.stderr.write("metron: Python function tracing is off: %s\n" % _why)
