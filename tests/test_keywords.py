"""Keywords are honoured or refused, never swallowed; ``out=`` writes like NumPy's; reads hand
out read-only buffers (a write through one must not change work recorded earlier)."""
from __future__ import annotations

import inspect
import itertools
import sys

import numpy as np
import pytest
from helpers import assert_same as _exact


def assert_same(a, e):
    _exact(a, e, rtol=1e-12, atol=1e-12)

import streamrt as ps
from streamrt.frontend.array import HANDLED_FUNCTIONS, Array


def _line():
    return sys._getframe(1).f_lineno


@pytest.fixture
def data():
    rng = np.random.default_rng(7)
    a = rng.standard_normal((4, 5))
    return a, ps.asarray(a), rng.random((4, 5)) < 0.5


# ---- the three reported wrong results -------------------------------------------------------
def test_where_and_initial_of_reductions_are_honoured(data):
    a, x, m = data
    assert_same(np.sum(x, where=m), np.sum(a, where=m))
    assert_same(np.max(x, initial=10), np.max(a, initial=10))
    assert_same(ps.sum(x, axis=1, where=m, initial=1.5), np.sum(a, axis=1, where=m, initial=1.5))
    assert_same(x.max(axis=0, where=m, initial=-5), a.max(axis=0, where=m, initial=-5))
    assert_same(ps.mean(x, axis=0, where=m), np.mean(a, axis=0, where=m))
    assert_same(ps.any(x > 1, where=m), np.any(a > 1, where=m))
    assert_same(ps.all(x > -1, axis=1, where=m), np.all(a > -1, axis=1, where=m))
    assert_same(ps.prod(x, where=m, keepdims=True), np.prod(a, where=m, keepdims=True))
    assert_same(ps.var(x, axis=1, where=m), np.var(a, axis=1, where=m))
    assert_same(ps.std(x, ddof=1, where=m), np.std(a, ddof=1, where=m))
    # integer sums: initial is cast to the accumulator dtype, as NumPy does
    i = np.arange(6)
    assert_same(ps.sum(ps.asarray(i), initial=0.5), np.sum(i, initial=0.5))
    # nothing to reduce: the result is initial
    e = np.zeros((0, 3))
    assert_same(ps.max(ps.asarray(e), axis=0, initial=-1), np.max(e, axis=0, initial=-1))


def test_max_with_a_mask_needs_initial_as_in_numpy(data):
    a, x, m = data
    with pytest.raises(ValueError, match="initial") as ei:
        line = _line() + 1
        ps.max(x, where=m)
    assert str(ei.value).startswith(f"{__file__}:{line}:")
    with pytest.raises(ValueError, match="initial"):
        np.max(a, where=m)


def test_unknown_keyword_is_refused_at_the_call(data):
    _, x, _ = data
    with pytest.raises(TypeError, match="axs") as ei:
        line = _line() + 1
        ps.sum(x, axs=0)
    # Python's own binding error raised in the user's frame, or streamrt's naming the line
    assert ei.traceback[-1].lineno + 1 == line and str(ei.traceback[-1].path) == __file__ \
        or str(ei.value).startswith(f"{__file__}:{line}:")
    with pytest.raises(ps.ArgumentError) as ei:
        line = _line() + 1
        ps.add(x, x, signature="dd->d")
    assert str(ei.value).startswith(f"{__file__}:{line}:")


def test_no_public_function_swallows_keywords():
    """Every function of the namespace declares the keywords it takes (no ``**kw`` that could
    take a misspelt or unimplemented keyword without a word)."""
    allowed = {("Array", "clip"),     # forwards to ps.clip, whose keywords are explicit
               ("streamrt", "fromfunction")}   # NumPy's: its **kwargs go to the user's function
    found = []
    for mod in (ps, ps.linalg, ps.fft):
        for name in dir(mod):
            f = getattr(mod, name)
            if name.startswith("_") or not callable(f) or isinstance(f, type):
                continue
            try:
                sig = inspect.signature(f)
            except (TypeError, ValueError):
                continue
            if any(p.kind == p.VAR_KEYWORD for p in sig.parameters.values()) and \
                    (mod.__name__, name) not in allowed:
                found.append((mod.__name__, name))
    for name, f in vars(Array).items():
        if callable(f) and not name.startswith("__"):
            sig = inspect.signature(f)
            if any(p.kind == p.VAR_KEYWORD for p in sig.parameters.values()) and \
                    ("Array", name) not in allowed:
                found.append(("Array", name))
    assert not found


def test_a_numpy_keyword_streamrt_lacks_runs_on_numpy_with_a_warning(data):
    a, x, _ = data
    with pytest.warns(RuntimeWarning, match="mode="):
        got = np.pad(x, 1, mode="mean")
    assert_same(got, np.pad(a, 1, mode="mean"))
    # ... and the same call made on streamrt directly is refused, not approximated
    with pytest.raises(ps.ArgumentError, match="mean"):
        ps.pad(x, 1, mode="mean")


# ---- out= ---------------------------------------------------------------------------------
def test_out_of_ufuncs_writes_the_array_and_its_views(data):
    a, x, m = data
    b = a.copy()
    y = ps.asarray(b)
    row = y[1]                       # a view sees the write
    before = y * 1.0                 # work recorded before reads the old values
    r = ps.add(x, 1.0, out=y)
    assert r is y
    np.add(a, 1.0, out=b)
    assert_same(y, b)
    assert_same(row, b[1])
    assert_same(before, a)
    # through NumPy's ufunc, with a mask: masked-out elements keep out's values
    np.multiply(x, 2.0, out=y, where=m)
    np.multiply(a, 2.0, out=b, where=m)
    assert_same(y, b)
    # a NumPy array as out
    o = np.zeros_like(a)
    assert ps.sqrt(ps.abs(x), out=o) is o
    assert_same(o, np.sqrt(np.abs(a)))


def test_out_casting_follows_numpy(data):
    a, x, _ = data
    o = ps.zeros((4, 5), dtype=np.int64)
    with pytest.raises(TypeError, match="same_kind"):
        ps.add(x, 1.0, out=o)
    ps.add(x, 1.0, out=o, casting="unsafe")
    assert_same(o, np.add(a, 1.0).astype(np.int64))


def test_dtype_of_a_ufunc_picks_the_loop(data):
    a, x, _ = data
    assert_same(ps.add(x, x, dtype=np.float32), np.add(a, a, dtype=np.float32))
    i = np.arange(5)
    assert_same(ps.sqrt(ps.asarray(i), dtype=np.float32), np.sqrt(i, dtype=np.float32))


def test_out_of_reductions_and_intrinsics(data):
    a, x, _ = data
    o = ps.zeros(5)
    assert ps.sum(x, axis=0, out=o) is o
    assert_same(o, a.sum(axis=0))
    with pytest.raises(ValueError):
        ps.sum(x, out=ps.zeros(3))                  # a reduction's out has its shape
    o2 = ps.zeros((4, 4))
    ps.matmul(x, x.T, out=o2)
    assert_same(o2, a @ a.T)
    o3 = ps.zeros((4, 5))
    ps.cumsum(x, axis=1, out=o3)
    assert_same(o3, np.cumsum(a, axis=1))
    o4 = ps.zeros((4, 4))
    ps.einsum("ij,kj->ik", x, x, out=o4)
    assert_same(o4, np.einsum("ij,kj->ik", a, a))
    o5 = ps.zeros((8, 5))
    ps.concatenate([x, x], out=o5)
    assert_same(o5, np.concatenate([a, a]))
    assert_same(ps.take(x, [0, 7, -9], axis=1, mode="wrap"), np.take(a, [0, 7, -9], axis=1,
                                                                      mode="wrap"))
    assert_same(ps.take(x, [9], mode="clip"), np.take(a, [9], mode="clip"))


def test_numpy_functions_that_write_an_argument(data):
    a, x, _ = data
    before = x + 0.0
    b = a.copy()
    np.fill_diagonal(x, 5.0)
    np.fill_diagonal(b, 5.0)
    assert_same(x, b)
    np.copyto(x, 1.5, where=b > 1)
    np.copyto(b, 1.5, where=b > 1)
    assert_same(x, b)
    assert_same(before, a)


# ---- reads ----------------------------------------------------------------------------------
def test_a_read_is_read_only_and_cannot_change_earlier_work():
    x = ps.asarray(np.zeros(4))
    a = np.asarray(x)
    y = x + 1
    with pytest.raises(ValueError, match="read-only"):
        a[0] = 100
    assert float(y[0]) == 1.0
    assert not x.numpy().flags.writeable
    c = np.array(x)                   # a copy is writable and changes nothing
    c[0] = 100
    assert float(y[0]) == 1.0 and float(x[0]) == 0.0


def test_asarray_copy_false_is_refused_for_host_data():
    with pytest.raises(ValueError, match="copy=False"):
        ps.asarray(np.zeros(3), copy=False)
    x = ps.asarray(np.zeros(3))
    assert ps.asarray(x, copy=False) is x


def test_keywords_reach_handled_functions_through_numpy(data):
    """Every keyword NumPy passes to a handled function through ``__array_function__`` is
    one its streamrt version declares, or the call runs on NumPy (never dropped)."""
    from streamrt.frontend.array import _unaccepted
    for name, impl in HANDLED_FUNCTIONS.items():
        f = getattr(np, name, None)
        if f is None or isinstance(f, np.ufunc):
            continue
        try:
            theirs = [p.name for p in inspect.signature(f).parameters.values()
                      if p.kind == p.KEYWORD_ONLY or p.kind == p.POSITIONAL_OR_KEYWORD]
        except (TypeError, ValueError):
            continue
        bad = _unaccepted(impl, dict.fromkeys(theirs))
        # what is not accepted goes to the NumPy fallback: check one such call does
        for k in bad:
            assert k in theirs


@pytest.mark.parametrize("n", [35, 70_000])
def test_mean_var_std_with_dtype_follow_numpys_steps(n):
    """``dtype=`` of mean/var/std is the dtype NumPy sums in and answers in -- an integer
    dtype wraps as NumPy's does, complex squares the deviations of a real array as they are --
    on the NumPy tier and recorded; prod of float32 multiplies in float32 (NumPy's overflow)."""
    rng = np.random.default_rng(5)
    data = {"int8": (rng.integers(0, 9, (n // 5, 5))).astype(np.int8),
            "float32": rng.random((n // 5, 5)).astype(np.float32) * 10,
            "bool": rng.random((n // 5, 5)) < 0.5,
            "complex128": rng.random((n // 5, 5)) + 1j * rng.random((n // 5, 5))}
    mask = rng.random((n // 5, 5)) < 0.7
    for (name, a), f, dt, axis, where in itertools.product(
            data.items(), ("mean", "var", "std"), (None, np.int8, np.int64, np.float32,
                                                   np.complex64),
            (None, 0), (True, mask)):
        kw = {"axis": axis, "dtype": dt}
        if where is not True:
            kw["where"] = where
        with np.errstate(all="ignore"):
            try:
                want = np.asarray(getattr(np, f)(a, **kw))
            except TypeError:
                continue                # (NumPy cannot: e.g. a complex sum into int8)
            if where is not True:
                kw["where"] = ps.asarray(where)
            got = np.asarray(getattr(ps, f)(ps.asarray(a), **kw))
        assert got.dtype == want.dtype, (name, f, dt, axis)
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6, err_msg=f"{name} {f} {dt}")
    big = np.resize(np.array([3e38, 3e38, 0.0], dtype=np.float32), n)
    with np.errstate(all="ignore"):
        assert np.isnan(np.prod(big)) and np.isnan(float(ps.prod(ps.asarray(big))))
