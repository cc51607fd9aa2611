"""Numba helpers of the counter-based generators (streamrt/rngcore.py defines them): generated
kernels call ``_rng_uniform_f64(g, key, ctr, i)`` and friends with the generator (0 Philox,
1 Squares), the key and counter base (int64 kernel parameters) and the element's flat index;
the quad loops of render_numba call ``_rngq_*(key, ctr, i)`` for the four Philox values
``ctr + i .. ctr + i + 3`` (``ctr + i`` a multiple of 4) from one block (float32) or two
(64-bit values), where the per-element helpers compute a block per value.
Everything is uint64 arithmetic (no float promotion of mixed signed/unsigned operands), so
LLVM vectorises the element loop; floats use only +, -, *, / and sqrt, never contracted."""
import math

import numpy as np
from numba import njit

from ...core import rngcore as R

__all__ = ["_rng_uniform_f64", "_rng_uniform_f32", "_rng_normal", "_rng_integers",
           "_rngq_uniform_f32", "_rngq_uniform_f64", "_rngq_integers",
           "_rng1_uniform_f64", "_rng1_uniform_f32", "_rng1_normal", "_rng1_integers"]

_M32 = np.uint64(R.M32)
_S32 = np.uint64(32)
_Z = np.uint64(0)
_ONE = np.uint64(1)
_PM0, _PM1 = np.uint64(R.PHILOX_M0), np.uint64(R.PHILOX_M1)
_PW0, _PW1 = np.uint64(R.PHILOX_W0), np.uint64(R.PHILOX_W1)
_HALF = np.uint64(R.HALF)
_S8, _S11, _S12, _S52 = np.uint64(8), np.uint64(11), np.uint64(12), np.uint64(52)
_TWO = np.uint64(2)
_P53, _P52, _P51, _P50 = (np.uint64(1 << 53), np.uint64(1 << 52), np.uint64(1 << 51),
                          np.uint64(1 << 50))
_SH = (np.uint64(32), np.uint64(16), np.uint64(8), np.uint64(4), np.uint64(2), np.uint64(1))
_F24 = np.float32(R.TWO_M24)
_L = R.LOG_C
_C = R.COS_C
_SN = R.SIN_C
_TWO_M53, _TWO_M52, _SQRT2, _LN2_HI, _LN2_LO, _TURN = (R.TWO_M53, R.TWO_M52, R.SQRT2, R.LN2_HI,
                                                       R.LN2_LO, R.TURN)

_opts = dict(inline="always", cache=True, error_model="numpy")


@njit(**_opts)
def _round(c0, c1, c2, c3, k0, k1):
    p0 = _PM0 * c0
    p1 = _PM1 * c2
    return (p1 >> _S32) ^ c1 ^ k0, p1 & _M32, (p0 >> _S32) ^ c3 ^ k1, p0 & _M32


@njit(**_opts)
def _philox(key, n):
    k0 = key & _M32
    k1 = key >> _S32
    c0, c1, c2, c3 = _round(n & _M32, n >> _S32, _Z, _Z, k0, k1)
    for _ in range(9):
        k0 = (k0 + _PW0) & _M32
        k1 = (k1 + _PW1) & _M32
        c0, c1, c2, c3 = _round(c0, c1, c2, c3, k0, k1)
    return c0, c1, c2, c3


@njit(**_opts)
def _rot(x):
    return (x >> _S32) | (x << _S32)


@njit(**_opts)
def _squares3(n, k):
    """The three rounds both Squares variants start with: (x, y, z)."""
    x = n * k
    y = x
    z = y + k
    x = _rot(x * x + y)
    x = _rot(x * x + z)
    x = _rot(x * x + y)
    return x, y, z


@njit(**_opts)
def _squares32(n, k):
    x, _, z = _squares3(n, k)
    return (x * x + z) >> _S32


@njit(**_opts)
def _squares64(n, k):
    x, y, z = _squares3(n, k)
    t = x * x + z
    x = _rot(t)
    return t ^ ((x * x + y) >> _S32)


@njit(**_opts)
def _bits64(g, key, ctr, i):
    n = np.uint64(ctr) + np.uint64(i)
    k = np.uint64(key)
    if g:
        return _squares64(n, k)
    w0, w1, w2, w3 = _philox(k, n >> _ONE)
    # (selects, not branches: LLVM keeps the element loop vectorised)
    return (w2 << _S32) | w3 if n & _ONE else (w0 << _S32) | w1


@njit(**_opts)
def _pair64(key, n):
    """The two 64-bit values of Philox block ``n >> 1`` (``n`` even)."""
    w0, w1, w2, w3 = _philox(np.uint64(key), n >> _ONE)
    return (w0 << _S32) | w1, (w2 << _S32) | w3


@njit(**_opts)
def _mulhi64(a, b):
    al = a & _M32
    ah = a >> _S32
    bl = b & _M32
    bh = b >> _S32
    ll = al * bl
    hl = ah * bl
    lh = al * bh
    hh = ah * bh
    cross = (ll >> _S32) + (hl & _M32) + lh
    return hh + (hl >> _S32) + (cross >> _S32)


@njit(**_opts)
def _int_of(b, low, rng):
    r = np.uint64(rng)
    off = b if r == _Z else _mulhi64(b, r)
    return np.int64(off + np.uint64(low))


@njit(**_opts)
def _rng_integers(g, key, ctr, low, rng, i):
    return _int_of(_bits64(g, key, ctr, i), low, rng)


@njit(**_opts)
def _rngq_integers(key, ctr, low, rng, i):
    n = np.uint64(ctr) + np.uint64(i)
    b0, b1 = _pair64(key, n)
    b2, b3 = _pair64(key, n + _TWO)
    return (_int_of(b0, low, rng), _int_of(b1, low, rng), _int_of(b2, low, rng),
            _int_of(b3, low, rng))


@njit(**_opts)
def _f64_of(b):
    return np.float64(b >> _S11) * _TWO_M53


@njit(**_opts)
def _rng_uniform_f64(g, key, ctr, i):
    return _f64_of(_bits64(g, key, ctr, i))


@njit(**_opts)
def _rngq_uniform_f64(key, ctr, i):
    n = np.uint64(ctr) + np.uint64(i)
    b0, b1 = _pair64(key, n)
    b2, b3 = _pair64(key, n + _TWO)
    return _f64_of(b0), _f64_of(b1), _f64_of(b2), _f64_of(b3)


@njit(**_opts)
def _f32_of(w):
    return np.float32(w >> _S8) * _F24


@njit(**_opts)
def _rng_uniform_f32(g, key, ctr, i):
    n = np.uint64(ctr) + np.uint64(i)
    k = np.uint64(key)
    if g:
        return _f32_of(_squares32(n, k))
    w0, w1, w2, w3 = _philox(k, n >> _TWO)
    # word n & 3 by two levels of selects (a chain of branches stops LLVM vectorising the
    # element loop)
    odd = (n & _ONE) != _Z
    a = w1 if odd else w0
    b = w3 if odd else w2
    return _f32_of(b if (n & _TWO) != _Z else a)


@njit(**_opts)
def _rngq_uniform_f32(key, ctr, i):
    w0, w1, w2, w3 = _philox(np.uint64(key), (np.uint64(ctr) + np.uint64(i)) >> _TWO)
    return _f32_of(w0), _f32_of(w1), _f32_of(w2), _f32_of(w3)


@njit(**_opts)
def _box_muller(b1, b2):
    k = (b1 >> _S12) + _ONE
    e = _Z
    t = k
    for sh in _SH:
        s = sh if (t >> sh) != _Z else _Z
        t = t >> s
        e = e + s
    kn = k << (_S52 - e)
    m = np.float64(kn) * _TWO_M52
    ee = np.float64(e) - 52.0
    if m > _SQRT2:
        m = m * 0.5
        ee = ee + 1.0
    f = m - 1.0
    s = f / (2.0 + f)
    z = s * s
    r = _L[10]
    r = _L[9] + z * r
    r = _L[8] + z * r
    r = _L[7] + z * r
    r = _L[6] + z * r
    r = _L[5] + z * r
    r = _L[4] + z * r
    r = _L[3] + z * r
    r = _L[2] + z * r
    r = _L[1] + z * r
    r = _L[0] + z * r
    r = z * r
    s2 = 2.0 * s
    logm = s2 + s2 * r
    lnu = ee * _LN2_HI + (ee * _LN2_LO + logm)
    rad = math.sqrt(-2.0 * lnu)
    k2 = b2 >> _S11
    kk = k2 if k2 < _P53 - k2 else _P53 - k2
    neg = kk > _P51
    if neg:
        kk = _P52 - kk
    use_sin = kk > _P50
    if use_sin:
        kk = _P51 - kk
    x = np.float64(kk) * _TURN
    x2 = x * x
    c = _C[8]
    c = _C[7] + x2 * c
    c = _C[6] + x2 * c
    c = _C[5] + x2 * c
    c = _C[4] + x2 * c
    c = _C[3] + x2 * c
    c = _C[2] + x2 * c
    c = _C[1] + x2 * c
    c = _C[0] + x2 * c
    c = 1.0 + x2 * c
    sn = _SN[8]
    sn = _SN[7] + x2 * sn
    sn = _SN[6] + x2 * sn
    sn = _SN[5] + x2 * sn
    sn = _SN[4] + x2 * sn
    sn = _SN[3] + x2 * sn
    sn = _SN[2] + x2 * sn
    sn = _SN[1] + x2 * sn
    sn = _SN[0] + x2 * sn
    sn = x + x * (x2 * sn)
    v = sn if use_sin else c
    if neg:
        v = -v
    return rad * v


@njit(**_opts)
def _rng_normal(g, key, ctr, i):
    n = np.uint64(ctr) + np.uint64(i)
    k = np.uint64(key)
    if g:
        return _box_muller(_squares64(n, k), _squares64(n + _HALF, k))
    w0, w1, w2, w3 = _philox(k, n)
    return _box_muller((w0 << _S32) | w1, (w2 << _S32) | w3)


# The same per-element helpers as calls, not inlined (``_rng1_`` for ``_rng_``: the Numba
# renderer renames the call): a quad loop's few leftover elements call these, so a kernel
# compiles the generator's code once, in its quads.
_called = dict(cache=True, error_model="numpy")
_rng1_uniform_f64 = njit(**_called)(_rng_uniform_f64.py_func)
_rng1_uniform_f32 = njit(**_called)(_rng_uniform_f32.py_func)
_rng1_normal = njit(**_called)(_rng_normal.py_func)
_rng1_integers = njit(**_called)(_rng_integers.py_func)
