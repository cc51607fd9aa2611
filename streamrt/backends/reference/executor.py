"""Reference executor: a sequential NumPy interpreter, one op per program, no fusion. The oracle
of the tests and of the debugger."""
from __future__ import annotations

from ...core import stats
from ..base import Executor, ref_value, run_refop


class ReferenceExecutor(Executor):
    name = "reference"

    def launch(self, prog):
        for p in prog.ops:
            p.value[...] = run_refop(p, ref_value)
        stats.add("kernels_launched" if prog.kind == "refop" else "intrinsics_launched")
