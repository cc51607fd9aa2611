"""Intrinsics: non-fusible ops as host functions -- a region write when it is not fused (here),
gathers and scatters (frontend/indexing.py), linalg, FFT, sort, scans (linalg_intrinsics.py).
Each takes (port, *input values) and returns the output value."""
from __future__ import annotations

import numpy as np

from ..core.ir import strided


def update(p, old, value):
    """A region write ``base[region] = value`` (region: element offset, shape, strides)."""
    off, shape, st = p.params
    out = np.array(old, copy=True, order="C")
    strided(out, off, shape, st)[...] = value
    return out



INTRINSICS = {"update": update}

# linear algebra, FFT, sort, scans, convolution (proggen/linalg_intrinsics.py)
from .linalg_intrinsics import HOST_INTRINSICS as _LINALG  # noqa: E402

INTRINSICS.update(_LINALG)

# the intrinsics defined for every value of their inputs: no region write, no error a value
# can raise (a singular matrix's LinAlgError) -- what runtime/cscheduler.run_now runs
TOTAL = frozenset({"matmul", "tensordot", "einsum", "sort", "argsort", "cumsum", "cumprod",
                   "convolve", "correlate"})
