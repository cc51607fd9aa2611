"""Element-wise functions, reductions and composites (var, std, clip, dot) of the public
namespace, generated from the op table; NumPy functions they answer for under
__array_function__."""
from __future__ import annotations

import builtins

import numpy as np

from ..core import dtypes as D
from ..core.ops import OPS, REDUCTIONS, reduction_dtypes
from ..core.errors import ArgumentError, DTypeError, ShapeError, callsite, record_error
from .array import (HANDLED_FUNCTIONS, HANDLED_UFUNCS, Array, _NoValue, _as_array, _const, _mask,
                    astype as _astype, broadcast_to as _broadcast_to, canonical_dtype,
                    finish_out, normalize_axes, operand, record_map, record_reduce,
                    record_unary, reduce_kw, reduced_count, reshape as _reshape,
                    transpose as _transpose, twin_namespace)
from . import native as _native
from .shape import nonzero

__all__ = []


def _ufunc_kw(name, site, casting, order, subok, signature):
    """The ufunc keywords streamrt accepts at their NumPy defaults (or, for ``order``, any
    value: it changes memory layout, never values) -- anything else is refused here."""
    if casting not in ("no", "equiv", "safe", "same_kind", "unsafe"):
        raise record_error(ArgumentError, f"{name}: casting must be one of 'no', 'equiv', "
                           f"'safe', 'same_kind', or 'unsafe' (got {casting!r})", site)
    if order not in ("K", "A", "C", "F", None):
        raise record_error(ArgumentError, f"{name}: order must be one of 'K', 'A', 'C', 'F' "
                           f"(got {order!r})", site)
    if subok is not True or signature is not None:
        raise record_error(ArgumentError, f"{name}: subok= and signature= are not supported "
                           "by streamrt", site)


def _with_dtype(name, args, dtype, casting, site):
    """``np.<ufunc>(*args, dtype=dtype)``: NumPy resolves the loop from the requested output
    dtype and casts the inputs to it (``np.add(a64, b64, dtype=np.float32)`` adds in
    float32), so the inputs are cast first and the op runs in that loop."""
    op = OPS[name]
    dt = canonical_dtype(dtype, site)
    kinds = []
    for a in args:
        if isinstance(a, Array):
            kinds.append(a.dtype)
        elif isinstance(a, (bool, int, float, complex)):
            kinds.append(type(a))
        else:
            kinds.append(np.asarray(a).dtype)
    try:
        loop = getattr(np, op.ufunc).resolve_dtypes(
            tuple(kinds) + (None,), signature=(None,) * len(kinds) + (dt,), casting=casting)
    except (TypeError, AttributeError) as e:
        raise record_error(DTypeError, f"{name}(..., dtype={dt}): {e}", site) from None
    cast = [a if isinstance(a, (bool, int, float, complex)) or np.asarray(0, l).dtype == k
            else _astype(a, l, site=site) for a, k, l in zip(args, kinds, loop)]
    r = record_map(name, *cast, site=site)
    return _astype(r, loop[-1], site=site) if r.dtype != loop[-1] else r


def _make_map(name):
    op = OPS[name]
    if op.arity == 1:
        def f(x, /, out=None, *, where=True, casting="same_kind", order="K", dtype=None,
              subok=True, signature=None):
            site = callsite()
            _ufunc_kw(name, site, casting, order, subok, signature)
            r = record_unary(name, x, site) if dtype is None else \
                _with_dtype(name, (x,), dtype, casting, site)
            return finish_out(name, r, out, where, casting, site)
    elif op.arity == 2:
        def f(x1, x2, /, out=None, *, where=True, casting="same_kind", order="K", dtype=None,
              subok=True, signature=None):
            site = callsite()
            _ufunc_kw(name, site, casting, order, subok, signature)
            r = record_map(name, x1, x2, site=site) if dtype is None else \
                _with_dtype(name, (x1, x2), dtype, casting, site)
            return finish_out(name, r, out, where, casting, site)
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


_real = _g["real"]


def real(val, /, out=None, *, where=True, casting="same_kind", order="K", dtype=None,
         subok=True, signature=None):
    """NumPy's ``np.real``: the real part of a complex array; a real array itself (NumPy
    returns the very array, so a write into either is seen through both)."""
    if isinstance(val, Array) and val.dtype.kind != "c" and out is None and where is True \
            and dtype is None:
        return val
    return _real(val, out=out, where=where, casting=casting, order=order, dtype=dtype,
                 subok=subok, signature=signature)


def where(condition, x=None, y=None, /):
    site = callsite()
    if x is None and y is None:
        return nonzero(condition)
    if x is None or y is None:
        raise record_error(ArgumentError, "either both or neither of x and y should be given",
                           site)
    return record_map("where", condition, x, y, site=site)


def _make_reduce(name):
    if name in ("sum", "prod"):
        def f(a, axis=None, dtype=None, out=None, keepdims=False, initial=_NoValue,
              where=True):
            site = callsite()
            r = reduce_kw(name, a, axis, keepdims, dtype, initial, where, site)
            return finish_out(name, r, out, True, "unsafe", site, exact=True)
    elif name == "mean":
        def f(a, axis=None, dtype=None, out=None, keepdims=False, *, where=True):
            site = callsite()
            r = reduce_kw(name, a, axis, keepdims, dtype, _NoValue, where, site)
            return finish_out(name, r, out, True, "unsafe", site, exact=True)
    elif name in ("max", "min"):
        def f(a, axis=None, out=None, keepdims=False, initial=_NoValue, where=True):
            site = callsite()
            r = reduce_kw(name, a, axis, keepdims, None, initial, where, site)
            return finish_out(name, r, out, True, "unsafe", site, exact=True)
    elif name in ("any", "all"):
        def f(a, axis=None, out=None, keepdims=False, *, where=True):
            site = callsite()
            r = reduce_kw(name, a, axis, keepdims, None, _NoValue, where, site)
            return finish_out(name, r, out, True, "unsafe", site, exact=True)
    else:
        def f(a, axis=None, out=None, *, keepdims=False):
            site = callsite()
            r = record_reduce(name, a, axis, keepdims, site=site)
            return finish_out(name, r, out, True, "unsafe", site, exact=True)
    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"Lazy ``numpy.{name}`` over any axis or axes, with keepdims."
    return f


for _name in REDUCTIONS:
    _g[_name] = _make_reduce(_name)
    __all__.append(_name)
amax, amin = max, min  # noqa: F821


def _ddof(ddof, correction, site, name):
    if correction is not None:
        if ddof != 0:
            raise record_error(ArgumentError, f"{name}: ddof and correction can't be provided "
                               "simultaneously.", site)
        return correction
    return ddof


def var(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True, mean=None,
        correction=None):
    """Two fused passes: the mean, then the mean of squared deviations (|d|^2 for complex
    input, whose variance is real)."""
    site = callsite()
    x = _as_array(a, site)
    ddof = _ddof(ddof, correction, site, "var")
    axes = normalize_axes(axis, x.ndim, site, "var")
    if dtype is not None:
        r = _var_in(x, axes, canonical_dtype(dtype, site), ddof, keepdims, where, mean, site)
        return finish_out("var", r, out, True, "unsafe", site, exact=True)
    if not D.is_float(x.dtype) and x.dtype.kind != "c":
        x = _astype(x, D.float64, site=site)
    m, n = _var_count(x, axes, where, site)
    if mean is not None:
        mu = _as_array(mean, site)
    elif m is None:
        mu = record_reduce("mean", x, axes, True, site=site)
    else:
        mu = reduce_kw("mean", x, axes, True, None, _NoValue, m, site)
    sq = _squares(record_map("subtract", x, mu, site=site), True, site)
    if m is not None:
        sq = record_map("where", m, sq, _const(0, sq.dtype), site=site)
    s = record_reduce("sum", sq, axes, keepdims, site=site)
    return finish_out("var", _per_dof(s, n, m, ddof, keepdims, site), out, True, "unsafe",
                      site, exact=True)


def _var_in(x, axes, dt, ddof, keepdims, where, mean, site):
    """``var`` with ``dtype=`` given: NumPy's own steps (numpy/_core/_methods.py ``_var``), so
    that any dtype gives NumPy's dtype and value -- the mean and the sum of squares are sums
    in ``dt`` (an integer dtype wraps as NumPy's does), each divided by the count and cast
    back to the sum's dtype; the deviations of a real array are squared as they are (complex
    when ``dt`` is), of a complex array as |d|^2."""
    m, n = _var_count(x, axes, where, site)
    w = True if m is None else m
    if mean is not None:
        mu = _as_array(mean, site)
    else:
        s = reduce_kw("sum", x, axes, True, dt, _NoValue, w, site)
        mu = record_map("divide", s, n, site=site)
        mu = _astype(mu, s.dtype, site=site) if mu.dtype != s.dtype else mu
    sq = _squares(record_map("subtract", x, mu, site=site), x.dtype.kind not in "iuf", site)
    s = reduce_kw("sum", sq, axes, keepdims, dt, _NoValue, w, site)
    return _per_dof(s, n, m, ddof, keepdims, site)


def _var_count(x, axes, where, site):
    """(the where= mask or None, the count each result reduces, keepdims-shaped under a
    mask: ``reduced_count``)."""
    m = None if where is True else _mask(where, x, site, "var")
    return m, reduced_count(x, axes, True, m, site)


def _squares(d, abs2, site):
    """``d * d``; a complex ``d`` as |d|^2 when ``abs2`` (its variance is real)."""
    if abs2 and d.dtype.kind == "c":
        re, im = record_map("real", d, site=site), record_map("imag", d, site=site)
        return record_map("add", record_map("multiply", re, re, site=site),
                          record_map("multiply", im, im, site=site), site=site)
    return record_map("multiply", d, d, site=site)


def _per_dof(s, n, m, ddof, keepdims, site):
    """The summed squares ``s`` over the degrees of freedom (count - ddof, at least 0), in
    ``s``'s dtype (cast back, as NumPy's division into its own output)."""
    if m is None:
        r = record_map("divide", s, builtins.max(n - ddof, 0), site=site)
    else:
        nk = n if keepdims else _reshape(n, s.shape, site=site)
        r = record_map("divide", s, record_map("maximum", record_map(
            "subtract", nk, ddof, site=site), 0, site=site), site=site)
    return _astype(r, s.dtype, site=site) if r.dtype != s.dtype else r


def std(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True, mean=None,
        correction=None):
    site = callsite()
    v = var(a, axis=axis, dtype=dtype, ddof=ddof, keepdims=keepdims, where=where, mean=mean,
            correction=correction)
    if v.dtype.kind in "fc":
        r = record_map("sqrt", v, site=site)
    else:                       # (an integer dtype=: the square root cast back to it)
        r = _astype(record_map("sqrt", _astype(v, D.float64, site=site), site=site), v.dtype,
                    site=site)
    return finish_out("std", r, out, True, "unsafe", site, exact=True)


def clip(a, a_min=_NoValue, a_max=_NoValue, out=None, *, min=_NoValue, max=_NoValue,
         where=True, casting="same_kind", order="K", dtype=None, subok=True, signature=None):
    """``minimum(maximum(a, a_min), a_max)``, NumPy's definition (NaN stays NaN); ``min=`` and
    ``max=`` are the NumPy 2.1 / Array API names of the bounds."""
    site = callsite()
    _ufunc_kw("clip", site, casting, order, subok, signature)
    for old, new, nm in ((a_min, min, "min"), (a_max, max, "max")):
        if old is not _NoValue and new is not _NoValue:
            raise record_error(ArgumentError, f"clip: passed a_{nm} and {nm}, use one", site)
    lo = a_min if a_min is not _NoValue else (min if min is not _NoValue else None)
    hi = a_max if a_max is not _NoValue else (max if max is not _NoValue else None)
    r = _as_array(a, site)
    if dtype is not None:
        r = _astype(r, canonical_dtype(dtype, site), site=site)
    if D.is_int(r.dtype):
        # NumPy 2: a Python int bound beyond the dtype's range on the side it cannot clip
        # (uint8 with a_min=-1, a_max=300) clips nothing; on the other side it raises
        imin, imax = D.INT_RANGE[r.dtype]
        if type(lo) is int and lo < imin:
            lo = None
        if type(hi) is int and hi > imax:
            hi = None
    if lo is None and hi is None:
        r = _astype(r, r.dtype, site=site)
    if lo is not None:
        r = record_map("maximum", r, lo, site=site)
    if hi is not None:
        r = record_map("minimum", r, hi, site=site)
    return finish_out("clip", r, out, where, casting, site)


# dot, vdot, matmul (and inner, outer, tensordot, einsum, sort, cumsum, ...): frontend/linalg.py
from .linalg import dot, matmul, vdot  # noqa: E402,F401


def reshape(a, /, shape=None, order="C", *, newshape=None, copy=None):
    site = callsite()
    if shape is None:
        shape = newshape
    elif newshape is not None:
        raise record_error(ArgumentError, "reshape: you cannot specify 'newshape' and 'shape' "
                           "simultaneously.", site)
    if shape is None:
        raise record_error(ArgumentError, "reshape: a shape is required", site)
    r = _reshape(a, shape, site=site, order=order)
    return _astype(r, r.dtype, site=site) if copy else r


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


def astype(x, dtype, /, *, copy=True, device=None):
    site = callsite()
    if device not in (None, "cpu"):
        raise record_error(ArgumentError, f"astype: unknown device {device!r} (streamrt places "
                           "arrays itself; use None or 'cpu')", site)
    return _astype(x, dtype, site=site)


def square_(x):
    return record_map("square", x, site=callsite())


def ndim(a):
    return len(np.shape(a)) if not isinstance(a, Array) else a.ndim


def shape(a):
    return a.shape if isinstance(a, Array) else np.shape(a)


def size(a, axis=None):
    if axis is None:
        return a.size if isinstance(a, Array) else np.size(a)
    return a.shape[axis] if isinstance(a, Array) else np.size(a, axis)


__all__ += ["where", "var", "std", "clip", "dot", "vdot", "matmul", "reshape", "transpose",
            "permute_dims", "broadcast_to", "ravel", "copy", "astype",
            "amax", "amin", "ndim", "shape", "size"]

# NumPy functions that stay lazy when called on streamrt arrays
for _name in __all__:
    if hasattr(np, _name):
        HANDLED_FUNCTIONS[_name] = _g[_name]
HANDLED_FUNCTIONS["max"] = _g["max"]
# the NumPy tier: each function runs NumPy's own over computed small arrays (array.py)
twin_namespace(_g, __all__, np)
for _name, _op in OPS.items():
    if _op.ufunc is not None and _name in _g:
        HANDLED_UFUNCS[_name] = _g[_name]
HANDLED_FUNCTIONS["min"] = _g["min"]
