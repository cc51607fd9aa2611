"""Products, linear algebra, sort, scans, FFT and convolution at record time: shapes, dtypes
and arguments are checked here (errors name the user's line) and one *intrinsic* port is
recorded per call (proggen/linalg_intrinsics.py runs it). What is element-wise (outer, the
vector dot, most norms, the unpacking of qr/lu_factor) is recorded as map/reduce ops and fuses."""
from __future__ import annotations

import builtins
import collections

import numpy as np

from ..core import dtypes as D
from ..core.ops import reduction_dtypes
from ..core.ir import Port
from ..core.errors import ArgumentError, DTypeError, ShapeError, callsite, record_error
from .array import (HANDLED_FUNCTIONS, UFUNC_CALLS, Array, _enqueue, astype, const_port, finish_out,
                    numpy_twin, twin_namespace,
                    normalize_axes, operand, record_map, record_reduce, reshape)
from .array import _view, transpose
from .shape import diagonal_region
from .indexing import write_region
from . import native as _native


class LinAlgShapeError(ShapeError, np.linalg.LinAlgError):
    """A linalg argument of the wrong shape (not square, too few dimensions): raised when
    recorded, like NumPy's LinAlgError."""


# ---- helpers ------------------------------------------------------------------------------
def _port(x, site):
    """An array operand as a port (Python scalars become 0-d constants)."""
    p = operand(x, site)
    if p.kind == "scalar":
        p = const_port(np.asarray(p.scalar, dtype=p.dtype), site)
    return p


def _intrinsic(op, dtype, shape, inputs, params, site):
    return _enqueue(Port("intrinsic", op, dtype, tuple(int(s) for s in shape), tuple(inputs),
                         tuple(params), site))


_RESULT: dict = {}      # dtypes -> their result dtype (np.result_type is slow: memoised)


def _result(site, *dts):
    r = _RESULT.get(dts)
    if r is not None:
        return r
    try:
        r = D.canonical(np.result_type(*dts))
    except TypeError as e:
        raise record_error(DTypeError, str(e), site) from None
    if len(_RESULT) < 4096:
        _RESULT[dts] = r
    return r


def _wrap(p):
    return Array._wrap(p)


def _flat(p, site):
    return reshape(_wrap(p), (-1,), site=site)


# ---- products -----------------------------------------------------------------------------
def matmul(x1, x2, /, out=None):
    """``x1 @ x2``: NumPy's matmul (stacks of matrices broadcast) as one intrinsic (BLAS on
    the CPU). Two vectors: a fused multiply-and-sum kernel."""
    site = callsite()
    return finish_out("matmul", _matmul(x1, x2, site), out, True, "same_kind", site)


def _matmul(x1, x2, site):
    pa, pb = operand(x1, site), operand(x2, site)
    if pa.kind == "scalar" or pb.kind == "scalar" or not pa.shape or not pb.shape:
        raise record_error(ArgumentError, "matmul: Input operand does not have enough "
                           "dimensions (scalars are not allowed, use '*')", site)
    dt = _result(site, pa.dtype, pb.dtype)
    sa, sb = pa.shape, pb.shape
    if len(sa) == 1 and len(sb) == 1:
        if sa != sb:
            raise record_error(ShapeError, f"matmul: Input operand 1 has a mismatch in its core "
                               f"dimension 0 (size {sb[0]} is different from {sa[0]})", site)
        return _vdot_fused(pa, pb, site)
    a2 = (1,) + sa if len(sa) == 1 else sa
    b2 = sb + (1,) if len(sb) == 1 else sb
    if a2[-1] != b2[-2]:
        raise record_error(ShapeError, f"matmul: Input operand 1 has a mismatch in its core "
                           f"dimension 0, with gufunc signature (n?,k),(k,m?)->(n?,m?) (size "
                           f"{b2[-2]} is different from {a2[-1]})", site)
    try:
        batch = () if len(a2) == len(b2) == 2 else tuple(np.broadcast_shapes(a2[:-2], b2[:-2]))
    except ValueError:
        raise record_error(ShapeError, f"matmul: operands could not be broadcast together "
                           f"with shapes {sa} {sb}", site) from None
    shape = batch + ((a2[-2],) if len(sa) > 1 else ()) + ((b2[-1],) if len(sb) > 1 else ())
    return _intrinsic("matmul", dt, shape, (pa, pb), (), site)


def _vdot_fused(pa, pb, site, A=None, B=None):
    """A multiply and a sum over two vectors' ports (``A``, ``B``: their Arrays, if the
    caller has them)."""
    A = A if A is not None else _wrap(pa)
    B = B if B is not None else _wrap(pb)
    if pa.dtype == D.bool_ and pb.dtype == D.bool_:
        return record_reduce("any", record_map("logical_and", A, B, site=site), None, site=site)
    prod = _multiply_at(A, B, site)
    return record_reduce("sum", prod, None, False, prod.dtype, site=site)


def _multiply_at(A, B, site):
    """``A * B`` of two Arrays recorded at ``site`` (the user's line): the C operator's
    ``at`` when installed (its NumPy-tier fast path), else ``record_map``."""
    at = getattr(Array.__dict__["__mul__"], "at", None)
    return at(A, B, site) if at is not None else record_map("multiply", A, B, site=site)


def dot(a, b, out=None):
    """NumPy's dot: scalars multiply, vectors give a fused multiply-and-sum kernel, matrices
    and stacks the matmul or tensordot intrinsic."""
    site = callsite()
    return finish_out("dot", _dot(a, b, site), out, True, "no", site)


def _dot(a, b, site):
    pa, pb = _port(a, site), _port(b, site)
    if not pa.shape or not pb.shape:
        # NumPy's dot converts Python scalars to arrays (not weak, as in a ufunc)
        return record_map("multiply", _wrap(pa), _wrap(pb), site=site)
    if len(pa.shape) == 1 and len(pb.shape) == 1:
        if pa.shape != pb.shape:
            raise record_error(ShapeError, f"dot: shapes {pa.shape} and {pb.shape} not aligned",
                               site)
        return _vdot_fused(pa, pb, site, a if type(a) is Array else None,
                           b if type(b) is Array else None)
    if len(pa.shape) <= 2 and len(pb.shape) <= 2 or len(pb.shape) == 1:
        k_b = pb.shape[0] if len(pb.shape) == 1 else pb.shape[-2]
        if pa.shape[-1] != k_b:
            raise record_error(ShapeError, f"dot: shapes {pa.shape} and {pb.shape} not aligned: "
                               f"{pa.shape[-1]} (dim {len(pa.shape) - 1}) != {k_b}", site)
        return _matmul(a, b, site)
    return _tensordot(pa, pb, ((len(pa.shape) - 1,), (len(pb.shape) - 2,)), site)


def vdot(a, b, /):
    """Flattened dot product, conjugating the first argument (complex)."""
    site = callsite()
    pa, pb = _port(a, site), _port(b, site)
    if pa.size != pb.size:
        raise record_error(ShapeError, "vdot: cannot reshape array of size "
                           f"{pa.size} into {pb.size}", site)
    fa, fb = _flat(pa, site), _flat(pb, site)
    if pa.dtype.kind == "c":
        fa = record_map("conjugate", fa, site=site)
    return _vdot_fused(fa._port, fb._port, site)


def inner(a, b, /):
    """Sum product over the last axes (vectors: a fused kernel; else tensordot)."""
    site = callsite()
    pa, pb = _port(a, site), _port(b, site)
    if not pa.shape or not pb.shape:
        return record_map("multiply", _wrap(pa), _wrap(pb), site=site)
    if pa.shape[-1] != pb.shape[-1]:
        raise record_error(ShapeError, f"inner: shapes {pa.shape} and {pb.shape} not aligned: "
                           f"{pa.shape[-1]} != {pb.shape[-1]}", site)
    if len(pa.shape) == 1 and len(pb.shape) == 1:
        return _vdot_fused(pa, pb, site)
    return _tensordot(pa, pb, ((len(pa.shape) - 1,), (len(pb.shape) - 1,)), site)


def outer(a, b, out=None):
    """Flattened outer product: a broadcast multiply (fuses with producers and consumers).
    Two Arrays go to the multiply operator (with the C path: on the NumPy tier, its
    two-dimensional broadcast loop, NumPy's own multiply loop row by row -- the same values,
    ~6x faster than NumPy's ``outer`` at 300 x 600, no slower at 10 x 10); other operands
    and ``out=`` to NumPy's ``outer`` on the NumPy tier (``_outer_twin``)."""
    if out is None and type(a) is Array and type(b) is Array:
        site = callsite()
        if a.ndim == 1 and b.ndim == 1:
            A, B = a[:, None], b[None, :]
        else:
            A, B = reshape(a, (-1, 1), site=site), reshape(b, (1, -1), site=site)
        return _multiply_at(A, B, site)
    return _outer_twin(a, b, out)


def _outer(a, b, out=None):
    site = callsite()
    pa, pb = _port(a, site), _port(b, site)
    A = reshape(_wrap(pa), (-1, 1), site=site)
    B = reshape(_wrap(pb), (1, -1), site=site)
    return finish_out("outer", record_map("multiply", A, B, site=site), out, True, "same_kind",
                      site)


def _norm_axes(axes, nd, site):
    out = []
    for a in axes:
        if not -nd <= int(a) < nd:
            raise record_error(ShapeError, f"tensordot: axis {a} out of range for {nd} dims",
                               site)
        out.append(int(a) % nd)
    return tuple(out)


def tensordot(a, b, axes=2):
    """Sum products over the given axes: one intrinsic (NumPy reshapes to one GEMM)."""
    site = callsite()
    pa, pb = _port(a, site), _port(b, site)
    if isinstance(axes, (int, np.integer)):
        n = int(axes)
        if n < 0 or n > len(pa.shape) or n > len(pb.shape):
            raise record_error(ShapeError, f"tensordot: axes={n} is out of range", site)
        ax = (tuple(range(len(pa.shape) - n, len(pa.shape))), tuple(range(n)))
    else:
        try:
            xa, xb = axes
        except (TypeError, ValueError):
            raise record_error(ArgumentError, "tensordot: axes must be an int or a pair of "
                               "sequences", site) from None
        xa = (xa,) if isinstance(xa, (int, np.integer)) else tuple(xa)
        xb = (xb,) if isinstance(xb, (int, np.integer)) else tuple(xb)
        if len(xa) != len(xb):
            raise record_error(ShapeError, "tensordot: shape-mismatch for sum", site)
        ax = (_norm_axes(xa, len(pa.shape), site), _norm_axes(xb, len(pb.shape), site))
    return _tensordot(pa, pb, ax, site)


def _tensordot(pa, pb, ax, site):
    xa, xb = ax
    for i, j in zip(xa, xb):
        if pa.shape[i] != pb.shape[j]:
            raise record_error(ShapeError, f"tensordot: shape-mismatch for sum ({pa.shape} "
                               f"axis {i} vs {pb.shape} axis {j})", site)
    shape = tuple(s for i, s in enumerate(pa.shape) if i not in xa) + \
        tuple(s for i, s in enumerate(pb.shape) if i not in xb)
    dt = _result(site, pa.dtype, pb.dtype)
    return _intrinsic("tensordot", dt, shape, (pa, pb), ((tuple(xa), tuple(xb)),), site)


def _einsum_shape(subscripts, shapes, site):
    s = subscripts.replace(" ", "")
    lhs, arrow, rhs = s.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(shapes):
        raise record_error(ArgumentError, f"einsum: {len(terms)} operand subscripts for "
                           f"{len(shapes)} operands", site)
    sizes, ell = {}, []
    counts = collections.Counter()
    for t, sh in zip(terms, shapes):
        letters = t.replace("...", "")
        if any(c not in _LETTERS for c in letters):
            raise record_error(ArgumentError, f"einsum: invalid subscript in {t!r}", site)
        n_ell = len(sh) - len(letters) if "..." in t else 0
        if n_ell < 0 or ("..." not in t and len(letters) != len(sh)):
            raise record_error(ShapeError, f"einsum: operand subscripts {t!r} do not match "
                               f"an operand of {len(sh)} dimensions", site)
        head = t.split("...")[0] if "..." in t else letters
        pos = 0
        for c in head:
            _size(sizes, c, sh[pos], site)
            pos += 1
        if "..." in t:
            ell.append(tuple(sh[pos:pos + n_ell]))
            pos += n_ell
            for c in t.split("...")[1]:
                _size(sizes, c, sh[pos], site)
                pos += 1
        counts.update(letters)
    try:
        eshape = tuple(np.broadcast_shapes(*ell)) if ell else ()
    except ValueError:
        raise record_error(ShapeError, "einsum: operands could not be broadcast together",
                           site) from None
    if not arrow:
        out = "..." * bool(ell) + "".join(sorted(c for c, n in counts.items() if n == 1))
    else:
        out = rhs
    shape = []
    for part_i, part in enumerate(out.split("...")):
        if part_i:
            shape.extend(eshape)
        for c in part:
            if c not in sizes:
                raise record_error(ArgumentError, f"einsum: output subscript {c!r} does not "
                                   "appear in the input", site)
            shape.append(sizes[c])
    return tuple(shape)


def _size(sizes, c, n, site):
    old = sizes.get(c)
    if old is not None and old != n and 1 not in (old, n):
        raise record_error(ShapeError, f"einsum: size of label {c!r} ({n}) does not match "
                           f"earlier size {old}", site)
    sizes[c] = n if old in (None, 1) else old


def einsum(subscripts, *operands, out=None, dtype=None, order="K", casting="safe",
           optimize=False):
    """Einstein summation (string subscripts, explicit or implicit output, '...'): one
    intrinsic (NumPy's einsum on the CPU, with its contraction path for 3+ operands)."""
    site = callsite()
    if not isinstance(subscripts, str):
        raise record_error(ArgumentError, "einsum: only the string form of subscripts is "
                           "supported", site)
    ports = [_port(o, site) for o in operands]
    shape = _einsum_shape(subscripts, [p.shape for p in ports], site)
    dt = _result(site, *[p.dtype for p in ports])
    if dtype is not None:
        # NumPy casts the operands to dtype= and sums in it (int32 operands with
        # dtype=float64 do not wrap)
        want = np.dtype(dtype)
        for p in ports:
            if not np.can_cast(p.dtype, want, casting):
                raise record_error(DTypeError, f"einsum: cannot cast from {p.dtype} to "
                                   f"{want} with casting rule {casting!r}", site)
        ports = [p if p.dtype == want else astype(_wrap(p), want, site=site)._port
                 for p in ports]
        dt = want
    r = _intrinsic("einsum", dt, shape, ports, (subscripts.replace(" ", ""),), site)
    return finish_out("einsum", r, out, True, casting, site)


def vecdot(x1, x2, /, *, axis=-1):
    """Vector dot product along ``axis`` (the first argument conjugated): a fused
    multiply-and-sum with broadcasting."""
    site = callsite()
    pa, pb = _port(x1, site), _port(x2, site)
    if not pa.shape or not pb.shape:
        raise record_error(ShapeError, "vecdot: operands must be at least 1-dimensional", site)
    A, B = _wrap(pa), _wrap(pb)
    if pa.dtype.kind == "c":
        A = record_map("conjugate", A, site=site)
    prod = record_map("multiply", A, B, site=site)
    ax = normalize_axes(axis, prod.ndim, site, "vecdot")
    if pa.shape[axis] != pb.shape[axis]:
        raise record_error(ShapeError, f"vecdot: shapes {pa.shape} and {pb.shape} differ "
                           f"along axis {axis}", site)
    return record_reduce("sum", prod, ax, False, prod.dtype, site=site)


def trace(a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    """Sum along a diagonal: a strided view and a fused sum."""
    site = callsite()
    p = _port(a, site)
    nd = len(p.shape)
    if nd < 2:
        raise record_error(ShapeError, "trace: diag requires an array of at least two "
                           "dimensions", site)
    a1, a2 = normalize_axes(axis1, nd, site, "trace")[0], normalize_axes(axis2, nd, site,
                                                                         "trace")[0]
    if a1 == a2:
        raise record_error(ArgumentError, "trace: axis1 and axis2 cannot be the same", site)
    off, shape, strides = diagonal_region(p, int(offset), a1, a2)
    diag = _view(p, off, shape, strides, site)
    return finish_out("trace", record_reduce("sum", diag, (nd - 2,), False, dtype, site=site),
                      out, True, "unsafe", site)


def matrix_transpose(x, /):
    """Swap the last two axes (a view)."""
    site = callsite()
    p = _port(x, site)
    if len(p.shape) < 2:
        raise record_error(ShapeError, "matrix_transpose: input must be at least 2-D", site)
    ax = list(range(len(p.shape)))
    ax[-2:] = ax[-1], ax[-2]
    return transpose(_wrap(p), tuple(ax), site=site)


# ---- sort and scans -----------------------------------------------------------------------
def _axis1(axis, p, site, name):
    return normalize_axes(axis, len(p.shape), site, name)[0]


_KINDS = ("quicksort", "mergesort", "heapsort", "stable")
_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"     # (string.ascii_letters)


def _sort_args(a, axis, kind, stable, site, name):
    p = _port(a, site)
    if axis is None:
        p = _flat(p, site)._port
        axis = 0
    if not p.shape:
        raise record_error(ShapeError, f"{name}: cannot sort a 0-d array (use axis=None)", site)
    if kind is not None and kind not in _KINDS:
        raise record_error(ArgumentError, f"{name}: kind must be one of {_KINDS}, got "
                           f"{kind!r}", site)
    if stable:
        kind = "stable"
    return p, _axis1(axis, p, site, name), kind or "quicksort"


def sort(a, axis=-1, kind=None, order=None, *, stable=None):
    """Sorted copy along ``axis`` (None: flattened); ``kind='stable'`` or ``stable=True``
    keep the order of equal elements."""
    site = callsite()
    p, ax, kind = _sort_args(a, axis, kind, stable, site, "sort")
    return _intrinsic("sort", p.dtype, p.shape, (p,), (ax, kind), site)


def argsort(a, axis=-1, kind=None, order=None, *, stable=None):
    """Indices (int64) that sort ``a`` along ``axis``."""
    site = callsite()
    p, ax, kind = _sort_args(a, axis, kind, stable, site, "argsort")
    return _intrinsic("argsort", D.int64, p.shape, (p,), (ax, kind), site)


_SCAN_AS = {"cumsum": "sum", "cumprod": "prod"}      # same result dtypes as NumPy's


def _scan(name, a, axis, dtype, site):
    p = _port(a, site)
    if axis is None:
        p = _flat(p, site)._port
        axis = 0
    ax = _axis1(axis, p, site, name) if p.shape else 0
    if not p.shape:
        p = reshape(_wrap(p), (1,), site=site)._port
    try:
        dt = D.canonical(dtype) if dtype is not None else \
            reduction_dtypes(_SCAN_AS[name], p.dtype)[0]
    except TypeError as e:
        raise record_error(DTypeError, str(e), site) from None
    return _intrinsic(name, dt, p.shape, (p,), (ax,), site)


def cumsum(a, axis=None, dtype=None, out=None):
    """Inclusive prefix sum along ``axis`` (None: flattened), NumPy's dtype rules."""
    site = callsite()
    return finish_out("cumsum", _scan("cumsum", a, axis, dtype, site), out, True, "unsafe",
                      site)


def cumprod(a, axis=None, dtype=None, out=None):
    """Inclusive prefix product along ``axis`` (None: flattened)."""
    site = callsite()
    return finish_out("cumprod", _scan("cumprod", a, axis, dtype, site), out, True, "unsafe",
                      site)


# ---- convolution --------------------------------------------------------------------------
def _conv(name, a, v, mode, site):
    pa, pv = _port(a, site), _port(v, site)
    if len(pa.shape) != 1 or len(pv.shape) != 1:
        raise record_error(ShapeError, f"{name}: object too deep for desired array (1-D "
                           "inputs only)", site)
    if pa.size == 0 or pv.size == 0:
        raise record_error(ShapeError, f"{name}: inputs cannot be empty", site)
    if mode not in ("full", "same", "valid"):
        raise record_error(ArgumentError, f"{name}: mode must be 'full', 'same' or 'valid', "
                           f"got {mode!r}", site)
    n, m = pa.size, pv.size
    size = {"full": n + m - 1, "same": builtins.max(n, m),
            "valid": builtins.max(n, m) - builtins.min(n, m) + 1}[mode]
    dt = _result(site, pa.dtype, pv.dtype)
    return _intrinsic(name, dt, (size,), (pa, pv), (mode,), site)


def convolve(a, v, mode="full"):
    """Discrete 1-D linear convolution (NumPy's modes 'full', 'same', 'valid')."""
    return _conv("convolve", a, v, mode, callsite())


def correlate(a, v, mode="valid"):
    """1-D cross-correlation (NumPy's default mode 'valid'; complex ``v`` is conjugated)."""
    return _conv("correlate", a, v, mode, callsite())


# ---- Array methods ------------------------------------------------------------------------
def _m_sort(self, axis=-1, kind=None, order=None, *, stable=None):
    """In-place sort, as NumPy's: the sorted values are written into this array (a region
    write, so every view of it sees them)."""
    site = callsite()
    if axis is None:
        raise record_error(ArgumentError, "sort: axis must be an integer for an in-place sort "
                           "(np.sort(a, axis=None) returns a flattened copy)", site)
    p, ax, kind = _sort_args(self, axis, kind, stable, site, "sort")
    r = _intrinsic("sort", p.dtype, p.shape, (p,), (ax, kind), site)
    _, off, st = self._port.base_view()
    write_region(self, off, self.shape, st, r, site, owned=True)


Array.sort = _m_sort
Array.argsort = argsort           # the functions take the array first: they are the methods
Array.cumsum = cumsum
Array.cumprod = cumprod
def _rmatmul_np(a, b):
    return np.matmul(b, a)


Array.__matmul__ = numpy_twin(lambda self, other: _matmul(self, other, callsite()), np.matmul)
Array.__rmatmul__ = numpy_twin(lambda self, other: _matmul(other, self, callsite()),
                               _rmatmul_np)

__all__ = ["matmul", "dot", "vdot", "inner", "outer", "tensordot", "einsum", "sort", "argsort",
           "cumsum", "cumprod", "convolve", "correlate", "vecdot", "trace", "matrix_transpose"]
for _n in __all__:
    HANDLED_FUNCTIONS[_n] = globals()[_n]
twin_namespace(globals(), [n for n in __all__ if n != "outer"], np)   # the NumPy tier (array.py)
# outer: the multiply operator's fast path for two Arrays, NumPy's twin otherwise
_outer_twin = numpy_twin(_outer, np.outer)


# ---- complex parts as attributes and methods ----------------------------------------------
def _p_real(self):
    """``a.real``: of a real array, the array itself (NumPy's is a view of it: a write into
    it is a write into ``a``); of a complex one, its real part (a copy: streamrt's views do
    not change the dtype, docs/guide.md)."""
    if self.dtype.kind != "c":
        return self
    return record_map("real", self, site=callsite())


def _p_imag(self):
    return record_map("imag", self, site=callsite())


def _m_conj(self):
    return record_map("conjugate", self, site=callsite())


Array.real = property(_p_real)
Array.imag = property(_p_imag)
Array.conj = Array.conjugate = _m_conj
Array.__complex__ = lambda self: complex(self._scalar("complex"))

# ``ndarray @ Array`` reaches NumPy's matmul ufunc: Array.__array_ufunc__ records the intrinsic
UFUNC_CALLS[np.matmul] = lambda a, b: _matmul(a, b, callsite())
