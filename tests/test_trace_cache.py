"""The trace cache: a repeated trace skips ProgGen and compiles nothing; what enters the key
(shapes, dtypes, call order, releases) and what does not (Python scalar values); the LRU
bounds; the STREAMRT_DEBUG=1 miss explanation. Asserted through counters and results only.

Every test defines its loop body inside the test, so its call sites (the first of which picks
the cache bucket) belong to that test alone."""
from __future__ import annotations

import os

import numpy as np
import pytest

import streamrt as ps
import streamrt.compiler as compiler
from helpers import assert_same
from streamrt.runtime import trace_cache as tc_mod
from streamrt.runtime.trace_cache import TraceCache

HERE = os.path.basename(__file__)
N = 1000


def _line(marker):
    """Line number of the line of this file that ends with the comment ``# <marker>``."""
    with open(__file__) as f:
        for i, text in enumerate(f, 1):
            if text.rstrip().endswith(f"# <{marker}>"):
                return i
    raise AssertionError(f"marker {marker} not found")


def _f32(n=N, seed=0):
    return np.random.default_rng(seed).uniform(-2, 2, n).astype(np.float32)


@pytest.fixture
def generate_calls(monkeypatch):
    """Counts ProgGen runs (the C-Scheduler calls ``compiler.generate`` on a trace-cache miss)."""
    calls = []
    real = compiler.generate

    def counting(*a, **k):
        calls.append(1)
        return real(*a, **k)

    monkeypatch.setattr(compiler, "generate", counting)
    return calls


def test_a_miss_runs_proggen_with_the_collector_paused(monkeypatch):
    """ProgGen and the generic key of a missed trace run with Python's cyclic collector
    paused (they allocate many objects and no cyclic garbage); it is on again afterwards,
    and stays off when the program had turned it off (and after an error in ProgGen)."""
    import gc
    seen = []
    real = compiler.generate

    def watching(*a, **k):
        seen.append(gc.isenabled())
        if len(seen) == 3:
            raise RuntimeError("ProgGen failed")
        return real(*a, **k)

    monkeypatch.setattr(compiler, "generate", watching)
    a = _f32()
    assert gc.isenabled()
    assert_same(ps.asarray(a) * 2.0 + 1.0, a * 2.0 + 1.0)
    assert seen == [False] and gc.isenabled()
    gc.disable()
    try:
        assert_same(ps.asarray(a) * 3.0 - 1.0, a * 3.0 - 1.0)
        assert seen == [False, False] and not gc.isenabled()
    finally:
        gc.enable()
    with pytest.raises(Exception, match="ProgGen failed"):
        (ps.asarray(a) - 5.0).numpy()
    assert len(seen) == 3 and gc.isenabled()


# ---- the hit path ------------------------------------------------------------------------------
def test_loop_body_compiles_once_and_runs_proggen_once(stats, generate_calls):
    a = _f32()
    x = ps.asarray(a)
    u = ps.asarray(np.zeros(N, np.float32))
    ref_u = np.zeros(N, np.float32)
    compiled_after_first = None
    for i in range(100):
        s = 0.25 + 0.01 * i                     # a new Python scalar every iteration
        u = u * 0.5 + x * s - 1.0
        y = ps.sqrt(u * u + 1.0) * s
        out = np.asarray(y)                     # the read flushes one iteration
        ref_u = ref_u * 0.5 + a * s - 1.0
        assert_same(out, np.sqrt(ref_u * ref_u + 1.0) * s, ulps=1, what=f"iteration {i}")
        st = stats()
        if i == 0:
            compiled_after_first = st["kernels_compiled"] + st["kernels_loaded_from_disk"]
            assert st["trace_cache_misses"] == 1 and st["trace_cache_hits"] == 0
    st = stats()
    assert st["trace_cache_misses"] == 1
    assert st["trace_cache_hits"] == 99
    assert len(generate_calls) == 1             # ProgGen ran for the first iteration only
    assert st["kernels_compiled"] + st["kernels_loaded_from_disk"] == compiled_after_first
    assert st["kernels_launched"] == 100
    assert st["flushes"] == 100
    assert_same(np.asarray(u), ref_u, ulps=1, what="final state")


def test_scalar_values_are_parameters_not_key_parts(stats):
    a = _f32(seed=1)
    x = ps.asarray(a)

    def body(s, t):
        return (x + s) * t                      # <scalars>

    results = [np.asarray(body(s, t)) for s, t in [(1.0, 2.0), (-3.5, 0.5), (1e3, -7.0),
                                                  (0.0, 0.0)]]
    st = stats()
    assert st["trace_cache_misses"] == 1 and st["trace_cache_hits"] == 3
    for r, (s, t) in zip(results, [(1.0, 2.0), (-3.5, 0.5), (1e3, -7.0), (0.0, 0.0)]):
        assert_same(r, (a + s) * t, what=f"s={s} t={t}")


def test_changed_size_hits_the_shape_generic_entry_and_dtype_or_rank_misses(stats,
                                                                          generate_calls):
    def body(x):
        return ps.exp(x * 0.5) + x              # <shape-body>

    a = _f32(1000, seed=2)
    b = _f32(2000, seed=3)
    r1 = np.asarray(body(ps.asarray(a)))
    r2 = np.asarray(body(ps.asarray(a + 1)))    # same shape and dtype: a hit
    st = stats()
    assert (st["trace_cache_misses"], st["trace_cache_hits"]) == (1, 1)
    r3 = np.asarray(body(ps.asarray(b)))        # new size: the same template, re-derived
    st = stats()
    assert (st["trace_cache_misses"], st["trace_cache_hits"]) == (1, 2)
    assert st["trace_cache_shape_hits"] == 1
    r4 = np.asarray(body(ps.asarray(a.astype(np.float64))))   # new dtype: a miss
    st = stats()
    assert (st["trace_cache_misses"], st["trace_cache_hits"]) == (2, 2)
    r6 = np.asarray(body(ps.asarray(b.reshape(40, 50))))      # new rank: a miss
    st = stats()
    assert (st["trace_cache_misses"], st["trace_cache_hits"]) == (3, 2)
    assert len(generate_calls) == 3
    r5 = np.asarray(body(ps.asarray(b + 1)))    # the 1000-element trace serves 2000 again
    st = stats()
    assert (st["trace_cache_misses"], st["trace_cache_hits"]) == (3, 3)
    assert st["kernels_compiled"] <= 3         # one kernel source per dtype and rank
    assert r4.dtype == np.float64
    for r, v in [(r1, a), (r2, a + 1), (r3, b), (r4, a.astype(np.float64)), (r5, b + 1),
                 (r6, b.reshape(40, 50))]:
        assert_same(r, np.exp(v * 0.5) + v, ulps=4, atol=1e-6)     # exp: libm differs


def test_a_triangular_loop_hits_the_trace_cache_from_its_second_iteration(stats,
                                                                         generate_calls):
    """Slice bounds that change every iteration (PolyBench's syrk, LU) are not key material:
    the loop's trace is generated once and re-derived for each new size and offset, its
    kernels keep their source, and every iteration gives NumPy's values."""
    n = 40
    rng = np.random.default_rng(7)
    a0, c0 = rng.random((n, n)), rng.random((n, n))
    A, C = ps.asarray(a0), ps.asarray(c0)
    expect = c0.copy()
    for i in range(1, n):
        C[i, :i + 1] = 1.2 * C[i, :i + 1] + 1.5 * (A[:i + 1, 3] * A[i, 3])
        expect[i, :i + 1] = 1.2 * expect[i, :i + 1] + 1.5 * (a0[:i + 1, 3] * a0[i, 3])
        ps.sync()
        st = stats()
        if i >= 2:
            assert st["trace_cache_misses"] == 1, i
    st = stats()
    assert st["trace_cache_shape_hits"] == n - 2
    assert len(generate_calls) == 1
    assert st["kernels_compiled"] <= 1
    assert_same(C, expect, rtol=1e-14)


def test_a_sliding_window_keeps_its_kernels_with_new_offsets(stats, generate_calls):
    """A loop over windows of one size (``x[k:k + m]``, Floyd-Warshall's ``path[:, k:k+1]``)
    changes only its views' offsets: each later iteration instantiates the first one's
    template with its loads at the new offsets (compiler.reoffset), no kernel is rebuilt or
    rendered, and the values are NumPy's. A region write in the trace keeps the general
    re-derivation (its offset decides whether it may write in place)."""
    m, n = 500, 40
    rng = np.random.default_rng(11)
    x0, y0 = rng.random(m + n), rng.random(m)
    x, y = ps.asarray(x0), ps.asarray(y0)
    got = []
    for k in range(n):
        got.append(float((x[k:k + m] * 2.0 + y).sum()))
    st = stats()
    assert st["trace_cache_misses"] == 1 and st["trace_cache_offset_hits"] == n - 1
    assert len(generate_calls) == 1
    want = [float((x0[k:k + m] * 2.0 + y0).sum()) for k in range(n)]
    assert_same(np.array(got), np.array(want), rtol=1e-13)
    z = ps.asarray(np.zeros(m + n))
    for k in range(4):
        z[k:k + m] = x[k:k + m] * 3.0
        z.numpy()
    st2 = stats()
    assert st2["trace_cache_offset_hits"] == st["trace_cache_offset_hits"]
    e = np.zeros(m + n)
    for k in range(4):
        e[k:k + m] = x0[k:k + m] * 3.0
    assert_same(z, e, rtol=1e-15)


def _mul(y):
    return y * 2.0                              # <order-mul>


def _sub(y):
    return y - 3.0                              # <order-sub>


def test_different_call_order_misses(stats, generate_calls):
    a = _f32(seed=4)
    x = ps.asarray(a)

    def body(first, second):
        y = x + 1.0                             # <order-first>
        p = first(y)
        q = second(y)
        return p * q + p

    r1 = np.asarray(body(_mul, _sub))
    r2 = np.asarray(body(_mul, _sub))
    st = stats()
    assert (st["trace_cache_misses"], st["trace_cache_hits"]) == (1, 1)
    r3 = np.asarray(body(_sub, _mul))           # the same call sites in another order
    st = stats()
    assert (st["trace_cache_misses"], st["trace_cache_hits"]) == (2, 1)
    assert len(generate_calls) == 2
    m, s = (a + 1) * 2.0, (a + 1) - 3.0
    assert_same(r1, m * s + m)
    assert_same(r2, m * s + m)
    assert_same(r3, s * m + s)


def test_released_and_kept_intermediate_differ(stats, generate_calls):
    a = _f32(seed=5)

    def body(x, keep):
        y = x * 3.0                             # <release-y>
        z = ps.sum(y + 1.0)
        if not keep:
            del y                               # released before the read
            return float(z), None
        return float(z), y

    x = ps.asarray(a)
    t1, _ = body(x, False)
    t2, _ = body(x, False)
    st = stats()
    assert (st["trace_cache_misses"], st["trace_cache_hits"]) == (1, 1)
    t3, y = body(x, True)                       # y is kept: it must be written this time
    st = stats()
    assert (st["trace_cache_misses"], st["trace_cache_hits"]) == (2, 1)
    assert len(generate_calls) == 2
    assert_same(y, a * 3.0)
    t4, y2 = body(x, True)                      # the kept variant is cached too
    assert stats()["trace_cache_hits"] == 2
    assert_same(y2, a * 3.0)
    want = float(np.sum((a * 3.0 + 1.0).astype(np.float64)))
    for t in (t1, t2, t3, t4):
        assert t == pytest.approx(want, rel=1e-4, abs=1e-2)


def test_trace_cache_off_gives_same_results_and_no_hits(stats, generate_calls):
    a = _f32(seed=6)
    x = ps.asarray(a)

    def body(s):
        return ps.sqrt(x * x + s) - x           # <cache-off>

    on = [np.asarray(body(float(i))) for i in range(5)]
    st = stats()
    assert (st["trace_cache_misses"], st["trace_cache_hits"]) == (1, 4)
    assert len(generate_calls) == 1
    ps.reset_stats()
    with ps.config.override(trace_cache=False):
        off = [np.asarray(body(float(i))) for i in range(5)]
    st = stats()
    assert st["trace_cache_hits"] == 0 and st["trace_cache_misses"] == 0
    assert len(generate_calls) == 6             # ProgGen at every flush
    assert st["kernels_compiled"] == 0          # the kernel itself is still cached
    for i, (r_on, r_off) in enumerate(zip(on, off)):
        np.testing.assert_array_equal(r_on, r_off)
        assert_same(r_off, np.sqrt(a * a + np.float32(i)) - a, ulps=1)


# ---- the miss explanation (STREAMRT_DEBUG=1) ---------------------------------------------------
def _misses(err):
    return [ln for ln in err.splitlines() if "trace cache miss" in ln]


def test_miss_explanation_names_site_and_shape_or_dtype(capsys):
    def body(x):
        y = x + 1.0                             # <explain-first>
        return y * y - 2.0                      # <explain-second>

    a = _f32(seed=7)
    ps.sync()
    capsys.readouterr()
    with ps.config.override(debug=1):
        np.asarray(body(ps.asarray(a)))
        first = _misses(capsys.readouterr().err)
        np.asarray(body(ps.asarray(a)))
        hit = _misses(capsys.readouterr().err)
        np.asarray(body(ps.asarray(np.concatenate([a, a]))))      # a new size: a hit
        assert _misses(capsys.readouterr().err) == []
        np.asarray(body(ps.asarray(a.reshape(10, 100))))          # a new rank: a miss
        shape = _misses(capsys.readouterr().err)
        np.asarray(body(ps.asarray(a.astype(np.float64))))
        dtype = _misses(capsys.readouterr().err)
    site = f"{HERE}:{_line('explain-first')}"
    assert len(first) == 1 and "new trace" in first[0] and site in first[0], first
    assert hit == []
    assert len(shape) == 1, shape
    assert site in shape[0] and "shape (1000,) -> (10, 100)" in shape[0], shape
    assert len(dtype) == 1, dtype
    assert site in dtype[0] and "dtype float32 -> float64" in dtype[0], dtype


def test_miss_explanation_names_call_order(capsys):
    x = ps.asarray(_f32(seed=8))

    def body(first, second):
        y = x - 1.0                             # <explain-order>
        return first(y) + second(y)

    ps.sync()
    capsys.readouterr()
    with ps.config.override(debug=1):
        np.asarray(body(_mul, _sub))
        capsys.readouterr()
        np.asarray(body(_sub, _mul))
        order = _misses(capsys.readouterr().err)
    assert len(order) == 1, order
    msg = order[0]
    assert "order of calls" in msg, msg
    # the site that came first this time, and the one the cached trace had there
    assert f"{HERE}:{_line('order-sub')}" in msg and f"{HERE}:{_line('order-mul')}" in msg, msg


def test_miss_explanation_names_released_value(capsys):
    x = ps.asarray(_f32(seed=9))

    def body(keep):
        y = x * 5.0                             # <explain-release>
        r = ps.sum(y - 1.0)
        if not keep:
            del y
            return float(r), None
        return float(r), y

    ps.sync()
    capsys.readouterr()
    with ps.config.override(debug=1):
        body(False)
        capsys.readouterr()
        body(True)
        msg = _misses(capsys.readouterr().err)
    assert len(msg) == 1, msg
    assert "released" in msg[0] and f"{HERE}:{_line('explain-release')}" in msg[0], msg


def test_no_explanation_without_debug(capsys):
    x = ps.asarray(_f32(seed=10))
    ps.sync()
    capsys.readouterr()
    with ps.config.override(debug=0):
        np.asarray(x * 7.0 + 1.0)
    assert _misses(capsys.readouterr().err) == []


# ---- bounds: global LRU and per-bucket LRU ----------------------------------------------------
def _key(site, n=1, tag=0):
    """A synthetic trace key: (settings, entries, released, macro key); the first entry's
    (code id, offset) is the bucket."""
    entries = tuple((site, 0, "map", "add", (), "f4", (tag,), "f4", ()) for _ in range(n))
    return (("cpu",), entries, (), None)


def test_global_lru_bound():
    c = TraceCache(max_entries=3, per_bucket=16)
    for i in range(3):
        c.insert(_key(i), f"t{i}", [])
    assert c.info()["entries"] == 3 and c.info()["buckets"] == 3
    assert c.lookup(_key(0)) == "t0"            # 0 is now the most recently used
    c.insert(_key(3), "t3", [])                 # evicts the least recently used: 1
    assert c.lookup(_key(1)) is None
    assert [c.lookup(_key(i)) for i in (0, 2, 3)] == ["t0", "t2", "t3"]
    info = c.info()
    assert info["entries"] == 3 and info["evictions"] == 1
    assert info["buckets"] == 3                 # the emptied bucket is dropped
    assert info["max_entries"] == 3


def test_per_bucket_bound_default_is_16():
    c = TraceCache(max_entries=1000)
    assert c.per_bucket == 16
    keys = [_key(42, tag=i) for i in range(17)]  # one first call site, 17 traces
    for i, k in enumerate(keys[:16]):
        c.insert(k, i, [])
    assert c.lookup(keys[0]) == 0               # touch the oldest: it becomes the newest
    c.insert(keys[16], 16, [])                  # the bucket is full: its LRU entry (1) goes
    assert c.lookup(keys[1]) is None
    assert c.lookup(keys[0]) == 0 and c.lookup(keys[16]) == 16
    assert all(c.lookup(k) == i for i, k in enumerate(keys) if i >= 2)
    info = c.info()
    assert info["entries"] == 16 and info["buckets"] == 1 and info["evictions"] == 1
    # another call site has a bucket of its own
    c.insert(_key(43), "other", [])
    assert c.lookup(_key(43)) == "other" and c.info()["entries"] == 17


def test_key_compare_is_exact():
    c = TraceCache(max_entries=10)
    c.insert(_key(1, n=2), "two", [])
    assert c.lookup(_key(1, n=1)) is None       # a prefix is not a match
    assert c.lookup(_key(1, n=3)) is None
    assert c.lookup(_key(1, n=2, tag=1)) is None
    k = _key(1, n=2)
    assert c.lookup((("cpu", "other settings"),) + k[1:]) is None
    assert c.lookup(k[:2] + ((True,), None)) is None    # a different released pattern
    assert c.lookup(_key(1, n=2)) == "two"
    c.clear()
    assert c.lookup(_key(1, n=2)) is None and c.info()["entries"] == 0


def test_trace_cache_size_is_read_at_creation(monkeypatch):
    monkeypatch.setattr(tc_mod, "_cache", None)
    with ps.config.override(trace_cache_size=7):
        c = tc_mod.get()
    assert c.info()["max_entries"] == 7 and c.per_bucket == 16
    assert tc_mod.get() is c


def test_eviction_in_the_runtime(stats, monkeypatch):
    """The runtime's cache at a small bound: the per-bucket LRU bound evicts the oldest shape of
    one loop body, and an evicted trace misses again but still computes the right thing.
    (The shapes differ in rank: other sizes of one rank share a shape-generic entry.)"""
    monkeypatch.setattr(tc_mod, "_cache", TraceCache(max_entries=100, per_bucket=3))

    def body(x):
        return x * 2.0 - 1.0                    # <evict>

    sizes = [100, 101, 102, 103]
    shapes = {100: (100,), 101: (4, 25), 102: (2, 2, 25), 103: (2, 2, 5, 5)}
    data = {n: _f32(100, seed=n).reshape(shapes[n]) for n in sizes}
    for n in sizes:
        assert_same(np.asarray(body(ps.asarray(data[n]))), data[n] * 2.0 - 1.0)
    st = stats()
    assert (st["trace_cache_misses"], st["trace_cache_hits"]) == (4, 0)
    assert tc_mod.get().info()["evictions"] == 1
    for n in sizes[1:]:                         # still cached
        np.asarray(body(ps.asarray(data[n])))
    assert stats()["trace_cache_hits"] == 3
    r = np.asarray(body(ps.asarray(data[100])))  # evicted: a miss
    st = stats()
    assert (st["trace_cache_misses"], st["trace_cache_hits"]) == (5, 3)
    assert_same(r, data[100] * 2.0 - 1.0)
    # the global bound
    monkeypatch.setattr(tc_mod, "_cache", TraceCache(max_entries=2, per_bucket=16))
    ps.reset_stats()
    for n in sizes[:3]:
        np.asarray(body(ps.asarray(data[n])))
    np.asarray(body(ps.asarray(data[102])))
    np.asarray(body(ps.asarray(data[100])))
    st = stats()
    assert (st["trace_cache_misses"], st["trace_cache_hits"]) == (4, 1)
    assert tc_mod.get().info()["entries"] == 2


def test_small_reads_of_a_cached_trace_run_directly(stats):
    """From the second hit on, a small trace read on an idle pipeline runs through the
    template's direct plan (executors/direct.py): same values -- new Python scalars each
    time -- and the same counters as the general path."""
    xv = np.random.default_rng(7).standard_normal(N)
    x = ps.asarray(xv) * 1.0
    ps.sync()

    def run(direct):
        with ps.config.override(direct_replay=direct):
            ps.reset_stats()
            got = []
            for i in range(6):
                c = 0.5 + i                         # a new scalar parameter each time
                y = x * c + 1.0
                got.append((float(ps.max(y)), np.asarray(y)))
            return got, ps.runtime_stats()

    general, st_g = run(False)
    direct, st_d = run(True)
    for i, ((m, y), (gm, gy)) in enumerate(zip(direct, general)):
        want = xv * (0.5 + i) + 1.0
        assert_same(y, want, what=f"call {i}")
        assert m == float(want.max()) == gm
        assert np.array_equal(y, gy)
    assert st_g["direct_replays"] == 0 and st_d["direct_replays"] >= 4
    for k in ("kernels_launched", "flushes", "sequences_submitted", "inline_sequences",
              "buffers_allocated", "bytes_allocated"):
        assert st_d[k] == st_g[k], k


def test_direct_plans_call_host_intrinsics(stats):
    """A cached trace mixing kernels and host intrinsics (CG's matvec) runs through the direct
    plan too: the intrinsic called on the reading thread, its result copied into the step's
    buffer. Same values and counters as the general path; a singular matrix met by a planned
    solve raises the general path's error, at the read."""
    rng = np.random.default_rng(3)
    M = rng.standard_normal((64, 64))
    A = ps.asarray(M @ M.T / 64 + np.eye(64))
    b = ps.asarray(rng.standard_normal(64))
    ps.sync()

    def cg(iters):
        x = ps.zeros_like(b)
        r = p = b
        rr = ps.dot(r, r)
        for _ in range(iters):
            Ap = A @ p
            alpha = rr / ps.dot(p, Ap)
            x = x + alpha * p
            r = r - alpha * Ap
            rr_new = ps.dot(r, r)
            p = r + (rr_new / rr) * p
            rr = rr_new
        return np.asarray(x), float(rr)

    def run(direct):
        with ps.config.override(direct_replay=direct):
            ps.reset_stats()
            got = [cg(4) for _ in range(4)]
            return got, ps.runtime_stats()

    general, st_g = run(False)
    direct, st_d = run(True)
    for (x, rr), (gx, grr) in zip(direct, general):
        assert np.array_equal(x, gx) and rr == grr
    assert st_g["direct_replays"] == 0 and st_d["direct_replays"] >= 2
    assert st_d["intrinsics_launched"] == st_g["intrinsics_launched"] == 4 * 4
    for k in ("kernels_launched", "flushes", "sequences_submitted", "buffers_allocated",
              "bytes_allocated"):
        assert st_d[k] == st_g[k], k

    # an intrinsic's result of any size (a sort of 2**17 float64, 1 MB): a buffer of the host
    # pool, handed out again once the previous result is dropped
    # (room in the pool whatever earlier tests of this process left in it: a pool at its
    # STREAMRT_HOST_HEAP_BYTES pools no new buffer -- this test failed under load that way)
    from streamrt.backends.base import host_pool
    big = rng.standard_normal(1 << 17)
    xs = ps.asarray(big)
    ps.sync()
    ps.reset_stats()
    with ps.config.override(host_heap_bytes=host_pool.total + (16 << 20)):
        for _ in range(6):
            s = ps.sort(xs)
            assert np.asarray(s)[-1] == big.max()   # (s[-1]: an element, a recorded copy)
            del s
    st = ps.runtime_stats()
    assert st["direct_replays"] >= 3 and st["host_buffers_reused"] >= 4

    def solve(m):
        return np.asarray(ps.linalg.solve(m, b) * 2.0)

    good = ps.asarray(M @ M.T / 64 + np.eye(64))
    singular = ps.asarray(np.zeros((64, 64)))       # the same trace, another input
    ps.sync()
    errors = []
    for direct in (False, True):
        with ps.config.override(direct_replay=direct):
            ps.reset_stats()
            for _ in range(3):
                solve(good)
            hits = ps.runtime_stats()["trace_cache_hits"]
            assert ps.runtime_stats()["direct_replays"] == (2 if direct else 0)
            with pytest.raises(ps.LinAlgError) as e:
                solve(singular)
            assert ps.runtime_stats()["trace_cache_hits"] == hits + 1
            assert ps.runtime_stats()["direct_replays"] == (2 if direct else 0)
            errors.append(e)
    assert str(errors[0].value) == str(errors[1].value)
    assert "singular" in str(errors[1].value).lower() and HERE in str(errors[1].value)


from hypothesis import given, settings as hsettings, strategies as hst


@hsettings(max_examples=40, deadline=None, derandomize=True, database=None)
@given(hst.lists(hst.tuples(hst.integers(0, 24), hst.integers(0, 24), hst.booleans()),
                 min_size=2, max_size=5))
def test_one_loop_body_over_random_slices_matches_numpy(bounds):
    """The same loop body over random slice bounds (empty, one row, reversed): each iteration
    hits the template of an earlier size or compiles its own, and gives NumPy's values -- the
    region writes that read their neighbours, the ones that read only their own elements
    (written in place) and a reduction over the slice."""
    rng = np.random.default_rng(11)
    a0 = rng.random((24, 16))
    A = ps.asarray(a0)
    e = a0.copy()
    sums, want = [], []
    for lo, hi, rev in bounds:
        s = slice(hi, lo, -1) if rev else slice(lo, hi)
        A[s, 1:] = A[s, 1:] * 0.5 + A[s, :-1]
        e[s, 1:] = e[s, 1:] * 0.5 + e[s, :-1]
        A[s] = ps.sqrt(A[s] + 1.0)
        e[s] = np.sqrt(e[s] + 1.0)
        sums.append(ps.sum(A[s] * 2.0, axis=0))
        want.append(np.sum(e[s] * 2.0, axis=0))
        ps.sync()
    assert_same(A, e, rtol=1e-13)
    for got, w in zip(sums, want):
        assert_same(got, w, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("jit", ["sync", "off"])
def test_sliding_windows_give_numpy_values_compiled_and_interpreted(stats, jit):
    """Windows that slide -- reversed, 2-D, broadcast against each other, reduced -- give
    NumPy's values at every offset, through the compiled kernels (their index tables rebuilt
    for the new offsets) and interpreted; the offset path serves the later iterations."""
    from streamrt.core.config import settings
    old = settings.jit
    ps.sync()
    ps.config.set(jit=jit)
    try:
        rng = np.random.default_rng(23)
        m, n = 64, 12
        x0, y0 = rng.random(m + n), rng.random(m)
        a0 = rng.random((m + n, m + n))
        x, y, a = ps.asarray(x0), ps.asarray(y0), ps.asarray(a0)
        for k in range(n):
            r1 = np.asarray(x[k:k + m][::-1] * 2.0 + y)
            assert_same(r1, x0[k:k + m][::-1] * 2.0 + y0, rtol=1e-15)
            r2 = np.asarray((a[k:k + m, 1:m + 1] - a[:m, k:k + m]).sum(axis=0))
            assert_same(r2, (a0[k:k + m, 1:m + 1] - a0[:m, k:k + m]).sum(axis=0), rtol=1e-12)
            r3 = np.asarray(ps.minimum(a[:m, :m], a[:m, k:k + 1] + a[k:k + 1, :m]))
            assert_same(r3, np.minimum(a0[:m, :m], a0[:m, k:k + 1] + a0[k:k + 1, :m]),
                        rtol=1e-15)
            r4 = float(ps.sqrt(x[k:k + m] ** 2 + y).max())
            assert_same(np.float64(r4), np.sqrt(x0[k:k + m] ** 2 + y0).max(), rtol=1e-15)
        st = stats()
        assert st["trace_cache_offset_hits"] >= 4 * (n - 2)
    finally:
        ps.sync()
        ps.config.set(jit=old)
