"""streamrt: a lazy array runtime with just-in-time kernel fusion.

``import streamrt as ps`` (or ``as np``): every operation is recorded, not run; reads
(``np.asarray(x)``, ``float(x)``, ``print(x)``) compile the recorded work into a few fused
kernels and run them asynchronously."""
from __future__ import annotations

import importlib
import math as _math

import numpy as _np

from .core import config, errors as _errors, hooks
from .core.dtypes import (bool_, complex64, complex128, float32, float64, int8,  # noqa: F401
                          int16, int32, int64, uint8, uint16, uint32, uint64)
from .core.errors import (ArgumentError, CancelledError, DTypeError, ExecutionError,  # noqa: F401
                          FallbackError, LinAlgError, MacroError, ShapeError,
                          StreamrtAxisError, StreamrtError, StreamrtIndexError,
                          StreamrtOverflowError, callsite)
from .core.ir import NEW
from .core.stats import reset_stats, runtime_stats  # noqa: F401
from .backends import device_cache
from .backends.base import tune_host_heap as _tune_host_heap
from .backends.devices import devices as _devices
from .backends.numba_cpu import program_cache
from .runtime import cscheduler, macro_cache, products, trace_cache
from .runtime.workqueue import current_queue
from . import fft, linalg, random  # noqa: F401
from .frontend import creation as _creation, shape as _shape_mod
from .frontend.array import Array, broadcast_to as _bt  # noqa: F401
from .frontend.creation import *  # noqa: F401,F403
from .frontend.creation import __all__ as _creation_all
from .frontend.linalg import (argsort, convolve, correlate, cumprod, cumsum, dot,  # noqa: F401
                              einsum, inner, matmul, matrix_transpose, outer, sort, tensordot,
                              trace, vdot, vecdot)
from .frontend.macro import Macro, macro, macro_section  # noqa: F401
from .frontend.math import *  # noqa: F401,F403
from .frontend.math import __all__ as _math_all
from .frontend.math import abs, all, any, max, min, sum  # noqa: F401,A004
from .frontend.math import angle, conj, conjugate, imag, real  # noqa: F401
from .frontend import numeric as _numeric
from .frontend.numeric import *  # noqa: F401,F403
from .frontend.numeric import round  # noqa: F401,A004
from .core.fpe import errstate, geterr, geterrcall, seterr, seterrcall  # noqa: F401
from .frontend.shape import *  # noqa: F401,F403
from .tools import debug  # noqa: F401
from .tools.debug import pop_error_handler, push_error_handler  # noqa: F401
from .tools.profiler import _from_env as _profile_from_env, profile  # noqa: F401

ndarray = Array
bool = bool_  # noqa: A001 - NumPy-style dtype name
newaxis = None
pi, e, inf, nan = _math.pi, _math.e, _math.inf, _math.nan
euler_gamma = _np.euler_gamma
dtype = _np.dtype
finfo, iinfo = _np.finfo, _np.iinfo
__version__ = "0.1.0"


def asarray(a, dtype=None, order=None, *, device=None, copy=None, like=None, chunks=None):
    """A streamrt array from an array-like (copied; later changes to ``a`` do not leak in).
    ``chunks``: partitioned along axis 0 on a Dask cluster (``ps.distributed``)."""
    if chunks is not None:
        return __getattr__("distributed").asarray(a, chunks, dtype)
    return _creation.asarray(a, dtype, order, device=device, copy=copy, like=like)


def sync():
    """Compile and run everything recorded so far in this thread, and wait for it."""
    cscheduler.sync()


def devices(refresh: bool = False) -> list:
    """The executors that work on this machine (Numba CPU, OpenCL devices, CUDA devices)."""
    return _devices(refresh)


def hint_execute():
    """Start compiling and running what has been recorded so far (does not wait)."""
    current_queue().hint("execute", callsite())
    cscheduler.flush(reason="hint")


def hint_read(*arrays):
    """Say these arrays will be read soon: their computation starts now (does not wait)."""
    site = callsite()
    for a in arrays:
        p = a._port
        base = p.inputs[0] if p.kind == "view" else p
        if base.state == NEW and base.queue is not None:
            base.queue.hint("read", site)
            cscheduler.flush(base.queue, reason="hint")


def clear_caches(disk: bool = False):
    """Empty the trace, macro and in-memory program caches, and the device executors' compiled
    programs (``disk=True``: also delete the compiled kernels under STREAMRT_CACHE_DIR, the
    device compilers' caches included, except one a live compiler uses -- PoCL's, while this or
    another process has an OpenCL context: deleting it under PoCL aborted the process).
    Also forgets which lines run at once on the NumPy tier (``CallSite.now``) and the blocks
    of a loop's products (``STREAMRT_BATCH_PRODUCTS``) with the lines that stopped them.
    Returns the device cache directories kept."""
    sync()
    _errors.forget_sites()
    trace_cache.get().clear()
    macro_cache.get().clear()
    products.forget()
    program_cache.clear_memory(disk=disk)
    return device_cache.clear(disk=disk)


def cache_info() -> dict:
    """Sizes and bounds of the three caches (and of the device program cache)."""
    return {"trace": trace_cache.get().info(), "macro": macro_cache.get().info(),
            "program": program_cache.cache_info(), "device": device_cache.info()}


def is_lazy(x) -> bool:
    return isinstance(x, Array)


# The Array API namespace (array_api.py) and Dask (distributed/) are imported when first used
# (``streamrt.array_api``, ``x.__array_namespace__()``, ``ps.distributed``,
# ``asarray(x, chunks=...)``): together ~5 ms that most scripts never need.
def __getattr__(name):
    if name in ("array_api", "distributed"):
        return importlib.import_module(f".{name}", __name__)
    if not name.startswith("_"):
        from .tools.coverage import reason   # (only for a missing name: not at every import)
        why = reason(name)
        if why is not None:
            site = callsite()
            raise AttributeError(f"{site}: streamrt does not provide numpy.{name}: {why} "
                                 "(docs/numpy_coverage.md)", name=name, obj=None)
    raise AttributeError(f"module 'streamrt' has no attribute {name!r}")


def __array_namespace__(*, api_version=None):
    """The Array API standard namespace (``streamrt.array_api``)."""
    return Array.__array_namespace__(None, api_version=api_version)


hooks.set_array_namespace(lambda: __getattr__("array_api"))
_numeric._attach_methods(globals())     # ps.add.outer, ps.add.reduce, ... (numeric.py)
_profile_from_env()                 # STREAMRT_PROFILE
_tune_host_heap()                   # STREAMRT_HOST_HEAP_BYTES (backends/base.py)
if config.settings.reference:       # STREAMRT_REFERENCE
    debug._hooks.update()
cscheduler.collect_at_import()      # (last: the imports' objects settle in the old generation)

__all__ = list(_creation_all) + list(_math_all) + list(_shape_mod.__all__) + list(
    _numeric.__all__) + ["errstate", "geterr", "seterr", "geterrcall", "seterrcall"] + [
    "Array", "ndarray", "sync", "devices", "macro", "macro_section", "profile", "clear_caches",
    "cache_info", "hint_execute", "hint_read", "runtime_stats", "reset_stats", "config",
    "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
    "uint64", "bool_", "newaxis", "pi", "e", "inf", "nan",
    "random", "fft", "linalg", "complex64", "complex128", "LinAlgError", "argsort", "convolve",
    "correlate", "cumprod", "cumsum", "einsum", "inner", "outer", "sort", "tensordot", "vecdot",
    "trace", "matrix_transpose", "StreamrtIndexError"]
