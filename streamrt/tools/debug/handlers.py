"""Error handlers: a stack of callables consulted, innermost first, when streamrt raises.

A handler is called as ``handler(info)`` with an :class:`ErrorInfo` (``type``, ``file``,
``line``, ``op``, ``message``, ``error``) and returns ``"raise"`` (or None: the default, the
error is raised with its file and line), ``"ignore"`` or ``"abort"`` (the work recorded but
not yet run in this thread is discarded and :class:`AbortError` is raised).

``"ignore"`` applies where there is something to continue with: a reference mismatch (the
optimised value is kept) and a failed computation at a read (the read returns the array
filled with NaN, or 0 for integer and bool dtypes). An invalid call (a shape, dtype or axis
error at record time) has no result to continue with: for it ``"ignore"`` is the same as
``"raise"``."""
from __future__ import annotations

import threading

from ...core import hooks
from ...core.errors import AbortError
from ...runtime.workqueue import current_queue

_stack: list = hooks.error_handlers     # (core/errors.record_error consults it)
_lock = threading.Lock()


class ErrorInfo:
    """What an error handler receives: the error and where it was recorded."""

    __slots__ = ("type", "file", "line", "op", "message", "error")

    def __init__(self, type, file, line, op, message, error):  # noqa: A002
        self.type, self.file, self.line = type, file, line
        self.op, self.message, self.error = op, message, error

    def __repr__(self):
        return (f"ErrorInfo(type={self.type.__name__}, file={self.file!r}, line={self.line}, "
                f"op={self.op!r}, message={self.message!r})")


def push_error_handler(fn):
    """Push ``fn`` on the handler stack (innermost first)."""
    if not callable(fn):
        raise TypeError("an error handler must be callable")
    with _lock:
        _stack.append(fn)
    return fn


def pop_error_handler():
    """Remove and return the innermost handler."""
    with _lock:
        if not _stack:
            raise IndexError("no error handler to pop")
        return _stack.pop()


def dispatch(err, site, op):
    """Ask the handlers about ``err``: 'raise', 'ignore' or 'abort'. Abort raises here."""
    if not _stack:
        return "raise"
    info = ErrorInfo(type(err), getattr(site, "filename", "<unknown>"),
                     getattr(site, "lineno", 0), op or "", str(err), err)
    for h in reversed(list(_stack)):
        r = h(info)
        if r in (None, "raise"):
            continue
        if r == "abort":
            q = current_queue()
            if q.recording is None:
                q.take_trace()
            raise AbortError(f"{info.file}:{info.line}: computation aborted by an error "
                             f"handler: {info.message}") from err
        if r == "ignore":
            return "ignore"
        raise ValueError(f"error handler returned {r!r}; expected 'raise', 'ignore' or 'abort'")
    return "raise"


hooks.set_error_dispatch(dispatch)
