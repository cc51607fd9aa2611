"""ProgGen scheduling pass: live ops -> groups (fused kernels and non-fusible intrinsics), in an
order where every group's inputs come from earlier groups."""
from __future__ import annotations

import math

from ..core.ir import c_strides
from ..core.ops import OPS
from .kernel import is_update


class Group:
    __slots__ = ("kind", "space", "axes", "ops", "index", "phases", "stash", "chunk")

    def __init__(self, kind, space, axes, index, chunk=None):
        self.kind, self.space, self.axes, self.ops, self.index = kind, space, axes, [], index
        self.chunk = chunk      # loop_chunks: the run of loop iterations its ops belong to
        self.phases = None      # row_fuse: the ops of each phase, run one row at a time ...
        self.stash = ()         # ... and the values a later phase reads from a row buffer

    def __repr__(self):
        return f"Group#{self.index}({self.kind} space={self.space} axes={self.axes} ops={[p.op for p in self.ops]})"


def space_of(p):
    if p.kind == "reduce":
        return p.inputs[0].shape
    return p.params[1] if is_update(p) else p.shape


def axes_of(p):
    return p.params[0] if p.kind == "reduce" else None


def _accepts(g, p, max_ops, chunk=None):
    if g.kind != "fused" or len(g.ops) >= max_ops or g.chunk != chunk:
        return False
    if space_of(p) != g.space:
        return False
    if p.kind == "reduce" and g.axes is not None and g.axes != axes_of(p):
        return False
    if is_update(p) and g.axes is not None:
        return False            # region writes stay out of reduction kernels
    if p.kind == "reduce" and any(is_update(o) for o in g.ops):
        return False
    return True


def schedule(ops, fuse=True, max_ops=128, lookback=8, fuse_updates=False, chunks=None):
    """Greedy fusion in recording order. A map or reduction joins the group of its latest
    same-shape map producer (register passing), else the latest compatible group that comes
    after all its producers; intrinsics and ops with nothing to join start a new group.
    ``chunks`` (loop_chunks: port id -> run of loop iterations) keeps each group inside one
    run."""
    groups, gidx = [], {}
    chunk = None
    for p in ops:
        if p.kind == "view":
            continue
        if (p.kind == "intrinsic" and not (fuse_updates and is_update(p))) or not fuse:
            g = Group("intrinsic" if p.kind == "intrinsic" else "fused", space_of(p),
                      axes_of(p), len(groups))
            groups.append(g)
            g.ops.append(p)
            gidx[p.id] = g.index
            continue
        strict_lo, soft = 0, -1
        sp = space_of(p)
        if chunks is not None:
            chunk = chunks.get(p.id)
        for i in p.inputs:
            b = i.inputs[0] if i.kind == "view" else i
            gi = gidx.get(b.id)
            if gi is None:
                continue
            if i.kind != "view" and b.kind == "map" and i.shape == sp and \
                    not (i is p.inputs[0] and is_update(p)):
                soft = max(soft, gi)
            else:
                strict_lo = max(strict_lo, gi + 1)
        target = None
        lo = max(strict_lo, soft)
        if soft >= strict_lo and _accepts(groups[soft], p, max_ops, chunk):
            target = groups[soft]
        else:
            for gi in range(len(groups) - 1, max(lo, len(groups) - lookback, 0) - 1, -1):
                if _accepts(groups[gi], p, max_ops, chunk):
                    target = groups[gi]
                    break
        if target is None:
            target = Group("fused", sp, None, len(groups), chunk)
            groups.append(target)
        target.ops.append(p)
        if p.kind == "reduce":
            target.axes = axes_of(p)
        gidx[p.id] = target.index
    return groups, gidx


LOOP_SMALL_OPS = 32      # loop_chunks: ops of whole iterations a kernel over a small space holds


def loop_chunks(ops, max_ops, loop_elements):
    """Where a flush repeats a loop body, the runs of whole iterations its kernels may span:
    port id -> run number (for ``schedule``), or None when no op sequence repeats.

    A flush recorded inside a loop (a threshold flush: thousands of ops, no read) is one body
    of P ops over and over, starting and ending anywhere in it. Cut greedily at ``max_ops``,
    its kernels start at a different op of the body each time (P does not divide the cap):
    every kernel is a different source, each compiled -- 300 Lorenz steps on 1,000 elements
    made 34 kernels of 128 ops, 21.6 s of Numba for a loop NumPy runs in 10 ms. Cut at
    iteration boundaries instead, the kernels are alike and their source is compiled once.
    Kernels over fewer than ``loop_elements`` elements hold as many whole iterations as
    LOOP_SMALL_OPS ops allow, at least one: there a boundary (a store and a load of the
    state, and a launch) costs a few microseconds, and each op more in the kernel ~2 ms of
    compile time; larger ones hold as many iterations as ``max_ops`` allows.
    docs/decisions.md has the measurements.

    The body is found as the smallest period of the op sequence (each op's call site and
    op), over the longest prefix -- or suffix -- that repeats at least twice; its first op is
    the one where the body's least rotation starts, so the cut does not depend on where the
    flush started."""
    t = [_token(p) for p in ops if p.kind != "view"]
    if len(t) <= max_ops:
        return None                 # (fits one kernel: the trace is the unit that repeats)
    per, m = _periodic_prefix(t)
    rper, rm = _periodic_prefix(t[::-1])
    if rm > m:
        per, m, start = rper, rm, len(t) - rm
    else:
        start = 0
    if per == 0 or 2 * m < len(t):
        return None                 # no loop, or one that is not most of the flush
    base = start + _least_rotation(t[start:start + per])
    many = max(max_ops // per, 1)
    few = max(min(LOOP_SMALL_OPS, max_ops) // per, 1)
    chunks = {}
    i = 0
    for p in ops:
        if p.kind == "view":
            continue
        k = many if math.prod(space_of(p)) >= loop_elements else few
        chunks[p.id] = (i - base) // (per * k)
        i += 1
    return chunks


def _token(p):
    """An op as far as finding a loop body goes: its call site -- ordered the same in every
    process (file, the function's first line, bytecode offset) -- op and shape."""
    s = p.site
    c = getattr(s, "code", None)
    return (c.co_filename if c is not None else "", c.co_firstlineno if c is not None else 0,
            getattr(s, "lasti", -1), p.kind, str(p.op), p.shape)


def _periodic_prefix(t):
    """(smallest period, length) of the longest prefix of ``t`` made of at least two copies of
    its period (the last copy may be partial), or (0, 0): the prefix function (KMP)."""
    n = len(t)
    pi = [0] * n
    best = (0, 0)
    k = 0
    for i in range(1, n):
        x = t[i]
        while k and x != t[k]:
            k = pi[k - 1]
        if x == t[k]:
            k += 1
        pi[i] = k
        if k and 2 * k >= i + 1:            # length i+1, period i+1-k, at least twice
            best = (i + 1 - k, i + 1)
    return best


def _least_rotation(w):
    """Start of the lexicographically least rotation of ``w`` (the candidates: where its
    least element stands)."""
    n = len(w)
    lo = min(w)
    best = None
    for c in range(n):
        if w[c] != lo:
            continue
        if best is None:
            best = c
            continue
        for j in range(1, n):
            a, b = w[(c + j) % n], w[(best + j) % n]
            if a != b:
                if a < b:
                    best = c
                break
    return best


INLINE_MAX_OPS = 8       # ops of a small map kernel that may be recomputed by its consumers
INLINE_MAX_COST = 40     # ... and their summed op-table cost, when the kernel is not 0-d
INLINE_RATIO = 8         # ... whose consumers' spaces are at least this many times larger


def inline_scalars(groups, gidx, consumers):
    """Small arithmetic between reductions -- ``alpha = rr / (p @ Ap)`` in a conjugate-gradient
    step (0-d), ``sqrt(var + eps)`` per row in a layer norm -- would be a kernel of its own
    over a small space. When no Array holds any of its values and every consumer is a fused
    kernel over a (much) larger space, its ops are instead copied to the front of each
    consuming kernel, where they are recomputed per element from broadcast loads of their
    inputs (a few flops against a kernel launch and a round trip through memory). Returns
    the ids of the inlined ports (not stored: every reader computes them itself)."""
    inlined = set()
    for g in groups:
        if g.kind != "fused" or g.axes is not None or not g.ops or len(g.ops) > INLINE_MAX_OPS:
            continue
        if any(p.kind != "map" or not p.released or OPS[p.op].counter for p in g.ops):
            continue
        n = math.prod(g.space)
        if n > 1 and sum(OPS[p.op].cost for p in g.ops) > INLINE_MAX_COST:
            continue
        ids = {p.id for p in g.ops}
        # a consuming kernel recomputes these ops from their inputs: it must come after every
        # kernel computing one of them (a consumer's kernel can precede one: a loop's
        # dead 1-element chain read by a later step)
        after = max((gidx[i.id] for p in g.ops for i in p.inputs
                     if i.id not in ids and i.id in gidx), default=-1)
        targets = []
        ok = True
        for p in g.ops:
            for c in consumers[p.id]:
                if c.id in ids:
                    continue
                h = groups[gidx[c.id]] if c.id in gidx else None
                if c.kind not in ("map", "reduce") or h is None or h.kind != "fused" \
                        or h is g or len(h.space) < len(g.space) or h.index <= after \
                        or (n > 1 and math.prod(h.space) < INLINE_RATIO * n):
                    ok = False
                    break
                if h not in targets:
                    targets.append(h)
            if not ok:
                break
        if not ok or not targets:
            continue
        for h in targets:
            h.ops[:0] = g.ops
        for p in g.ops:
            gidx[p.id] = targets[0].index
            inlined.add(p.id)
        g.ops = []
    return inlined



def sink_ops(groups, gidx, consumers, max_ops=128):
    """Element-wise ops whose values are all read by one later kernel over the same space
    (and held by no Array) move into that kernel: their values then pass in registers
    instead of through memory (within one run of loop iterations: loop_chunks). Greedy
    fusion misses this when an op in between forces the consumer into a new group -- in ``2u - up + c * (roll(u, 1) + roll(u, -1) - 2u)`` the
    rolled sum is a region-written array, so ``2u - up``, recorded first, would be stored
    and read back -- and when the first ops of a loop's next step join this step's kernel
    because their input is computed there. An op moves only if the values it reads from its
    own kernel are stored anyway (held by an Array or read through a view). Inputs of a
    moved op are computed before its first kernel, so also before the later one; region
    writes that reuse a buffer in place are decided after this pass."""
    def kept(p):
        return not p.released or any(c.kind == "view" for c in consumers[p.id])

    for g in groups:
        if g.kind != "fused" or g.axes is not None or not g.ops:
            continue
        # the largest set of this kernel's element-wise ops that can move together: prune
        # until every member's readers are members or in the target kernel, and every value
        # it reads from this kernel is a member's or stored anyway
        moving = {p.id: p for p in g.ops
                  if p.kind == "map" and p.released and not OPS[p.op].counter}
        target = None
        # (a worklist: every member once, in order -- the target kernel is set there: a
        # member leaving later is one of this kernel's, never an outside reader --, then the
        # members a leaving one reads or is read by, whose checks may fail now; it was a
        # rescan of every member after each round that removed one)
        work = list(moving.values())
        k = 0
        while k < len(work):
            p = work[k]
            k += 1
            if p.id not in moving:
                continue
            ok = True
            for c in consumers[p.id]:
                if c.id in moving:
                    continue
                hc = gidx.get(c.id)
                if hc is None and c.kind != "view":
                    continue                    # a dead op: reads nothing
                if c.kind == "view" or hc <= g.index or \
                        (target is not None and hc != target):
                    ok = False
                    break
                t = groups[hc]
                if t.kind != "fused" or t.space != g.space or t.chunk != g.chunk:
                    ok = False
                    break
                target = hc
            if ok:
                ok = all(gidx.get(i.id) != g.index or i.id in moving or kept(i)
                         for i in p.inputs)
            if not ok:
                del moving[p.id]
                work.extend(q for q in p.inputs if q.id in moving)
                work.extend(c for c in consumers[p.id] if c.id in moving)
        if not moving or target is None or \
                len(groups[target].ops) + len(moving) > max_ops:
            continue
        ops = [p for p in g.ops if p.id in moving]
        g.ops = [p for p in g.ops if p.id not in moving]
        groups[target].ops[:0] = ops
        for p in ops:
            gidx[p.id] = target


ROW_MIN_ROWS = 64          # row_fuse: rows (one task each) to keep every thread busy ...
ROW_MAX_LEN = 1 << 15      # ... and a row short enough to stay in cache between its phases
ROW_RECOMPUTE_COST = 48    # summed op-table cost an earlier phase's values may be recomputed at
ROW_STASH_COST = 8         # an op at least this costly (exp, log, ...) is kept in a row buffer


def row_fuse(groups, gidx, consumers, max_ops=128):
    """Row reductions and the kernels that use their per-row results -- softmax's row max,
    exp-and-sum and divide; layer norm's mean, variance and normalise -- are consecutive
    kernels over one space, each reading the whole array again. They merge into one kernel
    whose phases run one row at a time (proggen/render_numba.py ``render_rows``): a phase's
    reductions are per-row locals for the next; an element-wise value an earlier phase
    computed is recomputed from the row, which is still in cache, or -- a transcendental
    function, softmax's ``exp`` -- kept in a per-thread row buffer (``stash``) between the
    phases; it is not stored.

    A chain starts at a kernel reducing the last axis of a space of 2+ dims (ROW_MIN_ROWS
    rows or more, at most ROW_MAX_LEN long) and takes each following kernel over the same
    space that reduces the same axis or is element-wise (that one ends it), as long as every
    value it reads from the chain is a reduction kept as a column (``keepdims``, or a column
    view of it: ``m[:, None]``) or an element-wise value cheap enough to recompute.
    Argmax/argmin, counter-based RNG ops, region writes and other views stay out."""

    def plain(g):
        if g.kind != "fused" or not g.ops or len(g.space) < 2:
            return False
        for p in g.ops:
            if p.kind == "reduce" and p.op in ("argmax", "argmin"):
                return False
            if p.kind not in ("map", "reduce") or (p.kind == "map" and OPS[p.op].counter):
                return False
            for c in consumers[p.id]:
                if c.kind == "intrinsic" or (c.kind == "view" and not (
                        p.kind == "reduce" and column_view(c, g.space))):
                    return False
        return True

    i = 0
    while i < len(groups):
        g = groups[i]
        nd = len(g.space)
        if not plain(g) or g.axes != (nd - 1,) or \
                math.prod(g.space[:-1]) < ROW_MIN_ROWS or g.space[-1] > ROW_MAX_LEN:
            i += 1
            continue
        col = g.space[:-1] + (1,)
        chain, phases, stash = [g], [sorted(g.ops, key=_pid)], {}
        owner = {p.id: 0 for p in g.ops}          # the phase that computes each value
        total = len(g.ops)
        j = i + 1
        while j < len(groups):
            h = groups[j]
            if not h.ops:
                j += 1
                continue
            if not plain(h) or h.space != g.space or h.axes not in (None, g.axes) or \
                    h.chunk != g.chunk:
                break
            redo, keep, ok = {}, {}, True
            own = {p.id for p in h.ops}
            stack = [x for p in h.ops for x in p.inputs]
            while stack and ok:
                x = stack.pop()
                if _base(x).id not in owner or x.id in redo or x.id in keep or x.id in own:
                    continue
                if x.kind == "reduce":
                    ok = x.shape == col
                elif x.kind == "view":
                    ok = x.inputs[0].kind == "reduce" and column_view(x, g.space)
                elif x.shape == g.space and (OPS[x.op].cost >= ROW_STASH_COST
                                             or x.id in stash):
                    keep[x.id] = x
                else:
                    redo[x.id] = x
                    stack.extend(x.inputs)
            if not ok or not any(_base(x).id in owner for p in h.ops for x in p.inputs):
                break
            cost = sum(OPS[x.op].cost for x in redo.values())
            if cost > ROW_RECOMPUTE_COST or total + len(h.ops) + len(redo) > max_ops:
                break
            chain.append(h)
            stash.update(keep)
            phase = {p.id: p for p in h.ops}
            phase.update(redo)
            phases.append(sorted(phase.values(), key=_pid))
            for p in h.ops:
                owner.setdefault(p.id, len(phases) - 1)
            total += len(h.ops) + len(redo)
            j += 1
            if h.axes is None:
                break                           # an element-wise kernel ends the chain
        if len(chain) < 2:
            i += 1
            continue
        last = chain[-1]
        ops = {}
        for ph in phases:
            for p in ph:
                ops.setdefault(p.id, p)
        for h in chain[:-1]:
            h.ops = []
        last.ops = sorted(ops.values(), key=_pid)
        last.axes = g.axes
        last.phases = phases
        last.stash = sorted(stash.values(), key=_pid)
        for p in last.ops:
            gidx[p.id] = last.index
        i = j


def _pid(p):
    return p.id


def _base(x):
    return x.inputs[0] if x.kind == "view" else x


def column_view(v, space):
    """Whether view ``v`` of a reduction is its per-row result as a column of ``space``
    (``m[:, None]``, ``m.reshape(-1, 1)`` of a ``keepdims=False`` reduction over the last
    axis): the same elements in the same order, shaped ``space[:-1] + (1,)``."""
    b = v.inputs[0]
    off, st = v.params
    if v.shape != tuple(space[:-1]) + (1,) or off != 0 or v.size != b.size:
        return False
    return [s for n, s in zip(v.shape, st) if n != 1] == \
        [s for n, s in zip(b.shape, c_strides(b.shape)) if n != 1]
