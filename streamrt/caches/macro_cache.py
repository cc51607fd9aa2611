"""Macro cache: (section identity, input signature, control values) -> the template of the
section's program sequence and where its outputs are. Bounded (LRU per section and overall),
with the same structure as the trace cache (see frontend/macro.py for recording and replay)."""
from __future__ import annotations

from .trace_cache import TraceCache


class MacroCache(TraceCache):
    name = "macro cache"
    stat = "macro_cache"

    @staticmethod
    def _first(key):
        return key[3][0] if key[3] else None


_cache = None


def get() -> MacroCache:
    global _cache
    if _cache is None:
        _cache = MacroCache(max_entries=256, per_bucket=16)
    return _cache
