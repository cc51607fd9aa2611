"""Kernel IR: a fused group of ops -> iteration space, collapsed loop dims, loads, stores and
reductions, ready for a renderer. Pure: no device library is imported here."""
from __future__ import annotations

import math

import numpy as np

from ..core.ops import OPS
from ..core.ir import c_strides


class Access:
    """One array a kernel reads or writes, with its offset and strides over the loops."""

    __slots__ = ("port", "role", "off", "kept", "red")

    def __init__(self, port, role, off, kept, red):
        self.port = port      # the port read (may be a view) or written
        self.role = role      # 'in' | 'out' | region write: 'copy' (the base is copied into the
                              # output buffer first) or 'alias' (the output reuses the base's buffer)
        self.off = off        # element offset into the base buffer
        self.kept = kept      # strides over the collapsed kept dims
        self.red = red        # strides over the collapsed reduced dims

    def __repr__(self):
        return f"Access({self.port!r}, {self.role!r}, {self.off}, {self.kept}, {self.red})"

    @property
    def base(self):
        return self.port.base_view()[0] if self.role == "in" else self.port


class Kernel:
    """A fused group of ops as loops: what the renderers turn into source."""

    __slots__ = ("ops", "space", "axes", "kept", "red", "loads", "stores", "reductions",
                 "scalars", "index", "phases", "stash")

    def __init__(self, ops, space, axes, kept=None, red=None, loads=None, stores=None,
                 reductions=None, scalars=None, index=None, phases=None, stash=()):
        self.ops = ops                    # ports in execution order (maps and reductions)
        self.space = space                # iteration shape (maps: their shape; reductions:
                                          # their input's)
        self.axes = axes                  # reduced axes of the space (empty: map-only kernel)
        self.kept = [] if kept is None else kept        # collapsed kept dim sizes (outer loops)
        self.red = [] if red is None else red           # collapsed reduced dim sizes (inner)
        self.loads = [] if loads is None else loads     # Access (role 'in')
        self.stores = [] if stores is None else stores  # Access (role 'out'): map outputs
        self.reductions = [] if reductions is None else reductions  # reduce ports (written)
        self.scalars = [] if scalars is None else scalars           # kernel parameters
        self.index = index    # the flat C-order element index over the space (strides like an
                              # access), when a counter-based RNG op needs it
        self.phases = phases  # a row kernel (fusion.row_fuse): per phase, the indices into
                              # ``ops`` it evaluates, run one row at a time ...
        self.stash = stash    # ... and of the values later phases read from row buffers

    @property
    def is_reduction(self):
        return bool(self.reductions)

    @property
    def elements(self):
        return math.prod(self.space)


def _space_strides(port, space):
    """Element strides of ``port`` (broadcast to ``space``) over every dim of the space."""
    _, off, st = port.base_view()
    nd, pd = len(space), len(port.shape)
    out = [0] * nd
    for j in range(pd):
        k = nd - pd + j
        if port.shape[j] != 1:
            out[k] = st[j]
    return off, out


def _collapse(sizes, stride_lists):
    """Drop size-1 dims and merge neighbours that every access walks contiguously."""
    dims = [(n, [s[i] for s in stride_lists]) for i, n in enumerate(sizes) if n != 1]
    merged = []
    for n, st in dims:
        if merged:
            pn, pst = merged[-1]
            if all(ps == s * n for ps, s in zip(pst, st)):
                merged[-1] = (pn * n, st)
                continue
        merged.append((n, st))
    sizes2 = [n for n, _ in merged]
    per_access = [[st[a] for _, st in merged] for a in range(len(stride_lists))]
    return sizes2, per_access


def is_update(p):
    """A region write (frontend/indexing.py): it fuses as a store into the kernel computing
    the written value; its space is the region's shape."""
    return p.kind == "intrinsic" and p.op == "update"


def has_complex(k):
    """Whether kernel ``k`` touches a complex dtype (a backend without complex types -- the C
    dialects -- runs it on the CPU)."""
    ports = list(k.ops) + [a.port for a in k.loads] + list(k.scalars)
    return any(np.dtype(p.dtype).kind == "c" or (p.loop_dtype is not None and
                                                 np.dtype(p.loop_dtype).kind == "c")
               for p in ports)


def build_kernel(ops, stores, space, axes, inplace=frozenset(), phases=None, stash=()):
    """Kernel for ``ops`` (all sharing ``space``; reductions over ``axes``), writing ``stores``.
    Region writes (update ports) store their value at the region's offset and strides in the
    output buffer; ``inplace``: ids of those whose output reuses the base's buffer.
    ``phases``, ``stash``: a row kernel's ops per phase and its row-buffered values
    (fusion.row_fuse)."""
    inside = {p.id for p in ops}
    if phases:      # a row kernel reads a column view of its own reduction as the local
        inside |= {i.id for p in ops for i in p.inputs
                   if i.kind == "view" and i.inputs[0].id in inside}
    loads, scalars, seen = [], [], set()
    for p in ops:
        for i in (p.inputs[1:] if is_update(p) else p.inputs):
            if i.id in inside or i.id in seen:
                continue
            seen.add(i.id)
            if i.kind == "scalar":
                scalars.append(i)
            else:
                loads.append(i)
    store_ports = [p for p in ops if p.kind == "map" and p.id in stores]
    reductions = [p for p in ops if p.kind == "reduce"]
    nd = len(space)
    kept_ax = [d for d in range(nd) if d not in axes]
    red_ax = list(axes)
    raw = []   # (port, role, off, full strides)
    for p in loads:
        off, st = _space_strides(p, space)
        raw.append((p, "in", off, st))
    cs = c_strides(space)
    for p in store_ports:
        raw.append((p, "out", 0, list(cs)))
    if any(p.kind == "map" and OPS[p.op].counter for p in ops):
        raw.append((None, "idx", 0, list(cs)))
    for p in ops:
        if is_update(p):
            off, shape, st = p.params
            raw.append((p, "alias" if p.id in inplace else "copy", off,
                        [0 if n == 1 else s for n, s in zip(shape, st)]))
    kept_sizes, kept_st = _collapse([space[d] for d in kept_ax], [[r[3][d] for d in kept_ax] for r in raw])
    red_sizes, red_st = _collapse([space[d] for d in red_ax], [[r[3][d] for d in red_ax] for r in raw])
    if not axes and not kept_sizes:
        kept_sizes, kept_st = [1], [[0] for _ in raw]
    if axes and not red_sizes:
        red_sizes, red_st = [1], [[0] for _ in raw]
    k = Kernel(list(ops), tuple(space), tuple(axes), kept_sizes, red_sizes, scalars=scalars,
               reductions=reductions)
    if phases:
        at = {p.id: n for n, p in enumerate(ops)}
        k.phases = tuple(tuple(at[p.id] for p in ph) for ph in phases)
        k.stash = tuple(at[p.id] for p in stash)
    for i, (p, role, off, _) in enumerate(raw):
        a = Access(p, role, off, kept_st[i] if kept_sizes else [], red_st[i] if axes else [])
        if role == "idx":
            k.index = a
        else:
            (k.loads if role == "in" else k.stores).append(a)
    return k


# ---- shared by the renderers (render_numba.py, render_c.py) ------------------------------------
def reduce_params(p):
    """(axes, keepdims, out dtype, accumulator dtype) of a reduce port."""
    axes, keepdims, acc = p.params
    return axes, keepdims, p.dtype, acc


class Src:
    """Lines of generated source, indented four spaces per level."""

    def __init__(self):
        self.lines = []

    def __call__(self, depth, text):
        self.lines.append("    " * depth + text)


def terms(idx_vars, strides):
    """``i * s`` terms of an index expression (literal strides 0 and 1 simplified)."""
    out = []
    for v, s in zip(idx_vars, strides):
        if s == "0":
            continue
        out.append(v if s == "1" else f"{v} * {s}")
    return out


def index_table(k, decl):
    """The runtime values kernel ``k`` reads from its index table ``D`` -- sizes, offsets and
    strides, so that the source depends only on the kernel's structure -- in the order kept
    sizes, reduced sizes, accesses (loads then stores), flat element index, ``rtot``. Each is
    declared by a header line ``decl.format(name=..., i=...)`` (its position in ``D``); the
    strides 0 and 1 of the innermost loop are literals instead.
    Returns (values, header Src, kept size names, reduced size names, per access (offset,
    kept strides, reduced strides) names, the flat index's names or None)."""
    tbl, hdr = [], Src()

    def dval(name, value):
        hdr(1, decl.format(name=name, i=len(tbl)))
        tbl.append(int(value))
        return name

    red = k.is_reduction
    nk, nr = len(k.kept), len(k.red) if red else 0
    kept_n = [dval(f"nk{i}", n) for i, n in enumerate(k.kept)]
    red_n = [dval(f"nr{i}", n) for i, n in enumerate(k.red)] if red else []

    def access_names(ai, a):
        off = dval(f"o{ai}", a.off)
        ks, rs = [], []
        for d, s in enumerate(a.kept):
            literal = (not red) and d == nk - 1 and s in (0, 1)
            ks.append(str(s) if literal else dval(f"sk{ai}_{d}", s))
        for d, s in enumerate(a.red if red else []):
            literal = d == nr - 1 and s in (0, 1)
            rs.append(str(s) if literal else dval(f"sr{ai}_{d}", s))
        return off, ks, rs

    accesses = k.loads + k.stores
    names = [access_names(ai, a) for ai, a in enumerate(accesses)]
    # the flat element index of a counter-based RNG op (never an array: no memory access)
    iname = access_names(len(accesses), k.index) if k.index is not None else None
    if red:
        dval("rtot", math.prod(k.red))          # mean's divisor
    return tbl, hdr, kept_n, red_n, names, iname
