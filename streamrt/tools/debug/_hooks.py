"""Attaches the debugger to the pipeline through core/hooks.py -- the record hook (reference
shadowing and/or breakpoints), the comparisons after computation and on copy-out -- or
detaches it when neither is on, so the normal record path pays nothing."""
from __future__ import annotations

from ...core import hooks
from ...core.config import settings
from ...backends import registry
from . import compare, inspection, reference


def update():
    ref_on = bool(settings.reference)
    brk_on = inspection.active()
    mode = settings.reference_compare
    record = None
    if ref_on or brk_on:
        def record(port):
            if ref_on:
                reference.shadow(port)
            if brk_on:
                inspection._check(port)
    hooks.set_debugger(record=record,
                       read=_copy_out if ref_on and mode in ("copy-out", "both") else None,
                       complete=_after if ref_on and mode in ("after", "both") else None,
                       keep=ref_on)


def _after(prog):
    """On the completing thread: compare each output with its reference; an error to deliver
    at the read (handlers are consulted there)."""
    for p in prog.outputs:
        if p.ref is not None and p.value is not None:
            v = p.host_value()
            if not compare.close(v, p.ref, p.dtype).all():
                return compare.report(p, v, prog.executor, "after computation", dispatch=False)
    return None


def _copy_out(port, value):
    if port.ref is None and port.kind != "view":
        return
    try:
        ref = reference.ref_of(port)
    except Exception:  # noqa: BLE001 - no reference for this value
        return
    if not compare.close(value, ref, port.dtype).all():
        if port.kind == "view" and port.ref is None:
            port.ref = ref
        err = compare.report(port, value, registry.get(), "on copy-out", dispatch=True)
        if err is not None:
            raise err
