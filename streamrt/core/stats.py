"""Runtime counters: what ps.runtime_stats() returns and ps.reset_stats() zeroes."""
from __future__ import annotations

import threading
import weakref
from collections import Counter

from . import atfork

_lock = threading.Lock()
_c: Counter = Counter()


def _after_fork():
    global _lock
    _lock = threading.Lock()


atfork.register(_after_fork)

KEYS = ("ops_recorded", "kernels_compiled", "kernels_loaded_from_disk", "kernels_launched",
        "intrinsics_launched", "sequences_submitted", "sequences_cancelled", "flushes", "bytes_allocated",
        "buffers_allocated", "host_buffers_reused", "kernel_splits", "fallbacks",
        "fallback_to_reference", "disk_cache_rejected", "trace_cache_hits", "trace_cache_misses",
        "trace_cache_shape_hits", "trace_cache_offset_hits", "first_sights",
        "macro_cache_hits", "macro_cache_misses", "macro_calls_at_once", "program_cache_memory_hits",
        "program_cache_disk_hits",
        "compile_seconds", "kernels_interpreted", "compiles_requested", "compile_failures",
        "kernels_slower_compiled", "inline_sequences", "worker_sequences", "direct_replays",
        "reference_mismatches",
        "bytes_to_device", "bytes_to_host", "fp64_fallbacks", "host_round_trips",
        # placement (runtime/placement.py: placements_<backend> are declared there) and device
        # memory (backends/device.py)
        "placements_cpu", "placement_explorations", "device_spills",
        "bytes_spilled", "device_alloc_retries", "device_oom_splits", "device_oom_fallbacks",
        # distributed execution (distributed/)
        "dask_sequences", "dask_tasks", "dask_kernel_tasks", "dask_kernel_steps",
        "dask_combine_tasks", "dask_rowwise_tasks", "dask_whole_tasks", "dask_rechunks",
        "dask_input_chunks", "dask_chunks_gathered", "dask_bytes_gathered", "dask_flow_waits",
        "dask_tasks_cancelled")


_sources = weakref.WeakSet()     # objects with a ``recorded`` count (work queues)
_runs = weakref.WeakSet()        # objects counting ``runs`` of fixed ``counts`` (direct plans)
_readers: list = []              # (read, reset) of figures kept elsewhere


def declare(*keys) -> None:
    """Counters that ``runtime_stats()`` lists (zero until counted) besides KEYS."""
    global KEYS
    with _lock:
        KEYS = KEYS + tuple(k for k in keys if k not in KEYS)


def register_counter(obj) -> None:
    with _lock:
        _sources.add(obj)


def add(key: str, n: int = 1) -> None:
    with _lock:
        _c[key] += n


def register_reader(read, reset) -> None:
    """Figures kept elsewhere (the C record path's): ``read(snapshot)`` adds them to
    ``runtime_stats()``, ``reset()`` zeroes them with ``reset_stats()``."""
    with _lock:
        _readers.append((read, reset))


def register_runs(obj) -> None:
    """``obj.counts`` ((key, n) pairs) are added ``obj.runs`` times to the counters: a hot path
    counts a run with one integer increment instead of a lock and several dict updates."""
    with _lock:
        _runs.add(obj)


def get(key: str):
    """One counter's current value."""
    return _c.get(key, 0)


def runtime_stats() -> dict:
    """A snapshot of the counters (all keys present, zero if nothing happened)."""
    with _lock:
        d = {k: 0 for k in KEYS}
        d.update(_c)
        d["ops_recorded"] += sum(q.recorded for q in list(_sources))
        for read, _ in _readers:
            read(d)
        for o in list(_runs):
            if o.runs:
                for k, n in o.counts:
                    d[k] += n * o.runs
        return d


def reset_stats() -> None:
    with _lock:
        _c.clear()
        for _, reset in _readers:
            reset()
        for q in list(_sources):
            q.recorded = 0
        for o in list(_runs):
            o.runs = 0
