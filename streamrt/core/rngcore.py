"""Counter-based random number generators: key + counter in, random bits out, computed per
element *inside* fused kernels. This module holds the algorithms' definition three times over
-- the NumPy reference (the oracle the reference executor runs), the OpenCL/CUDA C source
(render_c) and the constants the Numba helpers (executors/cpu_rng.py) use -- written as the
same sequence of IEEE operations, so every executor gives the same bits.

Generators (``bit_generator=`` of ``ps.random.default_rng``):

* ``"philox"``: Philox4x32-10 (Salmon et al., SC'11; Random123), 128-bit counter, 64-bit key.
  Every 128-bit block is used whole: value ``n`` (``n = c + i`` mod 2^64 for element ``i`` of a
  draw whose counter base is ``c``) is word ``n % 4`` of block ``n // 4`` for a float32
  uniform, the 64-bit half ``n % 2`` of block ``n // 2`` (words ``(w0, w1)`` or ``(w2, w3)``)
  for a float64 uniform or an integer, all of block ``n`` for a normal; block ``b`` is counter
  ``(b & 0xffffffff, b >> 32, 0, 0)``. The Generator starts every Philox draw at a multiple
  of 4 (random.py), so four consecutive float32 values from one block -- computed once by the
  Numba renderer's quad loops (``_rngq_*``) -- are the common case.
* ``"fast"``: Squares (Widynski 2020, arXiv:2004.06278), a 64-bit counter hash: 4 rounds of
  ``x*x + y`` (32-bit outputs) or 5 (64-bit outputs). Period 2^64 draws per key (2^63 for
  normals, which read counters ``n`` and ``n + 2^63``). Passes BigCrush/PractRand per the
  author for keys with irregular bit patterns, which ``squares_key`` builds from the seed.

Distributions (every one an exact integer or basic-IEEE-arithmetic transform):

* uniform float64: 53 bits ``(b >> 11) * 2^-53`` in [0, 1); float32: ``(w >> 8) * 2^-24``.
* integers in [low, low + r): ``low + mulhi64(b, r)`` (Lemire's multiply-shift, no rejection);
  each value's probability is within ``r / 2^64`` (relative) of ``1 / r``.
* normal: Box-Muller, ``sqrt(-2 ln u1) * cos(2 pi u2)``, with ``ln`` and ``cos`` evaluated by
  the polynomials below using only +, -, *, / and sqrt (correctly rounded everywhere; no FMA
  contraction), u1 in (0, 1] from 52 bits, u2 from 53 bits: |z| <= 8.49. Computed in float64
  (float32 normals are rounded from it).
"""
from __future__ import annotations

import math

import numpy as np

M32 = 0xFFFFFFFF
PHILOX_M0, PHILOX_M1 = 0xD2511F53, 0xCD9E8D57
PHILOX_W0, PHILOX_W1 = 0x9E3779B9, 0xBB67AE85
HALF = 1 << 63                       # squares: second counter of a normal draw

# ---- the float constants of the transforms (one definition for every executor) -----------
TWO_M53 = 2.0 ** -53
TWO_M52 = 2.0 ** -52
TWO_M24 = 2.0 ** -24
SQRT2 = 1.4142135623730951
LN2_HI = 6.93147180369123816490e-01     # fdlibm: ln 2 split, LN2_HI has 32 trailing zero bits
LN2_LO = 1.90821492927058770002e-10
LOG_C = tuple(1.0 / (2 * k + 1) for k in range(1, 12))        # atanh series 1/3 .. 1/23
TURN = 2.0 * math.pi * 2.0 ** -53                               # radians per counter unit
COS_C = tuple((-1.0) ** k / math.factorial(2 * k) for k in range(1, 10))      # x^2 .. x^18
SIN_C = tuple((-1.0) ** k / math.factorial(2 * k + 1) for k in range(1, 10))  # x^3 .. x^19

GENERATORS = ("philox", "fast")
BLOCK_VALUES = 4        # float32 values per Philox block: a Philox draw starts at a multiple
                        # (random.py), the Numba renderer's quads take this many at a time


# ---- keys ---------------------------------------------------------------------------------
def splitmix64(x):
    x = (x + 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF
    z = x
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & 0xFFFFFFFFFFFFFFFF
    return x, z ^ (z >> 31)


def philox_key(seed: int) -> int:
    """64-bit Philox key of a seed (an int >= 0 of any size: folded with splitmix64)."""
    state, out = 0x6A09E667F3BCC908, 0
    while True:
        state, out = splitmix64(state ^ (seed & 0xFFFFFFFFFFFFFFFF))
        seed >>= 64
        if not seed:
            return out


def squares_key(seed: int) -> int:
    """A Squares key: 16 non-zero hex digits, the upper 8 all different, the lower 8 all
    different, the lowest odd -- the irregular pattern Widynski's key generator makes."""
    state = philox_key(seed)
    digits = []
    for half in range(2):
        seen = set()
        while len(seen) < 8:
            state, r = splitmix64(state)
            for j in range(16):
                d = (r >> (4 * j)) & 0xF
                if d and d not in seen and len(seen) < 8:
                    if half == 1 and len(seen) == 7 and not d & 1:
                        continue          # the lowest digit is odd: the key is odd
                    seen.add(d)
                    digits.append(d)
    key = 0
    for d in digits:
        key = (key << 4) | d
    return key


def to_i64(u: int) -> int:
    """A 64-bit pattern as the signed int64 a kernel parameter carries."""
    u &= 0xFFFFFFFFFFFFFFFF
    return u - (1 << 64) if u >= (1 << 63) else u


# ---- NumPy reference ------------------------------------------------------------------------
_U = np.uint64


def _u(x):
    return np.asarray(x).astype(np.int64).view(np.uint64) if np.asarray(x).dtype != np.uint64 \
        else np.asarray(x)


def philox4x32(c, k, rounds=10):
    """Philox4x32-R on uint64 arrays holding 32-bit words: c = (c0, c1, c2, c3), k = (k0, k1)."""
    c0, c1, c2, c3 = (np.asarray(x, np.uint64) for x in c)
    k0, k1 = (np.asarray(x, np.uint64) for x in k)
    m32 = _U(M32)
    for r in range(rounds):
        if r:
            k0 = (k0 + _U(PHILOX_W0)) & m32
            k1 = (k1 + _U(PHILOX_W1)) & m32
        p0 = _U(PHILOX_M0) * c0
        p1 = _U(PHILOX_M1) * c2
        c0, c1, c2, c3 = (p1 >> _U(32)) ^ c1 ^ k0, p1 & m32, (p0 >> _U(32)) ^ c3 ^ k1, p0 & m32
    return c0, c1, c2, c3


def _counters(ctr, shape, add=0):
    n = math.prod(shape)
    return (np.arange(n, dtype=np.uint64) + _u(ctr) + _U(add)).reshape(shape)


def philox_words(key, ctr, shape, per=1):
    """The Philox words of the values ``ctr + i`` of a draw, ``per`` values to a block: the
    four words of block ``(ctr + i) // per`` and the value's slot ``(ctr + i) % per``."""
    ku = _u(key)
    n = _counters(ctr, shape)
    b = n // _U(per) if per > 1 else n
    w = philox4x32((b & _U(M32), b >> _U(32), np.zeros_like(b), np.zeros_like(b)),
                   (ku & _U(M32), ku >> _U(32)))
    return w, n % _U(per)


def _squares3(n, key):
    """The three rounds both Squares variants start with: (x, y, z)."""
    k = _u(key)
    x = y = n * k
    z = y + k
    s = _U(32)
    for w in (y, z, y):
        x = x * x + w
        x = (x >> s) | (x << s)
    return x, y, z


def squares32(n, key):
    x, _, z = _squares3(n, key)
    return (x * x + z) >> _U(32)


def squares64(n, key):
    x, y, z = _squares3(n, key)
    s = _U(32)
    t = x = x * x + z
    x = (x >> s) | (x << s)
    return t ^ ((x * x + y) >> s)


def mulhi64(a, b):
    """High 64 bits of the 128-bit product of uint64 arrays (from 32-bit halves)."""
    m, s = _U(M32), _U(32)
    al, ah, bl, bh = a & m, a >> s, b & m, b >> s
    ll, hl, lh, hh = al * bl, ah * bl, al * bh, ah * bh
    cross = (ll >> s) + (hl & m) + lh
    return hh + (hl >> s) + (cross >> s)


def _bits64(gen, key, ctr, shape):
    if gen == "philox":
        w, slot = philox_words(key, ctr, shape, 2)
        return np.where(slot == _U(0), (w[0] << _U(32)) | w[1], (w[2] << _U(32)) | w[3])
    return squares64(_counters(ctr, shape), key)


def uniform01(gen, key, ctr, shape, dtype):
    if np.dtype(dtype) == np.float32:
        if gen == "philox":
            w4, slot = philox_words(key, ctr, shape, 4)
            w = np.choose(slot.astype(np.intp), w4)
        else:
            w = squares32(_counters(ctr, shape), key)
        return (w >> _U(8)).astype(np.float32) * np.float32(TWO_M24)
    return (_bits64(gen, key, ctr, shape) >> _U(11)).astype(np.float64) * TWO_M53


def integers(gen, key, ctr, low, rng, shape):
    """low + mulhi64(bits, r) (int64, wrapping); r == 0 means the full 2^64 range."""
    b = _bits64(gen, key, ctr, shape)
    r = _u(rng)
    off = np.where(r == _U(0), b, mulhi64(b, r))
    return (off + _u(low)).view(np.int64)


def _bitlen_minus1(k):
    """floor(log2(k)) of uint64 k >= 1, by a branch-free binary search."""
    e = np.zeros_like(k)
    t = k
    for sh in (32, 16, 8, 4, 2, 1):
        big = (t >> _U(sh)) != _U(0)
        s = np.where(big, _U(sh), _U(0))
        t = t >> s
        e = e + s
    return e


def box_muller(b1, b2):
    """One standard normal per pair of 64-bit words (float64), see the module docstring."""
    k = (b1 >> _U(12)) + _U(1)                     # u1 = k * 2^-52 in (0, 1]
    e = _bitlen_minus1(k)
    kn = k << (_U(52) - e)                          # in [2^52, 2^53)
    m = kn.astype(np.float64) * TWO_M52             # in [1, 2)
    ee = e.astype(np.float64) - 52.0
    big = m > SQRT2
    m = np.where(big, m * 0.5, m)
    ee = np.where(big, ee + 1.0, ee)
    f = m - 1.0
    s = f / (2.0 + f)
    z = s * s
    r = LOG_C[-1]
    for c in LOG_C[-2::-1]:
        r = c + z * r
    r = z * r
    s2 = 2.0 * s
    logm = s2 + s2 * r
    lnu = ee * LN2_HI + (ee * LN2_LO + logm)
    rad = np.sqrt(-2.0 * lnu)
    k2 = b2 >> _U(11)                               # u2 = k2 * 2^-53 in [0, 1)
    full = _U(1 << 53)
    kk = np.minimum(k2, full - k2)                  # cos(2 pi u) = cos(2 pi (1 - u))
    neg = kk > _U(1 << 51)
    kk = np.where(neg, _U(1 << 52) - kk, kk)        # cos(pi - a) = -cos(a)
    use_sin = kk > _U(1 << 50)
    kk = np.where(use_sin, _U(1 << 51) - kk, kk)    # cos(pi/2 - a) = sin(a)
    x = kk.astype(np.float64) * TURN                # in [0, pi/4]
    x2 = x * x
    c = COS_C[-1]
    for q in COS_C[-2::-1]:
        c = q + x2 * c
    c = 1.0 + x2 * c
    sn = SIN_C[-1]
    for q in SIN_C[-2::-1]:
        sn = q + x2 * sn
    sn = x + x * (x2 * sn)
    v = np.where(use_sin, sn, c)
    v = np.where(neg, -v, v)
    return rad * v


def normal(gen, key, ctr, shape):
    if gen == "philox":
        w, _ = philox_words(key, ctr, shape)
        b1, b2 = (w[0] << _U(32)) | w[1], (w[2] << _U(32)) | w[3]
    else:
        n = _counters(ctr, shape)
        b1, b2 = squares64(n, key), squares64(n + _U(HALF), key)
    return box_muller(b1, b2)


# ---- C source (render_c emits the pieces a kernel calls) --------------------------------------
def _cf(x):
    return repr(float(x))


def _horner_c(coefs, var):
    e = _cf(coefs[-1])
    for c in coefs[-2::-1]:
        e = f"({_cf(c)} + SRR_M({var}, {e}))"
    return e


def c_pieces(mul: str):
    """[(name, source)] of the C helpers, in emission order. ``SRR_M(a, b)`` is a double
    product that is never contracted into an FMA: ``mul``, the dialect's (CUDA:
    ``__dmul_rn``; OpenCL: a plain product under the ``FP_CONTRACT OFF`` pragma the dialect
    puts before these helpers)."""
    philox = f"""#define SRR_M(a, b) {mul}
SR_FN void srr_philox(u64 key, u64 n, u64* w) {{
    u64 c0 = n & 0xFFFFFFFFUL, c1 = n >> 32, c2 = 0, c3 = 0;
    u64 k0 = key & 0xFFFFFFFFUL, k1 = key >> 32;
    for (int r = 0; r < 10; r++) {{
        if (r) {{ k0 = (k0 + {PHILOX_W0}UL) & 0xFFFFFFFFUL; k1 = (k1 + {PHILOX_W1}UL) & 0xFFFFFFFFUL; }}
        const u64 p0 = {PHILOX_M0}UL * c0, p1 = {PHILOX_M1}UL * c2;
        const u64 t0 = (p1 >> 32) ^ c1 ^ k0, t2 = (p0 >> 32) ^ c3 ^ k1;
        c1 = p1 & 0xFFFFFFFFUL; c3 = p0 & 0xFFFFFFFFUL; c0 = t0; c2 = t2;
    }}
    w[0] = c0; w[1] = c1; w[2] = c2; w[3] = c3;
}}
SR_FN u64 srr_squares32(u64 n, u64 k) {{
    u64 x = n * k, y = x, z = y + k;
    x = x * x + y; x = (x >> 32) | (x << 32);
    x = x * x + z; x = (x >> 32) | (x << 32);
    x = x * x + y; x = (x >> 32) | (x << 32);
    return (x * x + z) >> 32;
}}
SR_FN u64 srr_squares64(u64 n, u64 k) {{
    u64 x = n * k, y = x, z = y + k, t;
    x = x * x + y; x = (x >> 32) | (x << 32);
    x = x * x + z; x = (x >> 32) | (x << 32);
    x = x * x + y; x = (x >> 32) | (x << 32);
    t = x = x * x + z; x = (x >> 32) | (x << 32);
    return t ^ ((x * x + y) >> 32);
}}
SR_FN u64 srr_bits64(int g, i64 key, i64 ctr, i64 i) {{
    const u64 n = (u64)ctr + (u64)i;
    if (g) return srr_squares64(n, (u64)key);
    u64 w[4]; srr_philox((u64)key, n >> 1, w);
    return (n & 1) ? (w[2] << 32) | w[3] : (w[0] << 32) | w[1];
}}
SR_FN u64 srr_mulhi64(u64 a, u64 b) {{
    const u64 al = a & 0xFFFFFFFFUL, ah = a >> 32, bl = b & 0xFFFFFFFFUL, bh = b >> 32;
    const u64 ll = al * bl, hl = ah * bl, lh = al * bh, hh = ah * bh;
    const u64 cross = (ll >> 32) + (hl & 0xFFFFFFFFUL) + lh;
    return hh + (hl >> 32) + (cross >> 32);
}}
SR_FN i64 srr_integers(int g, i64 key, i64 ctr, i64 low, i64 rng, i64 i) {{
    const u64 b = srr_bits64(g, key, ctr, i);
    const u64 off = rng == 0 ? b : srr_mulhi64(b, (u64)rng);
    return (i64)(off + (u64)low);
}}
SR_FN float srr_uniform_f32(int g, i64 key, i64 ctr, i64 i) {{
    const u64 n = (u64)ctr + (u64)i;
    u64 w0;
    if (g) w0 = srr_squares32(n, (u64)key);
    else {{ u64 w[4]; srr_philox((u64)key, n >> 2, w); w0 = w[n & 3]; }}
    return (float)(w0 >> 8) * {_cf(TWO_M24)}f;
}}"""
    f64 = f"""SR_FN double srr_uniform_f64(int g, i64 key, i64 ctr, i64 i) {{
    return SRR_M((double)(srr_bits64(g, key, ctr, i) >> 11), {_cf(TWO_M53)});
}}
SR_FN double srr_box_muller(u64 b1, u64 b2) {{
    const u64 k = (b1 >> 12) + 1;
    u64 e = 0, t = k;
    for (int sh = 32; sh > 0; sh >>= 1) {{ const u64 s = (t >> sh) != 0 ? (u64)sh : 0; t >>= s; e += s; }}
    const u64 kn = k << (52 - e);
    double m = SRR_M((double)kn, {_cf(TWO_M52)});
    double ee = (double)e - 52.0;
    if (m > {_cf(SQRT2)}) {{ m = SRR_M(m, 0.5); ee = ee + 1.0; }}
    const double f = m - 1.0;
    const double s = f / (2.0 + f);
    const double z = SRR_M(s, s);
    const double r = SRR_M(z, {_horner_c(LOG_C, 'z')});
    const double s2 = SRR_M(2.0, s);
    const double logm = s2 + SRR_M(s2, r);
    const double lnu = SRR_M(ee, {_cf(LN2_HI)}) + (SRR_M(ee, {_cf(LN2_LO)}) + logm);
    const double rad = sqrt(SRR_M(-2.0, lnu));
    const u64 k2 = b2 >> 11;
    u64 kk = k2 < ((u64)1 << 53) - k2 ? k2 : ((u64)1 << 53) - k2;
    const int neg = kk > ((u64)1 << 51);
    if (neg) kk = ((u64)1 << 52) - kk;
    const int use_sin = kk > ((u64)1 << 50);
    if (use_sin) kk = ((u64)1 << 51) - kk;
    const double x = SRR_M((double)kk, {_cf(TURN)});
    const double x2 = SRR_M(x, x);
    const double c = 1.0 + SRR_M(x2, {_horner_c(COS_C, 'x2')});
    const double sn = x + SRR_M(x, SRR_M(x2, {_horner_c(SIN_C, 'x2')}));
    double v = use_sin ? sn : c;
    if (neg) v = -v;
    return SRR_M(rad, v);
}}
SR_FN double srr_normal(int g, i64 key, i64 ctr, i64 i) {{
    const u64 n = (u64)ctr + (u64)i;
    if (g) return srr_box_muller(srr_squares64(n, (u64)key), srr_squares64(n + ((u64)1 << 63), (u64)key));
    u64 w[4]; srr_philox((u64)key, n, w);
    return srr_box_muller((w[0] << 32) | w[1], (w[2] << 32) | w[3]);
}}"""
    return [("srr_core", philox), ("srr_f64", f64)]


def c_source(code: str, mul: str) -> str:
    """The RNG helpers the kernel ``code`` calls (empty if none); ``mul``: see ``c_pieces``."""
    if "srr_" not in code:
        return ""
    pieces = c_pieces(mul)
    out = pieces[0][1]
    if "srr_uniform_f64(" in code or "srr_normal(" in code:
        out += "\n" + pieces[1][1]
    return out
