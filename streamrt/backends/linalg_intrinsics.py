"""Linear algebra, FFT, sort, scan and convolution intrinsics: (port, input values) in, the
output value out. Each is written once over an array module ``xp`` (NumPy + SciPy on the host,
CuPy + cupyx.scipy on CUDA: executors/cuda_intrinsics.py) and its ``params`` (static, hashable:
they enter the trace key). Multi-output results (qr, lu_factor) are *packed* into one flat
buffer the frontend reads back through views."""
from __future__ import annotations

import numpy as np

from ..core.errors import LinAlgError


class HostModules:
    """The array modules a CPU intrinsic runs with."""
    np = np

    @property
    def linalg_sp(self):
        import scipy.linalg     # (~100 ms to import: with the first call that needs it)
        return scipy.linalg


HOST = HostModules()


def _linalg_error(p, e):
    err = LinAlgError(f"{p.site}: {e} (in numpy.linalg.{p.op.split('_', 1)[-1]} recorded here)")
    err.site = p.site
    return err


# ---- products -----------------------------------------------------------------------------
def matmul(m, p, a, b):
    return m.np.matmul(a, b)


def tensordot(m, p, a, b):
    (ax_a, ax_b), = p.params
    return m.np.tensordot(a, b, axes=(list(ax_a), list(ax_b)))


def einsum(m, p, *ops):
    subscripts, = p.params
    if m.np is np:
        return np.einsum(subscripts, *ops, optimize=len(ops) > 2)
    return m.np.einsum(subscripts, *ops)


# ---- linalg -------------------------------------------------------------------------------
def _checked(m, p, fn, *args, **kw):
    try:
        return fn(*args, **kw)
    except np.linalg.LinAlgError as e:
        raise _linalg_error(p, e) from None
    except Exception as e:  # noqa: BLE001 - CuPy's LinAlgError is its own class
        if type(e).__name__ == "LinAlgError":
            raise _linalg_error(p, e) from None
        raise


def linalg_solve(m, p, a, b):
    return _checked(m, p, m.np.linalg.solve, a, b)


def linalg_inv(m, p, a):
    return _checked(m, p, m.np.linalg.inv, a)


def linalg_det(m, p, a):
    return m.np.linalg.det(a)


def linalg_cholesky(m, p, a):
    upper, = p.params
    L = _checked(m, p, m.np.linalg.cholesky, a)
    return m.np.conj(m.np.swapaxes(L, -1, -2)) if upper else L


def linalg_svdvals(m, p, a):
    return _checked(m, p, m.np.linalg.svd, a, compute_uv=False)


def linalg_qr(m, p, a):
    """Q and R packed per matrix: (..., M*K + K*N) (mode 'r': R only)."""
    mode, = p.params
    xp = m.np
    if mode == "r":
        r = _checked(m, p, xp.linalg.qr, a, mode="r")
        return r.reshape(r.shape[:-2] + (-1,))
    q, r = _checked(m, p, xp.linalg.qr, a, mode=mode)
    return xp.concatenate([q.reshape(q.shape[:-2] + (-1,)), r.reshape(r.shape[:-2] + (-1,))],
                          axis=-1)


def linalg_eigh(m, p, a):
    """Eigenvalues (as the vectors' dtype) then eigenvectors, per matrix."""
    uplo, = p.params
    w, v = _checked(m, p, m.np.linalg.eigh, a, UPLO=uplo)
    return m.np.concatenate([w.astype(v.dtype), v.reshape(v.shape[:-2] + (-1,))], axis=-1)


def linalg_svd(m, p, a):
    """U, S (as U's dtype), Vh packed per matrix."""
    full, = p.params
    u, s, vh = _checked(m, p, m.np.linalg.svd, a, full_matrices=full)
    xp = m.np
    return xp.concatenate([u.reshape(u.shape[:-2] + (-1,)), s.astype(u.dtype),
                           vh.reshape(vh.shape[:-2] + (-1,))], axis=-1)


def linalg_slogdet(m, p, a):
    """(sign, logabsdet) packed in the input's dtype: (..., 2)."""
    sign, logdet = m.np.linalg.slogdet(a)
    return m.np.stack([sign, logdet.astype(sign.dtype)], axis=-1)


def linalg_pinv(m, p, a):
    rcond, hermitian = p.params
    return _checked(m, p, m.np.linalg.pinv, a, rcond, hermitian=hermitian) if m.np is np \
        else _checked(m, p, m.np.linalg.pinv, a, rcond)


def linalg_lu_factor(m, p, a):
    """SciPy's lu_factor: LU (n*n) then the pivots (n, as the LU's dtype) in one buffer."""
    lu, piv = _checked(m, p, m.linalg_sp.lu_factor, a, check_finite=False)
    xp = m.np
    return xp.concatenate([lu.reshape(-1), piv.astype(lu.dtype)])


def linalg_lu_solve(m, p, lu, piv, b):
    trans, = p.params
    return _checked(m, p, m.linalg_sp.lu_solve, (lu, piv), b, trans=trans, check_finite=False)


# ---- sort and scans -----------------------------------------------------------------------
def sort(m, p, a):
    axis, kind = p.params
    if m.np is np:
        return np.sort(a, axis=axis, kind=kind)
    return m.np.sort(a, axis=axis)           # CuPy's sort is stable


def argsort(m, p, a):
    axis, kind = p.params
    if m.np is np:
        return np.argsort(a, axis=axis, kind=kind)
    return m.np.argsort(a, axis=axis)


def cumsum(m, p, a):
    axis, = p.params
    return m.np.cumsum(a, axis=axis, dtype=p.dtype)


def cumprod(m, p, a):
    axis, = p.params
    return m.np.cumprod(a, axis=axis, dtype=p.dtype)


# ---- FFT ----------------------------------------------------------------------------------
def fft(m, p, a):
    """One intrinsic for the family: params (function name, n or s, axis or axes, norm)."""
    name, n, axes, norm = p.params
    f = getattr(m.np.fft, name)
    if name in ("fft2", "ifft2", "fftn", "ifftn", "rfft2", "irfft2", "rfftn", "irfftn"):
        return f(a, s=n, axes=axes, norm=norm)
    return f(a, n=n, axis=axes, norm=norm)


# ---- convolution --------------------------------------------------------------------------
def convolve(m, p, a, v):
    mode, = p.params
    return m.np.convolve(a, v, mode=mode)


def correlate(m, p, a, v):
    mode, = p.params
    return m.np.correlate(a, v, mode=mode)


GENERIC = {
    "matmul": matmul, "tensordot": tensordot, "einsum": einsum,
    "linalg_solve": linalg_solve, "linalg_inv": linalg_inv, "linalg_det": linalg_det,
    "linalg_cholesky": linalg_cholesky, "linalg_svdvals": linalg_svdvals,
    "linalg_qr": linalg_qr, "linalg_lu_factor": linalg_lu_factor,
    "linalg_lu_solve": linalg_lu_solve, "linalg_eigh": linalg_eigh, "linalg_svd": linalg_svd,
    "linalg_slogdet": linalg_slogdet, "linalg_pinv": linalg_pinv,
    "sort": sort, "argsort": argsort, "cumsum": cumsum, "cumprod": cumprod,
    "fft": fft, "convolve": convolve, "correlate": correlate,
}


def _host(f):
    def run(p, *args):
        return f(HOST, p, *args)
    run.__name__ = f.__name__
    return run


HOST_INTRINSICS = {k: _host(f) for k, f in GENERIC.items()}
