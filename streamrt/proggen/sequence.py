"""The program sequence: ProgGen's output. Programs (a fused kernel, an intrinsic call, or one
reference op), the ports they read and write, launch data and profiling weights. A pure
description: no buffers are allocated here and no device library is touched."""
from __future__ import annotations

import math

from ..ops import OPS, REDUCTIONS


class Program:
    __slots__ = ("kind", "ops", "kernel", "inputs", "outputs", "source", "fn", "table",
                 "partials", "weights", "seq", "stored", "executor")

    def __init__(self, kind, ops, inputs, outputs, kernel=None, stored=frozenset()):
        self.kind = kind            # 'kernel' | 'intrinsic' | 'refop'
        self.ops = ops              # ports computed here, in order
        self.kernel = kernel        # proggen.kernel.Kernel for 'kernel'
        self.inputs = inputs        # ports read (views included)
        self.outputs = outputs      # ports written (buffers allocated by the E-Scheduler)
        self.stored = stored        # ids of ports that must be written (for splitting)
        self.source = self.fn = self.table = self.partials = None
        self.weights = weights(ops)
        self.seq = None
        self.executor = None

    def deps(self):
        """Ports whose completion this program waits for (view reads wait for the base)."""
        out = []
        for i in self.inputs:
            b = i.inputs[0] if i.kind == "view" else i
            if b.kind not in ("const", "scalar"):
                out.append(b)
        return out

    def sites(self):
        return [p.site for p in self.ops if p.site is not None]

    def describe(self):
        names = ", ".join(f"{p.op}@{p.site}" for p in self.ops[:12])
        more = f" (+{len(self.ops) - 12} more)" if len(self.ops) > 12 else ""
        return f"{self.kind}[{names}{more}]"


def cost(p):
    if p.kind == "map":
        c = OPS[p.op].cost
    elif p.kind == "reduce":
        c = 1
    else:
        c = 10
    return c * max(1, math.prod(p.shape if p.kind != "reduce" else p.inputs[0].shape))


def weights(ops):
    """Per call site, the share of this program's time attributed to it (sums to 1)."""
    tot = sum(cost(p) for p in ops) or 1
    w = {}
    for p in ops:
        w[p.site] = w.get(p.site, 0.0) + cost(p) / tot
    return w


class ProgramSequence:
    __slots__ = ("programs", "dead", "remaining", "groups", "on_done")

    def __init__(self, programs, dead, groups=None):
        self.programs = programs
        self.dead = dead
        self.remaining = len(programs)
        self.groups = groups
        self.on_done = None
