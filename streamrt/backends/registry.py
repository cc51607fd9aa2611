"""The backends, one line each (their folders' ``BACKEND`` descriptors), found by name; the
executor STREAMRT_BACKEND chooses, created once per process."""
from __future__ import annotations

import functools
import threading
import warnings

from ..core import atfork, stats
from ..core.config import settings
from . import cuda, numba_cpu, opencl, reference

BACKENDS = {b.name: b for b in (
    numba_cpu.BACKEND,
    reference.BACKEND,
    opencl.BACKEND,
    cuda.BACKEND,
)}

_lock = threading.Lock()
_instances = {}
_device = False         # has a device executor been created (read at every flush)


def _make(name):
    """The executor of backend ``name``; for a device backend with no working device None,
    with a warning (and a count in ``fallbacks``): the registry hands out the CPU executor in
    its place."""
    b = BACKENDS.get(name)
    if b is None:
        raise ValueError(f"unknown STREAMRT_BACKEND {name!r}; available: "
                         f"{', '.join(BACKENDS)}")
    if not b.device:
        return b.executor()
    try:
        ex = b.executor()
    except Exception as e:  # noqa: BLE001
        warnings.warn(f"streamrt: STREAMRT_BACKEND={name} but no working {name} device "
                      f"({type(e).__name__}: {e}); using the CPU executor", RuntimeWarning,
                      stacklevel=2)
        stats.add("fallbacks")
        return None
    ex.cpu = functools.partial(get, "cpu")      # where its programs fall back to
    return ex


def get(name=None):
    """The executor ``name`` (default: STREAMRT_BACKEND; 'auto' -- placement decided per
    sequence by runtime/placement.py -- gives the CPU executor here)."""
    global _device
    name = name or settings.backend
    if name == "auto":
        name = "cpu"
    ex = _instances.get(name)
    if ex is not None:
        return ex
    with _lock:
        ex = _instances.get(name)
        if ex is None:
            ex = _make(name)
            if ex is None:              # no working device: the one CPU executor stands in
                ex = _instances.get("cpu") or _instances.setdefault("cpu", _make("cpu"))
            _instances[name] = ex
            _device = _device or ex.backend.device
        return ex


def _after_fork():
    """The child's executors: new queues and locks, no worker thread (started again by the
    next submission); a device executor's context belongs to the parent: dropped, the next
    use opens a new one."""
    global _lock
    _lock = threading.Lock()
    for name, ex in list(_instances.items()):
        if ex.backend.device:
            del _instances[name]
        else:
            ex.after_fork()


atfork.register(_after_fork)


def created(name):
    """Has executor ``name`` been created in this process (for 'cpu': is Numba loaded)?"""
    return name in _instances


def has_device_executor():
    """Has a device executor been created (can any array live on a device)?"""
    return _device


def all_instances():
    with _lock:
        return list(_instances.values())
