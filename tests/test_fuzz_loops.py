"""Differential fuzzing of loop programs: what users write around the element-wise ops that
tests/test_fuzz.py draws -- slices whose bounds follow the loop index, in-place operators on
views and regions (overlapping ones too: ``X[1:] += X[:-1]``), kept views written through
or read after their base changed, element reads and writes, a scalar read mid-loop (a flush)
that feeds the next statements, float32 and float64 mixed, outer and matrix-vector products,
rebinding a name to a new array while views of the old one live on. A random program of such statements runs as a
loop body for a few rounds (the second and later rounds follow the trace cache, a line whose
statement ran at once is marked: runtime/cscheduler.py), with NumPy and with streamrt, on
both record paths and across the NumPy tier's limits (everything recorded, a limit the
arrays straddle, everything small at once); every array and view must match NumPy's.

Kernels run interpreted here (STREAMRT_JIT=off: the compiled kernels' code is what
tests/test_fuzz.py checks). A long local run: STREAMRT_TEST_FUZZ_EXAMPLES=N (random seeds,
not derandomised), STREAMRT_TEST_FUZZ_JIT=sync (compiled kernels, the direct replays),
STREAMRT_TEST_FUZZ_LARGE=1 (arrays past the NumPy tier's limit and cut over two threads)."""
from __future__ import annotations

import contextlib
import os

import numpy as np
import pytest
from helpers import jit_mode
from hypothesis import HealthCheck, given, settings, strategies as st

import streamrt as ps
from streamrt.frontend import native

_LONG = int(os.environ.get("STREAMRT_TEST_FUZZ_EXAMPLES", "0"))
_JIT = os.environ.get("STREAMRT_TEST_FUZZ_JIT", "off")        # (a long run: "sync" too)
_LARGE = os.environ.get("STREAMRT_TEST_FUZZ_LARGE", "") == "1"   # (rows and cols of 300)
FUZZ = settings(max_examples=_LONG or 60, deadline=None, derandomize=not _LONG,
                database=None, suppress_health_check=list(HealthCheck), print_blob=True)

COEF = st.sampled_from([-1.5, -0.5, 0.25, 0.5, 0.75, 1.25, 2.0])
MATS = ("A", "B")          # (n, m) matrices
VECS = {"u": 0, "w": 1}    # u: length n, w: length m


def _ix(data, n, label):
    """A slice over an axis of length n: (start, stop) with 0 <= start <= stop <= n."""
    a = data.draw(st.integers(0, n), label=label + " start")
    b = data.draw(st.integers(a, n), label=label + " stop")
    return a, b


def _stmt(data, n, m):
    """One statement: (description, fn(xp, env, i)). ``i`` is the loop round."""
    kind = data.draw(st.sampled_from([
        "region_iop", "region_set", "rebind", "keep_view", "write_view", "read_view",
        "row_of_round", "triangular", "element", "flush_scalar", "outer", "matvec",
        "transposed", "overlap", "copy", "reversed", "where", "vec_update", "outer_sum"]),
        label="kind")
    X = data.draw(st.sampled_from(MATS), label="target")
    Y = data.draw(st.sampled_from(MATS), label="source")
    c = data.draw(COEF, label="coef")
    if kind in ("region_iop", "region_set"):
        r0, r1 = _ix(data, n, "rows")
        c0, c1 = _ix(data, m, "cols")
        # the source: a window of Y of the same shape, anywhere
        s0 = data.draw(st.integers(0, n - (r1 - r0)), label="source row")
        t0 = data.draw(st.integers(0, m - (c1 - c0)), label="source col")
        op = data.draw(st.sampled_from(["+=", "-=", "*=", "="]), label="op") \
            if kind == "region_iop" else "="
        fn_ = data.draw(st.sampled_from(["lin", "sin", "max"]), label="expr")

        def f(xp, e, i):
            src = e[Y][s0:s0 + r1 - r0, t0:t0 + c1 - c0]
            val = {"lin": lambda: src * c + 1.0, "sin": lambda: xp.sin(src) * c,
                   "max": lambda: xp.maximum(src, c)}[fn_]()
            dst = e[X]
            if op == "+=":
                dst[r0:r1, c0:c1] += val
            elif op == "-=":
                dst[r0:r1, c0:c1] -= val
            elif op == "*=":
                dst[r0:r1, c0:c1] *= val
            else:
                dst[r0:r1, c0:c1] = val
        return f"{X}[{r0}:{r1}, {c0}:{c1}] {op} {fn_}({Y}[{s0}:.., {t0}:..], {c})", f
    if kind == "rebind":
        how = data.draw(st.sampled_from(["lin", "max", "neg"]), label="how")

        def f(xp, e, i):
            a, b = e[X], e[Y]
            e[X] = {"lin": lambda: a * c + b, "max": lambda: xp.maximum(a, b * c),
                    "neg": lambda: -a + c}[how]()
        return f"{X} = {how}({X}, {Y}, {c})", f
    if kind == "keep_view":
        r0, r1 = _ix(data, n, "rows")
        step = data.draw(st.sampled_from([1, 2, -1]), label="step")

        def f(xp, e, i):
            e["V"] = e[X][r0:r1:step] if step > 0 else e[X][r0:r1][::-1]
        return f"V = {X}[{r0}:{r1}:{step}]", f
    if kind == "write_view":
        op = data.draw(st.sampled_from(["+=", "*=", "=", "[0]="]), label="op")

        def f(xp, e, i):
            v = e.get("V")
            if v is None or v.size == 0:
                return
            if op == "+=":
                v += c
            elif op == "*=":
                v *= c
            elif op == "=":
                v[...] = c + i
            else:
                v[0] = c * (i + 1)
        return f"V {op} {c}", f
    if kind == "read_view":
        def f(xp, e, i):
            v = e.get("V")
            if v is None or v.size == 0 or v.shape[1] != m:
                return
            k = min(v.shape[0], n)
            e[X][:k] = e[X][:k] + v[:k] * c
        return f"{X}[:k] = {X}[:k] + V[:k] * {c}", f
    if kind == "row_of_round":
        s = data.draw(st.integers(0, n - 1), label="shift")

        def f(xp, e, i):
            r = (i + s) % n
            e[X][r, :] = e[X][r, :] * c + e["w"]
        return f"{X}[(i + {s}) % n, :] = {X}[.., :] * {c} + w", f
    if kind == "triangular":
        s = data.draw(st.integers(0, n - 1), label="shift")
        j = data.draw(st.integers(0, m - 1), label="col")

        def f(xp, e, i):
            k = (i + s) % n
            kk = min(k + 1, m, n)
            e[X][k, :kk] += c * e[Y][:kk, j]
        return f"{X}[k, :k+1] += {c} * {Y}[:k+1, {j}] (k = (i + {s}) % n)", f
    if kind == "element":
        a, b = data.draw(st.integers(0, n - 1)), data.draw(st.integers(0, m - 1))
        p, q = data.draw(st.integers(0, n - 1)), data.draw(st.integers(0, m - 1))
        add = data.draw(st.booleans(), label="add")

        def f(xp, e, i):
            v = float(e[Y][p, q]) * c + 1.0
            if add:
                e[X][a, b] += v
            else:
                e[X][a, b] = v
        return f"{X}[{a}, {b}] {'+=' if add else '='} {Y}[{p}, {q}] * {c} + 1", f
    if kind == "flush_scalar":
        r0, r1 = _ix(data, n, "rows")

        def f(xp, e, i):
            s = float(xp.sum(e[Y][r0:r1]))
            e[X] = e[X] + (s * 0.01 if np.isfinite(s) else 0.0)
        return f"{X} = {X} + 0.01 * sum({Y}[{r0}:{r1}])", f
    if kind == "outer":
        k = data.draw(st.integers(0, n), label="k")
        l_ = data.draw(st.integers(0, m), label="l")
        r0 = data.draw(st.integers(0, n - k), label="row")
        c0 = data.draw(st.integers(0, m - l_), label="col")

        def f(xp, e, i):
            e[X][r0:r0 + k, c0:c0 + l_] += c * xp.outer(e["u"][:k], e["w"][:l_])
        return f"{X}[{r0}:+{k}, {c0}:+{l_}] += {c} * outer(u[:{k}], w[:{l_}])", f
    if kind == "outer_sum":
        # a whole-array sum with NumPy-tier temporaries (the outer products): the result may
        # be computed into one of their buffers (base._preset, base.spare)
        two = data.draw(st.booleans(), label="two outers")

        def f(xp, e, i):
            s = e[X] + xp.outer(e["u"], e["w"])
            e[X] = s + c * xp.outer(e["u"], e["w"] * 2.0) if two else s * c
        return f"{X} = {X} + outer(u, w){' + c * outer(u, 2w)' if two else ' * c'}", f
    if kind == "matvec":
        t = data.draw(st.booleans(), label="transposed")

        def f(xp, e, i):
            if t:
                e["w"] = e["w"] * 0.5 + (e[X].T @ e["u"]) * 0.1
            else:
                e["u"] = e["u"] * 0.5 + (e[X] @ e["w"]) * 0.1
        return f"{'w' if t else 'u'} = .. + {X}{'.T' if t else ''} @ ..", f
    if kind == "transposed":
        p = data.draw(st.integers(0, min(n, m)), label="p")

        def f(xp, e, i):
            e[X][:p, :p] += c * e[Y][:p, :p].T
        return f"{X}[:{p}, :{p}] += {c} * {Y}[:{p}, :{p}].T", f
    if kind == "overlap":
        d = data.draw(st.sampled_from(["down", "up", "right"]), label="direction")

        def f(xp, e, i):
            a = e[X]
            if d == "down":
                a[1:, :] += c * a[:-1, :]
            elif d == "up":
                a[:-1, :] = a[1:, :] * c
            else:
                a[:, 1:] -= a[:, :-1] * c
        return f"{X} overlapping {d} ({c})", f
    if kind == "copy":
        def f(xp, e, i):
            e[Y] = e[X].copy()
            e[X] *= c
        return f"{Y} = {X}.copy(); {X} *= {c}", f
    if kind == "reversed":
        k = data.draw(st.integers(1, n), label="k")

        def f(xp, e, i):
            u = e["u"]
            u[:k] = u[:k] + c * u[k - 1::-1]
        return f"u[:{k}] = u[:{k}] + {c} * u[{k - 1}::-1]", f
    if kind == "where":
        def f(xp, e, i):
            a, b = e[X], e[Y]
            e[X] = xp.where(a > 0.5, a * c, b)
        return f"{X} = where({X} > 0.5, {X} * {c}, {Y})", f
    # vec_update
    v = data.draw(st.sampled_from(sorted(VECS)), label="vector")

    def f(xp, e, i):
        x = e[v]
        x[i % x.shape[0]] = c
        e[v] = xp.tanh(x * c) + x
    return f"{v}[i % len] = {c}; {v} = tanh({v} * {c}) + {v}", f


def _run(xp, prog, inputs, rounds):
    e = {k: xp.asarray(v.copy()) for k, v in inputs.items()}
    before = [f for _, f in prog["before"]]
    body = [f for _, f in prog["body"]]
    for f in before:
        f(xp, e, 0)
    for i in range(rounds):
        for f in body:
            f(xp, e, i)
    return e


def _compare(got, want, prog, tol):
    assert set(got) == set(want)
    for k in sorted(want):
        g, w = np.asarray(got[k]), np.asarray(want[k])
        what = f"{k} after\n  " + "\n  ".join(d for d, _ in prog["before"] + prog["body"])
        assert g.shape == w.shape and g.dtype == w.dtype, what
        # (interpreted kernels are NumPy's ops in NumPy's order: exact but for an fma a
        # compiled one may contract, a matrix product's blocking, and a float32 sum's order,
        # whose last place a float64 array may take up)
        np.testing.assert_allclose(g, w, rtol=tol, atol=tol, equal_nan=True, err_msg=what)


@contextlib.contextmanager
def _path(native_on):
    if native_on or not native.available():
        yield
    else:
        with native.disabled():
            yield


@pytest.fixture(scope="module")
def interpreted():
    with jit_mode(_JIT):
        yield


@FUZZ
@given(data=st.data())
def test_random_loop_programs_match_numpy(interpreted, data):
    n = data.draw(st.sampled_from([1, 2, 3, 5, 8, 13] + ([300] if _LARGE else [])), label="n")
    m = data.draw(st.sampled_from([1, 2, 4, 7, 12] + ([300] if _LARGE else [])), label="m")
    seed = data.draw(st.integers(0, 2 ** 32 - 1), label="seed")
    rng = np.random.default_rng(seed)
    bdt = data.draw(st.sampled_from([np.float64, np.float32]), label="B's dtype")
    inputs = {"A": rng.random((n, m)), "B": (rng.random((n, m)) - 0.5).astype(bdt),
              "u": rng.random(n), "w": rng.random(m)}
    prog = {"before": [_stmt(data, n, m) for _ in range(data.draw(st.integers(0, 2)))],
            "body": [_stmt(data, n, m) for _ in range(data.draw(st.integers(1, 6)))]}
    rounds = data.draw(st.integers(1, 4), label="rounds")
    # everything recorded / a limit the arrays straddle / everything at once
    lim = data.draw(st.sampled_from([0, 6, 24, 1 << 16]), label="eager limit")
    native_on = data.draw(st.booleans(), label="C record path")
    want = _run(np, prog, inputs, rounds)
    with _path(native_on), ps.config.override(eager_elements=lim):
        got = _run(ps, prog, inputs, rounds)
        got = {k: np.asarray(v) for k, v in got.items()}
    _compare(got, want, prog, 1e-9 if bdt == np.float64 else 1e-4)
