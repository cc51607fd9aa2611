"""Row kernels (proggen/fusion.py ``row_fuse``, render_numba.py ``render_rows``): a row
reduction and the kernels that use its per-row result run as one kernel, phase by phase along
each row. Asserted against NumPy and through kernel and buffer counters."""
from __future__ import annotations

import numpy as np
import pytest
from helpers import assert_same

import streamrt as ps
from streamrt.backends.numba_cpu import executor as cpu

ROWS, COLS = 96, 50        # 64+ rows: row fusion applies


def softmax(m, x):
    e = m.exp(x - m.max(x, axis=1, keepdims=True))
    return e / m.sum(e, axis=1, keepdims=True)


def layernorm(m, x, g, b):
    mu = m.mean(x, axis=-1, keepdims=True)
    d = x - mu
    var = m.mean(d * d, axis=-1, keepdims=True)
    return d / m.sqrt(var + 1e-5) * g + b


def _data(shape, dtype, seed=0):
    return (np.random.default_rng(seed).standard_normal(shape) * 3.0).astype(dtype)


@pytest.fixture(autouse=True)
def _cpu():
    with ps.config.override(backend="cpu"):
        yield


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_softmax_is_one_row_kernel(dtype, stats):
    a = _data((ROWS, COLS), dtype)
    x = ps.asarray(a)
    ps.sync()
    ps.reset_stats()
    y = softmax(ps, x)
    assert_same(y, softmax(np, a), rtol=1e-5 if dtype == np.float32 else 1e-12)
    st = stats()
    # one kernel; written: the output and the two per-row reductions (exp(x - max) is kept
    # in a per-thread row buffer between the phases, never in an array)
    assert st["kernels_launched"] == 1
    assert st["buffers_allocated"] == 3
    assert st["bytes_allocated"] == (ROWS * COLS + 2 * ROWS) * np.dtype(dtype).itemsize
    with ps.config.override(row_fusion=False):
        ps.reset_stats()
        assert_same(softmax(ps, x), softmax(np, a), rtol=1e-5 if dtype == np.float32 else 1e-12)
        assert stats()["kernels_launched"] == 3


def test_layernorm_over_a_strided_3d_view(stats):
    """Two kept dims that do not collapse (a transposed view), a broadcast scale and shift,
    the per-row sqrt(var + eps) computed once per row."""
    a, g, b = _data((20, 4, 33), np.float64), _data(33, np.float64, 1), _data(33, np.float64, 2)
    x = ps.asarray(a).transpose(1, 0, 2)
    ps.reset_stats()
    y = layernorm(ps, x, ps.asarray(g), ps.asarray(b))
    assert_same(y, layernorm(np, a.transpose(1, 0, 2), g, b), rtol=1e-12, atol=1e-12)
    assert stats()["kernels_launched"] == 1


def test_reversed_rows_and_kept_values():
    """A negative stride along the row (the offset form), and values an Array still holds:
    the per-row max and the exponentials are written too, each once, and correct."""
    a = _data((ROWS, COLS), np.float32, 3)
    x = ps.asarray(a)[:, ::-1]
    ref = a[:, ::-1]
    mx = ps.max(x, axis=1, keepdims=True)
    e = ps.exp(x - mx)
    y = e / ps.sum(e, axis=1, keepdims=True)
    ps.reset_stats()
    assert_same(y, softmax(np, ref), rtol=1e-5)
    assert ps.runtime_stats()["kernels_launched"] == 1
    assert_same(mx, ref.max(axis=1, keepdims=True))
    assert_same(e, np.exp(ref - ref.max(axis=1, keepdims=True)), rtol=1e-6)


def test_what_does_not_fuse_into_rows(stats):
    """Few rows (each row is one task: 2 threads would idle), a reduction over the first
    axis, and argmax stay separate kernels -- and correct."""
    a = _data((8, COLS), np.float32, 4)
    ps.reset_stats()
    assert_same(softmax(ps, ps.asarray(a)), softmax(np, a), rtol=1e-5)
    assert stats()["kernels_launched"] == 3
    b = _data((ROWS, COLS), np.float32, 5)
    xb = ps.asarray(b)
    ps.reset_stats()
    assert_same(xb - ps.mean(xb, axis=0, keepdims=True),
                b - b.mean(axis=0, keepdims=True, dtype=np.float64).astype(np.float32),
                rtol=1e-5, atol=1e-6)
    assert stats()["kernels_launched"] == 2
    i = ps.argmax(xb, axis=1, keepdims=True)
    assert_same(xb * i, b * np.argmax(b, axis=1, keepdims=True))


def test_trace_cache_hits_rerun_the_row_kernel(stats):
    a = _data((ROWS, COLS), np.float64, 6)
    x = ps.asarray(a)
    for k in range(3):
        assert_same(softmax(ps, x * float(k + 1)), softmax(np, a * (k + 1)), rtol=1e-12)
    st = stats()
    assert st["trace_cache_hits"] >= 2 and st["kernels_launched"] == 3


def test_a_row_kernel_that_fails_runs_phase_by_phase(monkeypatch, stats):
    """A row kernel that will not compile is split into one kernel per phase (the per-row
    reductions and row-buffered values stored between them), counted, and correct."""
    real = cpu.CPUExecutor._run_kernel

    def no_rows(self, prog, d):
        if prog.kernel.phases:
            raise RuntimeError("will not compile")
        return real(self, prog, d)
    monkeypatch.setattr(cpu.CPUExecutor, "_run_kernel", no_rows)
    a = _data((ROWS, COLS), np.float32, 7)
    with ps.config.override(direct_replay=False):
        assert_same(softmax(ps, ps.asarray(a)), softmax(np, a), rtol=1e-5)
    st = stats()
    assert st["kernel_splits"] == 1 and st["kernels_launched"] == 3


# ---- random row programs --------------------------------------------------------------------
from hypothesis import given, settings, strategies as st  # noqa: E402

_BIN = {"add": lambda m, a, b: a + b, "subtract": lambda m, a, b: a - b,
        "multiply": lambda m, a, b: a * b, "divide": lambda m, a, b: a / (m.abs(b) + 1.0),
        "maximum": lambda m, a, b: m.maximum(a, b)}
_UN = {"exp": lambda m, a: m.exp(a * 0.1), "sqrt": lambda m, a: m.sqrt(m.abs(a)),
       "neg": lambda m, a: -a}
_RED = ("sum", "mean", "max", "min")


@settings(max_examples=12, deadline=None, derandomize=True, database=None)
@given(st.data())
def test_random_row_programs_match_numpy(data):
    """Chains of row reductions (keepdims or ``[..., None]``) and element-wise ops mixing
    full values with per-row ones, on 2-D and 3-D arrays (a few rows: the row minimum is
    lowered), against NumPy, with row fusion on and off."""
    dt = data.draw(st.sampled_from([np.float32, np.float64]), label="dtype")
    shape = data.draw(st.sampled_from([(5, 7), (3, 4, 9), (6, 1)]), label="shape")
    a = _data(shape, dt, data.draw(st.integers(0, 99), label="seed"))
    steps, nfull, nrow = [], 1, 0       # ("r", reduction, full value) | ("u", fn, full value)
    for _ in range(data.draw(st.integers(2, 6), label="steps")):   # | ("b", fn, full, row)
        kind = data.draw(st.sampled_from(["reduce", "map", "unary"]), label="kind")
        if kind == "reduce" or not nrow:
            steps.append(("r", data.draw(st.sampled_from(_RED), label="reduction"),
                          data.draw(st.integers(0, nfull - 1), label="reduced"),
                          data.draw(st.booleans(), label="keepdims")))
            nrow += 1
        elif kind == "unary":
            steps.append(("u", data.draw(st.sampled_from(sorted(_UN)), label="unary"),
                          data.draw(st.integers(0, nfull - 1), label="arg")))
            nfull += 1
        else:
            steps.append(("b", data.draw(st.sampled_from(sorted(_BIN)), label="binary"),
                          data.draw(st.integers(0, nfull - 1), label="full arg"),
                          data.draw(st.integers(0, nrow - 1), label="row arg")))
            nfull += 1

    def evaluate(m, x):
        full, rows = [x], []
        for s in steps:
            if s[0] == "r":         # keepdims, or the reduced axis added back by a view
                r = getattr(m, s[1])(full[s[2]], axis=-1, keepdims=s[3])
                rows.append(r if s[3] else r[..., None])
            elif s[0] == "u":
                full.append(_UN[s[1]](m, full[s[2]]))
            else:
                full.append(_BIN[s[1]](m, full[s[2]], rows[s[3]]))
        return [full[-1]] + rows[-1:]

    with np.errstate(all="ignore"):
        want = evaluate(np, a)
    tol = 1e-4 if dt == np.float32 else 1e-11
    from streamrt.compiler import fusion
    saved, fusion.ROW_MIN_ROWS = fusion.ROW_MIN_ROWS, 1
    try:
        for rf in (True, False):
            with ps.config.override(row_fusion=rf, backend="cpu"):
                for g, w in zip(evaluate(ps, ps.asarray(a)), want):
                    assert_same(g, w, rtol=tol, atol=tol)
    finally:
        fusion.ROW_MIN_ROWS = saved


def test_column_views_of_a_reduction(stats):
    """NumPy code often drops the reduced axis and adds it back (``m[:, None]``,
    ``m.reshape(-1, 1)``): still one row kernel. A view that reorders the rows is not the
    per-row value: two kernels, and correct."""
    a = _data((ROWS, COLS), np.float64, 8)
    x = ps.asarray(a)
    ps.reset_stats()
    e = ps.exp(x - x.max(axis=1)[:, None])
    y = e / e.sum(axis=1).reshape(-1, 1)
    del e
    e0 = np.exp(a - a.max(axis=1)[:, None])
    assert_same(y, e0 / e0.sum(axis=1).reshape(-1, 1), rtol=1e-12)
    assert stats()["kernels_launched"] == 1
    ps.reset_stats()
    m = x.max(axis=1)
    assert_same(x - m[::-1][:, None], a - a.max(axis=1)[::-1][:, None])
    assert stats()["kernels_launched"] == 2


@pytest.mark.parametrize("flip", [False, True])
def test_rows_longer_than_a_block(flip, stats):
    """Rows of several blocks (render_numba.BLOCK) plus a tail, forwards and reversed: the heavy
    phase indexes each block from its start (views and row buffers), and the values it keeps
    (the exponentials, stored and reused by the last phase) land at the right columns."""
    a = _data((ROWS, 3 * 256 + 37), np.float64, 4)
    x = ps.asarray(a)[:, ::-1] if flip else ps.asarray(a)
    ref = a[:, ::-1] if flip else a
    ps.reset_stats()
    mx = ps.max(x, axis=1, keepdims=True)
    e = ps.exp(ps.sin(x) * 2.0 - mx)
    s = ps.sum(e, axis=1, keepdims=True)
    y = e / s
    want_e = np.exp(np.sin(ref) * 2.0 - ref.max(axis=1, keepdims=True))
    assert_same(y, want_e / want_e.sum(axis=1, keepdims=True), rtol=1e-13)
    assert_same(e, want_e, rtol=1e-14)
    assert stats()["kernels_launched"] == 1
