"""Intrinsics: non-fusible ops (functional slice update; linalg, FFT, sort, scans: linalg_intrinsics.py) as host functions.
Each takes (port, *input values) and returns the output value."""
from __future__ import annotations

import numpy as np


def _key(k):
    """Static index key (tuples of ('s', start, stop, step) / ('i', n) / None / Ellipsis)."""
    out = []
    for e in k:
        if isinstance(e, tuple) and e and e[0] == "s":
            out.append(slice(e[1], e[2], e[3]))
        elif isinstance(e, tuple) and e and e[0] == "i":
            out.append(e[1])
        elif e == "...":
            out.append(Ellipsis)
        else:
            out.append(e)
    return tuple(out)


def setitem(p, old, value):
    out = np.array(old, copy=True)
    out[_key(p.params[0])] = value
    return out


def update(p, old, value):
    """A region write ``base[region] = value`` (region: element offset, shape, strides)."""
    off, shape, st = p.params
    out = np.array(old, copy=True, order="C")
    flat = out.reshape(-1)
    if flat.size:
        it = flat.itemsize
        region = np.lib.stride_tricks.as_strided(flat[off:], shape, [s * it for s in st])
        region[...] = value
    return out



INTRINSICS = {"setitem": setitem, "update": update}

# linear algebra, FFT, sort, scans, convolution (proggen/linalg_intrinsics.py)
from .linalg_intrinsics import HOST_INTRINSICS as _LINALG  # noqa: E402

INTRINSICS.update(_LINALG)
