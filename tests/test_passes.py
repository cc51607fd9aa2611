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
