"""``ps.fft``: fft, ifft, rfft, irfft, hfft, ihfft, fft2, ifft2, fftn, ifftn, rfftn, irfftn
(NumPy's signatures, ``norm=`` 'backward' / 'ortho' / 'forward'), each one intrinsic (numpy.fft / pocketfft on the CPU,
cupy.fft / cuFFT on CUDA, a counted host round trip on OpenCL); fftfreq and rfftfreq are
host constants. Dtypes are NumPy 2's: float32 and complex64 give complex64 (irfft: float32),
everything else complex128 (float64). fftshift and ifftshift are lazy rolls. The element-wise work before and after a transform
(windowing, ``abs``, ``angle``, scaling) fuses into kernels around it."""
from __future__ import annotations

import builtins
import functools

import numpy as np

from .core import dtypes as D
from .core.errors import (ArgumentError, DTypeError, ShapeError, callsite, record_error,
                          StreamrtAxisError)
from .frontend.array import Array, HANDLED_FUNCTIONS, const_port, finish_out, twin_namespace
from .frontend.linalg import _intrinsic, _port, _wrap
from .frontend.shape import roll as _roll

__all__ = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fft2", "ifft2", "fftn", "ifftn",
           "rfftn", "irfftn", "rfft2", "irfft2", "fftfreq", "rfftfreq", "fftshift", "ifftshift"]

_NORMS = (None, "backward", "ortho", "forward")


@functools.lru_cache(maxsize=64)
def _out_dtype(name, dt):
    f = getattr(np.fft, name)
    x = np.ones((2, 2) if name.endswith(("2", "n")) else 2, dt)
    return D.canonical(f(x).dtype)


def _check(name, p, norm, site):
    if norm not in _NORMS:
        raise record_error(ArgumentError, f'{name}: Invalid norm value {norm}; should be '
                           '"backward", "ortho" or "forward".', site)
    if name.startswith(("r", "ih")) and p.dtype.kind == "c":
        raise record_error(DTypeError, f"{name}: input must be real (got {p.dtype})", site)
    if not p.shape:
        raise record_error(ShapeError, f"{name}: input must be at least 1-dimensional", site)


def _axis(name, axis, nd, site):
    if not isinstance(axis, (int, np.integer)) or not -nd <= axis < nd:
        raise record_error(StreamrtAxisError, f"{name}: axis {axis} is out of bounds for array "
                           f"of dimension {nd}", site)
    return int(axis) % nd


def _one(name, a, n, axis, norm, site):
    p = _port(a, site)
    _check(name, p, norm, site)
    ax = _axis(name, axis, len(p.shape), site)
    m = p.shape[ax]
    if n is not None and (not isinstance(n, (int, np.integer)) or n < 1):
        raise record_error(ArgumentError, f"{name}: Invalid number of FFT data points ({n}) "
                           "specified.", site)
    if name in ("irfft", "hfft"):
        nn = int(n) if n is not None else 2 * (m - 1)
        if nn < 1:
            raise record_error(ArgumentError, f"{name}: Invalid number of FFT data points "
                               f"({nn}) specified.", site)
        out_len = nn
    else:
        nn = int(n) if n is not None else m
        if nn < 1:          # an empty axis: NumPy's ValueError, at the call
            raise record_error(ValueError, f"{name}: Invalid number of FFT data points "
                               f"({nn}) specified.", site)
        out_len = nn // 2 + 1 if name in ("rfft", "ihfft") else nn
    shape = p.shape[:ax] + (out_len,) + p.shape[ax + 1:]
    dt = _out_dtype(name, p.dtype)
    return _intrinsic("fft", dt, shape, (p,), (name, nn if n is not None else None, ax, norm),
                      site)


def fft(a, n=None, axis=-1, norm=None, out=None):
    """1-D discrete Fourier transform along ``axis``."""
    site = callsite()
    return finish_out("fft", _one("fft", a, n, axis, norm, site), out, True, "same_kind", site)


def ifft(a, n=None, axis=-1, norm=None, out=None):
    """1-D inverse transform along ``axis``."""
    site = callsite()
    return finish_out("ifft", _one("ifft", a, n, axis, norm, site), out, True, "same_kind", site)


def rfft(a, n=None, axis=-1, norm=None, out=None):
    """1-D transform of a real input (n//2 + 1 complex outputs)."""
    site = callsite()
    return finish_out("rfft", _one("rfft", a, n, axis, norm, site), out, True, "same_kind", site)


def irfft(a, n=None, axis=-1, norm=None, out=None):
    """Inverse of rfft: n (default 2*(m-1)) real outputs."""
    site = callsite()
    return finish_out("irfft", _one("irfft", a, n, axis, norm, site), out, True, "same_kind", site)


def _multi(name, a, s, axes, norm, site):
    p = _port(a, site)
    _check(name, p, norm, site)
    nd = len(p.shape)
    if axes is None:
        axes = tuple(range(nd)) if s is None else tuple(range(nd - len(s), nd))
    axes = tuple(_axis(name, x, nd, site) for x in axes)
    if not axes:
        if name in ("rfftn", "irfftn"):
            raise record_error(ShapeError, f"{name}: at least one axis to transform is needed",
                               site)
        return a if isinstance(a, Array) else _wrap(p)   # (NumPy: the input itself)
    if len(set(axes)) != len(axes):
        raise record_error(ArgumentError, f"{name}: repeated axes are not supported", site)
    if s is not None:
        s = tuple(int(v) for v in s)
        if len(s) != len(axes):
            raise record_error(ShapeError, f"{name}: Shape and axes have different lengths.",
                               site)
    shape = list(p.shape)
    for i, ax in enumerate(axes):
        if s is not None:
            shape[ax] = s[i]
        if shape[ax] < 1 and not name.startswith("irfft"):   # NumPy's ValueError, at the call
            raise record_error(ValueError, f"{name}: Invalid number of FFT data points "
                               f"({shape[ax]}) specified.", site)
    if name == "rfftn" and axes:            # the last transformed axis: n//2 + 1 outputs
        shape[axes[-1]] = shape[axes[-1]] // 2 + 1
    elif name == "irfftn" and axes:          # ... and n (default 2*(m - 1)) real ones
        shape[axes[-1]] = s[-1] if s is not None else 2 * (p.shape[axes[-1]] - 1)
    if builtins.any(v < 1 for i, v in enumerate(shape) if i in axes):
        raise record_error(ValueError, f"{name}: Invalid number of FFT data points "
                           f"({tuple(shape[a] for a in axes)}) specified.", site)
    dt = _out_dtype(name, p.dtype)
    return _intrinsic("fft", dt, tuple(shape), (p,), (name, s, axes, norm), site)


def hfft(a, n=None, axis=-1, norm=None, out=None):
    """Transform of a Hermitian-symmetric signal (its half, complex): n (default 2*(m-1)) real
    outputs."""
    site = callsite()
    return finish_out("hfft", _one("hfft", a, n, axis, norm, site), out, True, "same_kind", site)


def ihfft(a, n=None, axis=-1, norm=None, out=None):
    """Inverse of hfft: the n//2 + 1 complex outputs of a real input."""
    site = callsite()
    return finish_out("ihfft", _one("ihfft", a, n, axis, norm, site), out, True, "same_kind",
                      site)


def fft2(a, s=None, axes=(-2, -1), norm=None, out=None):
    """2-D transform over ``axes`` (default the last two)."""
    site = callsite()
    return finish_out("fft2", _multi("fft2", a, s, axes, norm, site), out, True, "same_kind",
                      site)


def ifft2(a, s=None, axes=(-2, -1), norm=None, out=None):
    """2-D inverse transform over ``axes``."""
    site = callsite()
    return finish_out("ifft2", _multi("ifft2", a, s, axes, norm, site), out, True, "same_kind",
                      site)


def fftn(a, s=None, axes=None, norm=None, out=None):
    """N-D transform (default: all axes)."""
    site = callsite()
    return finish_out("fftn", _multi("fftn", a, s, axes, norm, site), out, True, "same_kind",
                      site)


def ifftn(a, s=None, axes=None, norm=None, out=None):
    """N-D inverse transform."""
    site = callsite()
    return finish_out("ifftn", _multi("ifftn", a, s, axes, norm, site), out, True, "same_kind",
                      site)


def rfft2(a, s=None, axes=(-2, -1), norm=None, out=None):
    """2-D transform of a real input over ``axes`` (default the last two)."""
    site = callsite()
    return finish_out("rfft2", _multi("rfftn", a, s, axes, norm, site), out, True,
                      "same_kind", site)


def irfft2(a, s=None, axes=(-2, -1), norm=None, out=None):
    """Inverse of rfft2: real outputs over ``axes`` (default the last two)."""
    site = callsite()
    return finish_out("irfft2", _multi("irfftn", a, s, axes, norm, site), out, True,
                      "same_kind", site)


def rfftn(a, s=None, axes=None, norm=None, out=None):
    """N-D transform of a real input (the last transformed axis: n//2 + 1 outputs)."""
    site = callsite()
    return finish_out("rfftn", _multi("rfftn", a, s, axes, norm, site), out, True, "same_kind",
                      site)


def irfftn(a, s=None, axes=None, norm=None, out=None):
    """Inverse of rfftn: real outputs (the last axis: s[-1], default 2*(m-1))."""
    site = callsite()
    return finish_out("irfftn", _multi("irfftn", a, s, axes, norm, site), out, True,
                      "same_kind", site)


def _shift(name, x, axes, sign, site):
    p = _port(x, site)
    nd = len(p.shape)
    if axes is None:
        axes = tuple(range(nd))
    elif isinstance(axes, (int, np.integer)):
        axes = (axes,)
    axes = tuple(_axis(name, a, nd, site) for a in axes)
    if not axes:
        return _wrap(p)
    shifts = tuple(sign * (p.shape[a] // 2) for a in axes)
    return _roll(_wrap(p), shifts, axes)


def fftshift(x, axes=None):
    """Zero frequency to the centre: a roll by n//2 along ``axes`` (default all; lazy)."""
    return _shift("fftshift", x, axes, 1, callsite())


def ifftshift(x, axes=None):
    """Inverse of fftshift: a roll by -(n//2) (lazy)."""
    return _shift("ifftshift", x, axes, -1, callsite())


def fftfreq(n, d=1.0, device=None):
    """Sample frequencies (a host constant)."""
    return _wrap(const_port(np.fft.fftfreq(n, d), callsite()))


def rfftfreq(n, d=1.0, device=None):
    """Sample frequencies of rfft (a host constant)."""
    return _wrap(const_port(np.fft.rfftfreq(n, d), callsite()))


for _n in ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fft2", "ifft2", "fftn", "ifftn",
           "rfftn", "irfftn", "rfft2", "irfft2", "fftshift", "ifftshift"):
    HANDLED_FUNCTIONS[_n] = globals()[_n]
del _n
twin_namespace(globals(), __all__, np.fft)      # the NumPy tier (frontend/array.py)
