"""ProgGen backward and forward passes: work-queue entries -> live ops, consumers, stored ports."""
from __future__ import annotations

from collections import defaultdict

from ..scheduler.workqueue import NEW


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
    another program, bases of views. Everything else lives in registers only."""
    stored = set()
    for p in live_ports:
        if p.kind == "view":
            stored.add(p.inputs[0].id)
            continue
        if not p.released or p.kind in ("reduce", "intrinsic"):
            stored.add(p.id)
            continue
        g = group_of.get(p.id)
        for c in consumers[p.id]:
            if c.kind == "view" or group_of.get(c.id) != g or c.kind == "intrinsic":
                stored.add(p.id)
                break
    return stored
