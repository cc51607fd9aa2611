"""The per-thread work queue: compute and hint entries, each with a call site (a release
is the port's reference count reaching zero, read at the flush)."""
from __future__ import annotations

import math
import threading

from ..core import config, hooks, keys, stats

_queue_lock = threading.RLock     # (the C record path brings a twin: ``use_lock``)


def use_lock(lock_type):
    """The work queues' lock type from now on: the C record path's twin of threading.RLock,
    which it takes without a method call (frontend/native.py)."""
    global _queue_lock
    _queue_lock = lock_type


class WorkQueue:
    """The recorded-but-not-yet-scheduled entries of one application thread, and the trace
    key accumulated alongside them (one key entry per compute entry, see caches/keys.py)."""

    # (slots: the C record path, frontend/_native.c, reads and writes them at fixed offsets)
    __slots__ = ("entries", "lock", "pending_computes", "keyparts", "kports", "num",
                 "recording", "recorded", "max_elements", "taken_max", "_shape", "limit",
                 "eager_limit", "epoch", "follow", "fpos", "__weakref__")

    def __init__(self):
        self.entries = []          # ('compute', port) | ('hint', what, site)
        self.lock = _queue_lock()
        self.pending_computes = 0
        self.keyparts = []         # trace-key entries, one per compute entry
        self.kports = []           # ports numbered by the key (first occurrence order)
        self.num = {}              # port id -> number in kports
        self.recording = None      # the macro recording in progress on this queue, if any
        self.recorded = 0          # ops recorded (summed into ps.runtime_stats())
        self.max_elements = 0      # the largest compute entry's size (placement: small work)
        self.taken_max = 0         # ... of the entries the last take_trace returned
        self._shape = None
        # the C path's copies of queue_threshold and eager_elements, and of the settings epoch
        self.limit = self.eager_limit = self.epoch = 0
        # Trace following: while the entries recorded so far equal the first ``fpos`` entries
        # of a cached trace's key (``follow``, a keys.KParts the trace cache offered for this
        # first call site), they are compared with it instead of being built and kept;
        # ``keyparts`` stays empty. The key taken is then that very object, whose hash is
        # kept and which the cache's own key holds: no hash or compare of the entries at the
        # flush. A difference puts the matched prefix in ``keyparts`` and recording goes on.
        self.follow = None
        self.fpos = 0
        stats.register_counter(self)

    def compute(self, port):
        shape = port.shape
        if shape is not self._shape:       # (a chain of ops shares its shape object)
            self._shape = shape
            n = math.prod(shape)
            if n > self.max_elements:
                self.max_elements = n
        lock = self.lock
        lock.acquire()          # (not ``with``: its method lookups cost ~80 ns an op)
        try:
            self.entries.append(("compute", port))
            self.pending_computes += 1
            kp = self.keyparts
            if kp is not None:
                try:
                    e = keys.trace_entry(port, self.num, self.kports)
                    f = self.follow
                    if f is None:
                        kp.append(e)
                    elif self.fpos < len(f) and f[self.fpos] == e:
                        self.fpos += 1
                    else:
                        self._unfollow()
                        self.keyparts.append(e)
                except Exception:  # noqa: BLE001 - an unkeyable op: this flush is not cached
                    self.keyparts = None
                    self.follow = None
        finally:
            lock.release()
        self.recorded += 1
        h = hooks.on_record
        if h is not None:
            h(port)
        return self.pending_computes

    def set_recording(self, rec):
        """A macro recording starts (``rec``) or ends (None) on this queue: the NumPy tier is
        off while it records (the C path's cached state is dropped: config.listeners)."""
        self.recording = rec
        for f in config.listeners:
            f()

    def hint(self, what, site):
        with self.lock:
            self.entries.append(("hint", what, site))

    def take(self):
        return self.take_trace()[0]

    def _unfollow(self):
        """Stop following: the matched prefix of the followed key becomes ``keyparts``."""
        f = self.follow
        if f is not None:
            self.keyparts[:0] = f[:self.fpos]
            self.follow, self.fpos = None, 0

    def key_entries(self):
        """The trace-key entries recorded so far (a new list; the queue is unchanged)."""
        with self.lock:
            kp, f = self.keyparts, self.follow
            if kp is None:
                return None
            return (list(f[:self.fpos]) if f is not None else []) + kp

    def take_trace(self):
        """(entries, key entries or None, numbered ports) -- and an empty queue. The key
        entries are a list, or the followed keys.KParts when the whole trace matched it."""
        with self.lock:
            kp, f = self.keyparts, self.follow
            if f is not None and kp is not None:
                kp = f if self.fpos == len(f) else list(f[:self.fpos]) + kp
            out = (self.entries, kp, self.kports)
            self.entries, self.keyparts, self.kports, self.num = [], [], [], {}
            self.follow, self.fpos = None, 0
            self.pending_computes = 0
            self.taken_max, self.max_elements, self._shape = self.max_elements, 0, None
            return out

    def __len__(self):
        return len(self.entries)


class _Local(threading.local):
    """This thread's work queue and the record path's note of temporaries (array.py): class
    defaults, so that a thread without them reads None and () without an exception raised."""
    q = None
    temps = ()


_local = _Local()


def current_queue() -> WorkQueue:
    q = getattr(_local, "q", None)
    if q is None:
        q = _local.q = WorkQueue()
    return q
