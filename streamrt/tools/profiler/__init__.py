"""Profiler: ``with ps.profile(path):`` or ``STREAMRT_PROFILE=path`` records a run file
(see collector.py for the format); ``streamrt-prof`` / ``python -m streamrt.tools.profiler`` reports
on it (report.py)."""
from __future__ import annotations

import atexit
import contextlib

from ...core.config import settings
from ...runtime import cscheduler
from . import collector


@contextlib.contextmanager
def profile(path="run.stprof"):
    """Profile the enclosed code; the run file is written when the block ends.

    Work recorded before the block is run first (and not profiled), so the profile covers
    exactly the operations recorded inside it."""
    if collector.active() is not None:
        raise RuntimeError("a profile is already being recorded")
    cscheduler.sync()
    c = collector.start(path)
    try:
        yield c
    finally:
        collector.stop()


def _from_env():
    path = settings.profile
    if path and collector.active() is None:
        collector.start(path)
        atexit.register(collector.stop)
