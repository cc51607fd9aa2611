"""Vectorisable transcendental functions for generated Numba kernels: branch-free polynomial and
bit-manipulation code (``_vm_<name>_f32`` / ``_vm_<name>_f64``) that LLVM vectorises inside the
fused parallel loops, where Numba's own math functions are scalar libm calls (no SVML).

How they are built
  * range reduction with integer operations on the float bits, done by four LLVM intrinsics
    written here (``_sel`` select, ``_fma`` fused multiply-add, ``_scale2`` x*2^k by building the
    exponent field, ``_logsplit`` mantissa/exponent split); everything else is float arithmetic
    that Numba types in the input's width (every constant is a typed NumPy scalar);
  * special values (±0, ±inf, NaN, overflow and underflow) are chosen with selects, never
    branches, so the loop body stays one basic block;
  * float32 exp and log run natively in float32 (8 lanes on AVX2); every other float32
    function evaluates the float64 primitive on the widened input and rounds once, which makes
    it nearly correctly rounded (4 lanes, still far faster than scalar libm);
  * sin/cos/tan reduce with a three-part Cody-Waite pi/2 valid for |x| < 2^20 * pi/2 (about
    1.6e6); larger arguments take NumPy's scalar libm path through a branch that LLVM predicates
    (the loop still vectorises; only those elements pay the libm call).

Accuracy (measured by tests/test_vecmath.py against NumPy over every binade; docs/fastmath.md):
float32 results are within 1 ulp of the correctly rounded result, float64 within 1-3 ulp of
NumPy (see the table in docs/fastmath.md). ``STREAMRT_FAST_MATH=0`` turns the library off.
"""
import math

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

__all__ = []          # filled below: every _vm_* function


# ---- LLVM intrinsics ----------------------------------------------------------------------
@intrinsic
def _sel(typingctx, c, a, b):
    """``a if c else b`` as an LLVM select (no branch)."""
    if not isinstance(a, types.Float) or a != b:
        return None

    def codegen(context, builder, sig, args):
        return builder.select(args[0], args[1], args[2])
    return a(types.boolean, a, b), codegen


@intrinsic
def _fma(typingctx, a, b, c):
    """a * b + c with one rounding (llvm.fma: a vfmadd instruction on FMA hardware)."""
    if not isinstance(a, types.Float) or not (a == b == c):
        return None

    def codegen(context, builder, sig, args):
        return builder.fma(*args)
    return a(a, a, a), codegen


def _layout(t):
    return (32, 23, 127) if t.bitwidth == 32 else (64, 52, 1023)


@intrinsic
def _scale2(typingctx, x, k):
    """x * 2^k for an integral float k with |k| < 2*bias - 2: two exponent-field factors
    2^(k>>1) and 2^(k - (k>>1)), so overflow to inf and gradual underflow come out right."""
    if not isinstance(x, types.Float) or x != k:
        return None

    def codegen(context, builder, sig, args):
        x, k = args
        w, m, b = _layout(sig.args[0])
        it = ir.IntType(w)
        ki = builder.fptosi(k, it)
        k1 = builder.ashr(ki, ir.Constant(it, 1))
        k2 = builder.sub(ki, k1)
        f1 = builder.shl(builder.add(k1, ir.Constant(it, b)), ir.Constant(it, m))
        f2 = builder.shl(builder.add(k2, ir.Constant(it, b)), ir.Constant(it, m))
        return builder.fmul(builder.fmul(x, builder.bitcast(f1, x.type)),
                            builder.bitcast(f2, x.type))
    return x(x, x), codegen


@intrinsic
def _logsplit(typingctx, x):
    """(m, e) with x = m * 2^e, m in [sqrt(1/2), sqrt(2)), for positive normal x (bit ops)."""
    if not isinstance(x, types.Float):
        return None
    rt = types.UniTuple(x, 2)

    def codegen(context, builder, sig, args):
        (x,) = args
        w, m, b = _layout(sig.args[0])
        it = ir.IntType(w)
        # bits of sqrt(1/2) (rounded up) and of 1.0
        sh = 0x3F3504F3 if w == 32 else 0x3FE6A09E667F3BCD
        one = b << m
        ix = builder.add(builder.bitcast(x, it), ir.Constant(it, one - sh))
        e = builder.sub(builder.ashr(ix, ir.Constant(it, m)), ir.Constant(it, b))
        mb = builder.add(builder.and_(ix, ir.Constant(it, (1 << m) - 1)), ir.Constant(it, sh))
        return context.make_tuple(builder, rt, [builder.bitcast(mb, x.type),
                                                builder.sitofp(e, x.type)])
    return rt(x), codegen


@intrinsic
def _exponent(typingctx, x):
    """The unbiased binary exponent of a positive normal x, as a float (bit ops)."""
    if not isinstance(x, types.Float):
        return None

    def codegen(context, builder, sig, args):
        (x,) = args
        w, m, b = _layout(sig.args[0])
        it = ir.IntType(w)
        e = builder.lshr(builder.bitcast(x, it), ir.Constant(it, m))
        e = builder.sub(builder.and_(e, ir.Constant(it, 2 * b + 1)), ir.Constant(it, b))
        return builder.sitofp(e, x.type)
    return x(x), codegen


_J = dict(inline="always", cache=True, error_model="numpy")


def _export(f):
    __all__.append(f.__name__)
    return f


f4, f8 = np.float32, np.float64
INF4, INF8 = f4(np.inf), f8(np.inf)
NAN4, NAN8 = f4(np.nan), f8(np.nan)
Z4, Z8 = f4(0.0), f8(0.0)
O4, O8 = f4(1.0), f8(1.0)
H8 = f8(0.5)
MAGIC4, MAGIC8 = f4(12582912.0), f8(6755399441055744.0)   # 1.5 * 2^23, 1.5 * 2^52: round to int
LOG2E4, LOG2E8 = f4(1.4426950408889634), f8(1.4426950408889634)
LN2HI4, LN2LO4 = f4(6.9313812256e-01), f4(9.0580006145e-06)           # ln2 = hi + lo (musl)
LN2HI8, LN2LO8 = f8(6.93147180369123816490e-01), f8(1.90821492927058770002e-10)   # fdlibm
LN2_8 = f8(0.6931471805599453)
INVLN2_8 = f8(1.4426950408889634)
INVLN10_8 = f8(0.4342944819032518)
LOG10_2HI8, LOG10_2LO8 = f8(3.01029995663611771306e-01), f8(3.69423907715893078616e-13)
# Taylor coefficients 1/n! (e^r - 1 on |r| <= ln2/2: degree 7 float32, 13 float64)
E4 = tuple(f4(1.0 / math.factorial(n)) for n in range(9))
E8 = tuple(f8(1.0 / math.factorial(n)) for n in range(15))
# 2^r - 1 = sum (r ln2)^n / n! on |r| <= 1/2
P2_8 = tuple(f8(math.log(2.0) ** n / math.factorial(n)) for n in range(15))


# ---- exp ----------------------------------------------------------------------------------
@njit(**_J)
def _expm1_poly4(r):
    p = _fma(r, E4[7], E4[6])
    p = _fma(p, r, E4[5])
    p = _fma(p, r, E4[4])
    p = _fma(p, r, E4[3])
    p = _fma(p, r, E4[2])
    return _fma(r * r, p, r)


@njit(**_J)
def _expm1_poly8(r):
    p = _fma(r, E8[13], E8[12])
    p = _fma(p, r, E8[11])
    p = _fma(p, r, E8[10])
    p = _fma(p, r, E8[9])
    p = _fma(p, r, E8[8])
    p = _fma(p, r, E8[7])
    p = _fma(p, r, E8[6])
    p = _fma(p, r, E8[5])
    p = _fma(p, r, E8[4])
    p = _fma(p, r, E8[3])
    p = _fma(p, r, E8[2])
    return _fma(r * r, p, r)


@_export
@njit(**_J)
def _vm_exp_f32(x):
    k = (x * LOG2E4 + MAGIC4) - MAGIC4            # round to nearest integer
    k = _sel(k > f4(-252.0), k, f4(-252.0))       # (NaN -> -252: keeps fptosi defined)
    k = _sel(k < f4(254.0), k, f4(254.0))
    r = _fma(k, -LN2HI4, x)
    r = _fma(k, -LN2LO4, r)
    y = _scale2(O4 + _expm1_poly4(r), k)
    y = _sel(x > f4(100.0), INF4, y)              # |x| < 100: overflow/underflow by _scale2
    y = _sel(x < f4(-110.0), Z4, y)
    return _sel(x != x, x, y)


@_export
@njit(**_J)
def _vm_exp_f64(x):
    k = (x * LOG2E8 + MAGIC8) - MAGIC8
    k = _sel(k > f8(-2044.0), k, f8(-2044.0))
    k = _sel(k < f8(2046.0), k, f8(2046.0))
    r = x - k * LN2HI8                            # exact (hi has 32 significant bits)
    r = r - k * LN2LO8
    y = _scale2(O8 + _expm1_poly8(r), k)
    y = _sel(x > f8(800.0), INF8, y)
    y = _sel(x < f8(-800.0), Z8, y)
    return _sel(x != x, x, y)


@_export
@njit(**_J)
def _vm_exp2_f64(x):
    k = (x + MAGIC8) - MAGIC8
    k = _sel(k > f8(-2044.0), k, f8(-2044.0))
    k = _sel(k < f8(2046.0), k, f8(2046.0))
    r = x - k                                     # exact, |r| <= 1/2
    p = _fma(r, P2_8[13], P2_8[12])
    p = _fma(p, r, P2_8[11])
    p = _fma(p, r, P2_8[10])
    p = _fma(p, r, P2_8[9])
    p = _fma(p, r, P2_8[8])
    p = _fma(p, r, P2_8[7])
    p = _fma(p, r, P2_8[6])
    p = _fma(p, r, P2_8[5])
    p = _fma(p, r, P2_8[4])
    p = _fma(p, r, P2_8[3])
    p = _fma(p, r, P2_8[2])
    p = _fma(p, r, P2_8[1])
    y = _scale2(_fma(p, r, O8), k)
    y = _sel(x > f8(1100.0), INF8, y)
    y = _sel(x < f8(-1100.0), Z8, y)
    return _sel(x != x, x, y)


@_export
@njit(**_J)
def _vm_expm1_f64(x):
    k = (x * LOG2E8 + MAGIC8) - MAGIC8
    k = _sel(k > f8(-70.0), k, f8(-70.0))
    k = _sel(k < f8(1030.0), k, f8(1030.0))
    r = x - k * LN2HI8
    r = r - k * LN2LO8
    u = _expm1_poly8(r)
    t = _scale2(H8, k)                            # 2^(k-1): 2^k alone overflows at k = 1024
    y = f8(2.0) * _fma(t, u, t - H8)              # 2^k u + 2^k - 1, one rounding
    y = _sel(x > f8(710.0), INF8, y)
    y = _sel(x < f8(-40.0), -O8, y)               # e^-40 < 2^-54: rounds to -1
    y = _sel(x == Z8, x, y)                       # expm1(-0) = -0
    return _sel(x != x, x, y)


# ---- log ----------------------------------------------------------------------------------
LG4 = (f4(0xaaaaaa * 2.0 ** -24), f4(0xccce13 * 2.0 ** -25), f4(0x91e9ee * 2.0 ** -25),
       f4(0xf89e26 * 2.0 ** -26))                 # musl logf
LG8 = (f8(6.666666666666735130e-01), f8(3.999999999940941908e-01), f8(2.857142874366239149e-01),
       f8(2.222219843214978396e-01), f8(1.818357216161805012e-01), f8(1.531383769920937332e-01),
       f8(1.479819860511658591e-01))              # fdlibm log
TINY4, TINY8 = f4(1.17549435e-38), f8(2.2250738585072014e-308)


@_export
@njit(**_J)
def _vm_log_f32(x):
    sub = x < TINY4                                # subnormal (or <= 0): scale by 2^25
    m, e = _logsplit(_sel(sub, x * f4(33554432.0), x))
    e = e - _sel(sub, f4(25.0), Z4)
    f = m - O4
    s = f / (f4(2.0) + f)
    z = s * s
    w = z * z
    R = z * _fma(w, LG4[2], LG4[0]) + w * _fma(w, LG4[3], LG4[1])
    hfsq = f4(0.5) * f * f
    y = e * LN2HI4 - ((hfsq - _fma(s, hfsq + R, e * LN2LO4)) - f)
    y = _sel(x == INF4, x, y)
    y = _sel(x < Z4, NAN4, y)
    y = _sel(x == Z4, -INF4, y)
    return _sel(x != x, x, y)


@njit(**_J)
def _log_parts8(x):
    """(e, f, hfsq, sr) with log(x) = e*ln2 + f - hfsq + sr for positive x (fdlibm's split:
    x = m 2^e, f = m - 1, the sum of the last three is log(m) with |log(m)| < 0.35)."""
    sub = x < TINY8
    m, e = _logsplit(_sel(sub, x * f8(18014398509481984.0), x))   # 2^54
    e = e - _sel(sub, f8(54.0), Z8)
    f = m - O8
    s = f / (f8(2.0) + f)
    z = s * s
    w = z * z
    t1 = w * _fma(w, _fma(w, LG8[5], LG8[3]), LG8[1])
    t2 = z * _fma(w, _fma(w, _fma(w, LG8[6], LG8[4]), LG8[2]), LG8[0])
    R = t2 + t1
    hfsq = H8 * f * f
    return e, f, hfsq, s * (hfsq + R)


@njit(**_J)
def _log_special8(x, y):
    y = _sel(x == INF8, x, y)
    y = _sel(x < Z8, NAN8, y)
    y = _sel(x == Z8, -INF8, y)
    return _sel(x != x, x, y)


@_export
@njit(**_J)
def _vm_log_f64(x):
    e, f, hfsq, sr = _log_parts8(x)
    y = e * LN2HI8 - ((hfsq - (sr + e * LN2LO8)) - f)
    return _log_special8(x, y)


@_export
@njit(**_J)
def _vm_log2_f64(x):
    e, f, hfsq, sr = _log_parts8(x)
    lm = f - hfsq + sr                            # log(m), |lm| < 0.35
    hi = f - hfsq
    lo = (f - hi) - hfsq + sr
    y = e + _fma(hi, INVLN2_8, lo * INVLN2_8)
    y = _sel(e == Z8, lm * INVLN2_8, y)
    return _log_special8(x, y)


@_export
@njit(**_J)
def _vm_log10_f64(x):
    e, f, hfsq, sr = _log_parts8(x)
    hi = f - hfsq
    lo = (f - hi) - hfsq + sr
    y = e * LOG10_2HI8 + (_fma(hi, INVLN10_8, lo * INVLN10_8) + e * LOG10_2LO8)
    return _log_special8(x, y)


@_export
@njit(**_J)
def _vm_log1p_f64(x):
    u = O8 + x
    c = (x - (u - O8)) / u                        # the rounding error of 1 + x, relative
    c = _sel(u == INF8, Z8, c)
    e, f, hfsq, sr = _log_parts8(u)
    y = e * LN2HI8 - ((hfsq - (sr + e * LN2LO8 + c)) - f)
    y = _sel(x == -O8, -INF8, y)
    y = _sel(x < -O8, NAN8, y)
    y = _sel(x == INF8, x, y)
    y = _sel(x == Z8, x, y)                       # keeps -0.0
    return _sel(x != x, x, y)


# ---- sin, cos, tan ------------------------------------------------------------------------
TWO_OVER_PI8 = f8(0.6366197723675814)
PIO2_1, PIO2_2, PIO2_3 = (f8(1.57079632673412561417e+00), f8(6.07710050630396597660e-11),
                          f8(2.02226624871116645580e-21))   # 33 + 33 + 53 bits of pi/2
PIO2_4 = f8(8.47842766036889956997e-32)                     # the rest (fdlibm's pio2_3t)
S8 = tuple(f8((-1) ** n / math.factorial(2 * n + 1)) for n in range(11))
C8 = tuple(f8((-1) ** n / math.factorial(2 * n)) for n in range(11))
TRIG_MAX8 = f8(1.6e6)        # 2^20 * pi/2 ~ 1.647e6: k * PIO2_1 exact below


def _two_over_pi_chunks(n):
    """2/pi in 24-bit chunks: C[j] = bits 24j+1 .. 24j+24 after the binary point, times 2^-24
    (exact integers; pi by Machin's formula in fixed point)."""
    prec = 24 * n + 128

    def atan_inv(k):                      # atan(1/k) * 2^prec
        total, term, k2, i = 0, (1 << prec) // k, k * k, 0
        while term:
            total += term // (2 * i + 1) if i % 2 == 0 else -(term // (2 * i + 1))
            term //= k2
            i += 1
        return total
    pi = 16 * atan_inv(5) - 4 * atan_inv(239)
    tpi = (2 << (2 * prec)) // pi                  # 2/pi * 2^prec
    return np.array([((tpi >> (prec - 24 * (j + 1))) & 0xFFFFFF) * 2.0 ** -24
                     for j in range(n)], np.float64)


TWO_OVER_PI_C = _two_over_pi_chunks(56)        # exponents up to 1024, + 8 chunks
PIO2_HI, PIO2_LO = f8(1.5707963267948966), f8(6.123233995736766e-17)
TWO24 = tuple(f8(2.0 ** (-24 * i)) for i in range(8))


@njit(**_J)
def _rint8(v):
    """Round to nearest integer, exact for every double (2^52 and above are integers)."""
    a = abs(v)
    r = _sel(a < f8(2.0 ** 52), (a + f8(2.0 ** 52)) - f8(2.0 ** 52), a)
    return _sel(v < Z8, -r, r)


@njit(**_J)
def _mod4(v):
    """v mod 4 in [-2, 2], exact for any double v."""
    return v - f8(4.0) * _rint8(v * f8(0.25))


@njit(**_J)
def _two_sum(s, e, v):
    t = s + v
    bp = t - s
    return t, e + ((s - (t - bp)) + (v - bp))


@njit(**_J)
def _ph_step(X, j, i, s, c):
    """Add X * (chunk j+i of 2/pi) 2^(-24 i), reduced mod 4, to the double-double (s, c)."""
    u = TWO_OVER_PI_C[j + np.uint64(i)] * TWO24[i]
    h = X * u
    lo = _fma(X, u, -h)                           # X u = h + lo exactly
    s, c = _two_sum(s, c, _mod4(h))
    return _two_sum(s, c, _mod4(lo))


@njit(**_J)
def _payne_hanek8(x, n):
    """(r_hi, r_lo, q): x - (4m + q) pi/2 = r_hi + r_lo, |r| <= pi/4, for any finite |x| >= 1
    (branch-free: n 24-bit chunks of 2/pi picked by the exponent, exact products by fma; the
    chunks past the n-th contribute below 2^(78 - 24n) quarter turns for a 53-bit mantissa:
    n = 8 for float64, n = 5 for float32 inputs, whose mantissa has 24 bits)."""
    a = abs(x)
    e = _exponent(a) - f8(52.0)                   # a = M 2^e, M a 53-bit integer
    j0 = np.floor((e - f8(2.0)) * f8(1.0 / 24.0))
    j0 = _sel(j0 > Z8, j0, Z8)                    # chunks before j0 give multiples of 4
    X = _scale2(a, f8(-24.0) * j0)
    j = np.uint64(j0)                             # unsigned: no wrap-around check
    s, c = _ph_step(X, j, 0, Z8, Z8)              # written out: LLVM vectorises the outer
    s, c = _ph_step(X, j, 1, s, c)                # loop only when no inner loop is left
    s, c = _ph_step(X, j, 2, s, c)
    s, c = _ph_step(X, j, 3, s, c)
    s, c = _ph_step(X, j, 4, s, c)
    if n > 5:
        s, c = _ph_step(X, j, 5, s, c)
        s, c = _ph_step(X, j, 6, s, c)
        s, c = _ph_step(X, j, 7, s, c)
    k = _rint8(s)
    s = s - k
    f = s + c                                      # quarter turns in [-1/2, 1/2]
    fl = c - (f - s)
    rh = f * PIO2_HI
    rl = _fma(f, PIO2_HI, -rh) + (f * PIO2_LO + fl * PIO2_HI)
    q = k - f8(4.0) * np.floor(k * f8(0.25))
    neg = x < Z8                                   # sin/cos of -x: r -> -r, q -> -q mod 4
    q = _sel(neg & (q != Z8), f8(4.0) - q, q)
    return _sel(neg, -rh, rh), _sel(neg, -rl, rl), q


@njit(**_J)
def _trig_reduce8(x, n):
    """(r, r_lo, q) with x = (4n + q) pi/2 + r + r_lo: Cody-Waite below 1.6e6, Payne-Hanek above."""
    k = (x * TWO_OVER_PI8 + MAGIC8) - MAGIC8
    k = _sel(abs(x) < TRIG_MAX8, k, Z8)
    r = x - k * PIO2_1                            # exact (33-bit part, |k| < 2^20)
    r = _fma(-k, PIO2_2, r)
    r = _fma(-k, PIO2_3, r)
    r = _fma(-k, PIO2_4, r)
    q = k - f8(4.0) * np.floor(k * f8(0.25))      # k mod 4 in {0, 1, 2, 3}
    big = abs(x) >= TRIG_MAX8
    ph, pl, pq = _payne_hanek8(_sel(big & (x - x == Z8), x, O8), n)
    return _sel(big, ph, r), _sel(big, pl, Z8), _sel(big, pq, q)


@njit(**_J)
def _sin_poly8(r):
    z = r * r
    p = _fma(z, S8[9], S8[8])
    p = _fma(p, z, S8[7])
    p = _fma(p, z, S8[6])
    p = _fma(p, z, S8[5])
    p = _fma(p, z, S8[4])
    p = _fma(p, z, S8[3])
    p = _fma(p, z, S8[2])
    p = _fma(p, z, S8[1])
    return _fma(r * z, p, r)


@njit(**_J)
def _cos_poly8(r):
    z = r * r
    p = _fma(z, C8[10], C8[9])
    p = _fma(p, z, C8[8])
    p = _fma(p, z, C8[7])
    p = _fma(p, z, C8[6])
    p = _fma(p, z, C8[5])
    p = _fma(p, z, C8[4])
    p = _fma(p, z, C8[3])
    p = _fma(p, z, C8[2])
    hz = H8 * z
    w = O8 - hz
    return w + (((O8 - w) - hz) + z * z * p)      # fdlibm's trick: 1 - z/2 with its error


@njit(**_J)
def _sin8(x, n):
    r, rl, q = _trig_reduce8(x, n)
    s = _fma(rl, _cos_poly8(r), _sin_poly8(r))  # sin(r + rl), cos(r + rl) to first order
    c = _fma(-rl, _sin_poly8(r), _cos_poly8(r))
    y = _sel((q == O8) | (q == f8(3.0)), c, s)
    y = _sel(q >= f8(2.0), -y, y)
    y = _sel(x == Z8, x, y)                       # sin(-0) = -0
    y = _sel(x - x == Z8, y, NAN8)                # +-inf, NaN -> NaN
    return y


@njit(**_J)
def _cos8(x, n):
    r, rl, q = _trig_reduce8(x, n)
    s = _fma(rl, _cos_poly8(r), _sin_poly8(r))  # sin(r + rl), cos(r + rl) to first order
    c = _fma(-rl, _sin_poly8(r), _cos_poly8(r))
    y = _sel((q == O8) | (q == f8(3.0)), s, c)
    y = _sel((q == O8) | (q == f8(2.0)), -y, y)
    y = _sel(q == Z8, c, y)
    y = _sel(x - x == Z8, y, NAN8)
    return y


@njit(**_J)
def _tan8(x, n):
    r, rl, q = _trig_reduce8(x, n)
    s = _fma(rl, _cos_poly8(r), _sin_poly8(r))  # sin(r + rl), cos(r + rl) to first order
    c = _fma(-rl, _sin_poly8(r), _cos_poly8(r))
    odd = (q == O8) | (q == f8(3.0))
    y = _sel(odd, -c, s) / _sel(odd, s, c)
    y = _sel(x == Z8, x, y)
    y = _sel(x - x == Z8, y, NAN8)
    return y


@_export
@njit(**_J)
def _vm_sin_f64(x):
    return _sin8(x, 8)


@_export
@njit(**_J)
def _vm_cos_f64(x):
    return _cos8(x, 8)


@_export
@njit(**_J)
def _vm_tan_f64(x):
    return _tan8(x, 8)


# ---- hyperbolic ---------------------------------------------------------------------------
@_export
@njit(**_J)
def _vm_tanh_f64(x):
    a = abs(x)
    t = _vm_expm1_f64(f8(2.0) * _sel(a < f8(40.0), a, f8(40.0)))
    y = t / (t + f8(2.0))
    y = _sel(a > f8(22.0), O8, y)
    y = _sel(x < Z8, -y, y)
    y = _sel(x == Z8, x, y)
    return _sel(x != x, x, y)


@_export
@njit(**_J)
def _vm_sinh_f64(x):
    a = abs(x)
    t = _vm_expm1_f64(_sel(a < f8(22.0), a, f8(22.0)))
    y = H8 * (t + t / (t + O8))
    h = _vm_exp_f64(H8 * a)                       # large |x|: e^|x| / 2 = (e^(|x|/2) / 2) e^(|x|/2)
    y = _sel(a >= f8(22.0), (H8 * h) * h, y)
    y = _sel(x < Z8, -y, y)
    y = _sel(x == Z8, x, y)
    return _sel(x != x, x, y)


@_export
@njit(**_J)
def _vm_cosh_f64(x):
    a = abs(x)
    t = _vm_expm1_f64(_sel(a < f8(22.0), a, f8(22.0)))
    y = O8 + (t * t) / (f8(2.0) * (O8 + t))
    h = _vm_exp_f64(H8 * a)
    y = _sel(a >= f8(22.0), (H8 * h) * h, y)
    return _sel(x != x, a, y)


# ---- cbrt, pow ----------------------------------------------------------------------------
@_export
@njit(**_J)
def _vm_cbrt_f64(x):
    a = abs(x)
    y = _vm_exp_f64(_vm_log_f64(a) * f8(1.0 / 3.0))      # relative error < 1e-13
    y0 = y - (y - a / (y * y)) * f8(1.0 / 3.0)           # Newton step (any a)
    y2 = y * y                                           # Newton step on an exact residual:
    e2 = _fma(y, y, -y2)                                 # y^3 = y3 + l3 (double-double)
    y3 = y2 * y
    l3 = _fma(y2, y, -y3) + e2 * y
    y = y + ((a - y3) - l3) / (f8(3.0) * y2)
    y = _sel((a > f8(1e300)) | (a < f8(1e-290)), y0, y)  # y^3 would overflow / underflow
    y = _sel((a == Z8) | (a == INF8), a, y)
    y = _sel(x < Z8, -y, y)
    y = _sel(x == Z8, x, y)                              # cbrt(-0) = -0
    return _sel(x != x, x, y)


@njit(**_J)
def _pow_via8(x, y):
    """x ** y through exp(y * log|x|) in float64 with NumPy's (C99) special cases. Accurate to
    float32 (the float64 rounding of y*log|x| costs up to |y log x| * 2^-53 relative)."""
    a = abs(x)
    r = _vm_exp_f64(y * _vm_log_f64(a))
    yint = ((y + MAGIC8) - MAGIC8 == y) | (abs(y) >= f8(4503599627370496.0))   # integral y
    hy = H8 * y
    odd = yint & ((hy + MAGIC8) - MAGIC8 != hy) & (abs(y) < f8(9007199254740992.0))
    r = _sel((x < Z8) & odd, -r, r)
    r = _sel((x < Z8) & (x != -INF8) & (not yint), NAN8, r)   # C99: (-inf) ** y = inf or 0
    r = _sel((x == Z8) & odd, _sel(y > Z8, x, O8 / x), r)   # (+-0) ** odd keeps the sign
    r = _sel((a == O8) & (abs(y) == INF8), O8, r)
    r = _sel((x == -INF8) & odd, _sel(y > Z8, x, -Z8), r)
    r = _sel(x == O8, O8, r)
    return _sel(y == Z8, O8, r)


# ---- float32 through float64 --------------------------------------------------------------
@_export
@njit(**_J)
def _vm_pow_f32(x, y):
    return f4(_pow_via8(f8(x), f8(y)))


# the float32 wrappers are written out (not generated) so Numba's on-disk cache can locate them
@_export
@njit(**_J)
def _vm_exp2_f32(x):
    return f4(_vm_exp2_f64(f8(x)))


@_export
@njit(**_J)
def _vm_expm1_f32(x):
    return f4(_vm_expm1_f64(f8(x)))


@_export
@njit(**_J)
def _vm_log2_f32(x):
    return f4(_vm_log2_f64(f8(x)))


@_export
@njit(**_J)
def _vm_log10_f32(x):
    return f4(_vm_log10_f64(f8(x)))


@_export
@njit(**_J)
def _vm_log1p_f32(x):
    return f4(_vm_log1p_f64(f8(x)))


@_export
@njit(**_J)
def _vm_sin_f32(x):
    return f4(_sin8(f8(x), 5))


@_export
@njit(**_J)
def _vm_cos_f32(x):
    return f4(_cos8(f8(x), 5))


@_export
@njit(**_J)
def _vm_tan_f32(x):
    return f4(_tan8(f8(x), 5))


@_export
@njit(**_J)
def _vm_tanh_f32(x):
    return f4(_vm_tanh_f64(f8(x)))


@_export
@njit(**_J)
def _vm_sinh_f32(x):
    return f4(_vm_sinh_f64(f8(x)))


@_export
@njit(**_J)
def _vm_cosh_f32(x):
    return f4(_vm_cosh_f64(f8(x)))


@_export
@njit(**_J)
def _vm_cbrt_f32(x):
    return f4(_vm_cbrt_f64(f8(x)))


# ---- erf (float32, evaluated in float64) --------------------------------------------------
# |x| < 1: the Taylor series of erf(x)/x in t = x^2 (13 terms: 7e-12 relative); 1 <= |x| < 4:
# 1 - exp(-x^2) erfcx(|x|), erfcx by a degree-12 polynomial in z = (1/|x| - 0.625) / 0.375
# (least squares on Chebyshev nodes against scipy.special.erfcx: 7e-11 relative); |x| >= 4:
# +-1 (erfc(4) = 1.5e-8 is under half an ulp of 1 in float32). Both branches are computed and
# selected. float32 squares are exact in float64, so the result is correctly rounded but for
# double roundings (<= 1 ulp). float64 erf stays on libm (ops.py: _erf_libm).
ERF_T8 = tuple(f8(2.0 / math.sqrt(math.pi) * (-1) ** n / (math.factorial(n) * (2 * n + 1)))
               for n in range(13))
ERFCX8 = (0.3059529922742624, 0.143356408206689, -0.024243010462903242, 0.002308146311619973,
          0.0004613277750017119, -0.00034881599603087365, 0.00012037470859990352,
          -2.6476805806730754e-05, 1.4637500225412954e-06, 2.215246908068479e-06,
          -1.529612556097129e-06, 5.823079974985899e-07, -1.015456752397342e-07)


@njit(**_J)
def _poly12(c, t):
    p = _fma(f8(c[12]), t, f8(c[11]))
    p = _fma(p, t, f8(c[10]))
    p = _fma(p, t, f8(c[9]))
    p = _fma(p, t, f8(c[8]))
    p = _fma(p, t, f8(c[7]))
    p = _fma(p, t, f8(c[6]))
    p = _fma(p, t, f8(c[5]))
    p = _fma(p, t, f8(c[4]))
    p = _fma(p, t, f8(c[3]))
    p = _fma(p, t, f8(c[2]))
    p = _fma(p, t, f8(c[1]))
    return _fma(p, t, f8(c[0]))


@_export
@njit(**_J)
def _vm_erf_f32(x):
    d = f8(x)
    a = abs(d)
    t = a * a                                      # exact
    small = a * _poly12(ERF_T8, t)
    z = (O8 / _sel(a < f8(1.0), f8(1.0), a) - f8(0.625)) * f8(2.6666666666666665)
    large = O8 - _vm_exp_f64(-t) * _poly12(ERFCX8, z)
    y = _sel(a < f8(1.0), small, large)
    y = _sel(a >= f8(4.0), O8, y)
    r = f4(math.copysign(y, d))
    return _sel(x != x, x, r)
