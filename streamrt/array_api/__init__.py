"""The Array API standard namespace (2023.12) over streamrt's lazy arrays.

``import streamrt.array_api as xp`` or ``x.__array_namespace__()``. Functions map onto
streamrt's own (lazy and fused); the differences from streamrt's NumPy-style namespace are the
standard's signatures (``concat``, ``permute_dims``, ``squeeze(x, axis)``,
``std(correction=)``, keyword ``device=``) and its rules (``astype`` never changes the
device, ``unique_*`` return named tuples). Dtypes: bool, int8, int16, int32, int64, uint8,
uint16, uint32, uint64, float32, float64, complex64, complex128. The extensions ``xp.linalg``
and ``xp.fft`` (array_api/linalg.py, array_api/fft.py) are ``ps.linalg`` and ``ps.fft`` under
the standard's signatures. DLPack both ways (``from_dlpack``; ``Array.__dlpack__``). Functions
whose result shape depends on the data (``nonzero``, ``unique_*``, ``searchsorted``) and the
host intrinsics (``sort``/``argsort`` descending, ``cumulative_sum``/``cumulative_prod``,
``searchsorted``) evaluate their input and compute through NumPy."""
from __future__ import annotations

import builtins
import math as _math
from typing import NamedTuple

import numpy as np

from ..core import dtypes as D
from ..core.errors import ArgumentError, DTypeError, callsite, record_error
from ..frontend import creation as _c, linalg as _l, math as _m, shape as _s
from ..frontend.array import Array, astype as _astype, record_map, record_reduce
from ..frontend.numeric import round as _c_round
from . import fft, linalg  # noqa: F401  (the extensions: xp.fft, xp.linalg)

__array_api_version__ = "2023.12"

bool = D.bool_  # noqa: A001
int8, int16, int32, int64 = D.int8, D.int16, D.int32, D.int64
uint8, uint16, uint32, uint64 = D.uint8, D.uint16, D.uint32, D.uint64
float32, float64 = D.float32, D.float64
complex64, complex128 = D.complex64, D.complex128
e, inf, nan, pi = _math.e, _math.inf, _math.nan, _math.pi
newaxis = None

_DTYPES = {"bool": bool, "int8": int8, "int16": int16, "int32": int32, "int64": int64,
           "uint8": uint8, "uint16": uint16, "uint32": uint32, "uint64": uint64,
           "float32": float32, "float64": float64, "complex64": complex64,
           "complex128": complex128}


def _dev(device, site=None):
    if device not in (None, "cpu"):
        raise record_error(ArgumentError, f"unsupported device {device!r} (streamrt arrays "
                           "live on the executor chosen by STREAMRT_BACKEND; use None)", site)


def _dt(dtype, site=None):
    if dtype is None:
        return None
    try:
        d = np.dtype(dtype)
    except TypeError as err:
        raise record_error(DTypeError, str(err), site or callsite()) from None
    if d not in D.SUPPORTED_SET:          # no silent widening in the standard's namespace
        raise record_error(DTypeError, f"dtype {d} is not in streamrt's Array API namespace "
                           f"({', '.join(_DTYPES)})", site or callsite())
    return d


# ---- element-wise functions (the names the standard uses) ---------------------------------------
_ELEMENTWISE = ["abs", "acos", "acosh", "add", "asin", "asinh", "atan", "atan2", "atanh",
                "bitwise_and", "copysign", "bitwise_invert", "bitwise_left_shift", "bitwise_or",
                "bitwise_right_shift", "bitwise_xor", "ceil", "cos", "cosh", "divide", "equal",
                "exp", "expm1", "floor", "floor_divide", "greater", "greater_equal", "hypot",
                "isfinite", "isinf", "isnan", "less", "less_equal", "log", "log10", "log1p",
                "log2", "logical_and", "logical_not", "logical_or", "logical_xor", "maximum",
                "minimum", "multiply", "negative", "not_equal", "positive", "pow", "reciprocal",
                "remainder", "sign", "signbit", "sin", "sinh", "sqrt", "square", "subtract", "tan", "tanh",
                "trunc"]
_g = globals()
for _n in _ELEMENTWISE:
    _g[_n] = getattr(_m, _n)


def round(x, /):  # noqa: A001
    """Round half to even (floats; complex: each part); integers and booleans are returned
    as they are."""
    site = callsite()
    if D.is_float(x.dtype):
        return record_map("rint", x, site=site)
    if x.dtype.kind == "c":
        return _c_round(x)
    return _astype(x, x.dtype, site=site)


def clip(x, /, min=None, max=None):  # noqa: A002
    site = callsite()
    r = x
    if min is not None:
        r = record_map("maximum", r, min, site=site)
    if max is not None:
        r = record_map("minimum", r, max, site=site)
    if r is x:
        return _astype(x, x.dtype, site=site)
    return _astype(r, x.dtype, site=site) if r.dtype != x.dtype else r


def logaddexp(x1, x2, /):
    """log(exp(x1) + exp(x2)) without overflow: max + log1p(exp(-|x1 - x2|))."""
    site = callsite()
    k = [a.dtype if isinstance(a, Array) else D.scalar_kind(a) for a in (x1, x2)]
    dt = D.canonical(D.ufunc_result("logaddexp", k))      # computed in the result dtype:
    x1, x2 = (_astype(a, dt, site=site) if isinstance(a, Array) and a.dtype != dt else a
              for a in (x1, x2))                          # no integer overflow in x1 - x2
    m = record_map("maximum", x1, x2, site=site)
    d = record_map("absolute", record_map("subtract", x1, x2, site=site), site=site)
    r = record_map("add", m, record_map("log1p", record_map("exp", record_map(
        "negative", d, site=site), site=site), site=site), site=site)
    same = record_map("equal", x1, x2, site=site)          # equal infinities: no inf - inf
    return record_map("where", same, record_map("add", m, _math.log(2.0), site=site), r,
                      site=site)


real, conj, imag = _m.real, _m.conj, _m.imag


# ---- creation ------------------------------------------------------------------------------------
def asarray(obj, /, *, dtype=None, device=None, copy=None):
    site = callsite()
    _dev(device, site)
    if isinstance(obj, Array):
        if dtype is not None and _dt(dtype, site) != obj.dtype:
            if copy is False:
                raise record_error(ValueError, "asarray: copy=False but a dtype conversion "
                                   "is needed", site)
            return _astype(obj, _dt(dtype, site), site=site)
        return _astype(obj, obj.dtype, site=site) if copy else obj
    if copy is False:
        raise record_error(ValueError, "asarray: copy=False cannot share host memory (streamrt "
                           "copies host data once, on record)", site)
    if dtype is None and type(obj) in (builtins.bool, int, float, complex):
        dtype = {builtins.bool: bool, int: int64, float: float64,
                 complex: complex128}[type(obj)]
    return _c.asarray(obj, dtype=_dt(dtype, site))


def zeros(shape, *, dtype=None, device=None):
    _dev(device)
    return _c.zeros(shape, dtype=_dt(dtype) or float64)


def ones(shape, *, dtype=None, device=None):
    _dev(device)
    return _c.ones(shape, dtype=_dt(dtype) or float64)


def empty(shape, *, dtype=None, device=None):
    _dev(device)
    return _c.empty(shape, dtype=_dt(dtype) or float64)


def full(shape, fill_value, *, dtype=None, device=None):
    _dev(device)
    if dtype is None:
        dtype = bool if isinstance(fill_value, builtins.bool) else (
            int64 if isinstance(fill_value, int) else float64 if isinstance(fill_value, float)
            else None)
    return _c.full(shape, fill_value, dtype=_dt(dtype))


def zeros_like(x, /, *, dtype=None, device=None):
    _dev(device)
    return _c.zeros_like(x, dtype=_dt(dtype))


def ones_like(x, /, *, dtype=None, device=None):
    _dev(device)
    return _c.ones_like(x, dtype=_dt(dtype))


def empty_like(x, /, *, dtype=None, device=None):
    _dev(device)
    return _c.empty_like(x, dtype=_dt(dtype))


def full_like(x, /, fill_value, *, dtype=None, device=None):
    _dev(device)
    return _c.full_like(x, fill_value, dtype=_dt(dtype) or x.dtype)


def arange(start, /, stop=None, step=1, *, dtype=None, device=None):
    _dev(device)
    return _c.arange(start, stop, step, dtype=_dt(dtype))


def linspace(start, stop, /, num, *, dtype=None, device=None, endpoint=True):
    _dev(device)
    default = complex128 if isinstance(start, complex) or isinstance(stop, complex) else float64
    return _c.linspace(start, stop, num, endpoint=endpoint, dtype=_dt(dtype) or default)


def eye(n_rows, n_cols=None, /, *, k=0, dtype=None, device=None):
    _dev(device)
    return _c.eye(n_rows, n_cols, k, dtype=_dt(dtype) or float64)


def meshgrid(*arrays, indexing="xy"):
    return _s.meshgrid(*arrays, indexing=indexing)


def tril(x, /, *, k=0):
    return _s.tril(x, k)


def triu(x, /, *, k=0):
    return _s.triu(x, k)


# ---- data types ------------------------------------------------------------------------------------
def astype(x, dtype, /, *, copy=True, device=None):
    site = callsite()
    _dev(device, site)
    dt = _dt(dtype, site)
    if not copy and dt == x.dtype:
        return x
    return _astype(x, dt, site=site)


def can_cast(from_, to, /):
    """The standard's rule: ``to`` is the type promotion of ``from_`` and ``to`` -- within
    bool, within the integers, within the real and complex floating types; never narrowing,
    never across kinds (int64 -> float64 is not a promotion)."""
    f = from_.dtype if isinstance(from_, Array) else np.dtype(from_)
    t = np.dtype(to)
    if f == t:
        return True
    groups = ("b", "iu", "fc")
    if not builtins.any(f.kind in g and t.kind in g for g in groups):
        return False
    return np.result_type(f, t) == t


class finfo_object(NamedTuple):
    bits: int
    eps: float
    max: float
    min: float
    smallest_normal: float
    dtype: np.dtype


class iinfo_object(NamedTuple):
    bits: int
    max: int
    min: int
    dtype: np.dtype


def finfo(type, /):  # noqa: A002
    """The standard's fields as Python numbers (NumPy's are NumPy scalars); for a complex
    dtype, those of its real component dtype."""
    f = np.finfo(type.dtype if isinstance(type, Array) else type)
    return finfo_object(int(f.bits), float(f.eps), float(f.max), float(f.min),
                        float(f.smallest_normal), f.dtype)


def iinfo(type, /):  # noqa: A002
    i = np.iinfo(type.dtype if isinstance(type, Array) else type)
    return iinfo_object(int(i.bits), int(i.max), int(i.min), i.dtype)


_KINDS = {"bool": "b", "signed integer": "i", "unsigned integer": "u", "integral": "iu",
          "real floating": "f", "complex floating": "c", "numeric": "iufc"}


def isdtype(dtype, kind):
    dtype = np.dtype(dtype)
    if isinstance(kind, tuple):
        return builtins.any(isdtype(dtype, k) for k in kind)
    if isinstance(kind, str):
        if kind not in _KINDS:
            raise ValueError(f"unknown dtype kind {kind!r}")
        return dtype.kind in _KINDS[kind]
    return dtype == np.dtype(kind)


def result_type(*arrays_and_dtypes):
    args = [a.dtype if isinstance(a, Array) else a for a in arrays_and_dtypes]
    return D.canonical(np.result_type(*args))


# ---- manipulation ------------------------------------------------------------------------------------
broadcast_to = _m.broadcast_to
flip = _s.flip
moveaxis = _s.moveaxis
permute_dims = _m.permute_dims
roll = _s.roll
stack = _s.stack


def broadcast_arrays(*arrays):
    """A list (the standard's type; ``ps.broadcast_arrays`` returns a tuple, as NumPy)."""
    return list(_s.broadcast_arrays(*arrays))


def broadcast_shapes(*shapes):
    return tuple(np.broadcast_shapes(*shapes))


def concat(arrays, /, *, axis=0):
    return _s.concatenate(arrays, axis=axis)


def expand_dims(x, /, axis=0):
    return _s.expand_dims(x, axis)


def reshape(x, /, shape, *, copy=None):
    site = callsite()
    r = _m.reshape(x, tuple(shape))
    if copy:
        return _astype(r, r.dtype, site=site)
    return r


def squeeze(x, /, axis):
    return _s.squeeze(x, axis)


def repeat(x, repeats, /, *, axis=None):
    return _s.repeat(x, repeats, axis)


def tile(x, repetitions, /):
    return _s.tile(x, repetitions)


def unstack(x, /, *, axis=0):
    site = callsite()
    ax = _m.normalize_axes(axis, x.ndim, site, "unstack")[0]
    return tuple(x[(slice(None),) * ax + (i,)] for i in range(x.shape[ax]))


matrix_transpose = _l.matrix_transpose


# ---- statistics and utilities -----------------------------------------------------------------------
def _reducer(name):
    def f(x, /, *, axis=None, keepdims=False, dtype=None):
        site = callsite()
        if name in ("sum", "prod") and dtype is None and x.dtype == D.int32:
            dtype = int64                          # the standard: the default integer dtype
        return record_reduce(name, x, axis, keepdims, _dt(dtype, site), site=site)
    f.__name__ = name
    return f


sum = _reducer("sum")  # noqa: A001
prod = _reducer("prod")
mean = _reducer("mean")


def max(x, /, *, axis=None, keepdims=False):  # noqa: A001
    return record_reduce("max", x, axis, keepdims, site=callsite())


def min(x, /, *, axis=None, keepdims=False):  # noqa: A001
    return record_reduce("min", x, axis, keepdims, site=callsite())


def all(x, /, *, axis=None, keepdims=False):  # noqa: A001
    return record_reduce("all", x, axis, keepdims, site=callsite())


def any(x, /, *, axis=None, keepdims=False):  # noqa: A001
    return record_reduce("any", x, axis, keepdims, site=callsite())


def var(x, /, *, axis=None, correction=0.0, keepdims=False):
    return _m.var(x, axis=axis, ddof=correction, keepdims=keepdims)


def std(x, /, *, axis=None, correction=0.0, keepdims=False):
    return _m.std(x, axis=axis, ddof=correction, keepdims=keepdims)


def argmax(x, /, *, axis=None, keepdims=False):
    return record_reduce("argmax", x, axis, keepdims, site=callsite())


def argmin(x, /, *, axis=None, keepdims=False):
    return record_reduce("argmin", x, axis, keepdims, site=callsite())


def count_nonzero(x, /, *, axis=None, keepdims=False):
    return _s.count_nonzero(x, axis=axis, keepdims=keepdims)


def diff(x, /, *, axis=-1, n=1, prepend=None, append=None):
    site = callsite()
    parts = [p for p in (prepend, x, append) if p is not None]
    if len(parts) > 1:
        x = _s.concatenate(parts, axis=axis)
    ax = _m.normalize_axes(axis, x.ndim, site, "diff")[0]
    pre = (slice(None),) * ax
    for _ in range(n):
        if x.dtype == D.bool_:
            x = record_map("not_equal", x[pre + (slice(1, None),)], x[pre + (slice(None, -1),)],
                           site=site)
        else:
            x = record_map("subtract", x[pre + (slice(1, None),)], x[pre + (slice(None, -1),)],
                           site=site)
    return x


def where(condition, x1, x2, /):
    return record_map("where", condition, x1, x2, site=callsite())


def nonzero(x, /):
    return _s.nonzero(x)


def take(x, indices, /, *, axis=None):
    return _s.take(x, indices, axis=axis)


def take_along_axis(x, indices, /, *, axis=-1):
    return _s.take_along_axis(x, indices, axis)


def isin(x1, x2, /, *, invert=False):
    """A broadcast comparison against every element of ``x2`` (lazy, fused with an any)."""
    site = callsite()
    e = record_map("equal", _s.expand_dims(x1, -1), _m.reshape(x2, (-1,)), site=site)
    r = record_reduce("any", e, -1, site=site)
    return record_map("logical_not", r, site=site) if invert else r


vecdot = _l.vecdot


def matmul(x1, x2, /):
    return _m.matmul(x1, x2)


# ---- sort, scans, tensordot ------------------------------------------------------------------
def sort(x, /, *, axis=-1, descending=False, stable=True):
    if not descending:
        return _l.sort(x, axis=axis)
    h = np.sort(x.numpy(), axis=axis, kind="stable")
    return _c.asarray(np.flip(h, axis) if descending else h)


def argsort(x, /, *, axis=-1, descending=False, stable=True):
    if not descending:
        return _l.argsort(x, axis=axis, stable=stable)
    h = x.numpy()                  # descending and stable: ascending over the flipped array,
    n = h.shape[axis]              # flipped back (no negation: unsigned, minimum integers)
    r = n - 1 - np.flip(np.argsort(np.flip(h, axis), axis=axis, kind="stable"), axis)
    return _c.asarray(r.astype(np.int64))


def _scan_dtype(d):
    """The standard's default accumulation dtype: bool and signed integers the default
    integer dtype, unsigned ones the unsigned integer of its width (uint64)."""
    return np.int64 if d.kind in "bi" else np.uint64 if d.kind == "u" else d


def _prepend(r, value, axis):
    """``r`` with one slice of ``value`` before it along ``axis`` (also on an empty axis)."""
    shape = list(r.shape)
    shape[axis] = 1
    return np.concatenate([np.full(shape, value, r.dtype), r], axis=axis)


def cumulative_sum(x, /, *, axis=None, dtype=None, include_initial=False):
    site = callsite()
    h = x.numpy()
    if axis is None:
        if h.ndim > 1:
            raise record_error(ValueError, "cumulative_sum: axis is required for more than one "
                               "dimension", site)
        axis = 0
    r = np.cumsum(h, axis=axis, dtype=_dt(dtype, site) or _scan_dtype(h.dtype))
    if include_initial:
        r = _prepend(r, 0, axis)
    return _c.asarray(r)


def cumulative_prod(x, /, *, axis=None, dtype=None, include_initial=False):
    site = callsite()
    h = x.numpy()
    axis = 0 if axis is None else axis
    r = np.cumprod(h, axis=axis, dtype=_dt(dtype, site) or _scan_dtype(h.dtype))
    if include_initial:
        r = _prepend(r, 1, axis)
    return _c.asarray(r)


def searchsorted(x1, x2, /, *, side="left", sorter=None):
    h = x1.numpy()
    s = sorter.numpy() if isinstance(sorter, Array) else sorter
    v = x2.numpy() if isinstance(x2, Array) else x2
    return _c.asarray(np.searchsorted(h, v, side=side, sorter=s).astype(np.int64))


def tensordot(x1, x2, /, *, axes=2):
    return _l.tensordot(x1, x2, axes=axes)


# ---- sets (data-dependent shapes: the input is evaluated) --------------------------------------
class UniqueAllResult(NamedTuple):
    values: Array
    indices: Array
    inverse_indices: Array
    counts: Array


class UniqueCountsResult(NamedTuple):
    values: Array
    counts: Array


class UniqueInverseResult(NamedTuple):
    values: Array
    inverse_indices: Array


def _unique(x, **kw):
    h = x.numpy()
    r = np.unique(h.reshape(-1), equal_nan=False, **kw)
    r = r if isinstance(r, tuple) else (r,)
    out = [_c.asarray(r[0])] + [_c.asarray(v.astype(np.int64)) for v in r[1:]]
    return out


def unique_values(x, /):
    return _unique(x)[0]


def unique_counts(x, /):
    return UniqueCountsResult(*_unique(x, return_counts=True))


def unique_inverse(x, /):
    v, inv = _unique(x, return_inverse=True)
    return UniqueInverseResult(v, _m.reshape(inv, x.shape))


def unique_all(x, /):
    v, i, inv, c = _unique(x, return_index=True, return_inverse=True, return_counts=True)
    return UniqueAllResult(v, i, _m.reshape(inv, x.shape), c)


# ---- DLPack ------------------------------------------------------------------------------------
def from_dlpack(x, /, *, device=None, copy=None):
    """An Array from any DLPack producer (NumPy, PyTorch, JAX, CuPy's host arrays ...). A
    streamrt Array is returned as it is (``copy=True``: a recorded copy). Foreign memory is
    copied once, on record (as ``asarray``): a later write by the producer must not change
    recorded work that has not run yet, so ``copy=False`` raises BufferError."""
    site = callsite()
    _dev(device, site)
    if isinstance(x, Array):
        return _astype(x, x.dtype, site=site) if copy else x
    if copy is False:
        raise record_error(BufferError, "from_dlpack: copy=False, but a streamrt array never "
                           "shares memory with a producer's buffer (recorded work must not "
                           "change when the producer writes to it)", site)
    h = np.from_dlpack(x)
    _dt(h.dtype, site)
    return _c.asarray(h)


# ---- inspection ----------------------------------------------------------------------------------
class _Info:
    def capabilities(self):
        return {"boolean indexing": True, "data-dependent shapes": True,
                "max dimensions": 64}

    def default_device(self):
        return "cpu"

    def devices(self):
        return ["cpu"]

    def default_dtypes(self, *, device=None):
        return {"real floating": float64, "complex floating": complex128, "integral": int64,
                "indexing": int64}

    def dtypes(self, *, device=None, kind=None):
        return {n: d for n, d in _DTYPES.items() if kind is None or isdtype(d, kind)}


def __array_namespace_info__():
    return _Info()


# ---- the Array side: x.device, x.to_device() (installed by streamrt/__init__.py) -----------
del _n
