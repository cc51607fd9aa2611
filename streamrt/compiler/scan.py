"""Fused scans: cumsum / cumprod with their element-wise producers in one kernel. The
scheduling pass leaves a scan as an intrinsic; ``fuse_scans`` (a pass: passes.py) then pulls
the scan's private producer tree (map ops of the scan's shape that nothing else reads) out of
their fused groups into a 'scan' program, so the producers' values never go to memory. The
backend renders it (``caps["render_scan"]``: backends/numba_cpu/scan.py)."""
from __future__ import annotations

from ..core.ops import OPS
from ..core.ir import NEW

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
