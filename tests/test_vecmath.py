"""The vectorisable transcendental primitives (executors/vecmath.py) against NumPy over the whole
float range: every binade (uniform random bit patterns, so subnormals, huge arguments and both
signs are all sampled), the special values and the overflow/underflow edges; then through the
public API on the CPU executor with STREAMRT_FAST_MATH on and off.

Bounds are those of docs/fastmath.md. Each dtype's primitives run in one compiled kernel."""
from __future__ import annotations

from decimal import Decimal, getcontext

import numpy as np
import pytest
from numba import njit, prange

import streamrt as ps
from streamrt.core import ops
from streamrt.backends.numba_cpu import vecmath as V

UNARY = ["exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sin", "cos", "tan", "sinh",
         "cosh", "tanh", "cbrt"]
# documented bounds (docs/fastmath.md): float32 vs the correctly rounded result, float64 vs NumPy
BOUND64 = {"exp": 2, "exp2": 2, "log": 2, "log1p": 2, "sin": 2, "cos": 2, "expm1": 3, "log2": 3,
           "log10": 3, "tan": 3, "sinh": 3, "cosh": 3, "tanh": 3, "cbrt": 4}
EDGES = {np.float32: [88.72283, 88.722839, 88.7229, -87.33654, -87.3366, -103.972, -103.973,
                      -104.0, 1e-45, -1e-45, 1.1754942e-38, 3.4028235e38, -3.4028235e38,
                      1e-30, 1.0000001, 0.99999994, -0.99999994, 1e-8, 1.6e6, 1.7e6, 1e20,
                      0.7853982, 1.5707964, 3.1415927, 22.0, 9.0, -9.0, 128.0, -150.0],
         np.float64: [709.782712893384, 709.7827128933841, 710.0, -708.3964185322641,
                      -745.1332191019411, -745.1332191019412, -746.0, 5e-324, -5e-324,
                      2.2250738585072009e-308, 1.7976931348623157e308, -1.7976931348623157e308,
                      1e-300, 1.0000000000000002, 0.9999999999999999, -0.9999999999999999,
                      1e-17, 1.6e6, 1.7e6, 1e22, 0.7853981633974483, 1.5707963267948966,
                      3.141592653589793, 22.0, 40.0, 1024.0, -1075.0, 1e300]}
SPECIAL = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 0.5, 2.0, -2.0]


def samples(dt, n=150_000, seed=0):
    dt = np.dtype(dt)
    rng = np.random.default_rng(seed)
    it = np.uint32 if dt == np.float32 else np.uint64
    bits = rng.integers(0, np.iinfo(it).max, size=n, dtype=it, endpoint=True)
    x = bits.view(dt)
    x = x[~np.isnan(x)]
    e = np.array(EDGES[dt.type], dt)
    return np.concatenate([np.array(SPECIAL, dt), e, -e, x])


def _kernel(dt):
    suf = "f32" if np.dtype(dt) == np.float32 else "f64"
    lines = [f"        o[{j}, i] = _vm_{n}_{suf}(v)" for j, n in enumerate(UNARY)]
    src = ("def k(x, o):\n    for i in prange(x.shape[0]):\n        v = x[i]\n"
           + "\n".join(lines) + "\n")
    ns = {"prange": prange, **{f: getattr(V, f) for f in V.__all__}}
    exec(src, ns)
    return njit(parallel=True, error_model="numpy")(ns["k"])


@pytest.fixture(scope="module", params=[np.float32, np.float64], ids=["float32", "float64"])
def results(request):
    dt = np.dtype(request.param)
    x = samples(dt)
    out = np.empty((len(UNARY), len(x)), dt)
    _kernel(dt)(x, out)
    return dt, x, dict(zip(UNARY, out))


def reference(name, x):
    with np.errstate(all="ignore"):
        if x.dtype == np.float32:       # correctly rounded (to within a double rounding)
            return getattr(np, name)(x.astype(np.float64)).astype(np.float32)
        return getattr(np, name)(x)


def check(got, ref, bound, what):
    gn, rn = np.isnan(got), np.isnan(ref)
    assert (gn == rn).all(), f"{what}: NaN differs at x index {np.flatnonzero(gn != rn)[:5]}"
    inf = np.isinf(ref) | np.isinf(got)
    assert (got[inf & ~rn] == ref[inf & ~rn]).all(), f"{what}: infinities differ"
    zero = (ref == 0) & ~rn
    assert (np.signbit(got[zero]) == np.signbit(ref[zero])).all(), f"{what}: sign of zero"
    fin = ~inf & ~rn
    err = (np.abs(got[fin].astype(np.float64) - ref[fin].astype(np.float64))
           / np.spacing(np.abs(ref[fin])).astype(np.float64))
    assert err.max(initial=0) <= bound, f"{what}: {err.max()} ulp > {bound}"
    return err.max(initial=0)


@pytest.mark.parametrize("name", UNARY)
def test_primitive_accuracy_whole_range(results, name):
    dt, x, out = results
    bound = 1 if dt == np.float32 else BOUND64[name]
    ref = reference(name, x)
    if name == "cbrt" and dt == np.float64:
        bound = 4     # NumPy's (glibc's) cbrt is itself up to 3 ulp off: check against exact too
        getcontext().prec = 50
        sel = np.flatnonzero(np.isfinite(x) & (x != 0))[:3000]
        third = Decimal(1) / 3
        exact = np.array([np.copysign(float(Decimal(abs(float(v))) ** third), v) for v in x[sel]])
        check(out["cbrt"][sel], exact, 1, "cbrt float64 vs exact")
    check(out[name], ref, bound, f"{name} {dt}")


def test_subnormal_and_overflow_edges_exactly_like_numpy(results):
    """Where the result is 0, a subnormal, the largest finite value or inf, it is NumPy's."""
    dt, x, out = results
    tiny = np.finfo(dt).tiny
    for name in ("exp", "exp2", "expm1", "sinh", "cosh"):
        ref = reference(name, x)
        edge = np.isinf(ref) | (np.abs(ref) < tiny) | (np.abs(ref) == np.finfo(dt).max)
        got = out[name][edge]
        np.testing.assert_array_max_ulp(got[np.isfinite(ref[edge])],
                                        ref[edge][np.isfinite(ref[edge])], maxulp=1)
        assert (got[np.isinf(ref[edge])] == ref[edge][np.isinf(ref[edge])]).all()


def test_float32_pow_special_cases():
    vals = np.array(SPECIAL + [3.0, -3.0, 0.25, -0.25, 1e-40, 1e30, -7.5, 127.0, -128.0,
                               np.float32(1.0000001), 16777217.0, -16777216.0], np.float32)
    xs, ys = np.meshgrid(vals, vals)
    xs = np.concatenate([xs.ravel(), np.random.default_rng(3).uniform(0, 50, 20000)])
    ys = np.concatenate([ys.ravel(), np.random.default_rng(4).uniform(-30, 30, 20000)])
    xs, ys = xs.astype(np.float32), ys.astype(np.float32)

    @njit(parallel=True, error_model="numpy")
    def k(a, b, o):
        for i in prange(a.shape[0]):
            o[i] = V._vm_pow_f32(a[i], b[i])
    out = np.empty_like(xs)
    k(xs, ys, out)
    with np.errstate(all="ignore"):
        ref = np.power(xs.astype(np.float64), ys.astype(np.float64)).astype(np.float32)
    check(out, ref, 1, "pow float32")


def test_float32_erf_whole_range():
    """erf (float32 only: float64 erf is libm's) against scipy's float64 erf, rounded."""
    from scipy.special import erf
    x = samples(np.float32)
    x = np.concatenate([x, np.linspace(-5, 5, 200_001, dtype=np.float32),
                        np.array([0.99999994, 1.0, 1.0000001, 3.9999998, 4.0, 4.0000005,
                                  3.91, -3.91], np.float32)])

    @njit(parallel=True, error_model="numpy")
    def k(a, o):
        for i in prange(a.shape[0]):
            o[i] = V._vm_erf_f32(a[i])
    out = np.empty_like(x)
    k(x, out)
    check(out, erf(x.astype(np.float64)).astype(np.float32), 1, "erf float32")


# ---- through the public API ------------------------------------------------------------------
def _fused(dt):
    return [n for n, dts in ops.VECMATH.items() if np.dtype(dt) in dts]


def _reference_any(name, x):
    if name == "erf":
        from scipy.special import erf
        return erf(x.astype(np.float64)).astype(x.dtype)
    return reference(name, x)


@pytest.mark.parametrize("dt", [np.float32, np.float64], ids=["float32", "float64"])
def test_public_api_fused_kernel(dt, stats):
    x = samples(dt, n=20_000, seed=7)
    fused = _fused(dt)
    got = [getattr(ps, n)(ps.asarray(x)) for n in fused]   # one fused kernel, every primitive
    for n, g in zip(fused, got):
        g = np.asarray(g)
        assert g.dtype == dt
        check(g, _reference_any(n, x), 1 if dt == np.float32 else BOUND64[n], f"ps.{n} {dt}")
    s = stats()
    assert s["kernels_launched"] == 1 and s["fallback_to_reference"] == 0


def test_fast_math_setting_switches_the_generated_code(stats):
    from streamrt.backends.numba_cpu import render as render_numba  # noqa: F401
    x = np.linspace(-3, 3, 101).astype(np.float32)
    a = ps.asarray(x)
    on = np.asarray(ps.exp(a) + ps.log1p(ps.abs(a)))
    assert "_vm_exp_f32" in ops.numba_expr(ops.OPS["exp"], np.dtype(np.float32), ("v",))
    with ps.config.override(fast_math=False):
        assert ops.numba_expr(ops.OPS["exp"], np.dtype(np.float32), ("v",)) == "np.exp(v)"
        off = np.asarray(ps.exp(a) + ps.log1p(ps.abs(a)))
    s = stats()
    assert s["trace_cache_misses"] == 2      # the setting is part of the trace key
    ref = np.exp(x) + np.log1p(np.abs(x))
    np.testing.assert_array_max_ulp(on, ref, maxulp=2)
    np.testing.assert_array_max_ulp(off, ref, maxulp=4)
    # integer and complex-free dtypes other than float32/float64 keep NumPy's function
    assert ops.numba_expr(ops.OPS["sin"], np.dtype(np.float32), ("v",)) == "np.sin(v)"


def test_program_cache_key_covers_vecmath():
    from streamrt.core import keys
    assert "vecmath=" in keys.compiler_versions()
