"""Settings: every STREAMRT_* environment flag in one place, each also usable as a context manager."""
from __future__ import annotations

import atexit
import contextlib
import os
import threading
import warnings
import weakref
from typing import Any


def _bool(v: str) -> bool:
    return v.strip().lower() not in ("", "0", "false", "no", "off")


class Flag:
    """One STREAMRT_* setting."""

    __slots__ = ("name", "default", "parse", "doc", "in_key")

    def __init__(self, name, default, parse, doc, in_key=False):
        self.name = name          # environment variable
        self.default = default
        self.parse = parse        # str -> value
        self.doc = doc
        self.in_key = in_key      # does the flag change generated code (enters cache keys)?

    def __repr__(self):
        return f"Flag({self.name!r}, default={self.default!r})"


FLAGS = {
    "backend": Flag("STREAMRT_BACKEND", "auto", str,
                    "Executor: auto (each program sequence where it is estimated fastest, see "
                    "docs/devices.md) | reference | cpu | opencl | cuda (opencl/cuda fall back "
                    "to cpu with a warning when no device works)", in_key=True),
    "device_min_elements": Flag("STREAMRT_DEVICE_MIN_ELEMENTS", 1 << 18, int,
                                "backend=auto: sequences smaller than this whose inputs are on "
                                "the host stay on the CPU without consulting the devices"),
    "eager_elements": Flag("STREAMRT_EAGER_ELEMENTS", 1 << 16, int,
                           "The NumPy tier: an op whose array inputs are computed host arrays "
                           "and whose inputs and result have fewer elements than this runs at "
                           "once through NumPy instead of being recorded for fusion (0: record "
                           "every op)"),
    "batch_products": Flag("STREAMRT_BATCH_PRODUCTS", True, _bool,
                           "The NumPy tier: a loop's vector-matrix products whose vector steps "
                           "through one buffer (A[i, :] @ B for i = 0, 1, ...) are computed a "
                           "block of rows at a time as one matrix product (runtime/products.py; "
                           "answers equal NumPy's up to rounding); 0: one by one, as NumPy"),
    "split_elements": Flag("STREAMRT_SPLIT_ELEMENTS", 1 << 16, int,
                           "The NumPy tier on two cores: an element-wise op over this many "
                           "elements or more, run through NumPy (an interpreted kernel's op, "
                           "an op at once), runs NumPy's loop on two threads, half each "
                           "(needs the C path and two CPUs; 0: one thread)"),
    "jit": Flag("STREAMRT_JIT", "background", str,
                "When kernels compile: background (a kernel runs through NumPy until the cost "
                "model says compiling it pays, then a worker process compiles it and its next "
                "launch loads it) | sync (on first launch, on the launching thread) | off "
                "(never: every kernel runs through NumPy)"),
    "jit_margin": Flag("STREAMRT_JIT_MARGIN", 1.0, float,
                       "Compile a kernel once the time it would have saved so far is this many "
                       "times what switching costs (loading Numba the first time, loading the "
                       "kernel; 1: break even, as a ski rental); 0: at its first run"),
    "jit_runs": Flag("STREAMRT_JIT_RUNS", 1 << 30, int,
                     "... or once it has run this many times interpreted"),
    "progress": Flag("STREAMRT_PROGRESS", "auto", str,
                     "A status line on stderr while kernels compile in the background for "
                     "more than half a second: auto (when stderr is a terminal) | on | off"),
    "device_memory_limit": Flag("STREAMRT_DEVICE_MEMORY_LIMIT", 0, int,
                                "Bytes of device memory an OpenCL/CUDA executor may use (0: the "
                                "device's own size); past it buffers are spilled to the host"),
    "debug": Flag("STREAMRT_DEBUG", 0, int,
                  "1 cache decisions, 2 kernel timings, 3 fusion groups, 4 generated source"),
    "strict": Flag("STREAMRT_STRICT", False, _bool,
                   "Make the NumPy fallback of __array_function__ an error instead of a warning"),
    "cache_dir": Flag("STREAMRT_CACHE_DIR", "", str,
                      "Where generated kernels and compiled code are stored (default: user cache dir)"),
    "native": Flag("STREAMRT_NATIVE", True, _bool,
                   "Record the common operators with the C extension (frontend/_native.c, built "
                   "at install when a C compiler is there; read at import); 0: the Python path "
                   "alone (same ports, keys and results, ~3x the recording time)"),
    "queue_threshold": Flag("STREAMRT_QUEUE_THRESHOLD", 4096, int,
                            "Work-queue length that triggers a flush"),
    "max_kernel_ops": Flag("STREAMRT_MAX_KERNEL_OPS", 128, int,
                           "Largest number of ops ProgGen fuses into one kernel", in_key=True),
    "loop_kernel_elements": Flag("STREAMRT_LOOP_KERNEL_ELEMENTS", 1 << 18, int,
                                 "A flush that repeats a loop body is cut into kernels at its "
                                 "iterations (alike kernels: one compile); kernels over fewer "
                                 "elements than this hold as many iterations as 32 ops allow "
                                 "(at least one), larger ones as many as "
                                 "STREAMRT_MAX_KERNEL_OPS allows", in_key=True),
    "max_inflight": Flag("STREAMRT_MAX_INFLIGHT", 32, int,
                         "Flow control: program sequences in flight before the application blocks"),
    "trace_cache": Flag("STREAMRT_TRACE_CACHE", True, _bool,
                        "Re-use the program sequence of a repeated trace (0: ProgGen at every flush)"),
    "trace_cache_size": Flag("STREAMRT_TRACE_CACHE_SIZE", 1024, int,
                             "Traces kept in the trace cache (LRU; at most 16 per first call site)"),
    "inline_elements": Flag("STREAMRT_INLINE_ELEMENTS", 1 << 16, int,
                            "Sequences up to this many elements run on the calling thread when "
                            "nothing is in flight and their kernels run single-threaded "
                            "(STREAMRT_SERIAL_ELEMENTS) (0: always asynchronous)"),
    "direct_replay": Flag("STREAMRT_DIRECT_REPLAY", True, _bool,
                          "A macro replay whose kernels read computed inputs runs them from the "
                          "call when the pipeline is idle (no ports or E-Scheduler round)"),
    "host_heap_bytes": Flag("STREAMRT_HOST_HEAP_BYTES", 1 << 30, int,
                            "Linux/glibc: freed host buffers up to this size stay in the "
                            "process heap for reuse instead of being unmapped (0: malloc's "
                            "defaults); see docs/guide.md"),
    "gc_freeze": Flag("STREAMRT_GC_FREEZE", True, _bool,
                      "After each kernel is first compiled or loaded, collect garbage once and "
                      "freeze the surviving objects (gc.freeze): Numba's object graph then no "
                      "longer makes every full collection a ~70 ms stall; and one full "
                      "collection at the end of the import; see docs/guide.md"),
    "serial_elements": Flag("STREAMRT_SERIAL_ELEMENTS", 1 << 15, int,
                            "Kernels over at most this many elements run single-threaded"),
    "profile": Flag("STREAMRT_PROFILE", "", str,
                    "Record a profile of the whole run into this file (see streamrt-prof)"),
    "reference": Flag("STREAMRT_REFERENCE", False, _bool,
                      "Debugger: also evaluate every op unfused with NumPy and compare results"),
    "reference_compare": Flag("STREAMRT_REFERENCE_COMPARE", "both", str,
                              "When to compare with the reference: after | copy-out | both | none"),
    "reference_action": Flag("STREAMRT_REFERENCE_ACTION", "raise", str,
                             "On a reference mismatch: raise | warn | log"),
    "fusion": Flag("STREAMRT_FUSION", True, _bool, "Fuse ops into kernels (0: one kernel per op)",
                   in_key=True),
    "fast_math": Flag("STREAMRT_FAST_MATH", True, _bool,
                      "Vectorisable polynomial exp/log/expm1/log1p/tanh/... in CPU kernels (0: "
                      "Numba's scalar libm calls); see docs/fastmath.md", in_key=True),
    "fuse_scans": Flag("STREAMRT_FUSE_SCANS", True, _bool,
                       "CPU: fuse cumsum/cumprod with their element-wise producers (0: the "
                       "scan is an intrinsic after a producer kernel)", in_key=True),
    "row_fusion": Flag("STREAMRT_ROW_FUSION", True, _bool,
                       "CPU: a row reduction and the kernels that use its per-row result "
                       "(softmax, layer norm) fuse into one kernel that runs its phases row by "
                       "row (0: one kernel per phase)", in_key=True),
}

# distributed execution on Dask (streamrt/distributed.py, executors/dask.py)
FLAGS["dask_inflight"] = Flag("STREAMRT_DASK_INFLIGHT", 4, int,
                              "Program sequences computing on the Dask cluster at once")
FLAGS["dask_fanin"] = Flag("STREAMRT_DASK_FANIN", 8, int,
                           "Fan-in of the combine tree of a reduction over chunks")


def declare(key, flag):
    """Add a setting of a part that declares its own (a backend's: backends/<folder>/)."""
    if FLAGS.get(key, flag) is not flag:
        raise KeyError(f"streamrt setting {key!r} declared twice")
    FLAGS[key] = flag


class Settings(threading.local):
    """Current values. Read from the environment once; override with ``ps.config.set`` (all
    threads) or ``with ps.config.override(...)`` (this thread). Resolved values are kept as
    plain attributes of the per-thread instance, so a read is one attribute lookup."""

    def __init__(self):
        self._overrides: dict[str, Any] = {}
        # (with the thread, which ended if its weak reference is dead: its dict is dropped,
        # else every thread that ever read a setting would keep one)
        me = weakref.ref(threading.current_thread())
        _thread_dicts[:] = [(t, d) for t, d in _thread_dicts if t() is not None]
        _thread_dicts.append((me, self.__dict__))

    def __getattr__(self, item):       # only called when the value is not cached yet
        if item.startswith("_"):
            raise AttributeError(item)
        flag = FLAGS.get(item)
        if flag is None:
            raise AttributeError(f"unknown streamrt setting {item!r}; known: {sorted(FLAGS)}")
        ov = self.__dict__.get("_overrides", {})
        if item in ov:
            v = ov[item]
        elif item in _GLOBAL:
            v = _GLOBAL[item]
        else:
            v = _ENV.get(item, _MISSING)
            if v is _MISSING:
                raw = os.environ.get(flag.name)
                v = _ENV[item] = flag.default if raw in (None, "") else flag.parse(raw)
        self.__dict__[item] = v
        return v


_MISSING = object()
_ENV: dict[str, Any] = {}      # values read from the environment (once; see reload())
_GLOBAL: dict[str, Any] = {}
_thread_dicts: list = []       # (thread, its cached values) of live threads (set/reload)


listeners: list = []          # called after any setting changed (frontend/native.py)


def _invalidate(names=None):
    for _, d in list(_thread_dicts):
        for k in list(d):
            if k != "_overrides" and (names is None or k in names or k == "_settings_key"):
                d.pop(k, None)
    for f in listeners:
        f()


settings = Settings()


def reload():
    """Read the STREAMRT_* environment variables again (they are read once, on first use)."""
    _ENV.clear()
    _invalidate()


def set(**kw):  # noqa: A001 - mirrors jax.config.update
    """Set settings for the whole process (all threads)."""
    for k, v in kw.items():
        if k not in FLAGS:
            raise KeyError(f"unknown streamrt setting {k!r}")
        _GLOBAL[k] = v
    _invalidate(frozenset(kw))


@contextlib.contextmanager
def override(**kw):
    """Temporarily override settings in this thread: ``with ps.config.override(debug=3): ...``."""
    for k in kw:
        if k not in FLAGS:
            raise KeyError(f"unknown streamrt setting {k!r}")
    old = dict(settings._overrides)
    settings._overrides.update(kw)
    d = settings.__dict__
    for k in (*kw, "_settings_key"):       # (caches/keys.py keeps the key settings there)
        d.pop(k, None)
    for f in listeners:
        f()
    try:
        yield
    finally:
        settings._overrides = old
        for k in (*kw, "_settings_key"):
            d.pop(k, None)
        for f in listeners:
            f()


_resolved: dict = {}     # STREAMRT_CACHE_DIR as set -> (directory used, why not it, or None)


def cache_dir() -> str:
    """The kernel cache directory: STREAMRT_CACHE_DIR, or the user's cache directory
    (platformdirs) + ``streamrt``; created private (0700). One that cannot be used -- not
    creatable, not writable, another user's, or writable by others (its Numba cache files
    are pickles: whoever can write them runs code in this process) -- is replaced, with a
    warning once, by a private temporary directory deleted at exit: kernels still compile,
    nothing is kept for the next process (``cache_status()``, ``ps.cache_info()``)."""
    d = settings.cache_dir
    r = _resolved.get(d)
    if r is None:
        r = _resolved[d] = _resolve(d)
    return r[0]


def cache_status() -> dict:
    """{'directory': used, 'configured': asked for, 'persistent': kept between processes,
    'reason': why the configured one is not used (or None)}."""
    d = settings.cache_dir
    path = cache_dir()
    want, why = _resolved[d][2], _resolved[d][1]
    return {"directory": path, "configured": want, "persistent": why is None, "reason": why}


def make_private_dir(path):
    """``os.makedirs`` with mode 0700 whatever the umask (an existing folder is left as is)."""
    if not os.path.isdir(path):
        os.makedirs(path, mode=0o700, exist_ok=True)
        try:
            os.chmod(path, 0o700)
        except OSError:
            pass


def _unusable(d):
    """Why directory ``d`` cannot hold the kernel cache, or None."""
    try:
        make_private_dir(d)
        st = os.stat(d)
    except OSError as e:
        return f"{type(e).__name__}: {e.strerror or e}"
    if not os.access(d, os.W_OK | os.X_OK):
        return "it is not writable"
    if hasattr(os, "getuid") and st.st_uid != os.getuid():
        return f"it belongs to another user (uid {st.st_uid})"
    if st.st_mode & 0o022:
        return (f"other users may write it (mode {st.st_mode & 0o777:o}; `chmod go-w` it): "
                "its cache files are loaded as code")
    return None


def _resolve(d):
    want = d
    if not want:
        import platformdirs     # (~5 ms to import: only without STREAMRT_CACHE_DIR)
        want = platformdirs.user_cache_dir("streamrt", appauthor=False)
    why = _unusable(want)
    if why is None:
        return want, None, want
    import tempfile             # (~2 ms to import: only on this fallback path)
    tmp = tempfile.mkdtemp(prefix="streamrt-cache-")      # (0700)
    atexit.register(_remove, tmp, os.getpid())
    warnings.warn(f"streamrt: the kernel cache directory {want!r} cannot be used ({why}); "
                  f"kernels are compiled into a private temporary directory ({tmp}) deleted at "
                  "exit, and nothing is kept for the next run (ps.cache_info()['program'])",
                  RuntimeWarning, stacklevel=3)
    return tmp, why, want


def _remove(path, pid):
    if os.getpid() == pid:          # (not from a forked child: the parent still uses it)
        import shutil               # (at exit, on the fallback path only)
        shutil.rmtree(path, ignore_errors=True)


def describe() -> str:
    """A table of every flag, its environment variable and its current value."""
    rows = [f"{f.name:28s} {str(getattr(settings, k)):10s} {f.doc}" for k, f in FLAGS.items()]
    return "\n".join(rows)
