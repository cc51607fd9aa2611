"""The compiler's passes over one flush, in order: work-queue entries in, fused groups (and what
each stores) out. Each pass is one function of the flush's state (``Flush``) that edits it in
place; a pass the backend's caps do not ask for returns at once. ``compiler.generate`` runs
``PASSES``, then builds one program per group.

  liveness        live ops, their consumers, the dead ones            (analysis.backward)
  schedule        greedy fusion of element-wise chains and reductions, kept inside runs of
                  whole loop iterations          (fusion.loop_chunks, fusion.schedule)
  inline_scalars  small 0-d / per-row arithmetic recomputed by its consumers   (fusion)
  sink_ops        element-wise ops moved into the one kernel that reads them   (fusion)
  row_fuse        a row reduction and the kernels using it as one row kernel   (fusion)
  stores          which values are written to memory                 (analysis.forward)
  fuse_scans      cumsum/cumprod with their private producers          (scan.fuse_scans)
  inplace         region writes that reuse their base's buffer  (analysis.inplace_updates)

Caps (the backend's, ``Executor.caps``) that switch passes on: ``fuse`` (all fusion; also
STREAMRT_FUSION), ``fuse_updates`` (region writes join the kernel computing their value),
``inline_scalars``, ``sink_ops``, ``row_fusion`` (and STREAMRT_ROW_FUSION), ``fuse_scans``
(and STREAMRT_FUSE_SCANS); ``max_ops`` bounds a kernel (and STREAMRT_MAX_KERNEL_OPS), and a
flush that repeats a loop body is cut at its iterations (fusion.loop_chunks,
STREAMRT_LOOP_KERNEL_ELEMENTS)."""
from __future__ import annotations

from ..core.config import settings
from . import analysis, fusion, scan


class Flush:
    """What the passes know of one flush and build for it."""

    __slots__ = ("entries", "caps", "fuse", "max_ops", "ports", "live", "consumers", "dead",
                 "ops", "groups", "gidx", "inlined", "stored", "scans", "inplace", "reusable")

    def __init__(self, entries, caps, reusable=frozenset()):
        self.entries, self.caps = entries, caps
        self.reusable = reusable            # ids of computed bases a region write may reuse
        self.fuse = caps.get("fuse", True) and settings.fusion
        # (the backend's bound, and STREAMRT_MAX_KERNEL_OPS: a device backend's caps are it)
        self.max_ops = min(caps.get("max_ops", 128), settings.max_kernel_ops)
        self.ports = self.live = self.dead = self.ops = ()
        self.consumers = {}
        self.groups, self.gidx = [], {}     # fused groups in order; port id -> group index
        self.inlined = set()                # ids of ports every reader recomputes
        self.stored = set()                 # ids of ports written to memory
        self.scans = {}                     # scan port id -> (producer ops, leaves)
        self.inplace = set()                # ids of region writes reusing their base


def liveness(f):
    f.ports = analysis.collect(f.entries)
    f.live, f.consumers, f.dead = analysis.backward(f.ports)
    f.ops = [p for p in f.live if p.kind != "view"]


def schedule(f):
    chunks = None
    if f.fuse and f.max_ops > 1:
        chunks = fusion.loop_chunks(f.ops, f.max_ops, settings.loop_kernel_elements)
    f.groups, f.gidx = fusion.schedule(f.ops, fuse=f.fuse, max_ops=f.max_ops,
                                       fuse_updates=f.caps.get("fuse_updates", False),
                                       chunks=chunks)


def inline_scalars(f):
    if f.fuse and f.caps.get("inline_scalars"):
        f.inlined = fusion.inline_scalars(f.groups, f.gidx, f.consumers)


def sink_ops(f):
    if f.fuse and f.caps.get("sink_ops"):
        fusion.sink_ops(f.groups, f.gidx, f.consumers, f.max_ops)


def row_fuse(f):
    if f.fuse and f.caps.get("row_fusion") and settings.row_fusion:
        fusion.row_fuse(f.groups, f.gidx, f.consumers, f.max_ops)


def stores(f):
    f.stored = analysis.forward(f.live, f.consumers, f.gidx) - f.inlined


def fuse_scans(f):
    if f.fuse and f.caps.get("fuse_scans") and settings.fuse_scans:
        f.scans = scan.fuse_scans(f.groups, f.gidx, f.consumers, f.stored)


def inplace(f):
    if f.caps.get("fuse_updates"):
        f.inplace = analysis.inplace_updates(f.groups, f.gidx, f.consumers, f.reusable,
                                               f.ops, f.inlined)


PASSES = [liveness, schedule, inline_scalars, sink_ops, row_fuse, stores, fuse_scans, inplace]


def run(entries, caps, reusable=frozenset()) -> Flush:
    """The flush's state after every pass of ``PASSES`` (``reusable``: see ``Flush``)."""
    f = Flush(entries, caps, reusable)
    for p in PASSES:
        p(f)
    return f
