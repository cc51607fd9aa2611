"""Macro cache: (section identity, input signature, control values) -> the template of the
section's program sequence and where its outputs are. Bounded (LRU per section and overall),
with the same structure as the trace cache (see frontend/macro.py for recording and replay)."""
from __future__ import annotations

import threading

from cachetools import LRUCache

from ..core import atfork
from .trace_cache import TraceCache


class MacroCache(TraceCache):
    name = "macro cache"
    stat = "macro_cache"

    def __init__(self, max_entries=256, per_bucket=16):
        super().__init__(max_entries, per_bucket)
        self._sections = LRUCache(max_entries)
        self.generation = 0         # bumped by clear(): macros' own memos of a section die

    @staticmethod
    def _first(key):
        return key[3][0] if key[3] else None

    # @ps.macro sections: (macro, signature, settings) -> section record
    def section(self, key):
        with self.lock:
            try:
                return self._sections[key]      # ([] makes it the most recent)
            except KeyError:
                return None

    def put_section(self, key, sec):
        with self.lock:
            self._sections[key] = sec

    def clear(self):
        super().clear()
        with self.lock:
            self._sections.clear()
            self.generation += 1

    def info(self):
        d = super().info()
        with self.lock:
            d["sections"] = len(self._sections)
        return d


_cache = None


def _after_fork():
    if _cache is not None:
        _cache.lock = threading.Lock()


atfork.register(_after_fork)


def get() -> MacroCache:
    global _cache
    if _cache is None:
        _cache = MacroCache(max_entries=256, per_bucket=16)
    return _cache
