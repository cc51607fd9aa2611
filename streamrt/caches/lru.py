"""A bounded mapping that forgets its least recently used entry: the part of
``cachetools.LRUCache`` the caches use, without importing cachetools (its import, with
``random`` and ``heapq``, was ~5 ms of ``import streamrt``)."""
from __future__ import annotations

from collections import OrderedDict


class LRU:
    """``get`` and ``[]`` make an entry the most recent; inserting into a full mapping first
    evicts through ``popitem`` (subclasses hook it, as with cachetools)."""

    def __init__(self, maxsize):
        self.maxsize = maxsize
        self._d = OrderedDict()

    def __len__(self):
        return len(self._d)

    def __contains__(self, key):
        return key in self._d

    def __getitem__(self, key):
        v = self._d[key]
        self._d.move_to_end(key)
        return v

    def get(self, key, default=None):
        d = self._d
        if key in d:
            d.move_to_end(key)
            return d[key]
        return default

    def __setitem__(self, key, value):
        d = self._d
        if key in d:
            d.move_to_end(key)
        else:
            while len(d) >= self.maxsize:
                self.popitem()
        d[key] = value

    def pop(self, key, *default):
        return self._d.pop(key, *default)

    def popitem(self):
        """The least recently used (key, value), removed."""
        return self._d.popitem(last=False)

    def clear(self):
        self._d.clear()
