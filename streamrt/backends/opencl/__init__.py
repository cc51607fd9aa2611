"""The OpenCL backend: the shared C renderer in the OpenCL dialect (dialect.py), kernels built
by pyopencl (PoCL in CI; Intel's CPU runtime where PoCL cannot build), device buffers and
launches (executor.py over backends/device.py)."""
from __future__ import annotations

import functools

from ...core import dtypes as D
from ...core.config import Flag
from .. import c_render
from ..base import Backend
from .dialect import DIALECT
from .executor import OpenCLExecutor, list_devices, probe


def _discover():
    """Every OpenCL device; one is available if its compiler builds a probe kernel."""
    try:
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


def _estimate(dev):
    units = max(1, int((dev or {}).get("compute_units", 1)))
    if (dev or {}).get("type") == "gpu":
        return 3e-5, 2e9 * units, 1.2e10
    # a CPU device (PoCL) or an accelerator: slower than Numba on the same cores, and every
    # buffer is a copy
    return 2e-4, 1.5e8 * units, 5e9


BACKEND = Backend(
    "opencl", OpenCLExecutor,
    caps={"fuse": True, "max_ops": 128, "sink_ops": True,
          "render": functools.partial(c_render.render, dialect=DIALECT)},
    dtypes=(D.bool_, D.int32, D.int64, D.float32, D.float64), dialect=DIALECT, device=True,
    discover=_discover, estimate=_estimate,
    # PoCL's kernel binaries, pyopencl's program binaries; pyopencl's kernel invoker cache
    # (pytools) holds host code in an open database: listed, never deleted
    cache_dirs=("pocl", "pyopencl"), cache_listed=("pytools",),
    settings={"opencl_device": Flag(
        "STREAMRT_OPENCL_DEVICE", "", str, "OpenCL device: 'P:D' (platform:device index) or a "
        "name substring (default: the first GPU, else the first device)")})
