"""Result comparison against the reference: tolerance per dtype, the action on a mismatch,
and the search for the first diverging operation (re-running the ops of the failing program
one at a time, unfused, on the optimised executor with reference inputs)."""
from __future__ import annotations

import sys
import warnings

import numpy as np

from ...core import stats
from ...core.config import settings
from ...core.errors import StreamrtError
from ...core.ir import DONE, Port
from ... import compiler
from ...backends import numba_cpu
from . import handlers, reference

# |optimised - reference| <= |reference * scale| + atol, per dtype kind/name
TOLERANCES = {"float32": (1e-5, 1e-6), "float64": (1e-12, 1e-14), "bool": (0, 0),
              "complex64": (1e-5, 1e-6), "complex128": (1e-12, 1e-14)}
TOLERANCES.update({n: (0, 0) for n in ("int8", "int16", "int32", "int64", "uint8", "uint16",
                                        "uint32", "uint64")})     # integers: exact
LOG: list = []          # mismatches when the action is "log"


class MismatchError(StreamrtError, AssertionError):
    """An optimised result differs from the reference beyond the tolerance."""


def set_tolerance(dtype, scale, atol):
    TOLERANCES[np.dtype(dtype).name] = (float(scale), float(atol))


def close(opt, ref, dtype):
    """True where ``opt`` matches ``ref``: NaN matches NaN, an infinity the same infinity."""
    scale, atol = TOLERANCES.get(np.dtype(dtype).name, (0.0, 0.0))
    a = np.asarray(opt)
    b = np.asarray(ref)
    if a.dtype.kind == "c" or b.dtype.kind == "c":       # complex: both parts
        return close(a.real, b.real, dtype) & close(np.imag(a), np.imag(b), dtype)
    if a.dtype.kind in "fc" or b.dtype.kind in "fc":
        a64, b64 = a.astype(np.float64), b.astype(np.float64)
        both_nan = np.isnan(a64) & np.isnan(b64)
        same_inf = np.isinf(a64) & np.isinf(b64) & (np.sign(a64) == np.sign(b64))
        with np.errstate(all="ignore"):
            ok = np.isfinite(b64) & (np.abs(a64 - b64) <= np.abs(b64 * scale) + atol)
        return ok | both_nan | same_inf
    return a == b


def first_diverging(port, executor):
    """The call site of the first op (in recording order) among ``port`` and its ancestors
    whose optimised single-op evaluation on reference inputs differs from its reference."""
    order, seen = [], set()

    def visit(p):
        if p.id in seen:
            return
        seen.add(p.id)
        for i in p.inputs:
            visit(i)
        if p.kind in ("map", "reduce") and p.ref is not None:
            order.append(p)
    visit(port)
    order.sort(key=lambda p: p.id)
    ref_of = reference.ref_of
    for p in order:
        ins = []
        for i in p.inputs:
            if i.kind == "scalar":
                ins.append(i)
            else:
                r = np.ascontiguousarray(ref_of(i))
                c = Port("const", "const", i.dtype, i.shape, value=r)
                c.state = DONE
                ins.append(c)
        q = Port(p.kind, p.op, p.dtype, p.shape, tuple(ins), p.params, p.site,
                 loop_dtype=p.loop_dtype)
        q.nrefs = 1
        try:
            space = p.inputs[0].shape if p.kind == "reduce" else p.shape
            axes = p.params[0] if p.kind == "reduce" else ()
            prog = compiler.kernel_program([q], {q.id}, space, axes,
                                           numba_cpu.BACKEND.caps)
            for o in prog.outputs:
                o.value = np.empty(o.shape, o.dtype)
            executor.launch(prog)
            ok = close(q.value, p.ref, p.dtype).all()
        except Exception:  # noqa: BLE001 - a failing single op is the divergence
            ok = False
        if not ok:
            return p
    return None


def report(port, opt, executor, when, dispatch=True):
    """Handle a mismatch of ``port`` (value ``opt``): find the first diverging op and raise,
    warn or log according to the setting; returns the exception (for async delivery)."""
    stats.add("reference_mismatches")
    bad = first_diverging(port, executor)
    where = bad if bad is not None else port
    ref = np.asarray(port.ref)
    okm = close(opt, ref, port.dtype)
    n = int(okm.size - np.count_nonzero(okm))
    idx = np.argwhere(~np.asarray(okm))
    first = tuple(int(i) for i in idx[0]) if len(idx) else ()
    try:
        got = np.asarray(opt)[first] if first or np.ndim(opt) == 0 else None
        want = ref[first] if first or ref.ndim == 0 else None
    except Exception:  # noqa: BLE001
        got = want = None
    msg = (f"{where.site}: {where.op} diverges from the reference ({when}): {n} of "
           f"{okm.size} elements differ; first at index {first}: got {got}, reference {want}"
           + ("" if bad is not None else " (no single op diverges alone: the fused program "
              "does)"))
    err = MismatchError(msg)
    err.site = where.site
    err.op = where.op
    action = settings.reference_action
    if dispatch:
        if handlers.dispatch(err, where.site, where.op) == "ignore":
            return None
    if action == "warn":
        warnings.warn(msg, RuntimeWarning, stacklevel=2)
        return None
    if action == "log":
        LOG.append(msg)
        print(f"[streamrt] {msg}", file=sys.stderr)
        return None
    return err
