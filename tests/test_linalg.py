"""Intrinsics against NumPy/SciPy: products (matmul, dot, vdot, inner, outer, tensordot,
einsum), ps.linalg, sort/argsort, cumsum/cumprod, convolve/correlate, complex dtypes and
ps.fft -- on the reference and cpu executors, with kernel counts showing that the element-wise
producers of an intrinsic fuse into one kernel before it and its consumers into one after it;
a few on OpenCL (PoCL) as a counted host round trip."""
from __future__ import annotations

import inspect

import numpy as np
import pytest
import scipy.linalg as sl
from helpers import OPENCL

import streamrt as ps

# NumPy itself warns when a complex value is cast to real (the tests compare with it)
pytestmark = pytest.mark.filterwarnings("ignore::numpy.exceptions.ComplexWarning")

RNG = np.random.default_rng(7)
FLOATS = [np.float32, np.float64]
ALL = [np.float32, np.float64, np.complex64, np.complex128]


def _m(shape, dt, rng=RNG):
    a = rng.standard_normal(shape)
    if np.dtype(dt).kind == "c":
        a = a + 1j * rng.standard_normal(shape)
    return a.astype(dt)


def _tol(dt):
    return dict(rtol=2e-4, atol=2e-4) if np.dtype(dt) in (np.float32, np.complex64) else \
        dict(rtol=1e-10, atol=1e-10)


def _same(r, ref, dt=None):
    ref = np.asarray(ref)
    assert isinstance(r, ps.Array)
    assert r.dtype == ref.dtype, (r.dtype, ref.dtype)
    assert r.shape == ref.shape, (r.shape, ref.shape)
    np.testing.assert_allclose(r.numpy(), ref, **_tol(dt or ref.dtype))


@pytest.fixture(params=["reference", "cpu"])
def backend(request):
    with ps.config.override(backend=request.param):
        yield request.param


def _line():
    return inspect.currentframe().f_back.f_lineno


# ---- products -----------------------------------------------------------------------------
@pytest.mark.parametrize("dt", ALL)
def test_matmul_batched_broadcast_and_vectors(dt, backend):
    A, B = _m((2, 1, 4, 5), dt), _m((3, 5, 2), dt)
    v, w = _m(5, dt), _m(4, dt)
    a, b = ps.asarray(A), ps.asarray(B)
    _same(a @ b, A @ B)
    _same(ps.matmul(a, ps.asarray(v)), A @ v)
    _same(ps.asarray(w) @ a, w @ A)
    _same(A[0, 0] @ b, A[0, 0] @ B)                       # __rmatmul__ with a NumPy array
    _same(np.matmul(a, b), np.matmul(A, B))               # __array_function__
    r = ps.asarray(v) @ ps.asarray(v)
    np.testing.assert_allclose(complex(r), v @ v, **_tol(dt))


def test_matmul_dtypes_and_errors(backend):
    i = ps.asarray(np.arange(6, dtype=np.int32).reshape(2, 3))
    f = ps.asarray(np.ones((3, 2), np.float32))
    _same(i @ f, np.arange(6, dtype=np.int32).reshape(2, 3) @ np.ones((3, 2), np.float32))
    _same(i @ i.T, np.arange(6, dtype=np.int32).reshape(2, 3) @ np.arange(6, dtype=np.int32)
          .reshape(2, 3).T)
    with pytest.raises(ps.ShapeError) as ei:
        line = _line() + 1
        i @ i
    assert f"{__file__}:{line}" in str(ei.value)
    with pytest.raises(ps.ArgumentError):
        ps.matmul(i, 2.0)


@pytest.mark.parametrize("dt", [np.float64, np.complex64])
def test_dot_vdot_inner_outer_tensordot(dt, backend):
    A, B, C = _m((3, 4), dt), _m((4, 5), dt), _m((2, 4, 3), dt)
    v, w = _m(4, dt), _m(4, dt)
    a, b, c = ps.asarray(A), ps.asarray(B), ps.asarray(C)
    _same(ps.dot(a, b), np.dot(A, B))
    _same(ps.dot(a, ps.asarray(v)), np.dot(A, v))
    _same(ps.dot(a, c), np.dot(A, C))                     # N-D: sum over a[-1], c[-2]
    _same(ps.dot(a, 2.0), np.dot(A, 2.0))
    np.testing.assert_allclose(complex(ps.vdot(ps.asarray(v), ps.asarray(w))), np.vdot(v, w),
                               **_tol(dt))
    np.testing.assert_allclose(complex(ps.vdot(a, a)), np.vdot(A, A), **_tol(dt))
    _same(ps.inner(a, ps.swapaxes(c, 1, 2) if hasattr(ps, 'swapaxes') else c.transpose(0, 2, 1)),
          np.inner(A, C.transpose(0, 2, 1)))
    _same(ps.outer(ps.asarray(v), b), np.outer(v, B))
    _same(ps.tensordot(c, a, axes=([1, 2], [1, 0])), np.tensordot(C, A, axes=([1, 2], [1, 0])))
    _same(ps.tensordot(a, b, axes=1), np.tensordot(A, B, axes=1))
    _same(np.tensordot(c, b, axes=([1], [0])), np.tensordot(C, B, axes=([1], [0])))
    with pytest.raises(ps.ShapeError):
        ps.tensordot(a, b, axes=([0], [0]))


@pytest.mark.parametrize("sub, shapes", [
    ("ij,jk->ik", [(3, 4), (4, 5)]), ("ij,jk", [(3, 4), (4, 5)]), ("ii->i", [(4, 4)]),
    ("ii", [(4, 4)]), ("ij->ji", [(3, 4)]), ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("...ij,...jk->...ik", [(2, 3, 4), (1, 4, 5)]), ("i,i->", [(4,), (4,)]),
    ("i,j->ij", [(3,), (4,)]), ("ij,jk,kl->il", [(3, 4), (4, 5), (5, 2)]),
    ("...j,j", [(2, 3, 4), (4,)]),
])
def test_einsum(sub, shapes, backend):
    ops = [_m(s, np.float64) for s in shapes]
    _same(ps.einsum(sub, *[ps.asarray(o) for o in ops]), np.einsum(sub, *ops))


def test_einsum_errors():
    a = ps.asarray(np.ones((3, 4)))
    with pytest.raises(ps.ShapeError):
        ps.einsum("ij,ij->i", a, ps.asarray(np.ones((4, 3))))
    with pytest.raises(ps.ArgumentError):
        ps.einsum("ij->k", a)
    with pytest.raises(ps.ShapeError):
        ps.einsum("ijk->i", a)


def test_producers_fuse_before_and_consumers_after_an_intrinsic(stats):
    """exp(a)*2 and b+1 (same shape) -> one kernel; matmul -> the intrinsic; the consumers ->
    one kernel."""
    A, B = _m((6, 6), np.float64), _m((6, 6), np.float64)
    a, b = ps.asarray(A), ps.asarray(B)
    with ps.config.override(backend="cpu"):
        x = ps.exp(a) * 2.0
        y = b + 1.0
        r = ps.sqrt(ps.abs((x @ y) * 3.0 - 1.0))
        out = r.numpy()
    np.testing.assert_allclose(out, np.sqrt(np.abs(((np.exp(A) * 2) @ (B + 1)) * 3 - 1)))
    s = stats()
    assert s["intrinsics_launched"] == 1
    assert s["kernels_launched"] == 2


# ---- linalg -------------------------------------------------------------------------------
def _spd(n, dt, batch=()):
    a = _m(batch + (n, n), dt)
    return (a @ np.conj(np.swapaxes(a, -1, -2)) + n * np.eye(n)).astype(dt)


@pytest.mark.parametrize("dt", ALL)
def test_solve_inv_det(dt, backend):
    A = (_m((2, 4, 4), dt) + 4 * np.eye(4)).astype(dt)
    b, B = _m(4, dt), _m((2, 4, 3), dt)
    a = ps.asarray(A)
    _same(ps.linalg.solve(a[0], ps.asarray(b)), np.linalg.solve(A[0], b))
    _same(ps.linalg.solve(a, ps.asarray(B)), np.linalg.solve(A, B))
    _same(ps.linalg.inv(a), np.linalg.inv(A))
    _same(ps.linalg.det(a), np.linalg.det(A))
    _same(np.linalg.inv(a), np.linalg.inv(A))             # __array_function__


def test_linalg_int_input_is_float64(backend):
    A = np.array([[2, 1], [1, 3]], np.int32)
    _same(ps.linalg.inv(ps.asarray(A)), np.linalg.inv(A))
    _same(ps.linalg.solve(ps.asarray(A), ps.asarray(np.array([1, 2]))),
          np.linalg.solve(A, np.array([1, 2])))


@pytest.mark.parametrize("dt", ALL)
def test_cholesky_qr(dt, backend):
    S = _spd(4, dt, (2,))
    _same(ps.linalg.cholesky(ps.asarray(S)), np.linalg.cholesky(S))
    _same(ps.linalg.cholesky(ps.asarray(S), upper=True), np.linalg.cholesky(S, upper=True))
    A = _m((2, 5, 3), dt)
    q, r = ps.linalg.qr(ps.asarray(A))
    Q, R = np.linalg.qr(A)
    _same(q, Q)
    _same(r, R)
    q, r = ps.linalg.qr(ps.asarray(A[0].T), mode="complete")
    Q, R = np.linalg.qr(A[0].T, mode="complete")
    _same(q, Q)
    _same(r, R)
    _same(ps.linalg.qr(ps.asarray(A), mode="r"), np.linalg.qr(A, mode="r"))
    _same(q @ r, A[0].T)


@pytest.mark.parametrize("dt", ALL)
def test_lu_factor_lu_solve(dt, backend):
    A = _m((5, 5), dt)
    b, B = _m(5, dt), _m((5, 2), dt)
    lu, piv = ps.linalg.lu_factor(ps.asarray(A))
    LU, PIV = sl.lu_factor(A)
    _same(lu, LU)
    assert piv.dtype == PIV.dtype
    np.testing.assert_array_equal(piv.numpy(), PIV)
    for trans in (0, 1, 2):
        _same(ps.linalg.lu_solve((lu, piv), ps.asarray(b), trans=trans),
              sl.lu_solve((LU, PIV), b, trans=trans))
    _same(ps.linalg.lu_solve((lu, piv), ps.asarray(B)), sl.lu_solve((LU, PIV), B))


@pytest.mark.parametrize("dt", [np.float32, np.float64, np.complex128])
def test_eigh_svd(dt, backend):
    M = _m((2, 4, 4), dt)
    H = (M + np.conj(np.swapaxes(M, -1, -2))).astype(dt)
    w, v = ps.linalg.eigh(ps.asarray(H))
    W, V = np.linalg.eigh(H)
    _same(w, W)
    assert v.dtype == V.dtype and v.shape == V.shape
    recon = (v * w[..., None, :]) @ ps.conj(ps.swapaxes(v, -1, -2)
                                            if hasattr(ps, "swapaxes") else v.transpose(0, 2, 1))
    _same(recon, H, dt)
    _same(ps.linalg.eigvalsh(ps.asarray(H), UPLO="U"), np.linalg.eigvalsh(H, UPLO="U"))
    A = _m((2, 5, 3), dt)
    for full in (True, False):
        u, sv, vh = ps.linalg.svd(ps.asarray(A), full_matrices=full)
        U, S, VH = np.linalg.svd(A, full_matrices=full)
        _same(sv, S)
        assert (u.shape, vh.shape, u.dtype) == (U.shape, VH.shape, U.dtype)
        np.testing.assert_allclose(np.abs(u.numpy()), np.abs(U), **_tol(dt))
    _same((u * sv[..., None, :]) @ vh, A, dt)
    _same(ps.linalg.svd(ps.asarray(A), compute_uv=False), np.linalg.svd(A, compute_uv=False))


@pytest.mark.parametrize("dt", [np.float32, np.float64, np.complex128])
def test_slogdet_pinv_matrix_power_multi_dot_rank(dt, backend):
    A = _m((2, 4, 4), dt)
    a = ps.asarray(A)
    sign, logabs = ps.linalg.slogdet(a)
    S, L = np.linalg.slogdet(A)
    _same(sign, S)
    _same(logabs, L)
    B, C = _m((5, 3), dt), _m((3, 6), dt)
    _same(ps.linalg.pinv(ps.asarray(B)), np.linalg.pinv(B))
    for n in (0, 1, 3, -2):
        r, ref = ps.linalg.matrix_power(a, n), np.linalg.matrix_power(A, n)
        assert r.dtype == ref.dtype
        np.testing.assert_allclose(r.numpy(), ref, rtol=2e-3, atol=2e-3)
    _same(ps.linalg.multi_dot([ps.asarray(B), ps.asarray(C), ps.asarray(C.T)]),
          np.linalg.multi_dot([B, C, C.T]))
    D = B @ C
    for tol in (None, 0.5):
        r = ps.linalg.matrix_rank(ps.asarray(D), tol=tol)
        assert r.dtype == np.int64 and int(r) == np.linalg.matrix_rank(D, tol=tol)


NORM_CASES = [(None, None), (1, None), (2, None), (np.inf, None), (-np.inf, None), (0, None),
              (3, None), ("fro", None), ("nuc", None), (-1, None), (-2, None),
              (None, 1), (1, 0), (np.inf, -1), (2, (0, 2)), ("fro", (2, 1)), (1, (1, 0)),
              (np.inf, (0, 1)), (-2, (1, 2))]


@pytest.mark.parametrize("dt", [np.float32, np.float64, np.complex128])
def test_norm(dt, backend):
    A = _m((3, 4, 5), dt)
    a = ps.asarray(A)
    v = _m(6, dt)
    for ord_, axis in NORM_CASES:
        if axis is None and isinstance(ord_, str) or ord_ in (-1, -2, "nuc") and axis is None:
            x, X = a[0], A[0]                              # matrix norms of a 2-D array
        elif axis is None and ord_ is not None:
            x, X = ps.asarray(v), v                        # vector norms of a 1-D array
        else:
            x, X = a, A
        for keep in (False, True):
            r = ps.linalg.norm(x, ord_, axis, keepdims=keep)
            ref = np.linalg.norm(X, ord_, axis, keepdims=keep)
            _same(r, ref, dt)
    _same(ps.linalg.norm(ps.asarray(np.arange(6).reshape(2, 3))),
          np.linalg.norm(np.arange(6).reshape(2, 3)))


def test_singular_matrix_raises_linalgerror_at_read(backend):
    """The error is found when the intrinsic runs: the read raises numpy's LinAlgError naming
    the line of the linalg call (also for arrays computed from the result)."""
    s = ps.asarray(np.ones((3, 3)))
    line = _line() + 1
    x = ps.linalg.inv(s)
    y = x * 2.0 + 1.0
    with pytest.raises(np.linalg.LinAlgError) as ei:
        y.numpy()
    assert isinstance(ei.value, ps.LinAlgError)
    assert f"{__file__}:{line}" in str(ei.value) and "Singular matrix" in str(ei.value)
    with pytest.raises(np.linalg.LinAlgError):
        ps.linalg.solve(s, ps.asarray(np.ones(3))).numpy()
    with pytest.raises(np.linalg.LinAlgError):
        ps.linalg.cholesky(ps.asarray(-np.eye(2))).numpy()
    with pytest.raises(np.linalg.LinAlgError) as ei:
        line = _line() + 1
        ps.linalg.inv(ps.asarray(np.ones((2, 3))))        # not square: at the call
    assert isinstance(ei.value, ps.ShapeError) and f"{__file__}:{line}" in str(ei.value)
    assert float(ps.linalg.det(s)) == 0.0


# ---- sort and scans -----------------------------------------------------------------------
@pytest.mark.parametrize("dt", [np.float32, np.float64, np.int32, np.int64])
def test_sort_argsort(dt, backend):
    A = (RNG.integers(-5, 5, (4, 7)) if np.dtype(dt).kind == "i" else
         RNG.standard_normal((4, 7))).astype(dt)
    a = ps.asarray(A)
    for axis in (-1, 0, None):
        _same(ps.sort(a, axis=axis), np.sort(A, axis=axis))
        r = ps.argsort(a, axis=axis, kind="stable")
        np.testing.assert_array_equal(r.numpy(), np.argsort(A, axis=axis, kind="stable"))
        assert r.dtype == np.int64
    np.testing.assert_array_equal(ps.argsort(a, stable=True).numpy(),
                                  np.argsort(A, stable=True))
    np.testing.assert_array_equal(np.sort(a).numpy(), np.sort(A))
    b = ps.asarray(A)
    b.sort(axis=0)                                          # in place, as NumPy's
    np.testing.assert_array_equal(b.numpy(), np.sort(A, axis=0))
    np.testing.assert_array_equal(a.argsort(kind="stable").numpy(),
                                  np.argsort(A, kind="stable"))
    with pytest.raises(ps.ArgumentError):
        ps.sort(a, kind="bogo")


def test_in_place_sort_is_seen_through_views():
    a = ps.asarray(np.array([[3.0, 1.0], [2.0, 0.0]]))
    row, col = a[1], a[:, 0]
    a.sort(axis=0)
    want = np.sort(np.array([[3.0, 1.0], [2.0, 0.0]]), axis=0)
    np.testing.assert_array_equal(a.numpy(), want)
    np.testing.assert_array_equal(row.numpy(), want[1])
    np.testing.assert_array_equal(col.numpy(), want[:, 0])
    a[0].sort()                         # sorting a view writes into its base
    np.testing.assert_array_equal(a.numpy()[0], np.sort(want[0]))
    with pytest.raises(TypeError):
        a.sort(axis=None)


@pytest.mark.parametrize("dt", [np.float32, np.float64, np.int32, np.bool_, np.complex64])
def test_cumsum_cumprod(dt, backend):
    A = (RNG.integers(0, 3, (3, 5)) if np.dtype(dt).kind in "ib" else
         _m((3, 5), dt)).astype(dt)
    a = ps.asarray(A)
    for axis in (None, 0, 1, -1):
        _same(ps.cumsum(a, axis=axis), np.cumsum(A, axis=axis), dt)
        _same(ps.cumprod(a, axis=axis), np.cumprod(A, axis=axis), dt)
        if axis in (None, 0):                              # fused with a producer (CPU)
            _same(ps.cumsum(a * 1, axis=axis), np.cumsum(A * 1, axis=axis), dt)
            _same(ps.cumprod(a + 1, axis=axis), np.cumprod(A + 1, axis=axis), dt)
    _same(a.cumsum(axis=1, dtype=np.float64), A.cumsum(axis=1, dtype=np.float64))
    _same(np.cumsum(a, axis=0), np.cumsum(A, axis=0), dt)


@pytest.mark.parametrize("fuse_scans", [True, False])
def test_scan_fuses_with_its_producers(fuse_scans, stats):
    """CPU: exp(a*0.1)*w + 1 and the cumsum are one Numba scan kernel (then one kernel for
    the consumer); with fuse_scans off the producers are one kernel before the intrinsic."""
    A = _m((6, 50), np.float64)
    W = _m((50,), np.float64)
    with ps.config.override(backend="cpu", fuse_scans=fuse_scans):
        a = ps.asarray(A)
        r = ps.cumsum(ps.exp(a[:, ::2] * 0.1) * ps.asarray(W[::2]) + 1.0, axis=0) * 0.5
        q = ps.cumprod(a * 0.01 + 1.0, axis=-1)
        out, outq = r.numpy(), q.numpy()
    np.testing.assert_allclose(out, np.cumsum(np.exp(A[:, ::2] * 0.1) * W[::2] + 1, axis=0) * .5)
    np.testing.assert_allclose(outq, np.cumprod(A * 0.01 + 1.0, axis=-1))
    s = stats()
    assert s["fallback_to_reference"] == 0
    if fuse_scans:
        assert s["intrinsics_launched"] == 0 and s["kernels_launched"] == 3
    else:
        assert s["intrinsics_launched"] == 2 and s["kernels_launched"] == 3


def test_scan_keeps_a_producer_the_program_still_reads(stats):
    A = _m((7, 5), np.float64)
    with ps.config.override(backend="cpu"):
        a = ps.asarray(A)
        x = a * 2.0
        r = ps.cumsum(x, axis=0) + x.sum()                 # x is held: stored, not fused
        y = ps.cumsum(a + 1.0)
        z = (a + 1.0).max()
        out = [v.numpy() for v in (r, y, z)]
    np.testing.assert_allclose(out[0], np.cumsum(A * 2, axis=0) + (A * 2).sum())
    np.testing.assert_allclose(out[1], np.cumsum(A + 1.0))
    np.testing.assert_allclose(out[2], (A + 1).max())


def test_scan_kernel_that_does_not_compile_falls_back(stats):
    """Complex maximum has no Numba kernel: the fused scan is evaluated with NumPy, counted."""
    Z = _m(9, np.complex128)
    with ps.config.override(backend="cpu"):
        z = ps.asarray(Z)
        out = ps.cumsum(ps.maximum(z, z * 2.0)).numpy()
    np.testing.assert_allclose(out, np.cumsum(np.maximum(Z, Z * 2.0)))
    assert stats()["fallback_to_reference"] >= 1


def test_scan_of_random_numbers_keeps_the_draw_out_of_the_scan_kernel(stats):
    """A draw has no flat element index inside a scan kernel: it is computed by its own kernel
    and the scan still compiles (no fallback)."""
    with ps.config.override(backend="cpu"):
        r = ps.random.default_rng(1).random((50, 20))
        c = ps.cumsum(r * 2.0, axis=0).numpy()
    np.testing.assert_allclose(c, np.cumsum(r.numpy() * 2.0, axis=0), rtol=1e-12)
    assert stats()["fallback_to_reference"] == 0


# ---- convolution --------------------------------------------------------------------------
@pytest.mark.parametrize("dt", [np.float64, np.float32, np.complex128])
def test_convolve_correlate(dt, backend):
    a, v = _m(9, dt), _m(4, dt)
    for mode in ("full", "same", "valid"):
        _same(ps.convolve(ps.asarray(a), ps.asarray(v), mode), np.convolve(a, v, mode))
        _same(ps.correlate(ps.asarray(a), ps.asarray(v), mode), np.correlate(a, v, mode))
        _same(ps.convolve(ps.asarray(v), ps.asarray(a), mode), np.convolve(v, a, mode))
    with pytest.raises(ps.ArgumentError):
        ps.convolve(ps.asarray(a), ps.asarray(v), "wrap")


# ---- complex dtypes -----------------------------------------------------------------------
@pytest.mark.parametrize("dt", [np.complex64, np.complex128])
def test_complex_elementwise(dt, backend):
    Z, W = _m(12, dt), _m(12, dt)
    X = RNG.standard_normal(12).astype(np.float32)
    z, w, x = ps.asarray(Z), ps.asarray(W), ps.asarray(X)
    for f in (lambda a, b: a + b, lambda a, b: a - b, lambda a, b: a * b,
              lambda a, b: a / b):
        _same(f(z, w), f(Z, W))
        _same(f(z, x), f(Z, X))                           # promotion with a real array
        _same(f(x, z), f(X, Z))
        _same(f(z, 2.5), f(Z, 2.5))                       # weak Python scalars
        _same(f(z, 1 - 2j), f(Z, 1 - 2j))
    _same(x * 1j, X * 1j)                                 # real array * complex scalar
    for name in ("abs", "real", "imag", "conj", "angle", "exp", "sqrt", "negative", "square"):
        _same(getattr(ps, name)(z), getattr(np, name)(Z))
    _same(z.real, Z.real)
    _same(z.imag, Z.imag)
    _same(z.conj(), Z.conj())
    _same(np.conj(z), np.conj(Z))
    _same(np.real(z), np.real(Z))
    _same(z.sum(), Z.sum())
    _same(z.astype(np.float64), Z.real.astype(np.float64))
    _same(x.astype(dt), X.astype(dt))
    r = ps.asarray(Z)
    assert repr(r).startswith("streamrt.array([") and "j" in repr(r)
    assert complex(z[0]) == complex(Z[0])


def test_complex_chain_fuses_into_one_kernel(stats):
    Z = _m(64, np.complex128)
    with ps.config.override(backend="cpu"):
        z = ps.asarray(Z)
        r = ps.abs(z * z.conj() + 1j) + ps.angle(z) * 2.0
        out = r.numpy()
    np.testing.assert_allclose(out, np.abs(Z * Z.conj() + 1j) + np.angle(Z) * 2)
    s = stats()
    assert s["kernels_launched"] == 1 and s["fallback_to_reference"] == 0


# ---- FFT ----------------------------------------------------------------------------------
@pytest.mark.parametrize("dt", [np.float32, np.float64, np.complex64, np.complex128])
def test_fft_family(dt, backend):
    X = _m((4, 16), dt)
    x = ps.asarray(X)
    for norm in (None, "ortho", "forward"):
        for f in ("fft", "ifft"):
            _same(getattr(ps.fft, f)(x, norm=norm), getattr(np.fft, f)(X, norm=norm), dt)
            _same(getattr(ps.fft, f)(x, n=10, axis=0, norm=norm),
                  getattr(np.fft, f)(X, n=10, axis=0, norm=norm), dt)
        for f in ("fft2", "ifft2"):
            _same(getattr(ps.fft, f)(x, norm=norm), getattr(np.fft, f)(X, norm=norm), dt)
        _same(ps.fft.fft2(x, s=(3, 8)), np.fft.fft2(X, s=(3, 8)), dt)
    if np.dtype(dt).kind == "f":
        _same(ps.fft.rfft(x), np.fft.rfft(X), dt)
        _same(ps.fft.rfft(x, n=11, axis=0), np.fft.rfft(X, n=11, axis=0), dt)
        _same(ps.fft.irfft(ps.fft.rfft(x)), np.fft.irfft(np.fft.rfft(X)), dt)
        _same(ps.fft.irfft(ps.fft.rfft(x), n=16, norm="ortho"),
              np.fft.irfft(np.fft.rfft(X), n=16, norm="ortho"), dt)
        with pytest.raises(ps.DTypeError):
            ps.fft.rfft(x * 1j)
    _same(np.fft.fft(x), np.fft.fft(X), dt)               # __array_function__
    with pytest.raises(ps.ArgumentError):
        ps.fft.fft(x, norm="bogus")


def test_fft_spectrum_fuses_around_the_transform(stats):
    """window * signal -> one kernel; the FFT; |F|^2 and the phase -> one kernel."""
    X = RNG.standard_normal(64)
    win = np.hanning(64)
    with ps.config.override(backend="cpu"):
        x = ps.asarray(X)
        F = ps.fft.rfft(x * ps.asarray(win) + 0.5)
        p = ps.abs(F) ** 2 + ps.angle(F)
        out = p.numpy()
    ref = np.fft.rfft(X * win + 0.5)
    np.testing.assert_allclose(out, np.abs(ref) ** 2 + np.angle(ref), atol=1e-9)
    s = stats()
    assert s["intrinsics_launched"] == 1 and s["kernels_launched"] == 2


# ---- OpenCL (PoCL): intrinsics and complex kernels as counted host round trips -------------
@pytest.mark.skipif(not OPENCL, reason="no OpenCL device")
def test_opencl_intrinsics_round_trip(stats):
    A = (_m((6, 6), np.float32) + 6 * np.eye(6)).astype(np.float32)
    b = _m(6, np.float32)
    Z = _m(16, np.complex64)
    with ps.config.override(backend="opencl"):
        a = ps.asarray(A)
        x = ps.linalg.solve(a * 2.0, ps.asarray(b)) + 1.0
        m = (a + 1.0) @ a
        srt = ps.sort(a, axis=0)
        cs = ps.cumsum(a - 1.0, axis=1)
        sp = ps.abs(ps.fft.fft(ps.asarray(Z))) * 2.0
        zz = ps.asarray(Z) * ps.asarray(Z) + 1.0
        outs = [r.numpy() for r in (x, m, srt, cs, sp, zz)]
    refs = [np.linalg.solve(A * 2, b) + 1, (A + 1) @ A, np.sort(A, axis=0),
            np.cumsum(A - 1, axis=1), np.abs(np.fft.fft(Z)) * 2, Z * Z + 1]
    for o, r in zip(outs, refs):
        assert o.dtype == r.dtype
        np.testing.assert_allclose(o, r, rtol=2e-4, atol=2e-4)
    s = stats()
    assert s["intrinsics_launched"] == 5
    assert s["host_round_trips"] >= 6                    # 5 intrinsics + the complex kernels
    assert s["bytes_to_host"] > 0 and s["bytes_to_device"] > 0


# ---- CUDA intrinsics (executors/cuda_intrinsics.py) over a NumPy stand-in for CuPy ---------
class _Ptr:
    def __init__(self, arr, off=0):
        self.arr, self.off = arr, off

    def __add__(self, n):
        return _Ptr(self.arr, self.off + n)


class _Buf:
    def __init__(self, nbytes):
        self.arr = np.zeros(max(1, nbytes), np.uint8)
        self.data = _Ptr(self.arr)


class _FakeCupy:
    """CuPy's API as used by cuda_intrinsics, computed by NumPy over byte buffers."""
    def __getattr__(self, name):
        return getattr(np, name)

    @staticmethod
    def ndarray(shape, dtype, memptr, strides=None):
        return np.ndarray(shape, dtype, buffer=memptr.arr, offset=memptr.off, strides=strides)


class _Ctx:
    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False


class _FakeCudaExecutor:
    import threading as _t
    mem_lock = _t.RLock()

    def __init__(self):
        self.cp, self.dev, self.stream = _FakeCupy(), _Ctx(), _Ctx()
        self.bufs = {}

    def device_buffer(self, port):
        v = np.ascontiguousarray(port.host_value())
        b = _Buf(v.nbytes)
        b.arr[:v.nbytes] = v.reshape(-1).view(np.uint8)
        return b

    def output_buffer(self, port):
        class Out:
            pass
        o = Out()
        o.buf = _Buf(port.size * port.dtype.itemsize)
        self.bufs[port.id] = o
        return o


def test_cuda_intrinsics_over_device_buffers(monkeypatch):
    import sys
    import types

    import scipy.linalg

    from streamrt.backends.cuda import intrinsics as cuda_intrinsics
    from streamrt.compiler.sequence import Program
    cupyx = types.ModuleType("cupyx")
    cupyx.errstate = lambda **kw: _Ctx()
    cupyx.scipy = types.ModuleType("cupyx.scipy")
    cupyx.scipy.linalg = scipy.linalg
    monkeypatch.setitem(sys.modules, "cupyx", cupyx)
    monkeypatch.setitem(sys.modules, "cupyx.scipy", cupyx.scipy)
    monkeypatch.setitem(sys.modules, "cupyx.scipy.linalg", scipy.linalg)
    A = (_m((5, 5), np.float64) + 5 * np.eye(5))
    a = ps.asarray(A)
    b = ps.asarray(_m(5, np.float64))
    cases = [(a.T @ a[:, ::-1], A.T @ A[:, ::-1]),
             (ps.linalg.solve(a, b), np.linalg.solve(A, b.numpy())),
             (ps.linalg.lu_factor(a)[0], sl.lu_factor(A)[0]),
             (ps.sort(a[1:, :3], axis=0), np.sort(A[1:, :3], axis=0)),
             (ps.fft.rfft(a[2]), np.fft.rfft(A[2]))]
    ex = _FakeCudaExecutor()
    for r, ref in cases:
        p = r._port.inputs[0] if r._port.kind == "view" else r._port
        for i in p.inputs:
            ps.Array._wrap(i).numpy()                      # inputs computed (on the host)
        assert len(p.inputs) >= 1
        assert cuda_intrinsics.run(ex, Program("intrinsic", [p], list(p.inputs), [p]))
        got = ex.cp.ndarray(p.shape, p.dtype, ex.bufs[p.id].buf.data)
        want = np.asarray(ref) if r._port.kind != "view" else None
        if want is not None:
            np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
        else:
            np.testing.assert_allclose(got[:25].reshape(5, 5), ref, rtol=1e-10)


# ---- ordinary NumPy programs, run with ``import streamrt as np`` -------------------------
def _cg(np, A, b, iters=25):
    """Conjugate gradients, written for NumPy."""
    x = np.zeros_like(b)
    r = b - A @ x
    p = r
    rs = np.dot(r, r)
    for _ in range(iters):
        Ap = A @ p
        alpha = rs / np.dot(p, Ap)
        x = x + alpha * p
        r = r - alpha * Ap
        rs_new = np.dot(r, r)
        p = r + (rs_new / rs) * p
        rs = rs_new
    return x, np.linalg.norm(A @ x - b)


def _lowpass(np, signal, keep):
    """FFT low-pass filter and spectrum statistics, written for NumPy."""
    F = np.fft.rfft(signal)
    k = np.arange(F.shape[-1])
    F = np.where(k < keep, F, 0)
    power = np.abs(F) ** 2
    smooth = np.fft.irfft(F, n=signal.shape[-1])
    return smooth, power.sum(), np.angle(F[1]), np.cumsum(power)[-1], np.sort(smooth)[::-1][:3]


def test_numpy_programs_run_unchanged(backend):
    rng = np.random.default_rng(3)
    M = rng.standard_normal((20, 20))
    A = M @ M.T + 20 * np.eye(20)
    b = rng.standard_normal(20)
    x_ref, res_ref = _cg(np, A, b)
    x, res = _cg(ps, ps.asarray(A), ps.asarray(b))
    np.testing.assert_allclose(x.numpy(), x_ref, rtol=1e-9, atol=1e-12)
    assert float(res) < 1e-6 and abs(float(res) - res_ref) < 1e-8
    sig = np.sin(np.linspace(0, 20, 128)) + 0.3 * rng.standard_normal(128)
    ref = _lowpass(np, sig, 10)
    got = _lowpass(ps, ps.asarray(sig), 10)
    for g, r in zip(got, ref):
        np.testing.assert_allclose(np.asarray(g), r, rtol=1e-9, atol=1e-9)


def test_array_api_linalg_helpers(backend):
    rng = np.random.default_rng(7)
    a, b = rng.random((3, 4)), rng.random((3, 4))
    m = rng.random((4, 5))
    np.testing.assert_allclose(np.asarray(ps.vecdot(ps.asarray(a), ps.asarray(b))),
                               (a * b).sum(-1), rtol=1e-12)
    for k in (-2, 0, 1, 7):
        np.testing.assert_allclose(float(ps.trace(ps.asarray(m), offset=k)),
                                   np.trace(m, offset=k), rtol=1e-12)
    np.testing.assert_allclose(float(ps.linalg.vector_norm(ps.asarray(m))),
                               np.linalg.norm(m), rtol=1e-12)
    np.testing.assert_allclose(float(ps.linalg.matrix_norm(ps.asarray(m))),
                               np.linalg.norm(m), rtol=1e-12)
    np.testing.assert_array_equal(np.asarray(ps.matrix_transpose(ps.asarray(m))), m.T)
    with pytest.raises(ps.ShapeError):
        ps.vecdot(ps.asarray(a), ps.asarray(m))


@pytest.mark.parametrize("eager", [0, 1 << 16])
def test_linalg_functions_follow_numpys_definitions(eager):
    """einsum(dtype=) sums in that dtype (int32 operands do not wrap); vector_norm over a
    tuple of axes is a vector norm; linalg.trace takes the last two axes; pinv's default
    cutoff is rcond=1e-15; multi_dot of two arrays is dot and of three needs 2-D middles;
    linalg.outer takes 1-D arrays only -- recorded and on the NumPy tier."""
    rng = np.random.default_rng(3)
    with ps.config.override(eager_elements=eager):
        big = np.full(70_000, 2 ** 20, np.int32)
        for sub, ops in (("i,i", (big, big)), ("i->", (np.full(4, 2 ** 30, np.int32),))):
            got = ps.einsum(sub, *[ps.asarray(o) for o in ops], dtype=np.float64)
            assert float(got) == float(np.einsum(sub, *ops, dtype=np.float64))
        x = rng.standard_normal((3, 4, 5))
        for ordv in (2, 1, np.inf, -np.inf, 0, 3):
            for axis in ((0, 1), (1, 2), (0, 2), (-1, 0)):
                want = np.linalg.vector_norm(x, ord=ordv, axis=axis, keepdims=True)
                got = ps.linalg.vector_norm(ps.asarray(x), ord=ordv, axis=axis, keepdims=True)
                np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12)
        np.testing.assert_allclose(np.asarray(ps.linalg.trace(ps.asarray(x), offset=1)),
                                   np.linalg.trace(x, offset=1), rtol=1e-12)
        m = np.diag(np.r_[np.ones(9), 1e-14])
        np.testing.assert_allclose(np.asarray(ps.linalg.pinv(ps.asarray(m))),
                                   np.linalg.pinv(m), rtol=1e-9)
        np.testing.assert_allclose(np.asarray(ps.linalg.pinv(ps.asarray(m), rtol=None)),
                                   np.linalg.pinv(m, rtol=None), rtol=1e-9)
        a, b = rng.standard_normal((2, 2, 3)), rng.standard_normal((2, 3, 2))
        got = ps.linalg.multi_dot([ps.asarray(a), ps.asarray(b)])
        np.testing.assert_allclose(np.asarray(got), np.linalg.multi_dot([a, b]), rtol=1e-12)
        c = ps.asarray(rng.standard_normal((2, 2, 2)))
        with pytest.raises(np.linalg.LinAlgError):
            ps.linalg.multi_dot([c, c, c])
        with pytest.raises(ValueError):
            ps.linalg.outer(ps.asarray(np.ones((3, 3))), ps.asarray(np.ones(3)))
