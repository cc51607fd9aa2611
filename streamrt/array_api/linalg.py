"""``xp.linalg``: the Array API linalg extension (2023.12) over ``ps.linalg``: the standard's
signatures (positional-only arrays, keyword-only options), its named-tuple results, and
``cross``/``diagonal``/``trace`` over the last axes. Lazy where ``ps.linalg`` is (products,
norms, ``cross``, ``diagonal``, ``trace``: recorded and fused; the factorisations: intrinsics);
``pinv`` and ``matrix_rank`` with an *array* ``rtol`` compute on the host through NumPy."""
from __future__ import annotations

import numpy as np

from .. import linalg as _L
from ..core.errors import ShapeError, StreamrtAxisError, callsite, record_error
from ..frontend import creation as _c, math as _m, shape as _s
from ..frontend.array import record_map, record_reduce

__all__ = ["cholesky", "cross", "det", "diagonal", "eigh", "eigvalsh", "inv", "matmul",
           "matrix_norm", "matrix_power", "matrix_rank", "matrix_transpose", "outer", "pinv",
           "qr", "slogdet", "solve", "svd", "svdvals", "tensordot", "trace", "vecdot",
           "vector_norm"]

EighResult, QRResult = _L.EighResult, _L.QRResult
SlogdetResult, SVDResult = _L.SlogdetResult, _L.SVDResult


def cholesky(x, /, *, upper=False):
    return _L.cholesky(x, upper=upper)


def cross(x1, x2, /, *, axis=-1):
    """The cross product of 3-element vectors along ``axis`` (after broadcasting): three fused
    multiply-subtracts and a stack, all recorded."""
    site = callsite()
    a, b = _s.broadcast_arrays(x1, x2)
    nd = a.ndim
    if not -nd <= axis < nd:
        raise record_error(StreamrtAxisError, f"cross: axis {axis} is out of bounds for "
                           f"array of dimension {nd}", site)
    ax = axis % nd
    if a.shape[ax] != 3:
        raise record_error(ShapeError, f"cross: the vectors along axis {axis} must have 3 "
                           f"elements (shapes {x1.shape}, {x2.shape})", site)
    pre = (slice(None),) * ax
    (a0, a1, a2), (b0, b1, b2) = ([v[pre + (i,)] for i in range(3)] for v in (a, b))

    def det2(p, q, r, s):
        return record_map("subtract", record_map("multiply", p, q, site=site),
                          record_map("multiply", r, s, site=site), site=site)
    return _s.stack([det2(a1, b2, a2, b1), det2(a2, b0, a0, b2), det2(a0, b1, a1, b0)],
                    axis=ax)


def det(x, /):
    return _L.det(x)


def diagonal(x, /, *, offset=0):
    return _s.diagonal(x, offset, -2, -1)


def eigh(x, /):
    return _L.eigh(x)


def eigvalsh(x, /):
    return _L.eigvalsh(x)


def inv(x, /):
    return _L.inv(x)


def matmul(x1, x2, /):
    return _m.matmul(x1, x2)


def matrix_norm(x, /, *, keepdims=False, ord="fro"):  # noqa: A002
    return _L.matrix_norm(x, keepdims=keepdims, ord=ord)


def matrix_power(x, n, /):
    return _L.matrix_power(x, n)


def _host_rtol(rtol):
    return rtol is not None and not isinstance(rtol, (int, float, np.integer, np.floating))


def matrix_rank(x, /, *, rtol=None):
    if _host_rtol(rtol):              # an array of tolerances: NumPy on the materialised input
        r = np.asarray(rtol)
        return _c.asarray(np.linalg.matrix_rank(x.numpy(), rtol=r).astype(np.int64))
    return _L.matrix_rank(x, rtol=rtol)


def matrix_transpose(x, /):
    return _L.matrix_transpose(x)


def outer(x1, x2, /):
    site = callsite()
    if x1.ndim != 1 or x2.ndim != 1:
        raise record_error(ShapeError, "outer: the operands must be 1-dimensional (shapes "
                           f"{x1.shape}, {x2.shape})", site)
    return _L.outer(x1, x2)


def pinv(x, /, *, rtol=None):
    if _host_rtol(rtol):              # an array of tolerances: NumPy on the materialised input
        return _c.asarray(np.linalg.pinv(x.numpy(), rtol=np.asarray(rtol)))
    return _L.pinv(x, rtol=rtol)


def qr(x, /, *, mode="reduced"):
    return _L.qr(x, mode=mode)


def slogdet(x, /):
    return _L.slogdet(x)


def solve(x1, x2, /):
    return _L.solve(x1, x2)


def svd(x, /, *, full_matrices=True):
    return _L.svd(x, full_matrices=full_matrices)


def svdvals(x, /):
    return _L.svdvals(x)


def tensordot(x1, x2, /, *, axes=2):
    return _L.tensordot(x1, x2, axes=axes)


def trace(x, /, *, offset=0, dtype=None):
    """Sum of the diagonal of the last two axes: a strided view and a fused sum; the result
    dtype follows the standard's ``sum``."""
    site = callsite()
    if x.ndim < 2:
        raise record_error(ShapeError, "trace: the input must be at least 2-dimensional",
                           site)
    d = _s.diagonal(x, offset, -2, -1)
    if dtype is None and x.dtype.kind in "bi" and x.dtype.itemsize < 8:
        dtype = np.dtype(np.int64)    # the default integer dtype, as the standard's sum
    elif dtype is None and x.dtype.kind == "u" and x.dtype.itemsize < 8:
        dtype = np.dtype(np.uint64)
    return record_reduce("sum", d, -1, False, dtype, site=site)


def vecdot(x1, x2, /, *, axis=-1):
    return _L.vecdot(x1, x2, axis=axis)


def vector_norm(x, /, *, axis=None, keepdims=False, ord=2):  # noqa: A002
    return _L.vector_norm(x, axis=axis, keepdims=keepdims, ord=ord)


