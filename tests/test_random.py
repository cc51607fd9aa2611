"""ps.random: counter-based generators computed inside fused kernels. Known-answer vectors
(Random123's Philox4x32-10, Widynski's Squares), the same bits on the reference, CPU and
OpenCL executors, fusion (a released random array is never stored), trace-cache hits for a
drawing loop, macro replays that advance the generator, NumPy's API and errors, and
statistical tests with fixed seeds (moments, chi-square over bins, normal tails)."""
from __future__ import annotations

import os

import numpy as np
import pytest
from helpers import EXECUTORS, compiler_caps

import streamrt as ps
from streamrt.core import rngcore as R
from streamrt.backends.numba_cpu import rng as cpu_rng

HERE = os.path.basename(__file__)
GENS = ("philox", "fast")
M64 = (1 << 64) - 1


def _line(marker):
    with open(__file__) as f:
        for i, text in enumerate(f, 1):
            if text.rstrip().endswith(f"# <{marker}>"):
                return i
    raise AssertionError(marker)


def _key(g):
    return R.to_i64(g._key)


# ---- known answers ------------------------------------------------------------------------------
# Random123 kat_vectors: philox4x32 10 <ctr 4 words> <key 2 words> -> <4 words>
KAT = [
    ((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
    ((0xFFFFFFFF,) * 4, (0xFFFFFFFF,) * 2, (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
    ((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), (0xA4093822, 0x299F31D0),
     (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1)),
]


def test_philox_kat_numpy_reference():
    for ctr, key, want in KAT:
        got = R.philox4x32([np.array([c], np.uint64) for c in ctr],
                           [np.array([k], np.uint64) for k in key])
        assert [int(w[0]) for w in got] == list(want)


def test_philox_kat_numba_helper():
    from numba import njit
    # the kernels' helper is written for a (lo, hi) counter and zero upper words; the KAT
    # vectors with all four words go through its round function directly
    @njit
    def run(c0, c1, c2, c3, k0, k1):
        c0, c1, c2, c3 = cpu_rng._round(c0, c1, c2, c3, k0, k1)
        for _ in range(9):
            k0 = (k0 + cpu_rng._PW0) & cpu_rng._M32
            k1 = (k1 + cpu_rng._PW1) & cpu_rng._M32
            c0, c1, c2, c3 = cpu_rng._round(c0, c1, c2, c3, k0, k1)
        return c0, c1, c2, c3

    @njit
    def helper(key, n):
        return cpu_rng._philox(key, n)

    for ctr, key, want in KAT:
        got = run(*[np.uint64(c) for c in ctr], *[np.uint64(k) for k in key])
        assert [int(w) for w in got] == list(want)
    assert [int(w) for w in helper(np.uint64(0), np.uint64(0))] == list(KAT[0][2])


def _squares64_py(ctr, key):
    """Widynski's squares64, transcribed with Python ints (independent of rngcore)."""
    def rot(v):
        return ((v >> 32) | (v << 32)) & M64
    x = y = (ctr * key) & M64
    z = (y + key) & M64
    x = rot((x * x + y) & M64)
    x = rot((x * x + z) & M64)
    x = rot((x * x + y) & M64)
    t = x = (x * x + z) & M64
    x = rot(x)
    return t ^ (((x * x + y) & M64) >> 32)


def _squares32_py(ctr, key):
    def rot(v):
        return ((v >> 32) | (v << 32)) & M64
    x = y = (ctr * key) & M64
    z = (y + key) & M64
    x = rot((x * x + y) & M64)
    x = rot((x * x + z) & M64)
    x = rot((x * x + y) & M64)
    return ((x * x + z) & M64) >> 32


def test_squares_matches_published_algorithm():
    key = R.squares_key(5)
    digits = [(key >> (4 * i)) & 0xF for i in range(16)]
    assert 0 not in digits and key & 1
    assert len(set(digits[:8])) == 8 and len(set(digits[8:])) == 8
    ctrs = [0, 1, 2, 12345, (1 << 63) + 7, M64]
    n = np.array(ctrs, np.uint64)
    assert [int(v) for v in R.squares64(n, R.to_i64(key))] == [_squares64_py(c, key) for c in ctrs]
    assert [int(v) for v in R.squares32(n, R.to_i64(key))] == [_squares32_py(c, key) for c in ctrs]


BACKENDS = ["reference"] + EXECUTORS


def _draw_all(g):
    """One flush drawing every distribution (a few kernels per backend)."""
    out = {
        "u64": g.random(3000),
        "u32": g.random((30, 40), dtype=np.float32),
        "normal": g.standard_normal(2000),
        "int": g.integers(-7, 1000, size=1500),
        "int32": g.integers(0, 7, size=(10, 10), dtype=np.int32),
        "sum": (g.random((8, 1000)) * 3.0).sum(axis=1),
    }
    ps.sync()
    return {k: np.asarray(v) for k, v in out.items()}


@pytest.mark.parametrize("gen", GENS)
def test_same_bits_on_every_executor(gen):
    results = {}
    for be in BACKENDS:
        with ps.config.override(backend=be):
            results[be] = _draw_all(ps.random.default_rng(2024, bit_generator=gen))
    g = ps.random.default_rng(2024, bit_generator=gen)
    k = _key(g)
    want = {
        "u64": R.uniform01(gen, k, 0, (3000,), np.float64),
        "u32": R.uniform01(gen, k, 3000, (30, 40), np.float32),
        "normal": R.normal(gen, k, 4200, (2000,)),
        "int": R.integers(gen, k, 6200, -7, 1007, (1500,)),
        "int32": R.integers(gen, k, 7700, 0, 7, (10, 10)).astype(np.int32),
    }
    for be, res in results.items():
        for name, w in want.items():
            assert res[name].dtype == w.dtype, (be, name)
            np.testing.assert_array_equal(res[name], w, err_msg=f"{be} {name}")
        # the sum's order of additions is the executor's; the numbers summed are the same
        np.testing.assert_allclose(res["sum"], (R.uniform01(gen, k, 7800, (8, 1000), np.float64)
                                                * 3.0).sum(axis=1), rtol=1e-12)
    for be in BACKENDS[1:]:
        for name in want:
            assert np.array_equal(results[be][name], results["reference"][name])


@pytest.mark.parametrize("be", BACKENDS)
def test_philox_kat_end_to_end(be):
    """Key 0, counter 0: the first 64-bit word through a kernel on each executor is the
    Random123 answer (integers over the full int64 range pass the raw bits through)."""
    with ps.config.override(backend=be):
        g = ps.random.default_rng(0)
        g._key = 0
        x = g.integers(-(1 << 63), (1 << 63) - 1, size=3, endpoint=True)
        bits = [(int(v) + (1 << 63)) & M64 for v in np.asarray(x)]
    w = KAT[0][2]
    assert bits[0] == (w[0] << 32) | w[1]


# ---- quad loops: four Philox values from one block (render_numba) --------------------------------
def _numba_sources(build):
    """The Numba kernel sources ProgGen makes of what ``build()`` records (nothing runs)."""
    from streamrt import compiler
    from streamrt.runtime.workqueue import current_queue
    ps.sync()
    keep = build()
    seq = compiler.generate(current_queue().take(), compiler_caps("cpu"))
    del keep
    return [p.source for p in seq.programs if p.kind == "kernel"]


def _quad_cases(g):
    """One draw per loop shape the quad loops cover, with lengths that are no multiple of 4
    (tasks and rows start mid-block: heads and tails) -> {name: (lazy result, wanted)}."""
    k = _key(g)
    out = {}
    c = g.counter
    out["1-D float32 map"] = (g.random(1001, dtype=np.float32) * 2.0,
                              R.uniform01("philox", k, c, (1001,), np.float32) * np.float32(2.0))
    c = g.counter
    # a transposed operand keeps the space 2-D: quads along each row, the flat index i0 * 1001
    t = np.arange(7007.0).reshape(1001, 7).T
    out["2-D float64 map"] = (g.random((7, 1001)) + ps.asarray(np.ascontiguousarray(t.T)).T,
                              R.uniform01("philox", k, c, (7, 1001), np.float64) + t)
    c = g.counter
    out["integer row sums (plain loop)"] = (
        g.integers(-5, 100, size=(5, 999)).sum(axis=1),
        R.integers("philox", k, c, -5, 105, (5, 999)).sum(axis=1))
    c = g.counter
    u = g.random((3, 1003), dtype=np.float32)
    w = R.uniform01("philox", k, c, (3, 1003), np.float32)
    out["stored values of a blocked max"] = (u, w)
    out["blocked max"] = (u.max(axis=1), w.max(axis=1))
    return out


def test_quad_loops_give_the_reference_bits():
    g = ps.random.default_rng(5)
    cases = _quad_cases(g)
    for name, (got, want) in cases.items():
        got = np.asarray(got)
        assert got.dtype == want.dtype, name
        np.testing.assert_array_equal(got, want, err_msg=name)
    # every shape above was rendered with quads (the per-element helpers do the ends)
    srcs = _numba_sources(lambda: list(_quad_cases(ps.random.default_rng(5)).values()))
    assert srcs and all("_rngq_" in s and "for qr in range" in s for s in srcs), srcs


def test_quad_loops_with_a_counter_off_the_block_boundary():
    """A counter that is not a multiple of 4 (set by hand: the Generator never makes one)
    takes the per-element helpers for the whole loop -- the same values."""
    g = ps.random.default_rng(6)
    g._counter = 4 * 1000 + 3
    for name, (got, want) in _quad_cases(g).items():
        np.testing.assert_array_equal(np.asarray(got), want, err_msg=name)


def test_philox_draws_start_on_block_boundaries():
    g = ps.random.default_rng(7)
    a = np.asarray(g.random(6, dtype=np.float32))
    assert g.counter == 8
    b = np.asarray(g.random(4, dtype=np.float32))
    k = _key(g)
    np.testing.assert_array_equal(b, R.uniform01("philox", k, 8, (4,), np.float32))
    g.advance(3)
    assert g.counter == 16
    # a float32 value is one 32-bit word of a block: four values per block, in order
    w, _ = R.philox_words(k, 0, (1,))
    np.testing.assert_array_equal(a[:4], (np.array([x[0] for x in w], np.uint64) >> np.uint64(8))
                                  .astype(np.float32) * np.float32(R.TWO_M24))
    # Squares values are single hashes: no rounding
    f = ps.random.default_rng(7, bit_generator="fast")
    f.random(6)
    assert f.counter == 6


# ---- fusion and caching ---------------------------------------------------------------------------
def test_released_random_array_never_touches_memory(stats):
    g = ps.random.default_rng(1)
    n = 200_000
    total = float((g.random(n) * 2.0 + 1.0).sum())
    s = stats()
    assert s["kernels_launched"] == 1                 # draw, arithmetic and sum: one kernel
    assert s["bytes_allocated"] < 1024                # no n-element buffer anywhere
    want = (R.uniform01("philox", _key(g), 0, (n,), np.float64) * 2.0 + 1.0).sum()
    assert total == pytest.approx(want, rel=1e-12)


def test_fused_kernel_reads_no_array():
    from streamrt import compiler
    from streamrt.runtime.workqueue import current_queue
    g = ps.random.default_rng(1)
    ps.sync()
    y = g.standard_normal((50, 20)) * 0.5 + g.random((50, 20))
    seq = compiler.generate(current_queue().take(), compiler_caps("cpu"))
    kernels = [p for p in seq.programs if p.kind == "kernel"]
    assert len(kernels) == 1
    k = kernels[0].kernel
    assert k.loads == [] and len(k.stores) == 1 and k.index is not None
    assert sum(s.dtype == np.int64 for s in k.scalars) == 4    # 2 keys, 2 counters
    # neither key nor counter is in the source: a new seed reuses the compiled kernel
    assert str(R.philox_key(1)) not in kernels[0].source
    del y


def test_loop_hits_trace_cache_and_draws_new_numbers(stats):
    g = ps.random.default_rng(9)
    k = _key(g)
    got = []
    for _ in range(12):
        got.append(float((g.random(5000) ** 2).sum()))
    s = stats()
    assert s["trace_cache_misses"] == 1 and s["trace_cache_hits"] == 11
    assert s["kernels_compiled"] <= 1
    assert len(set(got)) == 12
    want = [(R.uniform01("philox", k, 5000 * i, (5000,), np.float64) ** 2).sum()
            for i in range(12)]
    np.testing.assert_allclose(got, want, rtol=1e-12)
    assert g.counter == 60000


def test_new_seed_reuses_compiled_kernel(stats):
    a = float(ps.random.default_rng(100).random(4000).sum())
    s1 = stats()["kernels_compiled"]
    b = float(ps.random.default_rng(200).random(4000).sum())
    assert stats()["kernels_compiled"] == s1 and a != b


# ---- reproducibility and the Generator's counter ------------------------------------------------
def test_same_seed_same_sequence_and_advance():
    g1, g2 = ps.random.default_rng(42), ps.random.default_rng(42)
    a1, b1 = np.asarray(g1.random(100)), np.asarray(g1.random(100))
    a2 = np.asarray(g2.random(200))
    assert not np.array_equal(a1, b1)
    np.testing.assert_array_equal(np.concatenate([a1, b1]), a2)
    assert g1.counter == g2.counter == 200
    g3 = ps.random.default_rng(42).advance(100)
    np.testing.assert_array_equal(np.asarray(g3.random(100)), b1)
    assert not np.array_equal(np.asarray(ps.random.default_rng(43).random(100)), a1)
    assert ps.random.default_rng(g1) is g1
    # NumPy's seed forms
    s1 = np.asarray(ps.random.default_rng([1, 2]).random(5))
    s2 = np.asarray(ps.random.default_rng(np.random.SeedSequence([1, 2])).random(5))
    assert s1.shape == s2.shape == (5,)
    f1 = np.asarray(ps.random.default_rng(42, bit_generator="fast").random(100))
    assert not np.array_equal(f1, a1)


def test_scalar_draws_and_dtypes():
    g = ps.random.default_rng(5)
    assert g.random().shape == () and 0 <= float(g.random()) < 1
    assert g.random(3, dtype=np.float32).dtype == np.float32
    assert g.standard_normal(3, dtype=np.float32).dtype == np.float32
    assert g.integers(5, size=4, dtype=np.int32).dtype == np.int32
    b = np.asarray(g.integers(0, 2, size=100, dtype=bool))
    assert b.dtype == np.bool_ and b.any() and not b.all()
    e = np.asarray(g.integers(3, 5, size=2000, endpoint=True))
    assert set(np.unique(e)) == {3, 4, 5}
    z = np.asarray(g.integers(10, size=1000))
    assert z.min() == 0 and z.max() == 9


def test_uniform_and_normal_follow_numpys_formulas():
    g = ps.random.default_rng(8)
    k = _key(g)
    u = np.asarray(g.uniform(-2.0, 3.0, size=(4, 5)))
    np.testing.assert_array_equal(u, -2.0 + 5.0 * R.uniform01("philox", k, 0, (4, 5),
                                                               np.float64))
    loc = np.arange(5.0)
    n = np.asarray(g.normal(ps.asarray(loc), 2.0, size=(3, 5)))
    np.testing.assert_allclose(n, loc + 2.0 * R.normal("philox", k, 20, (3, 5)), rtol=1e-15)
    m = np.asarray(g.normal(loc, np.full(5, 0.5)))          # size from the parameters
    assert m.shape == (5,)
    assert g.counter == 20 + 16 + 8     # Philox draws start at multiples of 4 (random.py)


def test_choice():
    g = ps.random.default_rng(12)
    c = np.asarray(g.choice(5, size=20000))
    assert set(np.unique(c)) == set(range(5))
    vals = np.array([2.5, -1.0, 7.0])
    p = [0.2, 0.5, 0.3]
    d = np.asarray(g.choice(vals, size=40000, p=p))
    frac = np.array([(d == v).mean() for v in vals])
    np.testing.assert_allclose(frac, p, atol=0.01)
    k = _key(g)
    u = R.uniform01("philox", k, 20000, (40000,), np.float64)
    idx = np.cumsum(p).searchsorted(u, side="right")       # NumPy's own inverse CDF
    np.testing.assert_array_equal(d, vals[idx])
    w = np.asarray(g.choice(vals, size=(30,)))
    assert set(np.unique(w)) <= set(vals)
    perm = np.asarray(g.choice(10, size=10, replace=False))
    assert sorted(perm.tolist()) == list(range(10))
    few = np.asarray(g.choice(np.array([3, 1, 4, 5]), 2, replace=False))
    assert len(set(few.tolist())) == 2 and set(few.tolist()) <= {1, 3, 4, 5}


# ---- macros: replays advance the generator ---------------------------------------------------------
def test_macro_replay_advances_generator():
    g = ps.random.default_rng(31)

    @ps.macro
    def noisy(x):
        return x + g.standard_normal(x.shape) * 0.1

    x = ps.asarray(np.ones(64))
    outs = [np.asarray(noisy(x)) for _ in range(4)]
    assert noisy.calls == 1 and noisy.replays == 3
    assert g.counter == 4 * 64
    assert len({o.tobytes() for o in outs}) == 4
    # the same numbers as running the body plainly with the same seed
    h = ps.random.default_rng(31)
    plain = [np.asarray(ps.asarray(np.ones(64)) + h.standard_normal(64) * 0.1) for _ in range(4)]
    for o, q in zip(outs, plain):
        np.testing.assert_array_equal(o, q)


def test_macro_generator_created_in_body_repeats():
    @ps.macro
    def fresh(x):
        h = ps.random.default_rng(11)
        return x + h.random(x.shape)

    x = ps.zeros(16)
    outs = [np.asarray(fresh(x)) for _ in range(3)]
    assert fresh.replays == 2
    for o in outs:           # a new generator with the same seed at every call, as in NumPy
        np.testing.assert_array_equal(o, np.asarray(ps.random.default_rng(11).random(16)))


def test_macro_two_draws_and_nested():
    g = ps.random.default_rng(77)

    @ps.macro
    def inner(x):
        return x * g.random(x.shape)

    @ps.macro
    def outer(x):
        return inner(x) + g.integers(0, 10, size=x.shape)

    x = ps.asarray(np.full(8, 2.0))
    r = [np.asarray(outer(x)) for _ in range(3)]
    assert outer.replays == 2 and g.counter == 3 * 16
    k = _key(g)
    for i, v in enumerate(r):
        want = 2.0 * R.uniform01("philox", k, 16 * i, (8,), np.float64) + \
            R.integers("philox", k, 16 * i + 8, 0, 10, (8,))
        np.testing.assert_array_equal(v, want)


# ---- errors name the user's line ------------------------------------------------------------------
def test_errors_name_the_line():
    g = ps.random.default_rng(0)
    with pytest.raises(ps.DTypeError) as e:
        g.random(3, dtype=np.int32)  # <bad-dtype>
    assert f"{HERE}:{_line('bad-dtype')}" in str(e.value)
    with pytest.raises(ValueError) as e:
        g.integers(5, 5)  # <empty-range>
    assert f"{HERE}:{_line('empty-range')}" in str(e.value)
    with pytest.raises(ValueError):
        g.integers(0, 1 << 40, dtype=np.int32)
    with pytest.raises(ValueError):
        g.random(-1)
    with pytest.raises(ps.ArgumentError) as e:
        ps.random.default_rng(0, bit_generator="mt19937")  # <bad-gen>
    assert f"{HERE}:{_line('bad-gen')}" in str(e.value)
    with pytest.raises(ValueError):
        ps.random.default_rng(-3)
    with pytest.raises(ValueError):
        g.choice(3, p=[0.5, 0.6, 0.1])
    with pytest.raises(ValueError):
        g.choice(3, size=4, replace=False)
    assert g.counter == 0          # failed calls drew nothing


# ---- statistics (fixed seeds: deterministic) ------------------------------------------------------
N = 1_000_000
CHI2_99 = (54.99, 160.06)      # chi-square(99) 0.01% and 99.99% quantiles
CHI2_6 = (0.172, 27.86)        # chi-square(6)


def _chi2(counts, expected):
    return float(((counts - expected) ** 2 / expected).sum())


@pytest.fixture(scope="module", params=GENS)
def sample(request):
    g = ps.random.default_rng(20240601, bit_generator=request.param)
    out = dict(u=g.random(N), u32=g.random(N, dtype=np.float32), z=g.standard_normal(N),
               i7=g.integers(0, 7, size=N), i1000=g.integers(-500, 500, size=N))
    return {k: np.asarray(v) for k, v in out.items()}


def test_uniform_statistics(sample):
    for name in ("u", "u32"):
        u = sample[name].astype(np.float64)
        assert 0.0 <= u.min() and u.max() < 1.0
        se = np.sqrt(1 / 12 / N)
        assert abs(u.mean() - 0.5) < 5 * se
        assert abs(u.var() - 1 / 12) < 5 * np.sqrt(1 / 180 / N)
        counts = np.bincount((u * 100).astype(np.int64), minlength=100)
        c2 = _chi2(counts, N / 100)
        assert CHI2_99[0] < c2 < CHI2_99[1], (name, c2)
    # successive values are uncorrelated
    u = sample["u"]
    assert abs(np.corrcoef(u[:-1], u[1:])[0, 1]) < 5 / np.sqrt(N)


def test_integer_statistics(sample):
    i7 = sample["i7"]
    assert i7.min() == 0 and i7.max() == 6
    c2 = _chi2(np.bincount(i7, minlength=7), N / 7)
    assert CHI2_6[0] < c2 < CHI2_6[1]
    i1000 = sample["i1000"]
    assert i1000.min() == -500 and i1000.max() == 499
    counts = np.bincount(i1000 + 500, minlength=1000)
    c2 = _chi2(counts, N / 1000)
    assert 841.3 < c2 < 1173.9                 # chi-square(999) 0.01% / 99.99%
    assert abs(i1000.mean() + 0.5) < 5 * np.sqrt((1000 ** 2 - 1) / 12 / N)


def test_normal_statistics(sample):
    z = sample["z"]
    assert abs(z.mean()) < 5 / np.sqrt(N)
    assert abs(z.var() - 1) < 5 * np.sqrt(2 / N)
    assert abs((z ** 3).mean()) < 5 * np.sqrt(15 / N)              # skewness 0
    assert abs((z ** 4).mean() - 3) < 5 * np.sqrt(96 / N)          # kurtosis 3
    for t, p in ((1.0, 0.31731050786291415), (2.0, 0.04550026389635839),
                 (3.0, 0.0026997960632601866)):
        frac = (np.abs(z) > t).mean()
        assert abs(frac - p) < 5 * np.sqrt(p * (1 - p) / N), (t, frac)
    assert np.abs(z).max() < 8.5                                    # the transform's bound
    # chi-square of the normal CDF over 100 equiprobable bins
    from math import erf, sqrt
    edges = np.array([erf(v / sqrt(2)) for v in z[:200_000].tolist()])
    counts = np.bincount(((edges + 1) / 2 * 100).astype(np.int64).clip(0, 99), minlength=100)
    c2 = _chi2(counts, 200_000 / 100)
    assert CHI2_99[0] < c2 < CHI2_99[1]


def test_box_muller_accuracy():
    """The polynomial log/cos of the transform against NumPy's libm (pure NumPy)."""
    rng = np.random.default_rng(0)
    b1 = rng.integers(0, 1 << 63, 100_000, dtype=np.uint64) * np.uint64(2) + np.uint64(1)
    b2 = rng.integers(0, 1 << 63, 100_000, dtype=np.uint64) * np.uint64(2)
    mine = R.box_muller(b1, b2)
    u1 = ((b1 >> np.uint64(12)) + np.uint64(1)).astype(np.float64) * 2.0 ** -52
    u2 = (b2 >> np.uint64(11)).astype(np.float64) * 2.0 ** -53
    ref = np.sqrt(-2 * np.log(u1)) * np.cos(2 * np.pi * u2)
    assert np.max(np.abs(mine - ref)) < 1e-14


def test_monte_carlo_pi_as_a_numpy_program(stats):
    import streamrt as np_
    rng = np_.random.default_rng(123)
    n = 1_000_000
    est = 4 * np_.mean(rng.random(n) ** 2 + rng.random(n) ** 2 < 1)
    val = float(est)
    s = stats()
    # the draws, squares, compare and mean in one kernel; "4 *" on the 0-d mean in another
    assert s["kernels_launched"] == 2 and s["bytes_allocated"] < 1024
    k = _key(rng)
    x = R.uniform01("philox", k, 0, (n,), np.float64)
    y = R.uniform01("philox", k, n, (n,), np.float64)
    assert val == pytest.approx(4 * np.mean(x ** 2 + y ** 2 < 1), rel=1e-12)
    assert abs(val - np.pi) < 0.01


def test_legacy_module_functions():
    ps.random.seed(5)
    a = np.asarray(ps.random.rand(3, 4))
    ps.random.seed(5)
    b = np.asarray(ps.random.random((3, 4)))
    np.testing.assert_array_equal(a, b)
    assert ps.random.randn(2, 2).shape == (2, 2)
    r = np.asarray(ps.random.randint(0, 3, size=50))
    assert r.min() >= 0 and r.max() <= 2
    assert ps.random.normal(size=7).shape == (7,)
    assert ps.random.uniform(1, 2, size=3).dtype == np.float64


@pytest.mark.skipif(not __import__("shutil").which("g++"), reason="no host C++ compiler")
def test_cuda_dialect_helpers_on_the_host(tmp_path):
    """The CUDA-dialect RNG source (as render_c emits it), compiled for the host with the
    CUDA intrinsics it uses shimmed and FMA contraction off, gives the reference's bits --
    the CUDA executor itself needs a GPU."""
    import subprocess
    from streamrt.backends.cuda.dialect import DIALECT as CUDA
    src = ("#include <cstdio>\n#include <cstdlib>\n#include <cmath>\n#include <cstring>\n"
           "#define __device__\n#define __forceinline__ inline\n#define __global__\n"
           "static inline double __dmul_rn(double a, double b) { return a * b; }\n"
           + CUDA.prelude
           + R.c_source("srr_normal( srr_uniform_f64(", CUDA.exact_mul)
           + r"""
int main(int argc, char** argv) {
    const i64 key = strtoll(argv[1], 0, 10), ctr = strtoll(argv[2], 0, 10);
    const int n = atoi(argv[3]);
    for (int g = 0; g < 2; g++)
        for (i64 i = 0; i < n; i++) {
            double u = srr_uniform_f64(g, key, ctr, i), z = srr_normal(g, key, ctr, i);
            float f = srr_uniform_f32(g, key, ctr, i);
            u64 bu, bz; unsigned bf; memcpy(&bu, &u, 8); memcpy(&bz, &z, 8); memcpy(&bf, &f, 4);
            printf("%llx %llx %x %lld\n", bu, bz, bf, srr_integers(g, key, ctr, -3, 1000, i));
        }
    return 0;
}
""")
    (tmp_path / "rng.cpp").write_text(src)
    exe = tmp_path / "rng"
    subprocess.run(["g++", "-O2", "-ffp-contract=off", "-o", str(exe), str(tmp_path / "rng.cpp")],
                   check=True, capture_output=True)
    key, ctr, n = R.to_i64(R.philox_key(3)), R.to_i64((1 << 64) - 500), 1000
    out = subprocess.run([str(exe), str(key), str(ctr), str(n)], check=True,
                         capture_output=True, text=True).stdout.split("\n")
    rows = [ln.split() for ln in out if ln]
    for g, gen in enumerate(GENS):
        part = rows[g * n:(g + 1) * n]
        bu = np.array([int(r[0], 16) for r in part], np.uint64).view(np.float64)
        bz = np.array([int(r[1], 16) for r in part], np.uint64).view(np.float64)
        bf = np.array([int(r[2], 16) for r in part], np.uint32).view(np.float32)
        iv = np.array([int(r[3]) for r in part], np.int64)
        np.testing.assert_array_equal(bu, R.uniform01(gen, key, ctr, (n,), np.float64))
        np.testing.assert_array_equal(bz, R.normal(gen, key, ctr, (n,)))
        np.testing.assert_array_equal(bf, R.uniform01(gen, key, ctr, (n,), np.float32))
        np.testing.assert_array_equal(iv, R.integers(gen, key, ctr, -3, 1000, (n,)))


def test_reference_mode_agrees(stats):
    """Debugger reference mode evaluates every draw with the NumPy reference too: no
    mismatch (bit-identical), and the result is the reference's."""
    with ps.config.override(reference=True):
        g = ps.random.default_rng(4)
        v = np.asarray(g.standard_normal(300) * 2.0 + g.integers(0, 5, size=300))
    assert stats()["reference_mismatches"] == 0
    k = _key(g)
    np.testing.assert_array_equal(v, R.normal("philox", k, 0, (300,)) * 2.0
                                  + R.integers("philox", k, 300, 0, 5, (300,)))


@pytest.mark.parametrize("renderer", ["cuda", "opencl"])
def test_c_renderers_emit_rng_helpers(renderer):
    from streamrt import compiler
    from streamrt.runtime.workqueue import current_queue
    ps.sync()
    g = ps.random.default_rng(1, bit_generator="fast")
    keep = [g.standard_normal((7, 9)).sum(axis=0), g.random(5, dtype=np.float32) + 1]
    seq = compiler.generate(current_queue().take(), compiler_caps(renderer))
    srcs = [p.source for p in seq.programs if p.kind == "kernel"]
    assert len(srcs) == 2
    red, mp = srcs
    assert "srr_normal(1, " in red and "const i64 ei = bi" in red
    assert "srr_uniform_f32(1, " in mp and "srr_box_muller" not in mp
    if renderer == "cuda":
        assert "__dmul_rn" in red
    else:       # a float32 draw needs no fp64 device
        assert "FP_CONTRACT OFF" in red and "cl_khr_fp64" in red and "cl_khr_fp64" not in mp
    del keep


def test_generator_as_macro_argument_and_macro_section(stats):
    @ps.macro
    def draw(x, rng):
        return x + rng.random(x.shape)

    g = ps.random.default_rng(61)
    x = ps.zeros(10)
    a, b = np.asarray(draw(x, g)), np.asarray(draw(x, g))
    # (10 values: the counter moves to the next multiple of 4)
    assert draw.replays == 1 and g.counter == 24 and not np.array_equal(a, b)
    k = _key(g)
    np.testing.assert_array_equal(b, R.uniform01("philox", k, 12, (10,), np.float64))
    h = ps.random.default_rng(62)
    got = []
    for _ in range(3):
        with ps.macro_section("noise", [x]):
            y = x + h.standard_normal(10)
        got.append(np.asarray(y))
    assert stats()["macro_cache_hits"] >= 2 and h.counter == 36
    assert len({v.tobytes() for v in got}) == 3


def test_empty_draws():
    g = ps.random.default_rng(0)
    assert np.asarray(g.random(0)).shape == (0,)
    assert np.asarray(g.integers(0, 3, size=(2, 0))).shape == (2, 0)
    assert g.counter == 0
