"""``ps.linalg``: solve, inv, det, cholesky, qr, eigh, svd, svdvals, norm, and SciPy's lu_factor /
lu_solve, as intrinsics (NumPy/SciPy on the CPU executor, CuPy on CUDA, a counted host round
trip on OpenCL). Stacks of matrices (leading dimensions) work where NumPy's do.

A singular matrix (solve, inv) or one that is not positive definite (cholesky) is found when
the intrinsic runs: the read of the result -- or of anything computed from it -- raises
``ps.LinAlgError`` (a ``numpy.linalg.LinAlgError``) whose message starts with the file:line of
the linalg call. Shape errors (a non-square matrix) are raised at the call itself."""
from __future__ import annotations

import builtins
import collections
import functools

import numpy as np

from .core import dtypes as D
from .core.errors import ArgumentError, LinAlgError, callsite, record_error  # noqa: F401
from .core.errors import ShapeError, StreamrtAxisError
from .frontend.array import (HANDLED_FUNCTIONS, _view, astype, const_port, finish_out, record_map,
                             twin_namespace,
                             record_reduce)
from .frontend.array import reshape as _reshape
from .frontend.linalg import (LinAlgShapeError, _intrinsic, _port, _wrap, matmul,  # noqa: F401
                              matrix_transpose, tensordot, vecdot)
from .frontend import linalg as _fl
from .frontend.linalg import _matmul
from .frontend.array import transpose

__all__ = ["solve", "inv", "det", "cholesky", "qr", "svdvals", "norm", "lu_factor", "lu_solve",
           "eigh", "eigvalsh", "svd", "slogdet", "pinv", "matrix_power", "multi_dot",
           "matrix_rank", "vecdot", "trace", "matrix_transpose", "vector_norm", "matrix_norm",
           "matmul", "outer", "tensordot", "LinAlgError"]

QRResult = collections.namedtuple("QRResult", ["Q", "R"])


@functools.lru_cache(maxsize=32)
def _float_dt(dt):
    """The dtype NumPy's linalg computes in: float32/complex64 stay, the rest float64."""
    if dt.kind == "c":
        return dt
    return D.float32 if dt == D.float32 else D.float64


def _at_least_2d(p, site, name):
    if len(p.shape) < 2:
        raise record_error(LinAlgShapeError, f"{name}: {len(p.shape)}-dimensional array given. "
                           "Array must be at least two-dimensional", site)


def _square(p, site, name):
    _at_least_2d(p, site, name)
    if p.shape[-1] != p.shape[-2]:
        raise record_error(LinAlgShapeError, f"{name}: Last 2 dimensions of the array must be "
                           f"square (got {p.shape})", site)


def _as_float(p, site):
    dt = _float_dt(p.dtype)
    return p if p.dtype == dt else astype(_wrap(p), dt, site=site)._port


def solve(a, b):
    """x with ``a @ x == b`` (b: a vector if 1-D, else a stack of matrices, NumPy 2)."""
    site = callsite()
    pa, pb = _port(a, site), _port(b, site)
    _square(pa, site, "solve")
    dt = _float_dt(np.result_type(pa.dtype, pb.dtype))
    n = pa.shape[-1]
    if len(pb.shape) == 1:
        if pb.shape[0] != n:
            raise record_error(LinAlgShapeError, f"solve: b has {pb.shape[0]} rows, a is "
                               f"{n}x{n}", site)
        shape = pa.shape[:-1]
    else:
        if pb.shape[-2] != n:
            raise record_error(LinAlgShapeError, f"solve: b has {pb.shape[-2]} rows, a is "
                               f"{n}x{n}", site)
        try:
            batch = tuple(np.broadcast_shapes(pa.shape[:-2], pb.shape[:-2]))
        except ValueError:
            raise record_error(LinAlgShapeError, f"solve: stacks {pa.shape[:-2]} and "
                               f"{pb.shape[:-2]} do not broadcast", site) from None
        shape = batch + pb.shape[-2:]
    pa = pa if pa.dtype == dt else astype(_wrap(pa), dt, site=site)._port
    pb = pb if pb.dtype == dt else astype(_wrap(pb), dt, site=site)._port
    return _intrinsic("linalg_solve", dt, shape, (pa, pb), (), site)


def inv(a):
    """The inverse of a (stack of) square matrices."""
    site = callsite()
    pa = _port(a, site)
    _square(pa, site, "inv")
    pa = _as_float(pa, site)
    return _intrinsic("linalg_inv", pa.dtype, pa.shape, (pa,), (), site)


def det(a):
    """Determinant(s) (0 for a singular matrix, no error)."""
    site = callsite()
    pa = _port(a, site)
    _square(pa, site, "det")
    pa = _as_float(pa, site)
    return _intrinsic("linalg_det", pa.dtype, pa.shape[:-2], (pa,), (), site)


def cholesky(a, /, *, upper=False):
    """Lower (or ``upper=True``: upper) Cholesky factor of a Hermitian positive-definite matrix."""
    site = callsite()
    pa = _port(a, site)
    _square(pa, site, "cholesky")
    pa = _as_float(pa, site)
    return _intrinsic("linalg_cholesky", pa.dtype, pa.shape, (pa,), (bool(upper),), site)


def svdvals(x, /):
    """Singular values, descending (``numpy.linalg.svdvals``)."""
    site = callsite()
    p = _port(x, site)
    _at_least_2d(p, site, "svdvals")
    p = _as_float(p, site)
    rdt = D.float32 if p.dtype in (D.float32, np.dtype(np.complex64)) else D.float64
    k = builtins.min(p.shape[-2:])
    return _intrinsic("linalg_svdvals", rdt, p.shape[:-2] + (k,), (p,), (), site)


def qr(a, mode="reduced"):
    """QR factorisation (modes 'reduced', 'complete', 'r'). One intrinsic computes Q and R
    into one buffer; Q and R are views of it (QRResult(Q, R); mode 'r': R)."""
    site = callsite()
    pa = _port(a, site)
    _at_least_2d(pa, site, "qr")
    if mode not in ("reduced", "complete", "r"):
        raise record_error(ArgumentError, f"qr: unrecognized mode {mode!r}", site)
    pa = _as_float(pa, site)
    M, N = pa.shape[-2:]
    batch = pa.shape[:-2]
    K = builtins.min(M, N)
    qc = M if mode == "complete" else K
    rr = M if mode == "complete" else K
    qsize = 0 if mode == "r" else M * qc
    L = qsize + rr * N
    packed = _intrinsic("linalg_qr", pa.dtype, batch + (L,), (pa,), (mode,), site)
    bst = _batch_strides(batch, L)
    R = _view(packed._port, qsize, batch + (rr, N), bst + (N, 1), site)
    if mode == "r":
        return R
    Q = _view(packed._port, 0, batch + (M, qc), bst + (qc, 1), site)
    return QRResult(Q, R)


EighResult = collections.namedtuple("EighResult", ["eigenvalues", "eigenvectors"])
SVDResult = collections.namedtuple("SVDResult", ["U", "S", "Vh"])


def _real_part(x, site):
    return record_map("real", x, site=site) if x.dtype.kind == "c" else x


def eigh(a, UPLO="L"):
    """Eigenvalues (ascending, real) and eigenvectors of a (stack of) Hermitian matrices:
    one intrinsic, both results views of its buffer."""
    site = callsite()
    pa = _port(a, site)
    _square(pa, site, "eigh")
    if UPLO not in ("L", "U"):
        raise record_error(ArgumentError, "eigh: UPLO argument must be 'L' or 'U'", site)
    pa = _as_float(pa, site)
    n, batch = pa.shape[-1], pa.shape[:-2]
    L = n + n * n
    packed = _intrinsic("linalg_eigh", pa.dtype, batch + (L,), (pa,), (UPLO,), site)
    bst = _batch_strides(batch, L)
    w = _real_part(_view(packed._port, 0, batch + (n,), bst + (1,), site), site)
    v = _view(packed._port, n, batch + (n, n), bst + (n, 1), site)
    return EighResult(w, v)


def eigvalsh(a, UPLO="L"):
    """Eigenvalues of a (stack of) Hermitian matrices."""
    return eigh(a, UPLO).eigenvalues


def svd(a, full_matrices=True, compute_uv=True, hermitian=False):
    """SVDResult(U, S, Vh) (``compute_uv=False``: the singular values), one intrinsic."""
    site = callsite()
    pa = _port(a, site)
    _at_least_2d(pa, site, "svd")
    if not compute_uv:
        return _svdvals_at(_wrap(pa), site)
    pa = _as_float(pa, site)
    M, N = pa.shape[-2:]
    K = builtins.min(M, N)
    uc, vr = (M, N) if full_matrices else (K, K)
    batch = pa.shape[:-2]
    L = M * uc + K + vr * N
    packed = _intrinsic("linalg_svd", pa.dtype, batch + (L,), (pa,), (bool(full_matrices),),
                        site)
    bst = _batch_strides(batch, L)
    U = _view(packed._port, 0, batch + (M, uc), bst + (uc, 1), site)
    S = _real_part(_view(packed._port, M * uc, batch + (K,), bst + (1,), site), site)
    Vh = _view(packed._port, M * uc + K, batch + (vr, N), bst + (N, 1), site)
    return SVDResult(U, S, Vh)


SlogdetResult = collections.namedtuple("SlogdetResult", ["sign", "logabsdet"])


def slogdet(a):
    """SlogdetResult(sign, logabsdet) of a (stack of) square matrices."""
    site = callsite()
    pa = _port(a, site)
    _square(pa, site, "slogdet")
    pa = _as_float(pa, site)
    batch = pa.shape[:-2]
    packed = _intrinsic("linalg_slogdet", pa.dtype, batch + (2,), (pa,), (), site)
    bst = _batch_strides(batch, 2)
    sign = _view(packed._port, 0, batch, bst, site)
    logabs = _real_part(_view(packed._port, 1, batch, bst, site), site)
    return SlogdetResult(sign, logabs)


def pinv(a, rcond=None, hermitian=False, *, rtol=np._NoValue):
    """Moore-Penrose pseudo-inverse, NumPy's cutoff: ``rcond`` (default 1e-15), or ``rtol``
    (None: max(M, N) * eps)."""
    site = callsite()
    pa = _port(a, site)
    _at_least_2d(pa, site, "pinv")
    pa = _as_float(pa, site)
    if rcond is not None and rtol is not np._NoValue:
        raise record_error(ArgumentError, "pinv: `rtol` and `rcond` can't be both set.", site)
    rc = rcond if rcond is not None else 1e-15 if rtol is np._NoValue else \
        rtol if rtol is not None else max(pa.shape[-2:]) * np.finfo(pa.dtype).eps
    shape = pa.shape[:-2] + (pa.shape[-1], pa.shape[-2])
    return _intrinsic("linalg_pinv", pa.dtype, shape, (pa,), (float(rc), bool(hermitian)),
                      site)


def matrix_power(a, n):
    """``a`` to the integer power ``n`` by repeated squaring (matmul intrinsics; n < 0:
    of the inverse)."""
    site = callsite()
    pa = _port(a, site)
    _square(pa, site, "matrix_power")
    if not isinstance(n, (int, np.integer)):
        raise record_error(ArgumentError, "matrix_power: exponent must be an integer", site)
    x = _wrap(pa)
    if n == 0:
        eye = np.broadcast_to(np.eye(pa.shape[-1], dtype=pa.dtype), pa.shape).copy()
        return _wrap(const_port(eye, site))
    if n < 0:
        x, n = inv(x), -n
    result = None
    while n:
        if n & 1:
            result = x if result is None else _matmul(result, x, site)
        n >>= 1
        if n:
            x = _matmul(x, x, site)
    return result


def multi_dot(arrays, *, out=None):
    """``arrays[0] @ arrays[1] @ ...``, left to right: NumPy's rules -- two arrays are
    ``dot``; otherwise the first and last may be 1-D, every other array must be 2-D."""
    site = callsite()
    if len(arrays) < 2:
        raise record_error(ArgumentError, "multi_dot: expecting at least two arrays", site)
    if len(arrays) == 2:
        return finish_out("multi_dot", _fl.dot(arrays[0], arrays[1]), out, True,
                          "same_kind", site)
    ps_ = [_port(a, site) for a in arrays]
    for k, p in enumerate(ps_):
        ok = (1, 2) if k in (0, len(ps_) - 1) else (2,)
        if len(p.shape) not in ok:
            raise record_error(LinAlgError, f"{len(p.shape)}-dimensional array given. Array "
                               "must be two-dimensional", site)
    r = _wrap(ps_[0])
    for b in ps_[1:]:
        r = _matmul(r, _wrap(b), site)
    return finish_out("multi_dot", r, out, True, "same_kind", site)


def outer(x1, x2, /):
    """``np.linalg.outer``: the outer product of two 1-D arrays (``ps.outer`` flattens)."""
    site = callsite()
    n1, n2 = len(_port(x1, site).shape), len(_port(x2, site).shape)
    if n1 != 1 or n2 != 1:
        raise record_error(ShapeError, "Input arrays must be one-dimensional, but they are "
                           f"x1.ndim={n1} and x2.ndim={n2}.", site)
    return _fl.outer(x1, x2)


def trace(x, /, *, offset=0, dtype=None):
    """``np.linalg.trace``: the sum along the diagonals of the last two axes."""
    return _fl.trace(x, offset=offset, axis1=-2, axis2=-1, dtype=dtype)


def matrix_rank(A, tol=None, hermitian=False, *, rtol=None):
    """Number of singular values above the tolerance (NumPy's default: S.max * max(M, N) *
    eps): svdvals then a fused compare-and-count."""
    site = callsite()
    p = _port(A, site)
    if len(p.shape) < 2:
        return astype(record_reduce("any", record_map("not_equal", _wrap(p), 0, site=site),
                                    None, site=site), D.int64, site=site)
    S = _svdvals_at(_wrap(p), site)
    if tol is None:
        factor = rtol if rtol is not None else max(p.shape[-2:]) * np.finfo(S.dtype).eps
        smax = record_reduce("max", S, (-1 % S.ndim,), True, site=site)
        tol = record_map("multiply", smax, float(factor), site=site)
    else:
        tol = _wrap(_port(tol, site))
        if tol.ndim:
            tol = _reshape(tol, tol.shape + (1,), site=site)
    return record_reduce("sum", record_map("greater", S, tol, site=site), (-1 % S.ndim,),
                         site=site)


def _batch_strides(batch, L):
    st, acc = [], L
    for s in reversed(batch):
        st.append(acc)
        acc *= s
    return tuple(reversed(st))


def lu_factor(a, overwrite_a=False, check_finite=True):
    """SciPy's ``scipy.linalg.lu_factor``: (lu, piv) with piv int32 (0-based row
    interchanges). A singular matrix gives SciPy's LinAlgWarning, not an error."""
    site = callsite()
    pa = _port(a, site)
    if len(pa.shape) != 2 or pa.shape[0] != pa.shape[1]:
        raise record_error(LinAlgShapeError, f"lu_factor: expected a square matrix, got shape "
                           f"{pa.shape}", site)
    pa = _as_float(pa, site)
    n = pa.shape[0]
    packed = _intrinsic("linalg_lu_factor", pa.dtype, (n * n + n,), (pa,), (), site)
    lu = _view(packed._port, 0, (n, n), (n, 1), site)
    piv = _view(packed._port, n * n, (n,), (1,), site)
    if pa.dtype.kind == "c":
        piv = record_map("real", piv, site=site)
    return lu, astype(piv, D.int32, site=site)


def lu_solve(lu_and_piv, b, trans=0, overwrite_b=False, check_finite=True):
    """SciPy's ``scipy.linalg.lu_solve``: solves a x = b (trans 0), a^T x = b (1), a^H x = b
    (2) from lu_factor's output."""
    site = callsite()
    try:
        lu, piv = lu_and_piv
    except (TypeError, ValueError):
        raise record_error(ArgumentError, "lu_solve: expected (lu, piv)", site) from None
    plu, ppiv, pb = _port(lu, site), _port(piv, site), _port(b, site)
    if trans not in (0, 1, 2):
        raise record_error(ArgumentError, f"lu_solve: trans must be 0, 1 or 2, got {trans!r}",
                           site)
    if len(plu.shape) != 2 or plu.shape[0] != plu.shape[1] or pb.shape[:1] != plu.shape[:1]:
        raise record_error(LinAlgShapeError, f"lu_solve: shapes of lu {plu.shape} and b "
                           f"{pb.shape} are incompatible", site)
    dt = _float_dt(np.result_type(plu.dtype, pb.dtype))
    plu = plu if plu.dtype == dt else astype(_wrap(plu), dt, site=site)._port
    pb = pb if pb.dtype == dt else astype(_wrap(pb), dt, site=site)._port
    return _intrinsic("linalg_lu_solve", dt, pb.shape, (plu, ppiv, pb), (int(trans),), site)


# ---- norms: fused reductions (ord 2 / -2 / 'nuc' of matrices: singular values) -----------
def norm(x, ord=None, axis=None, keepdims=False):
    """NumPy's norm. Vector norms (ord None/2, 1, inf, -inf, 0, p) and the matrix norms
    1, -1, inf, -inf, 'fro' are fused reductions; matrix 2, -2, 'nuc' use svdvals."""
    site = callsite()
    p = _port(x, site)
    rdt = D.float32 if p.dtype in (D.float32, np.dtype(np.complex64)) else D.float64
    X = _wrap(p)
    nd = len(p.shape)
    if axis is None:
        if ord is None:
            r = _fro(X, None, site, rdt)
            return _keep(r, nd, tuple(range(nd)), keepdims, site)
        if nd not in (1, 2):
            raise record_error(ArgumentError, "norm: improper number of dimensions to norm",
                               site)
        axes = tuple(range(nd))
    else:
        axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
        axes = tuple(_ax(a, nd, site) for a in axes)
    if len(axes) == 1:
        r = _vector_norm(X, ord, axes[0], site, rdt)
    elif len(axes) == 2:
        if axes[0] == axes[1]:
            raise record_error(ArgumentError, "norm: duplicate axes given", site)
        r = _matrix_norm(X, ord, axes, site, rdt)
    else:
        raise record_error(ArgumentError, "norm: improper number of dimensions to norm", site)
    return _keep(r, nd, axes, keepdims, site)


def vector_norm(x, /, *, axis=None, keepdims=False, ord=2):
    """Array API vector norm (``axis=None``: over all elements; a tuple of axes: over
    those, as one vector -- never a matrix norm)."""
    site = callsite()
    p = _port(x, site)
    if axis is None:
        X = _reshape(_wrap(p), (-1,), site=site)
        rdt = D.float32 if p.dtype in (D.float32, np.dtype(np.complex64)) else D.float64
        r = _vector_norm(X, ord, 0, site, rdt)
        return _keep(r, len(p.shape), tuple(range(len(p.shape))), keepdims, site) \
            if keepdims else r
    if not isinstance(axis, (int, np.integer)):
        nd = len(p.shape)
        axes = tuple(_ax(a, nd, site) for a in axis)
        if len(set(axes)) != len(axes):
            raise record_error(ArgumentError, "vector_norm: duplicate axes given", site)
        rdt = D.float32 if p.dtype in (D.float32, np.dtype(np.complex64)) else D.float64
        return _keep(_vector_norm(_wrap(p), ord, axes, site, rdt), nd, axes, keepdims, site)
    return norm(_wrap(p), ord, axis, keepdims)


def matrix_norm(x, /, *, keepdims=False, ord="fro"):
    """Array API matrix norm over the last two axes."""
    return norm(x, ord, (-2, -1), keepdims)


def _ax(a, nd, site):
    if not -nd <= int(a) < nd:
        raise record_error(StreamrtAxisError, f"norm: axis {a} is out of bounds for array of "
                           f"dimension {nd}", site)
    return int(a) % nd


def _keep(r, nd, axes, keepdims, site):
    if not keepdims:
        return r
    shape = [1 if i in axes else s for i, s in enumerate(_shape_without(r, nd, axes))]
    return _reshape(r, tuple(shape), site=site)


def _shape_without(r, nd, axes):
    it = iter(r.shape)
    return [1 if i in axes else next(it) for i in range(nd)]


def _absf(X, site, rdt):
    A = record_map("absolute", X, site=site)
    return A if A.dtype == rdt else astype(A, rdt, site=site)


def _fro(X, axes, site, rdt):
    A = _absf(X, site, rdt)
    s = record_reduce("sum", record_map("multiply", A, A, site=site), axes, False, site=site)
    return record_map("sqrt", s, site=site)


def _vector_norm(X, ord, ax, site, rdt):
    """The vector norm of ``X`` along axis ``ax`` (an int, or a tuple of axes taken as one)."""
    ax = ax if isinstance(ax, tuple) else (ax,)
    A = _absf(X, site, rdt)
    if ord is None or ord == 2:
        return _fro(X, ax, site, rdt)
    if ord == np.inf:
        return record_reduce("max", A, ax, site=site)
    if ord == -np.inf:
        return record_reduce("min", A, ax, site=site)
    if ord == 0:
        nz = record_map("not_equal", A, 0, site=site)
        return astype(record_reduce("sum", nz, ax, site=site), rdt, site=site)
    if ord == 1:
        return record_reduce("sum", A, ax, site=site)
    if isinstance(ord, str):
        raise record_error(ArgumentError, f"norm: invalid norm order {ord!r} for vectors", site)
    o = float(ord)
    s = record_reduce("sum", record_map("power", A, o, site=site), ax, site=site)
    return record_map("power", s, 1.0 / o, site=site)


def _matrix_norm(X, ord, axes, site, rdt):
    r0, c0 = axes
    if ord in (None, "fro", "f"):
        return _fro(X, tuple(sorted(axes)), site, rdt)
    A = _absf(X, site, rdt)
    if ord in (1, -1, np.inf, -np.inf):
        sum_ax, red_ax = (r0, c0) if ord in (1, -1) else (c0, r0)
        s = record_reduce("sum", A, (sum_ax,), True, site=site)
        red = "max" if ord in (1, np.inf) else "min"
        r = record_reduce(red, s, (red_ax,), True, site=site)
        nd = X.ndim
        return _reshape(r, tuple(d for i, d in enumerate(r.shape) if i not in axes)
                        if nd else (), site=site)
    if ord in (2, -2, "nuc"):
        nd = X.ndim
        rest = [i for i in range(nd) if i not in axes]
        M = transpose(X, tuple(rest) + (r0, c0), site=site)
        sv = _svdvals_at(M, site)
        if ord == 2:
            return record_reduce("max", sv, (-1 % sv.ndim,), site=site)
        if ord == -2:
            return record_reduce("min", sv, (-1 % sv.ndim,), site=site)
        return record_reduce("sum", sv, (-1 % sv.ndim,), site=site)
    raise record_error(ArgumentError, f"norm: invalid norm order {ord!r} for matrices", site)


def _svdvals_at(M, site):
    p = _as_float(M._port, site)
    rdt = D.float32 if p.dtype in (D.float32, np.dtype(np.complex64)) else D.float64
    k = builtins.min(p.shape[-2:])
    return _intrinsic("linalg_svdvals", rdt, p.shape[:-2] + (k,), (p,), (), site)


for _n in ("solve", "inv", "det", "cholesky", "qr", "svdvals", "norm", "eigh", "eigvalsh",
           "svd", "slogdet", "pinv", "matrix_power", "multi_dot", "matrix_rank"):
    HANDLED_FUNCTIONS[_n] = globals()[_n]
del _n
twin_namespace(globals(), __all__, np.linalg)      # the NumPy tier (frontend/array.py)
