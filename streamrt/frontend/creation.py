"""Creation functions: host data and constants become const ports (copied once, on record)."""
from __future__ import annotations

import numpy as np

from ..core import dtypes as D
from ..core.config import settings
from ..core.errors import ArgumentError, DTypeError, callsite, record_error
from ..runtime import tiers as _tiers
from .array import HANDLED_FUNCTIONS, Array, canonical_dtype, const_port, eager_array, operand


def _dt(dtype, default=None):
    return None if dtype is None else dtype


def _order_device_like(name, order, device, like, site):
    """Keywords that change where or how an array is laid out, never its values: streamrt
    arrays are C-ordered and placed by the runtime, so any order is accepted (the values are
    NumPy's), a device other than the CPU and ``like=`` are refused."""
    if order not in (None, "K", "A", "C", "F"):
        raise record_error(ArgumentError, f"{name}: order must be one of 'C', 'F', 'A', or "
                           f"'K' (got {order!r})", site)
    if device not in (None, "cpu"):
        raise record_error(ArgumentError, f"{name}: unknown device {device!r} (streamrt places "
                           "arrays itself; use None or 'cpu')", site)
    if like is not None:
        raise record_error(ArgumentError, f"{name}: like= is not supported by streamrt", site)


def asarray(a, dtype=None, order=None, *, device=None, copy=None, like=None):
    """A streamrt array from an array-like (copied; later changes to ``a`` do not leak in).
    (``ps.asarray`` also takes ``chunks=``: a Dask-partitioned array, ``ps.distributed``.)"""
    site = callsite()
    _order_device_like("asarray", order, device, like, site)
    if isinstance(a, Array):
        if dtype is None or canonical_dtype(dtype, site) == a.dtype:
            return a if not copy else a.copy()
        if copy is False:
            raise record_error(ValueError, "asarray: a dtype change needs a copy and copy=False "
                               "was given", site)
        return a.astype(dtype)
    if copy is False:
        raise record_error(ValueError, "asarray: copy=False, but a streamrt array never shares "
                           "memory with host data (the recorded program must not change when "
                           "the source does): a copy is needed", site)
    if dtype is not None:       # converted straight to ``dtype``, as NumPy's (exact for ints
        return Array._wrap(const_port(a, site, dtype))       # past 2**53 in a list)
    arr = _host_array(a, site)
    if arr.dtype.kind in "OUSVMm":
        raise record_error(DTypeError, f"dtype {arr.dtype} is not supported by streamrt", site)
    return Array._wrap(const_port(arr, site))


def array(object, dtype=None, *, copy=True, order="K", subok=False, ndmin=0, like=None):
    site = callsite()
    _order_device_like("array", order, None, like, site)
    if isinstance(object, Array):
        r = object.copy() if dtype is None else object.astype(dtype)
    elif dtype is not None:
        r = Array._wrap(const_port(object, site, dtype))
    else:
        arr = _host_array(object, site)
        if arr.dtype.kind in "OUSVMm":
            raise record_error(DTypeError, f"dtype {arr.dtype} is not supported by streamrt",
                               site)
        r = Array._wrap(const_port(arr, site))
    if ndmin > r.ndim:
        r = r.reshape((1,) * (ndmin - r.ndim) + r.shape)
    return r


def _host_array(a, site):
    """``np.asarray(a)``, its errors (a ragged list) raised at the user's line."""
    try:
        return np.asarray(a)
    except (ValueError, TypeError, MemoryError) as e:
        builtin = next(c for c in type(e).__mro__ if c.__module__ == "builtins")
        raise record_error(builtin, str(e), site) from None


def _numpy(site, fn, *args, **kw):
    """A creation function computed by NumPy itself (eagerly: a constant port), its errors
    (a negative dimension, a zero step, too much memory) raised at the user's line."""
    try:
        a = fn(*args, **kw)
    except (MemoryError, ValueError, TypeError, ArithmeticError) as e:
        builtin = next(c for c in type(e).__mro__ if c.__module__ == "builtins")
        raise record_error(builtin, f"{fn.__name__}: {e}", site) from None
    if a.dtype.kind in "OUSVMm":
        raise record_error(DTypeError, f"dtype {a.dtype} is not supported by streamrt", site)
    return _new_array(a, site)


def _new_array(a, site=None):
    """An Array over ``a``, a fresh ndarray NumPy made: on the NumPy tier when it is small
    (its buffer as it is: no port, no copy), else a constant port (a copy) recorded at
    ``site`` (found here when not given)."""
    if a.size < settings.eager_elements and type(a) is np.ndarray and a.base is None and \
            a.flags.c_contiguous and _tiers.eager_now():
        _tiers.note_eager()
        return eager_array(a)
    return Array._wrap(const_port(a, site if site is not None else callsite()))


_NUMBERS = (int, float)


def _dtype(dtype, site):
    return canonical_dtype(dtype, site) if dtype is not None else None


def _plain_dtype(dtype):
    """``dtype`` streamrt computes in, or None (None given, or one the general path refuses
    at the user's line)."""
    if dtype is None:
        return None
    try:
        return D.canonical(dtype)
    except (TypeError, ValueError):
        return None


def _small(shape):
    """Whether ``shape`` (an int or a tuple of ints) is a valid shape whose arrays the NumPy
    tier holds now: creation functions then skip the general path's checks."""
    if type(shape) is int:
        n = shape
    elif type(shape) is tuple and all(type(k) is int and k >= 0 for k in shape):
        n = 1
        for k in shape:
            n *= k
    else:
        return False
    return 0 <= n < settings.eager_elements and _tiers.eager_now()


def _fresh(a):
    """An Array over ``a``, a small array NumPy just made (``_small`` said so)."""
    _tiers.note_eager()
    return eager_array(a)


# The creation functions find the user's line only for an error or a large array (a
# constant port records it): callsite() costs ~0.25 us, NumPy's zeros(1000) ~0.2 us.
def _filled_like_numpy(name, fn, shape, dtype, order, device, like):
    """``fn(shape, dtype)`` (np.zeros, np.ones) as zeros/ones/empty make it: a small plain
    shape of a dtype seen before at once, anything else through the general path."""
    if order == "C" and device is None and like is None and _small(shape):
        dt = _plain_dtype(dtype)
        if dt is not None:
            return _fresh(fn(shape, dt))
    _order_device_like(name, order, device, like, None)
    return _numpy(None, fn, shape, dtype=_dtype(dtype, None))


def zeros(shape, dtype=float, order="C", *, device=None, like=None):
    return _filled_like_numpy("zeros", np.zeros, shape, dtype, order, device, like)


def ones(shape, dtype=float, order="C", *, device=None, like=None):
    return _filled_like_numpy("ones", np.ones, shape, dtype, order, device, like)


def empty(shape, dtype=float, order="C", *, device=None, like=None):
    """Zero-filled (NumPy leaves the contents undefined)."""
    return _filled_like_numpy("empty", np.zeros, shape, dtype, order, device, like)


def full(shape, fill_value, dtype=None, order="C", *, device=None, like=None):
    if order == "C" and device is None and like is None and type(fill_value) in _NUMBERS \
            and _small(shape):
        dt = _plain_dtype(dtype)
        if dt is not None or dtype is None:
            try:
                a = np.full(shape, fill_value, dt)
            except (OverflowError, ValueError, TypeError):
                a = None                # (the general path raises it at the user's line)
            if a is not None and a.dtype in D.SUPPORTED_SET:     # (2**70: an object array)
                return _fresh(a)
    site = None
    _order_device_like("full", order, device, like, site)
    if isinstance(fill_value, Array):
        fill_value = fill_value.numpy()
    return _numpy(site, np.full, shape, fill_value, dtype=_dtype(dtype, site))


def _like(a, dtype, shape):
    return (tuple(shape) if shape is not None else np.shape(a) if not isinstance(a, Array)
            else a.shape, dtype if dtype is not None else (a.dtype if isinstance(a, Array)
                                                           else np.asarray(a).dtype))


def zeros_like(a, dtype=None, order="K", subok=True, shape=None, *, device=None):
    site = None         # found only for an error or a large array (callsite: ~0.25 us)
    _order_device_like("zeros_like", order, device, None, site)
    s, d = _like(a, dtype, shape)
    return _numpy(site, np.zeros, s, dtype=_dtype(d, site))


def ones_like(a, dtype=None, order="K", subok=True, shape=None, *, device=None):
    site = None         # found only for an error or a large array (callsite: ~0.25 us)
    _order_device_like("ones_like", order, device, None, site)
    s, d = _like(a, dtype, shape)
    return _numpy(site, np.ones, s, dtype=_dtype(d, site))


def empty_like(a, dtype=None, order="K", subok=True, shape=None, *, device=None):
    site = None         # found only for an error or a large array (callsite: ~0.25 us)
    _order_device_like("empty_like", order, device, None, site)
    s, d = _like(a, dtype, shape)
    return _numpy(site, np.zeros, s, dtype=_dtype(d, site))


def full_like(a, fill_value, dtype=None, order="K", subok=True, shape=None, *, device=None):
    site = None         # found only for an error or a large array (callsite: ~0.25 us)
    _order_device_like("full_like", order, device, None, site)
    s, d = _like(a, dtype, shape)
    if isinstance(fill_value, Array):
        fill_value = fill_value.numpy()
    return _numpy(site, np.full, s, fill_value, dtype=_dtype(d, site))


def arange(start_or_stop, /, stop=None, step=None, *, dtype=None, device=None, like=None):
    if dtype is None and device is None and like is None and type(start_or_stop) in _NUMBERS \
            and (stop is None or type(stop) in _NUMBERS) and \
            (step is None or stop is not None and type(step) in _NUMBERS):
        # the common case in a loop (``np.arange(lo, hi + 1)``), without finding the call
        # site first: it is needed only for an error, which the general path below raises
        try:
            a = np.arange(*[v for v in (start_or_stop, stop, step) if v is not None])
        except (ValueError, ArithmeticError, MemoryError):
            a = None
        if a is not None and a.dtype.kind in "if":
            return _new_array(a)
    site = callsite()
    _order_device_like("arange", None, device, like, site)
    args = [v.numpy().item() if isinstance(v, Array) else v
            for v in (start_or_stop, stop, step) if v is not None]
    if step is not None and stop is None:
        args = [0, start_or_stop, step]
    return _numpy(site, np.arange, *args, dtype=_dtype(dtype, site))


def linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0, *,
             device=None):
    site = callsite()
    _order_device_like("linspace", None, device, None, site)
    if retstep:
        try:
            step = np.linspace(start, stop, num, endpoint, retstep=True)[1]
        except (ValueError, TypeError, ArithmeticError) as e:
            raise record_error(type(e), f"linspace: {e}", site) from None
        return _numpy(site, np.linspace, start, stop, num, endpoint, dtype=_dtype(dtype, site),
                      axis=axis), step
    return _numpy(site, np.linspace, start, stop, num, endpoint, dtype=_dtype(dtype, site),
                  axis=axis)


def eye(N, M=None, k=0, dtype=float, order="C", *, device=None, like=None):
    site = callsite()
    _order_device_like("eye", order, device, like, site)
    return _numpy(site, np.eye, N, M, k, dtype=_dtype(dtype, site))


__all__ = ["asarray", "array", "zeros", "ones", "empty", "full", "zeros_like", "ones_like",
           "empty_like", "full_like", "arange", "linspace", "eye"]
for _n in __all__:
    if _n.endswith("_like"):
        HANDLED_FUNCTIONS[_n] = globals()[_n]
del operand
