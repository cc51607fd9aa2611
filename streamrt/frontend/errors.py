"""Call sites and errors: where in the user's code an op was recorded, and exceptions that say so."""
from __future__ import annotations

import os
import sys

import numpy as np

_PKG_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_NUMPY_DIR = os.path.dirname(os.path.abspath(np.__file__)) + os.sep


class CallSite:
    """Identity of a recording call: code object + bytecode offset (the trace-key part) and,
    for messages, file, line and function."""

    __slots__ = ("code", "lasti", "lineno")

    def __init__(self, code, lasti, lineno):
        self.code, self.lasti, self.lineno = code, lasti, lineno

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


UNKNOWN = CallSite(None, -1, 0)


def callsite() -> CallSite:
    """The first frame outside streamrt (and NumPy's dispatch layer): the user's line."""
    f = sys._getframe(1)
    while f is not None:
        fn = f.f_code.co_filename
        if not (fn.startswith(_PKG_DIR) or fn.startswith(_NUMPY_DIR) or fn.startswith("<__array")):
            return CallSite(f.f_code, f.f_lasti, f.f_lineno)
        f = f.f_back
    return UNKNOWN


class StreamrtError(Exception):
    """Base of every error streamrt raises."""


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


class StreamrtIndexError(ArgumentError, IndexError):
    """An index out of range or too many indices (NumPy raises IndexError)."""


class StreamrtOverflowError(StreamrtError, OverflowError):
    """A Python integer that does not fit the array's dtype."""


class FallbackError(StreamrtError, TypeError):
    """STREAMRT_STRICT=1 and a NumPy function streamrt does not implement was called."""


class ExecutionError(StreamrtError, RuntimeError):
    """A kernel or device failed; raised at the next read, naming the ops' call sites."""


def record_error(cls, msg, site=None):
    """An exception of ``cls`` whose message starts with the user's file:line. Error handlers
    (ps.push_error_handler) see it first; one may abort (raises AbortError here)."""
    site = site if site is not None else callsite()
    err = cls(_fmt(site, msg))
    err.site = site
    if _handler_stack:
        from ..debug import handlers
        handlers.dispatch(err, site, msg.split(":", 1)[0].split("(", 1)[0].strip())
    return err


_handler_stack = []     # the same list as debug.handlers._stack (kept here to avoid an import)
