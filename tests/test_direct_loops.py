"""The NumPy tier calls NumPy's inner loops itself (frontend/_loops.c): the values, dtypes,
warnings and errors are NumPy's, bit for bit, for every ufunc, dtype and operand layout; the
calls it does not take are left to NumPy's own call."""
import warnings

import numpy as np
import pytest
from helpers import jit_mode

import streamrt as ps
from streamrt.core import dtypes as D
from streamrt.core.ops import UFUNC_TO_OP
from streamrt.frontend import native

pytestmark = pytest.mark.skipif(not native.available(),
                                reason="the C extension is not built here, or is off")

UFUNCS = sorted(n for n in dir(np) if isinstance(getattr(np, n), np.ufunc)
                and getattr(np, n).nout == 1 and getattr(np, n).nin <= 2
                and getattr(np, n).signature is None)
EAGER = 1 << 16


@pytest.fixture(autouse=True)
def numpy_tier():
    with ps.config.override(eager_elements=EAGER):
        yield


def _values(dtype, n, rng, positive=False):
    if dtype == "bool":
        return rng.random(n) < 0.5
    if np.dtype(dtype).kind in "iu":
        lo = 1 if positive or np.dtype(dtype).kind == "u" else -40
        return rng.integers(lo, 40, n).astype(dtype)
    return (rng.standard_normal(n) * 3).astype(dtype)


def _layouts(x, shape2):
    """(name, view of x) pairs: the layouts the loops see (x: 1-D, of 4 * prod(shape2))."""
    m = int(np.prod(shape2))
    two = x[:4 * m].reshape(2 * shape2[0], 2 * shape2[1])
    # 3-D views of m elements, (2, 3, m // 6): a call per innermost row (rows), axes that
    # NumPy's iterator coalesces (two), a strided innermost axis, and the layouts left to
    # NumPy's call (transposed, reversed)
    c = m // 6
    three = x[:24 * c].reshape(4, 3, 2 * c)
    return [("contiguous", x[:m]), ("strided", x[::3][:m]), ("reversed", x[::-1][:m]),
            ("2-D", x[:m].reshape(shape2)), ("rows", two[:shape2[0], :shape2[1]]),
            ("columns", two[::2, ::2]), ("transposed", two[:shape2[1], :shape2[0]].T),
            ("3-D", x[:6 * c].reshape(2, 3, c)), ("3-D rows", three[:2, :2, :c]),
            ("3-D coalesced", x[:12 * c].reshape(4, 3, c)[::2]),
            ("3-D strided rows", three[1:3, :2, ::2]),
            ("3-D transposed", three[:2, :3, :2].transpose(2, 1, 0)),
            ("3-D reversed", three[::-1][:2, :2, :c])]


def _builtin(e):
    """The builtin class of NumPy's error ``e`` (streamrt raises its own subclass of it)."""
    return next(c for c in type(e).__mro__ if c.__module__ == "builtins")


def _same(got, want):
    got = np.asarray(got)
    assert got.dtype == want.dtype
    assert got.shape == want.shape
    assert np.array_equal(got, want, equal_nan=want.dtype.kind == "f")


@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "int32", "uint8", "int16",
                                   "uint64", "bool"])
def test_every_ufunc_and_layout_gives_numpys_bits(dtype):
    rng = np.random.default_rng(3)
    x0 = _values(dtype, 4 * 24 * 3, rng)
    y0 = _values(dtype, 4 * 24 * 3, rng, positive=True)
    X0, Y0 = ps.asarray(x0), ps.asarray(y0)
    checked = 0
    ps.reset_stats()
    direct, calls = {}, {}      # layout -> calls that took the loop directly, calls
    for (name, x), (_, y), (_, X), (_, Y) in zip(_layouts(x0, (4, 6)), _layouts(y0, (4, 6)),
                                                 _layouts(X0, (4, 6)), _layouts(Y0, (4, 6))):
        before, before_checked = ps.runtime_stats()["ops_eager_direct"], checked
        for uname in UFUNCS:
            uf = getattr(np, uname)
            for other, Other in ([(None, None)] if uf.nin == 1 else
                                 [(y, Y), (2.5, 2.5), (3, 3), (np.float64(1.5), np.float64(1.5)),
                                  (np.float32(0.5), np.float32(0.5)), (np.int32(5), np.int32(5)),
                                  (np.int64(-4), np.int64(-4)), (2 ** 40, 2 ** 40),
                                  (True, True), (np.uint8(7), np.uint8(7)), (300, 300)]):
                with np.errstate(all="ignore"), warnings.catch_warnings():
                    warnings.simplefilter("ignore", RuntimeWarning)    # (gcd: "not lazily")
                    try:
                        want = uf(x) if uf.nin == 1 else uf(x, other)
                    except (TypeError, OverflowError, ValueError) as e:   # (no loop; 2**40
                        with pytest.raises(_builtin(e)):                  # in int32) NumPy's
                            uf(X) if uf.nin == 1 else uf(X, Other)       # error
                        continue
                    if np.asarray(want).dtype not in D.SUPPORTED_SET:     # float16 (arccos of
                        if uname in UFUNC_TO_OP:                          # uint8): refused
                            with pytest.raises(ps.DTypeError):            # (a ufunc streamrt
                                uf(X) if uf.nin == 1 else uf(X, Other)   # does not have:
                        continue                                          # NumPy's, as is)
                    got = uf(X) if uf.nin == 1 else uf(X, Other)
                _same(got, want)
                checked += 1
        direct[name] = ps.runtime_stats()["ops_eager_direct"] - before
        calls[name] = checked - before_checked
    # 3-D: a call per innermost row, or per coalesced row; NumPy's call where its iterator
    # would reorder or flip the axes
    assert direct["3-D rows"] == direct["3-D coalesced"] == direct["rows"] > 0
    assert direct["3-D strided rows"] == direct["columns"] > 0
    assert direct["3-D transposed"] == 0 and direct["3-D reversed"] == 0
    # broadcast pairs: a row, a column, a row against a column, a 1-D operand
    two = x0[:24].reshape(4, 6)
    pairs = [(two, y0[:6]), (two, y0[:4].reshape(4, 1)), (x0[:6].reshape(1, 6), y0[:4, None]),
             (x0[:4, None], y0[::2][:6]), (two[:, ::2], y0[:3]), (two[::-1], y0[6:12][::-1])]
    # ... a length-1 operand against a longer one (1-D: its step must be 0; the fuzzer
    # found [5.] + [1., 2.] read past the end of the first), a 1 x 1 one
    pairs += [(x0[:1], y0[:6]), (x0[:1], y0[::3][:6]), (x0[5:6], y0[6:12]),
              (x0[::-1][:1], y0[:7]), (x0[:1].reshape(1, 1), y0[:6]),
              (x0[:1].reshape(1, 1), two)]
    # ... and 3-D operands of one shape in different layouts
    three_x, three_y = x0[:192].reshape(4, 6, 8), y0[:192].reshape(4, 6, 8)
    pairs += [(three_x[:2, :3, :4], y0[:24].reshape(2, 3, 4)),
              (three_x[1:3, 2:5, 4:], three_y[:2, :3, ::2]),
              (three_x[:2, :3, :4], three_y[:4, :3, :2].transpose(2, 1, 0))]
    for x, y in pairs:
        X, Y = ps.asarray(x), ps.asarray(y)
        for uname in UFUNCS:
            uf = getattr(np, uname)
            if uf.nin != 2:
                continue
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                for u, v, U, V in ((x, y, X, Y), (y, x, Y, X)):
                    try:
                        want = uf(u, v)
                    except (TypeError, ValueError) as e:    # (no loop; a negative power)
                        with pytest.raises(_builtin(e)):
                            uf(U, V)
                        continue
                    if np.asarray(want).dtype not in D.SUPPORTED_SET:
                        if uname in UFUNC_TO_OP:
                            with pytest.raises(ps.DTypeError):
                                uf(U, V)
                        continue
                    _same(uf(U, V), want)
                    checked += 1
    assert checked > 1000
    # the common calls took the loops directly (the rest went to NumPy's call)
    # (over the 1-D and 2-D layouts and the broadcast pairs)
    three_d = [k for k in direct if k.startswith("3-D")]
    assert ps.runtime_stats()["ops_eager_direct"] - sum(direct[k] for k in three_d) > \
        (checked - sum(calls[k] for k in three_d)) // (8 if dtype == "bool" else 4)


def test_the_operators_and_functions_take_the_direct_loop(stats):
    a = ps.asarray(np.arange(1.0, 1001.0))
    b = ps.asarray(np.linspace(0.5, 2.0, 1000))
    native.direct_count(reset=True)
    r = [a + b, a * 2.0, 2.0 * a, a - 1, -a, ps.sqrt(a), ps.exp(b), ps.maximum(a, 3.0),
         a < b, a[::2] / b[1::2], a.reshape(20, 50)[1:, 1:] * b.reshape(20, 50)[:-1, :-1]]
    assert native.direct_count() == len(r)
    an, bn = np.arange(1.0, 1001.0), np.linspace(0.5, 2.0, 1000)
    for got, want in zip(r, [an + bn, an * 2.0, 2.0 * an, an - 1, -an, np.sqrt(an), np.exp(bn),
                             np.maximum(an, 3.0), an < bn, an[::2] / bn[1::2],
                             an.reshape(20, 50)[1:, 1:] * bn.reshape(20, 50)[:-1, :-1]]):
        _same(got, want)


def test_calls_it_does_not_take_are_numpys():
    """Broadcasting past 2-D, mixed dtypes, a promoting scalar, a transcendental over columns,
    an integer past int64: NumPy's call, NumPy's values and errors."""
    rng = np.random.default_rng(4)
    a, c = rng.random((30, 20)), rng.random((3, 1, 20))
    i32, i64 = np.arange(20, dtype=np.int32), np.arange(20, dtype=np.int64)
    A, C, I32, I64 = ps.asarray(a), ps.asarray(c), ps.asarray(i32), ps.asarray(i64)
    native.direct_count(reset=True)
    _same(A + C, a + c)
    _same(I32 + I64, i32 + i64)
    _same(I64 * 1.5, i64 * 1.5)
    _same(ps.exp(A[:, ::2]), np.exp(a[:, ::2]))
    _same(ps.exp(A.T), np.exp(a.T))
    assert native.direct_count() == 0
    with pytest.raises(OverflowError):
        I64 + 2 ** 70


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_floating_point_errors_follow_errstate(dtype):
    """A loop that raises a floating-point exception is redone by NumPy's call, which warns or
    raises as np.errstate says (the direct path reports nothing itself)."""
    a = np.array([1.0, 0.0, -1.0, 2.0], dtype=dtype)
    z = np.zeros(4, dtype=dtype)
    A, Z = ps.asarray(a), ps.asarray(z)
    with np.errstate(all="ignore"):
        want = a / z
    native.direct_count(reset=True)
    with np.errstate(divide="raise", invalid="raise"), pytest.raises(FloatingPointError):
        A / Z
    with np.errstate(divide="warn", invalid="warn"):
        with pytest.warns(RuntimeWarning, match="divide by zero"):
            got = A / Z
    _same(got, want)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("error")
        _same(A / Z, want)
        _same(ps.log(A), np.log(a))
    assert native.direct_count() == 0           # (every one went to NumPy's call)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _same(A * 2.0, a * 2.0)                 # a clean loop after them: taken, no warning
    assert native.direct_count() == 1


def test_integer_errors_are_numpys():
    a = np.array([7, -7, 3, 0])
    z = np.array([0, 2, 0, 1])
    A, Z = ps.asarray(a), ps.asarray(z)
    with np.errstate(divide="ignore"):
        _same(A // Z, a // z)
        _same(A % Z, a % z)
    with np.errstate(divide="raise"), pytest.raises(FloatingPointError):
        A // Z
    with pytest.raises(ValueError):
        A ** np.array([1, -1, 2, 3])            # (NumPy: integers to negative powers)


def test_in_place_operators_write_what_numpy_writes():
    rng = np.random.default_rng(5)
    a, b = rng.random(50), rng.random(50)
    m = rng.random((8, 9))
    A, B, M = ps.asarray(a), ps.asarray(b), ps.asarray(m)
    native.direct_count(reset=True)
    A += B
    a += b
    A *= 2.0
    a *= 2.0
    M[2, :5] += A[:5]                   # a view of a row, written through
    m[2, :5] += a[:5]
    M[:, 3] -= 1                        # a column
    m[:, 3] -= 1
    M[1:, 1:] /= M[:-1, :-1] + 1.0      # a 2-D view by an overlapping one: NumPy's call
    m[1:, 1:] /= m[:-1, :-1] + 1.0
    A[1:] += A[:-1]                     # overlapping: NumPy copies the operand first
    a[1:] += a[:-1]
    _same(A, a)
    _same(M, m)
    assert native.direct_count() >= 4


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_in_place_floating_point_errors_follow_errstate(dtype):
    def fresh():
        v = np.array([1.0, 0.0, -1.0, 2.0], dtype=dtype)
        return v, ps.asarray(v)
    z = np.array([0.0, 0.0, 1.0, 1.0], dtype=dtype)
    a, A = fresh()
    with np.errstate(all="ignore"):
        a /= z
    b, B = fresh()
    native.direct_count(reset=True)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("error")
        B /= z
    _same(B, a)
    b, B = fresh()
    with np.errstate(divide="warn", invalid="warn"):
        with pytest.warns(RuntimeWarning, match="encountered in divide"):
            B /= z
    _same(B, a)                         # written, then warned, as NumPy does
    b, B = fresh()
    with np.errstate(divide="raise"), pytest.raises(FloatingPointError, match="divide"):
        B /= z
    assert native.direct_count() == 3


def test_in_place_integer_errors_are_numpys():
    a = np.array([7, -7, 3, 0])
    A = ps.asarray(a)
    with np.errstate(divide="warn"), pytest.warns(RuntimeWarning, match="divide by zero"):
        A //= np.array([0, 2, 0, 1])
    with np.errstate(divide="ignore"):
        a //= np.array([0, 2, 0, 1])
    _same(A, a)
    with pytest.raises(ValueError):
        A **= np.array([1, -1, 2, 3])


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_matmul_is_numpys(dtype):
    """``a @ b`` of vectors and matrices: matmul's own loop called as NumPy calls it (BLAS or
    its own loops chosen from the same dimensions and steps), on every layout."""
    rng = np.random.default_rng(6)
    x = rng.standard_normal(20000).astype(dtype)
    X = ps.asarray(x)

    def views(v, n, m=None):
        """(layout, view) of v: a vector of n, or an n x m matrix, in several layouts"""
        if m is None:
            return [v[:n], v[::3][:n], v[::-2][:n], v[7:7 + n]]
        return [v[:n * m].reshape(n, m), v[:n * m].reshape(m, n).T,
                v[:4 * n * m].reshape(2 * n, 2 * m)[::2, 1::2], v[:n * m].reshape(n, m)[::-1]]
    native.direct_count(reset=True)
    cases = 0
    for n, m, p in ((0, 3, 2), (1, 1, 1), (7, 5, 3), (40, 33, 20), (1, 60, 1)):
        shapes = [((n,), (n,)), ((m, n), (n,)), ((n,), (n, p)), ((m, n), (n, p))]
        for sa, sb in shapes:
            for k, (u, U) in enumerate(zip(views(x, *sa), views(X, *sa))):
                for v, V in zip(views(x[10000:], *sb), views(X[10000:], *sb)):
                    want = u @ v
                    got = U @ V
                    if np.ndim(want) == 0:
                        assert type(want) is np.dtype(dtype).type
                    assert np.asarray(got).dtype == want.dtype
                    assert np.asarray(got).shape == np.shape(want)
                    assert np.array_equal(np.asarray(got), want), (sa, sb, k)
                    cases += 1
    assert native.direct_count() == cases
    with pytest.raises(ValueError):
        X[:3] @ X[:4]


REDUCTIONS = [("sum", "add"), ("prod", "multiply"), ("max", "maximum"), ("min", "minimum")]


@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "int32"])
def test_whole_array_reductions_are_numpys(dtype):
    """``ps.sum(x)``, ``x.max()``, ...: the ufunc's loop in reduce mode, started as NumPy's
    reduction starts it (the identity for sum and prod, the first element for max and min):
    NumPy's bits (float sums are pairwise inside the loop), dtype and scalar type, on every
    length up to NumPy's buffer and on strided, reversed and 2-D inputs."""
    rng = np.random.default_rng(7)
    x = (rng.standard_normal(20000) * 1e3).astype(dtype)
    X = ps.asarray(x)
    native.direct_count(reset=True)
    cases = taken = 0
    for n in (1, 2, 3, 7, 8, 9, 16, 17, 127, 128, 129, 1000, 4097, 8192, 8193):
        for sl in (slice(None), slice(None, None, 3), slice(None, None, -1)):
            u, U = x[sl][:n], X[sl][:n]
            for fname, _ in REDUCTIONS:
                with np.errstate(all="ignore"):
                    want, got = getattr(np, fname)(u), getattr(ps, fname)(U)
                    assert type(want) is type(np.asarray(got)[()]) or \
                        np.asarray(got).dtype == np.asarray(want).dtype
                    _same(np.asarray(got), np.asarray(want))
                    _same(np.asarray(getattr(U, fname)()), np.asarray(getattr(u, fname)()))
                cases += 2
    two = x[:120].reshape(10, 12)
    for fname, _ in REDUCTIONS:
        with np.errstate(all="ignore"):
            _same(np.asarray(getattr(ps, fname)(ps.asarray(two))), np.asarray(getattr(np, fname)(two)))
            _same(np.asarray(getattr(ps, fname)(ps.asarray(two)[:, ::2])),
                  np.asarray(getattr(np, fname)(two[:, ::2])))
    assert cases > 300
    # taken directly: each function and method on a short vector and a C-ordered matrix (int32
    # sums and products are int64 in NumPy: its call); not past NumPy's buffer, not strided 2-D
    small = 1.0 + X[:100] * 1e-6 if dtype[0] == "f" else X[:100]     # (no under/overflow)
    for fname, _ in REDUCTIONS:
        native.direct_count(reset=True)
        getattr(ps, fname)(small), getattr(small, fname)(), getattr(ps, fname)(small.reshape(10, 10))
        wide = dtype == "int32" and fname in ("sum", "prod")
        assert native.direct_count() == (0 if wide else 3)
        getattr(ps, fname)(X[:8193]), getattr(ps, fname)(X[:120].reshape(10, 12)[:, ::2])
        assert native.direct_count() == (0 if wide else 3)


def test_reduction_edge_values_and_errors():
    z = np.array([-0.0, -0.0])
    Z = ps.asarray(z)
    for fname, _ in REDUCTIONS:
        want, got = getattr(np, fname)(z), getattr(ps, fname)(Z)
        assert np.signbit(want) == np.signbit(np.asarray(got))
    nan = np.array([1.0, np.nan, 3.0, -np.inf])
    for fname, _ in REDUCTIONS:
        with np.errstate(all="ignore"):
            _same(np.asarray(getattr(ps, fname)(ps.asarray(nan))),
                  np.asarray(getattr(np, fname)(nan)))
    big = ps.asarray(np.array([1e308, 1e308]))
    with np.errstate(over="raise"), pytest.raises(FloatingPointError):
        ps.sum(big)
    with np.errstate(over="warn"), pytest.warns(RuntimeWarning, match="overflow"):
        assert np.isinf(np.asarray(ps.sum(big)))
    with pytest.raises(ValueError):
        ps.max(ps.asarray(np.zeros(0)))
    assert np.asarray(ps.sum(ps.asarray(np.zeros(0)))) == 0.0


def test_basic_index_assignment_of_3d_views_copies_directly():
    """A 3-D view assigned a value of its dtype and shape with contiguous rows, or a number,
    is copied row by row over the outer axes; a strided or reversed last axis is NumPy's
    copy (element by element over many rows, ours was slower)."""
    rng = np.random.default_rng(9)
    t, u = rng.random((5, 6, 7)), rng.random((5, 6, 7))
    T, U = ps.asarray(t), ps.asarray(u)
    k = rng.integers(-9, 9, (4, 3, 5))
    K = ps.asarray(k)
    native.direct_count(reset=True)
    cases = [
        lambda x, y, z: x.__setitem__((slice(1, -1), slice(1, -1), slice(1, -1)),
                                      y[:3, 2:6, 1:6]),
        lambda x, y, z: x.__setitem__((slice(None), slice(None, None, 2), slice(2, 5)),
                                      y[:, 3:, 1:4]),
        lambda x, y, z: x.__setitem__((slice(1, 4), slice(0, 2), slice(None)), 0.5),
        lambda x, y, z: z.__setitem__((slice(None), slice(1, 3), slice(None, None, 2)), -4),
        lambda x, y, z: x.__setitem__((slice(2, 4),), x[2:4]),                 # itself
    ]
    for f in cases:
        f(T, U, K)
        f(t, u, k)
    assert native.direct_count() == len(cases)
    _same(T, t)
    _same(K, k)
    # overlapping (NumPy's setitem copies the source first); strided rows
    for f in (lambda x, y: x.__setitem__((slice(1, None),), x[:-1]),
              lambda x, y: x.__setitem__((slice(0, 2), slice(None), slice(None, None, -1)),
                                         y[1:3]),
              lambda x, y: x.__setitem__((slice(None), slice(None), slice(0, 3)), y[:, :, :6:2])):
        f(T, U)
        f(t, u)
    assert native.direct_count() == len(cases)
    _same(T, t)


def test_basic_index_assignment_writes_what_numpy_writes():
    """``A[key] = v`` on the NumPy tier: a value of the view's dtype and shape, or a number
    into a float64 or int64 view, is copied directly; overlapping sources, other dtypes,
    broadcasting and elements are NumPy's setitem. The arrays end up NumPy's either way."""
    rng = np.random.default_rng(8)
    a, b = rng.random(40), rng.random(40)
    m, i = rng.random((6, 8)), rng.integers(-9, 9, (6, 8))
    A, B, M, I = ps.asarray(a), ps.asarray(b), ps.asarray(m), ps.asarray(i)
    native.direct_count(reset=True)
    direct = [
        lambda x, y, mm, ii, np_: x.__setitem__(slice(1, -1), y[2:]),
        lambda x, y, mm, ii, np_: x.__setitem__(slice(None, None, -2), y[:20]),
        lambda x, y, mm, ii, np_: mm.__setitem__((slice(1, 4), slice(2, 6)), mm[3:6, 0:4].copy()),
        lambda x, y, mm, ii, np_: mm.__setitem__((slice(None), 3), y[:6]),
        lambda x, y, mm, ii, np_: mm.__setitem__((2, slice(None)), 0.25),
        lambda x, y, mm, ii, np_: ii.__setitem__((slice(None), slice(1, 3)), -7),
        lambda x, y, mm, ii, np_: x.__setitem__(slice(5, 9), 3),
        lambda x, y, mm, ii, np_: mm.__setitem__((slice(0, 2),), mm[0:2]),      # itself
    ]
    numpys = [
        lambda x, y, mm, ii, np_: x.__setitem__(slice(1, None), x[:-1]),       # overlapping
        lambda x, y, mm, ii, np_: x.__setitem__(slice(None, None, -1), x),      # reversed
        lambda x, y, mm, ii, np_: x.__setitem__(slice(0, 6), y[:6].astype(np.float32)),
        lambda x, y, mm, ii, np_: mm.__setitem__((slice(None), slice(None)), y[:8]),  # broadcast
        lambda x, y, mm, ii, np_: ii.__setitem__((0, slice(None)), 2.75),      # float into int
        lambda x, y, mm, ii, np_: x.__setitem__(3, 1.5),                        # an element
    ]
    for f in direct + numpys:
        f(A, B, M, I, ps)
        f(a, b, m, i, np)
    assert native.direct_count() == len(direct)
    _same(A, a)
    _same(M, m)
    _same(I, i)
    with pytest.raises(IndexError):
        A[50:60, 1] = 1.0


@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "int32", "uint8", "int16",
                                   "bool", "complex128"])
def test_integer_array_indexing_is_numpys(dtype):
    """``A[i, j]`` and ``A[i, j] = v`` with one int64 index vector per axis, all of one length
    (_loops.c direct_gather / direct_scatter): NumPy's elements, negative indices counted from
    the end, a repeated index written with its last value, an index out of range NumPy's
    IndexError with nothing written; other keys and values (broadcast indices, a value of
    another dtype or sharing the array's memory, a scalar) are NumPy's call."""
    rng = np.random.default_rng(11)
    for shape in [(30,), (12, 9), (5, 6, 7), (3, 4, 5, 6)]:
        a0 = _values(dtype, int(np.prod(shape)), rng).reshape(shape)
        a, A = a0.copy(), ps.asarray(a0.copy())
        for n in (0, 1, 7, 40):
            keys = [rng.integers(-d, d, n) for d in shape]
            keys[0] = keys[0][::-1].copy() if n else keys[0]
            kk = tuple(keys) if len(shape) > 1 else keys[0]
            pk = tuple(ps.asarray(k) for k in keys) if len(shape) > 1 else ps.asarray(keys[0])
            native.direct_count(reset=True)
            got = A[pk]
            assert native.direct_count() == 1
            _same(got, a[kk])
            v = _values(dtype, n, rng)
            A[pk] = ps.asarray(v)
            a[kk] = v
            assert native.direct_count() == 2
            _same(A, a)
        # strided index vectors, and a view of the array
        k2 = [rng.integers(0, d, 20)[::2] for d in shape]
        kk2 = tuple(k2) if len(shape) > 1 else k2[0]
        pk2 = tuple(ps.asarray(k) for k in k2) if len(shape) > 1 else ps.asarray(k2[0])
        _same(A[pk2], a[kk2])
        bad = [np.zeros(3, np.int64) for _ in shape]
        bad[-1] = np.array([0, shape[-1], 1])               # out of range: nothing written
        pb = tuple(ps.asarray(k) for k in bad) if len(shape) > 1 else ps.asarray(bad[0])
        before = np.asarray(A).copy()
        with pytest.raises(IndexError):
            A[pb]
        with pytest.raises(IndexError):
            A[pb] = ps.asarray(_values(dtype, 3, rng))
        _same(A, before)
    # left to NumPy's call: the values are still NumPy's
    m0 = _values(dtype, 48, rng).reshape(6, 8)
    m, M = m0.copy(), ps.asarray(m0.copy())
    i, j = np.array([0, 2, 2, 5]), np.array([1, 3, 3, 7])
    I, J = ps.asarray(i), ps.asarray(j)
    native.direct_count(reset=True)
    _same(M[I[:, None], J[None, :]], m[i[:, None], j[None, :]])      # broadcast index shapes
    M[I, J] = M[0, :4]                                   # a view of the array itself
    m[i, j] = m[0, :4]
    w = _values(dtype, 8, rng).reshape(4, 2)                # an index vector and a slice
    M[I, 0:2] = ps.asarray(w)
    m[i, 0:2] = w
    _same(M, m)
    assert native.direct_count() == 0
    other = "float32" if dtype != "float32" else "float64"
    if dtype != "bool" and dtype != "complex128":
        M[I, J] = ps.asarray(_values(other, 4, rng).astype(other))
        m[i, j] = np.asarray(M)[i, j]
        _same(M, m)
    # repeated indices: the last value, as NumPy's
    r = np.array([1, 1, 1, 4]), np.array([2, 2, 2, 0])
    v = _values(dtype, 4, rng)
    M[ps.asarray(r[0]), ps.asarray(r[1])] = ps.asarray(v)
    m[r] = v
    _same(M, m)


# ---- on two threads (_loops.c run_split) ----------------------------------------------------
two_cpus = pytest.mark.skipif(native._cpus() < 2, reason="one CPU: the loops are not cut")


@pytest.fixture
def helper_always():
    """The helper thread runs every cut loop's second part (none taken back)."""
    with native.split_helper_always():
        yield


def _splits():
    return ps.runtime_stats()["loops_split"]


@two_cpus
@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "int32", "uint8", "int16",
                                   "uint64", "bool"])
def test_loops_cut_in_two_give_numpys_bits(dtype, helper_always):
    """Every ufunc, dtype and layout with its loop cut over two threads (between rows, or
    within one call for the ufuncs whose result does not depend on the loop's path): NumPy's
    values, bit for bit."""
    rng = np.random.default_rng(5)
    shape = (40, 70)
    x0 = _values(dtype, 4 * 40 * 70, rng)
    y0 = _values(dtype, 4 * 40 * 70, rng, positive=True)
    X0, Y0 = ps.asarray(x0), ps.asarray(y0)
    before = _splits()
    checked = 0
    with ps.config.override(split_elements=256):
        for (name, x), (_, y), (_, X), (_, Y) in zip(_layouts(x0, shape), _layouts(y0, shape),
                                                     _layouts(X0, shape), _layouts(Y0, shape)):
            for uname in UFUNCS:
                uf = getattr(np, uname)
                for other, Other in ([(None, None)] if uf.nin == 1 else
                                     [(y, Y), (2.5, 2.5), (3, 3), (True, True)]):
                    with np.errstate(all="ignore"), warnings.catch_warnings():
                        warnings.simplefilter("ignore", RuntimeWarning)
                        try:
                            want = uf(x) if uf.nin == 1 else uf(x, other)
                        except (TypeError, OverflowError, ValueError):
                            continue
                        if np.asarray(want).dtype not in D.SUPPORTED_SET:
                            continue
                        got = uf(X) if uf.nin == 1 else uf(X, Other)
                    _same(got, want)
                    checked += 1
    assert checked > 300
    assert _splits() - before > checked // 8


@two_cpus
def test_an_interpreted_kernel_cuts_its_loops_and_gives_numpys_bits(helper_always):
    """A time step of fdtd-2d interpreted (large views, region writes in place): its ops run
    on two threads, with NumPy's values bit for bit; STREAMRT_SPLIT_ELEMENTS=0 keeps one."""
    rng = np.random.default_rng(7)
    a0, b0, c0 = (rng.standard_normal((300, 400)) for _ in range(3))
    with jit_mode("off"):
        for split, cut in ((1 << 15, True), (0, False)):
            with ps.config.override(split_elements=split):
                ex, ey, hz = ps.asarray(a0).copy(), ps.asarray(b0).copy(), ps.asarray(c0).copy()
                e = [a0.copy(), b0.copy(), c0.copy()]
                before = _splits()
                for t in range(3):
                    for x, y, h in ((ex, ey, hz), e):
                        y[0, :] = float(t)
                        y[1:, :] -= 0.5 * (h[1:, :] - h[:-1, :])
                        x[:, 1:] -= 0.5 * (h[:, 1:] - h[:, :-1])
                        h[:-1, :-1] -= 0.7 * (x[:-1, 1:] - x[:-1, :-1] + y[1:, :-1] - y[:-1, :-1])
                for got, want in zip((ex, ey, hz), e):
                    assert np.array_equal(np.asarray(got), want)
                assert (_splits() - before > 10) == cut


@two_cpus
@pytest.mark.parametrize("where", [0, -1])
def test_the_helpers_floating_point_errors_are_reported(where, helper_always):
    """A division by zero in either half of a cut loop -- this thread's or the helper's --
    is reported as NumPy reports it (a fresh result is redone by NumPy's call; an in-place
    one raises after writing NumPy's values)."""
    a = np.linspace(1.0, 2.0, 4096)
    z = np.ones(4096)
    z[where] = 0.0
    A, Z = ps.asarray(a), ps.asarray(z)
    with ps.config.override(split_elements=256):
        before = _splits()
        with np.errstate(divide="raise"), pytest.raises(FloatingPointError):
            A / Z
        with np.errstate(divide="ignore"):
            _same(A / Z, a / z)
        B = ps.asarray(a)
        with np.errstate(divide="raise"), pytest.raises(FloatingPointError):
            B /= Z
        with np.errstate(divide="ignore"):
            _same(B, a / z)
        assert _splits() - before >= 3


@two_cpus
def test_cut_loops_from_two_threads_at_once():
    """Two threads' loops at once: one has the helper, the other runs alone; both right."""
    import threading
    rng = np.random.default_rng(11)
    data = [rng.standard_normal((200, 300)) + k for k in range(2)]   # (60,000: ops at once)
    errors = []

    def work(x0):
        X = ps.asarray(x0)
        try:
            for _ in range(200):
                _same(X * 3.0 - X, x0 * 3.0 - x0)
        except AssertionError as e:     # (reported by the test's thread)
            errors.append(e)

    with ps.config.override(split_elements=256):    # (the C path's limit: every thread's)
        ts = [threading.Thread(target=work, args=(x0,)) for x0 in data]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
    assert not errors


@two_cpus
def test_loops_stay_on_one_thread_while_a_compile_runs(monkeypatch):
    """While the compile worker runs (jit.in_flight), an interpreted kernel's loops are not
    cut: the worker needs the second core. Its values are the same."""
    from streamrt.backends.numba_cpu import jit
    x0 = np.linspace(0.0, 1.0, 1 << 18)
    with jit_mode("off"):
        native.split_state(0)       # (no backing off left by an earlier loop: test below)
        for busy in (1, 0):
            monkeypatch.setattr(jit, "in_flight", lambda busy=busy: busy)
            X = ps.asarray(x0)
            before = _splits()
            _same((X * 2.0 + 1.0) * X, (x0 * 2.0 + 1.0) * x0)
            assert (_splits() > before) == (not busy)


@two_cpus
def test_a_cut_loop_slower_than_one_thread_sends_the_next_ones_to_one_thread():
    """A cut loop whose helper half ends after twice this thread's (the helper's core busy:
    a BLAS pool spinning there, another process) is counted lost, and the next loops run on
    one thread -- 1, 2, 4, ... of them (at most 1024) as losses repeat, fewer as cuts pay
    again. NumPy's bits either way."""
    x0 = np.linspace(0.0, 1.0, 1 << 14)
    X = ps.asarray(x0)
    lost = ps.runtime_stats()["loops_split_lost"]
    with ps.config.override(split_elements=1024):
        with native.split_helper_always(delay_us=20_000):  # (the helper sleeps 20 ms first)
            assert native.split_state() == (0, 1)
            _same(X * 3.0, x0 * 3.0)
            assert ps.runtime_stats()["loops_split_lost"] == lost + 1
            assert native.split_state() == (1, 2)
            _same(X + 1.0, x0 + 1.0)
            assert native.split_state() == (2, 4)
        assert native.split_state() == (0, 1)   # (a setting's change starts afresh)
        native.split_state(2)
        cut = _splits()
        _same(X * 3.0, x0 * 3.0)
        _same(X - 1.0, x0 - 1.0)
        assert _splits() == cut and native.split_state()[0] == 0
        _same(X * 2.0, x0 * 2.0)
        assert _splits() == cut + 1
