"""NumPy functions real programs use, built on the lazy ops: rounding, tolerant comparison,
differences, covariance, order statistics (median, percentile, quantile over the sort
intrinsic), grids (mgrid, ogrid, indices, fromfunction), identity; the ufunc methods (outer,
reduce, accumulate, at, reduceat); and the *host functions* -- histogram, histogram2d,
bincount, digitize, and the keywords the lazy versions do not take -- which run NumPy on the
materialised inputs at the call and return streamrt arrays."""
from __future__ import annotations

import builtins
import math
import operator

import numpy as np

from ..core import dtypes as D, fpe
from ..core.errors import ArgumentError, DTypeError, callsite, record_error
from ..core.ops import OPS, UFUNC_TO_OP
from .array import (HANDLED_FUNCTIONS, HANDLED_UFUNCS, UFUNC_METHODS, Array, _as_array,
                    astype, const_port, finish_out, from_numpy_tree, normalize_axes, record_map,
                    record_reduce, reshape, to_numpy_tree, twin_namespace, _const)
from . import creation as _creation, indexing as _indexing, linalg as _linalg, \
    shape as _shape

__all__ = []
HOST_FUNCTIONS = set()      # names computed on the host at the call (docs/numpy_coverage.md)


def _export(f):
    __all__.append(f.__name__)
    return f


# ---- host functions -----------------------------------------------------------------------
def _builtin_error(e):
    return next(c for c in type(e).__mro__ if c.__module__ == "builtins")


def on_host(name, func, args, kwargs, site):
    """``func(*args, **kwargs)`` by NumPy on the materialised inputs (a read), now: its
    errors raised at the user's line with NumPy's exception type, its floating-point warnings
    reported there; ndarrays in the answer become streamrt arrays (0-d ones too)."""
    kwargs = dict(kwargs)
    out = kwargs.pop("out", None)
    hargs = to_numpy_tree(list(args))
    hkw = to_numpy_tree(kwargs)
    try:
        r = fpe.run(name, func, *hargs, **hkw)
    except (ValueError, TypeError, IndexError, ArithmeticError, MemoryError) as e:
        if isinstance(e, FloatingPointError):
            raise
        raise record_error(_builtin_error(e), f"{name}: {e}", site) from None
    r = _streamrt(r, site)
    # out=: written as a region write (work recorded earlier reads the old values)
    return finish_out(name, r, out, True, "unsafe", site) if out is not None else r


def _streamrt(r, site):
    if isinstance(r, np.generic) and r.dtype in D.SUPPORTED_SET:
        return Array._wrap(const_port(np.asarray(r), site))
    if isinstance(r, np.ndarray) and r.dtype not in D.SUPPORTED_SET:
        raise record_error(DTypeError, f"dtype {r.dtype} is not supported by streamrt", site)
    return from_numpy_tree(r, site)


def _host_function(name, doc):
    ref = getattr(np, name)
    impl = getattr(ref, "_implementation", ref)

    def f(*args, **kwargs):
        return on_host(name, impl, args, kwargs, callsite())
    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"``numpy.{name}`` on the host at the call (a read of its inputs): {doc}"
    f.__wrapped__ = impl        # (inspect.signature: NumPy's parameters, for __array_function__)
    HOST_FUNCTIONS.add(name)
    __all__.append(name)
    return f


histogram = _host_function("histogram", "the bin edges depend on the data's range")
histogram2d = _host_function("histogram2d", "the bin edges depend on the data's range")
histogramdd = _host_function("histogramdd", "the bin edges depend on the data's range")
histogram_bin_edges = _host_function("histogram_bin_edges", "edges from the data's range")
bincount = _host_function("bincount", "the length is the largest value plus one")
digitize = _host_function("digitize", "a binary search of each value")
searchsorted = _host_function("searchsorted", "a binary search of each value")
interp = _host_function("interp", "a binary search of each value")
_SET = "the result's length depends on the values"
isin = _host_function("isin", "a search of each value in the other array")
intersect1d = _host_function("intersect1d", _SET)
union1d = _host_function("union1d", _SET)
setdiff1d = _host_function("setdiff1d", _SET)
setxor1d = _host_function("setxor1d", _SET)
unique_all = _host_function("unique_all", _SET)
unique_counts = _host_function("unique_counts", _SET)
unique_inverse = _host_function("unique_inverse", _SET)
unique_values = _host_function("unique_values", _SET)
trim_zeros = _host_function("trim_zeros", _SET)
lexsort = _host_function("lexsort", "a sort by several keys")
partition = _host_function("partition", "NumPy's introselect (its element order is NumPy's)")
argpartition = _host_function("argpartition", "NumPy's introselect (its order is NumPy's)")
ravel_multi_index = _host_function("ravel_multi_index", "index bounds are checked per value")
unravel_index = _host_function("unravel_index", "index bounds are checked per value")
polyfit = _host_function("polyfit", "a least-squares solve with NumPy's conditioning")
polyval = _host_function("polyval", "NumPy's Horner evaluation")
roots = _host_function("roots", "an eigenvalue problem")
nanmedian = _host_function("nanmedian", "the NaN-free length of each slice varies")
nanpercentile = _host_function("nanpercentile", "the NaN-free length of each slice varies")
nanquantile = _host_function("nanquantile", "the NaN-free length of each slice varies")


# ---- rounding -----------------------------------------------------------------------------
@_export
def round(a, decimals=0, out=None):  # noqa: A001 - NumPy's name
    """NumPy's rounding: half to even, at ``decimals`` digits (negative: tens, hundreds);
    ``x * 10**d``, rint, ``/ 10**d`` as NumPy computes it; integers computed in float64 and
    cast back, as NumPy does."""
    site = callsite()
    x = _as_array(a, site)
    decimals = operator.index(decimals)
    dt = x.dtype
    if dt == D.bool_:
        raise record_error(DTypeError, "round: NumPy rounds a bool array to float16, a dtype "
                           "streamrt does not support (cast it first: a.astype(float))", site)
    if dt.kind == "c":
        # NumPy's complex loops round each part as the real ones do (x / (f + 0j) is x.re / f)
        re, im = (_round(record_map(p, x, site=site), decimals, site) for p in ("real", "imag"))
        r = record_map("add", re, record_map("multiply", im, 1j, site=site), site=site)
    else:
        r = _round(x, decimals, site)
    return finish_out("round", r, out, True, "unsafe", site)


def _round(x, decimals, site):
    dt = x.dtype
    if D.is_int(dt) and decimals >= 0:
        r = astype(x, dt, site=site)
    else:
        y = astype(x, D.float64, site=site) if D.is_int(dt) else x
        if decimals == 0:
            r = record_map("rint", y, site=site)
        else:
            f = float(10.0 ** builtins.abs(decimals))
            op1, op2 = ("multiply", "divide") if decimals >= 0 else ("divide", "multiply")
            r = record_map(op2, record_map("rint", record_map(op1, y, f, site=site), site=site),
                           f, site=site)
            if r.dtype != y.dtype:
                r = astype(r, y.dtype, site=site)
        if r.dtype != dt:
            r = astype(r, dt, site=site)
    return r


around = round
__all__.append("around")


# ---- comparison with tolerance ------------------------------------------------------------
def _isclose(a, b, rtol, atol, equal_nan, site):
    x, y = _as_array(a, site), _as_array(b, site)
    ydt = np.result_type(y.dtype, 1.0)
    if ydt != y.dtype:
        y = astype(y, D.canonical(ydt), site=site)
    tol = record_map("add", atol, record_map("multiply", rtol, record_map(
        "absolute", y, site=site), site=site), site=site)
    close = record_map("less_equal", record_map("absolute", record_map(
        "subtract", x, y, site=site), site=site), tol, site=site)
    r = record_map("logical_or", record_map("logical_and", close, record_map(
        "isfinite", y, site=site), site=site), record_map("equal", x, y, site=site), site=site)
    if equal_nan:
        r = record_map("logical_or", r, record_map("logical_and", record_map(
            "isnan", x, site=site), record_map("isnan", y, site=site), site=site), site=site)
    return r


@_export
def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """``|a - b| <= atol + rtol * |b|`` (and ``b`` finite) or ``a == b``: NumPy's
    definition, element-wise and fused."""
    return _isclose(a, b, rtol, atol, equal_nan, callsite())


@_export
def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """``isclose(...).all()`` as a Python bool (a read, as NumPy's returns a bool)."""
    site = callsite()
    return builtins.bool(record_reduce("all", _isclose(a, b, rtol, atol, equal_nan, site),
                                       None, False, site=site).numpy())


@_export
def ptp(a, axis=None, out=None, keepdims=False):
    """``max - min`` along ``axis`` (two fused reductions)."""
    site = callsite()
    x = _as_array(a, site)
    r = record_map("subtract", record_reduce("max", x, axis, keepdims, site=site),
                   record_reduce("min", x, axis, keepdims, site=site), site=site)
    return finish_out("ptp", r, out, True, "unsafe", site, exact=True)


@_export
def average(a, axis=None, weights=None, returned=False, *, keepdims=False):
    """Without ``weights``: ``mean`` (lazy). With weights, or ``returned=True``: on the host
    at the call (NumPy checks that the weights do not sum to zero, which needs their values)."""
    site = callsite()
    if weights is None and not returned:
        return HANDLED_FUNCTIONS["mean"](_as_array(a, site), axis=axis, keepdims=keepdims)
    return on_host("average", np.average._implementation, (a, axis, weights, returned),
                   {"keepdims": keepdims}, site)


def _nan_reduce(name, red, neutral, a, axis, dtype, out, keepdims, initial, where, site):
    x = _as_array(a, site)
    if x.dtype.kind in "fc":
        x = record_map("where", record_map("isnan", x, site=site), _const(neutral, x.dtype), x,
                       site=site)
    kw = {"axis": axis, "dtype": dtype, "out": out, "keepdims": keepdims, "where": where}
    if initial is not np._NoValue:
        kw["initial"] = initial
    return HANDLED_FUNCTIONS[red](x, **kw)


@_export
def nansum(a, axis=None, dtype=None, out=None, keepdims=False, initial=np._NoValue,
           where=True):
    """``sum`` with NaN counted as 0 (a fused select)."""
    return _nan_reduce("nansum", "sum", 0, a, axis, dtype, out, keepdims, initial, where,
                       callsite())


@_export
def nanprod(a, axis=None, dtype=None, out=None, keepdims=False, initial=np._NoValue,
            where=True):
    """``prod`` with NaN counted as 1 (a fused select)."""
    return _nan_reduce("nanprod", "prod", 1, a, axis, dtype, out, keepdims, initial, where,
                       callsite())


def _signed_inf(name, x, out, positive, site):
    x = _as_array(x, site)
    if x.dtype.kind == "c":
        raise record_error(TypeError, f"{name}: This operation is not supported for complex "
                           "values because it would be ambiguous.", site)
    r = record_map("logical_and", record_map("isinf", x, site=site), record_map(
        "greater" if positive else "less", x, 0, site=site), site=site)
    return finish_out(name, r, out, True, "same_kind", site)


@_export
def isposinf(x, out=None):
    return _signed_inf("isposinf", x, out, True, callsite())


@_export
def isneginf(x, out=None):
    return _signed_inf("isneginf", x, out, False, callsite())


@_export
def nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
    """NaN and the infinities replaced (by default 0 and the dtype's largest finite values),
    fused selects; each part of a complex array on its own; integers unchanged."""
    site = callsite()
    a = _as_array(x, site)
    if a.dtype.kind not in "fc":
        return astype(a, a.dtype, site=site) if copy else a
    if not copy:
        raise record_error(ArgumentError, "nan_to_num: copy=False (in place) is not "
                           "supported; assign the result instead", site)

    def part(v):
        big = np.finfo(v.dtype).max
        hi = big if posinf is None else posinf
        lo = -big if neginf is None else neginf
        v = record_map("where", record_map("isnan", v, site=site), _const(nan, v.dtype), v,
                       site=site)
        v = record_map("where", _signed_inf("isposinf", v, None, True, site),
                       _const(hi, v.dtype), v, site=site)
        return record_map("where", _signed_inf("isneginf", v, None, False, site),
                          _const(lo, v.dtype), v, site=site)
    if a.dtype.kind == "c":
        re, im = (part(record_map(p, a, site=site)) for p in ("real", "imag"))
        return record_map("add", re, record_map("multiply", im, 1j, site=site), site=site)
    return part(a)


@_export
def iscomplexobj(x):
    """Whether ``x``'s dtype is complex (no read)."""
    return (x.dtype if isinstance(x, Array) else np.asarray(x).dtype).kind == "c"


@_export
def isrealobj(x):
    return not iscomplexobj(x)


@_export
def array_equal(a1, a2, equal_nan=False):
    """Same shape and equal elements, as a Python bool (a read)."""
    site = callsite()
    x, y = _as_array(a1, site), _as_array(a2, site)
    if x.shape != y.shape:
        return False
    eq = record_map("equal", x, y, site=site)
    if equal_nan and (x.dtype.kind in "fc" or y.dtype.kind in "fc"):
        eq = record_map("logical_or", eq, record_map("logical_and", record_map(
            "isnan", x, site=site), record_map("isnan", y, site=site), site=site), site=site)
    return builtins.bool(record_reduce("all", eq, None, False, site=site).numpy())


@_export
def append(arr, values, axis=None):
    """``concatenate`` of the two (flattened without ``axis``)."""
    site = callsite()
    x, v = _as_array(arr, site), _as_array(values, site)
    if axis is None:
        x, v = reshape(x, (-1,), site=site), reshape(v, (-1,), site=site)
        axis = 0
    return _shape.concatenate((x, v), axis=axis)


@_export
def ediff1d(ary, to_end=None, to_begin=None):
    """``diff`` of the flattened array, ``to_begin`` / ``to_end`` joined (cast to its dtype,
    as NumPy's 'same_kind' rule allows)."""
    site = callsite()
    x = reshape(_as_array(ary, site), (-1,), site=site)
    parts = [record_map("subtract", x[1:], x[:-1], site=site)]
    for v, at in ((to_begin, 0), (to_end, len(parts) + 1)):
        if v is None:
            continue
        hv = np.asarray(v.numpy() if isinstance(v, Array) else v)
        if not np.can_cast(hv.dtype, x.dtype, casting="same_kind"):
            raise record_error(TypeError, "dtype of `to_begin` must be compatible with input "
                               "`ary` under the `same_kind` rule." if at == 0 else
                               "dtype of `to_end` must be compatible with input `ary` under "
                               "the `same_kind` rule.", site)
        c = Array._wrap(const_port(hv.astype(x.dtype).ravel(), site))
        parts.insert(0, c) if at == 0 else parts.append(c)
    return parts[0] if len(parts) == 1 else _shape.concatenate(parts, axis=0)


@_export
def logspace(start, stop, num=50, endpoint=True, base=10.0, dtype=None, axis=0):
    """A constant made at the call (NumPy's values)."""
    site = callsite()
    return _creation._numpy(site, np.logspace, start, stop, num, endpoint, base,
                            _creation._dtype(dtype, site), axis)


@_export
def geomspace(start, stop, num=50, endpoint=True, dtype=None, axis=0):
    """A constant made at the call (NumPy's values)."""
    site = callsite()
    return _creation._numpy(site, np.geomspace, start, stop, num, endpoint,
                            _creation._dtype(dtype, site), axis)


def _split(name, ary, indices_or_sections, axis, site, exact):
    x = _as_array(ary, site)
    ax = normalize_axes(axis, x.ndim, site, name)[0]
    n = x.shape[ax]
    if isinstance(indices_or_sections, (int, np.integer)):
        k = int(indices_or_sections)
        if k <= 0:
            raise record_error(ValueError, "number sections must be larger than 0.", site)
        if exact and n % k:
            raise record_error(ValueError, "array split does not result in an equal division",
                               site)
        each, extra = divmod(n, k)
        sizes = [each + 1] * extra + [each] * (k - extra)
        bounds = np.concatenate(([0], np.cumsum(sizes))).tolist()
    else:
        bounds = [0] + [int(i) for i in indices_or_sections] + [n]
    out = []
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        key = [slice(None)] * x.ndim
        key[ax] = slice(lo, hi)
        out.append(x[tuple(key)])
    return out


@_export
def split(ary, indices_or_sections, axis=0):
    """Views of ``ary`` (no copy), as NumPy's."""
    return _split("split", ary, indices_or_sections, axis, callsite(), True)


@_export
def array_split(ary, indices_or_sections, axis=0):
    """Views; unequal parts allowed (the first ones one longer), as NumPy's."""
    return _split("array_split", ary, indices_or_sections, axis, callsite(), False)


def _split_along(name, ary, indices_or_sections, min_ndim, axis_of):
    """hsplit, vsplit, dsplit: ``_split`` along ``axis_of(ndim)``, for at least ``min_ndim``
    dimensions (NumPy's ValueError otherwise)."""
    site = callsite()
    x = _as_array(ary, site)
    if x.ndim < min_ndim:
        raise record_error(ValueError, f"{name} only works on arrays of {min_ndim} or more "
                           "dimensions", site)
    return _split(name, x, indices_or_sections, axis_of(x.ndim), site, True)


@_export
def hsplit(ary, indices_or_sections):
    return _split_along("hsplit", ary, indices_or_sections, 1, lambda nd: 1 if nd > 1 else 0)


@_export
def vsplit(ary, indices_or_sections):
    return _split_along("vsplit", ary, indices_or_sections, 2, lambda nd: 0)


@_export
def dsplit(ary, indices_or_sections):
    return _split_along("dsplit", ary, indices_or_sections, 3, lambda nd: 2)


@_export
def unstack(x, /, *, axis=0):
    """The views ``x[..., i, ...]`` along ``axis``, as a tuple."""
    site = callsite()
    a = _as_array(x, site)
    if a.ndim == 0:
        raise record_error(ValueError, "Input array must be at least 1-d.", site)
    ax = normalize_axes(axis, a.ndim, site, "unstack")[0]
    return tuple(a[(slice(None),) * ax + (i,)] for i in range(a.shape[ax]))


@_export
def select(condlist, choicelist, default=0):
    """The first true condition's choice, else ``default``: nested ``where`` (fused), in
    NumPy's result dtype (the default as an array: ``select(c, [f32], 0)`` is float64)."""
    site = callsite()
    if len(condlist) != len(choicelist):
        raise record_error(ValueError, "list of cases must be same length as list of "
                           "conditions", site)
    if len(choicelist) == 0:
        raise record_error(ValueError, "select with an empty condition list is not possible",
                           site)
    # (NumPy's: Python numbers stay weak in the result dtype, anything else is an array)
    def arr(c):
        if isinstance(c, Array) or type(c) in (int, float, complex):
            return c
        return Array._wrap(const_port(np.asarray(c), site))
    choices = [arr(c) for c in choicelist]
    dflt = arr(default)
    try:
        dt = D.canonical(np.result_type(*[c.dtype if isinstance(c, Array) else c
                                          for c in choices + [dflt]]))
    except TypeError as e:
        raise record_error(TypeError, f"select: choicelist and default: {e}", site) from None
    conds = [_as_array(c, site) for c in condlist]
    for i, c in enumerate(conds):
        if c.dtype != D.bool_:
            raise record_error(TypeError, f"invalid entry {i} in condlist: should be boolean "
                               "ndarray", site)
    shape = np.broadcast_shapes(*[c.shape for c in conds],
                                *[v.shape for v in choices + [dflt] if isinstance(v, Array)])
    r = _shape.broadcast_to(astype(_as_array(dflt, site), dt, site=site) if isinstance(
        dflt, Array) else Array._wrap(const_port(np.asarray(dflt, dt), site)), shape)
    for c, v in zip(reversed(conds), reversed(choices)):
        v = astype(v, dt, site=site) if isinstance(v, Array) else np.asarray(v, dt)
        r = record_map("where", c, v, r, site=site)
    return r


@_export
def trapezoid(y, x=None, dx=1.0, axis=-1):
    """``sum(d * (y[1:] + y[:-1]) / 2)`` along ``axis`` (one fused reduction)."""
    site = callsite()
    yy = _as_array(y, site)
    nd = yy.ndim
    ax = normalize_axes(axis, nd, site, "trapezoid")[0]
    hi = [slice(None)] * nd
    lo = [slice(None)] * nd
    hi[ax], lo[ax] = slice(1, None), slice(None, -1)
    if x is None:
        d = dx
    else:
        xx = _as_array(x, site)
        if xx.ndim == 1:
            d = diff(xx)
            shp = [1] * nd
            shp[ax] = d.shape[0]
            d = reshape(d, tuple(shp), site=site)
        else:
            d = diff(xx, axis=ax)
    s = record_map("add", yy[tuple(hi)], yy[tuple(lo)], site=site)
    t = record_map("divide", record_map("multiply", d, s, site=site), 2.0, site=site)
    return record_reduce("sum", t, (ax,), False, site=site)


def _imag_test(x, compare, real_answer):
    """``imag(x) <compare> 0``; ``real_answer`` (ones or zeros) for a real array."""
    site = callsite()
    a = _as_array(x, site)
    if a.dtype.kind != "c":
        return real_answer(a.shape, dtype=bool)
    return record_map(compare, record_map("imag", a, site=site), 0, site=site)


@_export
def isreal(x):
    """``imag(x) == 0`` (all True for a real array)."""
    return _imag_test(x, "equal", _creation.ones)


@_export
def iscomplex(x):
    """``imag(x) != 0`` (all False for a real array)."""
    return _imag_test(x, "not_equal", _creation.zeros)


@_export
def diagflat(v, k=0):
    """``diag(v.ravel(), k)``."""
    site = callsite()
    return _shape.diag(reshape(_as_array(v, site), (-1,), site=site), k)


def _cumulative(name, x, axis, dtype, out, include_initial, site):
    a = _as_array(x, site)
    if axis is None:
        if a.ndim > 1:
            raise record_error(ValueError, f"{name}: axis must be specified for "
                               "multi-dimensional arrays.", site)
        axis = 0
    if a.ndim == 0:
        raise record_error(ValueError, f"{name}: input array must be at least 1-d", site)
    ax = normalize_axes(axis, a.ndim, site, name)[0]
    r = getattr(_linalg, "cumsum" if name == "cumulative_sum" else "cumprod")(a, axis=ax,
                                                                             dtype=dtype)
    if include_initial:
        shp = list(r.shape)
        shp[ax] = 1
        first = _creation.zeros(tuple(shp), dtype=r.dtype) if name == "cumulative_sum" else \
            _creation.ones(tuple(shp), dtype=r.dtype)
        r = _shape.concatenate((first, r), axis=ax)
    return finish_out(name, r, out, True, "unsafe", site, exact=True)


@_export
def cumulative_sum(x, /, *, axis=None, dtype=None, out=None, include_initial=False):
    """``cumsum`` (the scan intrinsic), the Array API's: ``include_initial`` puts the 0."""
    return _cumulative("cumulative_sum", x, axis, dtype, out, include_initial, callsite())


@_export
def cumulative_prod(x, /, *, axis=None, dtype=None, out=None, include_initial=False):
    """``cumprod`` (the scan intrinsic); ``include_initial`` puts the 1."""
    return _cumulative("cumulative_prod", x, axis, dtype, out, include_initial, callsite())


@_export
def rot90(m, k=1, axes=(0, 1)):
    """A view: NumPy's flips and transpose."""
    site = callsite()
    a = _as_array(m, site)
    axes = tuple(axes)
    if len(axes) != 2:
        raise record_error(ValueError, "len(axes) must be 2.", site)
    if axes[0] == axes[1] or builtins.abs(axes[0] - axes[1]) == a.ndim:
        raise record_error(ValueError, "Axes must be different.", site)
    if not all(-a.ndim <= x < a.ndim for x in axes):
        raise record_error(ValueError, f"Axes={axes} out of range for array of ndim={a.ndim}.",
                           site)
    k %= 4
    if k == 0:
        return a[...]
    if k == 2:
        return _shape.flip(_shape.flip(a, axes[0]), axes[1])
    perm = list(range(a.ndim))
    perm[axes[0]], perm[axes[1]] = perm[axes[1]], perm[axes[0]]
    if k == 1:
        return _shape.flip(a, axes[1]).transpose(tuple(perm))
    return _shape.flip(a.transpose(tuple(perm)), axes[1])


@_export
def rollaxis(a, axis, start=0):
    """A view (transpose), NumPy's rules for ``start``."""
    site = callsite()
    x = _as_array(a, site)
    n = x.ndim
    axis = normalize_axes(axis, n, site, "rollaxis")[0]
    if start < 0:
        start += n
    if not 0 <= start < n + 1:
        raise record_error(np.exceptions.AxisError, f"'start' arg requires {-n} <= start < "
                           f"{n + 1}, but {start} was passed in", site)
    if axis < start:
        start -= 1
    if axis == start:
        return x[...]
    perm = list(range(n))
    perm.remove(axis)
    perm.insert(start, axis)
    return x.transpose(tuple(perm))


@_export
def gradient(f, *varargs, axis=None, edge_order=1):
    """Central differences inside, one-sided at the edges (NumPy's formulas, as views and
    one fused kernel per axis) for scalar spacings; coordinate arrays on the host."""
    site = callsite()
    if any(np.ndim(v) != 0 or isinstance(v, Array) for v in varargs):
        return on_host("gradient", np.gradient._implementation, (f, *varargs),
                       {"axis": axis, "edge_order": edge_order}, site)
    x = _as_array(f, site)
    axes = tuple(range(x.ndim)) if axis is None else normalize_axes(axis, x.ndim, site,
                                                                     "gradient")
    if len(varargs) == 0:
        dx = [1.0] * len(axes)
    elif len(varargs) == 1:
        dx = list(varargs) * len(axes)
    elif len(varargs) == len(axes):
        dx = list(varargs)
    else:
        raise record_error(TypeError, "invalid number of arguments", site)
    if edge_order > 2:
        raise record_error(ValueError, "'edge_order' greater than 2 not supported", site)
    if D.is_int(x.dtype) or x.dtype == D.bool_:
        x = astype(x, D.float64, site=site)
    out = []
    for ax, h in zip(axes, dx):
        if x.shape[ax] < edge_order + 1:
            raise record_error(ValueError, "Shape of array too small to calculate a numerical "
                               "gradient, at least (edge_order + 1) elements are required.",
                               site)

        def sl(lo, hi, ax=ax):
            key = [slice(None)] * x.ndim
            key[ax] = slice(lo, hi)
            return x[tuple(key)]

        def sub(a, b):
            return record_map("subtract", a, b, site=site)

        def mul(c, a):
            return record_map("multiply", c, a, site=site)

        mid = record_map("divide", sub(sl(2, None), sl(None, -2)), 2.0 * h, site=site)
        n = x.shape[ax]
        if edge_order == 1:
            first = record_map("divide", sub(sl(1, 2), sl(0, 1)), h, site=site)
            last = record_map("divide", sub(sl(n - 1, n), sl(n - 2, n - 1)), h, site=site)
        else:
            add = lambda a, b: record_map("add", a, b, site=site)  # noqa: E731
            first = add(add(mul(-1.5 / h, sl(0, 1)), mul(2.0 / h, sl(1, 2))),
                        mul(-0.5 / h, sl(2, 3)))
            last = add(add(mul(0.5 / h, sl(n - 3, n - 2)), mul(-2.0 / h, sl(n - 2, n - 1))),
                       mul(1.5 / h, sl(n - 1, n)))
        r = _shape.concatenate((first, mid, last), axis=ax)
        out.append(astype(r, x.dtype, site=site) if r.dtype != x.dtype else r)
    return out[0] if len(out) == 1 else tuple(out)


concat = _shape.concatenate        # (NumPy 2's Array API name)
__all__.append("concat")


# ---- differences --------------------------------------------------------------------------
@_export
def diff(a, n=1, axis=-1, prepend=np._NoValue, append=np._NoValue):
    """``a[1:] - a[:-1]`` along ``axis``, ``n`` times (bool: ``!=``), with ``prepend`` and
    ``append`` joined first: slices of views, one fused kernel."""
    site = callsite()
    if n == 0:
        return _as_array(a, site)
    if n < 0:
        raise record_error(ValueError, f"diff: order must be non-negative but got {n!r}", site)
    x = _as_array(a, site)
    if x.ndim == 0:
        raise record_error(ValueError, "diff requires input that is at least one dimensional",
                           site)
    ax = normalize_axes(axis, x.ndim, site, "diff")[0]
    parts = []
    for v in (prepend, append):
        if v is np._NoValue:
            parts.append(None)
            continue
        v = _as_array(v, site)
        if v.ndim == 0:
            shp = list(x.shape)
            shp[ax] = 1
            v = _shape.broadcast_to(v, tuple(shp))
        parts.append(v)
    if parts[0] is not None or parts[1] is not None:
        x = _shape.concatenate([p for p in (parts[0], x, parts[1]) if p is not None], axis=ax)
    op = "not_equal" if x.dtype == D.bool_ else "subtract"
    for _ in range(n):
        hi = [slice(None)] * x.ndim
        lo = [slice(None)] * x.ndim
        hi[ax], lo[ax] = slice(1, None), slice(None, -1)
        x = record_map(op, x[tuple(hi)], x[tuple(lo)], site=site)
    return x


# ---- covariance ---------------------------------------------------------------------------
def _atleast2(x, site):
    return reshape(x, (1,) * (2 - x.ndim) + x.shape, site=site) if x.ndim < 2 else x


@_export
def cov(m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None, *,
        dtype=None):
    """NumPy's estimate: the mean removed (a fused kernel), ``X @ X.T.conj()`` (the matmul
    intrinsic) scaled by ``1 / (N - ddof)``. Weights: on the host (NumPy), at the call."""
    site = callsite()
    if fweights is not None or aweights is not None:
        return on_host("cov", np.cov._implementation, (m, y, rowvar, bias, ddof, fweights,
                                                       aweights), {"dtype": dtype}, site)
    if ddof is not None and ddof != int(ddof):
        raise record_error(ValueError, "ddof must be integer", site)
    X = _as_array(m, site)
    if X.ndim > 2:
        raise record_error(ValueError, "m has more than 2 dimensions", site)
    if dtype is None:
        dt = D.canonical(np.result_type(X.dtype, np.float64)) if y is None else \
            D.canonical(np.result_type(X.dtype, _as_array(y, site).dtype, np.float64))
    else:
        dt = D.canonical(np.dtype(dtype))
    X = _atleast2(astype(X, dt, site=site), site)
    if not rowvar and X.shape[0] != 1:
        X = X.T
    if X.shape[0] == 0:
        return on_host("cov", np.cov._implementation, (m, y, rowvar, bias, ddof), {}, site)
    if y is not None:
        Y = _as_array(y, site)
        if Y.ndim > 2:
            raise record_error(ValueError, "y has more than 2 dimensions", site)
        Y = _atleast2(astype(Y, dt, site=site), site)
        if not rowvar and Y.shape[0] != 1:
            Y = Y.T
        X = _shape.concatenate((X, Y), axis=0)
    if ddof is None:
        ddof = 1 if not bias else 0
    n = X.shape[1]
    fact = n - ddof
    if fact <= 0:
        fpe.warn_at_user("Degrees of freedom <= 0 for slice")
        fact = 0.0
    avg = record_reduce("mean", X, (1,), True, site=site)
    Xc = record_map("subtract", X, avg, site=site)
    Xt = Xc.T
    if Xt.dtype.kind == "c":
        Xt = record_map("conjugate", Xt, site=site)
    c = _linalg.matmul(Xc, Xt)
    c = record_map("multiply", c, 1.0 / fact if fact else math.inf, site=site)
    return _shape.squeeze(c)


@_export
def corrcoef(x, y=None, rowvar=True, bias=np._NoValue, ddof=np._NoValue, *, dtype=None):
    """``cov(x, y) / outer(std, std)``, clipped to [-1, 1] (NumPy's)."""
    site = callsite()
    if bias is not np._NoValue or ddof is not np._NoValue:
        fpe.warn_at_user("bias and ddof have no effect and are deprecated", DeprecationWarning)
    c = cov(x, y, rowvar, dtype=dtype)
    if c.ndim == 0:
        return record_map("divide", c, c, site=site)
    d = _shape.diag(c)
    sd = record_map("sqrt", record_map("real", d, site=site) if d.dtype.kind == "c" else d,
                    site=site)
    c = record_map("divide", c, reshape(sd, (-1, 1), site=site), site=site)
    c = record_map("divide", c, reshape(sd, (1, -1), site=site), site=site)
    if c.dtype.kind != "c":
        return _clip1(c, site)
    # NumPy clips the real and the imaginary parts each to [-1, 1]
    re, im = (_clip1(record_map(p, c, site=site), site) for p in ("real", "imag"))
    return record_map("add", re, record_map("multiply", im, 1j, site=site), site=site)


def _clip1(c, site):
    return record_map("minimum", record_map("maximum", c, -1, site=site), 1, site=site)


# ---- order statistics ---------------------------------------------------------------------
def _sorted_last(x, axis, site, name):
    """``x`` with the reduced axes last and merged, sorted along it (the sort intrinsic);
    the reduced axes (normalised, or None) for keepdims."""
    if axis is None:
        return _linalg.sort(reshape(x, (-1,), site=site), axis=-1), None
    axes = normalize_axes(axis, x.ndim, site, name)
    k = len(axes)
    keep = [i for i in range(x.ndim) if i not in axes]
    t = x.transpose(tuple(keep) + tuple(axes)) if list(axes) != list(range(x.ndim - k,
                                                                             x.ndim)) else x
    t = reshape(t, tuple(x.shape[i] for i in keep) + (-1,), site=site)
    return _linalg.sort(t, axis=-1), axes


def _keep(r, shape, axes, lead, site):
    """keepdims: the reduced axes back as length-1 dimensions (after ``lead`` leading q
    dims)."""
    kept = tuple(1 if axes is None or i in axes else n for i, n in enumerate(shape))
    return reshape(r, r.shape[:lead] + kept, site=site)


def _nan_last(s, r, site):
    """NumPy's NaN rule: a slice holding a NaN (sorted last) gives NaN."""
    if s.dtype.kind not in "fc":
        return r
    bad = record_map("isnan", s[..., -1], site=site)
    return record_map("where", bad, _const(np.nan, r.dtype), r, site=site)


@_export
def median(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    """The middle of each sorted slice (the mean of the two middle values for an even
    length): the sort intrinsic, then a fused kernel; NaN where a slice holds a NaN."""
    site = callsite()
    x = _as_array(a, site)
    if x.ndim == 0 or x.size == 0:
        return on_host("median", np.median._implementation, (a,),
                       {"axis": axis, "out": out, "keepdims": keepdims}, site)
    s, axes = _sorted_last(x, axis, site, "median")
    n = s.shape[-1]
    h = n // 2
    mid = s[..., h:h + 1] if n % 2 else s[..., h - 1:h + 1]
    r = _nan_last(s, record_reduce("mean", mid, (mid.ndim - 1,), False, site=site), site)
    if keepdims:
        r = _keep(r, x.shape, axes, 0, site)
    return finish_out("median", r, out, True, "unsafe", site, exact=True)


_LAZY_METHODS = ("linear", "lower", "higher", "midpoint", "nearest")


def _quantile(name, a, q, axis, out, method, keepdims, weights, interpolation, site):
    if interpolation is not None:
        if method != "linear":
            raise record_error(TypeError, "You shall not pass both `method` and "
                               "`interpolation`!", site)
        method = interpolation
    x = _as_array(a, site)
    weak = type(q) in (int, float)
    qh = np.asarray(q.numpy() if isinstance(q, Array) else q)
    if name == "quantile" and qh.dtype.kind in "iub" and method == "linear":
        method = "lower"        # NumPy: integer virtual indices are taken, not interpolated
    qa = qh.astype(np.float64)
    scale = 100.0 if name == "percentile" else 1.0
    if name == "percentile":
        qa = np.true_divide(qa, 100)
    if not (np.all(qa >= 0) and np.all(qa <= 1)):
        raise record_error(ValueError, "Percentiles must be in the range [0, 100]"
                           if scale == 100 else "Quantiles must be in the range [0, 1]", site)
    if weights is not None or method not in _LAZY_METHODS or x.ndim == 0 or x.size == 0 \
            or x.dtype.kind == "c":
        ref = getattr(np, name)._implementation
        kw = {"axis": axis, "out": out, "method": method, "keepdims": keepdims}
        if weights is not None:
            kw["weights"] = weights
        return on_host(name, ref, (a, q), kw, site)
    s, axes = _sorted_last(x, axis, site, name)
    n = s.shape[-1]
    res = []
    for qv in qa.ravel().tolist():
        v = (n - 1) * qv
        if method == "linear" or method == "midpoint":
            lo = math.floor(v)
            g = v - lo
            if method == "midpoint":
                v = 0.5 * (math.floor(v) + math.ceil(v))
                lo = math.floor(v)
                g = 0.0 if v % 1 == 0 else 0.5
            if v >= n - 1:
                lo = hi = n - 1
            else:
                hi = lo + 1
            lo_v, hi_v = s[..., lo], s[..., hi]
            r = _lerp(lo_v, hi_v, g, weak, site)
        else:
            k = math.floor(v) if method == "lower" else math.ceil(v) if method == "higher" \
                else int(np.around(v))
            r = astype(s[..., builtins.min(k, n - 1)], s.dtype, site=site)
        res.append(_nan_last(s, r, site))
    r = res[0] if qa.ndim == 0 else reshape(_shape.stack(res, axis=0), qa.shape + res[0].shape,
                                            site=site)
    if keepdims:
        r = _keep(r, x.shape, axes, qa.ndim, site)
    return finish_out(name, r, out, True, "unsafe", site, exact=True)


def _lerp(a, b, t, weak, site):
    """NumPy's ``_lerp``: ``a + (b - a) * t`` for t < 0.5, ``b - (b - a) * (1 - t)`` else;
    ``t`` weak (a Python float: the array's float dtype kept) or float64."""
    d = record_map("subtract", b, a, site=site)
    if weak:
        tt, ut = t, 1.0 - t
    else:
        tt, ut = np.asarray(t, np.float64), np.asarray(1.0 - t, np.float64)
        tt, ut = (Array._wrap(const_port(v, site)) for v in (tt, ut))
    if t < 0.5:
        return record_map("add", a, record_map("multiply", d, tt, site=site), site=site)
    return record_map("subtract", b, record_map("multiply", d, ut, site=site), site=site)


@_export
def percentile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
               keepdims=False, *, weights=None, interpolation=None):
    """The ``q``-th percentiles (0..100) of the sorted slices, NumPy's methods 'linear'
    (default), 'lower', 'higher', 'midpoint', 'nearest' lazily (the sort intrinsic, then a
    fused kernel); the others and ``weights=`` on the host at the call."""
    site = callsite()
    return _quantile("percentile", a, q, axis, out, method, keepdims, weights, interpolation,
                     site)


@_export
def quantile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
             keepdims=False, *, weights=None, interpolation=None):
    """``percentile`` with ``q`` in 0..1."""
    site = callsite()
    return _quantile("quantile", a, q, axis, out, method, keepdims, weights, interpolation,
                     site)


# ---- grids and constructors ---------------------------------------------------------------
@_export
def identity(n, dtype=None, *, like=None):
    """``eye(n)``: a constant."""
    site = callsite()
    if like is not None:
        raise record_error(ArgumentError, "identity: like= is not supported by streamrt", site)
    return _creation._numpy(site, np.identity, n, dtype=_creation._dtype(
        dtype if dtype is not None else float, site))


@_export
def indices(dimensions, dtype=int, sparse=False):
    """The index grids: broadcast views of ``arange`` (no n-d data is made); ``sparse``:
    the open grid NumPy gives."""
    site = callsite()
    dims = tuple(operator.index(d) for d in dimensions)
    dt = _creation._dtype(dtype, site)
    out = []
    for i, n in enumerate(dims):
        shp = [1] * len(dims)
        shp[i] = n
        r = reshape(_creation.arange(n, dtype=dt), tuple(shp), site=site)
        out.append(r if sparse else _shape.broadcast_to(r, dims))
    if sparse:
        return tuple(out)
    if not dims:
        return _creation._numpy(site, np.indices, (), dtype=dt)
    return _shape.stack(out, axis=0)


@_export
def fromfunction(function, shape, *, dtype=float, like=None, **kwargs):
    """``function(*indices(shape, dtype), **kwargs)``: the function receives streamrt arrays
    and what it computes is recorded."""
    site = callsite()
    if like is not None:
        raise record_error(ArgumentError, "fromfunction: like= is not supported by streamrt",
                           site)
    dims = tuple(operator.index(d) for d in shape)
    dt = _creation._dtype(dtype, site)
    args = []
    for i, n in enumerate(dims):
        shp = [1] * len(dims)
        shp[i] = n
        r = reshape(_creation.arange(n, dtype=dt), tuple(shp), site=site)
        args.append(_shape.broadcast_to(r, dims))
    return function(*args, **kwargs)


class _Grid:
    """``ps.mgrid[...]`` / ``ps.ogrid[...]``: NumPy's index tricks, computed at the call (a
    constant, like ``arange``), errors at the user's line."""

    def __init__(self, name, grid):
        self._name, self._grid = name, grid

    def __getitem__(self, key):
        site = callsite()
        try:
            r = self._grid[key]
        except (ValueError, TypeError, MemoryError, ArithmeticError) as e:
            raise record_error(_builtin_error(e), f"{self._name}: {e}", site) from None
        return _streamrt(r if not isinstance(r, list) else tuple(r), site)

    def __repr__(self):
        return f"streamrt.{self._name}"


mgrid = _Grid("mgrid", np.mgrid)
ogrid = _Grid("ogrid", np.ogrid)
__all__ += ["mgrid", "ogrid"]


# ---- ufunc methods ------------------------------------------------------------------------
_REDUCE_AS = {"add": "sum", "multiply": "prod", "maximum": "max", "minimum": "min",
              "logical_and": "all", "logical_or": "any"}
_ACCUMULATE_AS = {"add": "cumsum", "multiply": "cumprod"}


def ufunc_method(ufunc, method, inputs, kwargs, site):
    """``np.<ufunc>.<method>(*inputs, **kwargs)`` with a streamrt array among the inputs (or
    ``ps.<ufunc>.<method>``): ``outer`` and ``reduce``/``accumulate`` of add, multiply,
    maximum, minimum, logical_and/or lazily; ``at`` (which writes into its first input) and
    the rest on the host at the call, the result written back as a region write (work
    recorded earlier reads the old values)."""
    name = ufunc.__name__
    if method == "outer":
        impl = HANDLED_UFUNCS.get(_op_name(name))
        if impl is not None and len(inputs) == 2 and ufunc.nin == 2:
            # (NumPy makes arrays of the inputs first: a Python number is not weak here)
            a, b = (v if isinstance(v, Array) else Array._wrap(const_port(np.asarray(v), site))
                    for v in inputs)
            a = reshape(a, a.shape + (1,) * b.ndim, site=site)
            return impl(a, b, **kwargs)
    elif method == "reduce":
        red = _REDUCE_AS.get(name)
        if red is not None and set(kwargs) <= {"axis", "keepdims", "dtype", "out", "initial",
                                               "where"}:
            kw = dict(kwargs)
            kw.setdefault("axis", 0)
            ok = True
            if red in ("all", "any"):
                ok = "initial" not in kw and kw.get("dtype") is None
                kw.pop("dtype", None)
            elif red in ("max", "min"):
                ok = kw.get("dtype") is None
                kw.pop("dtype", None)
            if ok:
                return HANDLED_FUNCTIONS[red](_as_array(inputs[0], site), **kw)
    elif method == "accumulate":
        acc = _ACCUMULATE_AS.get(name)
        if acc is not None and set(kwargs) <= {"axis", "dtype", "out"}:
            kw = dict(kwargs)
            kw.setdefault("axis", 0)
            return getattr(_linalg, acc)(_as_array(inputs[0], site), **kw)
    elif method == "at":
        target = inputs[0]
        if not isinstance(target, Array):
            return getattr(ufunc, method)(*to_numpy_tree(list(inputs)), **kwargs)
        host = to_numpy_tree(target, writable=True)
        rest = to_numpy_tree(list(inputs[1:]))
        try:
            fpe.run(name, ufunc.at, host, *rest, **kwargs)
        except (ValueError, TypeError, IndexError) as e:
            raise record_error(_builtin_error(e), f"{name}.at: {e}", site) from None
        _indexing.setitem(target, Ellipsis, host)
        return None
    if method not in ("outer", "reduce", "accumulate", "reduceat", "at"):
        raise record_error(ArgumentError, f"{name}.{method} is not a ufunc method", site)
    return on_host(f"{name}.{method}", getattr(ufunc, method), inputs, kwargs, site)


def _op_name(ufunc_name):
    return UFUNC_TO_OP.get(ufunc_name, ufunc_name)


UFUNC_METHODS["impl"] = ufunc_method


def _attach_methods(g):
    """``ps.add.outer``, ``ps.add.reduce``, ... on streamrt's own ufunc-like functions, with
    NumPy's ``nin``, ``nout``, ``identity``."""
    for name, f in list(HANDLED_UFUNCS.items()):
        op = OPS.get(name)
        uf = getattr(np, op.ufunc or name, None) if op is not None else None
        if not isinstance(uf, np.ufunc):
            continue
        targets = {id(v): v for k, v in g.items() if k in (name, *op.aliases) and callable(v)}
        for t in targets.values():
            try:
                for m in ("outer", "reduce", "accumulate", "at", "reduceat"):
                    setattr(t, m, _method(uf, m))
                t.nin, t.nout, t.nargs, t.identity = uf.nin, uf.nout, uf.nargs, uf.identity
                t.ufunc = uf
            except AttributeError:          # (an object without a __dict__)
                pass


def _method(uf, m):
    def method(*inputs, **kwargs):
        return ufunc_method(uf, m, inputs, kwargs, callsite())
    method.__name__ = method.__qualname__ = f"{uf.__name__}.{m}"
    method.__doc__ = f"``numpy.{uf.__name__}.{m}`` on streamrt arrays."
    return method


for _n in __all__:
    if hasattr(np, _n) and _n not in ("mgrid", "ogrid"):
        HANDLED_FUNCTIONS[_n] = globals()[_n]
HANDLED_FUNCTIONS["round"] = round
HANDLED_FUNCTIONS["around"] = round
# the NumPy tier: each function runs NumPy's own over computed small arrays (array.py)
twin_namespace(globals(), [n for n in __all__ if n not in HOST_FUNCTIONS], np)


# ---- Array methods ------------------------------------------------------------------------
def _m_round(self, decimals=0, out=None):
    return round(self, decimals, out)


Array.round = _m_round
Array.searchsorted = lambda self, v, side="left", sorter=None: searchsorted(self, v, side, sorter)
Array.ptp = lambda self, axis=None, out=None, keepdims=False: ptp(self, axis, out, keepdims)
Array.__round__ = lambda self, ndigits=None: (           # builtins.round(a): a 0-d's number
    builtins.round(self.item()) if ndigits is None else round(self, ndigits))

# ndarray's attributes streamrt does not provide, and why (docs/numpy_coverage.md)
NOT_PROVIDED_METHODS = {
    "base": "streamrt arrays own their data or view another streamrt array (no buffer object)",
    "ctypes": "no raw buffer pointer: the data may live on a device or not be computed yet",
    "data": "no raw buffer: use np.asarray(a) (a read) for the host copy",
    "flags": "layout is the runtime's: every buffer is C-ordered",
    "flat": "use a.ravel() (a view) or np.asarray(a).flat",
    "byteswap": "only native byte order is supported",
    "newbyteorder": "only native byte order is supported",
    "view": "reinterpreting bytes (a.view(dtype)) is not supported; use astype",
    "getfield": "structured dtypes are not supported",
    "setfield": "structured dtypes are not supported",
    "dump": "pickle np.asarray(a) instead",
    "dumps": "pickle np.asarray(a) instead",
    "tofile": "write np.asarray(a) instead",
    "tobytes": "use np.asarray(a).tobytes() (a read)",
    "resize": "in-place resizing with reallocation: use ps.resize-free code (a.reshape, "
              "concatenate)",
    "setflags": "layout is the runtime's",
    "partition": "use sort (the sort intrinsic)",
    "argpartition": "use argsort",
    "choose": "use where or take",
    "compress": "use a[mask] (a gather)",
}


def _missing(name):
    """A property for ndarray attribute ``name``, which streamrt arrays lack: an
    AttributeError naming the user's line and why. (Properties, not ``__getattr__``: a
    ``__getattr__`` would make every attribute miss a Python call -- NumPy probes several
    on each ``np.asarray(a)``: 1.1 -> 3.2 us.)"""
    why = NOT_PROVIDED_METHODS.get(name) or "not provided by streamrt"

    def get(self):
        raise record_error(AttributeError, f"ndarray.{name} is not provided by streamrt "
                           f"arrays ({why}; docs/numpy_coverage.md)", callsite())
    return property(get, doc=f"Not provided: {why}.")


for _n in dir(np.ndarray):
    if not _n.startswith("_") and not any(_n in k.__dict__ for k in Array.__mro__):
        setattr(Array, _n, _missing(_n))
