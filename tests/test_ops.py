"""Every op of the op table against NumPy: dtype and values, for each supported dtype.

Each test records many ops and reads them after one ps.sync(), so each test compiles a few
fused kernels, not one per op. Ops are enumerated from streamrt.ops: a new table entry is
tested without editing this file."""
from __future__ import annotations

import numpy as np
import pytest
from helpers import (DTYPE_IDS, DTYPES, EXECUTORS, assert_same, data, numpy_supports, op_ulps,
                     ref_call)

import streamrt as ps
from streamrt.core import dtypes as D, ops

UNARY = [n for n, o in ops.OPS.items() if o.kind == "map" and o.arity == 1 and n != "astype"]
BINARY = [n for n, o in ops.OPS.items() if o.kind == "map" and o.arity == 2]
SPECIAL = ["where", "astype"]          # tested below with their own signatures
REDUCTIONS = list(ops.REDUCTIONS) + ["var", "std"]


@pytest.fixture(params=EXECUTORS + ["cpu-interpreted", "reference"])
def backend(request):
    """Run the test on each executor: fused Numba kernels, fused OpenCL C kernels (where an
    OpenCL device works: PoCL in CI), the CPU executor's kernels interpreted (the compiled
    tier before a kernel is compiled: STREAMRT_JIT=off), and NumPy one op at a time."""
    if request.param == "cpu-interpreted":
        from streamrt.core.config import settings
        old = settings.jit
        ps.config.set(jit="off")        # (process-wide: kernels launch on the scheduler's thread)
        try:
            with ps.config.override(backend="cpu"):
                yield "cpu"
        finally:
            ps.config.set(jit=old)
        return
    with ps.config.override(backend=request.param):
        from streamrt.backends import registry
        assert registry.get().name == request.param
        yield request.param


def _no_fallbacks(stats):
    s = stats()
    assert s["kernel_splits"] == 0 and s["fallback_to_reference"] == 0, \
        "a generated kernel failed to compile (split or fell back to NumPy)"
    assert s["fallbacks"] == 0 and s["fp64_fallbacks"] == 0, \
        "a program did not run on the executor under test"


# ---- element-wise ops, every dtype -----------------------------------------------------------
@pytest.mark.parametrize("dt", DTYPES, ids=DTYPE_IDS)
def test_unary_ops(dt, backend, stats):
    a = data(dt)
    x = ps.asarray(a)
    if not D.is_float(dt):
        # integer reciprocal of 0 is 1 / 0 converted to an integer in NumPy (platform
        # dependent: INT_MIN on x86); not compared
        a_nz = np.where(a == 0, 2, a).astype(dt)
    else:
        a_nz = a
    x_nz = ps.asarray(a_nz)
    results = {}
    for name in UNARY:
        src, xs = (a_nz, x_nz) if name == "reciprocal" else (a, x)
        fn = getattr(ps, name)
        if not numpy_supports(ops.OPS[name].ref, src):
            with pytest.raises(ps.DTypeError):
                fn(xs)
            continue
        results[name] = (fn(xs), ref_call(ops.OPS[name].ref, src))
    assert results, "NumPy supports no unary op for this dtype?"
    assert stats()["kernels_launched"] == 0
    ps.sync()
    for name, (r, ref) in results.items():
        assert_same(r, ref, ulps=op_ulps(name), what=f"{name}({dt})")
    _no_fallbacks(stats)


def _binary_operands(dt, name):
    a, b = data(dt, "a"), data(dt, "b")
    if name == "power" and D.is_int(dt):
        b = np.abs(b)         # NumPy: "Integers to negative integer powers are not allowed"
    return a, b


@pytest.mark.parametrize("dt", DTYPES, ids=DTYPE_IDS)
def test_binary_ops_same_dtype(dt, backend, stats):
    results = {}
    for name in BINARY:
        a, b = _binary_operands(dt, name)
        x, y = ps.asarray(a), ps.asarray(b)
        fn = getattr(ps, name)
        if not numpy_supports(ops.OPS[name].ref, a, b):
            with pytest.raises(ps.DTypeError):
                fn(x, y)
            continue
        results[name] = (fn(x, y), ref_call(ops.OPS[name].ref, a, b))
    ps.sync()
    for name, (r, ref) in results.items():
        assert_same(r, ref, ulps=op_ulps(name), what=f"{name}({dt}, {dt})")
    _no_fallbacks(stats)


MIXED_OPS = ["add", "subtract", "multiply", "divide", "floor_divide", "less_equal", "maximum",
             "bitwise_xor", "hypot"]


def test_binary_ops_mixed_dtypes(backend, stats):
    """NumPy 2 promotion between every pair of distinct supported dtypes."""
    results = {}
    for i, da in enumerate(DTYPES):
        for db in DTYPES[i + 1:]:
            a, b = data(da, "a"), data(db, "b")
            x, y = ps.asarray(a), ps.asarray(b)
            for name in MIXED_OPS:
                ref_fn = ops.OPS[name].ref
                if not numpy_supports(ref_fn, a, b):
                    with pytest.raises(ps.DTypeError):
                        getattr(ps, name)(x, y)
                    continue
                results[name, da, db] = (getattr(ps, name)(x, y), ref_call(ref_fn, a, b))
    ps.sync()
    for (name, da, db), (r, ref) in results.items():
        assert_same(r, ref, ulps=op_ulps(name), what=f"{name}({da}, {db})")
    _no_fallbacks(stats)


SCALAR_OPS = ["add", "subtract", "multiply", "divide", "floor_divide", "remainder", "power",
              "less", "equal", "maximum", "bitwise_and"]


@pytest.mark.parametrize("dt", DTYPES, ids=DTYPE_IDS)
def test_python_scalar_operands_are_weak(dt, backend, stats):
    """array (op) Python scalar and Python scalar (op) array: NEP 50 weak scalars, e.g.
    float32 * 2.0 stays float32 and int32 + 3 stays int32."""
    a = data(dt)
    x = ps.asarray(a)
    results = {}
    for s in (True, 3, 2.5):
        for name in SCALAR_OPS:
            for reflected in (False, True):
                if name in ("power", "floor_divide", "remainder") and reflected and \
                        D.is_int(dt):
                    continue      # 3 ** negative int / 3 // 0: data-dependent NumPy errors
                args = (s, a) if reflected else (a, s)
                fn = getattr(ps, name)
                pargs = (s, x) if reflected else (x, s)
                if not numpy_supports(ops.OPS[name].ref, *args):
                    with pytest.raises(ps.DTypeError):
                        fn(*pargs)
                    continue
                results[name, s, reflected] = (fn(*pargs), ref_call(ops.OPS[name].ref, *args))
    ps.sync()
    for (name, s, refl), (r, ref) in results.items():
        what = f"{name}({s!r}, {dt})" if refl else f"{name}({dt}, {s!r})"
        assert_same(r, ref, ulps=op_ulps(name), what=what)
    _no_fallbacks(stats)


def test_weak_scalar_dtypes_nep50():
    f32 = ps.asarray(np.ones(3, np.float32))
    i32 = ps.asarray(np.ones(3, np.int32))
    b = ps.asarray(np.ones(3, bool))
    assert (f32 * 2.0).dtype == np.float32
    assert (2.0 * f32).dtype == np.float32
    assert (f32 + 1).dtype == np.float32
    assert (i32 + 1).dtype == np.int32
    assert (i32 * 1.5).dtype == np.float64
    assert (i32 / 2).dtype == np.float64
    assert (b + 1).dtype == np.int64
    assert (b + 1.0).dtype == np.float64
    assert (b & True).dtype == np.bool_
    assert (i32 + np.float64(1.0)).dtype == np.float64       # NumPy scalars are strong
    assert (f32 * np.float64(2.0)).dtype == np.float64
    assert (f32 * np.float32(2.0)).dtype == np.float32
    assert (i32 + np.int64(1)).dtype == np.int64
    assert (f32 + i32).dtype == np.float64
    np.testing.assert_array_equal((i32 + np.int64(1)).numpy(), np.full(3, 2, np.int64))


def test_operators_reflected_and_inplace(stats):
    a, b = data(np.float64), data(np.float64, "b")
    ia, ib = data(np.int64), np.abs(data(np.int64, "b")) % 5
    x, y, i, j = ps.asarray(a), ps.asarray(b), ps.asarray(ia), ps.asarray(ib)
    got = {
        "add": x + y, "radd": 2.0 + x, "sub": x - y, "rsub": 1 - x, "mul": x * y,
        "rmul": 3 * x, "div": x / y, "rdiv": 1.0 / x, "floordiv": x // y, "rfloordiv": 7 // i,
        "mod": x % y, "rmod": 7.5 % x, "pow": x ** 2, "rpow": 2 ** x, "ipow": i ** j,
        "and": i & j, "rand": 6 & i, "or": i | j, "ror": 1 | i, "xor": i ^ j, "rxor": 3 ^ i,
        "lshift": i << j, "rlshift": 1 << j, "rshift": i >> j, "rrshift": 1024 >> j,
        "lt": x < y, "le": x <= y, "gt": x > y, "ge": x >= y, "eq": x == y, "ne": x != y,
        "neg": -x, "pos": +x, "abs": abs(x), "invert": ~i, "not": ~(x > 0),
    }
    with np.errstate(all="ignore"):
        want = {
            "add": a + b, "radd": 2.0 + a, "sub": a - b, "rsub": 1 - a, "mul": a * b,
            "rmul": 3 * a, "div": a / b, "rdiv": 1.0 / a, "floordiv": a // b,
            "rfloordiv": 7 // np.where(ia == 0, 1, ia), "mod": a % b, "rmod": 7.5 % a,
            "pow": a ** 2, "rpow": 2 ** a, "ipow": ia ** ib, "and": ia & ib, "rand": 6 & ia,
            "or": ia | ib, "ror": 1 | ia, "xor": ia ^ ib, "rxor": 3 ^ ia, "lshift": ia << ib,
            "rlshift": 1 << ib, "rshift": ia >> ib, "rrshift": 1024 >> ib, "lt": a < b,
            "le": a <= b, "gt": a > b, "ge": a >= b, "eq": a == b, "ne": a != b, "neg": -a,
            "pos": +a, "abs": abs(a), "invert": ~ia, "not": ~(a > 0),
        }
    # 7 // 0 is 0 in NumPy (with a warning); compare that element separately
    want["rfloordiv"] = np.where(ia == 0, 0, want["rfloordiv"])
    # in-place forms rebind the name to a new lazy array
    z = x * 1.0
    z += y
    z *= 2.0
    z -= 1
    z /= 4.0
    k = i * 1
    k //= 2
    k %= 3
    k **= 2
    k <<= 1
    k >>= 1
    k |= 8
    k &= 12
    k ^= 5
    got["inplace_f"], got["inplace_i"] = z, k
    want["inplace_f"] = ((a + b) * 2.0 - 1) / 4.0
    kk = ((((ia // 2) % 3) ** 2) << 1) >> 1
    want["inplace_i"] = ((kk | 8) & 12) ^ 5
    assert stats()["kernels_launched"] == 0
    ps.sync()
    for k_, v in got.items():
        assert_same(v, want[k_], ulps=4 if k_ in ("pow", "rpow") else 0, what=k_)


def test_ufuncs_and_functions_stay_lazy(stats):
    """np.<ufunc>(streamrt array) and np.sum/np.where/... return streamrt arrays, unrun."""
    a, b = data(np.float64), data(np.float64, "b")
    x, y = ps.asarray(a), ps.asarray(b)
    got = {"sin": np.sin(x), "add": np.add(x, y), "maximum": np.maximum(x, 0.5),
           "where": np.where(x > 0, x, y), "sum": np.sum(x), "mean": np.mean(x),
           "max": np.max(x), "clip": np.clip(x, -1, 1), "add.reduce": np.add.reduce(x),
           "sqrt_dtype": np.sqrt(x, dtype=np.float32)}
    for k, v in got.items():
        assert isinstance(v, ps.Array), k
    assert stats()["kernels_launched"] == 0
    with np.errstate(all="ignore"):
        want = {"sin": np.sin(a), "add": a + b, "maximum": np.maximum(a, 0.5),
                "where": np.where(a > 0, a, b), "sum": np.sum(a), "mean": np.mean(a),
                "max": np.max(a), "clip": np.clip(a, -1, 1), "add.reduce": np.add.reduce(a),
                "sqrt_dtype": np.sqrt(a).astype(np.float32)}
    ps.sync()
    for k, v in got.items():
        assert_same(v, want[k], ulps=4, what=k)


def test_broadcasting_shapes(backend, stats):
    rng = np.random.default_rng(3)
    a = rng.uniform(-2, 2, (5, 1, 3))
    b = rng.uniform(-2, 2, (4, 3))
    c = rng.uniform(-2, 2, (3,))
    d = rng.integers(-3, 4, (4, 1)).astype(np.int32)
    x, y, z, w = (ps.asarray(v) for v in (a, b, c, d))
    got = [x + y, x * z - y, ps.maximum(y, z), w * y, ps.where(w > 0, x, z), (x < y) & (z > 0),
           x + 1.5, w + c, ps.hypot(x, w)]
    want = [a + b, a * c - b, np.maximum(b, c), d * b, np.where(d > 0, a, c), (a < b) & (c > 0),
            a + 1.5, d + c, np.hypot(a, d)]
    ps.sync()
    for i, (g, e) in enumerate(zip(got, want)):
        assert_same(g, e, ulps=4, what=f"case {i}")
    _no_fallbacks(stats)


def test_integer_division_by_zero_and_overflow_follow_numpy(backend, stats):
    """NumPy: n // 0 == 0 and n % 0 == 0 (with a warning), INT_MIN // -1 wraps to INT_MIN,
    n / 0 is +-inf or nan; streamrt gives the same values and raises nothing."""
    for dt in (np.int32, np.int64):
        lo = np.iinfo(dt).min
        a = np.array([7, -7, 0, lo, lo, 5, -5, lo], dt)
        b = np.array([0, 0, 0, -1, 0, -1, 2, 1], dt)
        x, y = ps.asarray(a), ps.asarray(b)
        got = [x // y, x % y, x / y, ps.floor_divide(x, 0), ps.remainder(x, 0), x / 0]
        with np.errstate(all="ignore"):
            want = [a // b, a % b, a / b, a // 0, a % 0, a / 0]
        assert want[0][0] == 0 and want[1][0] == 0 and want[0][3] == lo
        ps.sync()
        for i, (g, w) in enumerate(zip(got, want)):
            assert_same(g, w, what=f"{dt.__name__} case {i}")
    _no_fallbacks(stats)


def test_constant_folding_matches_numpy_in_streamrt_dtypes(stats):
    """Ops whose operands are all known scalars are folded at record time; the folded value
    is computed in the same dtype as a kernel would (sin(bool) in float32, not float16)."""
    cases = []
    for dt in DTYPES:
        a = np.asarray(data(dt)[5])                       # a 0-d array
        for name in ("sin", "arccos", "exp", "sqrt", "negative", "floor", "reciprocal",
                     "invert", "isnan"):
            if not numpy_supports(ops.OPS[name].ref, a) or (name == "reciprocal" and a == 0):
                continue
            cases.append((f"{name}({dt})", getattr(ps, name)(ps.asarray(a)),
                          ref_call(ops.OPS[name].ref, a), op_ulps(name)))
        if numpy_supports(np.add, a, a):
            cases.append((f"add({dt}, 3)", ps.asarray(a) + 3, ref_call(np.add, a, 3), 0))
    assert stats()["ops_recorded"] == 0            # nothing recorded: all folded
    for what, got, want, ulps in cases:
        assert_same(got, want, ulps=ulps, what=what)
    assert stats()["kernels_launched"] == 0


# ---- where, clip, astype ---------------------------------------------------------------------
def test_where(backend, stats):
    cases = []
    cond_src = data(np.float64) > 0
    c = ps.asarray(cond_src)
    for dx in DTYPES:
        for dy in DTYPES:
            a, b = data(dx), data(dy, "b")
            cases.append((f"where(c, {dx}, {dy})", ps.where(c, ps.asarray(a), ps.asarray(b)),
                          ref_call(np.where, cond_src, a, b)))
    ia = data(np.int32)
    cases += [
        ("scalars", ps.where(c, 1, 0), np.where(cond_src, 1, 0)),
        ("array, python float", ps.where(c, ps.asarray(ia), 2.5), np.where(cond_src, ia, 2.5)),
        ("python int, int32", ps.where(c, 7, ps.asarray(ia)), np.where(cond_src, 7, ia)),
        ("int condition", ps.where(ps.asarray(ia), 1.0, -1.0), np.where(ia, 1.0, -1.0)),
        ("float condition (nan is true)", ps.where(ps.asarray(data(np.float32)), 1, 0),
         np.where(data(np.float32), 1, 0)),
    ]
    ps.sync()
    for what, got, want in cases:
        assert_same(got, want, what=what)
    _no_fallbacks(stats)


def test_clip(backend, stats):
    f, i = data(np.float64), data(np.int32)
    x, y = ps.asarray(f), ps.asarray(i)
    lo, hi = data(np.float64, "b"), np.abs(data(np.float64, "b"))
    cases = [
        ("float, scalars", ps.clip(x, -1, 1.5), np.clip(f, -1, 1.5)),
        ("float32 stays float32", ps.clip(ps.asarray(f.astype(np.float32)), -1.0, 1.0),
         np.clip(f.astype(np.float32), -1.0, 1.0)),
        ("int, int scalars", ps.clip(y, -2, 3), np.clip(i, -2, 3)),
        ("int, float scalar", ps.clip(y, -2.5, 3), np.clip(i, -2.5, 3)),
        ("only min", ps.clip(x, 0, None), np.clip(f, 0, None)),
        ("only max", ps.clip(y, None, 1), np.clip(i, None, 1)),
        ("method", x.clip(-0.5, 0.5), f.clip(-0.5, 0.5)),
        ("array bounds", ps.clip(x, ps.asarray(lo), ps.asarray(hi)), np.clip(f, lo, hi)),
    ]
    ps.sync()
    for what, got, want in cases:
        assert_same(got, want, what=what)
    # NumPy 2.1+: no bound at all is a copy
    assert_same(ps.clip(x, None, None), np.clip(f, None, None), what="no bounds")
    _no_fallbacks(stats)


def test_astype_every_pair(backend, stats):
    results = []
    for src in DTYPES:
        a = data(src)
        if D.is_float(src):
            a = np.where(np.isfinite(a), a * 7.3, a)
        x = ps.asarray(a)
        for dst in DTYPES:
            if D.is_float(src) and not D.is_float(dst) and dst != D.bool_:
                # float -> int of NaN/inf, or of a value outside the integer dtype's range
                # (-7.3 -> uint32), is undefined in C; NumPy's value depends on the platform
                # (and on how its loop was vectorised): values in range only
                info = np.iinfo(dst)
                with np.errstate(invalid="ignore"):
                    ok = np.isfinite(a) & (a > float(info.min) - 1) & (a < float(info.max) + 1)
                xa, aa = ps.asarray(np.where(ok, a, 0)), np.where(ok, a, 0).astype(src)
            else:
                xa, aa = x, a
            results.append((f"{src}->{dst}", xa.astype(dst), aa.astype(dst)))
            results.append((f"ps.astype {src}->{dst}", ps.astype(xa, dst), aa.astype(dst)))
    ps.sync()
    for what, got, want in results:
        assert_same(got, want, what=what)
    _no_fallbacks(stats)


# ---- reductions ------------------------------------------------------------------------------
def _reduce_ref(name, a, axis, keepdims):
    fn = getattr(np, name)
    with np.errstate(all="ignore"):
        if name in ("sum", "mean", "var", "std") and a.dtype == np.float32:
            # streamrt accumulates float32 in float64 and rounds once: compare against the
            # float64 result rounded to float32 (NumPy's float32 pairwise sum is less exact)
            r = fn(a.astype(np.float64), axis=axis, keepdims=keepdims).astype(np.float32)
        else:
            r = fn(a, axis=axis, keepdims=keepdims)
    return np.asarray(r, dtype=D.canonical(np.asarray(r).dtype))


def _reduce_tol(name, a):
    if name in ("sum", "mean", "var", "std", "prod") and a.dtype.kind == "f":
        return dict(ulps=8, rtol=1e-13 if a.dtype == np.float64 else 0.0)
    if name in ("mean", "var", "std"):
        return dict(ulps=8)
    return {}


def _axes_for(ndim):
    axes = [None] + list(range(ndim)) + list(range(-ndim, 0))
    if ndim >= 2:
        axes += [(0, ndim - 1), (-1, 0), tuple(range(ndim))]
    if ndim == 3:
        axes += [(0, 1), (1, 2)]
    return axes


def _record_all_reductions(x, a, axes_list, names=REDUCTIONS, keepdims=(False, True)):
    out = []
    for axis in axes_list:
        for kd in keepdims:
            for name in names:
                if name in ("argmax", "argmin") and isinstance(axis, tuple):
                    with pytest.raises(ps.ArgumentError):
                        getattr(ps, name)(x, axis=axis)
                    continue
                got = getattr(ps, name)(x, axis=axis, keepdims=kd)
                out.append((f"{name}(axis={axis}, keepdims={kd})", got,
                            _reduce_ref(name, a, axis, kd), _reduce_tol(name, a)))
    return out


def _reduction_input(shape, dt, seed=0):
    rng = np.random.default_rng(seed)
    dt = np.dtype(dt)
    if dt == D.bool_:
        return rng.random(shape) < 0.6
    if D.is_int(dt):
        return rng.integers(-4, 5, shape).astype(dt)
    return rng.uniform(-2, 2, shape).astype(dt)


@pytest.mark.parametrize("shape", [(7,), (4, 6), (3, 4, 5)], ids=["1d", "2d", "3d"])
def test_reductions_every_axis_float64(shape, backend, stats):
    """sum prod max min mean var std any all argmax argmin over None, each axis, negative axes
    and tuples of axes, with and without keepdims."""
    a = _reduction_input(shape, np.float64)
    a.flat[3] = 0.0              # any/all see a zero
    x = ps.asarray(a)
    cases = _record_all_reductions(x, a, _axes_for(len(shape)))
    ps.sync()
    for what, got, want, tol in cases:
        assert_same(got, want, what=what, **tol)
    _no_fallbacks(stats)


@pytest.mark.parametrize("dt", [d for d in DTYPES if d != np.float64],
                         ids=[i for i in DTYPE_IDS if i != "float64"])
def test_reductions_dtypes(dt, backend, stats):
    """Result dtypes follow NumPy: sum/prod of int32/bool -> int64, mean of ints -> float64,
    argmax -> int64, any/all -> bool; float32 means stay float32."""
    a = _reduction_input((4, 6), dt, seed=2)
    x = ps.asarray(a)
    cases = _record_all_reductions(x, a, [None, 1, -2], keepdims=(False,))
    ps.sync()
    for what, got, want, tol in cases:
        assert_same(got, want, what=f"{dt} {what}", **tol)
    _no_fallbacks(stats)


def test_reductions_nan_and_ties(backend, stats):
    f = np.array([[1.0, np.nan, 3.0, 5.0], [2.0, 2.0, -1.0, -1.0], [0.0, 4.0, np.nan, 4.0]])
    x = ps.asarray(f)
    cases = []
    for name in ("max", "min", "argmax", "argmin", "sum", "mean"):
        for axis in (None, 0, 1):
            cases.append((f"{name}(axis={axis})", getattr(ps, name)(x, axis=axis),
                          getattr(np, name)(f, axis=axis)))
    ps.sync()
    for what, got, want in cases:
        assert_same(got, want, ulps=2, what=what)


def test_reductions_of_views(backend, stats):
    """Reductions read slices, transposes and broadcasts through strides."""
    a = _reduction_input((6, 8), np.float64, seed=4)
    v = _reduction_input((5,), np.float64, seed=5)
    x, y = ps.asarray(a), ps.asarray(v)
    views = {
        "slice": (x[1:, ::2], a[1:, ::2]),
        "reversed": (x[::-1, 2:7], a[::-1, 2:7]),
        "transpose": (x.T, a.T),
        "broadcast": (ps.broadcast_to(y, (4, 5)), np.broadcast_to(v, (4, 5))),
        "newaxis": (y[:, None], v[:, None]),
        "row of transpose": (x.T[3], a.T[3]),
    }
    cases = []
    for vname, (pv, nv) in views.items():
        axes = [None] + list(range(nv.ndim))
        for what, got, want, tol in _record_all_reductions(
                pv, nv, axes, names=("sum", "max", "argmin", "mean", "var"), keepdims=(False,)):
            cases.append((f"{vname}: {what}", got, want, tol))
    ps.sync()
    for what, got, want, tol in cases:
        assert_same(got, want, what=what, **tol)
    _no_fallbacks(stats)


def test_reductions_of_empty_arrays_with_identity(stats):
    z = ps.zeros((0, 3))
    zn = np.zeros((0, 3))
    cases = [("sum axis 0", ps.sum(z, axis=0), zn.sum(0)), ("sum", ps.sum(z), zn.sum()),
             ("prod axis 0", ps.prod(z, axis=0), zn.prod(0)),
             ("any", ps.any(z), np.any(zn)), ("all", ps.all(z), np.all(zn)),
             ("max over the non-empty axis", ps.max(z, axis=1), zn.max(1))]
    ps.sync()
    for what, got, want in cases:
        assert_same(got, want, what=what)


def test_reduction_methods_and_ddof(stats):
    a = _reduction_input((5, 4), np.float64, seed=6)
    x = ps.asarray(a)
    cases = [("x.sum()", x.sum(), a.sum()), ("x.max(axis=0)", x.max(axis=0), a.max(0)),
             ("x.argmax(axis=1)", x.argmax(axis=1), a.argmax(1)),
             ("x.var(ddof=1)", x.var(ddof=1), a.var(ddof=1)),
             ("std(axis=0, ddof=1)", ps.std(x, axis=0, ddof=1), np.std(a, axis=0, ddof=1)),
             ("sum(dtype=float32)", x.sum(dtype=np.float32), a.sum(dtype=np.float64)
              .astype(np.float32)),
             ("mean(axis=(0, 1))", x.mean(axis=(0, 1)), a.mean((0, 1)))]
    ps.sync()
    for what, got, want in cases:
        assert_same(got, want, ulps=8, what=what)


def _small(v):
    return v if not D.is_int(v.dtype) else (v.astype(np.int64) % 19 - 9).astype(v.dtype) \
        if v.dtype.kind == "i" else v % 19


def test_dot_of_vectors(backend, stats):
    rng = np.random.default_rng(7)
    m = rng.uniform(-2, 2, (5, 9))
    X = ps.asarray(m)
    cases = []
    for da in DTYPES:
        for db in DTYPES:
            # finite values; integers small (the extremes in float64 sums cancel: any other
            # summation order than NumPy's is then far from its result)
            a, b = _small(data(da)[6:20]), _small(data(db, "b")[6:20])
            cases.append((f"dot({da}, {db})", ps.dot(ps.asarray(a), ps.asarray(b)),
                          ref_call(np.dot, a, b)))
    cases += [("dot of views", ps.dot(X[1], X[3]), np.dot(m[1], m[3])),
              ("dot of strided views", ps.dot(X[:, 1], X[:, 4]), np.dot(m[:, 1], m[:, 4])),
              ("vdot", ps.vdot(X, X), np.vdot(m, m)),
              ("method", X[0].dot(X[2]), m[0].dot(m[2]))]
    ps.sync()
    for what, got, want in cases:
        tol = dict(ulps=8, rtol=1e-6 if np.asarray(want).dtype == np.float32 else 1e-13)
        assert_same(got, want, what=what, **tol)
    with pytest.raises(ps.ShapeError):
        ps.dot(X[0], X[:, 0])
    _no_fallbacks(stats)


# ---- completeness ----------------------------------------------------------------------------
def test_op_table_completeness():
    """Every op of the table is exposed as ps.<name> (and its aliases), dispatched from its
    NumPy ufunc, renders to Numba for every dtype NumPy supports, and is covered by a test
    above for at least one dtype."""
    covered = set(UNARY) | set(BINARY) | set(SPECIAL)
    # random-number ops (no array inputs, not in the namespace): tests/test_random.py
    table = {n: o for n, o in ops.OPS.items() if not o.counter}
    assert covered == set(table), set(table) ^ covered
    assert set(ops.REDUCTIONS) <= set(REDUCTIONS)
    x = ps.asarray(np.ones(3))
    for name, op in table.items():
        assert callable(getattr(ps, name, None)), f"ps.{name} is missing"
        for al in op.aliases:
            assert getattr(ps, al) is getattr(ps, name), f"ps.{al} is not ps.{name}"
        assert callable(op.ref), name
        supported = []
        for dt in DTYPES:
            args = [np.ones(2, dt)] * op.arity
            if name == "astype":
                args = [np.ones(2, dt), dt]
            elif name == "where":
                args = [np.ones(2, bool), np.ones(2, dt), np.ones(2, dt)]
            if numpy_supports(op.ref, *args):
                supported.append(dt)
                expr = ops.numba_expr(op, D.canonical(dt), tuple(f"v{i}" for i in
                                                                 range(op.arity)))
                assert isinstance(expr, str) and expr, name
        assert supported, f"{name}: no supported dtype, so it is never tested"
        if op.ufunc is not None:
            import scipy.special
            uf = getattr(np, op.ufunc, None) or getattr(scipy.special, op.ufunc)   # (erf)
            r = uf(*[ps.asarray(np.ones(3, supported[0]))] * op.arity)
            assert isinstance(r, ps.Array), f"{op.ufunc} ufunc on a streamrt array is not lazy"
    for name in REDUCTIONS:
        assert callable(getattr(ps, name)), f"ps.{name} is missing"
        assert isinstance(getattr(ps, name)(x), ps.Array)
    ps.sync()


@pytest.mark.parametrize("dt", [np.float32, np.int32], ids=["float32", "int32"])
@pytest.mark.parametrize("shape,axis", [((3, 1029), 1), ((40000,), None)], ids=["rows", "all"])
def test_blocked_reductions_across_block_and_lane_boundaries(dt, shape, axis, stats):
    """The Numba renderer's one-axis reductions fold 256-element blocks into 4 accumulator
    lanes (proggen/render_numba.py): rows whose length is no multiple of either, NaNs in a
    lane, in a block's first element and in the remainder; the 40,000-element reduction is
    also cut into chunks."""
    rng = np.random.default_rng(11)
    a = (rng.uniform(0.999, 1.001, shape) if dt == np.float32 else
         rng.integers(-3, 4, shape)).astype(dt)
    if dt == np.float32:
        a2 = a.copy()
        a2.reshape(-1)[[5, 256, 1027, 2 * 1029 + 1028]] = np.nan
    x = ps.asarray(a)
    names = ("sum", "prod", "max", "min", "mean", "any", "all")
    got = {n: getattr(ps, n)(x, axis=axis) for n in names}
    if dt == np.float32:
        x2 = ps.asarray(a2)
        got.update({f"nan-{n}": getattr(ps, n)(x2, axis=axis) for n in ("max", "min", "sum")})
    ps.sync()
    assert stats()["kernels_launched"] == 1          # every reduction in one kernel
    for n in names:
        want = getattr(np, n)(a, axis=axis)
        if n in ("sum", "prod", "mean") and dt == np.float32:
            # NumPy's float32 product rounds 40,000 times (relative error ~1e-5): order and
            # accumulator width differ
            assert_same(got[n], want, rtol=5e-5, what=n)
        else:
            assert_same(got[n], want, what=n)
    if dt == np.float32:
        for n in ("max", "min", "sum"):
            assert_same(got[f"nan-{n}"], getattr(np, n)(a2, axis=axis), rtol=5e-5,
                        what=f"{n} with NaN")
    _no_fallbacks(stats)
