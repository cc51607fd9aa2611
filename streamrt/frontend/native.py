"""The C record path (frontend/_native.c): Array operators, one-operand map functions and
Array.__del__ replaced by C objects that record the common case themselves and call the
Python implementation (which stays the definition) for everything else.

Built with the package when a C compiler is present (``setup.py``: an optional extension);
without it, or with ``STREAMRT_NATIVE=0``, the Python path runs alone and nothing else
changes. ``ps.runtime_stats()["native_record"]`` says which path records."""
from __future__ import annotations

import contextlib
import os
import functools
import warnings

import numpy as np

from ..core import config, dtypes as D, errors, hooks, ir, keys, stats
from ..core.config import settings
from ..core.ops import OPS, UFUNC_TO_OP, map_dtypes
from ..runtime import cscheduler, products, tiers, trace_cache, workqueue
from . import array, indexing, pieces

ABI = 14    # the interface of _native.c this module drives: bumped with its NATIVE_ABI whenever
            # the C functions or the keys of configure() change

try:
    from . import _native
except ImportError:          # not built (no compiler at install time): the Python path
    _native = None
if _native is not None and getattr(_native, "ABI", None) != ABI:
    warnings.warn("streamrt: the C record path was built from an older source; recording in "
                  "Python (rebuild: pip install -e . or ./dev.sh)", RuntimeWarning)
    _native = None

_on = settings.native             # (STREAMRT_NATIVE, read once: the operators are replaced at import)
_installed = False
if _native is not None and _on:
    # the work queue's lock: threading.RLock's methods, taken by the C path without a call
    workqueue.use_lock(_native.QueueLock)


def available() -> bool:
    """Whether the C path is built, installed and switched on."""
    return _installed and _native is not None and _enable_state()


def _enable_state():
    was = _native.enable(True)
    _native.enable(was)
    return was


def install(enqueue_plain):
    """Configure the C path with the Python path's classes and memo dicts and put the C
    operators on Array; returns the enqueue function the record path is to use -- the C one,
    or ``enqueue_plain`` when the C path is not built or off (called once, at the end of
    array.py)."""
    global _installed
    if _installed or _native is None or not _on:
        return enqueue_plain
    _native.configure({
        "Array": array.Array, "Port": ir.Port, "CallSite": errors.CallSite,
        "WorkQueue": workqueue.WorkQueue, "ids": ir._ids, "internal": errors._INTERNAL,
        "fast": array._FAST, "ufast": array._UFAST, "piecewise": pieces.PIECEWISE.data,
        "hooks_dict": vars(hooks), "current_queue": workqueue.current_queue,
        "follow": trace_cache.get().follow, "settings": settings,
        "iinfo": array._IINFO, "enqueue_plain": enqueue_plain,
        "key_external": keys._external, "weak_f": array._WEAK_F, "weak_i": array._WEAK_I,
        "NEW": ir.NEW, "DONE": ir.DONE, "SUBMITTED": ir.SUBMITTED,
        "DEAD": ir.DEAD, "capture": tiers.capture,
        "refs": {n: o.ref for n, o in OPS.items() if o.kind == "map" and not o.counter},
        "ufunc_ops": {getattr(np, u): n for u, n in UFUNC_TO_OP.items()
                      if isinstance(getattr(np, u, None), np.ufunc)},
        "supported": set(D.SUPPORTED_SET), "materialize": array._materialize,
        "elidable": _elidable(), "now_elements": cscheduler.WRITE_NOW_ELEMENTS,
        "sites": errors._SITES, "max_site_codes": errors.MAX_SITE_CODES,
        "register": indexing.register, "product": products.serve,
        "product_refs": array.PRODUCT_REFS, "product_min": products.MIN_ELEMENTS})
    Array = array.Array
    for name, f in list(vars(Array).items()):
        slow = getattr(f, "_slow", None)
        if slow is not None:
            setattr(Array, name, functools.update_wrapper(
                _native.BinOp(f.__name__, f._reflected, f, slow), f))
    # the NumPy tier's indexing and in-place operators (their Python methods stay the definition)
    setattr(Array, "__getitem__", functools.update_wrapper(
        _native.Fast(0, "", Array.__getitem__), Array.__getitem__))
    setattr(Array, "__setitem__", functools.update_wrapper(
        _native.Fast(1, "", Array.__setitem__), Array.__setitem__))
    setattr(Array, "__array_ufunc__", functools.update_wrapper(
        _native.Fast(3, "", Array.__array_ufunc__), Array.__array_ufunc__))
    for name, f in list(vars(Array).items()):
        op = getattr(f, "_inplace_op", None)
        if op is not None:
            setattr(Array, name, functools.update_wrapper(_native.Fast(2, op, f), f))
    for name in ("__neg__", "__pos__", "__abs__", "__invert__"):   # (the unary operators)
        f = vars(Array)[name]
        setattr(Array, name, functools.update_wrapper(_native.MapMethod(f.__name__, f), f))
    Array.__del__ = _native.ArrayDel()
    _native.install_finalizer()       # (the slot the type's __del__ fills, set to C directly)
    _native.install_slots()           # (the operators' number slots, set to C directly: last)
    config.listeners.append(_native.settings_changed)
    config.listeners.append(_split_changed)
    _split_changed()
    hooks.set_ufunc_loop(_native.ufunc_into, _native.park_helper, _native.product_block)
    cscheduler.use_native(_native.released_flags, _native.unwritten)
    _installed = True
    return _native.enqueue            # (ports the Python path builds, queued in C)


_split_wait = False
_split_delay = 0


def _split_changed():
    """STREAMRT_SPLIT_ELEMENTS to the C path (off on one CPU: no second core to run on)."""
    n = settings.split_elements if _cpus() > 1 else 0
    _native.split_config(max(int(n), 0), _split_wait, _split_delay)


@contextlib.contextmanager
def split_helper_always(delay_us=0):
    """Tests: every cut loop's second part is run by the helper thread (never taken back by
    the caller when the helper is slow to start), so that what the helper does is checked;
    ``delay_us``: the helper sleeps that long before its part (a helper whose core is busy:
    the loop is counted lost). Cut loops that lost send the next ones to one thread only
    outside this (``split_state``)."""
    global _split_wait, _split_delay
    _split_wait, _split_delay = True, int(delay_us)
    _split_changed()
    try:
        yield
    finally:
        _split_wait, _split_delay = False, 0
        _split_changed()


def split_state(skip=None):
    """(cut loops left to run on one thread, the next backing off) -- tests; ``skip`` sets
    the first."""
    return _native.split_state(skip)


def _cpus():
    try:
        return len(os.sched_getaffinity(0))     # (the CPUs this process may run on)
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def split_count(reset=False) -> int:
    """Element-wise loops the NumPy tier ran on two threads (_loops.c ``run_split``)."""
    return _native.split_count(reset) if _native is not None and _installed else 0


def split_lost_count(reset=False) -> int:
    """Cut loops whose helper half ended after twice the calling thread's (its core busy):
    each sends the next cut loops to one thread, for twice as many loops as the last time."""
    return _native.split_lost_count(reset) if _native is not None and _installed else 0


def count(reset=False) -> int:
    """Ops recorded entirely by the C path since the last reset (the rest of ``ops_recorded``
    went through Python)."""
    return _native.native_count(reset) if _native is not None and _installed else 0


def eager_count(reset=False) -> int:
    """Ops the C path ran on the NumPy tier since the last reset."""
    return _native.eager_count(reset) if _native is not None and _installed else 0


def direct_count(reset=False) -> int:
    """NumPy-tier ufunc calls since the last reset whose NumPy loop the C path called itself
    (_loops.c), skipping NumPy's dispatch."""
    return _native.direct_count(reset) if _native is not None and _installed else 0


def _elidable():
    """The map ops whose NumPy definition is a ufunc giving float32 for float32 operands and
    float64 for float64 (the op table's dtype rules): a dying operand's buffer may take the
    result (_native.c, ``dying``)."""
    out = set()
    for name, op in OPS.items():
        if op.kind != "map" or op.counter or not isinstance(op.ref, np.ufunc) or \
                op.ref.nout != 1:
            continue
        try:
            if all(map_dtypes(op, (np.dtype(t),) * op.arity)[0] == np.dtype(t)
                   for t in ("float32", "float64")):
                out.add(name)
        except TypeError:
            continue
    return out


def numpy_twin(f, ref, any_size=False):
    """``f`` as a C Fast object that runs NumPy's ``ref`` on the NumPy tier
    (array.numpy_twin); None when the C path is not built or off."""
    if _native is None or not _on:
        return None
    return functools.update_wrapper(_native.Fast(5 if any_size else 4, ref, f), f)


def transpose_now():
    """The C path's ``a.T`` of a computed Array on the NumPy tier (returns None when it does
    not apply), or None when the C path is not built or off."""
    if _native is None or not _on:
        return None
    return _native.transpose_now


def map_function(name, f):
    """``f`` (a one-operand function of frontend/math.py) as a C MapFunc when the C path is
    built and on; ``f`` itself otherwise."""
    if _native is None or not _on:
        return f
    return functools.update_wrapper(_native.MapFunc(name, f), f)


@contextlib.contextmanager
def disabled():
    """Record on the Python path inside the block (tests compare the two paths)."""
    if _native is None:
        yield
        return
    was = _native.enable(False)
    try:
        yield
    finally:
        _native.enable(was)


def _stats(snapshot):
    snapshot["native_record"] = int(available())     # (1: the C record path records; a state)
    snapshot["ops_recorded_native"] = count()
    snapshot["ops_eager"] = tiers.counts() + eager_count()      # (the NumPy tier: Python + C)
    snapshot["ops_eager_direct"] = direct_count()               # (of those: NumPy's loop called)
    snapshot["loops_split"] = split_count()                     # (NumPy's loops on two threads)
    snapshot["loops_split_lost"] = split_lost_count()           # (... slower than on one)
    snapshot["products_batched"] = snapshot.get("products_batched", 0) + (
        _native.product_count(False) if _native is not None and _installed else 0)


def _reset():
    count(reset=True)
    eager_count(reset=True)
    direct_count(reset=True)
    split_count(reset=True)
    split_lost_count(reset=True)
    if _native is not None and _installed:
        _native.product_count(True)
    tiers.reset_counts()


stats.register_reader(_stats, _reset)
