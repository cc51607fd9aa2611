"""The integer dtypes streamrt computes in natively -- int8, int16, int32, int64, uint8,
uint16, uint32, uint64 -- with NumPy 2's semantics (wrap-around, NEP 50 promotion, exact
signed/unsigned comparisons, uint64 scalar parameters past 2**63), and the dtypes it refuses
(float16, ...) raising DTypeError at the user's line instead of being widened. The op x dtype
tables of tests/test_ops.py and the fuzzer (tests/test_fuzz.py) cover every op; this file
holds the cases those do not reach."""
from __future__ import annotations

import inspect

import numpy as np
import pytest
from helpers import EXECUTORS, INT_DTYPES, assert_same

import streamrt as ps
from streamrt.core import dtypes as D
from streamrt.frontend import array as _array
from streamrt.frontend import native

SMALL = [np.dtype(t) for t in (np.int8, np.int16, np.uint8, np.uint16, np.uint32, np.uint64)]
SMALL_IDS = [d.name for d in SMALL]


@pytest.fixture(params=EXECUTORS + ["reference"])
def backend(request):
    with ps.config.override(backend=request.param):
        yield request.param


def _line():
    """``file:line`` of the caller's next line (where the error must point)."""
    f = inspect.currentframe().f_back
    return f"{f.f_code.co_filename}:{f.f_lineno + 1}"


# ---- the bug: uint8 was widened to int64 on the way in --------------------------------------
def test_uint8_wraps_like_numpy_regression(backend):
    a = np.array([250], np.uint8)
    x = ps.asarray(a)
    assert x.dtype == np.uint8
    for _ in range(3):                  # the Python path, then the memoised / C path
        y = x + 10
        assert y.dtype == np.uint8
        assert np.asarray(y).tolist() == [4] == (a + 10).tolist()
    assert (ps.asarray(np.array([5], np.uint8)) - 10).numpy().tolist() == [251]


@pytest.mark.parametrize("dt", SMALL, ids=SMALL_IDS)
def test_dtype_kept_and_wraps(dt, backend):
    info = np.iinfo(dt)
    a = np.array([info.max, info.min, info.max - 1, 0], dt)
    b = np.array([1, info.max, 3, 0], dt)
    x, y = ps.asarray(a), ps.asarray(b)
    assert x.dtype == dt and ps.asarray(a.tolist(), dtype=dt).dtype == dt
    with np.errstate(all="ignore"):
        cases = [("x + 1", x + 1, a + 1), ("x - y", x - y, a - b), ("x * y", x * y, a * b),
                 ("-x", -x, -a), ("x * x * x", x * x * x, a * a * a), ("~x", ~x, ~a),
                 ("abs", abs(x), np.abs(a)), ("x ** 3", x ** 3, a ** 3),
                 ("x + y.astype", x + y.astype(dt), a + b)]
    for what, got, want in cases:
        assert_same(got, want, what=f"{dt} {what}")


def test_numpy2_promotion_between_integer_dtypes():
    """NEP 50 (NumPy's own answers): mixed widths and signs, uint64 with a signed dtype is
    float64, Python ints are weak, NumPy integer scalars strong."""
    arrs = {d: ps.asarray(np.ones(2, d)) for d in INT_DTYPES}
    for da, xa in arrs.items():
        for db, xb in arrs.items():
            want = (np.ones(2, da) + np.ones(2, db)).dtype
            assert (xa + xb).dtype == want, (da, db)
        assert (xa + 1).dtype == da and (2 * xa).dtype == da
        assert (xa + np.int64(1)).dtype == (np.ones(2, da) + np.int64(1)).dtype
        assert (xa / 2).dtype == np.float64 and (xa * 1.5).dtype == np.float64
    u64, i64 = arrs[np.dtype(np.uint64)], arrs[np.dtype(np.int64)]
    assert (u64 + i64).dtype == np.float64 and (u64 // i64).dtype == np.float64
    big = ps.asarray(np.array([2 ** 63, 2 ** 64 - 1], np.uint64))
    np.testing.assert_array_equal((big + ps.asarray(np.array([-1, 0]))).numpy(),
                                  np.array([2 ** 63, 2 ** 64 - 1], np.uint64)
                                  + np.array([-1, 0]))


def test_signed_and_unsigned_comparisons_are_exact(backend):
    """int64 against uint64: NumPy compares exactly (2**63 > 2**63 - 1, -1 < 2**64 - 1),
    not in their common dtype float64."""
    s = np.array([2 ** 63 - 1, -1, 0, 2 ** 63 - 1, -2 ** 63, 5], np.int64)
    u = np.array([2 ** 63, 2 ** 64 - 1, 0, 2 ** 63 - 1, 0, 5], np.uint64)
    i8 = np.array([-1, 127, 0, -128, 1, 5], np.int8)
    xs, xu, x8 = ps.asarray(s), ps.asarray(u), ps.asarray(i8)
    cases = []
    for _ in range(2):          # the second time through the operators' memoised / C path
        for name in ("less", "less_equal", "greater", "greater_equal", "equal", "not_equal"):
            f, nf = getattr(ps, name), getattr(np, name)
            cases += [(f"{name}(int64, uint64)", f(xs, xu), nf(s, u)),
                      (f"{name}(uint64, int64)", f(xu, xs), nf(u, s)),
                      (f"{name}(int8, uint64)", f(x8, xu), nf(i8, u)),
                      (f"{name}(np.int64 scalar, uint64)", f(np.int64(-1), xu),
                       nf(np.int64(-1), u)),
                      (f"{name}(uint64, np.int64 scalar)", f(xu, np.int64(2 ** 63 - 1)),
                       nf(u, np.int64(2 ** 63 - 1)))]
        cases += [("xs < xu", xs < xu, s < u), ("xu >= xs", xu >= xs, u >= s),
                  ("xs == xu", xs == xu, s == u), ("xu != xs", xu != xs, u != s)]
    for what, got, want in cases:
        assert_same(got, want, what=what)
    assert (s < u).tolist() != (s.astype(np.float64) < u.astype(np.float64)).tolist()


def test_uint64_scalar_parameters_past_2_63(backend):
    """A uint64 kernel parameter above 2**63 - 1 travels as its int64 bit pattern and is
    turned back into the value in the kernel (dtypes.u64_bits); repeated in a loop so that
    the trace cache's replay path passes it as well."""
    a = np.array([0, 1, 2 ** 63, 2 ** 64 - 1], np.uint64)
    x = ps.asarray(a)
    for k in (2 ** 64 - 1, 2 ** 63 + 5, 2 ** 63, 7, 2 ** 64 - 2):
        got = [x + k, x == k, ps.maximum(x, k), x - k, x // k, k - x, x < k]
        with np.errstate(all="ignore"):
            want = [a + k, a == k, np.maximum(a, k), a - k, a // k, k - a, a < k]
        for i, (g, w) in enumerate(zip(got, want)):
            assert_same(g, w, what=f"k={k} case {i}")
    s = np.uint64(2 ** 64 - 3)                      # a strong NumPy scalar
    assert_same(x + s, a + s, what="np.uint64 scalar")
    assert D.u64_bits(2 ** 64 - 1) == -1 and D.u64_bits(5) == 5


@pytest.mark.parametrize("dt", INT_DTYPES, ids=[d.name for d in INT_DTYPES])
def test_python_int_out_of_range_raises_on_every_path(dt):
    """A Python int that does not fit the integer dtype raises StreamrtOverflowError, as
    NumPy 2 raises OverflowError -- also once the dtype combination is memoised (the
    operators' fast path and the C record path check the range there: array._IINFO)."""
    info = np.iinfo(dt)
    x = ps.asarray(np.zeros(3, dt))
    for _ in range(2):
        x + 1                                        # validated and memoised
        for v in (int(info.max) + 1, int(info.min) - 1):
            with pytest.raises(ps.StreamrtOverflowError, match=_line()):
                x + v
            with pytest.raises(OverflowError):
                np.zeros(3, dt) + v
            with pytest.raises(ps.StreamrtOverflowError):
                v * x
    assert np.asarray(x + int(info.max)).tolist() == [int(info.max)] * 3
    assert set(_array._IINFO) == set(D.INTS)


def test_native_path_records_the_new_dtypes():
    if not native.available():
        pytest.skip("the C record path is not built here")
    x = ps.asarray(np.array([250, 7], np.uint8))
    x + 10                                           # memoised by the Python path
    before = ps.runtime_stats()["ops_recorded_native"]
    y = x + 10
    assert ps.runtime_stats()["ops_recorded_native"] == before + 1
    assert y.dtype == np.uint8 and y.numpy().tolist() == [4, 17]
    with pytest.raises(ps.StreamrtOverflowError):
        x + 256


@pytest.mark.parametrize("dt", INT_DTYPES, ids=[d.name for d in INT_DTYPES])
def test_integer_division_shifts_and_signs_follow_numpy(dt, backend):
    """Floor division and remainder with negative operands and zero divisors (0, like
    NumPy), MIN // -1, shifts by negative counts and by the width or more, sign, reciprocal
    (the kernels' helpers compute small ints in 64 bits and wrap back)."""
    info = np.iinfo(dt)
    lo, hi = int(info.min), int(info.max)
    bits = 8 * dt.itemsize
    pairs = [(7, 0), (lo, 0), (hi, 0), (0, 0), (lo, 1), (hi, 2), (hi, hi), (5, hi), (0, 3),
             (lo + 1, 7), (hi - 1, 3)]
    if dt.kind == "i":
        pairs += [(-7, 2), (7, -2), (-7, -2), (lo, -1), (-1, lo), (hi, -1), (-7, 0), (lo, lo),
                  (-5, -bits), (-5, bits), (-5, bits - 1), (3, -1)]
    else:
        pairs += [(hi, bits), (hi, bits - 1), (1, bits + 1), (hi, hi - 1)]
    a = np.array([p[0] for p in pairs], dt)
    b = np.array([p[1] for p in pairs], dt)
    x, y = ps.asarray(a), ps.asarray(b)
    got = {"//": x // y, "%": x % y, "<<": x << y, ">>": x >> y, "sign": ps.sign(x),
           "recip": ps.reciprocal(ps.where(x == 0, 1, x)), "/": x / y, "divmod0": x // 0,
           "mod0": x % 0, "pow": x ** ps.abs(y % 5) if dt.kind == "i" else x ** (y % 70)}
    with np.errstate(all="ignore"):
        want = {"//": a // b, "%": a % b, "<<": a << b, ">>": a >> b, "sign": np.sign(a),
                "recip": np.reciprocal(np.where(a == 0, 1, a).astype(dt)), "/": a / b,
                "divmod0": a // 0, "mod0": a % 0,
                "pow": a ** np.abs(b % 5) if dt.kind == "i" else a ** (b % 70)}
    for k, g in got.items():
        assert_same(g, want[k], what=f"{dt} {k}")


@pytest.mark.parametrize("dt", SMALL, ids=SMALL_IDS)
def test_reductions_accumulate_like_numpy(dt, backend):
    """sum/prod of small integers accumulate and return int64/uint64 (NumPy's dtypes); max
    and min keep the dtype (identities per dtype); mean is float64."""
    info = np.iinfo(dt)
    rng = np.random.default_rng(5)
    a = rng.integers(int(info.min), int(info.max), (6, 300), endpoint=True, dtype=dt)
    a[0, :3] = [info.max, info.min, info.max]
    x = ps.asarray(a)
    for name in ("sum", "prod", "max", "min", "mean", "argmax", "argmin", "any", "all"):
        for axis in (None, 0, 1):
            got = getattr(ps, name)(x, axis=axis)
            with np.errstate(all="ignore"):
                want = np.asarray(getattr(np, name)(a, axis=axis))
            assert got.dtype == want.dtype, (name, axis)
            assert_same(got, want, rtol=1e-12 if name == "mean" else 0.0,
                        what=f"{dt} {name}(axis={axis})")
    assert ps.sum(x).dtype == (np.uint64 if dt.kind == "u" else np.int64)
    full = ps.asarray(np.full(1000, info.max, dt))
    assert int(ps.sum(full)) == 1000 * int(info.max) % 2 ** 64       # no wrap in dt
    assert ps.max(x).dtype == dt and ps.mean(x).dtype == np.float64


@pytest.mark.parametrize("dt", SMALL + [np.dtype(np.int32)], ids=SMALL_IDS + ["int32"])
def test_random_integers_of_every_integer_dtype(dt):
    info = np.iinfo(dt)
    rng = ps.random.default_rng(3)
    lo = max(int(info.min), -100)
    r = rng.integers(lo, 100, size=5000, dtype=dt)
    full = rng.integers(int(info.min), int(info.max), size=5000, dtype=dt, endpoint=True)
    v, f = r.numpy(), full.numpy()
    assert r.dtype == dt and full.dtype == dt
    assert v.min() >= lo and v.max() < 100 and len(np.unique(v)) == 100 - lo
    assert f.dtype == dt and (f.astype(np.float64).std() > (float(info.max) - info.min) / 8)
    if dt == np.uint64:
        assert (f > np.uint64(2 ** 63)).any()      # the upper half is reached
    np.random.default_rng(0).integers(lo, 100, size=3, dtype=dt)    # NumPy's accepts it too


def test_inplace_and_setitem_follow_numpy_casting():
    u = ps.asarray(np.array([250, 3], np.uint8))
    u += 10
    assert u.dtype == np.uint8 and u.numpy().tolist() == [4, 13]
    u[0] = 255
    u *= 2
    assert u.numpy().tolist() == [254, 26]
    with pytest.raises(ps.StreamrtOverflowError):
        u += 300
    with pytest.raises(ps.StreamrtOverflowError):
        u[1] = -1
    with pytest.raises(TypeError):                 # int16 result: not 'same_kind' to uint8
        u += ps.asarray(np.array([1, 1], np.int8))
    with pytest.raises(TypeError):
        u += 1.5
    i = ps.asarray(np.array([120, -128], np.int8))
    i += np.int64(10)                               # int64 -> int8 is 'same_kind': wraps
    assert i.numpy().tolist() == [-126, -118]


# ---- dtypes streamrt refuses: an error at the call, never a widened result -------------------
def test_float16_raises_at_the_call_site():
    h = np.ones(3, np.float16)
    i8 = ps.asarray(np.arange(3, dtype=np.int8))
    calls = [lambda: ps.asarray(h), lambda: ps.asarray([1.0, 2.0], dtype=np.float16),
             lambda: ps.zeros(3, dtype=np.float16), lambda: i8.astype(np.float16),
             lambda: ps.sqrt(i8),                    # NumPy: float16 for int8 input
             lambda: ps.sin(ps.asarray(np.ones(2, bool))),
             lambda: i8 * np.float16(2.0), lambda: ps.sum(i8, dtype=np.float16),
             lambda: ps.arctan2(i8, i8), lambda: np.exp(i8)]
    for call in calls:
        with pytest.raises(ps.DTypeError, match="float32") as e:
            call()
        assert "test_int_dtypes.py:" in str(e.value), str(e.value)
    with pytest.raises(ps.DTypeError, match=_line()):
        ps.asarray(h)
    # the way out the message names works
    assert ps.sqrt(i8.astype(np.float32)).dtype == np.float32
    assert ps.sqrt(i8.astype(ps.int16)).dtype == np.float32          # NumPy: int16 -> float32


def test_other_unsupported_dtypes_raise_dtype_error():
    for a in (np.ones(2, np.longdouble), np.array(["a"]), np.array([1, None], dtype=object),
              np.array(["2020-01-01"], dtype="datetime64[D]")):
        if a.dtype == np.float64:      # (a platform whose long double is double)
            continue
        with pytest.raises(ps.DTypeError, match=_line()):
            ps.asarray(a)


def test_namespace_exposes_the_integer_dtypes():
    for name in ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"):
        assert getattr(ps, name) == np.dtype(name) and name in ps.__all__
        assert ps.zeros(2, dtype=getattr(ps, name)).dtype == np.dtype(name)
    assert ps.iinfo(ps.uint16).max == 65535


def test_clip_with_python_int_bounds_beyond_the_dtype():
    """NumPy 2: a bound beyond the dtype's range on the side it cannot clip clips nothing;
    on the other side it raises (OverflowError)."""
    u = np.array([3, 200, 0], np.uint8)
    x = ps.asarray(u)
    for lo, hi in ((-1, None), (None, 300), (-5, 7), (-1, 300), (2, 255)):
        assert_same(ps.clip(x, lo, hi), np.clip(u, lo, hi), what=f"clip({lo}, {hi})")
    for lo, hi in ((300, None), (None, -1)):
        with pytest.raises(OverflowError):
            np.clip(u, lo, hi)
        with pytest.raises(ps.StreamrtOverflowError, match=_line()):
            ps.clip(x, lo, hi)


@pytest.mark.parametrize("n", [3, 70_000])
def test_logical_ops_take_the_truth_of_a_python_number(n):
    """NumPy runs logical_and/or/xor with a Python number in its bool loop: 1e-300 is true
    even beside a float32 array (whose dtype would make it 0), nan is true, -0.0 false --
    on the NumPy tier and recorded."""
    x = np.resize(np.array([0.0, 1.0, 2.0, -0.0], np.float32), n)
    with ps.config.override(eager_elements=1 << 16):
        for f in ("logical_and", "logical_or", "logical_xor"):
            for c in (1e-300, -1e-300, 0.0, -0.0, float("nan"), 1e-300j, 3):
                want = getattr(np, f)(x, c)
                got = np.asarray(getattr(ps, f)(ps.asarray(x), c))
                np.testing.assert_array_equal(got, want, err_msg=f"{f} {c}")
                got = np.asarray(getattr(ps, f)(c, ps.asarray(x)))
                np.testing.assert_array_equal(got, getattr(np, f)(c, x), err_msg=f"{f} {c}")
