"""``xp.fft``: the Array API fft extension (2023.12) over ``ps.fft``: keyword-only ``n``,
``axis``, ``s``, ``axes``, ``norm`` (default ``"backward"``) and ``device``. Every transform is
one intrinsic (numpy.fft on the CPU), recorded like any op; the shifts are lazy rolls;
``fftfreq``/``rfftfreq`` are host constants."""
from __future__ import annotations

import numpy as np

from .. import fft as _F
from ..core.errors import ArgumentError, callsite, record_error
from ..frontend import creation as _c

__all__ = ["fft", "ifft", "fftn", "ifftn", "rfft", "irfft", "rfftn", "irfftn", "hfft", "ihfft",
           "fftfreq", "rfftfreq", "fftshift", "ifftshift"]


def fft(x, /, *, n=None, axis=-1, norm="backward"):
    return _F.fft(x, n=n, axis=axis, norm=norm)


def ifft(x, /, *, n=None, axis=-1, norm="backward"):
    return _F.ifft(x, n=n, axis=axis, norm=norm)


def fftn(x, /, *, s=None, axes=None, norm="backward"):
    return _F.fftn(x, s=s, axes=axes, norm=norm)


def ifftn(x, /, *, s=None, axes=None, norm="backward"):
    return _F.ifftn(x, s=s, axes=axes, norm=norm)


def rfft(x, /, *, n=None, axis=-1, norm="backward"):
    return _F.rfft(x, n=n, axis=axis, norm=norm)


def irfft(x, /, *, n=None, axis=-1, norm="backward"):
    return _F.irfft(x, n=n, axis=axis, norm=norm)


def rfftn(x, /, *, s=None, axes=None, norm="backward"):
    return _F.rfftn(x, s=s, axes=axes, norm=norm)


def irfftn(x, /, *, s=None, axes=None, norm="backward"):
    return _F.irfftn(x, s=s, axes=axes, norm=norm)


def hfft(x, /, *, n=None, axis=-1, norm="backward"):
    return _F.hfft(x, n=n, axis=axis, norm=norm)


def ihfft(x, /, *, n=None, axis=-1, norm="backward"):
    return _F.ihfft(x, n=n, axis=axis, norm=norm)


def _dev(device, site):
    if device not in (None, "cpu"):
        raise record_error(ArgumentError, f"unsupported device {device!r}", site)


def fftfreq(n, /, *, d=1.0, device=None):
    _dev(device, callsite())
    return _c.asarray(np.fft.fftfreq(n, d))


def rfftfreq(n, /, *, d=1.0, device=None):
    _dev(device, callsite())
    return _c.asarray(np.fft.rfftfreq(n, d))


def fftshift(x, /, *, axes=None):
    return _F.fftshift(x, axes=axes)


def ifftshift(x, /, *, axes=None):
    return _F.ifftshift(x, axes=axes)
