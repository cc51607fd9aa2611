"""Kernel size bounded by cost (compiler/fusion.py ``loop_chunks``): a flush that repeats a loop
body is cut into kernels at its iterations, so the kernels are alike and compile once; small
spaces get kernels of few iterations, large ones as many as STREAMRT_MAX_KERNEL_OPS holds.
Asserted through the kernels ProgGen makes (deterministic), never through timings."""
import numpy as np
import pytest
from helpers import compiler_caps

import streamrt as ps
from streamrt import compiler
from streamrt.runtime.workqueue import current_queue

SIGMA, BETA, DT = 10.0, 8.0 / 3.0, 1e-3


def _rk4(xp, x, y, z, rho, steps):
    """Lorenz-63, RK4: 71 recorded ops a step."""
    def f(x, y, z):
        return SIGMA * (y - x), x * (rho - z) - y, x * y - BETA * z
    for _ in range(steps):
        k1x, k1y, k1z = f(x, y, z)
        k2x, k2y, k2z = f(x + 0.5 * DT * k1x, y + 0.5 * DT * k1y, z + 0.5 * DT * k1z)
        k3x, k3y, k3z = f(x + 0.5 * DT * k2x, y + 0.5 * DT * k2y, z + 0.5 * DT * k2z)
        k4x, k4y, k4z = f(x + DT * k3x, y + DT * k3y, z + DT * k3z)
        x = x + DT / 6.0 * (k1x + 2.0 * k2x + 2.0 * k3x + k4x)
        y = y + DT / 6.0 * (k1y + 2.0 * k2y + 2.0 * k3y + k4y)
        z = z + DT / 6.0 * (k1z + 2.0 * k2z + 2.0 * k3z + k4z)
    return x, y, z


def _euler(x, y, z, rho, steps):
    """Lorenz-63, Euler: 14 recorded ops a step."""
    for _ in range(steps):
        dx, dy, dz = SIGMA * (y - x), x * (rho - z) - y, x * y - BETA * z
        x, y, z = x + DT * dx, y + DT * dy, z + DT * dz
    return x, y, z


def _inputs(n, seed=0):
    rng = np.random.default_rng(seed)
    s = rng.normal(1.0, 0.5, (3, n))
    return s[0], s[1], s[2], np.linspace(10.0, 40.0, n)


def _kernels(build, **settings):
    """The kernel programs ProgGen makes of what ``build()`` records, in one flush."""
    ps.sync()
    with ps.config.override(**settings):
        keep = build()
        seq = compiler.generate(current_queue().take(), compiler_caps("cpu"))
    del keep
    return [p for p in seq.programs if p.kind == "kernel"]


def _record(fn, n, steps, offset=0):
    x, y, z, rho = (ps.asarray(a) for a in _inputs(n))
    if offset:                       # the flush starts inside a step
        x = x * 1.0
        y = y + 0.0
    return lambda: fn(x, y, z, ps.asarray(np.asarray(rho)), steps)


@pytest.mark.parametrize("offset", [0, 1])
def test_small_array_loop_is_cut_at_its_steps(offset):
    """40 RK4 steps (2,840 ops) on 1,000 elements: one step a kernel (71 ops), all of one
    source but the first and last, wherever in a step the flush starts -- cut at 128 ops
    alone they were 23 kernels, nearly each a different source to compile."""
    ks = _kernels(lambda: _record(lambda *a: _rk4(None, *a), 1000, 40, offset)())
    sizes = [len(k.ops) for k in ks]
    assert max(sizes) <= 128
    assert 38 <= len(ks) <= 42
    assert sizes.count(71) >= 37
    assert len({k.source for k in ks}) <= 4


def test_small_spaces_hold_few_iterations_large_ones_fill_the_cap():
    """The Euler step is 14 ops: two steps (28 ops) a kernel on 1,000 elements, nine (126
    ops) on 300,000, where a kernel boundary costs a store and a load of the state."""
    ks = _kernels(lambda: _record(_euler, 1000, 60)())
    sizes = [len(k.ops) for k in ks]
    assert sizes.count(28) >= 26 and max(sizes) <= 32
    assert len({k.source for k in ks}) <= 4
    ks = _kernels(lambda: _record(_euler, 300_000, 60)())
    sizes = [len(k.ops) for k in ks]
    assert sizes.count(126) >= 5 and max(sizes) <= 128
    assert len({k.source for k in ks}) <= 4
    # the bound follows the setting (a trace-key setting)
    ks = _kernels(lambda: _record(_euler, 1000, 60)(), loop_kernel_elements=1)
    assert [len(k.ops) for k in ks].count(126) >= 5


def test_a_chain_that_does_not_repeat_still_fuses_fully():
    """A long chain over a large space with no repeated body (its ops in a random order):
    kernels of the full cap, as before."""
    pattern = np.random.default_rng(5).integers(0, 4, 200)

    def build():
        x = ps.asarray(np.random.default_rng(1).random(300_000))
        y = x
        for r in pattern:
            if r == 0:
                y = y + 1.0
            elif r == 1:
                y = ps.sqrt(y)
            elif r == 2:
                y = y * x
            else:
                y = y - x
        return y
    assert [len(k.ops) for k in _kernels(build)] == [128, 72]
    assert [len(k.ops) for k in _kernels(build, max_kernel_ops=64)] == [64, 64, 64, 8]


def test_max_kernel_ops_bounds_cpu_kernels():
    def build():
        x = ps.asarray(np.arange(1000.0))
        for _ in range(50):
            x = x * 0.5 + 1.0
        return x
    assert [len(k.ops) for k in _kernels(build)] == [100]
    assert max(len(k.ops) for k in _kernels(build, max_kernel_ops=16)) <= 16


@pytest.mark.parametrize("n", [1000, 300_000])
def test_loop_results_match_numpy(n, stats):
    """A threshold flush inside a long loop, run (compiled): NumPy's values."""
    x, y, z, rho = _inputs(n, seed=3)
    ref = _euler(x, y, z, rho, 320)
    ps.reset_stats()
    with ps.config.override(queue_threshold=1500):
        out = _euler(*(ps.asarray(a) for a in (x, y, z, rho)), 320)
        got = [np.asarray(a) for a in out]
    st = stats()
    assert st["flushes"] >= 3
    for g, r in zip(got, ref):
        np.testing.assert_allclose(g, r, rtol=1e-12, atol=0)
    if n == 1000:
        x, y, z, rho = _inputs(n, seed=4)
        ref = _rk4(np, x, y, z, rho, 60)
        got = [np.asarray(a) for a in _rk4(ps, *(ps.asarray(a) for a in (x, y, z, rho)), 60)]
        for g, r in zip(got, ref):
            np.testing.assert_allclose(g, r, rtol=1e-12, atol=0)
