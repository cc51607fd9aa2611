"""IR ports and the per-thread work queue: compute and hint entries, each with a call site
(a release is the port's reference count reaching zero, read at the flush)."""
from __future__ import annotations

import itertools
import math
import threading

import numpy as np

from .. import config, stats
from ..caches import keys

_ids = itertools.count(1)

# Debugger hook: called with every recorded port (reference mode, breakpoints); None = off.
on_record = None

# Port states
NEW, SUBMITTED, DONE, FAILED, DEAD = range(5)


def c_strides(shape):
    st, acc = [], 1
    for s in reversed(shape):
        st.append(acc)
        acc *= s
    return tuple(reversed(st))


class Port:
    """One IR node: the output of one recorded op (immutable description + its runtime state).

    kind: 'const' (host data), 'scalar' (a kernel parameter), 'map', 'reduce', 'view',
    'intrinsic'. ``params`` holds the static arguments the generated code specialises on."""

    __slots__ = ("id", "kind", "op", "dtype", "shape", "inputs", "params", "site", "queue",
                 "value", "state", "error", "nrefs", "scalar", "loop_dtype", "ref",
                 "holders", "captured", "eager_views", "counted", "__weakref__")

    def __init__(self, kind, op, dtype, shape, inputs=(), params=(), site=None, queue=None,
                 value=None, scalar=None, loop_dtype=None):
        self.id = next(_ids)
        self.kind = kind
        self.op = op
        self.dtype = dtype
        self.shape = shape
        self.inputs = inputs
        self.params = params
        self.site = site
        self.queue = queue
        self.value = value
        self.scalar = scalar
        self.loop_dtype = loop_dtype
        self.error = None
        self.ref = None            # reference-mode shadow value (debug/reference.py)
        self.nrefs = 0
        self.holders = None        # {id: weakref} of Arrays that may alias this base (mutation)
        # the NumPy tier (scheduler/tiers.py): the work queue(s) whose recorded, not yet run
        # ops read this computed base; its live views made by the NumPy tier (not in
        # ``holders``: a concrete base is written in place); this view is one of them
        self.captured = None
        self.eager_views = 0
        self.counted = False
        self.state = DONE if kind in ("const", "scalar") else NEW

    # ---- views ---------------------------------------------------------------------------
    def base_view(self):
        """(base port, element offset, element strides) through which this port is read."""
        if self.kind == "view":
            off, st = self.params
            return self.inputs[0], off, st
        return self, 0, c_strides(self.shape)

    @property
    def size(self):
        return math.prod(self.shape)

    @property
    def released(self):
        return self.nrefs <= 0

    def host_value(self):
        """The computed value as an ndarray (views are built over the base's buffer)."""
        if self.counted:
            return self.value                           # (a NumPy-tier view: its ndarray)
        if self.kind == "view":
            base, off, st = self.base_view()
            if hasattr(base.value, "host_view"):      # held by Dask workers: gather what is read
                return base.value.host_view(off, self.shape, st)
            return strided(_host(base.value), off, self.shape, st)
        return _host(self.value)

    def __repr__(self):
        return f"Port#{self.id}({self.kind}:{self.op} {self.dtype}{list(self.shape)})"


def scratch_port(shape, dtype, site=None):
    """An uninitialised host buffer for an array every element of which a region write
    will set (``roll``, ``concatenate``, frontend/pieces.py); the first write takes the
    buffer over in place (proggen/analysis.py). Counted as allocated."""
    buf = np.empty(tuple(shape), dtype)
    stats.add("bytes_allocated", buf.nbytes)
    stats.add("buffers_allocated")
    return Port("const", "const", buf.dtype, buf.shape, value=buf, params=("scratch",),
                site=site)


def is_scratch(p):
    return p.kind == "const" and p.params == ("scratch",)


def strided(a, off, shape, st):
    """A view of C-ordered ndarray ``a``: element offset ``off``, ``shape``, element strides
    ``st`` (a fresh empty array when nothing is viewed)."""
    flat = a.reshape(-1)
    shape = tuple(shape)
    if flat.size == 0 or 0 in shape:
        return np.empty(shape, a.dtype)
    return np.lib.stride_tricks.as_strided(flat[off:], shape, [s * flat.itemsize for s in st])


def _host(v):
    """A port value as a host ndarray: a device executor's DeviceArray is copied back once."""
    return v if v is None or isinstance(v, np.ndarray) else v.host()


def _lock_type():
    """threading.RLock, or its twin the C record path takes without a method call."""
    from ..frontend import native
    return native.QueueLock if native.QueueLock is not None else threading.RLock


_queue_lock = _lock_type()


class WorkQueue:
    """The recorded-but-not-yet-scheduled entries of one application thread, and the trace
    key accumulated alongside them (one key entry per compute entry, see caches/keys.py)."""

    # (slots: the C record path, streamrt/_native.c, reads and writes them at fixed offsets)
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
        if on_record is not None:
            on_record(port)
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


_local = threading.local()


def current_queue() -> WorkQueue:
    q = getattr(_local, "q", None)
    if q is None:
        q = _local.q = WorkQueue()
    return q
