"""Device discovery (the supervisor): which backends work on this machine and on which
devices -- each backend's ``discover`` (registry.py) -- for ``ps.devices()`` and placement."""
from __future__ import annotations

import sys
import threading

from ..core import atfork
from ..core.config import settings
from . import registry

_lock = threading.Lock()
_found = None


def _after_fork():
    global _lock
    _lock = threading.Lock()


atfork.register(_after_fork)


def devices(refresh=False):
    """Every executor found: dicts with 'backend', 'name', 'available' and device details.
    Entries with available=False say why a backend does not work here ('error')."""
    global _found
    with _lock:
        if _found is None or refresh:
            _found = [d for b in registry.BACKENDS.values() if b.discover is not None
                      for d in b.discover()]
            if settings.debug >= 1:
                for d in _found:
                    state = "ok" if d["available"] else f"unavailable ({d.get('error')})"
                    print(f"[streamrt] device {d['backend']}: {d.get('name')} {state}",
                          file=sys.stderr)
        return [dict(d) for d in _found]
