"""Values that live on the cluster: ``DistValue`` (an array's chunks as Dask futures, split
along axis 0; a read gathers only the chunks it touches) and the placeholder of a value not
launched yet."""
from __future__ import annotations

import collections
import math

import numpy as np

from ..core import atfork, stats
from ..core.errors import CancelledError, ExecutionError
from ..core.ir import strided

SUBMITTED: collections.deque = collections.deque(maxlen=4096)  # task keys, newest last
PENDING_TASKS: collections.deque = collections.deque(maxlen=4096)  # weakrefs to their futures


def cancel_pending(client):
    """A read interrupted (Ctrl-C): the tasks this process submitted that have not finished
    and that an array still wants are cancelled, so the next computation does not queue
    behind them on the workers; those arrays raise CancelledError when read."""
    futs = [f for f in (r() for r in list(PENDING_TASKS))
            if f is not None and f.status == "pending"]
    PENDING_TASKS.clear()
    if futs:
        client.cancel(futs)
    stats.add("dask_tasks_cancelled", len(futs))


class DistValue:
    """An array value held by Dask workers: chunk ``i`` holds rows ``bounds[i]:bounds[i+1]``
    of axis 0 (``bounds`` is None for a 0-d value, which has one chunk). Each chunk is a pair
    (future, item): the future's result, or item ``item`` of its tuple result."""

    __slots__ = ("shape", "dtype", "bounds", "refs", "sites", "_host", "forks", "__weakref__")

    def __init__(self, shape, dtype, bounds, refs, sites=()):
        self.shape, self.dtype, self.bounds, self.refs = tuple(shape), dtype, bounds, refs
        self.sites = tuple(sites)
        self.forks = atfork.forks()     # (made in this process, not inherited by a fork)
        self._host = None

    @property
    def nchunks(self):
        return len(self.refs) if self.refs else 0

    def __repr__(self):
        return f"DistValue({self.dtype}{list(self.shape)}, {self.nchunks} chunks)"

    # ---- reads --------------------------------------------------------------------------
    def _gather(self, idxs):
        if not self.refs:
            raise RuntimeError(f"internal error: {self!r} was released on the cluster before "
                               "it was read")
        if self.forks != atfork.forks():
            # the parent's Client is not usable in a forked child (its event loop's thread
            # was not carried over): a gather would wait forever
            raise ExecutionError("an array held by a Dask cluster cannot be read in a forked "
                                 "child process: the parent's connection to the cluster does "
                                 "not work here (read it in the parent, or connect in the "
                                 "child with ps.distributed.connect() and create it again)")
        refs = [self.refs[i] for i in idxs]
        client = _client_of(refs)
        try:
            vals = client.gather([f for f, _ in refs])
        except KeyboardInterrupt:
            cancel_pending(client)
            raise
        except Exception as e:  # noqa: BLE001 - delivered with the call sites
            sites = "\n  ".join(str(s) for s in self.sites) or "(unknown)"
            if "CancelledError" in type(e).__name__:
                raise CancelledError(f"cancelled: a KeyboardInterrupt interrupted a read while "
                                     f"the Dask tasks computing this array were queued "
                                     f"(compute it again to get its value); ops recorded "
                                     f"at:\n  {sites}") from e
            raise ExecutionError(f"{type(e).__name__}: {e}\n in a Dask task computing ops "
                                 f"recorded at:\n  {sites}") from e
        out = [v if it is None else v[it] for v, (_, it) in zip(vals, refs)]
        stats.add("dask_bytes_gathered", sum(int(np.asarray(a).nbytes) for a in out))
        stats.add("dask_chunks_gathered", len(out))
        return out

    def host(self):
        """The whole value as one host array (gathered once, then kept)."""
        if self._host is None:
            parts = self._gather(range(self.nchunks))
            a = parts[0] if len(parts) == 1 else np.concatenate(parts)
            self._host = np.ascontiguousarray(a, dtype=self.dtype).reshape(self.shape)
        return self._host

    def host_view(self, off, shape, st):
        """A strided view (element offset and strides into this value's C layout), gathering
        only the chunks whose rows it touches."""
        if self._host is not None or self.bounds is None or self.nchunks == 1 or not shape \
                or math.prod(shape) == 0:
            return strided(np.asarray(self.host()), off, shape, st)
        R = math.prod(self.shape[1:])
        lo, hi = _extent(off, shape, st)
        b0, b1 = lo // R, hi // R + 1
        idxs = [i for i in range(self.nchunks)
                if self.bounds[i] < b1 and self.bounds[i + 1] > b0]
        parts = self._gather(idxs)
        c0 = self.bounds[idxs[0]]
        a = parts[0] if len(parts) == 1 else np.concatenate(parts)
        a = np.ascontiguousarray(a, dtype=self.dtype)
        return np.array(strided(np.asarray(a), off - c0 * R, shape, st))


PENDING = DistValue((), None, None, None)   # placeholder: computed on the cluster, not launched


def _client_of(refs):
    """The client of a value's chunks (each a Dask future, which knows its client)."""
    for f, _ in refs:
        c = getattr(f, "client", None)
        if c is not None:
            return c
    raise RuntimeError("internal error: a distributed value without a Dask future")


def _extent(off, shape, st):
    """(lowest, highest) element index a strided view touches."""
    lo = hi = off
    for n, s in zip(shape, st):
        lo += min(0, (n - 1) * s)
        hi += max(0, (n - 1) * s)
    return lo, hi
