"""A failed compile is decided once (issue 26, item 6): with a compile failure injected (the
module written for a kernel calling sqrt names a NumPy function that does not exist, a real
Numba failure), each failing kernel is compiled once, split or evaluated by NumPy, and the
failure is remembered in memory (the trace-cache hits of later iterations compile nothing,
and no direct plan calls it: the small-array path raised a raw error on its 2nd iteration)
and on disk (a .failed marker: the next process does not try again)."""
import json
import os
import subprocess
import sys

import pytest

import streamrt as ps
from helpers import child_env

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(ps.__file__)))

CHILD = r"""
import json, sys
import numpy as np
import streamrt as ps
from streamrt.backends.numba_cpu import program_cache
orig = program_cache.module_text
program_cache.module_text = lambda source, fn: orig(source, fn).replace(
    "np.sqrt(", "np.sqrt_injected_failure(")
out = {"errors": [], "exact": True}
for n in (1000, 300_000):               # the small-array (inline, direct) and the large path
    x = np.linspace(1, 2, n)
    a = ps.asarray(x)
    for i in range(5):
        try:
            r = float(ps.sum(ps.sqrt(a) * 2 + a))
            out["exact"] &= abs(r - float(np.sum(np.sqrt(x) * 2 + x))) < 1e-9 * n
        except Exception as e:
            out["errors"].append(f"{type(e).__name__}: {e}"[:300])
st = ps.runtime_stats()
out.update({k: st[k] for k in ("compile_failures", "kernel_splits", "fallback_to_reference")})
print(json.dumps(out))
"""


def _run(cache):
    e = child_env(cache, STREAMRT_COLD_INTERPRET="0")
    e["PYTHONPATH"] = ROOT + (os.pathsep + e["PYTHONPATH"] if e.get("PYTHONPATH") else "")
    p = subprocess.run([sys.executable, "-c", CHILD], env=e, capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    return json.loads(p.stdout.strip().splitlines()[-1])


def test_a_failed_compile_is_remembered(tmp_path):
    first = _run(tmp_path)
    markers = [f for f in os.listdir(tmp_path / "numba") if f.endswith(".failed")]
    second = _run(tmp_path)
    print(f"\ninjected compile failure, 2 sizes x 5 iterations: {first['compile_failures']} "
          f"compile failures ({len(markers)} failing kernels), {first['kernel_splits']} "
          f"splits; the next process: {second['compile_failures']} failures")
    for out in (first, second):
        assert out["errors"] == [] and out["exact"]
    assert first["compile_failures"] == len(markers) >= 1     # once per failing kernel
    assert second["compile_failures"] == 0
