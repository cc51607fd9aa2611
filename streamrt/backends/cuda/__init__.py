"""The CUDA backend: the shared C renderer in the CUDA dialect (dialect.py), kernels built by
CuPy (NVRTC), device buffers and launches (executor.py over backends/device.py), intrinsics
with CuPy over device buffers (intrinsics.py). Needs a GPU; its tests skip elsewhere."""
from __future__ import annotations

import functools

from ...core import dtypes as D
from ...core.config import Flag
from .. import c_render
from ..base import Backend
from .dialect import DIALECT
from .executor import CUDAExecutor


def _discover():
    try:
        import cupy         # (an optional dependency)
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


def _estimate(dev):
    units = max(1, int((dev or {}).get("compute_units", 1)))
    return 3e-5, 2e9 * units, 1.2e10


BACKEND = Backend(
    "cuda", CUDAExecutor,
    caps={"fuse": True, "max_ops": 128, "sink_ops": True,
          "render": functools.partial(c_render.render, dialect=DIALECT)},
    dtypes=(D.bool_, D.int32, D.int64, D.float32, D.float64), dialect=DIALECT, device=True,
    discover=_discover, estimate=_estimate, cache_dirs=("cupy",),      # CuPy's NVRTC cubins
    settings={"cuda_device": Flag("STREAMRT_CUDA_DEVICE", 0, int, "CUDA device index")})
