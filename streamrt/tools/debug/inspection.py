"""Non-intrusive inspection: the value of an intermediate computed on the side, without
flushing or changing the real work queue (so the real program fuses exactly as before), and
breakpoints on call sites."""
from __future__ import annotations

import os

import numpy as np

from ...core.ir import DONE, NEW, SUBMITTED, strided
from ...backends.base import run_refop
from ...runtime import escheduler
from ...frontend.array import Array
from . import _hooks

_breaks: dict = {}      # (abs file, line) -> callback


def inspect(x):
    """The current value of ``x`` (a streamrt Array) as a NumPy array. Work already
    submitted is waited for; recorded-but-unsubmitted ops that ``x`` depends on are evaluated
    on a cloned graph, one op at a time with NumPy, and not cached -- the real queue is left
    untouched."""
    port = x._port if isinstance(x, Array) else x
    memo = {}

    def val(p):
        if p.id in memo:
            return memo[p.id]
        if p.kind == "scalar":
            v = p.scalar if p.params and p.params[0] == "weak" else p.dtype.type(p.scalar)
        elif p.kind == "const":
            v = p.value
        elif p.kind == "view":
            base = p.inputs[0]
            _, off, st = p.base_view()
            v = strided(np.ascontiguousarray(val(base)), off, p.shape, st)
        elif p.state == NEW:
            v = run_refop(p, val)
        else:
            if p.state == SUBMITTED:
                escheduler.get().wait(p)
            if p.state != DONE:
                raise RuntimeError(f"cannot inspect {p}: {p.error or 'it was released'}")
            v = p.host_value()
        memo[p.id] = v
        return v
    return np.array(val(port), copy=True)


def break_at(file, line, callback):
    """Call ``callback(array)`` whenever an op is recorded at ``file:line`` (``inspect`` may be
    used inside the callback). ``callback=None`` removes the breakpoint."""
    key = (os.path.abspath(file), int(line))
    if callback is None:
        _breaks.pop(key, None)
    else:
        _breaks[key] = callback
    _install()


def clear_breakpoints():
    _breaks.clear()
    _install()


def _check(port):
    s = port.site
    if s is None or s.code is None:
        return
    cb = _breaks.get((os.path.abspath(s.filename), s.lineno))
    if cb is not None:
        cb(Array._wrap(port))


def _install():
    _hooks.update()


def active():
    return bool(_breaks)


__all__ = ["inspect", "break_at", "clear_breakpoints"]
