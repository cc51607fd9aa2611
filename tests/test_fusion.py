"""Fusion, laziness and caching, asserted through ps.runtime_stats() counters (deterministic),
never through timings."""
from __future__ import annotations

import os

import numpy as np
import pytest
from helpers import EXECUTORS, assert_same

import streamrt as ps

N = 10_000          # small: the single-threaded kernel variant is the one compiled


@pytest.fixture(params=EXECUTORS)
def executor(request):
    """Fusion is the same on every executor: the counter tests that take this fixture run on
    the Numba CPU and on OpenCL (where a device works)."""
    with ps.config.override(backend=request.param):
        yield request.param


def _f32(n=N, seed=0):
    return np.random.default_rng(seed).random(n).astype(np.float32)


def test_issue_example_is_one_kernel(executor, stats):
    a = _f32()
    x = ps.asarray(a)
    ps.reset_stats()
    y = ps.sin(x) * 2.0 + ps.sqrt(x) - x / 3.0      # recorded; nothing runs
    s = ps.sum(y * y)                                # still nothing runs
    st = stats()
    assert st["ops_recorded"] == 8
    assert st["kernels_launched"] == 0 and st["flushes"] == 0
    assert st["sequences_submitted"] == 0 and st["bytes_allocated"] == 0
    total = float(s)
    yv = np.asarray(y)
    st = stats()
    assert st["kernels_launched"] == 1
    assert st["kernel_splits"] == 0
    assert st["flushes"] == 1
    # only y and s are written: y * y and every other intermediate stays in registers
    assert st["buffers_allocated"] == 2
    assert st["bytes_allocated"] == y.nbytes + 4
    ref = np.sin(a) * np.float32(2.0) + np.sqrt(a) - a / np.float32(3.0)
    assert y.dtype == np.float32 and s.dtype == np.float32
    assert_same(yv, ref, ulps=4, what="y")
    assert total == pytest.approx(float(np.sum(ref.astype(np.float64) ** 2)), rel=1e-5)


def test_released_intermediates_are_never_allocated(executor, stats):
    a = _f32(seed=1)
    x = ps.asarray(a)
    ps.reset_stats()
    t = x * 2.0
    u = ps.exp(t)
    del t
    v = u + 1.0
    del u
    vv = v.numpy()
    st = stats()
    assert st["kernels_launched"] == 1
    assert st["buffers_allocated"] == 1 and st["bytes_allocated"] == v.nbytes
    assert_same(vv, np.exp(a * np.float32(2.0)) + np.float32(1.0), ulps=4)

    # an intermediate that is still referenced is written (and read back correctly)
    ps.reset_stats()
    t = x * 3.0
    w = ps.sqrt(t) - 1.0
    wv, tv = w.numpy(), t.numpy()
    st = stats()
    assert st["kernels_launched"] == 1
    assert st["buffers_allocated"] == 2 and st["bytes_allocated"] == t.nbytes + w.nbytes
    assert_same(tv, a * np.float32(3.0))
    assert_same(wv, np.sqrt(a * np.float32(3.0)) - np.float32(1.0), ulps=4)


def test_chain_of_ten_elementwise_ops_is_one_kernel(executor, stats):
    """Ten element-wise ops with a broadcast operand and a dtype change: one kernel, one
    buffer (the result)."""
    a = _f32(seed=2).reshape(10, 1000)
    b = np.random.default_rng(3).random(1000)
    x, z = ps.asarray(a), ps.asarray(b)
    ps.reset_stats()
    y = x * 1.5                        # 1
    y = y + 0.25                       # 2
    y = ps.sin(y)                      # 3
    y = ps.abs(y)                      # 4
    y = ps.maximum(y, 0.1)             # 5
    y = y - z                          # 6: broadcast row, float32 - float64 -> float64
    y = y * y                          # 7
    y = ps.sqrt(y)                     # 8
    y = ps.where(y > 0.5, y, -y)       # 9, 10, 11
    out = y.numpy()
    st = stats()
    assert st["ops_recorded"] == 11
    assert st["kernels_launched"] == 1 and st["kernel_splits"] == 0
    assert st["buffers_allocated"] == 1 and st["bytes_allocated"] == y.nbytes
    r = np.maximum(np.abs(np.sin(a * np.float32(1.5) + np.float32(0.25))), np.float32(0.1))
    r = np.sqrt((r - b) ** 2)
    # float32 sin may differ from NumPy's in the last place; the float64 tail keeps that
    # absolute difference
    assert_same(out, np.where(r > 0.5, r, -r), atol=1e-6)

    x = ps.asarray(a[0])
    ps.reset_stats()
    y = x
    for i in range(10):
        y = y * 1.01 + 0.5 if i % 2 else ps.cos(y)
    out = y.numpy()
    st = stats()
    assert st["kernels_launched"] == 1 and st["buffers_allocated"] == 1
    ref = a[0]
    for i in range(10):
        ref = ref * np.float32(1.01) + np.float32(0.5) if i % 2 else np.cos(ref)
    assert_same(out, ref, rtol=1e-5)


def test_elementwise_producers_fuse_into_axis_reductions(executor, stats):
    b = np.random.default_rng(4).random((30, 40))
    X = ps.asarray(b)
    for axis, kd in ((1, False), (0, True), (None, False), ((0, 1), True)):
        ps.reset_stats()
        r = ps.sum(ps.exp(X) * 2.0 - X, axis=axis, keepdims=kd)
        got = r.numpy()
        st = stats()
        assert st["kernels_launched"] == 1, axis
        assert st["buffers_allocated"] == 1 and st["bytes_allocated"] == r.nbytes
        assert_same(got, np.sum(np.exp(b) * 2.0 - b, axis=axis, keepdims=kd), ulps=8,
                    rtol=1e-13, what=f"axis={axis}")


def test_independent_reductions_over_one_input_share_a_kernel(executor, stats):
    b = np.random.default_rng(5).random((20, 30))
    X = ps.asarray(b)
    ps.reset_stats()
    rs = [ps.sum(X, axis=1), ps.max(X, axis=1), ps.mean(X * X, axis=1), ps.argmin(X, axis=1),
          ps.any(X > 0.99, axis=1)]
    got = [r.numpy() for r in rs]
    assert stats()["kernels_launched"] == 1
    want = [b.sum(1), b.max(1), (b * b).mean(1), b.argmin(1), (b > 0.99).any(1)]
    for g, w in zip(got, want):
        assert_same(g, w, ulps=8)


def test_views_are_read_through_strides_not_copied(stats):
    b = np.random.default_rng(6).random((40, 50))
    X = ps.asarray(b)
    ps.reset_stats()
    y = X[::2, 1:26] * 2.0 + X[1::2, 25:]      # two strided slices of one input
    z = X.T[::-1] + X.T                        # transposes, one reversed
    w = ps.broadcast_to(X[0], (3, 50)) - X[5:8]
    got = [v.numpy() for v in (y, z, w)]
    st = stats()
    assert st["kernels_launched"] <= 3
    assert st["bytes_allocated"] == y.nbytes + z.nbytes + w.nbytes      # no copies of views
    for g, e in zip(got, [b[::2, 1:26] * 2.0 + b[1::2, 25:], b.T[::-1] + b.T,
                          np.broadcast_to(b[0], (3, 50)) - b[5:8]]):
        assert_same(g, e)


def test_views_of_computed_and_lazy_results(stats):
    b = np.random.default_rng(7).random((6, 8))
    X = ps.asarray(b)
    Y = ps.exp(X)                      # lazy
    views = [Y[1:4, ::3] + 1.0, Y.T[2] * 2.0, Y[::-1, None, 2:5] - X[0, 2:5],
             Y.reshape(4, 12).sum(axis=0), ps.squeeze(Y[2:3]), ps.expand_dims(Y[0], 0) + 0.0]
    e = np.exp(b)
    want = [e[1:4, ::3] + 1.0, e.T[2] * 2.0, e[::-1, None, 2:5] - b[0, 2:5],
            e.reshape(4, 12).sum(axis=0), np.squeeze(e[2:3]), e[0][None] + 0.0]
    for i, (g, w) in enumerate(zip(views, want)):
        assert_same(g, w, ulps=8, what=f"view {i}")
    Yv = Y.numpy()                     # now computed: views of a computed result
    assert_same(Y[::2].numpy(), Yv[::2])
    assert_same((Y.T[1:3] * 3.0).numpy(), Yv.T[1:3] * 3.0)
    assert Y[2, 3].item() == Yv[2, 3]
    assert_same(ps.reshape(Y.T, (-1,)), Yv.T.reshape(-1))       # non-contiguous reshape
    assert Y[1].tolist() == Yv[1].tolist()
    assert [float(r[0]) for r in Y] == list(Yv[:, 0])


def test_setitem_has_numpy_semantics(stats):
    b = np.random.default_rng(8).uniform(-3, 3, (6, 8))
    X = ps.asarray(b)
    Y = X * 2.0
    y = b * 2.0
    old_row, old_rown = Y[1], y[1]
    Y[1] = 5.0
    y[1] = 5.0
    Z = X + 0.0
    z = b + 0.0
    Z[:, ::2] = X[:, 1::2]
    z[:, ::2] = b[:, 1::2]
    x = b.copy()
    W, w = X.T, x.T                    # a view: writes through it change X
    W[0] = ps.arange(6)
    w[0] = np.arange(6)
    V, v = X[1:3], x[1:3]
    V[0, 0] = -1
    v[0, 0] = -1
    K = ps.asarray(np.arange(10, dtype=np.int32))
    k = np.arange(10, dtype=np.int32)
    K[3] = 7.9
    k[3] = 7.9
    K[-2:] = ps.asarray(np.array([1, 2], np.int64))
    k[-2:] = [1, 2]
    A = ps.zeros(5)
    A[...] = 3
    B = Y + 1.0                        # ops after a setitem read the new version
    for g, e, what in [(Y, y, "row"), (old_row, old_rown, "a view taken before the update"),
                       (Z, z, "strided"), (W, w, "through a transpose"), (V, v, "slice"),
                       (X, x, "the source, written through its views"), (K, k, "int from float"),
                       (A, np.full(5, 3.0), "ellipsis"), (B, y + 1.0, "consumer")]:
        assert_same(g, e, what=what)
    assert stats()["intrinsics_launched"] == 0     # region writes are fused into kernels


def test_sync_runs_everything_recorded(stats):
    a = _f32(seed=9)
    x = ps.asarray(a)
    ps.reset_stats()
    y = ps.tanh(x) * 3.0
    assert stats()["kernels_launched"] == 0
    ps.sync()
    assert stats()["kernels_launched"] == 1
    yv = y.numpy()                     # already computed: nothing more runs
    assert stats()["kernels_launched"] == 1 and stats()["flushes"] == 1
    assert_same(yv, np.tanh(a) * np.float32(3.0), ulps=4)
    ps.sync()                          # nothing recorded: a no-op
    assert stats()["flushes"] == 1


def test_hints_start_work_without_a_read(stats):
    a = _f32(seed=10)
    x = ps.asarray(a)
    ps.reset_stats()
    y = x * 4.0 - 1.0
    ps.hint_execute()
    assert stats()["flushes"] == 1
    z = y * y
    ps.hint_read(z)
    assert stats()["flushes"] == 2
    ps.sync()
    assert_same(z, (a * np.float32(4.0) - np.float32(1.0)) ** 2)


def test_queue_length_threshold_triggers_a_flush(stats):
    a = _f32(seed=11)
    x = ps.asarray(a)
    ps.reset_stats()
    with ps.config.override(queue_threshold=4):
        y = x
        for _ in range(6):
            y = y * 0.5 + 1.0
        assert stats()["flushes"] >= 1        # no read yet
        out = y.numpy()
    ref = a
    for _ in range(6):
        ref = ref * np.float32(0.5) + np.float32(1.0)
    assert_same(out, ref)


def _workload(x, scale):
    y = ps.sin(x) * scale + ps.sqrt(ps.abs(x))
    return y, ps.sum(y * y), ps.max(y)


def test_second_identical_run_reuses_compiled_kernels(stats):
    a, b = _f32(seed=12), _f32(2 * N, seed=13)
    for i in range(3):
        ps.reset_stats()
        y, s, m = _workload(ps.asarray(a), 2.0 + i)       # new scalar value every time
        ref = np.sin(a) * np.float32(2.0 + i) + np.sqrt(np.abs(a))
        assert_same(y.numpy(), ref, ulps=4)
        assert float(s) == pytest.approx(float((ref.astype(np.float64) ** 2).sum()), rel=1e-5)
        st = stats()
        assert st["kernels_launched"] == 1
        if i:
            assert st["kernels_compiled"] == 0 and st["kernels_loaded_from_disk"] == 0
            assert st["trace_cache_hits"] == 1
    # another size: no new kernel (sizes are arguments), but a new trace
    ps.reset_stats()
    y, s, m = _workload(ps.asarray(b), 0.5)
    assert float(m) == pytest.approx(float(np.max(np.sin(b) * np.float32(0.5)
                                                  + np.sqrt(np.abs(b)))), rel=1e-6)
    st = stats()
    assert st["kernels_compiled"] == 0 and st["kernels_loaded_from_disk"] == 0
    assert st["program_cache_memory_hits"] >= 1


def test_asynchronous_path_gives_the_same_results(stats):
    """inline_elements=0: every sequence goes through the E-Scheduler thread."""
    a = _f32(seed=14)
    with ps.config.override(inline_elements=0):
        ps.reset_stats()
        y, s, m = _workload(ps.asarray(a), 3.0)
        out = [y.numpy(), float(s), float(m)]
        st = stats()
    assert st["inline_sequences"] == 0 and st["sequences_submitted"] == 1
    assert st["kernels_launched"] == 1
    ref = np.sin(a) * np.float32(3.0) + np.sqrt(np.abs(a))
    assert_same(out[0], ref, ulps=4)
    assert out[2] == float(ref.max())


def test_parallel_kernels_and_chunked_reductions(executor, stats):
    """serial_elements=0: the prange variant, with reductions cut into chunks."""
    rng = np.random.default_rng(15)
    b = rng.uniform(-1, 1, 200_003)
    b[123_457] = 7.0
    b[77] = -9.0
    m = rng.uniform(-1, 1, (3, 70_001))
    with ps.config.override(serial_elements=0):
        x, M = ps.asarray(b), ps.asarray(m)
        ps.reset_stats()
        z = x * 2.0
        rs = [ps.sum(z), ps.max(z), ps.argmax(z), ps.argmin(z), ps.mean(z), ps.any(z > 13.0),
              ps.sum(M, axis=1), ps.argmax(M, axis=1), ps.min(M, axis=0)]
        got = [r.numpy() for r in rs] + [z.numpy()]
    z_ = b * 2.0
    want = [z_.sum(), z_.max(), z_.argmax(), z_.argmin(), z_.mean(), np.any(z_ > 13.0),
            m.sum(1), m.argmax(1), m.min(0), z_]
    for i, (g, w) in enumerate(zip(got, want)):
        assert_same(g, w, ulps=8, rtol=1e-12, what=f"result {i}")
    assert stats()["kernel_splits"] == 0


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_max_and_min_see_every_nan(executor, dtype):
    """A float max/min runs in lanes with a NaN flag per lane (render_numba._nan_lanes): a NaN
    anywhere -- in a group of lanes, in the tail, in any chunk, in one row only -- makes the
    result NaN; without one the result is the extreme value, and a tie of -0.0 and 0.0 keeps
    the first seen, as NumPy does."""
    n = 100_003                          # chunked (serial_elements=0) and a tail of 3
    base = np.random.default_rng(18).uniform(-1, 1, n).astype(dtype)
    cases = [base]
    for pos in (0, 5, 8 * 1000 + 7, n // 2, n - 2, n - 1):
        c = base.copy()
        c[pos] = np.nan
        cases.append(c)
    rows = np.random.default_rng(19).uniform(-1, 1, (70, 203)).astype(dtype)
    rows[3, 200] = np.nan                # in row 3's tail
    rows[40, 9] = np.nan
    zeros = np.array([-0.0, 0.0] * 9, dtype)
    with ps.config.override(serial_elements=0):
        got = [(float(ps.max(ps.asarray(c) * 2)), float(ps.min(ps.abs(ps.asarray(c)))))
               for c in cases]
        R = ps.asarray(rows)
        rmax, rmin = (R * 1).max(axis=1).numpy(), (R - 1).min(axis=1).numpy()
        z = float(ps.max(ps.asarray(zeros) + 0))
    for c, (mx, mn) in zip(cases, got):
        assert_same(np.array(mx), np.array(float(np.max(c * 2))))
        assert_same(np.array(mn), np.array(float(np.min(np.abs(c)))))
    assert_same(rmax, rows.max(axis=1))
    assert_same(rmin, (rows - 1).min(axis=1))
    assert np.signbit(z) == np.signbit(np.max(zeros + 0))


def test_heavy_reductions_over_chunks_and_blocks(executor):
    """Heavy bodies (blocked reductions) and light ones (lanes) over tasks that start inside
    the reduced axis (serial_elements=0: a long axis is cut into chunks; each task indexes from
    its own start, and each block from the block's), forwards and through a reversed view;
    and argmax, whose index is the absolute one."""
    rng = np.random.default_rng(17)
    b = rng.uniform(-1, 1, 200_003)
    m = rng.uniform(-1, 1, (3, 70_001))
    with ps.config.override(serial_elements=0):
        x, M = ps.asarray(b), ps.asarray(m)
        rs = [ps.sum(ps.exp(ps.sin(x))), ps.sum(ps.exp(ps.sin(x[::-1])) * x),
              ps.mean(ps.exp(ps.cos(M)), axis=1), ps.sum(ps.exp(M[:, ::-1]) * M, axis=1),
              ps.sum(x * x), ps.argmax(ps.exp(x[::-1])), ps.argmin(M[:, 5:], axis=1),
              # integer and boolean accumulators: the plain loop (exact in any order)
              ps.count_nonzero(ps.exp(ps.sin(x)) > 1.5), ps.sum((M * 1000).astype(np.int64),
                                                                axis=1),
              ps.max((x[::-1] * 1e6).astype(np.int32)), ps.any(ps.exp(M) > 2.7, axis=1)]
        got = [r.numpy() for r in rs]
    want = [np.exp(np.sin(b)).sum(), (np.exp(np.sin(b[::-1])) * b).sum(),
            np.exp(np.cos(m)).mean(axis=1), (np.exp(m[:, ::-1]) * m).sum(axis=1),
            (b * b).sum(), np.exp(b[::-1]).argmax(), m[:, 5:].argmin(axis=1),
            np.count_nonzero(np.exp(np.sin(b)) > 1.5), (m * 1000).astype(np.int64).sum(axis=1),
            (b[::-1] * 1e6).astype(np.int32).max(), np.any(np.exp(m) > 2.7, axis=1)]
    for i, (g, w) in enumerate(zip(got, want)):
        assert_same(g, w, ulps=0, rtol=1e-12, what=f"result {i}")


@pytest.mark.parametrize("serial", [True, False])
def test_leading_axis_reductions_of_c_ordered_arrays(executor, stats, serial):
    """sum/mean/max/min over axis 0 of a C-ordered matrix (the Numba kernel walks the rows in
    order over runs of columns: render_numba._column_path), of a slice, with a per-row factor
    and NaN -- NumPy's results; fewer than 32 columns and a transposed input take the general
    loop and agree too."""
    rng = np.random.default_rng(16)
    m = rng.uniform(-1, 1, (300, 700))
    m[17, 5] = np.nan
    w = rng.uniform(0.5, 2, 300)
    t = rng.uniform(-1, 1, (40, 20)).astype(np.float32)
    with ps.config.override(serial_elements=N if serial else 0):
        M, W, T = ps.asarray(m), ps.asarray(w), ps.asarray(t)
        rs = [M.sum(axis=0), M.max(axis=0), (M[3:250, 100:650] * 2.0).mean(axis=0),
              (M * W[:, None]).sum(axis=0), ps.abs(M).min(axis=0), T.sum(axis=0),
              T.T.sum(axis=0), T[:, :10].max(axis=0)]
        got = [r.numpy() for r in rs]
    want = [m.sum(0), m.max(0), (m[3:250, 100:650] * 2.0).mean(0), (m * w[:, None]).sum(0),
            np.abs(m).min(0), t.sum(0, dtype=np.float64).astype(np.float32),
            t.T.sum(0, dtype=np.float64).astype(np.float32),
            t[:, :10].max(0)]
    for i, (g, e) in enumerate(zip(got, want)):
        assert_same(g, e, ulps=8, rtol=1e-12 if g.dtype == np.float64 else 1e-6,
                    what=f"result {i}")
    assert stats()["kernel_splits"] == 0


def test_no_fusion_setting_runs_one_kernel_per_op(stats):
    a = _f32(seed=16)
    x = ps.asarray(a)
    with ps.config.override(fusion=False):
        ps.reset_stats()
        y = (x + 1.0) * 2.0
        s = ps.sum(y)
        out = float(s)
        assert stats()["kernels_launched"] == 3
    assert out == pytest.approx(float(((a + np.float32(1)) * np.float32(2)).astype(
        np.float64).sum()), rel=1e-6)


def _cg_steps(m, x, r, p, rr, steps):
    """Conjugate-gradient-like updates with a diagonal operator: two scalar divisions
    between reductions per step."""
    d = m.asarray(np.linspace(1.0, 2.0, N))
    for _ in range(steps):
        Ap = d * p
        alpha = rr / m.dot(p, Ap)
        x = x + alpha * p
        r = r - alpha * Ap
        rr2 = m.dot(r, r)
        beta = rr2 / rr
        p = r + beta * p
        rr = rr2
    return x, rr


def test_scalar_arithmetic_between_reductions_is_inlined_into_its_consumers(stats):
    b = np.random.default_rng(3).random(N)
    ref_x, ref_rr = _cg_steps(np, b * 0.0, b, b, np.dot(b, b), 4)
    xb = ps.asarray(b)
    ps.reset_stats()
    x, rr = _cg_steps(ps, xb * 0.0, xb, xb, ps.dot(xb, xb), 4)
    assert_same(x, ref_x, rtol=1e-12)
    assert_same(rr, ref_rr, rtol=1e-12)
    # per step two kernels: the p update fused with Ap and p @ Ap; the x/r update fused with
    # r @ r. alpha and beta are recomputed inside the kernels that read them, never launched
    # alone (15 kernels without the pass)
    assert stats()["kernels_launched"] == 2 * 4
    # a scalar an Array still holds is computed by a kernel of its own and stored
    ps.reset_stats()
    s = ps.dot(xb, xb)
    alpha = 2.0 / s
    y = xb * alpha
    assert_same(y, b * (2.0 / np.dot(b, b)), rtol=1e-12)
    assert float(alpha) == pytest.approx(2.0 / np.dot(b, b), rel=1e-12)
    assert stats()["kernels_launched"] == 3


@pytest.mark.parametrize("rows", [True, False])
def test_per_row_arithmetic_between_reductions_is_inlined(stats, rows):
    """Layer norm: sqrt(var + eps) per row is recomputed inside the normalising kernel (three
    kernels: the mean, the variance, the output), not launched over the (rows, 1) space; with
    row fusion the three are one row kernel (tests/test_row_fusion.py)."""
    rng = np.random.default_rng(4)
    a, g = rng.standard_normal((64, 128)), rng.standard_normal(128)

    def ln(m, x, g):
        mu = m.mean(x, axis=1, keepdims=True)
        d = x - mu
        var = m.mean(d * d, axis=1, keepdims=True)
        return d / m.sqrt(var + 1e-5) * g

    x, gg = ps.asarray(a), ps.asarray(g)
    ps.reset_stats()
    with ps.config.override(row_fusion=rows):
        assert_same(ln(ps, x, gg), ln(np, a, g), rtol=1e-12, atol=1e-12)
    assert stats()["kernels_launched"] == (1 if rows else 3)


def test_ops_move_into_the_kernel_that_reads_them(executor, stats):
    """``a`` is recorded before an op (here a sort) that forces its reader into a later
    kernel: it is computed there, in registers, instead of stored and read back
    (fusion.sink_ops); an ``a`` the program keeps is stored once, as before."""
    xv = _f32(seed=3)
    x = ps.asarray(xv) * 1.0
    ps.sync()
    ps.reset_stats()
    a = x * 2.0 - 1.0
    z = a + ps.sort(x)
    del a
    assert_same(z, (xv * 2.0 - 1.0) + np.sort(xv))
    st = stats()
    assert st["kernels_launched"] == 1 and st["intrinsics_launched"] == 1
    assert st["buffers_allocated"] == 2             # the sort's output and z

    ps.reset_stats()
    a = x * 2.0 - 1.0                               # kept: stored by its own kernel
    z = a + ps.sort(x)
    assert_same(z, (xv * 2.0 - 1.0) + np.sort(xv))
    assert_same(a, xv * 2.0 - 1.0)
    st = stats()
    assert st["kernels_launched"] == 2 and st["buffers_allocated"] == 3


INLINE_ORDER_CHILD = r"""
import numpy as np, streamrt as xp
rng = np.random.default_rng(557)
A = xp.asarray(rng.random((1, 8)))
B = xp.asarray((rng.random((1, 8)) - 0.5).astype(np.float32))
u = xp.asarray(rng.random(1))
An, Bn, un = np.asarray(A).copy(), np.asarray(B).copy(), np.asarray(u).copy()
keep, keepn = [], []
for i in range(5):
    k = max(1, min((i * 3) % 9, 8)); b = min(i % 9, 8 - k)
    u = u * 0.5 + B[:, b:b + k].sum(axis=1) * 0.5
    un = un * 0.5 + Bn[:, b:b + k].sum(axis=1) * 0.5
    A = xp.where(A > 0.3, A * 1.25, B)
    An = np.where(An > 0.3, An * 1.25, Bn)
    keep.append(xp.where(B > (i % 10) / 10.0, B, B * 1.25))
    keepn.append(np.where(Bn > (i % 10) / 10.0, Bn, Bn * 1.25))
    A[0, :1] += 0.5 * B[0, :1][::-1]
    An[0, :1] += 0.5 * Bn[0, :1][::-1]
for o, on in zip(keep + [A, u], keepn + [An, un]):
    np.testing.assert_allclose(np.asarray(o), on, rtol=1e-6)
print("ok")
"""


def test_inlined_scalar_ops_go_only_after_their_inputs(tmp_path):
    """A loop's dead 1-element chain (``u = u * 0.5 + B[:, b:b+k].sum(axis=1) * 0.5``, never
    read) was inlined into a kernel that ran before the sum it reads: the read of a kept
    result waited for that sum forever. The child must finish (and agree with NumPy)."""
    import subprocess
    import sys
    from helpers import child_env
    env = child_env(tmp_path, STREAMRT_JIT="background")
    env["PYTHONPATH"] = os.path.dirname(os.path.dirname(os.path.abspath(ps.__file__)))
    r = subprocess.run([sys.executable, "-c", INLINE_ORDER_CHILD], env=env, timeout=120,
                       capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr[-2000:]
