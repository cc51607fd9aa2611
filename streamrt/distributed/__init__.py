"""``ps.distributed``: arrays partitioned along axis 0 whose chunks live on Dask workers.
``connect`` attaches a dask.distributed Client; ``asarray(x, chunks=...)``, ``from_dask`` and
``from_npy_stack`` create arrays; the code written with them is recorded exactly as for local
arrays, and every flush that reads one runs on the cluster (executor.py)."""
from __future__ import annotations

import itertools
import math
import warnings

import numpy as np

from ..core import stats
from ..core.errors import ArgumentError, callsite, record_error
from ..core.ir import Port
from ..runtime import cscheduler
from ..frontend.array import Array, canonical_dtype, host_copy
from .cluster import close, connect, get_client
from .values import DistValue

_ids = itertools.count(1)


def parse_chunks(chunks, shape, site=None):
    """Row bounds along axis 0 from a ``chunks`` spec: an int (rows per chunk), a tuple of row
    counts for axis 0, a per-axis tuple whose entries past axis 0 are whole (``-1``/``None``/
    the axis size), or a dict ``{0: rows}``."""
    if not shape:
        raise record_error(ArgumentError, "a distributed array needs at least one dimension",
                           site)
    n0 = shape[0]
    c = chunks
    if isinstance(c, dict):
        bad = [k for k, v in c.items() if k not in (0, -len(shape)) and v not in (-1, None)
               and v != shape[k]]
        if bad:
            raise record_error(ArgumentError, f"chunks={chunks!r}: only axis 0 can be split "
                               "into chunks (axes past 0 stay whole)", site)
        c = c.get(0, c.get(-len(shape), n0))
    if isinstance(c, (tuple, list)) and c and isinstance(c[0], (tuple, list)):
        rest = c[1:]
        for ax, r in enumerate(rest, 1):
            ok = r in (-1, None) or r == shape[ax] or (isinstance(r, (tuple, list))
                                                       and tuple(r) == (shape[ax],))
            if not ok:
                raise record_error(ArgumentError, f"chunks={chunks!r}: only axis 0 can be split "
                                   "into chunks (axes past 0 stay whole)", site)
        c = tuple(c[0])
    elif isinstance(c, (tuple, list)) and len(c) == len(shape) and len(shape) > 1 \
            and all(isinstance(x, (int, np.integer)) or x is None for x in c):
        for ax in range(1, len(shape)):
            if c[ax] not in (-1, None, shape[ax]):
                raise record_error(ArgumentError, f"chunks={chunks!r}: only axis 0 can be "
                                   "split into chunks (axes past 0 stay whole)", site)
        c = c[0]
    if c in (-1, None):
        c = max(n0, 1)
    if isinstance(c, (int, np.integer)) and not isinstance(c, bool):
        if c <= 0:
            raise record_error(ArgumentError, f"chunks must be positive, got {chunks!r}", site)
        b = list(range(0, n0, int(c))) + [n0]
        return b if n0 else [0, 0]
    if isinstance(c, (tuple, list)) and all(isinstance(x, (int, np.integer)) for x in c):
        if sum(c) != n0 or any(x < 0 for x in c):
            raise record_error(ArgumentError, f"chunks={chunks!r} do not add up to axis 0 of "
                               f"shape {tuple(shape)}", site)
        b = [0]
        for x in c:
            if x:
                b.append(b[-1] + int(x))
        return b if len(b) > 1 else [0, 0]
    raise record_error(ArgumentError, f"cannot understand chunks={chunks!r} (an int, a tuple "
                       "of row counts, or a per-axis tuple splitting axis 0 only)", site)


def _identity(x):
    return x


def _wrap(value, site):
    p = Port("const", "const", value.dtype, value.shape, value=value, site=site)
    return Array._wrap(p)


def asarray(x, chunks, dtype=None):
    """A distributed copy of array-like ``x`` split along axis 0 by ``chunks``. Each chunk is
    held by a Dask task that carries its data (so Dask can recompute a chunk a lost worker
    held); the data travels through the scheduler once."""
    site = callsite()
    if isinstance(x, Array):
        x = x.numpy()
    a = host_copy(x, site, dtype)
    bounds = parse_chunks(chunks, a.shape, site)
    client = get_client()
    n = next(_ids)
    with warnings.catch_warnings():
        # the data is in the graph on purpose (recomputable after a lost worker)
        warnings.filterwarnings("ignore", message=".*large graph.*")
        futs = [client.submit(_identity, a[b0:b1], key=f"streamrt-input-{n}-{i}", pure=False)
                for i, (b0, b1) in enumerate(zip(bounds[:-1], bounds[1:]))]
    stats.add("dask_input_chunks", len(futs))
    return _wrap(DistValue(a.shape, a.dtype, bounds, [(f, None) for f in futs], (site,)), site)


def from_dask(darr):
    """A streamrt array over a ``dask.array`` (rechunked so that only axis 0 is split). Its
    chunks are computed on the cluster from ``darr``'s graph, which Dask keeps to recompute a
    lost chunk."""
    site = callsite()
    if not hasattr(darr, "to_delayed") or not hasattr(darr, "chunks"):
        raise record_error(ArgumentError, f"from_dask() takes a dask.array.Array, got "
                           f"{type(darr).__name__}", site)
    if darr.ndim == 0:
        raise record_error(ArgumentError, "a distributed array needs at least one dimension",
                           site)
    if any(math.isnan(c) for cs in darr.chunks for c in cs):
        raise record_error(ArgumentError, "from_dask(): chunk sizes are unknown (call "
                           "compute_chunk_sizes() first)", site)
    dt = canonical_dtype(darr.dtype, site)
    if darr.dtype != dt:
        darr = darr.astype(dt)
    if any(len(c) > 1 for c in darr.chunks[1:]):
        darr = darr.rechunk({ax: -1 for ax in range(1, darr.ndim)})
        stats.add("dask_rechunks")
    bounds = [0]
    for c in darr.chunks[0]:
        bounds.append(bounds[-1] + int(c))
    client = get_client()
    parts = list(darr.to_delayed().ravel())
    futs = client.compute(parts)
    stats.add("dask_input_chunks", len(futs))
    return _wrap(DistValue(tuple(int(s) for s in darr.shape), dt, bounds,
                           [(f, None) for f in futs], (site,)), site)


def from_npy_stack(dirname):
    """``from_dask(dask.array.from_npy_stack(dirname))``: one chunk per ``.npy`` file."""
    import dask.array as da        # (dask: an optional dependency)
    return from_dask(da.from_npy_stack(dirname))


def to_dask(x):
    """A ``dask.array`` over a streamrt array's chunks (a local array becomes one chunk)."""
    import dask.array as da        # (dask: an optional dependency)
    p = x._port
    cscheduler.ensure(p)
    base, off, st = p.base_view()
    v = base.value
    if not isinstance(v, DistValue) or p.kind == "view":
        return da.from_array(np.asarray(x.numpy()), chunks=-1)
    blocks = []
    for i, (f, it) in enumerate(v.refs):
        rows = (v.bounds[i + 1] - v.bounds[i],) if v.bounds is not None else ()
        g = f if it is None else get_client().submit(lambda t, j=it: t[j], f, pure=False)
        blocks.append(da.from_delayed(g, rows + tuple(v.shape[1:]), dtype=v.dtype))
    return da.concatenate(blocks) if len(blocks) > 1 else blocks[0]


def chunks(x):
    """The row bounds along axis 0 of a distributed array (None for a local one)."""
    cscheduler.ensure(x._port)
    v = x._port.base_view()[0].value
    return list(v.bounds) if isinstance(v, DistValue) and v.bounds is not None else None


def is_distributed(x) -> bool:
    """True if ``x``'s value lives (or will live) on the cluster."""
    return isinstance(getattr(x, "_port", None) and x._port.base_view()[0].value, DistValue)


__all__ = ["connect", "get_client", "close", "asarray", "from_dask", "from_npy_stack",
           "to_dask", "chunks", "is_distributed", "parse_chunks"]
