"""Floating-point exceptions: NumPy's error state (``np.errstate``, ``ps.errstate``) read at
the call, divide / overflow / underflow / invalid reported as NumPy reports them, at the
user's line.

Where streamrt runs NumPy at the call -- the NumPy tier's Python path, the host intrinsics
(histogram, cov with weights, ...) -- it runs it under ``errstate(all="call")`` and reports
the flags NumPy raised by the error state in force *at the call*: a RuntimeWarning
attributed to the user's line (the warnings registry of the user's module, so the ``default``
filter shows it once per line as NumPy's own), a FloatingPointError naming the line, the
``errcall`` function, a printed message or a log write. Compiled kernels keep no flags yet:
docs/decisions.md says what remains."""
from __future__ import annotations

import sys
import warnings

import numpy as np

from .errors import _INTERNAL, _is_internal, callsite

# NumPy's error state is a context variable: ps.errstate is np.errstate (the one state both
# honour), seterr/geterr/seterrcall/geterrcall the same functions
errstate = np.errstate
seterr, geterr = np.seterr, np.geterr
seterrcall, geterrcall = np.seterrcall, np.geterrcall

# NumPy's order (the first 'raise' wins), its setting names and its message words
_KINDS = (("divide", "divide by zero", 1), ("over", "overflow", 2),
          ("under", "underflow", 4), ("invalid", "invalid value", 8))
_WORD_KIND = {w: k for k, w, _ in _KINDS}
_QUIET = {"divide": "ignore", "over": "ignore", "under": "ignore", "invalid": "ignore"}


def warn_at_user(msg, category=RuntimeWarning):
    """``warnings.warn`` at the first frame outside streamrt and NumPy (the user's line, with
    that module's warnings registry: filters behave as for NumPy's own warnings)."""
    f = sys._getframe(0)
    level = 1
    get = _INTERNAL.get
    while f is not None:
        internal = get(f.f_code)
        if internal is None:
            internal = _is_internal(f.f_code)
        if not internal:
            break
        f = f.f_back
        level += 1
    warnings.warn(msg, category, stacklevel=level)


def report(name, kinds, mode=None, site=None):
    """The floating-point ``kinds`` (a set of "divide", "over", "under", "invalid") an op
    ``name`` raised, reported as the error state ``mode`` (np.geterr() at the call) says."""
    mode = mode or np.geterr()
    for kind, word, bit in _KINDS:
        if kind not in kinds:
            continue
        action = mode[kind]
        msg = f"{word} encountered in {name}"
        if action == "ignore":
            continue
        if action == "warn":
            warn_at_user(msg)
        elif action == "raise":
            site = site if site is not None else callsite()
            err = FloatingPointError(f"{site}: {msg}")
            err.site = site
            raise err
        elif action == "call":
            fn = np.geterrcall()
            if fn is not None:
                fn(word, bit)
        elif action == "print":
            print(f"Warning: {msg}")
        elif action == "log":
            fn = np.geterrcall()
            if fn is not None:
                fn.write(f"Warning: {msg}\n")


class _Collector:
    """The ``errcall`` of ``run``: the kinds NumPy reported."""
    __slots__ = ("seen",)

    def __init__(self):
        self.seen = set()

    def __call__(self, word, flag):
        self.seen.add(_WORD_KIND.get(word, word))


_ALL_CALL = {"divide": "call", "over": "call", "under": "call", "invalid": "call"}


def run(name, fn, *args, **kw):
    """``fn(*args, **kw)`` (NumPy code) with its floating-point flags reported at the user's
    line as the error state in force now asks (``report``)."""
    mode = np.geterr()
    if mode == _QUIET:
        with np.errstate(all="ignore"):
            return fn(*args, **kw)
    if mode == _ALL_CALL and type(np.geterrcall()) is _Collector:
        return fn(*args, **kw)          # inside another run: that one reports
    c = _Collector()
    with np.errstate(all="call", call=c):
        r = fn(*args, **kw)
    if c.seen:
        report(name, c.seen, mode)
    return r
