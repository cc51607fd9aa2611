"""Scalar helpers that generated Numba kernels call where NumPy's semantics need more than one
expression (integer division by zero, floor-mod signs, shifts past the width).

Integer helpers take both operands in the op's loop dtype and may return a wider integer: the
kernel casts the result to the op's dtype, which wraps exactly as NumPy's fixed-width
arithmetic (Numba computes int8/int16/int32 in int64, the unsigned ones in uint64; both wrap
modulo 2**64, and the low bits are what a narrower dtype keeps). Signed helpers (``_i*``,
``_shl``, ``_shr``) work in int64; the unsigned ones (``_u*``) work in uint64 with uint64
constants only -- Numba turns uint64 mixed with an int64 value into float64, which would
round values above 2**53."""
import math

import numpy as np
from numba import njit

__all__ = ["_ifloordiv", "_imod", "_ffloordiv", "_fmod", "_ipow", "_irecip", "_isign", "_fsign",
           "_shl", "_shr", "_erf_libm", "_ufloordiv", "_umod", "_upow", "_urecip", "_ushl",
           "_ushr", "_ctanh"]

from .rng import *  # noqa: E402,F401,F403 - counter-based RNG helpers
from .rng import __all__ as _rng_all  # noqa: E402

__all__ += _rng_all


@njit(inline="always", cache=True, error_model="numpy")
def _erf_libm(x):
    """erf by the C library (scalar): float64, and float32 with STREAMRT_FAST_MATH=0."""
    return math.erf(x)


@njit(inline="always", cache=True, error_model="numpy")
def _ifloordiv(a, b):
    if b == 0:
        return a - a
    if b == -1:
        return -a
    return a // b


@njit(inline="always", cache=True, error_model="numpy")
def _imod(a, b):
    if b == 0:
        return a - a
    if b == -1:
        return a - a
    return a % b


@njit(inline="always", cache=True, error_model="numpy")
def _fmod(a, b):
    # NumPy's npy_divmod: result has the sign of b
    if b == 0:
        return a * np.nan
    m = np.fmod(a, b)
    if m != 0:
        if (b < 0) != (m < 0):
            m += b
    else:
        m = math.copysign(0.0, b)
    return m


@njit(inline="always", cache=True, error_model="numpy")
def _ffloordiv(a, b):
    if b == 0:
        return a / b
    m = np.fmod(a, b)
    div = (a - m) / b
    if m != 0:
        if (b < 0) != (m < 0):
            div -= 1.0
    if div != 0:
        fl = np.floor(div)
        if div - fl > 0.5:
            fl += 1.0
    else:
        fl = math.copysign(0.0, a / b)
    return fl


@njit(inline="always", cache=True, error_model="numpy")
def _ipow(a, b):
    if b < 0:
        return a - a   # NumPy raises for negative integer powers; inside a kernel we give 0
    r = a - a + 1
    base = a
    e = b
    while e > 0:
        if e & 1:
            r = r * base
        base = base * base
        e >>= 1
    return r


@njit(inline="always", cache=True, error_model="numpy")
def _irecip(a):
    if a == 1:
        return a
    if a == -1:
        return a
    return a - a


@njit(inline="always", cache=True, error_model="numpy")
def _isign(a):
    return (a > 0) - (a < 0)


@njit(inline="always", cache=True, error_model="numpy")
def _fsign(a):
    if a > 0:
        return 1.0     # not a - a + 1: inf - inf is nan
    if a < 0:
        return -1.0
    return a   # 0 -> 0, nan -> nan


@njit(inline="always", cache=True, error_model="numpy")
def _ctanh(z):
    """Complex tanh by Kahan's formulation (FreeBSD's ctanh): Numba's own overflows to nan
    for |Re z| > ~350 and rounds Re above 1 for moderate ones. Non-finite parts: C99's
    special values (the Array API's), which Numba's misses for an infinite real part."""
    x = z.real
    y = z.imag
    if math.isnan(x):
        return complex(x, y if y == 0.0 else x)
    if math.isinf(x):
        im = math.sin(y) * math.cos(y) if math.isfinite(y) else y
        return complex(math.copysign(1.0, x), math.copysign(0.0, im))
    if not math.isfinite(y):            # finite x: NaN + NaN j (x = +-0: +-0 + NaN j)
        return complex(x if x == 0.0 else y - y, y - y)
    if abs(x) >= 22.0:                  # tanh(x) is +-1 to double precision
        return complex(math.copysign(1.0, x),
                       4.0 * math.sin(y) * math.cos(y) * math.exp(-2.0 * abs(x)))
    t = math.tan(y)
    beta = 1.0 + t * t
    sh = math.sinh(x)
    rho = math.sqrt(1.0 + sh * sh)
    den = 1.0 + beta * sh * sh
    return complex(beta * rho * sh / den, t / den)


@njit(inline="always", cache=True, error_model="numpy")
def _shl(a, b, bits):
    if b < 0 or b >= bits:
        return a - a
    return a << b


@njit(inline="always", cache=True, error_model="numpy")
def _shr(a, b, bits):
    if b < 0 or b >= bits:
        return (a - a - 1) if a < 0 else a - a
    return a >> b


# ---- unsigned integers: everything in uint64 (see the module docstring) ----------------------
@njit(inline="always", cache=True, error_model="numpy")
def _ufloordiv(a, b):
    x = np.uint64(a)
    y = np.uint64(b)
    if y == x - x:
        return x - x            # NumPy: n // 0 == 0
    return x // y


@njit(inline="always", cache=True, error_model="numpy")
def _umod(a, b):
    x = np.uint64(a)
    y = np.uint64(b)
    if y == x - x:
        return x - x            # NumPy: n % 0 == 0
    return x % y


@njit(inline="always", cache=True, error_model="numpy")
def _upow(a, b):
    base = np.uint64(a)
    e = np.uint64(b)
    one = np.uint64(1)
    zero = e - e
    r = one
    while e != zero:
        if (e & one) != zero:
            r = r * base
        base = base * base
        e = e >> one
    return r


@njit(inline="always", cache=True, error_model="numpy")
def _urecip(a):
    x = np.uint64(a)
    one = np.uint64(1)
    return one if x == one else x - x      # NumPy: 1 // x, and 0 for x == 0


@njit(inline="always", cache=True, error_model="numpy")
def _ushl(a, b, bits):
    x = np.uint64(a)
    y = np.uint64(b)
    if y >= np.uint64(bits):
        return x - x
    return x << y


@njit(inline="always", cache=True, error_model="numpy")
def _ushr(a, b, bits):
    x = np.uint64(a)
    y = np.uint64(b)
    if y >= np.uint64(bits):
        return x - x
    return x >> y
