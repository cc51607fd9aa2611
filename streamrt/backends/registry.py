"""Executor registry: which backends exist, and the one STREAMRT_BACKEND chooses."""
from __future__ import annotations

import threading

from ..core.config import settings

_lock = threading.Lock()
_instances = {}
_device = False         # has an OpenCL or CUDA executor been created (read at every flush)


def _make(name):
    if name == "cpu":
        from .numba_cpu.executor import CPUExecutor
        return CPUExecutor()
    if name == "reference":
        from .reference.executor import ReferenceExecutor
        return ReferenceExecutor()
    if name in ("opencl", "cuda"):
        from .devices import make_device_executor
        return make_device_executor(name)
    raise ValueError(f"unknown STREAMRT_BACKEND {name!r}; available: cpu, reference, opencl, "
                     "cuda")


def get(name=None):
    """The executor ``name`` (default: STREAMRT_BACKEND; 'auto' -- placement decided per
    sequence by scheduler/placement.py -- gives the CPU executor here)."""
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
            _device = _device or ex.name in ("opencl", "cuda")
        return ex


def created(name):
    """Has executor ``name`` been created in this process (for 'cpu': is Numba loaded)?"""
    return name in _instances


def has_device_executor():
    """Has an OpenCL or CUDA executor been created (can any array live on a device)?"""
    return _device


def all_instances():
    with _lock:
        return list(_instances.values())
