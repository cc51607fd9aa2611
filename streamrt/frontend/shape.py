"""Shape and index functions: flip, roll, concatenate/stack, pad, repeat, tile, diagonal/diag,
triu/tril, meshgrid, moveaxis..., and the data-dependent ones (take, put, nonzero, unique).

Views (flip, diagonal, moveaxis, broadcast_to, expand_dims) cost nothing: they are offsets and
strides. Functions that assemble a new array (concatenate, stack, pad, roll, diag, repeat,
tile) fill a fresh buffer with fused region-write kernels (frontend/indexing.py): one copy
kernel per piece, writing in place into the new buffer. take/take_along_axis/put and array
repeats are gathers/scatters (intrinsics) whose index arrays are evaluated when recorded;
nonzero, argwhere, flatnonzero and unique return arrays whose *shape* depends on the data, so
they evaluate their argument when called."""
from __future__ import annotations

import builtins

import numpy as np

from ..core import dtypes as D
from ..core.errors import ArgumentError, ShapeError, callsite, not_lazy, record_error
from ..core.ir import scratch_port
from .array import (HANDLED_FUNCTIONS, Array, _view, astype, basic_index, broadcast_to,
                    const_port, finish_out, normalize_axes, operand, record_map, reshape,
                    scalar_const, transpose, twin_namespace)
from . import pieces as _pieces
from .indexing import gather, scatter, write_region
from .array import record_reduce

__all__ = []


def _export(f):
    __all__.append(f.__name__)
    return f


def _arr(x, site):
    if isinstance(x, Array):
        return x
    p = operand(x, site)
    if p.kind == "scalar":
        p = scalar_const(p, site)
    return Array._wrap(p)


def _axis(axis, ndim, site, name):
    return normalize_axes(int(axis) if isinstance(axis, (np.integer,)) else axis, ndim, site,
                          name)[0]


def _filled(shape, dt, value, site):
    """A new array of ``shape`` filled with ``value``: a fused fill kernel (no host buffer).
    ``value=None``: uninitialised, for arrays the caller overwrites completely (the first
    region write takes the buffer over in place, proggen/analysis.py)."""
    if value is None:
        return Array._wrap(scratch_port(shape, dt, site))
    c = Array._wrap(const_port(np.asarray(value, dtype=dt), site))
    return astype(broadcast_to(c, tuple(shape), site=site), dt, site=site)


def _write(out, key, value, site):
    off, shape, st = basic_index(out._port, key, site)
    write_region(out, off, shape, st, value, site)


# ---- views --------------------------------------------------------------------------------
@_export
def flip(m, axis=None):
    site = callsite()
    a = _arr(m, site)
    axes = normalize_axes(axis, a.ndim, site, "flip")
    _, off, st = a._port.base_view()
    st = list(st)
    for ax in axes:
        if a.shape[ax] > 0:
            off += (a.shape[ax] - 1) * st[ax]
        st[ax] = -st[ax]
    return _view(a._port, off, a.shape, st, site, src=a)


@_export
def fliplr(m):
    return flip(m, 1)


@_export
def flipud(m):
    return flip(m, 0)


@_export
def diagonal(a, offset=0, axis1=0, axis2=1):
    site = callsite()
    a = _arr(a, site)
    if a.ndim < 2:
        raise record_error(ShapeError, "diag requires an array of at least two dimensions",
                           site)
    ax1, ax2 = (normalize_axes(x, a.ndim, site, "diagonal")[0] for x in (axis1, axis2))
    if ax1 == ax2:
        raise record_error(ShapeError, "axis1 and axis2 cannot be the same", site)
    off, shape, strides = diagonal_region(a._port, int(offset), ax1, ax2)
    return _view(a._port, off, shape, strides, site, src=a)


def diagonal_region(p, k, ax1, ax2):
    """(element offset, shape, strides) in its base of diagonal ``k`` of port ``p`` over axes
    ``ax1``, ``ax2`` (normalised, distinct): the other axes, then the diagonal."""
    _, off, st = p.base_view()
    n1, n2 = p.shape[ax1], p.shape[ax2]
    if k >= 0:
        n = builtins.max(0, builtins.min(n1, n2 - k))
        start = k * st[ax2] if n else 0
    else:
        n = builtins.max(0, builtins.min(n1 + k, n2))
        start = -k * st[ax1] if n else 0
    rest = [i for i in range(len(p.shape)) if i not in (ax1, ax2)]
    return (off + start, [p.shape[i] for i in rest] + [n],
            [st[i] for i in rest] + [st[ax1] + st[ax2]])


@_export
def expand_dims(a, axis):
    site = callsite()
    x = _arr(a, site)
    ax = axis if isinstance(axis, (tuple, list)) else (axis,)
    nd = x.ndim + len(ax)
    axes = normalize_axes(tuple(ax), nd, site, "expand_dims")
    it = iter(x.shape)
    return reshape(x, tuple(1 if i in axes else next(it) for i in range(nd)), site=site)


@_export
def squeeze(a, axis=None):
    site = callsite()
    x = _arr(a, site)
    axes = normalize_axes(axis, x.ndim, site, "squeeze") if axis is not None else tuple(
        i for i, s in enumerate(x.shape) if s == 1)
    for i in axes:
        if x.shape[i] != 1:
            raise record_error(ShapeError, "cannot select an axis to squeeze out which has size "
                               "not equal to one", site)
    return reshape(x, tuple(s for i, s in enumerate(x.shape) if i not in axes), site=site)


@_export
def moveaxis(a, source, destination):
    site = callsite()
    a = _arr(a, site)
    src = [normalize_axes(s, a.ndim, site, "moveaxis")[0] for s in np.atleast_1d(source)]
    dst = [normalize_axes(d, a.ndim, site, "moveaxis")[0] for d in np.atleast_1d(destination)]
    if len(src) != len(dst):
        raise record_error(ShapeError, "`source` and `destination` arguments must have the "
                           "same number of elements", site)
    order = [n for n in range(a.ndim) if n not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return transpose(a, tuple(order), site=site)


@_export
def swapaxes(a, axis1, axis2):
    site = callsite()
    a = _arr(a, site)
    ax = list(range(a.ndim))
    i, j = (normalize_axes(x, a.ndim, site, "swapaxes")[0] for x in (axis1, axis2))
    ax[i], ax[j] = ax[j], ax[i]
    return transpose(a, tuple(ax), site=site)


def _atleast(n, arys, site):
    out = []
    for x in arys:
        a = _arr(x, site)
        if a.ndim < n:
            shape = {1: lambda s: (1,), 2: lambda s: (1,) * (2 - len(s)) + s,
                     3: lambda s: (1, 1, 1) if not s else ((1,) + s + (1,) if len(s) == 1
                                                            else s + (1,))}[n](a.shape)
            a = reshape(a, shape, site=site)
        out.append(a)
    return out[0] if len(out) == 1 else tuple(out)


@_export
def atleast_1d(*arys):
    return _atleast(1, arys, callsite())


@_export
def atleast_2d(*arys):
    return _atleast(2, arys, callsite())


@_export
def atleast_3d(*arys):
    return _atleast(3, arys, callsite())


@_export
def broadcast_arrays(*args):
    site = callsite()
    arrs = [_arr(x, site) for x in args]
    try:
        shape = tuple(np.broadcast_shapes(*[a.shape for a in arrs]))
    except ValueError as e:
        raise record_error(ShapeError, str(e), site) from None
    return tuple(broadcast_to(a, shape, site=site) for a in arrs)


# ---- assembling new arrays -------------------------------------------------------------------
def _result_dtype(arrs, dtype, site):
    if dtype is not None:
        try:
            return D.canonical(dtype)
        except TypeError as e:
            raise record_error(ArgumentError, str(e), site) from None
    return D.canonical(np.result_type(*[a.dtype for a in arrs]))


@_export
def concatenate(arrays, axis=0, out=None, dtype=None, casting="same_kind"):
    site = callsite()
    if out is not None:
        if dtype is not None:
            raise record_error(ArgumentError, "concatenate() only takes `out` or `dtype` as an "
                               "argument, but both were provided.", site)
        r = concatenate(arrays, axis, None, None, casting)
        return finish_out("concatenate", r, out, True, casting, site)
    arrs = [_arr(x, site) for x in arrays]
    if not arrs:
        raise record_error(ArgumentError, "need at least one array to concatenate", site)
    if axis is None:
        arrs = [reshape(a, (-1,), site=site) for a in arrs]
        axis = 0
    nd = arrs[0].ndim
    if nd == 0:
        raise record_error(ShapeError, "zero-dimensional arrays cannot be concatenated", site)
    ax = _axis(axis, nd, site, "concatenate")
    for i, a in enumerate(arrs):
        if a.ndim != nd:
            raise record_error(ShapeError, "all the input array dimensions except for the "
                               "concatenation axis must match exactly, but along dimension 0, "
                               f"the array at index 0 has {nd} dimension(s) and the array at "
                               f"index {i} has {a.ndim} dimension(s)", site)
        for d in range(nd):
            if d != ax and a.shape[d] != arrs[0].shape[d]:
                raise record_error(ShapeError, "all the input array dimensions except for the "
                                   f"concatenation axis must match exactly, but along "
                                   f"dimension {d}, the array at index 0 has size "
                                   f"{arrs[0].shape[d]} and the array at index {i} has size "
                                   f"{a.shape[d]}", site)
    dt = _result_dtype(arrs, dtype, site)
    shape = list(arrs[0].shape)
    shape[ax] = sum(a.shape[ax] for a in arrs)
    out = _filled(shape, dt, None, site)       # every element is written below
    start, pieces = 0, []
    for a in arrs:
        n = a.shape[ax]
        if n:
            _write(out, (slice(None),) * ax + (slice(start, start + n),), a, site)
            pieces.append((start, start + n, a._port))
        start += n
    if all(p.dtype == dt for _, _, p in pieces):
        # element-wise ops reading ``out`` read the inputs instead (frontend/pieces.py)
        _pieces.register(out._port, ax, pieces)
    return out


@_export
def stack(arrays, axis=0, out=None, *, dtype=None, casting="same_kind"):
    site = callsite()
    arrs = [_arr(x, site) for x in arrays]
    if not arrs:
        raise record_error(ArgumentError, "need at least one array to stack", site)
    if any(a.shape != arrs[0].shape for a in arrs):
        raise record_error(ShapeError, "all input arrays must have the same shape", site)
    ax = _axis(axis, arrs[0].ndim + 1, site, "stack")
    shape = list(arrs[0].shape)
    shape.insert(ax, 1)
    return concatenate([reshape(a, tuple(shape), site=site) for a in arrs], axis=ax, out=out,
                       dtype=dtype, casting=casting)


@_export
def hstack(tup, dtype=None):
    arrs = _atleast(1, tuple(tup), callsite())
    arrs = arrs if isinstance(arrs, tuple) else (arrs,)
    return concatenate(arrs, axis=0 if arrs[0].ndim == 1 else 1, dtype=dtype)


@_export
def vstack(tup, dtype=None):
    arrs = _atleast(2, tuple(tup), callsite())
    return concatenate(arrs if isinstance(arrs, tuple) else (arrs,), axis=0, dtype=dtype)


@_export
def dstack(tup):
    arrs = _atleast(3, tuple(tup), callsite())
    return concatenate(arrs if isinstance(arrs, tuple) else (arrs,), axis=2)


@_export
def column_stack(tup):
    site = callsite()
    arrs = [_arr(x, site) for x in tup]
    arrs = [reshape(a, (-1, 1), site=site) if a.ndim < 2 else a for a in arrs]
    return concatenate(arrs, axis=1)


@_export
def roll(a, shift, axis=None):
    """A periodic copy: two (per axis) fused copy kernels into a new buffer."""
    site = callsite()
    x = _arr(a, site)
    if axis is None and x.ndim == 1:
        axis = 0
    if axis is None:
        return reshape(roll(reshape(x, (-1,), site=site), shift, 0), x.shape, site=site)
    shifts = np.atleast_1d(shift).tolist()
    axes = np.atleast_1d(axis).tolist()
    if len(shifts) == 1:
        shifts = shifts * len(axes)
    if len(axes) == 1:
        axes = axes * len(shifts)
    if len(shifts) != len(axes):
        raise record_error(ShapeError, "'shift' and 'axis' should be scalars or 1D sequences",
                           site)
    total = {}
    for s, ax in zip(shifts, axes):
        d = _axis(ax, x.ndim, site, "roll")
        total[d] = total.get(d, 0) + int(s)
    r = x
    for d, s in total.items():
        n = x.shape[d]
        s = s % n if n else 0
        if s == 0:
            continue
        out = _filled(x.shape, x.dtype, None, site)
        pre = (slice(None),) * d
        tail, head = r[pre + (slice(None, n - s),)], r[pre + (slice(n - s, None),)]
        _write(out, pre + (slice(s, None),), tail, site)
        _write(out, pre + (slice(None, s),), head, site)
        # element-wise ops reading ``out`` read these slices instead (frontend/pieces.py)
        _pieces.register(out._port, d, ((0, s, head._port), (s, n, tail._port)))
        r = out
    return r if r is not x else astype(x, x.dtype, site=site)


@_export
def pad(array, pad_width, mode="constant", *, constant_values=0, reflect_type="even",
        end_values=None, stat_length=None):
    """constant (and empty): a fill kernel and one region write; edge, wrap, reflect and
    symmetric (reflect_type 'even'): a gather per axis, the indices from NumPy's own pad of
    an index vector. The statistic and ramp modes are not lazy (NotLazyError)."""
    site = callsite()
    if mode == "empty":
        mode = "constant"           # (NumPy leaves the border uninitialised)
    x = _arr(array, site)
    pw = np.broadcast_to(np.asarray(pad_width, dtype=np.int64), (x.ndim, 2)) \
        if x.ndim else np.zeros((0, 2), np.int64)
    if (pw < 0).any():
        raise record_error(ValueError, "index can't contain negative values", site)
    if mode == "constant":
        cv = np.broadcast_to(np.asarray(constant_values), (x.ndim, 2)) if x.ndim else None
        shape = tuple(int(n + b + e) for n, (b, e) in zip(x.shape, pw))
        if cv is not None and (cv != cv.flat[0]).any():
            r = x
            for d in range(x.ndim):      # per-side constants: one concatenation per axis
                b, e = int(pw[d, 0]), int(pw[d, 1])
                s = list(r.shape)
                parts = []
                if b:
                    s[d] = b
                    parts.append(_filled(s, x.dtype, cv[d, 0], site))
                parts.append(r)
                if e:
                    s[d] = e
                    parts.append(_filled(s, x.dtype, cv[d, 1], site))
                r = concatenate(parts, axis=d) if len(parts) > 1 else r
            return r
        out = _filled(shape, x.dtype, cv.flat[0] if cv is not None else 0, site)
        _write(out, tuple(slice(int(b), int(b) + n) for n, (b, _) in zip(x.shape, pw)), x, site)
        return out
    if mode in ("edge", "wrap", "reflect", "symmetric") and reflect_type == "even":
        r = x
        for d in range(x.ndim):
            b, e = int(pw[d, 0]), int(pw[d, 1])
            if not b and not e:
                continue
            n = x.shape[d]
            if n == 0:
                raise record_error(ValueError, f"can't extend empty axis {d} using modes other "
                                   "than 'constant' or 'empty'", site)
            idx = np.pad(np.arange(n), (b, e), mode=mode)
            r = gather(r, (slice(None),) * d + (idx,), site)
        return r
    detail = f" with mode={mode!r}" + (f", reflect_type={reflect_type!r}"
                                       if reflect_type != "even" else "")
    raise not_lazy("pad", detail, "constant, empty, edge, wrap, reflect and symmetric (with "
                   "reflect_type='even') are", site)


@_export
def repeat(a, repeats, axis=None):
    site = callsite()
    x = _arr(a, site)
    if axis is None:
        x = reshape(x, (-1,), site=site)
        axis = 0
    d = _axis(axis, x.ndim, site, "repeat")
    rep = np.asarray(repeats.numpy() if isinstance(repeats, Array) else repeats)
    if rep.ndim == 0 or rep.size == 1:
        k = int(rep.reshape(()) if rep.ndim == 0 else rep[0])
        if k < 0:
            raise record_error(ValueError, "repeats may not contain negative values", site)
        s = x.shape
        b = reshape(x, s[:d + 1] + (1,) + s[d + 1:], site=site)
        b = broadcast_to(b, s[:d + 1] + (k,) + s[d + 1:], site=site)
        return reshape(b, s[:d] + (s[d] * k,) + s[d + 1:], site=site)
    if rep.shape != (x.shape[d],):
        raise record_error(ShapeError, f"operands could not be broadcast together with shape "
                           f"({x.shape[d]},) ({rep.shape[0]},)", site)
    if (rep < 0).any():
        raise record_error(ValueError, "repeats may not contain negative values", site)
    return gather(x, (slice(None),) * d + (np.repeat(np.arange(x.shape[d]), rep),), site)


@_export
def tile(A, reps):
    site = callsite()
    x = _arr(A, site)
    reps = tuple(int(r) for r in np.atleast_1d(reps))
    nd = builtins.max(x.ndim, len(reps))
    reps = (1,) * (nd - len(reps)) + reps
    s = (1,) * (nd - x.ndim) + x.shape
    inter, full = [], []
    for r, n in zip(reps, s):
        inter += [1, n]
        full += [r, n]
    b = broadcast_to(reshape(x, tuple(inter), site=site), tuple(full), site=site)
    return reshape(b, tuple(r * n for r, n in zip(reps, s)), site=site)


@_export
def diag(v, k=0):
    site = callsite()
    x = _arr(v, site)
    if x.ndim == 2:
        return astype(diagonal(x, k), x.dtype, site=site)
    if x.ndim != 1:
        raise record_error(ShapeError, "Input must be 1- or 2-d.", site)
    n = x.shape[0] + abs(int(k))
    out = _filled((n, n), x.dtype, 0, site)
    if x.shape[0]:
        off = int(k) if k >= 0 else -int(k) * n
        write_region(out, off, (x.shape[0],), (n + 1,), x, site)
    return out


def _tri_mask(a, k, upper, site):
    n, m = a.shape[-2:]
    mask = np.tri(n, m, k - 1 if upper else k, dtype=bool)
    return Array._wrap(const_port(~mask if upper else mask, site))


def _tri(m, k, upper, name):
    site = callsite()
    x = _arr(m, site)
    if x.ndim < 2:
        raise record_error(ShapeError, f"{name}: input array must be at least 2-d", site)
    return record_map("where", _tri_mask(x, int(k), upper, site), x,
                      Array._wrap(const_port(np.zeros((), x.dtype), site)), site=site)


@_export
def tril(m, k=0):
    return _tri(m, k, False, "tril")


@_export
def triu(m, k=0):
    return _tri(m, k, True, "triu")


@_export
def meshgrid(*xi, copy=True, sparse=False, indexing="xy"):
    site = callsite()
    if indexing not in ("xy", "ij"):
        raise record_error(ValueError, "Valid values for `indexing` are 'xy' and 'ij'.", site)
    xs = [reshape(_arr(x, site), (-1,), site=site) for x in xi]
    nd = len(xs)
    out = []
    for i, x in enumerate(xs):
        s = [1] * nd
        s[i] = x.shape[0]
        if indexing == "xy" and nd > 1 and i < 2:
            s[0], s[1] = s[1], s[0]
        out.append(reshape(x, tuple(s), site=site))
    if not sparse:
        shape = tuple(np.broadcast_shapes(*[o.shape for o in out]))
        out = [broadcast_to(o, shape, site=site) for o in out]
    if copy:
        out = [astype(o, o.dtype, site=site) for o in out]
    return out if isinstance(out, list) else list(out)


# ---- gathers, scatters and data-dependent shapes ----------------------------------------------
@_export
def take(a, indices, axis=None, out=None, mode="raise"):
    site = callsite()
    x = _arr(a, site)
    if mode not in ("raise", "wrap", "clip"):
        raise record_error(ArgumentError, f"take: clipmode not understood: {mode!r} (raise, "
                           "wrap or clip)", site)
    idx = indices.numpy() if isinstance(indices, Array) else np.asarray(indices)
    if axis is None:
        x = reshape(x, (-1,), site=site)
        axis = 0
    d = _axis(axis, x.ndim, site, "take")
    idx = np.asarray(idx)
    if mode != "raise" and x.shape[d]:
        idx = idx % x.shape[d] if mode == "wrap" else np.clip(idx, 0, x.shape[d] - 1)
    r = gather(x, (slice(None),) * d + (idx,), site)
    return finish_out("take", r, out, True, "same_kind", site)


@_export
def take_along_axis(arr, indices, axis=-1):
    site = callsite()
    x = _arr(arr, site)
    idx = indices.numpy() if isinstance(indices, Array) else np.asarray(indices)
    if axis is None:
        x = reshape(x, (-1,), site=site)
        axis = 0
        idx = idx.reshape(-1)
    d = _axis(axis, x.ndim, site, "take_along_axis")
    if idx.ndim != x.ndim:
        raise record_error(ShapeError, "`indices` and `arr` must have the same number of "
                           "dimensions", site)
    if idx.dtype.kind not in "iu":
        raise record_error(ArgumentError, "`indices` must be an integer array", site)
    key = []
    for i in range(x.ndim):
        if i == d:
            key.append(idx)
        else:
            s = [1] * x.ndim
            s[i] = x.shape[i]
            key.append(np.arange(x.shape[i]).reshape(s))
    return gather(x, tuple(key), site)


@_export
def put(a, ind, v, mode="raise"):
    """``a.flat[ind] = v`` (in place, like NumPy; ``a`` must be a streamrt array)."""
    site = callsite()
    if not isinstance(a, Array):
        raise record_error(ArgumentError, "put: the target must be a streamrt array", site)
    if mode != "raise":
        raise record_error(ArgumentError, "put: only mode='raise' is supported", site)
    idx = np.asarray(ind.numpy() if isinstance(ind, Array) else ind).reshape(-1)
    vals = v.numpy() if isinstance(v, Array) else np.asarray(v)
    vals = np.resize(vals.reshape(-1), idx.shape) if idx.size else vals.reshape(-1)[:0]
    scatter(a, (idx,), vals, site, flat=True)


def _host(a, site):
    return a.numpy() if isinstance(a, Array) else np.asarray(a)


@_export
def nonzero(a):
    """Evaluates ``a`` (the result's length depends on its values)."""
    site = callsite()
    h = _host(a, site)
    if h.ndim == 0:
        raise record_error(ValueError, "Calling nonzero on 0d arrays is not allowed. Use "
                           "np.atleast_1d(scalar).nonzero() instead.", site)
    return tuple(Array._wrap(const_port(i.astype(np.int64), site)) for i in np.nonzero(h))


@_export
def flatnonzero(a):
    site = callsite()
    return Array._wrap(const_port(np.flatnonzero(_host(a, site)).astype(np.int64), site))


@_export
def argwhere(a):
    site = callsite()
    return Array._wrap(const_port(np.argwhere(_host(a, site)).astype(np.int64), site))


@_export
def count_nonzero(a, axis=None, keepdims=False):
    site = callsite()
    x = _arr(a, site)
    nz = record_map("not_equal", x, 0, site=site) if x.dtype != D.bool_ else x
    return record_reduce("sum", astype(nz, D.int64, site=site), axis, keepdims, site=site)


@_export
def unique(ar, return_index=False, return_inverse=False, return_counts=False, axis=None,
           *, equal_nan=True, sorted=True):
    """Evaluates ``ar`` (the result's length depends on its values); NumPy's unique."""
    site = callsite()
    r = np.unique(_host(ar, site), return_index=return_index, return_inverse=return_inverse,
                  return_counts=return_counts, axis=axis, equal_nan=equal_nan, sorted=sorted)
    wrap = lambda v: Array._wrap(const_port(v if v.dtype.kind not in "iu" or v.dtype == ar_dt(v)
                                            else v.astype(np.int64), site))
    return tuple(wrap(v) for v in r) if isinstance(r, tuple) else wrap(r)


def ar_dt(v):
    return v.dtype if v.dtype in D.SUPPORTED_SET else np.dtype(np.int64)


for _n in __all__:
    if hasattr(np, _n):
        HANDLED_FUNCTIONS[_n] = globals()[_n]
twin_namespace(globals(), __all__, np)      # the NumPy tier (array.py)


# ---- NumPy's ndarray methods for the functions above ---------------------------------------------
def _fill(self, value):
    """``a.fill(value)``: every element (and every alias) becomes ``value``."""
    self[...] = value


Array.take = lambda self, indices, axis=None, out=None, mode="raise": take(self, indices, axis,
                                                                          out, mode)
Array.put = lambda self, ind, v, mode="raise": put(self, ind, v, mode)
Array.nonzero = lambda self: nonzero(self)
Array.repeat = lambda self, repeats, axis=None: repeat(self, repeats, axis)
Array.squeeze = lambda self, axis=None: squeeze(self, axis)
Array.swapaxes = lambda self, axis1, axis2: swapaxes(self, axis1, axis2)
Array.diagonal = lambda self, offset=0, axis1=0, axis2=1: diagonal(self, offset, axis1, axis2)
Array.fill = _fill
