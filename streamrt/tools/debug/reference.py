"""Reference mode: every recorded op is also evaluated at once, unfused, with NumPy (the
reference executor's semantics) on *reference* inputs, so each port carries a shadow value
(``port.ref``) computed as plain NumPy would, errors included."""
from __future__ import annotations

import numpy as np

from ...core.ir import strided
from ...backends.base import run_refop
from ...runtime import cscheduler


def ref_of(p):
    """The reference value of port ``p`` (computing it from the optimised value if ``p`` was
    recorded before reference mode was on)."""
    if p.ref is not None:
        return p.ref
    if p.kind == "scalar":
        return p.scalar if p.params and p.params[0] == "weak" else p.dtype.type(p.scalar)
    if p.kind == "const":
        return p.value
    if p.kind == "view":
        base = p.inputs[0]
        b = ref_of(base)
        return _view_of(p, b)
    cscheduler.ensure(p)
    p.ref = np.array(p.host_value(), copy=True)
    return p.ref


def _view_of(p, base_ref):
    _, off, st = p.base_view()
    return strided(np.ascontiguousarray(base_ref), off, p.shape, st)


def shadow(port):
    """Compute ``port.ref`` from its inputs' reference values (called as the op is recorded)."""
    if port.kind == "view":
        port.ref = None          # views are taken from the base's reference on demand
        return
    if port.kind in ("const", "scalar"):
        return
    port.ref = run_refop(port, ref_of)
