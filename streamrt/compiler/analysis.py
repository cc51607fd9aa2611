"""ProgGen backward and forward passes: work-queue entries -> live ops, consumers, stored ports."""
from __future__ import annotations

from collections import defaultdict

from ..core.ir import NEW, is_scratch
from .kernel import _space_strides, is_update


def collect(entries):
    """The new compute ports of a flush, in recording order (views included)."""
    out, seen = [], set()
    for e in entries:
        if e[0] == "compute":
            p = e[1]
            if p.state == NEW and p.id not in seen:
                seen.add(p.id)
                out.append(p)
    return out


def backward(ports):
    """Liveness: a port is live if an Array still refers to it or a live port consumes it.

    Returns (live ops in order, consumers: port id -> list of consuming ports, dead ports)."""
    consumers = defaultdict(list)
    for p in ports:
        for i in p.inputs:
            if i.state == NEW:
                consumers[i.id].append(p)
    live = {}
    for p in reversed(ports):
        live[p.id] = (not p.released) or any(live.get(c.id, False) for c in consumers[p.id])
    live_ports = [p for p in ports if live[p.id]]
    dead = [p for p in ports if not live[p.id]]
    return live_ports, consumers, dead


def forward(live_ports, consumers, group_of):
    """Which live ports must be written to memory: ports an Array still holds, ports read by
    another program, bases of views. Everything else lives in registers only. (A dead
    consumer -- a region write into an array nothing reads, frontend/pieces.py -- reads
    nothing.)"""
    stored = set()
    live = {p.id for p in live_ports}
    for p in live_ports:
        if p.kind == "view":
            stored.add(p.inputs[0].id)
            continue
        if not p.released or p.kind in ("reduce", "intrinsic"):
            stored.add(p.id)
            continue
        g = group_of.get(p.id)
        for c in consumers[p.id]:
            if c.id not in live:
                continue
            if c.kind == "view" or group_of.get(c.id) != g or \
                    (c.kind == "intrinsic" and not is_update(c)):
                stored.add(p.id)
                break
    return stored


def inplace_updates(groups, group_of, consumers, reusable=frozenset(), ops=(),
                    inlined=frozenset()):
    """Region writes that may reuse their base's buffer instead of copying it: the base was
    computed in this flush (so no earlier program can still read it) and no Array holds it
    any more, or it is one of ``reusable`` (computed earlier, and the runtime knows nothing
    else can read it any more, or that the write is meant to be seen by all its holders:
    cscheduler.reusable_bases); and every other read of it
    happens in the writing kernel at exactly the written elements (``a[1:-1] *= 2``; not
    ``u[1:-1] = u[:-2] + u[2:]``, which reads neighbours) or in a kernel that runs before it
    (programs run in sequence order on every executor that fuses region writes; an op
    ``inlined`` into its consumers is recomputed wherever they are, so it does not count as
    run before). The reads of a reusable base are
    found among ``ops`` (the flush's live ops): they come through views computed before the
    flush, which ``consumers`` does not follow."""
    out = set()
    for g in groups:
        if g.kind != "fused":
            continue
        for u in g.ops:
            if not is_update(u):
                continue
            b = u.inputs[0]
            if is_scratch(b) and b.released:
                out.add(u.id)           # a fresh uninitialised buffer only this write sees
                continue
            if u.inputs[1] is b:        # ``u[::-1] = u`` reads the base itself
                continue
            if b.id not in reusable and (not b.released or b.state != NEW or
                                         b.kind not in ("map", "intrinsic")):
                continue
            off, shape, st = u.params
            want = (off, [0 if n == 1 else s for n, s in zip(shape, st)])
            ok = True
            if b.id in reusable:
                reads = [(d, i) for d in ops for i in d.inputs
                         if (i is b or i.kind == "view" and i.inputs[0] is b) and
                         not (d is u and i is b)]
            else:
                reads = [(d, c) if c.kind == "view" else (c, b) for c in consumers[b.id]
                         if c is not u for d in (consumers[c.id] if c.kind == "view" else (c,))]
            for d, port in reads:
                gd = group_of.get(d.id)
                if gd is not None and gd < g.index and d.id not in inlined:
                    continue            # (it has run when this kernel writes)
                if gd != g.index or is_update(d) or \
                        _space_strides(port, g.space) != want:
                    ok = False
                    break
            if ok:
                out.add(u.id)
    return out
