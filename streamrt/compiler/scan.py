"""Fused scans on the CPU: cumsum / cumprod with their element-wise producers in one Numba
kernel. ProgGen's scheduling pass leaves a scan as an intrinsic; ``fuse_scans`` then pulls
the scan's private producer tree (map ops of the scan's shape that nothing else reads) out of
their fused groups into a 'scan' program, so the producers' values never go to memory.
``render`` writes the kernel: a loop over the non-scan indices (prange over the first) around
a sequential loop along the scan axis that evaluates the producer expressions, accumulates
and stores the running value. The source depends on structure only (ops, dtypes, ndim,
axis); the leaves are passed as broadcast strided arrays."""
from __future__ import annotations

import numpy as np

from ..core.ops import OPS
from ..core.ir import NEW
from ..backends.numba_cpu.render import HEADER, cast, map_line, npname, scalar_params

SCANS = ("cumsum", "cumprod")


def _member(q, p, group_of):
    """May map port ``q`` be computed inside scan ``p``'s kernel? Not a counter-based RNG op:
    the scan kernel has no flat element index."""
    return (q.kind == "map" and q.shape == p.shape and q.released and q.id in group_of
            and q.state == NEW and not OPS[q.op].counter)


def _tree(p, consumers, group_of):
    """The map ops computing ``p``'s input that only the scan (or each other) read: (ops in
    recording order, root) or None."""
    root = p.inputs[0]
    if not _member(root, p, group_of):
        return None
    tree, todo = {}, [root]
    while todo:
        q = todo.pop()
        if q.id in tree:
            continue
        tree[q.id] = q
        for i in q.inputs:
            if _member(i, p, group_of):
                todo.append(i)
    # every member's consumers must be inside the tree (or the scan itself)
    changed = True
    while changed:
        changed = False
        for qid, q in list(tree.items()):
            if q is root:
                continue
            if any(c.id not in tree for c in consumers.get(qid, ())):
                del tree[qid]
                changed = True
        # members whose only route to the root went through a removed member are still
        # valid (they are leaves' producers): recomputed below by reachability
        reach, todo = set(), [root]
        while todo:
            q = todo.pop()
            if q.id in reach or q.id not in tree:
                continue
            reach.add(q.id)
            todo.extend(q.inputs)
        for qid in list(tree):
            if qid not in reach:
                del tree[qid]
                changed = True
    if any(c.id != p.id for c in consumers.get(root.id, ())):
        return None
    return sorted(tree.values(), key=lambda q: q.id), root


def fuse_scans(groups, gidx, consumers, stored):
    """Rewrite the scan intrinsics of ``groups`` into 'scan' groups holding their producer
    trees. Returns {scan port id: (tree ops, leaves)} and updates ``stored``."""
    out = {}
    for g in groups:
        if g.kind != "intrinsic" or g.ops[0].op not in SCANS:
            continue
        p = g.ops[0]
        if p.dtype.kind not in "iufc":
            continue
        t = _tree(p, consumers, gidx)
        if t is None:
            continue
        ops, root = t
        ids = {q.id for q in ops}
        for q in ops:
            src = groups[gidx[q.id]]
            if src.kind != "fused" or src.axes is not None:
                break
        else:
            for q in ops:
                groups[gidx[q.id]].ops.remove(q)
                gidx[q.id] = g.index
            stored.discard(root.id)
            for q in ops:
                stored.discard(q.id)
            leaves = []
            seen = set()
            for q in ops:
                for i in q.inputs:
                    if i.id not in ids and i.id not in seen:
                        seen.add(i.id)
                        leaves.append(i)
                        b = i.inputs[0] if i.kind == "view" else i
                        if b.kind not in ("const", "scalar"):
                            stored.add(b.id)
            g.kind = "scan"
            g.ops[:] = ops + [p]
            out[p.id] = (ops, leaves)
    return out


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
    from ..backends.base import kernel_scalar
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
    from ..backends.base import ref_value, run_refop
    vals = {}

    def val(i):
        return vals[i.id] if i.id in vals else ref_value(i)
    for q in prog.ops[:-1]:
        vals[q.id] = run_refop(q, val)
    p = prog.ops[-1]
    p.value[...] = run_refop(p, val)
