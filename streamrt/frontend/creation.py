"""Creation functions: host data and constants become const ports (copied once, on record)."""
from __future__ import annotations

import numpy as np

from .array import HANDLED_FUNCTIONS, Array, canonical_dtype, const_port, operand
from .errors import DTypeError, callsite, record_error


def _dt(dtype, default=None):
    return None if dtype is None else dtype


def asarray(obj, dtype=None, copy=None, **kw):
    """A streamrt array from an array-like (copied; later changes to ``obj`` do not leak in)."""
    if kw.get("chunks") is not None:          # partitioned on a Dask cluster
        from ..distributed import asarray as dist_asarray
        return dist_asarray(obj, kw["chunks"], dtype)
    site = callsite()
    if isinstance(obj, Array):
        if dtype is None or np.dtype(dtype) == obj.dtype:
            return obj if not copy else obj.copy()
        return obj.astype(dtype)
    if dtype is not None:       # converted straight to ``dtype``, as NumPy's (exact for ints
        return Array._wrap(const_port(obj, site, dtype))     # past 2**53 in a list)
    a = np.asarray(obj)
    if a.dtype.kind in "OUSV":
        raise record_error(DTypeError, f"dtype {a.dtype} is not supported by streamrt", site)
    return Array._wrap(const_port(a, site))


def array(obj, dtype=None, copy=True, **kw):
    site = callsite()
    if isinstance(obj, Array):
        return obj.copy() if dtype is None else obj.astype(dtype)
    return Array._wrap(const_port(obj if dtype is not None else np.asarray(obj), site, dtype))



def _fill(shape, value, dtype, site):
    dt = canonical_dtype(dtype, site) if dtype is not None else None
    a = np.full(shape, value, dtype=dt)
    return Array._wrap(const_port(a, site))


def zeros(shape, dtype=float):
    return _fill(shape, 0, dtype, callsite())


def ones(shape, dtype=float):
    return _fill(shape, 1, dtype, callsite())


def empty(shape, dtype=float):
    return _fill(shape, 0, dtype, callsite())


def full(shape, fill_value, dtype=None):
    site = callsite()
    if dtype is None:
        dtype = canonical_dtype(np.asarray(fill_value).dtype, site)
    return _fill(shape, fill_value, dtype, site)


def _like(a, dtype, shape):
    return (tuple(shape) if shape is not None else np.shape(a) if not isinstance(a, Array)
            else a.shape, dtype if dtype is not None else (a.dtype if isinstance(a, Array)
                                                           else np.asarray(a).dtype))


def zeros_like(a, dtype=None, shape=None):
    s, d = _like(a, dtype, shape)
    return _fill(s, 0, d, callsite())


def ones_like(a, dtype=None, shape=None):
    s, d = _like(a, dtype, shape)
    return _fill(s, 1, d, callsite())


def empty_like(a, dtype=None, shape=None):
    s, d = _like(a, dtype, shape)
    return _fill(s, 0, d, callsite())


def full_like(a, fill_value, dtype=None, shape=None):
    s, d = _like(a, dtype, shape)
    return _fill(s, fill_value, d, callsite())


def arange(start, stop=None, step=None, dtype=None):
    site = callsite()
    a = np.arange(start, stop, step) if step is not None else (
        np.arange(start, stop) if stop is not None else np.arange(start))
    return Array._wrap(const_port(a, site, dtype))


def linspace(start, stop, num=50, endpoint=True, dtype=None):
    site = callsite()
    return Array._wrap(const_port(np.linspace(start, stop, num, endpoint=endpoint), site, dtype))


def eye(N, M=None, k=0, dtype=float):
    site = callsite()
    return Array._wrap(const_port(np.eye(N, M, k, dtype=canonical_dtype(dtype, site)), site))


__all__ = ["asarray", "array", "zeros", "ones", "empty", "full", "zeros_like", "ones_like",
           "empty_like", "full_like", "arange", "linspace", "eye"]
for _n in __all__:
    if _n.endswith("_like"):
        HANDLED_FUNCTIONS[_n] = globals()[_n]
del operand
