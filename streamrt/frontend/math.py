"""Element-wise functions, reductions and composites (var, std, clip, dot) of the public
namespace, generated from the op table; NumPy functions they answer for under
__array_function__."""
from __future__ import annotations

import builtins

import numpy as np

from .. import dtypes as D
from ..ops import OPS, REDUCTIONS
from .array import (HANDLED_FUNCTIONS, Array, astype as _astype, broadcast_to as _broadcast_to,
                    normalize_axes, operand, record_map, record_reduce, record_unary,
                    reshape as _reshape, transpose as _transpose)
from .errors import ArgumentError, callsite, record_error
from . import native as _native

__all__ = []


def _make_map(name):
    op = OPS[name]
    if op.arity == 1:
        def f(x, /, out=None, *, dtype=None):
            site = callsite()
            if out is not None:
                raise record_error(ArgumentError, f"{name}: out= is not supported (arrays "
                                   "are immutable; use the return value)", site)
            r = record_unary(name, x, site)
            return _astype(r, dtype, site=site) if dtype is not None else r
    elif op.arity == 2:
        def f(x1, x2, /, out=None, *, dtype=None):
            site = callsite()
            if out is not None:
                raise record_error(ArgumentError, f"{name}: out= is not supported (arrays "
                                   "are immutable; use the return value)", site)
            r = record_map(name, x1, x2, site=site)
            return _astype(r, dtype, site=site) if dtype is not None else r
    else:
        def f(*args):
            return record_map(name, *args, site=callsite())
    f.__name__ = name
    f.__qualname__ = name
    f.__doc__ = f"Lazy element-wise ``numpy.{op.ufunc or name}``."
    return f


_g = globals()
for _name, _op in OPS.items():
    if _name in ("astype", "where") or _op.counter:
        continue
    _g[_name] = _make_map(_name) if _op.arity != 1 else \
        _native.map_function(_name, _make_map(_name))     # (the C record path, if built)
    __all__.append(_name)
    for _al in _op.aliases:
        _g[_al] = _g[_name]
        __all__.append(_al)


def where(condition, x=None, y=None, /):
    site = callsite()
    if x is None and y is None:
        from .shape import nonzero        # evaluates the condition (data-dependent shape)
        return nonzero(condition)
    if x is None or y is None:
        raise record_error(ArgumentError, "either both or neither of x and y should be given",
                           site)
    return record_map("where", condition, x, y, site=site)


def _make_reduce(name):
    if name in ("sum", "prod", "mean"):
        def f(a, axis=None, dtype=None, out=None, keepdims=False, **kw):
            site = callsite()
            if out is not None:
                raise record_error(ArgumentError, f"{name}: out= is not supported (arrays are "
                                   "immutable; use the return value)", site)
            return record_reduce(name, a, axis, keepdims, dtype, site=site)
    else:
        def f(a, axis=None, out=None, keepdims=False, **kw):
            site = callsite()
            if out is not None:
                raise record_error(ArgumentError, f"{name}: out= is not supported", site)
            return record_reduce(name, a, axis, keepdims, site=site)
    f.__name__ = name
    f.__doc__ = f"Lazy ``numpy.{name}`` over any axis or axes, with keepdims."
    return f


for _name in REDUCTIONS:
    _g[_name] = _make_reduce(_name)
    __all__.append(_name)
amax, amin = max, min  # noqa: F821


def var(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False):
    """Two fused passes: the mean, then the mean of squared deviations."""
    site = callsite()
    x = a if isinstance(a, Array) else Array._wrap(operand(a, site)) if not np.isscalar(a) else a
    if not isinstance(x, Array):
        x = Array._wrap(operand(np.asarray(x), site))
    if not D.is_float(x.dtype):
        x = _astype(x, D.float64, site=site)
    axes = normalize_axes(axis, x.ndim, site, "var")
    n = 1
    for ax in axes:
        n *= x.shape[ax]
    m = record_reduce("mean", x, axes, True, site=site)
    d = record_map("subtract", x, m, site=site)
    s = record_reduce("sum", record_map("multiply", d, d, site=site), axes, keepdims, site=site)
    return record_map("divide", s, float(builtins.max(n - ddof, 0)), site=site)


def std(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False):
    site = callsite()
    return record_map("sqrt", var(a, axis=axis, ddof=ddof, keepdims=keepdims), site=site)


def clip(a, a_min=None, a_max=None, out=None, **kw):
    site = callsite()
    if a_min is None and a_max is None:
        raise record_error(ArgumentError, "clip: one of a_min or a_max must be given", site)
    if isinstance(a, Array) and D.is_int(a.dtype):
        # NumPy 2: a Python int bound beyond the dtype's range on the side it cannot clip
        # (uint8 with a_min=-1, a_max=300) clips nothing; on the other side it raises
        lo, hi = D.INT_RANGE[a.dtype]
        if type(a_min) is int and a_min < lo:
            a_min = None
        if type(a_max) is int and a_max > hi:
            a_max = None
        if a_min is None and a_max is None:
            return _astype(a, a.dtype, site=site)
    r = a
    if a_min is not None:
        r = record_map("maximum", r, a_min, site=site)
    if a_max is not None:
        r = record_map("minimum", r, a_max, site=site)
    return r


# dot, vdot, matmul (and inner, outer, tensordot, einsum, sort, cumsum, ...): frontend/linalg.py
from .linalg import dot, matmul, vdot  # noqa: E402,F401


def reshape(a, shape=None, order="C", **kw):
    if shape is None:
        shape = kw.get("newshape")
    return _reshape(a, shape, site=callsite(), order=order)


def transpose(a, axes=None):
    return _transpose(a, axes, site=callsite())


def permute_dims(a, axes):
    return _transpose(a, axes, site=callsite())


def broadcast_to(a, shape):
    return _broadcast_to(a, shape, site=callsite())


def ravel(a, order="C"):
    return _reshape(a, (-1,), site=callsite(), order=order)


def copy(a, order="K"):
    site = callsite()
    p = operand(a, site)
    return _astype(Array._wrap(p), p.dtype, site=site)


def astype(x, dtype, /, copy=True):
    return _astype(x, dtype, site=callsite())


def square_(x):
    return record_map("square", x, site=callsite())


def ndim(a):
    return len(np.shape(a)) if not isinstance(a, Array) else a.ndim


def shape(a):
    return a.shape if isinstance(a, Array) else np.shape(a)


def size(a):
    return a.size if isinstance(a, Array) else np.size(a)


__all__ += ["where", "var", "std", "clip", "dot", "vdot", "matmul", "reshape", "transpose",
            "permute_dims", "broadcast_to", "ravel", "copy", "astype",
            "amax", "amin", "ndim", "shape", "size"]

# NumPy functions that stay lazy when called on streamrt arrays
for _name in __all__:
    if hasattr(np, _name):
        HANDLED_FUNCTIONS[_name] = _g[_name]
HANDLED_FUNCTIONS["max"] = _g["max"]
HANDLED_FUNCTIONS["min"] = _g["min"]
