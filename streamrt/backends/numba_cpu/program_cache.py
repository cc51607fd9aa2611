"""Program cache: generated kernel source -> compiled kernel, in memory (LRU) and on disk under
STREAMRT_CACHE_DIR (the generated module file + Numba's own ``cache=True`` files next to it),
so a second process compiles nothing it compiled before.

Each module holds two dispatchers of the same body: ``kernel`` (``parallel=True``) and
``kernel_serial`` (``prange`` -> ``range``) for arrays too small to be worth waking the
thread pool. Numba compiles each lazily, on its first call, so only the variants used are
ever built. Files are written atomically (temporary file, then rename) so several processes
may share the directory; a module that will not import, or a Numba cache entry that will not
load, is deleted and rebuilt, never trusted."""
from __future__ import annotations

import contextlib
import gc
import glob
import importlib.util
import os
import sys
import threading
import time

from cachetools import LRUCache

from ...core import atfork, config, hooks, keys, stats

_mem = LRUCache(1024)       # key -> Kernels
_by_source: dict = {}                           # source string -> Kernels (fast path)
_lock = threading.Lock()
_counters = {"memory_hits": 0, "disk_modules": 0, "new_modules": 0, "rebuilt": 0}


def _after_fork():
    global _lock
    _lock = threading.Lock()


atfork.register(_after_fork)


class Kernels:
    """The two dispatchers of one generated module, and which of them have run once."""
    __slots__ = ("parallel", "serial", "path", "key", "called", "source")

    def __init__(self, parallel, serial, path, key, source=None):
        self.parallel, self.serial, self.path, self.key = parallel, serial, path, key
        self.called = set()
        self.source = source


def _write_atomic(path, text):
    """Write ``path`` whole or not at all (a temporary file, then a rename), mode 0600
    whatever the umask: a reader -- another process sharing the directory -- never sees a
    partial file."""
    tmp = f"{path}.{os.getpid()}.{threading.get_ident()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "w") as f:
            fd = None
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        if fd is not None:
            os.close(fd)
        try:
            os.remove(tmp)
        except OSError:
            pass
        raise


def private(path):
    """Numba's own cache files of module ``path`` (written with the umask's mode) made 0600,
    their folder 0700."""
    folder = os.path.join(os.path.dirname(path), "__pycache__")
    try:
        os.chmod(folder, 0o700)
    except OSError:
        return
    for f in _numba_files(path):
        try:
            os.chmod(f, 0o600)
        except OSError:
            pass


def module_text(source: str, fn: str) -> str:
    """The module written to disk: a first line naming the versions it is built with (the
    file is compared whole with this text before it is loaded: a different source or
    version is never trusted), the parallel kernel and its serial twin."""
    head, sep, body = source.partition(f"def {fn}(")
    # (a serial call may come from any thread -- a Dask worker's, the application's -- where
    # numba.get_thread_id() is not a team index: the one scratch row of a blocked reduction)
    serial = body.replace("prange(", "range(").replace("get_thread_id()", "0")
    sdeco = "@njit(nogil=True, cache=True, error_model='numpy')"
    stamp = f"# streamrt kernel module; {keys.compiler_versions()}\n"
    return f"{stamp}{head}{sep}{body}\n\n{sdeco}\ndef {fn}_serial({serial}"


def _numba_files(path):
    folder, name = os.path.split(path)
    stem = name[:-3]
    return glob.glob(os.path.join(folder, "__pycache__", f"{stem}.*"))


def _discard(path):
    """Delete a module and its Numba cache files (a corrupt or stale entry)."""
    for f in [path] + _numba_files(path):
        try:
            os.remove(f)
        except OSError:
            pass


def _load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    # Numba's cache unpickles references to the defining module by name.
    sys.modules[name] = mod
    try:
        spec.loader.exec_module(mod)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return mod


def cache_root() -> str:
    return config.cache_dir()


_keys: dict = {}       # source -> program key (a hash of the source and the versions)


def _key_of(source, device="cpu"):
    k = _keys.get(source)
    if k is None:
        if len(_keys) > 4 * _mem.maxsize:
            _keys.clear()
        k = _keys[source] = keys.program_key("numba", device, source)
    return k


def _path(key):
    return os.path.join(config.cache_dir(), "numba", f"k_{key}.py")


def _write_module(key, source, fn):
    """The module file of ``source`` on disk (written, or checked and rewritten when it is not
    the text it should be); its path. (No import: Numba is not loaded here.)"""
    folder = os.path.join(config.cache_dir(), "numba")
    config.make_private_dir(folder)
    path = os.path.join(folder, f"k_{key}.py")
    text = module_text(source, fn)
    try:
        with open(path) as f:
            fresh = f.read() != text
    except OSError:
        fresh = True
    except UnicodeDecodeError:
        fresh = True
    if fresh:
        if os.path.exists(path):       # truncated or corrupt: never trusted
            _discard(path)
            _counters["rebuilt"] += 1
        _write_atomic(path, text)
        _counters["new_modules"] += 1
    else:
        _counters["disk_modules"] += 1
    return path


def module_file(source: str, fn: str):
    """(path, module name) of the module file of generated ``source`` (jit.py's compile
    worker builds it there)."""
    key = _key_of(source)
    with _lock:
        return _write_module(key, source, fn), f"streamrt_k_{key}"


def _marker(source, what):
    return _path(_key_of(source))[:-3] + f".{what}"


def _variant_file(source, serial, what=""):
    """``variant_marker`` of ``source``'s kernel module."""
    return variant_marker(_path(_key_of(source)), serial, what)


def variant_marker(module_path: str, serial: bool, what: str = "") -> str:
    """The file beside a kernel's module saying that variant is in Numba's disk cache (with
    ``what`` "gain-": what it would have saved, ``note_gain``)."""
    return module_path[:-3] + "." + what + ("serial" if serial else "parallel")


WORKER_LOCK = "compile-worker.lock"     # (under the cache root: held by live compile workers)


def worker_lock(cache_dir):
    """The cache directory's worker lock file, open and locked shared (jit.workers_idle waits
    while any holder lives), or None where locks are not available. jit.py takes it before
    it starts a compile worker and passes the descriptor down: the worker holds the lock
    from its first instant, so a process that exits at once after asking for a compile
    leaves it held (a worker taking it itself, once started, left a window in which a
    benchmark's warm process started before the compile it depends on)."""
    try:
        import fcntl        # (POSIX only: elsewhere no benchmark waits for the worker)
        f = open(os.path.join(cache_dir, WORKER_LOCK), "a")
    except (ImportError, OSError):
        return None
    try:
        fcntl.flock(f, fcntl.LOCK_SH)
    except OSError:
        f.close()
        return None
    return f


_held: set = set()       # cache roots whose kernel folder was seen (disk_may_hold)


def disk_may_hold() -> bool:
    """Whether the disk cache may hold kernels or their markers: its kernel folder exists.
    A first run with a new cache (a fresh machine, a new STREAMRT_CACHE_DIR) then looks for
    no marker file, and computes no program key -- the compiler versions: reading and
    hashing the helper modules, finding Numba's version, ~0.4 ms -- until it asks for a
    compile; what its own worker builds comes back to it through the worker's replies. A
    folder once seen is remembered (a scan kernel asks at every launch): if it went away,
    the marker lookups that follow find nothing, as they would have."""
    root = config.cache_dir()
    if root in _held:
        return True
    if os.path.isdir(os.path.join(root, "numba")):
        _held.add(root)
        return True
    return False


def compiled_on_disk(source: str, serial: bool) -> bool:
    """Whether a variant of ``source`` was compiled into the disk cache before (by this or an
    earlier process): its first call then loads it."""
    return disk_may_hold() and os.path.exists(_variant_file(source, serial))


def mark_compiled(source: str, serial: bool):
    try:
        _write_atomic(_variant_file(source, serial), "")
    except OSError:
        pass


def note_gain(source: str, serial: bool, gain: float):
    """Record what a variant of ``source`` would have saved over its interpreted runs in this
    process (jit.py: the next process loads Numba for it at once only if that paid)."""
    path = _variant_file(source, serial, "gain-")
    try:
        _write_atomic(path, repr(max(float(gain), noted_gain(source, serial))))
    except OSError:
        pass


def noted_gain(source: str, serial: bool) -> float:
    try:
        with open(_variant_file(source, serial, "gain-")) as f:
            return float(f.read())
    except (OSError, ValueError):
        return 0.0


_failed: dict = {}      # source -> why it does not compile (this process, and .failed markers)


class CompileFailed(RuntimeError):
    """A kernel whose compile failed before (in this process or, by its marker, an earlier
    one): not compiled again; the executor splits it or evaluates it with NumPy."""


def failed(source: str):
    """Why ``source`` does not compile, or None (memory first, then its disk marker)."""
    e = _failed.get(source)
    if e is None and disk_may_hold() and os.path.exists(_marker(source, "failed")):
        try:
            with open(_marker(source, "failed")) as f:
                e = f.read() or "compile failed"
        except (OSError, UnicodeDecodeError):
            e = "compile failed"
        _remember_failure(source, e)
    return e


def failed_marker(source: str) -> bool:
    return failed(source) is not None


def _remember_failure(source, error):
    if len(_failed) > 4 * _mem.maxsize:
        _failed.clear()
    _failed[source] = str(error or "compile failed")


def mark_failed(source: str, error: str):
    """Remember that ``source`` does not compile, here and on disk (the next process
    interprets or splits it at once)."""
    _remember_failure(source, error)
    try:
        _write_atomic(_marker(source, "failed"), str(error or ""))
    except OSError:
        pass


def numba_kernels(source: str, fn: str, device: str = "cpu") -> Kernels:
    """The Kernels for generated ``source`` (compiled lazily, on first call)."""
    k = _by_source.get(source)
    if k is not None:
        stats.add("program_cache_memory_hits")
        return k
    why = failed(source)
    if why is not None:
        raise CompileFailed(f"this kernel failed to compile before: {why}"[:500])
    key = keys.program_key("numba", device, source)
    with _lock:
        k = _mem.get(key)
        if k is not None:
            _counters["memory_hits"] += 1
            stats.add("program_cache_memory_hits")
            _by_source[source] = k
            return k
        path = _write_module(key, source, fn)
        text = module_text(source, fn)
        if config.settings.debug >= 4:
            print(f"[streamrt] kernel k_{key}:\n{source}", file=sys.stderr)
        name = f"streamrt_k_{key}"
        try:
            mod = _load(name, path)
        except Exception:  # noqa: BLE001 - a damaged file: rebuild it once
            _discard(path)
            _counters["rebuilt"] += 1
            _write_atomic(path, text)
            mod = _load(name, path)
        k = Kernels(getattr(mod, fn), getattr(mod, f"{fn}_serial"), path, key, source)
        _mem[key] = k
        if len(_by_source) > 4 * _mem.maxsize:
            _by_source.clear()
        _by_source[source] = k
        return k


def call(k: Kernels, serial: bool, args):
    """Run one variant; the first call of each variant compiles or loads it from disk, and a
    cache entry Numba cannot load is deleted and compiled afresh (counted)."""
    d = k.serial if serial else k.parallel
    if serial in k.called:
        return d(*args)
    t0 = time.perf_counter()
    try:
        with _slp():
            d(*args)
    except Exception as e:  # noqa: BLE001
        if _is_compile_error(e):
            _failed_call(k, e)
            raise
        stats.add("disk_cache_rejected")
        _discard_numba_cache(k)
        d = _fresh(d)
        if serial:
            k.serial = d
        else:
            k.parallel = d
        try:
            with _slp():
                d(*args)
        except Exception as e2:  # noqa: BLE001 - not the disk cache: the kernel fails
            _failed_call(k, e2)
            raise
    dt = time.perf_counter() - t0
    if not d.stats.cache_hits:
        private(k.path)                 # (Numba wrote its cache files with the umask's mode)
    if not os.path.exists(variant_marker(k.path, serial)):
        try:                             # (jit.py: this variant is in the disk cache)
            _write_atomic(variant_marker(k.path, serial), "")
        except OSError:
            pass
    k.called.add(serial)
    if config.settings.gc_freeze:
        _freeze()
    if d.stats.cache_hits:
        stats.add("kernels_loaded_from_disk")
        stats.add("program_cache_disk_hits")
        level = "disk"
    else:
        stats.add("kernels_compiled")
        stats.add("compile_seconds", dt)
        level = "compiled"
    prof = hooks.profiler
    if prof is not None:
        prof.compile(t0, dt, level, f"k_{k.key}{'_serial' if serial else ''}")
    return None


def _failed_call(k, e):
    """A variant's first call failed to compile: remembered (memory and disk) and dropped
    from the memory cache, so the next launch splits or falls back at once."""
    stats.add("compile_failures")
    src = k.source
    if src is not None:
        mark_failed(src, f"{type(e).__name__}: {str(e)[:1500]}")
        _by_source.pop(src, None)
    with _lock:
        _mem.pop(k.key, None)


def _freeze():
    """Collect, then move every surviving object to the collector's permanent generation
    (``gc.freeze``). Loading Numba and a first kernel leaves a large graph of tracked objects
    (more with every kernel) that every full collection would scan again, a stall at a random
    step of a loop. The collect first frees what compiling left as cyclic garbage; it costs in
    proportion to the objects created since the last freeze. Objects alive now and
    turned into cyclic garbage later are not collected (STREAMRT_GC_FREEZE=0 keeps the
    collector's defaults)."""
    gc.collect()
    gc.freeze()


@contextlib.contextmanager
def _slp():
    """LLVM's SLP vectoriser on while a first call compiles one of streamrt's kernels (Numba
    reads ``config.SLP_VECTORIZE`` when it builds a module's pass manager, and leaves it off by
    default): the unrolled lanes of full reductions (render.py ``SPAN``) become vector
    registers. Restored after: other Numba code in
    the process keeps Numba's default. The generated header names it, so kernels cached on
    disk by a streamrt that did not do this are not reused."""
    from numba.core import config as nconfig    # (Numba: loaded with the first kernel)
    old = nconfig.SLP_VECTORIZE
    nconfig.SLP_VECTORIZE = 1
    try:
        yield
    finally:
        nconfig.SLP_VECTORIZE = old


def _is_compile_error(e):
    from numba.core import errors               # (as above)
    return isinstance(e, (errors.TypingError, errors.LoweringError, errors.UnsupportedError))


def _discard_numba_cache(k):
    for f in _numba_files(k.path):
        try:
            os.remove(f)
        except OSError:
            pass


def _fresh(stale):
    """A new dispatcher for ``stale``'s function: it compiles afresh (the damaged cache files
    are gone) and writes a sound cache entry for the next process."""
    import numba                                # (as above)
    opts = dict(stale.targetoptions)
    opts.pop("cache", None)
    opts.pop("nopython", None)      # implied by njit (passing it warns)
    return numba.njit(cache=True, **opts)(stale.py_func)


def cache_info() -> dict:
    st = config.cache_status()
    return dict(_counters, memory_entries=len(_mem), memory_max=_mem.maxsize,
                directory=os.path.join(st["directory"], "numba"), persistent=st["persistent"],
                reason=st["reason"])


def clear_memory(disk: bool = False):
    with _lock:
        _mem.clear()
        _by_source.clear()
        if disk:
            folder = os.path.join(config.cache_dir(), "numba")
            for f in glob.glob(os.path.join(folder, "k_*.py")):
                _discard(f)
