"""Device discovery (the supervisor): which executors work on this machine -- Numba CPU,
OpenCL platforms and devices, CUDA devices -- for ``ps.devices()`` and for the registry, which
falls back to the CPU executor (with a warning) when a forced device backend has no device."""
from __future__ import annotations

import sys
import threading
import warnings

from ..core.config import settings

_lock = threading.Lock()
_found = None


def _cpu():
    try:
        import numba
        return [{"backend": "cpu", "name": f"Numba CPU ({numba.get_num_threads()} threads)",
                 "available": True}]
    except Exception as e:  # noqa: BLE001
        return [{"backend": "cpu", "name": "Numba CPU", "available": False, "error": str(e)}]


def _opencl():
    try:
        from .opencl.executor import list_devices, probe
        devs = list_devices()
    except Exception as e:  # noqa: BLE001 - pyopencl missing or no ICD loader
        return [{"backend": "opencl", "name": None, "available": False,
                 "error": f"{type(e).__name__}: {e}"}]
    out = []
    for pi, di, p, d in devs:
        kind = "gpu" if d.type & 4 else ("cpu" if d.type & 2 else "accelerator")
        err = probe(d)                  # its compiler builds a trivial kernel, or why not
        out.append({"backend": "opencl", "name": d.name.strip(), "platform": p.name.strip(),
                    "index": f"{pi}:{di}", "available": err is None, "type": kind,
                    "compute_units": int(d.max_compute_units),
                    "max_work_group_size": int(d.max_work_group_size),
                    "global_mem_bytes": int(d.global_mem_size),
                    "fp64": bool(d.double_fp_config) or "cl_khr_fp64" in d.extensions})
        if err is not None:
            out[-1]["error"] = f"its compiler fails on a trivial kernel: {err}"
    return out


def _cuda():
    try:
        import cupy
        if not cupy.cuda.is_available():
            return []
        out = []
        for i in range(cupy.cuda.runtime.getDeviceCount()):
            pr = cupy.cuda.runtime.getDeviceProperties(i)
            name = pr["name"].decode() if isinstance(pr["name"], bytes) else str(pr["name"])
            out.append({"backend": "cuda", "name": name, "index": i, "available": True,
                        "type": "gpu",
                        "compute_units": int(pr["multiProcessorCount"]),
                        "global_mem_bytes": int(pr["totalGlobalMem"]), "fp64": True})
        return out
    except Exception as e:  # noqa: BLE001 - cupy missing or no driver
        return [{"backend": "cuda", "name": None, "available": False,
                 "error": f"{type(e).__name__}: {e}"}]


def devices(refresh=False):
    """Every executor found: dicts with 'backend', 'name', 'available' and device details.
    Entries with available=False say why a backend does not work here ('error')."""
    global _found
    with _lock:
        if _found is None or refresh:
            _found = _cpu() + _opencl() + _cuda()
            if settings.debug >= 1:
                for d in _found:
                    state = "ok" if d["available"] else f"unavailable ({d.get('error')})"
                    print(f"[streamrt] device {d['backend']}: {d.get('name')} {state}",
                          file=sys.stderr)
        return [dict(d) for d in _found]


def make_device_executor(name):
    """The executor of backend ``name`` ('opencl' or 'cuda'); None, with a warning (and a count
    in ``fallbacks``), when it has no working device -- the registry then hands out the CPU
    executor in its place."""
    from ..core import stats
    try:
        if name == "opencl":
            from .opencl.executor import OpenCLExecutor
            return OpenCLExecutor()
        from .cuda.executor import CUDAExecutor
        return CUDAExecutor()
    except Exception as e:  # noqa: BLE001
        warnings.warn(f"streamrt: STREAMRT_BACKEND={name} but no working {name} device "
                      f"({type(e).__name__}: {e}); using the CPU executor", RuntimeWarning,
                      stacklevel=3)
        stats.add("fallbacks")
        return None
