"""Frontend: creation functions, reads that force evaluation, metadata, copy semantics,
several application threads, trace-cache re-use with changing liveness."""
from __future__ import annotations

import os
import threading

import numpy as np
import pytest
from helpers import assert_same

import streamrt as ps


def test_creation_functions_match_numpy():
    i32 = np.arange(6, dtype=np.int32).reshape(2, 3)
    I = ps.asarray(i32)
    cases = [
        ("zeros", ps.zeros(3), np.zeros(3)),
        ("zeros int32", ps.zeros((2, 2), dtype=np.int32), np.zeros((2, 2), np.int32)),
        ("ones bool", ps.ones(3, dtype=bool), np.ones(3, bool)),
        ("empty", ps.empty((2, 0)), np.empty((2, 0))),
        ("full int", ps.full(3, 2), np.full(3, 2)),
        ("full float", ps.full((2,), 2.5), np.full(2, 2.5)),
        ("full bool", ps.full(2, True), np.full(2, True)),
        ("full dtype", ps.full(2, 7, dtype=np.float32), np.full(2, 7, np.float32)),
        ("zeros_like", ps.zeros_like(I), np.zeros_like(i32)),
        ("ones_like numpy", ps.ones_like(i32), np.ones_like(i32)),
        ("full_like", ps.full_like(I, 2.5), np.full_like(i32, 2.5)),
        ("empty_like dtype", ps.empty_like(I, dtype=np.float32) * 0,
         np.zeros((2, 3), np.float32)),
        ("zeros_like shape", ps.zeros_like(I, shape=(4,)), np.zeros_like(i32, shape=(4,))),
        ("arange", ps.arange(5), np.arange(5)),
        ("arange float", ps.arange(0, 1, 0.25), np.arange(0, 1, 0.25)),
        ("arange dtype", ps.arange(2, 10, 3, dtype=np.int32), np.arange(2, 10, 3, np.int32)),
        ("linspace", ps.linspace(0, 1, 5), np.linspace(0, 1, 5)),
        ("linspace float32", ps.linspace(0, 1, 4, endpoint=False, dtype=np.float32),
         np.linspace(0, 1, 4, endpoint=False, dtype=np.float32)),
        ("eye", ps.eye(3), np.eye(3)),
        ("eye k", ps.eye(3, 4, k=1, dtype=np.int64), np.eye(3, 4, k=1, dtype=np.int64)),
        ("array", ps.array([[1, 2], [3, 4]]), np.array([[1, 2], [3, 4]])),
        ("array dtype", ps.array([1.5], dtype=np.float32), np.array([1.5], np.float32)),
        ("asarray list", ps.asarray([1.0, 2.0]), np.asarray([1.0, 2.0])),
        ("asarray 0-d", ps.asarray(3), np.asarray(3)),
        ("asarray dtype", ps.asarray(i32, dtype=np.float64), i32.astype(np.float64)),
        # every integer dtype is kept as it is (float16 raises: tests/test_int_dtypes.py)
        ("uint8", ps.asarray(np.arange(3, dtype=np.uint8)), np.arange(3, dtype=np.uint8)),
        ("int16 full", ps.full(2, -7, dtype=np.int16), np.full(2, -7, np.int16)),
        ("asarray dtype uint64", ps.asarray([2 ** 64 - 1], dtype=np.uint64),
         np.asarray([2 ** 64 - 1], np.uint64)),
    ]
    for what, got, want in cases:
        assert isinstance(got, ps.Array), what
        assert_same(got, want, what=what)


def test_asarray_copies_the_host_data():
    src = np.ones(3)
    x = ps.asarray(src)
    y = x * 2.0
    src[0] = 5.0
    np.testing.assert_array_equal(y.numpy(), [2.0, 2.0, 2.0])
    assert ps.asarray(x) is x


def test_read_points_force_evaluation(stats):
    x = ps.asarray(np.arange(4.0))
    reads = [
        lambda: np.asarray(x * 1.0), lambda: (x * 1.0).numpy(), lambda: float(ps.sum(x)),
        lambda: int(ps.sum(x)), lambda: bool(ps.sum(x) > 0), lambda: ps.sum(x).item(),
        lambda: (x + 0.0).tolist(), lambda: repr(x - 0.0), lambda: str(x * 2.0),
        lambda: f"{ps.max(x):.1f}", lambda: [float(v) for v in x + 1.0],
        lambda: [0, 1, 2, 3][ps.sum(ps.asarray(np.array([1, 2])))],
    ]
    for i, read in enumerate(reads):
        ps.reset_stats()
        read()
        assert stats()["flushes"] == 1, i
    assert repr(x) == "streamrt.array([0., 1., 2., 3.])"
    assert str(x * 2.0) == "[0. 2. 4. 6.]"
    assert f"{ps.max(x):.1f}" == "3.0"
    assert [0, 1, 2, 3][ps.sum(ps.asarray(np.array([1, 2])))] == 3
    assert (ps.asarray(np.int64(2)) + 1).numpy() == 3     # folded: all operands constant
    assert (x + 0.0).tolist() == [0.0, 1.0, 2.0, 3.0]


def test_metadata_without_evaluation(stats):
    x = ps.asarray(np.ones((2, 3), np.float32))
    y = ps.exp(x)[:, None, ::2]
    assert (y.shape, y.ndim, y.size, y.dtype, y.itemsize, y.nbytes) == \
        ((2, 1, 2), 3, 4, np.float32, 4, 16)
    assert x.T.shape == (3, 2) and x.mT.shape == (3, 2) and len(x) == 2
    assert ps.shape(x) == (2, 3) and ps.ndim(x) == 2 and ps.size(x) == 6
    assert ps.is_lazy(y) and not ps.is_lazy(np.ones(2))
    assert stats()["kernels_launched"] == 0 and stats()["flushes"] == 0


def _work(seed, out, i):
    a = np.random.default_rng(seed).random(1000)
    x = ps.asarray(a)
    y = ps.sum(ps.cos(x) * 2.0 + x, axis=0)
    out[i] = (float(y), float(np.sum(np.cos(a) * 2.0 + a)))


def test_several_application_threads(stats):
    out = {}
    threads = [threading.Thread(target=_work, args=(s, out, s)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert sorted(out) == [0, 1, 2, 3]
    for got, want in out.values():
        assert abs(got - want) <= 1e-12 * abs(want)


def test_an_array_recorded_by_another_thread(stats):
    a = np.linspace(0, 1, 50)
    box = {}

    def producer():
        box["y"] = ps.asarray(a) * 3.0         # recorded in the producer's queue, not run

    t = threading.Thread(target=producer)
    t.start()
    t.join(60)
    z = box["y"] + 1.0                         # this thread's op reads it: flushed first
    np.testing.assert_array_equal(z.numpy(), a * 3.0 + 1.0)


def _step(x, keep):
    t = x * 2.0
    u = ps.exp(t) - 1.0
    r = (u, t) if keep else (u,)
    return r


def test_trace_cache_reuse_respects_liveness(stats):
    a = np.linspace(-1, 1, 64)
    x = ps.asarray(a)
    ps.reset_stats()
    for keep in (False, False, True, True, False):
        r = _step(x, keep)
        # exp(x) - 1 cancels near 0: the bound is on exp's ulps, not the difference's
        assert_same(r[0], np.exp(a * 2.0) - 1.0, atol=8 * np.spacing(np.exp(2.0)))
        if keep:
            assert_same(r[1], a * 2.0)
    st = stats()
    assert st["trace_cache_hits"] >= 2 and st["kernels_launched"] == 5


def test_every_setting_is_documented_in_the_guide():
    """Each STREAMRT_* flag of streamrt/config.py has a row in docs/guide.md's settings table."""
    guide = open(os.path.join(os.path.dirname(__file__), "..", "docs", "guide.md")).read()
    missing = [f.name for f in ps.config.FLAGS.values() if f"| `{f.name}` |" not in guide]
    assert not missing, f"flags without a row in docs/guide.md: {missing}"


@pytest.mark.parametrize("dts", [("float64", "float64"), ("int32", "float32"),
                                 ("float32", "int64"), ("int64", "int32")])
def test_zero_d_array_against_an_array_promotes_like_numpy(dts):
    """The recording fast path takes ``alpha * p`` (a computed 0-d array against an array,
    either side); the results and dtypes are NumPy 2's (0-d arrays are not weak)."""
    a_dt, s_dt = dts
    av = np.arange(1, 7).astype(a_dt)
    sv = np.asarray(np.arange(1, 4).astype(s_dt).sum())
    a = ps.asarray(av) * 1
    s = ps.sum(ps.asarray(np.arange(1, 4).astype(s_dt)) * 1)
    for _ in range(2):                  # the second time through the memoised path
        got = [a * s, s * a, s - a, a / s]
    want = [av * sv, sv * av, sv - av, av / sv]
    for g, w in zip(got, want):
        assert_same(g, w, ulps=1)
