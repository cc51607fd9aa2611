"""Installs the one record hook the debugger needs (reference shadowing and/or breakpoints),
or removes it when neither is on, so the normal record path pays nothing."""
from __future__ import annotations

from ...runtime import workqueue


def update():
    from ...core.config import settings
    from ...frontend import array
    from ...runtime import escheduler
    from . import reference
    from .inspect import _check, active
    ref_on = bool(settings.reference)
    brk_on = active()
    mode = settings.reference_compare
    escheduler.on_complete = _after if ref_on and mode in ("after", "both") else None
    escheduler.keep_graph = ref_on
    array.on_read = _copy_out if ref_on and mode in ("copy-out", "both") else None
    if not ref_on and not brk_on:
        workqueue.on_record = None
        return

    def hook(port):
        if ref_on:
            reference.shadow(port)
        if brk_on:
            _check(port)
    workqueue.on_record = hook


def _after(prog):
    """On the completing thread: compare each output with its reference; an error to deliver
    at the read (handlers are consulted there)."""
    from . import compare
    for p in prog.outputs:
        if p.ref is not None and p.value is not None:
            v = p.host_value()
            if not compare.close(v, p.ref, p.dtype).all():
                return compare.report(p, v, prog.executor, "after computation", dispatch=False)
    return None


def _copy_out(port, value):
    from . import compare
    from .reference import ref_of
    if port.ref is None and port.kind != "view":
        return
    try:
        ref = ref_of(port)
    except Exception:  # noqa: BLE001 - no reference for this value
        return
    if not compare.close(value, ref, port.dtype).all():
        if port.kind == "view" and port.ref is None:
            port.ref = ref
        from ...backends import registry
        err = compare.report(port, value, registry.get(), "on copy-out", dispatch=True)
        if err is not None:
            raise err
