"""Call sites and errors: where in the user's code an op was recorded, and exceptions that say so."""
from __future__ import annotations

import os
import sys

import numpy as np

from . import hooks

_PKG_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_NUMPY_DIR = os.path.dirname(os.path.abspath(np.__file__)) + os.sep


class CallSite:
    """Identity of a recording call: code object + bytecode offset (the trace-key part) and,
    for messages, file, line and function. The line is computed from the offset on first use:
    most call sites are only ever compared, never printed. ``now``: the ops recorded here
    ended in a write NumPy ran at once (runtime/cscheduler.py ``_run_statement``), so they
    run on the NumPy tier past its size limit (frontend/_native.c ``now_limit``,
    frontend/array.py ``_eager``); a site is one object per code and offset (``site_at``),
    so the mark stays with the line."""

    __slots__ = ("code", "lasti", "_lineno", "now")

    def __init__(self, code, lasti, lineno=None):
        self.code, self.lasti, self._lineno = code, lasti, lineno
        self.now = False

    @property
    def lineno(self):
        n = self._lineno
        if n is None:
            n = self._lineno = _line_of(self.code, self.lasti)
        return n

    @property
    def filename(self):
        return self.code.co_filename if self.code is not None else "<unknown>"

    @property
    def function(self):
        return self.code.co_name if self.code is not None else "<unknown>"

    def key(self):
        return (id(self.code), self.lasti)

    def __str__(self):
        return f"{self.filename}:{self.lineno}"

    def __repr__(self):
        return f"CallSite({self.filename}:{self.lineno} in {self.function})"


def _line_of(code, lasti):
    if code is None:
        return 0
    for start, end, line in code.co_lines():
        if start <= lasti < end:
            return line or code.co_firstlineno
    return code.co_firstlineno


UNKNOWN = CallSite(None, -1, 0)
_INTERNAL: dict = {}        # code object -> True when it belongs to streamrt or NumPy
# user code object -> {offset: its CallSite}: one site object per line for the life of the
# line (CallSite.now stays on it), shared with the C path (frontend/_native.c user_site)
_SITES: dict = {}
MAX_SITE_CODES = 4096


def forget_sites():
    """Every line's learned NumPy-tier choice dropped (ps.clear_caches): the site objects
    stay (the C path's cache holds them)."""
    for per in list(_SITES.values()):
        for s in list(per.values()):
            s.now = False


def site_at(code, lasti):
    """The CallSite of user code ``code`` at bytecode offset ``lasti`` (one object each)."""
    per = _SITES.get(code)
    if per is None:
        if len(_SITES) >= MAX_SITE_CODES:
            _SITES.clear()
        per = _SITES[code] = {}
    s = per.get(lasti)
    if s is None:
        s = per[lasti] = CallSite(code, lasti)
    return s


def _is_internal(code):
    fn = code.co_filename
    r = fn.startswith(_PKG_DIR) or fn.startswith(_NUMPY_DIR) or fn.startswith("<__array")
    if len(_INTERNAL) > 50_000:          # exec'd code in a loop: do not grow without bound
        _INTERNAL.clear()
    _INTERNAL[code] = r
    return r


def callsite() -> CallSite:
    """The first frame outside streamrt (and NumPy's dispatch layer): the user's line."""
    f = sys._getframe(1)
    get = _INTERNAL.get
    while f is not None:
        c = f.f_code
        internal = get(c)
        if internal is None:
            internal = _is_internal(c)
        if not internal:
            return site_at(c, f.f_lasti)
        f = f.f_back
    return UNKNOWN


class StreamrtError(Exception):
    """Base of every error streamrt raises."""


class AbortError(StreamrtError, RuntimeError):
    """An error handler aborted the computation (``ps.push_error_handler``)."""


class MacroError(StreamrtError, RuntimeError):
    """Misuse of a macro: recursion, a read or a write to an input while it is recorded."""


def _fmt(site, msg):
    site = site if site is not None else callsite()
    return f"{site}: {msg}"


class ShapeError(StreamrtError, ValueError):
    """Shapes that do not broadcast or fit (raised at record time)."""


class StreamrtAxisError(StreamrtError, np.exceptions.AxisError):
    """An axis out of range (raised at record time)."""


class DTypeError(StreamrtError, TypeError):
    """A dtype an op does not accept (raised at record time)."""


class ArgumentError(StreamrtError, TypeError):
    """A wrong argument (raised at record time)."""


class NotLazyError(ArgumentError):
    """Arguments streamrt's version of a NumPy function does not implement (a ``pad`` mode,
    say): a direct call raises it; the same call made through NumPy
    (``__array_function__``) runs on NumPy instead, with a one-time warning."""


class StreamrtIndexError(ArgumentError, IndexError):
    """An index out of range or too many indices (NumPy raises IndexError)."""


class StreamrtOverflowError(StreamrtError, OverflowError):
    """A Python integer that does not fit the array's dtype."""


class FallbackError(StreamrtError, TypeError):
    """STREAMRT_STRICT=1 and a NumPy function streamrt does not implement was called."""


class ExecutionError(StreamrtError, RuntimeError):
    """A kernel or device failed; raised at the next read, naming the ops' call sites."""


class CancelledError(ExecutionError):
    """The computation was cancelled before it ran: a KeyboardInterrupt interrupted a read on
    the thread that recorded it (raised at the read of its result, naming the call sites)."""


class LinAlgError(ExecutionError, np.linalg.LinAlgError):
    """A linear-algebra intrinsic failed (singular matrix, not positive definite): raised at
    the read of its result (or of anything computed from it), naming the call's file:line.
    Also a ``numpy.linalg.LinAlgError``."""


def record_error(cls, msg, site=None):
    """An exception of ``cls`` whose message starts with the user's file:line. Error handlers
    (ps.push_error_handler) see it first; one may abort (raises AbortError here)."""
    site = site if site is not None else callsite()
    err = cls(_fmt(site, msg))
    err.site = site
    if hooks.error_handlers and hooks.on_error is not None:
        hooks.on_error(err, site, msg.split(":", 1)[0].split("(", 1)[0].strip())
    return err


def not_lazy(name, detail, what_is, site):
    """A NotLazyError for ``name`` called with arguments streamrt does not implement
    (``detail``: " with mode='mean'"); ``what_is`` says what is implemented."""
    err = record_error(NotLazyError, f"{name}{detail} is not implemented lazily ({what_is})",
                       site)
    err.detail = detail
    return err

