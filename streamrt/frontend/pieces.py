"""Piecewise arrays: ``ps.roll``'s result is assembled from two region writes along one axis,
each copying a slice of the input; ``ps.concatenate``'s from one region write per input
(when every input already has the result's dtype). An element-wise op that reads such an array is recorded
piece by piece instead -- the op over each interval of the axis, reading slices of the rolled
array directly -- and its result is assembled from region writes, each fused into the kernel
of its interval. The rolled copy is then never read, and ProgGen drops it as dead: a periodic
stencil ``roll(u, 1) + roll(u, -1)`` reads ``u`` once and writes once, instead of copying
``u`` twice first (two passes over memory saved per roll).

Inputs of the op that are not piecewise are cut into the same intervals: a slice view, or,
for a small element-wise expression recorded in this flush, the expression recorded again
over slices of its inputs (recomputed in the piece's kernel instead of stored and re-read).

The assembled result is piecewise in turn (*chained*), but only for the rest of the
expression that made it: an op reads its pieces only where the operand is a temporary -- an
Array held by the caller's evaluation stack alone, told by its reference count in the operator
method, as NumPy's temporary elision does (``_TEMP_RC`` in array.py; 0, chaining off, on an
interpreter where the count does not tell). A whole periodic stencil step,
``2u - u_prev + c2 (roll(u, 1) + roll(u, -1) - 2u)``, is then one kernel per interval writing
only its result. A result the program keeps (the next step's ``u``, a named variable) is read
as the assembled array: reading its pieces there would fuse the next step's first ops into
this step's kernels, stored from there -- more traffic than the copy saves. A region write nobody
reads (the assembled intermediates) is dead, and so is what only it read.

Only arrays of at least ``MIN_ELEMENTS`` are cut: below that, kernel launches cost more than
the copies. Counter-based random ops are never cut (their values depend on the flat index)."""
from __future__ import annotations

import weakref

from ..core.ops import OPS
from ..core.ir import DEAD, NEW, Port, c_strides, scratch_port
from . import array as _array, indexing as _indexing

MIN_ELEMENTS = 1 << 16
CHAIN = True            # chained results (off: only rolled and concatenated arrays, to compare)
MAX_RECOMPUTE = 8          # ops of an input expression recorded again per piece

# assembled port -> (axis, ((start, stop, source port), ...)) for its intervals in order
PIECEWISE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def register(port, axis, pieces, chained=False):
    """``port`` is assembled from ``pieces`` ((start, stop, source port) along ``axis``). A
    chained result's sources are held weakly: the result may be kept for long (the next
    step's ``u``) and must not keep its pieces' graph -- back to every earlier step -- alive."""
    if chained:
        pieces = [(a, b, weakref.ref(src)) for a, b, src in pieces]
    PIECEWISE[port] = (axis, tuple(pieces), chained)


def _usable(port, temps=()):
    """(axis, pieces) of ``port`` if they can still be read (nothing flushed in between);
    those of a chained result only where it is an expression's temporary (``temps``: port
    ids)."""
    e = PIECEWISE.get(port)
    if e is None or port.state != NEW:
        return None
    pieces = e[1]
    if e[2]:
        if port.id not in temps:
            return None
        pieces = tuple((a, b, r()) for a, b, r in pieces)
        if any(src is None for _, _, src in pieces):
            return None
    for _, _, src in pieces:
        b = src.inputs[0] if src.kind == "view" else src
        if b.state == DEAD or src.state == DEAD:
            return None         # fused away in a flush since: never written
    return e[0], pieces


def lower(port, temps=()):
    """The piecewise recording of map ``port`` (validated, not enqueued) as an Array, or None
    when none of its inputs is a usable piecewise array of its shape. ``temps``: the ids of
    the inputs that are temporaries of the caller's expression (whose chained pieces may be
    read)."""
    if port.size < MIN_ELEMENTS or OPS[port.op].counter:
        return None
    axis, cuts = None, set()
    for i in port.inputs:
        if i.shape != port.shape:
            continue
        e = _usable(i, temps)
        if e is None or (axis is not None and e[0] != axis):
            continue
        axis = e[0]
        for a, b, _ in e[1]:
            cuts.update((a, b))
    if axis is None:
        return None
    n = port.shape[axis]
    cuts = sorted(c for c in cuts if 0 <= c <= n)
    if cuts[0] != 0 or cuts[-1] != n or len(cuts) < 3:
        return None
    memo = {}
    budget = [MAX_RECOMPUTE * (len(cuts) - 1)]
    subs = []
    for a, b in zip(cuts, cuts[1:]):
        ins = tuple(_piece(i, port, axis, a, b, memo, budget, temps) for i in port.inputs)
        subs.append((a, b, _cut(port, axis, a, b, ins)))
    out = _assemble(port, axis, [(a, sub) for a, _, sub in subs])
    if CHAIN:
        register(out._port, axis, [(a, b, sub._port) for a, b, sub in subs], chained=True)
    return out


def _cut_shape(shape, axis, a, b):
    s = list(shape)
    s[axis] = b - a
    return tuple(s)


def _cut(p, axis, a, b, ins):
    """Map port ``p``'s op recorded over the interval ``[a, b)`` of ``axis`` from the inputs
    ``ins`` (an Array; its dtypes are ``p``'s, already validated)."""
    return _array._enqueue_plain(Port("map", p.op, p.dtype, _cut_shape(p.shape, axis, a, b), ins,
                               p.params, p.site, loop_dtype=p.loop_dtype))


def _slice(p, axis, a, b, site):
    """A view of ``p`` (any port) restricted to ``[a, b)`` along ``axis``."""
    _, off, st = p.base_view()
    return _array._view(p, off + a * st[axis], _cut_shape(p.shape, axis, a, b), st, site)._port


def _piece(i, port, axis, a, b, memo, budget, temps=()):
    """Input ``i`` of ``port`` over the interval ``[a, b)`` of ``port``'s axis ``axis``."""
    if i.kind == "scalar":
        return i
    d = axis - (len(port.shape) - len(i.shape))
    if d < 0 or i.shape[d] == 1:
        return i                                    # broadcast along the axis
    key = (i.id, a, b)
    got = memo.get(key)
    if got is not None:
        return got
    r = None
    e = _usable(i, temps) if i.shape == port.shape else None
    if e is not None and e[0] == axis:
        for s, t, src in e[1]:
            if s <= a and b <= t:
                r = src if (s, t) == (a, b) else _slice(src, axis, a - s, b - s, port.site)
                break
    if r is None and i.kind == "map" and i.state == NEW and budget[0] > 0 \
            and not OPS[i.op].counter and i.shape == port.shape:
        # a small expression recorded in this flush: record it again over the interval
        budget[0] -= 1
        ins = tuple(_piece(j, i, axis, a, b, memo, budget) for j in i.inputs)
        r = _cut(i, axis, a, b, ins)._port
    if r is None:
        r = _slice(i, d, a, b, port.site)
    memo[key] = r
    return r


def _assemble(port, axis, subs):
    """A new array of ``port``'s shape and dtype whose interval starting at ``a`` is written
    by ``sub`` for each ``(a, sub)`` of ``subs`` (region writes, each fused into the kernel
    computing its value)."""
    cur = scratch_port(port.shape, port.dtype, port.site)
    st = c_strides(port.shape)
    for a, sub in subs:
        v = sub._port
        out = _array._enqueue_plain(_indexing.update_port(cur, v, a * st[axis], v.shape, st,
                                                          port.site))
        cur = out._port
    return out
