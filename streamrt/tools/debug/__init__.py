"""Debugger: reference results (``STREAMRT_REFERENCE=1`` / ``reference_mode()``), result
comparison after computation and on copy-out, non-intrusive ``inspect`` and ``break_at``, and
the error-handler stack. See docs/profiling.md."""
from __future__ import annotations

import contextlib

from ...core import config
from ...runtime import cscheduler
from . import _hooks
from .compare import LOG, MismatchError, TOLERANCES, set_tolerance  # noqa: F401
from .handlers import AbortError, ErrorInfo, pop_error_handler, push_error_handler  # noqa: F401
from .inspection import break_at, clear_breakpoints, inspect  # noqa: F401


@contextlib.contextmanager
def reference_mode(compare="both", action="raise"):
    """Run the enclosed code with reference results: every op is also evaluated unfused with
    NumPy on reference inputs, and optimised results are compared with them -- ``compare``:
    'after' (as each program completes), 'copy-out' (when the application reads), 'both' or
    'none'; ``action`` on a mismatch: 'raise', 'warn' or 'log'."""
    cscheduler.sync()
    old = {k: getattr(config.settings, k) for k in
           ("reference", "reference_compare", "reference_action")}
    config.set(reference=True, reference_compare=compare, reference_action=action)
    _hooks.update()
    try:
        yield
        cscheduler.sync()
    finally:
        config.set(**old)
        _hooks.update()
