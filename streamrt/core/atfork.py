"""Fork safety: what each module does around ``os.fork()`` (``register``), run in one
``os.register_at_fork`` hook. A forked child has only the thread that forked: the
E-Scheduler's and the executors' threads, the compile service's reader and the device
discovery thread are gone, and a lock one of them held stays held. Before the fork the
pipeline is drained (runtime/cscheduler.py: the child then sees every submitted result
computed); in the child each module replaces its locks, queues and threads with new ones,
forgets the parent's compile worker and in-flight requests, and starts them again on demand.
``forks()`` counts the forks this process is a child of (0 in the original process)."""
from __future__ import annotations

import os

_before: list = []
_child: list = []
_forks = 0


def register(after_in_child=None, before=None):
    """``before()`` runs in the parent before a fork (in registration order), and
    ``after_in_child()`` in the child (in registration order: core first)."""
    if before is not None:
        _before.append(before)
    if after_in_child is not None:
        _child.append(after_in_child)


def forks() -> int:
    return _forks


def _run_before():
    for fn in _before:
        try:
            fn()
        except Exception:  # noqa: BLE001 - never fail the user's fork
            pass


def _run_child():
    global _forks
    _forks += 1
    for fn in _child:
        try:
            fn()
        except Exception:  # noqa: BLE001 - the child goes on; what failed is reset lazily
            pass


if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_run_before, after_in_child=_run_child)
