"""Tiers: which ops run at once through NumPy (the NumPy tier) and which are recorded for the
fused, compiled path; the bookkeeping that keeps the two consistent on shared buffers.

An op whose array inputs are *concrete* -- computed host buffers: constants, computed results,
views of them -- and whose inputs and result are smaller than ``STREAMRT_EAGER_ELEMENTS``
runs immediately through NumPy (its reference definition) and gives a concrete result. Every
other op is recorded as before. A recorded op that reads a concrete buffer *captures* it (the
buffer's port notes the work queue); an in-place write into a concrete buffer first runs
the work that captured it, so that work never sees a later value. A block of products computed
ahead (runtime/products.py) captures the buffers it read too: the write drops it."""
from __future__ import annotations

import numpy as np

from ..core.config import settings
from ..core.ir import DONE, strided
from . import cscheduler
from .products import Run
from .workqueue import _local as _wq_local


def limit() -> int:
    """Ops below this many elements (inputs and result) may run on the NumPy tier."""
    return settings.eager_elements


def concrete(p):
    """The host ndarray of a computed port (a constant or computed result, or a view of one
    whose ndarray is cached), or None. Scalars are not concrete (they are parameters)."""
    if p.state != DONE:
        return None
    v = p.value
    if type(v) is np.ndarray:
        return v
    if p.kind == "view":
        b = p.inputs[0]
        bv = b.value
        if b.state == DONE and type(bv) is np.ndarray:
            off, st = p.params
            return strided(bv, off, p.shape, st)
    return None


_eager = [0]       # ops the Python path ran on the NumPy tier (the C path counts its own)


def counts():
    """Ops the Python path ran on the NumPy tier (ps.runtime_stats()["ops_eager"] adds the C
    path's)."""
    return _eager[0]


def reset_counts():
    _eager[0] = 0


def note_eager(n=1):
    _eager[0] += n


def capture(port, q):
    """``port``, recorded into queue ``q``, reads its inputs' buffers later: each computed
    base it reads is marked captured by ``q`` (an in-place write must wait for it)."""
    for i in port.inputs:
        b = i.inputs[0] if i.kind == "view" else i
        if b.state == DONE and b.kind != "scalar":
            c = b.captured
            if c is None:
                b.captured = q
            elif c is not q:
                b.captured = (c, q) if not isinstance(c, tuple) else c + (q,)


def settle(base, own=None):
    """Before ``base``'s buffer is written in place: the recorded work that reads it has run
    (its queues flushed, everything in flight finished). ``own``: a work queue left as it is
    (the write is flushed with it: frontend/indexing.py ``_write_through``); everything in
    flight is waited for then too."""
    c = base.captured
    if c is None and own is None:
        return
    qs = () if c is None else c if isinstance(c, tuple) else (c,)
    queues = False
    for q in qs:
        if type(q) is Run:          # a block of products read from it (runtime/products.py)
            q.written()
        elif q is not own:
            cscheduler.flush(q, reason="write")
            queues = True
    if queues or own is not None:
        cscheduler.wait_idle()
    base.captured = own if own in qs else None


def recording() -> bool:
    """Whether this thread is recording a macro's body (its values are the next calls')."""
    q = getattr(_wq_local, "q", None)
    return q is not None and q.recording is not None


def eager_now() -> bool:
    """Whether this thread may run ops on the NumPy tier now (on, and no macro recording)."""
    if not settings.eager_elements:
        return False
    q = getattr(_wq_local, "q", None)       # (recording()'s test, inline: every op asks)
    return q is None or q.recording is None
