"""The Numba rendering of a fused scan (compiler/scan.py): a loop over the non-scan indices
(prange over the first) around a sequential loop along the scan axis that evaluates the
producer expressions, accumulates and stores the running value. The source depends on
structure only (ops, dtypes, ndim, axis); the leaves are passed as broadcast strided arrays.
Also the scan program's arguments and its NumPy fallback."""
from __future__ import annotations

import numpy as np

from ..base import kernel_scalar, ref_value, run_refop
from .render import HEADER, cast, map_line, npname, scalar_params


def render(ops, leaves, p):
    """(source, function name) of the fused scan kernel."""
    nd = len(p.shape)
    ax = p.params[0]
    arrays = [i for i in leaves if i.kind != "scalar"]
    scalars = [i for i in leaves if i.kind == "scalar"]
    local = {}
    for n, i in enumerate(arrays):
        local[i.id] = (f"x{n}[IDX]", i.dtype)
    for n, s in enumerate(scalars):
        local[s.id] = (f"p{n}", s.dtype)
    body = []
    for n, q in enumerate(ops):
        body.append(map_line(q, n, local))
    root = p.inputs[0]
    dt = p.dtype
    upd = "+" if p.op == "cumsum" else "*"
    scal, scal_lines = scalar_params(scalars)
    params = [f"x{n}" for n in range(len(arrays))] + scal + ["out"]
    other = [d for d in range(nd) if d != ax]
    idx = ", ".join("j" if d == ax else f"i{d}" for d in range(nd))
    lines = ["@njit(parallel=True, nogil=True, cache=True, error_model='numpy')",
             f"def scan({', '.join(params)}):"] + ["    " + line for line in scal_lines]
    depth = 1
    for k, d in enumerate(other):
        rng = "prange" if k == 0 else "range"
        lines.append("    " * depth + f"for i{d} in {rng}(out.shape[{d}]):")
        depth += 1
    lines.append("    " * depth + f"acc = {npname(dt)}({0 if upd == '+' else 1})")
    lines.append("    " * depth + f"for j in range(out.shape[{ax}]):")
    depth += 1
    for b in body:
        lines.append("    " * depth + b.replace("[IDX]", f"[{idx}]"))
    v = cast(local[root.id][0].replace("[IDX]", f"[{idx}]"), root.dtype, dt)
    lines.append("    " * depth + f"acc = acc {upd} {v}")
    lines.append("    " * depth + f"out[{idx}] = acc")
    return HEADER + "\n" + "\n".join(lines) + "\n", "scan"


def arguments(prog):
    """The kernel's arguments: leaves broadcast to the scan's shape, scalars, the output."""
    p = prog.ops[-1]
    args = []
    for i in prog.inputs:
        if i.kind != "scalar":
            args.append(np.broadcast_to(i.host_value(), p.shape))
    for i in prog.inputs:
        if i.kind == "scalar":
            args.append(kernel_scalar(i))
    args.append(p.value.reshape(p.shape))
    return args


def run_reference(prog):
    """The same program op by op with NumPy (a kernel that would not compile)."""
    vals = {}

    def val(i):
        return vals[i.id] if i.id in vals else ref_value(i)
    for q in prog.ops[:-1]:
        vals[q.id] = run_refop(q, val)
    p = prog.ops[-1]
    p.value[...] = run_refop(p, val)
