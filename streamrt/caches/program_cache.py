"""Program cache: kernel source -> compiled kernel, in memory (LRU) and on disk under
STREAMRT_CACHE_DIR (generated module + Numba's own cache), so a second process does not
compile again. Files are written atomically; a corrupt file is rewritten, never trusted."""
from __future__ import annotations

import importlib.util
import os
import sys
import threading

import cachetools

from .. import config, stats
from . import keys

_mem = cachetools.LRUCache(maxsize=1024)
_lock = threading.Lock()
_counters = {"memory_hits": 0, "disk_modules": 0, "new_modules": 0}


def _write_atomic(path, text):
    tmp = f"{path}.{os.getpid()}.{threading.get_ident()}.tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def numba_kernel(source: str, fn: str, device: str = "cpu"):
    """The compiled (lazily, on first call) Numba dispatcher for generated ``source``."""
    key = keys.program_key("numba", device, source)
    with _lock:
        d = _mem.get(key)
        if d is not None:
            _counters["memory_hits"] += 1
            return d, False
        folder = os.path.join(config.cache_dir(), "numba")
        os.makedirs(folder, exist_ok=True)
        path = os.path.join(folder, f"k_{key}.py")
        fresh = True
        try:
            with open(path) as f:
                fresh = f.read() != source
        except OSError:
            pass
        if fresh:
            _write_atomic(path, source)
            _counters["new_modules"] += 1
        else:
            _counters["disk_modules"] += 1
        if config.settings.debug >= 4:
            print(f"[streamrt] kernel k_{key}:\n{source}", file=sys.stderr)
        name = f"streamrt_k_{key}"
        spec = importlib.util.spec_from_file_location(name, path)
        mod = importlib.util.module_from_spec(spec)
        # Numba's cache unpickles references to the defining module by name.
        sys.modules[name] = mod
        spec.loader.exec_module(mod)
        d = getattr(mod, fn)
        _mem[key] = d
        return d, True


def recompile_uncached(source: str, fn: str, stale):
    """Replace a dispatcher whose on-disk entry could not be loaded by one compiled without
    the disk cache (the entry is rewritten the next time this source is generated)."""
    import numba
    d = numba.njit(parallel=True, nogil=True, error_model="numpy")(stale.py_func)
    key = keys.program_key("numba", "cpu", source)
    with _lock:
        _mem[key] = d
    return d


def note_first_call(dispatcher):
    """Count whether the first call compiled or loaded from Numba's on-disk cache."""
    st = dispatcher.stats
    if st.cache_hits:
        stats.add("kernels_loaded_from_disk")
    else:
        stats.add("kernels_compiled")


def cache_info() -> dict:
    return dict(_counters, memory_entries=len(_mem))


def clear_memory():
    with _lock:
        _mem.clear()
