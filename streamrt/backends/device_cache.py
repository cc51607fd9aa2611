"""The device program cache: compiled modules kept in memory by each device executor (by
source), and on disk the device compilers' own caches under STREAMRT_CACHE_DIR (each
backend's ``cache_dirs``: ``pocl`` and ``pyopencl`` for OpenCL, ``cupy`` for CUDA). What
``ps.cache_info()['device']`` reports and ``ps.clear_caches(disk=True)`` deletes."""
from __future__ import annotations

import os

from ..core.config import cache_dir
from ..core import stats
from . import registry
from .device import DeviceExecutor, cache_dir_unused

# subdirectories of STREAMRT_CACHE_DIR holding compiled device programs (each backend's
# ``cache_dirs``), and those only listed (``cache_listed``)
DIRS = tuple(d for b in registry.BACKENDS.values() for d in b.cache_dirs)
stats.declare("cache_dirs_kept")
LISTED = DIRS + tuple(d for b in registry.BACKENDS.values() for d in b.cache_listed)


def _executors():
    return [ex for ex in registry.all_instances() if isinstance(ex, DeviceExecutor)]


def _size(path):
    files = nbytes = 0
    for root, _, names in os.walk(path):
        for n in names:
            try:
                nbytes += os.path.getsize(os.path.join(root, n))
                files += 1
            except OSError:
                pass
    return files, nbytes


def info() -> dict:
    """{'memory_entries': {executor: compiled modules in memory}, 'directories': {name:
    {'path', 'files', 'bytes'}}} (a directory is listed only if it exists)."""
    base = cache_dir()
    dirs = {}
    for d in LISTED:
        p = os.path.join(base, d)
        if os.path.isdir(p):
            files, nbytes = _size(p)
            with cache_dir_unused(p) as unused:
                pass
            dirs[d] = {"path": p, "files": files, "bytes": nbytes, "in_use": not unused}
    return {"memory_entries": {ex.name: len(ex._modules) for ex in _executors()},
            "directories": dirs}


def clear(disk: bool = False) -> list:
    """Forget the compiled modules of every device executor; ``disk``: also delete the device
    compilers' caches under STREAMRT_CACHE_DIR (never a directory outside it), except those a
    live compiler in this or another process holds (``device.hold_cache_dir``: PoCL's).
    Returns the directories kept."""
    for ex in _executors():
        with ex._lock:
            ex._modules.clear()
            ex._kcache.clear()
    kept = []
    if disk:
        base = os.path.realpath(cache_dir())
        for d in DIRS:
            p = os.path.realpath(os.path.join(base, d))
            if p.startswith(base + os.sep) and os.path.isdir(p):
                with cache_dir_unused(p) as unused:
                    if not unused:      # a live compiler (PoCL) uses it: deleting it under
                        kept.append(d)  # the compiler aborted the process
                        continue
                    import shutil       # (~1.5 ms of import streamrt: only to delete)
                    shutil.rmtree(p, ignore_errors=True)
                    os.makedirs(p, exist_ok=True)
        if kept:
            stats.add("cache_dirs_kept", len(kept))
    return kept
