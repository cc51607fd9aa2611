"""The CONTRIBUTING.md recipes, each done from one place: a backend is its Backend descriptor
and its entry in registry.BACKENDS; a fusion pass is a function in passes.PASSES."""
import numpy as np

import streamrt as ps
from streamrt.backends import devices, numba_cpu, registry
from streamrt.backends.base import Backend
from streamrt.backends.numba_cpu.executor import CPUExecutor
from streamrt.compiler import fusion, passes
from streamrt.core import config


class ToyExecutor(CPUExecutor):
    """A toy backend's executor: the CPU's, under its own name."""
    name = "toy"


def test_a_backend_is_its_descriptor_and_one_registry_entry(stats, monkeypatch):
    monkeypatch.setattr(config, "FLAGS", dict(config.FLAGS))      # (its setting, undone after)
    monkeypatch.setattr(devices, "_found", None)
    toy = Backend("toy", ToyExecutor, caps=dict(numba_cpu.BACKEND.caps, max_ops=2),
                  dtypes=(np.float32, np.float64),
                  discover=lambda: [{"backend": "toy", "name": "Toy", "available": True}],
                  settings={"toy_level": config.Flag("STREAMRT_TOY_LEVEL", 3, int,
                                                     "a toy backend's own setting")})
    monkeypatch.setitem(registry.BACKENDS, "toy", toy)          # the registry line
    a = np.linspace(0, 1, 1000)
    try:
        with ps.config.override(backend="toy"):
            x = ps.asarray(a)
            y = ps.sqrt(x * 2 + 1) - x
            np.testing.assert_allclose(np.asarray(y), np.sqrt(a * 2 + 1) - a)
            assert registry.get().name == "toy" and ps.config.settings.toy_level == 3
        assert stats()["kernels_launched"] == 2             # its caps: 2 ops per kernel
        assert {"backend": "toy", "name": "Toy", "available": True} in ps.devices()
        assert "STREAMRT_TOY_LEVEL" in ps.config.describe()
    finally:
        ex = registry._instances.pop("toy", None)
        if ex is not None:
            ex.stop()


def one_op_per_kernel(f):
    """A toy pass: every element-wise op of a fused map kernel gets a kernel of its own."""
    if not f.fuse:
        return
    groups = []
    for g in f.groups:
        parts = [[p] for p in g.ops] if g.kind == "fused" and g.axes is None and \
            g.phases is None else [g.ops]
        for ops in parts:
            h = fusion.Group(g.kind, g.space, g.axes, len(groups))
            h.ops, h.phases, h.stash = list(ops), g.phases, g.stash
            groups.append(h)
    f.groups = groups
    f.gidx = {p.id: g.index for g in groups for p in g.ops}


def test_a_pass_is_a_function_in_the_pass_list(stats, monkeypatch):
    a = np.linspace(0, 1, 1000)
    x = ps.asarray(a)
    np.testing.assert_allclose(np.asarray(ps.sqrt(x * 2 + 1)), np.sqrt(a * 2 + 1))
    assert stats()["kernels_launched"] == 1
    at = passes.PASSES.index(passes.stores)      # before the store decision
    monkeypatch.setattr(passes, "PASSES", passes.PASSES[:at] + [one_op_per_kernel]
                        + passes.PASSES[at:])
    ps.clear_caches()                             # (the trace cache holds the fused sequence)
    ps.reset_stats()
    np.testing.assert_allclose(np.asarray(ps.sqrt(x * 2 + 1)), np.sqrt(a * 2 + 1))
    assert stats()["kernels_launched"] == 3
