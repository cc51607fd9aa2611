"""The attached Dask cluster: ``connect``, ``get_client``, ``close`` (``ps.distributed``). While
one is attached the C-Scheduler routes to the Dask executor every flush that reads an array
held by its workers (core/hooks.distributed)."""
from __future__ import annotations

import threading

from ..core import atfork, hooks
from . import executor

_lock = threading.Lock()
_client = None
_owned = None          # (client, cluster) created by connect() itself


def connect(client_or_address=None, **cluster_kwargs):
    """Attach a Dask cluster: a ``distributed.Client``, a scheduler address
    (``"tcp://host:8786"``), or None for a new ``LocalCluster`` of worker processes
    (``n_workers=2, threads_per_worker=1`` unless given in ``cluster_kwargs``). Returns the
    Client. Arrays created before a reconnect stay bound to the old client."""
    global _client, _owned
    from distributed import Client, LocalCluster    # (dask: an optional dependency)
    with _lock:
        if isinstance(client_or_address, Client):
            _client = client_or_address
        elif isinstance(client_or_address, str):
            _client = Client(client_or_address)
        elif client_or_address is None:
            kw = dict(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=":0")
            kw.update(cluster_kwargs)
            cluster = LocalCluster(**kw)
            _client = Client(cluster)
            _owned = (_client, cluster)
        else:
            raise TypeError("connect() takes a distributed.Client, a scheduler address or None, "
                            f"got {type(client_or_address).__name__}")
        _install()
        return _client


def get_client():
    """The attached Client: the one given to ``connect``, else Dask's current default client,
    else a new LocalCluster (``connect()``)."""
    if _client is not None:
        return _client
    try:
        from distributed import get_client as _dask_client     # (as above)
        c = _dask_client()
    except (ValueError, ImportError):
        c = None
    return connect(c)


def close():
    """Detach; a cluster ``connect()`` started itself is shut down."""
    global _client, _owned
    with _lock:
        if _owned is not None:
            c, cl = _owned
            c.close()
            cl.close()
        _client, _owned = None, None
        ex = executor.get()
        ex.client = None
        hooks.set_distributed(None)


def _install():
    """The C-Scheduler routes flushes that read the cluster's arrays to the Dask executor."""
    ex = executor.get()
    ex.client = _client
    hooks.set_distributed(ex)


def _after_fork():
    """In a forked child the parent's Client cannot be used (its event loop's thread is the
    parent's): detach without closing what belongs to the parent; arrays held by the
    cluster then raise a clear error when read (values.DistValue) instead of waiting."""
    global _lock, _client, _owned
    _lock = threading.Lock()
    if _client is not None:
        _client, _owned = None, None
        executor.get().client = None
        hooks.set_distributed(None)


atfork.register(_after_fork)
