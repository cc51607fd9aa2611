"""The Numba CPU backend: kernels rendered as Python source (render.py, scan.py) calling the
helpers in lib.py, rng.py and vecmath.py, compiled by Numba (parallel, nogil) through the
program cache (program_cache.py: source -> module file -> dispatchers, on disk under
STREAMRT_CACHE_DIR), run by the CPU executor (executor.py)."""
from __future__ import annotations

import importlib.util
import os
import sys

from ...core import dtypes as D
from ..base import Backend
from . import render, scan
from .executor import CPUExecutor


def _threads():
    """Numba's thread count, without importing Numba (most of a second) if it is not loaded:
    NUMBA_NUM_THREADS, else one per core, is what it will be."""
    if "numba" in sys.modules:
        return sys.modules["numba"].get_num_threads()
    return int(os.environ.get("NUMBA_NUM_THREADS") or os.cpu_count() or 1)


def _discover():
    if importlib.util.find_spec("numba") is None:
        return [{"backend": "cpu", "name": "Numba CPU", "available": False,
                 "error": "numba is not installed"}]
    return [{"backend": "cpu", "name": f"Numba CPU ({_threads()} threads)", "available": True}]


def _estimate(dev):
    try:
        threads = _threads()
    except Exception:  # noqa: BLE001
        threads = 1
    return 2e-5, 3e8 * threads, float("inf")


BACKEND = Backend(
    "cpu", CPUExecutor,
    caps={"fuse": True, "max_ops": 128, "render": render.render, "render_scan": scan.render,
          "fuse_updates": True, "inline_scalars": True, "sink_ops": True, "row_fusion": True,
          "fuse_scans": True},
    dtypes=D.SUPPORTED, discover=_discover, estimate=_estimate)
