"""Element-wise ops over rolled arrays are recorded piece by piece (frontend/pieces.py): the
results equal NumPy's exactly, the rolled copies are never made (kernel counts), and small
arrays keep the copy path."""
from __future__ import annotations

import time
import weakref

import numpy as np
import pytest

import streamrt as ps
from streamrt.frontend import pieces
from helpers import assert_same

N = pieces.MIN_ELEMENTS + 4464          # 1-D size above the threshold
R, C = 300, 260                         # 2-D: 78000 elements


def _rng(seed=0):
    return np.random.default_rng(seed)


def _computed(x):
    a = ps.asarray(x) * 1               # a computed (not constant) array, as in a loop
    ps.sync()
    return a


CASES = {
    # name: (shape, fn(m, x, y) where m is np or ps)
    "1d+1": ((N,), lambda m, x, y: m.roll(x, 1) + x),
    "1d-1 both": ((N,), lambda m, x, y: m.roll(x, 1) + m.roll(x, -1) - 2.0 * x),
    "1d+5 recompute": ((N,), lambda m, x, y: (m.roll(x, 5) - (x * 3.0 + y)) / 7.0),
    "1d wave": ((N,), lambda m, x, y: 2.0 * x - y + 0.25 * (m.roll(x, 1) + m.roll(x, -1)
                                                           - 2.0 * x)),
    "1d shift>n": ((N,), lambda m, x, y: m.roll(x, N + 3) * y),
    "2d axis0": ((R, C), lambda m, x, y: m.roll(x, 2, axis=0) - x),
    "2d axis1 row-bcast": ((R, C), lambda m, x, y: m.roll(x, -3, axis=1) * y[0]),
    "2d axis0 col-bcast": ((R, C), lambda m, x, y: m.roll(x, 7, axis=0) + y[:, :1]),
    "2d both axes": ((R, C), lambda m, x, y: m.roll(x, 1, axis=0) + m.roll(x, 1, axis=1)),
    "unary": ((N,), lambda m, x, y: m.exp(m.roll(x, 3))),
}


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64])
@pytest.mark.parametrize("name", list(CASES))
def test_ops_over_rolled_arrays_match_numpy(name, dtype):
    shape, fn = CASES[name]
    rng = _rng(hash(name) % 1000)
    if np.dtype(dtype).kind == "i":
        x, y = rng.integers(-50, 50, shape).astype(dtype), rng.integers(1, 9, shape).astype(dtype)
    else:
        x, y = rng.standard_normal(shape).astype(dtype), rng.standard_normal(shape).astype(dtype)
    with np.errstate(all="ignore"):
        want = fn(np, x, y)
    got = fn(ps, _computed(x), _computed(y))
    assert_same(got, want, ulps=4, what=name)


def test_rolled_copy_is_not_made(stats):
    xv = _rng().standard_normal(N)
    x = _computed(xv)
    ps.reset_stats()
    y = ps.roll(x, 1) + ps.roll(x, -1)
    assert_same(y, np.roll(xv, 1) + np.roll(xv, -1))
    # the intervals [0, 1), [1, N-1), [N-1, N): one kernel each, writing its part of y --
    # no copy kernels, and the big one reads x once (two views) and writes once
    assert stats()["kernels_launched"] == 3

    sv = _rng().standard_normal(1000)       # below the threshold: the copy path
    small = _computed(sv)
    ps.reset_stats()
    z = ps.roll(small, 1) + ps.roll(small, -1)
    assert_same(z, np.roll(sv, 1) + np.roll(sv, -1))
    assert stats()["kernels_launched"] == 4      # copies into both rolled arrays, the sum


def test_rolled_array_read_otherwise_is_materialised():
    """A rolled array that is kept, reduced or viewed is the real rolled copy."""
    xv = _rng(3).standard_normal(N)
    x = _computed(xv)
    r = ps.roll(x, 4)
    s = ps.sum(r)
    w = r[10:20]
    y = r + 1.0                               # cut into pieces; r itself is still computed
    assert_same(y, np.roll(xv, 4) + 1.0)
    assert_same(r, np.roll(xv, 4))
    assert_same(w, np.roll(xv, 4)[10:20])
    assert float(s) == pytest.approx(float(np.sum(xv)), rel=1e-12)


def test_wave_loop_in_one_flush_and_in_a_macro():
    u0, p0 = _rng(4).standard_normal(N), _rng(5).standard_normal(N)

    def step(m, u, up):
        return 2.0 * u - up + 0.25 * (m.roll(u, 1) + m.roll(u, -1) - 2.0 * u), u

    u, up = u0, p0
    for _ in range(6):
        u, up = step(np, u, up)
    a, b = _computed(u0), _computed(p0)
    for _ in range(6):
        a, b = step(ps, a, b)
    assert_same(a, u)

    macro_step = ps.macro(lambda u, up: step(ps, u, up))
    a, b = _computed(u0), _computed(p0)
    outs = []
    for _ in range(6):
        a, b = macro_step(a, b)
        outs.append(a)
    assert_same(a, u)
    # every replay wrote a buffer of its own
    assert len({np.asarray(o).__array_interface__["data"][0] for o in outs}) == 6
    assert not np.array_equal(np.asarray(outs[-1]), np.asarray(outs[-2]))


@pytest.mark.parametrize("dts", [("float64", "float64"), ("float32", "float32"),
                                 ("int32", "float64"), ("int64", "float32")])
def test_ops_over_concatenated_arrays(dts, stats):
    """concatenate registers its inputs as pieces when they already have the result dtype
    (otherwise NumPy casts first, and the copy path keeps that order of rounding)."""
    rng = _rng(9)
    a = (rng.standard_normal((200, 170)) * 100).astype(dts[0])
    b = (rng.standard_normal((200, 230)) * 100).astype(dts[1])
    c = rng.standard_normal((200, 400))
    x, y, z = _computed(a), _computed(b), _computed(c)
    got = ps.concatenate([x, y], axis=1) * 0.5 + z
    want = np.concatenate([a, b], axis=1) * 0.5 + c
    assert_same(got, want, ulps=1)
    got1 = ps.sqrt(ps.abs(ps.concatenate([x.reshape(-1), y.reshape(-1)])))
    assert_same(got1, np.sqrt(np.abs(np.concatenate([a.reshape(-1), b.reshape(-1)]))),
                ulps=1)


def test_concatenated_copy_is_not_made(stats):
    av, bv = _rng(1).standard_normal(N), _rng(2).standard_normal(N // 2)
    a, b = _computed(av), _computed(bv)
    ps.reset_stats()
    y = ps.concatenate([a, b]) * 2.0
    assert_same(y, np.concatenate([av, bv]) * 2.0)
    assert stats()["kernels_launched"] == 2          # one per input, writing its part of y

    sa, sb = _computed(av[:100]), _computed(bv[:50])   # small: two copies, then the op
    ps.reset_stats()
    z = ps.concatenate([sa, sb]) * 2.0
    assert_same(z, np.concatenate([av[:100], bv[:50]]) * 2.0)
    assert stats()["kernels_launched"] == 3


def _kernel_records(path):
    import json
    with open(path) as f:
        return [r for r in map(json.loads, f) if r.get("t") == "ck"]


def test_an_expression_over_rolled_arrays_is_one_kernel_per_interval(tmp_path):
    """The pieces chain through the expression's temporaries: the whole stencil step is one
    kernel per interval, and together they write the result once -- the sum of the rolls and
    the other intermediates stay in registers (bytes written: the result's, nothing more)."""
    from streamrt.frontend import array
    assert array._TEMP_RC > 0           # temporaries are told apart on this interpreter
    xv, yv = _rng(6).standard_normal(N), _rng(7).standard_normal(N)
    x, y = _computed(xv), _computed(yv)
    path = str(tmp_path / "step.stprof")
    with ps.profile(path):
        z = 2.0 * x - y + 0.25 * (ps.roll(x, 1) + ps.roll(x, -1) - 2.0 * x)
        ps.sync()
    assert_same(z, 2.0 * xv - yv + 0.25 * (np.roll(xv, 1) + np.roll(xv, -1) - 2.0 * xv),
                ulps=4)
    ck = _kernel_records(path)
    assert len(ck) == 3
    assert sum(r["bytes_out"] for r in ck) == N * 8


def test_a_named_intermediate_is_read_whole(tmp_path):
    """An operand held by a variable is not a temporary: the ops reading it read the assembled
    array (which the program keeps), not its pieces -- and every value is NumPy's."""
    xv = _rng(8).standard_normal(N)
    x = _computed(xv)
    s = ps.roll(x, 1) + ps.roll(x, -1)
    t = s - 2.0 * x                     # s: named
    u = (ps.roll(x, 2) - x) * 3.0       # the difference: a temporary, chained
    assert_same(s, np.roll(xv, 1) + np.roll(xv, -1))
    assert_same(t, np.roll(xv, 1) + np.roll(xv, -1) - 2.0 * xv)
    assert_same(u, (np.roll(xv, 2) - xv) * 3.0)


def test_piecewise_ports_are_freed_with_their_arrays():
    """Once no Array and no pending work needs them, the assembled ports leave the registry:
    the idle E-Scheduler and executor threads kept their last message -- its programs, their
    ports and buffers -- until the next one came (and a live piecewise port sent every op of
    the process to the Python record path)."""
    a = _rng(6).standard_normal((4, N // 4 + 3))
    x = ps.asarray(a)
    first = x._port.id
    got = ps.gradient(x, 2.0, 3, edge_order=2)          # concatenated: pieces
    for r, e in zip(got, np.gradient(a, 2.0, 3, edge_order=2)):
        assert_same(r, e)
    mine = [weakref.ref(p) for p in list(pieces.PIECEWISE.keys()) if p.id > first]
    assert mine
    del x, got, r
    deadline = time.monotonic() + 10            # (the scheduler thread may still be finishing)
    while any(w() is not None for w in mine) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert [w() for w in mine if w() is not None] == []


@pytest.mark.parametrize("n", [40, 70_000])
def test_joins_of_computed_and_lazy_pieces_keep_every_piece(n):
    """A computed piece of concatenate/stack/... is written into the result's new buffer at
    once (the NumPy tier) and a lazy piece by the flush: the flush must keep that buffer
    (it swapped it for a pool buffer, dropping the computed piece, when the result had 65,536
    elements or more), in any order of the pieces, with eager elements on."""
    x = np.arange(n, dtype=np.float64) + 3
    with ps.config.override(eager_elements=1 << 16):
        for kinds in ("cl", "lc", "clc", "lcl", "cc", "ll"):
            def pieces():
                return [_computed(ps.asarray(x + k)) if c == "c" else ps.asarray(x + k) * 2
                        for k, c in enumerate(kinds)]
            want = [x + k if c == "c" else (x + k) * 2 for k, c in enumerate(kinds)]
            for f in ("concatenate", "stack", "vstack", "hstack", "column_stack"):
                got = getattr(ps, f)(pieces())
                np.testing.assert_array_equal(np.asarray(got), getattr(np, f)(want), f)
            np.testing.assert_array_equal(np.asarray(ps.append(*pieces()[:2])),
                                          np.append(*want[:2]))
        b = ps.asarray(x) * 2
        np.testing.assert_array_equal(
            np.asarray(ps.diff(b, prepend=5, append=ps.ones_like(b))),
            np.diff(x * 2, prepend=5, append=np.ones(n)))
