"""Planning fused kernels over chunks (client side): the row bounds a kernel's space is cut
at, each chunk's kernel (shadow ports over the chunk's rows, its index table rendered
again), and the grouping of consecutive kernels whose chunks line up row for row into one
task per chunk (``Group``)."""
from __future__ import annotations

import math

import numpy as np

from ..core import stats
from ..core.ir import Port
from ..compiler import plan
from ..compiler.kernel import build_kernel
from ..backends.base import kernel_scalar
from ..backends.numba_cpu import render as render_numba
from .values import DistValue, _extent
from .worker import Local, run_group


def _value(b):
    v = b.value
    if isinstance(v, (np.ndarray, DistValue)):
        return v
    return v.host() if hasattr(v, "host") else np.asarray(v)


def _rows(b, b0, b1, whole):
    """Pieces of base port ``b`` covering rows [b0, b1) (all of it when ``whole``)."""
    v = _value(b)
    if isinstance(v, DistValue):
        if v.bounds is None or whole:
            return [(f, it, None, None) for f, it in v.refs]
        out = []
        for i, (f, it) in enumerate(v.refs):
            c0, c1 = v.bounds[i], v.bounds[i + 1]
            if c0 < b1 and c1 > b0:
                lo, hi = max(b0, c0) - c0, min(b1, c1) - c0
                out.append((f, it, None if (lo == 0 and hi == c1 - c0) else lo,
                            None if (lo == 0 and hi == c1 - c0) else hi))
        return out
    if whole or not v.shape:
        return [(v, None, None, None)]
    return [(np.ascontiguousarray(v[b0:b1]), None, None, None)]


def space_bounds(k):
    """Row bounds of the kernel's iteration space along axis 0: those of its most chunked
    distributed input read row-for-row (shifted by the view's row offset), else an even split
    into as many chunks as its most chunked input has; None for a 0-d space."""
    S = k.space
    if not S:
        return None
    S0 = S[0]
    best, most = None, 1
    for a in k.loads:
        v = a.port
        B, off, st = v.base_view()
        val = _value(B)
        if not isinstance(val, DistValue) or val.bounds is None:
            continue
        most = max(most, val.nchunks)
        if len(v.shape) != len(S) or v.shape[0] != S0 or not B.shape:
            continue
        R = math.prod(B.shape[1:])
        if R == 0 or st[0] != R:
            continue
        c = off // R
        b = sorted({min(max(x - c, 0), S0) for x in val.bounds} | {0, S0})
        if best is None or len(b) > len(best):
            best = b
    if best is None:
        n = max(1, min(most, S0))
        best = sorted({int(x) for x in np.linspace(0, S0, n + 1)})
    return best


def _local_shape(shape, S, n):
    if len(shape) == len(S) and shape and shape[0] == S[0]:
        return (n,) + tuple(shape[1:])
    return tuple(shape)


def plan_chunk(prog, r0, r1, partial, rows=None):
    """The kernel of ``prog`` restricted to space rows [r0, r1): (local kernel, pieces of each
    local base, base of each load, argmax index shifts). Loads of one base share one local
    buffer (the union of the rows they read: a stencil's shifted slices share their halo)."""
    k = prog.kernel
    S = k.space
    n = r1 - r0
    # rows of each base every load needs
    need = {}
    for a in k.loads:
        v = a.port
        B, off, st = v.base_view()
        whole = (len(v.shape) != len(S) or v.shape[0] != S[0] or not B.shape or st[0] == 0
                 or math.prod(B.shape[1:]) == 0)
        if whole:
            need[B.id] = (B, None)
            continue
        R = math.prod(B.shape[1:])
        lo, hi = _extent(off + r0 * st[0], (n,) + tuple(v.shape[1:]), st)
        rng = (lo // R, hi // R + 1)
        old = need.get(B.id)
        if old is None:
            need[B.id] = (B, rng)
        elif old[1] is not None:
            need[B.id] = (B, (min(old[1][0], rng[0]), max(old[1][1], rng[1])))
    shadow, bases, base_ix = {}, [], {}
    for bid, (B, rng) in need.items():
        b0, b1 = (0, B.shape[0] if B.shape else 0) if rng is None else rng
        shape = tuple(B.shape) if rng is None else (b1 - b0,) + tuple(B.shape[1:])
        sb = Port("const", "const", B.dtype, shape)
        base_ix[sb.id] = len(bases)
        bases.append((rows or _rows)(B, b0, b1, rng is None))
        shadow[("base", bid)] = (sb, b0 * math.prod(B.shape[1:]) if rng is not None else 0)
    for a in k.loads:
        v = a.port
        B, off, st = v.base_view()
        sb, shift = shadow[("base", B.id)]
        lshape = _local_shape(v.shape, S, n) if need[B.id][1] is not None else tuple(v.shape)
        loff = off - shift + (r0 * st[0] if need[B.id][1] is not None else 0)
        if v.kind != "view" and loff == 0 and lshape == sb.shape:
            shadow[v.id] = sb
        else:
            shadow[v.id] = Port("view", "view", v.dtype, lshape, (sb,), (int(loff), tuple(st)))
    ops, stored, shifts = [], set(), []
    for p in k.ops:
        ins = tuple(shadow.get(i.id, i) for i in p.inputs)
        if p.kind == "reduce":
            axes, keepdims, acc = p.params
            ish = ins[0].shape
            shape = tuple(1 if d in axes else s for d, s in enumerate(ish)) if keepdims else \
                tuple(s for d, s in enumerate(ish) if d not in axes)
            op, dt = p.op, p.dtype
            if partial and op not in ("argmax", "argmin"):
                op, dt = ("sum" if op == "mean" else op), acc
            q = Port("reduce", op, dt, shape, ins, p.params, p.site)
            ops.append(q)
            if partial and p.op in ("argmax", "argmin"):
                ops.append(Port("reduce", "max" if p.op == "argmax" else "min", acc, shape, ins,
                                p.params, p.site))
                shifts.append((p, r0 * math.prod(S[d] for d in axes if d != 0)))
        else:
            q = Port(p.kind, p.op, p.dtype, _local_shape(p.shape, S, n), ins, p.params, p.site,
                     scalar=p.scalar, loop_dtype=p.loop_dtype)
            ops.append(q)
            if p.id in prog.stored:
                stored.add(q.id)
        shadow[p.id] = q
    space = _local_shape(S, S, n)
    lk = build_kernel(ops, stored, space, k.axes)
    if lk.index is not None:            # counter-based RNG: the chunk's first flat element
        lk.index.off = r0 * math.prod(S[1:])
    load_base = [base_ix[a.port.base_view()[0].id] for a in lk.loads]
    return lk, bases, load_base, shifts, shadow, need


class Group:
    """Kernels of one sequence that run chunk by chunk in the same tasks."""

    def __init__(self, ex, es, readers):
        self.ex, self.es, self.readers = ex, es, readers
        self.index = 0
        self._reset()

    def _reset(self):
        self.progs, self.bounds, self.chunks = [], None, None
        self.steps = None           # per chunk: list of step tuples
        self.out = {}               # port id -> output index in the step list (chunk-local)
        self.ports = []             # (port, output index) of every output, in order
        self.nout = 0
        self.partial = None         # (program, first partial slot) of a closing reduction
        self.closed = False
        self.plans = {}

    def _plan(self, prog):
        """Per-chunk plans of ``prog`` (cached), with pieces produced in this group local."""
        got = self.plans.get(prog)
        if got is not None:
            return got
        k = prog.kernel
        bounds = space_bounds(k)
        chunks = list(zip(bounds[:-1], bounds[1:])) if bounds and len(bounds) > 2 else [None]
        partial = len(chunks) > 1 and 0 in k.axes

        def rows(B, b0, b1, whole):
            j = self.out.get(B.id)
            if j is not None:
                return [(Local(j), None, None, None)]
            return _rows(B, b0, b1, whole)
        plans = []
        for c in chunks:
            if c is None:
                lk, shifts = k, []
                source, fn, table, partials = prog.source, prog.fn, prog.table, prog.partials
                bases, load_base, bix = [], [], {}
                for a in k.loads:
                    B = a.port.base_view()[0]
                    if B.id not in bix:
                        bix[B.id] = len(bases)
                        bases.append(rows(B, 0, 0, True))
                    load_base.append(bix[B.id])
                need = {}
            else:
                lk, bases, load_base, shifts, shadow, need = plan_chunk(prog, c[0], c[1],
                                                                        partial, rows)
                source, fn, table, partials = render_numba.render(lk, plan.choose(lk))
                shifts = [(lk.reductions.index(shadow[p.id]), s) for p, s in shifts]
            step = (source, fn, table, bases, load_base,
                    [(a.port.shape, a.port.dtype) for a in lk.stores],
                    [kernel_scalar(s) for s in lk.scalars],
                    [(r.shape, r.dtype) for r in lk.reductions], partials,
                    math.prod(lk.kept) if lk.kept else 1, shifts)
            plans.append((c, step, need, len(lk.stores), len(lk.reductions)))
        got = (bounds, chunks, partial, plans)
        self.plans = {prog: got}
        return got

    def joinable(self, prog):
        if not self.progs:
            return True
        if self.closed:
            return False
        bounds, chunks, partial, plans = self._plan(prog)
        if chunks != self.chunks:
            return False
        if chunks == [None]:
            return True
        for c, _, need, _, _ in plans:
            for bid, (B, rng) in need.items():
                if bid in self.out and rng != c:
                    return False
        return True

    def add(self, prog):
        bounds, chunks, partial, plans = self._plan(prog)
        if not self.progs:
            self.bounds, self.chunks = bounds, chunks
            self.steps = [[] for _ in chunks]
        k = prog.kernel
        first = self.nout
        for ci, (c, step, _, nst, nred) in enumerate(plans):
            self.steps[ci].append(step)
        nst, nred = plans[0][3], plans[0][4]
        sites = prog.sites()
        sb = bounds if len(chunks) > 1 else (None if not k.space else [0, k.space[0]])
        for j, a in enumerate(k.stores):
            a.port.value = DistValue(a.port.shape, a.port.dtype, sb, None, sites)
            self.out[a.port.id] = first + j
            self.ports.append((a.port, first + j))
        if partial:
            self.partial = (prog, first + nst)
            self.closed = True
            for r in k.reductions:
                r.value = DistValue(r.shape, r.dtype, None if not r.shape else [0, r.shape[0]],
                                    None, sites)
        else:
            for j, r in enumerate(k.reductions):
                rb = None if not r.shape else (sb if len(chunks) > 1 else [0, r.shape[0]])
                r.value = DistValue(r.shape, r.dtype, rb, None, sites)
                self.out[r.id] = first + nst + j
                self.ports.append((r, first + nst + j))
        self.nout = first + nst + nred
        self.progs.append(prog)
        self.plans = {}
        stats.add("dask_kernel_steps", len(chunks))

    def drop(self, prog):
        if prog in self.progs:
            self._reset()

    def flush(self, settle=True):
        if not self.progs:
            return
        keep = []
        for p, j in self.ports:
            rd = self.readers.get(p.id, ())
            if p.nrefs > 0 or any(i >= self.index for i in rd) or not self.readers:
                keep.append(j)
        nslots = 0
        if self.partial is not None:
            pprog, first = self.partial
            nslots = sum(2 if r.op in ("argmax", "argmin") else 1
                         for r in pprog.kernel.reductions)
            keep.extend(range(first, first + nslots))
        keep = sorted(set(keep))
        at = {j: q for q, j in enumerate(keep)}
        single = len(keep) == 1
        futs = [self.ex._submit(run_group, steps, keep) for steps in self.steps]
        for p, j in self.ports:
            v = p.value
            if j in at:
                v.refs = [(f, None if single else at[j]) for f in futs]
            else:
                v.refs = []          # released and read only inside the group: never kept
        if self.partial is not None:
            pprog, first = self.partial
            k = pprog.kernel
            specs = []
            for r in k.reductions:
                axes, _, _ = r.params
                count = math.prod(k.space[d] for d in axes)
                specs.append((r.op, 2 if r.op in ("argmax", "argmin") else 1, r.dtype, count))
            pos = [at[j] for j in range(first, first + nslots)]
            root = self.ex._combine_tree(futs, specs, pos, nslots)
            one = len(k.reductions) == 1
            for j, r in enumerate(k.reductions):
                r.value.refs = [(root, None if one else j)]
        progs = self.progs
        self._reset()
        for prog in progs:
            stats.add("kernels_launched")
            if settle:
                self.es._settle(prog, None)
