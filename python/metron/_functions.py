"""Every selected Python function a region: ``METRON_FUNCTIONS`` / ``METRON_FUNCTIONS_EXCLUDE``.

``metron run --functions REGEX [--exclude REGEX] -- python3 app.py`` sets those variables; the
package's ``.pth`` file imports ``metron`` at interpreter start when ``METRON_FUNCTIONS`` is
set, and this module switches the tracer on before the program's first line. The expressions
(Rust regex syntax, unanchored) are matched against ``module.qualname`` and against the file
name, once per code object.

Engines: ``sys.monitoring`` (PEP 669) on Python 3.12 and later, a C-level profile function
(``PyEval_SetProfile``) before. Both see every thread started after tracing began (the
monitoring engine also the threads already running); ``fork`` leaves the child untraced, as
Metron's C runtime records nothing in a forked child.
"""

import atexit
import dis
import os
import sys
import threading

from metron import _metron

_state = {"engine": None}


def engine():
    """The engine in use: ``"monitoring"``, ``"setprofile"`` or None when tracing is off."""
    return _state["engine"]


def start_from_environment():
    include = os.environ.get("METRON_FUNCTIONS", "").strip()
    if include:
        start(include, os.environ.get("METRON_FUNCTIONS_EXCLUDE", "").strip() or None)


def start(include, exclude=None, engine=None):
    """Makes every call of a function matching ``include`` (and not ``exclude``) a region.

    ``engine``: ``"monitoring"`` (3.12 and later, the default there) or ``"setprofile"``.
    """
    if _state["engine"] is not None:
        raise RuntimeError("function tracing is already on (engine %s)" % _state["engine"])
    if engine is None:
        engine = "monitoring" if sys.version_info >= (3, 12) else "setprofile"
    if engine not in ("monitoring", "setprofile"):
        raise ValueError("engine is 'monitoring' (Python 3.12 and later) or 'setprofile', not %r" % (engine,))
    if engine == "monitoring" and not hasattr(sys, "monitoring"):
        raise ValueError("the 'monitoring' engine needs Python 3.12 or later (sys.monitoring)")
    _metron._tracer_init(include, exclude, dis.opmap.get("RESUME", 0))
    if engine == "monitoring":
        _start_monitoring()
    else:
        threading.setprofile(_metron._profile_bootstrap)
        _metron._profile_on()
    _state["engine"] = engine
    atexit.register(_at_exit)
    os.register_at_fork(after_in_child=_in_child)


def stop():
    """Switches tracing off (regions already open on this thread end now)."""
    engine = _state["engine"]
    if engine == "monitoring":
        mon = sys.monitoring
        mon.set_events(mon.PROFILER_ID, 0)
        for event in _EVENTS:
            mon.register_callback(mon.PROFILER_ID, getattr(mon.events, event), None)
        mon.free_tool_id(mon.PROFILER_ID)
    elif engine == "setprofile":
        threading.setprofile(None)
        _metron._profile_off()
    _state["engine"] = None
    _metron._tracer_close_thread()


_EVENTS = ("PY_START", "PY_RESUME", "PY_THROW", "PY_RETURN", "PY_YIELD", "PY_UNWIND")


def _start_monitoring():
    mon = sys.monitoring
    tool = mon.PROFILER_ID
    owner = mon.get_tool(tool)
    if owner is not None:
        raise RuntimeError(
            "sys.monitoring's profiler tool id is taken by %r; Metron's function tracer needs it" % owner
        )
    mon.use_tool_id(tool, "metron")
    _metron._monitoring_disable_is(mon.DISABLE)
    callbacks = {
        "PY_START": _metron._on_py_start,
        "PY_RESUME": _metron._on_py_resume,
        "PY_THROW": _metron._on_py_resume,
        "PY_RETURN": _metron._on_py_return,
        "PY_YIELD": _metron._on_py_return,
        "PY_UNWIND": _metron._on_py_unwind,
    }
    events = 0
    for name, callback in callbacks.items():
        event = getattr(mon.events, name)
        mon.register_callback(tool, event, callback)
        events |= event
    mon.set_events(tool, events)


def _in_child():
    # Metron's runtime is off in a child made by fork (it records nothing there): stop paying
    # for the callbacks too.
    if _state["engine"] is not None:
        try:
            stop()
        except Exception:
            pass


def _at_exit():
    if _state["engine"] is None:
        return
    stop()
    selected, skipped, refused, too_deep = _metron._tracer_stats()
    if refused or too_deep:
        sys.stderr.write(
            "metron: %d Python call(s) were not recorded: %d refused by the C API (more than "
            "256 regions open on a thread, or recording off), %d deeper than the tracer's "
            "stack of 512\n" % (refused + too_deep, refused, too_deep)
        )


def stats():
    """``(code objects selected, code objects skipped, calls refused, calls too deep)``."""
    return _metron._tracer_stats()
