"""The NumPy functions real programs use (issue 23): each against NumPy -- values, dtypes,
shapes -- for several dtypes, on the three paths: recorded (the compiled path; conftest.py
turns the NumPy tier off), the NumPy tier with small arrays (C and Python record paths) and
arrays past the tier's limit with the tier on (recorded again)."""
from __future__ import annotations

import sys
import warnings

import numpy as np
import pytest
from helpers import assert_same

import streamrt as ps
from streamrt.frontend import native

EAGER = 1 << 16


@pytest.fixture(params=["recorded", "tier-native", "tier-python", "large"])
def path(request):
    """(mode, n): the path and a length along the last axis that takes it."""
    if request.param == "recorded":
        yield "recorded", 24
    elif request.param == "tier-python":
        with native.disabled(), ps.config.override(eager_elements=EAGER):
            yield "tier", 24
    elif request.param == "tier-native":
        with ps.config.override(eager_elements=EAGER):
            yield "tier", 24
    else:
        with ps.config.override(eager_elements=EAGER):
            yield "large", EAGER // 4 + 3       # 4 rows: past the limit, an odd length


def _line():
    return sys._getframe(1).f_lineno


def _data(dtype, n, rows=4, seed=0):
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    if dt.kind == "f":
        a = (rng.standard_normal((rows, n)) * 10).astype(dt)
        a.flat[::7] = np.round(a.flat[::7])         # ties for round, repeats for the sort
        return a
    if dt.kind == "b":
        return rng.random((rows, n)) < 0.5
    return rng.integers(0, 50, (rows, n)).astype(dt)


NUM = [np.float64, np.float32, np.int64, np.int32]
NUM_IDS = ["f8", "f4", "i8", "i4"]


# ---- lazy compositions ----------------------------------------------------------------------
@pytest.mark.parametrize("dt", NUM, ids=NUM_IDS)
def test_round_around_and_the_method(path, dt):
    mode, n = path
    a = _data(dt, n) * (3 if np.dtype(dt).kind == "i" else 1.37)
    a = a.astype(dt)
    x = ps.asarray(a)
    for d in (0, 1, 2, -1):
        assert_same(ps.round(x, d), np.round(a, d), what=f"round {d}")
    assert_same(ps.around(x, 1), np.around(a, 1))
    assert_same(x.round(1), a.round(1))
    assert_same(np.round(x, 2), np.round(a, 2))
    if mode == "recorded":
        assert isinstance(ps.round(x, 1), ps.Array)


def test_round_of_bool_is_refused_at_the_call():
    with pytest.raises(ps.DTypeError, match=rf"{__file__}:{_line() + 1}: round"):
        ps.round(ps.asarray([True, False]))


@pytest.mark.parametrize("dt", NUM, ids=NUM_IDS)
def test_isclose_allclose(path, dt):
    mode, n = path
    a = _data(dt, n)
    b = (a + (a % 3 == 0) * 1e-6).astype(dt) if np.dtype(dt).kind == "f" else a.copy()
    b.flat[::5] += 1
    if np.dtype(dt).kind == "f":
        a.flat[3] = b.flat[3] = np.nan
        a.flat[4] = b.flat[4] = np.inf
    x, y = ps.asarray(a), ps.asarray(b)
    assert_same(ps.isclose(x, y), np.isclose(a, b))
    assert_same(ps.isclose(x, y, rtol=1e-3, atol=0.5, equal_nan=True),
                np.isclose(a, b, rtol=1e-3, atol=0.5, equal_nan=True))
    assert_same(np.isclose(x, y), np.isclose(a, b))
    assert ps.allclose(x, x, equal_nan=True) is True
    assert ps.allclose(x, y) is np.allclose(a, b) is False
    assert np.allclose(x, y) == np.allclose(a, b)


@pytest.mark.parametrize("dt", NUM + [np.bool_], ids=NUM_IDS + ["b"])
def test_diff(path, dt):
    mode, n = path
    a = _data(dt, n)
    x = ps.asarray(a)
    assert_same(ps.diff(x), np.diff(a))
    assert_same(ps.diff(x, n=2, axis=0), np.diff(a, n=2, axis=0))
    assert_same(np.diff(x, axis=1), np.diff(a, axis=1))
    if dt is not np.bool_:
        assert_same(ps.diff(x, prepend=0, append=a[:, :2]), np.diff(a, prepend=0,
                                                                   append=a[:, :2]))
    assert_same(ps.diff(x, n=0), a)
    with pytest.raises(ValueError, match=rf"{__file__}:{_line() + 1}: diff: order"):
        ps.diff(x, n=-1)


@pytest.mark.parametrize("dt", [np.float64, np.float32, np.int64], ids=["f8", "f4", "i8"])
def test_cov_corrcoef(path, dt):
    mode, n = path
    a = _data(dt, n)
    x = ps.asarray(a)
    tol = dict(rtol=1e-4) if dt is np.float32 else dict(rtol=1e-9, atol=1e-12)
    assert_same(ps.cov(x), np.cov(a), **tol)
    assert_same(np.cov(x, bias=True), np.cov(a, bias=True), **tol)
    assert_same(ps.cov(x[:, :8], rowvar=False, ddof=2), np.cov(a[:, :8], rowvar=False, ddof=2),
                **tol)
    assert_same(ps.cov(x[0], x[1]), np.cov(a[0], a[1]), **tol)
    assert_same(ps.cov(x[0]), np.cov(a[0]), **tol)
    assert_same(ps.cov(x, dtype=np.float32), np.cov(a, dtype=np.float32), rtol=1e-4)
    w = np.arange(1, a.shape[1] + 1)
    assert_same(ps.cov(x, fweights=w), np.cov(a, fweights=w), **tol)       # on the host
    assert_same(ps.corrcoef(x), np.corrcoef(a), **tol)
    assert_same(np.corrcoef(x[0], x[2]), np.corrcoef(a[0], a[2]), **tol)


@pytest.mark.parametrize("dt", NUM, ids=NUM_IDS)
def test_median_percentile_quantile(path, dt):
    mode, n = path
    a = _data(dt, n)
    if np.dtype(dt).kind == "f":
        a[2, 5] = np.nan                 # NumPy: the slice holding it gives NaN
    x = ps.asarray(a)
    for axis in (None, 0, 1, -1, (0, 1)):
        assert_same(ps.median(x, axis=axis), np.median(a, axis=axis), what=f"median {axis}")
        assert_same(ps.percentile(x, 30, axis=axis), np.percentile(a, 30, axis=axis),
                    what=f"percentile {axis}")
    assert_same(ps.median(x[:, :-1], axis=1), np.median(a[:, :-1], axis=1))     # even length
    assert_same(np.median(x, axis=1, keepdims=True), np.median(a, axis=1, keepdims=True))
    q = [0, 12.5, 50, 99, 100]
    assert_same(ps.percentile(x, q, axis=1), np.percentile(a, q, axis=1))
    assert_same(ps.percentile(x, q, axis=0, keepdims=True),
                np.percentile(a, q, axis=0, keepdims=True))
    assert_same(ps.quantile(x, 0.37, axis=1), np.quantile(a, 0.37, axis=1))
    assert_same(np.quantile(x, [0.25, 0.75]), np.quantile(a, [0.25, 0.75]))
    for method in ("lower", "higher", "midpoint", "nearest", "weibull"):
        assert_same(ps.quantile(x, [0.3, 0.5], axis=1, method=method),
                    np.quantile(a, [0.3, 0.5], axis=1, method=method), what=method)
    with pytest.raises(ValueError, match=rf"{__file__}:{_line() + 1}: Percentiles"):
        ps.percentile(x, 101)


def test_order_statistics_are_recorded_not_read():
    x = ps.asarray(np.arange(10.0)) * 2.0
    m = ps.median(x)
    p = ps.percentile(x, [10, 90])
    assert x._p.state == 0 and m._p is not None            # nothing computed yet
    assert_same(m, np.median(np.arange(10.0) * 2))
    assert_same(p, np.percentile(np.arange(10.0) * 2, [10, 90]))


# ---- grids and constructors -----------------------------------------------------------------
def test_grids_identity_fromfunction_indices(path):
    assert_same(ps.mgrid[0:3, 0:4], np.mgrid[0:3, 0:4])
    assert_same(ps.mgrid[-1:1:5j], np.mgrid[-1:1:5j])
    for r, e in zip(ps.ogrid[0:3, 0:4], np.ogrid[0:3, 0:4]):
        assert_same(r, e)
    assert_same(ps.identity(4), np.identity(4))
    assert_same(ps.identity(3, dtype=np.int32), np.identity(3, dtype=np.int32))
    assert_same(ps.fromfunction(lambda i, j: i * 10 + j, (3, 4)),
                np.fromfunction(lambda i, j: i * 10 + j, (3, 4)))
    assert_same(ps.fromfunction(lambda i, j: i - j, (2, 3), dtype=int),
                np.fromfunction(lambda i, j: i - j, (2, 3), dtype=int))
    assert_same(ps.indices((2, 3)), np.indices((2, 3)))
    for r, e in zip(ps.indices((2, 3), sparse=True), np.indices((2, 3), sparse=True)):
        assert_same(r, e)


def test_ndarray_constructor_shape_setter_strides(path):
    a = ps.ndarray((2, 3), dtype=np.float32)
    assert_same(a, np.zeros((2, 3), np.float32))
    buf = np.arange(6, dtype=np.int64).tobytes()
    assert_same(ps.ndarray((3,), dtype=np.int64, buffer=buf, offset=8),
                np.ndarray((3,), dtype=np.int64, buffer=buf, offset=8))
    assert isinstance(a, ps.ndarray)
    x = ps.asarray(np.arange(12.0))
    v = x[2:8]
    x.shape = (3, 4)
    assert x.shape == (3, 4) and x.strides == (32, 8)
    x[1, 0] = -1.0                   # still the same data: the view sees the write
    assert float(v[2]) == -1.0
    e = np.arange(12.0).reshape(3, 4)
    e[1, 0] = -1
    assert_same(x, e)
    x.shape = -1
    assert x.shape == (12,)
    with pytest.raises(ValueError, match=rf"{__file__}:{_line() + 1}: .*reshape array of size"):
        x.shape = (5,)
    t = ps.asarray(np.arange(12.0).reshape(3, 4)).T
    assert t.strides == np.arange(12.0).reshape(3, 4).T.strides
    with pytest.raises(AttributeError, match=rf"{__file__}:{_line() + 1}: Incompatible shape"):
        t.shape = (12,)


# ---- ufunc methods ----------------------------------------------------------------------------
@pytest.mark.parametrize("dt", NUM, ids=NUM_IDS)
def test_ufunc_outer_reduce_accumulate(path, dt):
    mode, n = path
    a = _data(dt, n)
    x = ps.asarray(a)
    # (float32 sums: the summation order is the compiled path's, within float32 rounding)
    tol = dict(rtol=1e-5, atol=1e-4) if dt is np.float32 else {}
    with warnings.catch_warnings():
        warnings.simplefilter("error")            # no fallback warning: all handled
        k = 1
        assert_same(np.add.outer(x[:, k], x[k, :5]), np.add.outer(a[:, k], a[k, :5]))
        assert_same(ps.multiply.outer(x[0, :3], x[1, :4]), np.multiply.outer(a[0, :3], a[1, :4]))
        assert_same(ps.subtract.outer(x[0, :3], 2), np.subtract.outer(a[0, :3], 2))
        assert_same(np.add.reduce(x), np.add.reduce(a), **tol)
        assert_same(ps.maximum.reduce(x, axis=1), np.maximum.reduce(a, axis=1))
        assert_same(np.add.accumulate(x, axis=1), np.add.accumulate(a, axis=1), **tol)
        assert_same(ps.multiply.accumulate(x[:, :5]), np.multiply.accumulate(a[:, :5]), **tol)
        assert_same(np.maximum.accumulate(x, axis=1), np.maximum.accumulate(a, axis=1))
        assert_same(np.add.reduceat(x, [0, 2, 3], axis=1), np.add.reduceat(a, [0, 2, 3], axis=1), **tol)
        assert_same(np.subtract.reduce(x, axis=0), np.subtract.reduce(a, axis=0), **tol)
    assert ps.add.nin == 2 and ps.add.identity == 0 and ps.sqrt.nin == 1


def test_ufunc_at_writes_in_place_and_keeps_earlier_reads(path):
    mode, n = path
    a = np.arange(float(n))
    x = ps.asarray(a)
    before = x * 1.0                          # recorded (or computed) before the write
    view = x[:4]
    np.add.at(x, [0, 0, 1], 5.0)
    e = a.copy()
    np.add.at(e, [0, 0, 1], 5.0)
    assert_same(x, e)
    assert_same(view, e[:4])
    assert_same(before, a)
    ps.multiply.at(x, ps.asarray([2, 2]), ps.asarray([3.0, 2.0]))
    np.multiply.at(e, [2, 2], [3.0, 2.0])
    assert_same(x, e)
    h = a.copy()
    np.add.at(h, [1], ps.asarray([7.0]))      # an ndarray target: NumPy writes it
    assert h[1] == a[1] + 7


# ---- host functions -----------------------------------------------------------------------------
@pytest.mark.parametrize("dt", NUM, ids=NUM_IDS)
def test_histogram_bincount_digitize(path, dt):
    mode, n = path
    a = _data(dt, n)
    x = ps.asarray(a)
    for r, e in zip(ps.histogram(x, bins=7), np.histogram(a, bins=7)):
        assert_same(r, e)
    for r, e in zip(np.histogram(x, bins=[0, 1, 5, 20], density=True),
                    np.histogram(a, bins=[0, 1, 5, 20], density=True)):
        assert_same(r, e)
    for r, e in zip(ps.histogram2d(x[0], x[1], bins=4), np.histogram2d(a[0], a[1], bins=4)):
        assert_same(r, e)
    ints = np.abs(a[0]).astype(np.int64)
    assert_same(ps.bincount(ps.asarray(ints)), np.bincount(ints))
    assert_same(np.bincount(ps.asarray(ints), weights=x[1], minlength=80),
                np.bincount(ints, weights=a[1], minlength=80))
    assert_same(ps.digitize(x, [0, 5, 10]), np.digitize(a, [0, 5, 10]))
    assert_same(ps.digitize(x[0], ps.asarray([1.0, 20.0]), right=True),
                np.digitize(a[0], [1.0, 20.0], right=True))
    with pytest.raises(ValueError, match=rf"{__file__}:{_line() + 1}: bincount"):
        ps.bincount(ps.asarray([-1, 2]))


def test_missing_names_fail_at_the_call():
    with pytest.raises(AttributeError, match=rf"{__file__}:{_line() + 1}: .*numpy.frombuffer"):
        ps.frombuffer(b"")
    x = ps.asarray([1.0])
    with pytest.raises(AttributeError, match=rf"{__file__}:{_line() + 1}: ndarray.ctypes"):
        x.ctypes
    with pytest.raises(AttributeError, match="no attribute 'nonsense'"):
        x.nonsense


def test_edge_cases(path):
    c = np.array([1.234 + 2.567j, -3.5 + 0.5j])
    x = ps.asarray(c)
    assert_same(ps.round(x, 1), np.round(c, 1))
    assert_same(ps.isclose(x, x * (1 + 1e-9)), np.isclose(c, c * (1 + 1e-9)))
    m = np.vstack([c, c * 2 + 1j])
    # (complex division rounds differently from NumPy's Smith algorithm: to 1 ulp)
    for r, e in ((ps.cov(ps.asarray(m)), np.cov(m)), (ps.corrcoef(ps.asarray(m)),
                                                        np.corrcoef(m))):
        assert r.dtype == e.dtype and r.shape == e.shape
        np.testing.assert_allclose(np.asarray(r), e, rtol=1e-14, atol=1e-15)
    assert_same(ps.median(x), np.median(c))                       # complex: on the host
    u = np.array([3, 1, 250, 7], np.uint8)
    assert_same(ps.diff(ps.asarray(u)), np.diff(u))               # wraps, as NumPy's
    i = np.arange(10)
    assert_same(ps.quantile(ps.asarray(i), 1), np.quantile(i, 1))          # int q: taken
    assert_same(ps.quantile(ps.asarray(i), [0, 1]), np.quantile(i, [0, 1]))
    assert_same(ps.median(ps.asarray([5.0])), np.median([5.0]))
    assert_same(ps.round(ps.asarray(np.array([15, 25, -35], np.int8)), -1),
                np.round(np.array([15, 25, -35], np.int8), -1))
    assert_same(ps.ptp(ps.asarray(i.reshape(2, 5)), axis=1), np.ptp(i.reshape(2, 5), axis=1))
    assert_same(ps.diff(ps.asarray([1.0, 4.0]), prepend=0), np.diff([1.0, 4.0], prepend=0))
    assert ps.allclose([1, 2], [1, 2.0000001]) is True


@pytest.mark.parametrize("dt", NUM, ids=NUM_IDS)
def test_more_compositions(path, dt):
    mode, n = path
    a = _data(dt, n)
    if np.dtype(dt).kind == "f":
        a[0, :4] = [np.nan, np.inf, -np.inf, np.nan]
    x = ps.asarray(a)
    tol = dict(rtol=1e-5) if dt is np.float32 else dict(rtol=1e-12)
    assert_same(ps.nansum(x, axis=1), np.nansum(a, axis=1), **tol)
    assert_same(np.nansum(x), np.nansum(a), **tol)
    assert_same(ps.nanprod(x[:, :6], axis=0), np.nanprod(a[:, :6], axis=0), **tol)
    assert_same(ps.average(x[1:], axis=0), np.average(a[1:], axis=0), **tol)
    w = np.arange(1.0, n + 1)
    assert_same(ps.average(x[1:], axis=1, weights=w), np.average(a[1:], axis=1, weights=w),
                **tol)
    assert_same(ps.nan_to_num(x), np.nan_to_num(a))
    assert_same(ps.nan_to_num(x, nan=-1.0, posinf=9.0), np.nan_to_num(a, nan=-1.0, posinf=9.0))
    if np.dtype(dt).kind == "f":
        assert_same(ps.isposinf(x), np.isposinf(a))
        assert_same(np.isneginf(x), np.isneginf(a))
    assert ps.array_equal(x, x) is (np.dtype(dt).kind != "f")
    assert ps.array_equal(x, x, equal_nan=True) is True
    assert ps.array_equal(x, x[:2]) is False
    assert ps.iscomplexobj(x) is False and ps.isrealobj(x) is True
    assert_same(ps.append(x[0], x[1, :3]), np.append(a[0], a[1, :3]))
    assert_same(np.append(x, x[:1], axis=0), np.append(a, a[:1], axis=0))
    assert_same(ps.ediff1d(x[1:3], to_begin=0, to_end=[7, 8]),
                np.ediff1d(a[1:3], to_begin=0, to_end=[7, 8]))
    assert_same(ps.logspace(0, 3, 7), np.logspace(0, 3, 7))
    assert_same(ps.geomspace(1, 1000, 4, dtype=np.float32),
                np.geomspace(1, 1000, 4, dtype=np.float32))


@pytest.mark.parametrize("dt", [np.float64, np.float32, np.int64], ids=["f8", "f4", "i8"])
def test_views_selects_and_scans(path, dt):
    mode, n = path
    a = _data(dt, n)
    x = ps.asarray(a)
    for r, e in zip(ps.split(x, 2, axis=0), np.split(a, 2, axis=0)):
        assert_same(r, e)
    for r, e in zip(np.array_split(x, 5, axis=1), np.array_split(a, 5, axis=1)):
        assert_same(r, e)
    for r, e in zip(ps.hsplit(x, [1, 3]), np.hsplit(a, [1, 3])):
        assert_same(r, e)
    for r, e in zip(ps.vsplit(x, 4), np.vsplit(a, 4)):
        assert_same(r, e)
    for r, e in zip(ps.unstack(x, axis=0), np.unstack(a, axis=0)):
        assert_same(r, e)
    with pytest.raises(ValueError, match=rf"{__file__}:{_line() + 1}: array split"):
        ps.split(x, 3)
    c1, c2 = a > 5, a < -5
    assert_same(ps.select([x > 5, x < -5], [x, x * 2], default=-1),
                np.select([c1, c2], [a, a * 2], default=-1))
    assert_same(np.select([x > 5], [x], 0), np.select([c1], [a], 0))
    # (float32 sums cancel: their order is the compiled path's)
    tol = dict(rtol=1e-5, atol=1e-4) if dt is np.float32 else dict(rtol=1e-12, atol=1e-12)
    assert_same(ps.trapezoid(x, axis=1), np.trapezoid(a, axis=1), **tol)
    xs = np.linspace(0, 1, n)
    assert_same(np.trapezoid(x, ps.asarray(xs)), np.trapezoid(a, xs), **tol)
    assert_same(ps.trapezoid(x, dx=0.5, axis=0), np.trapezoid(a, dx=0.5, axis=0), **tol)
    assert_same(ps.isreal(x), np.isreal(a))
    assert_same(ps.iscomplex(x), np.iscomplex(a))
    assert_same(ps.diagflat(x[0, :3], 1), np.diagflat(a[0, :3], 1))
    assert_same(ps.cumulative_sum(x, axis=1, include_initial=True),
                np.cumulative_sum(a, axis=1, include_initial=True), **tol)
    assert_same(ps.cumulative_prod(x[0, :5]), np.cumulative_prod(a[0, :5]), **tol)
    assert_same(ps.concat([x, x], axis=1), np.concat([a, a], axis=1))


def test_more_host_functions(path):
    mode, n = path
    a = _data(np.int64, n)
    b = _data(np.int64, n, seed=1)
    x, y = ps.asarray(a), ps.asarray(b)
    for name, args in [("isin", (x, y[0, :5])), ("intersect1d", (x, y)), ("union1d", (x, y)),
                       ("setdiff1d", (x, y)), ("setxor1d", (x, y)), ("unique_values", (x,)),
                       ("trim_zeros", (x[0],)), ("lexsort", ((x[0], x[1]),)),
                       ("partition", (x, 3)), ("argpartition", (x[0], 3)),
                       ("unravel_index", (x[0], (10, 10))), ("polyval", ([1, 2, 3], x)),
                       ("nanmedian", (x,)), ("nanpercentile", (x, 30)),
                       ("nanquantile", (x, [0.2, 0.4]))]:
        hargs = [np.asarray(v) if isinstance(v, ps.Array) else
                 tuple(np.asarray(w) for w in v) if isinstance(v, tuple) else v for v in args]
        r, e = getattr(ps, name)(*args), getattr(np, name)(*hargs)
        for rr, ee in (zip(r, e) if isinstance(e, tuple) else [(r, e)]):
            assert_same(rr, ee, what=name)
    u = ps.unique_all(x[0])
    e = np.unique_all(a[0])
    assert u._fields == e._fields
    for rr, ee in zip(u, e):
        assert_same(rr, ee)
    assert_same(ps.roots(ps.asarray([1.0, -3.0, 2.0])), np.roots([1.0, -3.0, 2.0]))
    p = ps.polyfit(ps.asarray(np.arange(5.0)), ps.asarray(np.arange(5.0) * 2 + 1), 1)
    assert_same(p, np.polyfit(np.arange(5.0), np.arange(5.0) * 2 + 1, 1))


def test_rot90_rollaxis(path):
    a = np.arange(24.0).reshape(2, 3, 4)
    x = ps.asarray(a)
    for k in range(-1, 5):
        assert_same(ps.rot90(x, k), np.rot90(a, k))
        assert_same(np.rot90(x, k, axes=(2, 0)), np.rot90(a, k, axes=(2, 0)))
    for axis, start in ((2, 0), (0, 3), (1, 1), (-1, 1)):
        assert_same(ps.rollaxis(x, axis, start), np.rollaxis(a, axis, start))
    with pytest.raises(ValueError, match=rf"{__file__}:{_line() + 1}: Axes must be different"):
        ps.rot90(x, 1, axes=(1, 1))


@pytest.mark.parametrize("dt", NUM, ids=NUM_IDS)
def test_gradient(path, dt):
    mode, n = path
    a = _data(dt, n)
    x = ps.asarray(a)
    tol = dict(rtol=1e-6, atol=1e-5) if dt is np.float32 else {}
    for r, e in zip(ps.gradient(x), np.gradient(a)):
        assert_same(r, e, **tol)
    assert_same(np.gradient(x, 0.5, axis=1), np.gradient(a, 0.5, axis=1), **tol)
    for r, e in zip(ps.gradient(x, 2.0, 3, edge_order=2), np.gradient(a, 2.0, 3, edge_order=2)):
        assert_same(r, e, **tol)
    xs = np.cumsum(np.arange(1.0, n + 1))
    assert_same(ps.gradient(x[0], xs), np.gradient(a[0], xs), **tol)        # on the host
    with pytest.raises(ValueError, match=rf"{__file__}:{_line() + 1}: Shape of array"):
        ps.gradient(x[:1], axis=0)
