"""The compiler's pass list (compiler/passes.py) and loop plans (compiler/plan.py): the passes
run in the listed order, and the plan a kernel gets is the strategy its Numba source shows."""
import numpy as np
from helpers import compiler_caps

import streamrt as ps
from streamrt import compiler
from streamrt.compiler import passes, plan
from streamrt.runtime.workqueue import current_queue


def test_the_passes_are_a_list_run_in_order(monkeypatch):
    assert [p.__name__ for p in passes.PASSES] == [
        "liveness", "schedule", "inline_scalars", "sink_ops", "row_fuse", "stores",
        "fuse_scans", "inplace"]
    names, seen = [p.__name__ for p in passes.PASSES], []
    monkeypatch.setattr(passes, "PASSES", [
        (lambda p: (lambda f: (seen.append(p.__name__), p(f))))(p) for p in passes.PASSES])
    x = ps.asarray(np.arange(8.0))
    assert float((x * 2 + 1).sum()) == 64.0
    assert seen == names


def _kernel(build, backend="cpu"):
    """(plan, source) of the one kernel ProgGen makes of what ``build()`` records."""
    ps.sync()
    keep = build()
    seq = compiler.generate(current_queue().take(), compiler_caps(backend))
    del keep
    (prog,) = [p for p in seq.programs if p.kind == "kernel"]
    return plan.choose(prog.kernel), prog.source


def test_the_plan_names_the_loop_strategy_the_source_follows():
    x = ps.asarray(np.random.default_rng(0).random((300, 500)).astype(np.float32))
    i = ps.asarray(np.arange(100_000, dtype=np.int64))
    pl, src = _kernel(lambda: ps.sum(x * x))
    assert (pl.kind, pl.reduce) == ("reduce", "lanes") and "w0_7" in src
    pl, src = _kernel(lambda: ps.sum(ps.exp(ps.sin(x)) * ps.log(x + 1)))
    assert (pl.kind, pl.reduce) == ("reduce", "blocks") and "tbs0" in src
    pl, src = _kernel(lambda: ps.sum(i * 3))
    assert (pl.kind, pl.reduce) == ("reduce", "loop") and "tbs0" not in src \
        and "w0_7" not in src
    pl, src = _kernel(lambda: ps.sum(x * 2, axis=0))
    assert pl.column_walk and "cv0" in src
    pl, src = _kernel(lambda: ps.sum(x * 2, axis=1))
    assert not pl.column_walk and "cv0" not in src
    g = ps.random.default_rng(0)
    pl, src = _kernel(lambda: g.random(1000, dtype=np.float32) * 2)
    assert (pl.kind, pl.quads) == ("map", True) and "qq" in src
    pl, src = _kernel(lambda: ps.exp(x) / ps.sum(ps.exp(x), axis=1, keepdims=True))
    assert pl.kind == "rows" and pl.phases == ("blocks", "loop")


def test_a_loop_body_recorded_many_times_is_rendered_once_per_kernel():
    """A flush of 30 time steps of three region writes (fdtd-2d's shape) renders each of
    the three kernels at most twice (the first step's keys differ from the later ones'); the
    others are the first ones instantiated over their own
    ports (compiler._repeated_program), and each renders to the source it was given."""
    rng = np.random.default_rng(5)
    ex0, ey0, hz0 = (rng.random((40, 50)) for _ in range(3))
    renders = []

    def counting(k, pl):
        renders.append(k)
        return caps_cpu["render"](k, pl)

    caps_cpu = compiler_caps("cpu")
    ps.sync()
    with ps.config.override(eager_elements=0):
        ex, ey, hz = ps.asarray(ex0), ps.asarray(ey0), ps.asarray(hz0)
        for t in range(30):
            ey[1:, :] -= 0.5 * (hz[1:, :] - hz[:-1, :])
            ex[:, 1:] -= 0.5 * (hz[:, 1:] - hz[:, :-1])
            hz[:-1, :-1] -= 0.7 * (ex[:-1, 1:] - ex[:-1, :-1] + ey[1:, :-1] - ey[:-1, :-1])
        seq = compiler.generate(current_queue().take(), dict(caps_cpu, render=counting))
    kernels = [p for p in seq.programs if p.kind == "kernel"]
    assert len(kernels) == 90 and len(renders) == 6
    assert len({p.source for p in kernels}) <= 6
    for p in kernels:
        assert caps_cpu["render"](p.kernel, plan.choose(p.kernel))[0] == p.source
    del seq


def test_repeated_kernels_give_numpy_values():
    rng = np.random.default_rng(6)
    ex0, ey0, hz0 = (rng.random((40, 50)) for _ in range(3))
    with ps.config.override(eager_elements=0):
        for m in (np, ps):
            ex, ey, hz = m.asarray(ex0.copy()), m.asarray(ey0.copy()), m.asarray(hz0.copy())
            for t in range(20):
                ey[0, :] = float(t)
                ey[1:, :] -= 0.5 * (hz[1:, :] - hz[:-1, :])
                ex[:, 1:] -= 0.5 * (hz[:, 1:] - hz[:, :-1])
                hz[:-1, :-1] -= 0.7 * (ex[:-1, 1:] - ex[:-1, :-1] + ey[1:, :-1] - ey[:-1, :-1])
            if m is np:
                want = hz.copy()
        np.testing.assert_allclose(np.asarray(hz), want, rtol=1e-12)
