"""Trace cache: a flush's trace key -> the template of the program sequence ProgGen built for
it. A hit re-instantiates the template with the new ports and skips ProgGen entirely.

Entries are grouped in buckets by the call site of the trace's first op; each bucket keeps at
most ``per_bucket`` traces (LRU) and the whole cache at most ``max_entries`` (LRU).
The lookup is one dict probe: the key's hash is the cheap reject (entry count, key size and
first call site all feed it), and a full compare runs only on a hash match -- once: the probe
returns the stored key object, and the LRU bookkeeping that follows probes with that one
(identity, no compare; a trace key is a few hundred tuples).

A second map, bounded by ``max_entries`` too, keeps one template per *shape-generic* key
(core/keys.py ``generic_key``): a trace that misses because its sizes or offsets changed finds
the template of the same code over other sizes there, which ``compiler.reshape`` re-derives
for the new ports (counted as a hit, and in ``trace_cache_shape_hits``)."""
from __future__ import annotations

import threading
from collections import OrderedDict

from cachetools import LRUCache

from ..core import atfork, stats
from ..core.config import settings


class _Global(LRUCache):
    """The bound on all entries: evicting one tells the cache, which drops it from its
    bucket (cachetools evicts through ``popitem``)."""

    def __init__(self, owner, maxsize):
        super().__init__(maxsize=maxsize)
        self._owner = owner

    def popitem(self):
        k, v = super().popitem()
        self._owner._evicted(k)
        return k, v


class TraceCache:
    name = "trace cache"
    stat = "trace_cache"

    def __init__(self, max_entries=1024, per_bucket=16):
        self.per_bucket = per_bucket
        self._all = _Global(self, max_entries)
        self._buckets = {}          # first call site -> OrderedDict(key -> None), LRU order
        self._maxlen = {}           # first call site -> longest trace in the bucket
        self._sites = {}            # key -> call sites of its compute entries (for explanations)
        self._canon = {}            # key -> the key object stored (see the module docstring)
        # first call site -> the key entries (keys.KParts) of the trace last hit or inserted
        # there: what a work queue starting at that site follows while recording (read
        # without the lock: one dict probe)
        self.follow = {}
        self.generic = LRUCache(maxsize=max_entries)    # generic key -> (key, template)
        self._gkey = {}             # key -> its generic key (dropped with it)
        self.lock = threading.Lock()
        self.evictions = 0
        # generic keys of the traces seen once and run without ProgGen (cscheduler._first_sight)
        self._seen = LRUCache(maxsize=4 * max_entries)

    @staticmethod
    def _first(key):
        parts = key[1]
        return parts[0][:2] if parts else None

    def lookup(self, key):
        with self.lock:
            key = self._canon.get(key)
            if key is None:
                return None
            try:
                t = self._all[key]      # (a canonical key is in the bound; [] makes it recent)
            except KeyError:
                t = None
            if t is not None:
                first = self._first(key)
                b = self._buckets.get(first)
                if b is not None and key in b:
                    b.move_to_end(key)
                if key[1]:
                    self.follow[first] = key[1]
            return t

    def insert(self, key, template, esites):
        with self.lock:
            first = self._first(key)
            b = self._buckets.setdefault(first, OrderedDict())
            if key in b:
                return
            while len(b) >= self.per_bucket:
                old, _ = b.popitem(last=False)
                self._unfollow(old)
                self._drop_generic(old)
                self._all.pop(old, None)
                self._sites.pop(old, None)
                self._canon.pop(old, None)
                self.evictions += 1
            b[key] = None
            self._maxlen[first] = max(self._maxlen.get(first, 0), len(key[1]))
            self._sites[key] = esites
            self._canon[key] = key
            self._all[key] = template
            if key[1]:
                self.follow[first] = key[1]

    def lookup_generic(self, gkey):
        """(the key whose template serves ``gkey``, that template) or None."""
        with self.lock:
            return self.generic.get(gkey)

    def insert_generic(self, key, gkey, template):
        """``template`` (inserted under ``key``) also serves ``gkey`` while ``key`` is kept."""
        with self.lock:
            if key in self._canon:
                self.generic[gkey] = (key, template)
                self._gkey[key] = gkey

    def _drop_generic(self, key):
        """``key`` leaves the cache: so does the generic entry it serves (not a newer one)."""
        gkey = self._gkey.pop(key, None)
        if gkey is not None:
            e = self.generic.get(gkey)
            if e is not None and e[0] is key:
                del self.generic[gkey]

    def _unfollow(self, key):
        first = self._first(key)
        if self.follow.get(first) is key[1]:
            del self.follow[first]

    def _evicted(self, key):
        self._unfollow(key)
        self._drop_generic(key)
        first = self._first(key)
        b = self._buckets.get(first)
        if b is not None:
            b.pop(key, None)
            if not b:
                del self._buckets[first]
                self._maxlen.pop(first, None)
        self._sites.pop(key, None)
        self._canon.pop(key, None)
        self.evictions += 1

    def first_sight(self, gkey) -> bool:
        """True the first time a trace of shape-generic key ``gkey`` misses (it is noted as
        seen then), False after."""
        with self.lock:
            if gkey in self._seen:
                return False
            self._seen[gkey] = None
            return True

    def forget_sights(self):
        """Every trace's next miss is a first sight again."""
        with self.lock:
            self._seen.clear()

    def clear(self):
        with self.lock:
            self._seen.clear()
            self._all.clear()
            self.generic.clear()
            self._gkey.clear()
            self._canon.clear()
            self.follow.clear()
            self._buckets.clear()
            self._maxlen.clear()
            self._sites.clear()

    def info(self):
        with self.lock:
            return {"entries": len(self._all), "generic_entries": len(self.generic),
                    "buckets": len(self._buckets),
                    "max_entries": self._all.maxsize, "per_bucket": self.per_bucket,
                    "evictions": self.evictions}

    def note(self, hit: bool):
        stats.add(f"{self.stat}_hits" if hit else f"{self.stat}_misses")

    # ---- explanations ------------------------------------------------------------------------
    def explain_miss(self, key, esites):
        """Why ``key`` missed: the first op where it diverges from the closest cached trace."""
        with self.lock:
            b = self._buckets.get(self._first(key))
            if not b:
                site = esites[0] if esites else None
                return f"new trace starting at {site}" if site else "new trace"
            best, best_n = None, -1
            for k in b:
                n = _common(k[1], key[1])
                if k[0] != key[0]:
                    n = -1
                if n > best_n:
                    best, best_n = k, n
            if best is None or best[0] != key[0]:
                return "settings changed (backend, fusion or kernel-size limits)"
            old_sites = self._sites.get(best, [])
        new, old = key[1], best[1]
        i = best_n
        if i == len(new) == len(old):
            for j, (a, b2) in enumerate(zip(key[2], best[2])):
                if a != b2:
                    return (f"a released value differs: the value recorded at "
                            f"{esites[j] if j < len(esites) else '?'} was "
                            f"{'released' if a else 'kept'} this time, "
                            f"{'released' if b2 else 'kept'} before")
            return "identical trace (evicted)"
        here = esites[i] if i < len(esites) else (esites[-1] if esites else "?")
        if i >= len(new):
            return f"the trace ends at {here}; the cached one went on for {len(old) - i} more ops"
        if i >= len(old):
            return f"the trace goes on at {here} past the cached one's end"
        a, b2 = new[i], old[i]
        was = old_sites[i] if i < len(old_sites) else "?"
        if a[:2] != b2[:2]:
            return f"order of calls: {here} came where the cached trace had {was}"
        what = []
        names = ("", "", "kind", "op", "static arguments", "dtype", "shape", "loop dtype", "inputs")
        for f in range(2, len(a)):
            if a[f] != b2[f]:
                what.append(f"{names[f]} {_show(b2[f])} -> {_show(a[f])}")
        return f"at {here}: " + "; ".join(what)


def _show(v):
    if isinstance(v, tuple) and v and all(isinstance(x, int) for x in v):
        return str(v)
    return str(v)


def _common(a, b):
    n = min(len(a), len(b))
    for i in range(n):
        if a[i] != b[i]:
            return i
    return n


_cache = None


def _after_fork():
    if _cache is not None:
        _cache.lock = threading.Lock()


atfork.register(_after_fork)


def get() -> TraceCache:
    global _cache
    if _cache is None:
        _cache = TraceCache(max_entries=settings.trace_cache_size)
    return _cache
