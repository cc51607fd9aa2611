"""The program sequence: ProgGen's output. Programs (a fused kernel, an intrinsic call, or one
reference op), the ports they read and write, launch data and profiling weights. A pure
description: no buffers are allocated here and no device library is touched."""
from __future__ import annotations

import math

import numpy as np

from ..core.ops import OPS
from ..core.ir import dying_buffer, is_scratch
from .kernel import Access, Kernel, index_table

LAZY_TABLE = object()   # Program.table: built from the kernel at first use


class Program:
    __slots__ = ("kind", "ops", "kernel", "inputs", "outputs", "source", "fn", "_table",
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

    @property
    def table(self):
        """The kernel's index table (sizes, offsets, strides: kernel.index_table), an int64
        array; built at first use where ``compiler.reshape`` left it to be (LAZY_TABLE): a
        kernel that runs interpreted never reads it."""
        t = self._table
        if t is LAZY_TABLE:
            t = self._table = np.array(index_table(self.kernel, "")[0], dtype=np.int64)
        return t

    @table.setter
    def table(self, t):
        self._table = t

    def bases(self):
        """The ports whose buffers this program reads (a view's base), each once."""
        seen = {}
        for i in self.inputs:
            b = i.inputs[0] if i.kind == "view" else i
            if b.kind != "scalar":
                seen[b.id] = b
        return seen.values()

    def deps(self):
        """Ports whose completion this program waits for (view reads wait for the base)."""
        return [b for b in self.bases() if b.kind != "const"]

    def sites(self):
        return [p.site for p in self.ops if p.site is not None]

    def describe(self):
        names = ", ".join(f"{p.op}@{p.site}" for p in self.ops[:12])
        more = f" (+{len(self.ops) - 12} more)" if len(self.ops) > 12 else ""
        return f"{self.kind}[{names}{more}]"


def elements(prog):
    """The size of a program's work: its kernel's space, else its largest array."""
    k = prog.kernel
    if k is not None:
        return k.elements
    return max([i.size for i in prog.inputs] + [o.size for o in prog.outputs] + [0])


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
    __slots__ = ("programs", "dead", "remaining", "groups", "on_done", "timing", "transient",
                 "elidable", "owner", "cancelled")

    def __init__(self, programs, dead, groups=None):
        self.programs = programs
        self.dead = dead
        self.remaining = len(programs)
        self.groups = groups
        self.on_done = None
        self.timing = None          # scheduler/placement.py: run time of an auto-placed sequence
        self.transient = None       # {port id: [port, readers left]} (see mark_transient)
        self.elidable = None        # ids of the transient constants (see mark_transient)
        self.owner = None           # the thread that submitted it (its ident)
        self.cancelled = None       # the CancelledError its programs not started yet get

    def mark_transient(self):
        """Called at the flush, while the work queue is locked: the buffers this sequence
        writes (and the scratch buffers it fills) whose arrays the application has already
        released. Only this sequence's programs can read them -- nothing recorded later can
        name them -- so each is dropped as soon as its last reader here has run, instead of
        living until the whole sequence completes (a 32-step wave loop: ~130 buffers of 32 MB
        alive at once, and fresh pages faulted in at every run). Constants nothing else can
        read (core/ir.py ``dying_buffer``: ``np.outer(a, b)`` in ``A + np.outer(a, b)``) are
        transient too, and ``elidable``: their last reader may compute into them."""
        made = set()
        for prog in self.programs:
            for p in prog.outputs:
                if p.nrefs <= 0 and p.kind != "view":
                    made.add(p.id)
        out = {}
        for prog in self.programs:
            for b in prog.bases():
                if b.id in out or b.id in made or is_scratch(b) and b.nrefs <= 0 or \
                        dying_buffer(b):
                    e = out.get(b.id)
                    if e is None:
                        out[b.id] = [b, 1]
                        if b.kind == "const" and not is_scratch(b):
                            # a temporary computed before (core/ir.py dying_buffer): its
                            # last reader may write into it (CPUExecutor._interpret)
                            if self.elidable is None:
                                self.elidable = set()
                            self.elidable.add(b.id)
                    else:
                        e[1] += 1
        self.transient = out or None

    def done_reading(self, prog):
        """``prog`` has run (or failed): drop the transient buffers it was the last to read."""
        t = self.transient
        if t is None:
            return
        for b in prog.bases():
            e = t.get(b.id)
            if e is not None:
                e[1] -= 1
                if e[1] == 0:
                    del t[b.id]
                    b.value = None


# ---- templates: a program sequence with its ports replaced by key numbers --------------------
# The trace and macro caches keep templates, not sequences: a template holds no port (so no
# buffer stays alive through a cache) and is instantiated for new ports in one pass.

class Template:
    __slots__ = ("programs", "dead", "n", "sites", "direct", "generic", "signatures")

    def __init__(self, programs, dead, n, sites):
        self.programs, self.dead, self.n, self.sites = programs, dead, n, sites
        self.direct = None      # executors/direct.py: None (not tried), False or a TracePlan
        self.signatures = None  # compiler.reshape: each kernel's signature, once
        # whether compiler.reshape can re-derive it for other sizes: no scan and no row
        # kernel (their structure is chosen from sizes it does not re-check)
        self.generic = all(kind in ("kernel", "intrinsic", "refop") and (kt is None or not kt[10])
                           for kind, _, _, _, _, kt, *_ in programs)


def to_template(seq, kports):
    """The template of ``seq`` over the numbered ports ``kports``; None if ``seq`` refers to a
    port outside them (then the trace is not cached)."""
    num = {p.id: i for i, p in enumerate(kports)}

    def ix(ps):
        return tuple(num[p.id] for p in ps)

    try:
        progs = []
        for pr in seq.programs:
            k = pr.kernel
            kt = None
            if k is not None:
                kt = (ix(k.ops), k.space, k.axes, k.kept, k.red,
                      tuple((num[a.port.id], a.role, a.off, a.kept, a.red) for a in k.loads),
                      tuple((num[a.port.id], a.role, a.off, a.kept, a.red) for a in k.stores),
                      ix(k.reductions), ix(k.scalars),
                      None if k.index is None else (k.index.kept, k.index.red), k.phases, k.stash)
            stored = tuple(num[i] for i in pr.stored if i in num)
            progs.append((pr.kind, ix(pr.ops), ix(pr.inputs), ix(pr.outputs), stored, kt,
                          pr.source, pr.fn, pr.table, pr.partials, pr.weights))
        dead = ix(seq.dead)
    except KeyError:
        return None
    return Template(tuple(progs), dead, len(kports), [p.site for p in kports])


def instantiate(t, ports):
    """A fresh ProgramSequence for ``ports`` (numbered as the template's were)."""
    programs = []
    for kind, ops, ins, outs, stored, kt, source, fn, table, partials, w in t.programs:
        pr = Program.__new__(Program)
        pr.kind = kind
        pr.ops = [ports[i] for i in ops]
        pr.inputs = [ports[i] for i in ins]
        pr.outputs = [ports[i] for i in outs]
        pr.stored = frozenset(ports[i].id for i in stored)
        if kt is not None:
            kops, space, axes, kept, red, loads, stores, reds, scal, kidx, phases, stash = kt
            pr.kernel = Kernel([ports[i] for i in kops], space, axes, kept, red,
                               [Access(ports[i], r, o, a, b) for i, r, o, a, b in loads],
                               [Access(ports[i], r, o, a, b) for i, r, o, a, b in stores],
                               [ports[i] for i in reds], [ports[i] for i in scal],
                               None if kidx is None else Access(None, "idx", 0, *kidx), phases,
                               stash)
        else:
            pr.kernel = None
        pr.source, pr.fn, pr.table, pr.partials, pr.weights = source, fn, table, partials, w
        pr.seq = None
        pr.executor = None
        programs.append(pr)
    return ProgramSequence(programs, [ports[i] for i in t.dead])
