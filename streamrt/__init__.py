"""streamrt: a lazy array runtime with just-in-time kernel fusion.

``import streamrt as ps`` (or ``as np``): every operation is recorded, not run; reads
(``np.asarray(x)``, ``float(x)``, ``print(x)``) compile the recorded work into a few fused
kernels and run them asynchronously."""
from __future__ import annotations

import math as _math

import numpy as _np

from . import config  # noqa: F401
from .dtypes import (bool_, float32, float64, int8, int16, int32, int64, uint8,  # noqa: F401
                     uint16, uint32, uint64)
from .frontend.array import Array, broadcast_to as _bt  # noqa: F401
from .frontend.creation import *  # noqa: F401,F403
from .frontend.creation import __all__ as _creation_all
from .frontend.errors import (ArgumentError, DTypeError, ExecutionError, FallbackError,  # noqa: F401
                              MacroError, ShapeError, StreamrtAxisError, StreamrtError,
                              StreamrtOverflowError)
from .frontend.macro import Macro, macro, macro_section  # noqa: F401
from .frontend.math import *  # noqa: F401,F403
from .frontend.math import __all__ as _math_all
from .frontend.math import max, min, sum, any, all, abs  # noqa: F401,A004
from . import debug  # noqa: F401
from .debug import pop_error_handler, push_error_handler  # noqa: F401
from .profiler import profile  # noqa: F401
from .stats import reset_stats, runtime_stats  # noqa: F401

ndarray = Array
bool = bool_  # noqa: A001 - NumPy-style dtype name
newaxis = None
pi, e, inf, nan = _math.pi, _math.e, _math.inf, _math.nan
euler_gamma = _np.euler_gamma
dtype = _np.dtype
finfo, iinfo = _np.finfo, _np.iinfo
__version__ = "0.1.0"


def sync():
    """Compile and run everything recorded so far in this thread, and wait for it."""
    from .scheduler import cscheduler
    cscheduler.sync()


def devices(refresh: bool = False) -> list:
    """The executors that work on this machine (Numba CPU, OpenCL devices, CUDA devices)."""
    from .executors.devices import devices as _devices
    return _devices(refresh)


def hint_execute():
    """Start compiling and running what has been recorded so far (does not wait)."""
    from .frontend.errors import callsite
    from .scheduler import cscheduler
    from .scheduler.workqueue import current_queue
    current_queue().hint("execute", callsite())
    cscheduler.flush(reason="hint")


def hint_read(*arrays):
    """Say these arrays will be read soon: their computation starts now (does not wait)."""
    from .frontend.errors import callsite
    from .scheduler import cscheduler
    from .scheduler.workqueue import NEW
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
    device compilers' caches included)."""
    from .caches import macro_cache, program_cache, trace_cache
    from .executors import device_cache
    sync()
    trace_cache.get().clear()
    macro_cache.get().clear()
    program_cache.clear_memory(disk=disk)
    device_cache.clear(disk=disk)


def cache_info() -> dict:
    """Sizes and bounds of the three caches (and of the device program cache)."""
    from .caches import macro_cache, program_cache, trace_cache
    from .executors import device_cache
    return {"trace": trace_cache.get().info(), "macro": macro_cache.get().info(),
            "program": program_cache.cache_info(), "device": device_cache.info()}


def is_lazy(x) -> bool:
    return isinstance(x, Array)


from .profiler import _from_env as _profile_from_env  # noqa: E402

_profile_from_env()
if config.settings.reference:
    debug._hooks.update()

__all__ = list(_creation_all) + list(_math_all) + [
    "Array", "ndarray", "sync", "devices", "macro", "macro_section", "profile", "clear_caches", "cache_info", "hint_execute", "hint_read", "runtime_stats", "reset_stats",
    "config", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "uint16",
    "uint32", "uint64", "bool_", "newaxis", "pi", "e", "inf", "nan"]

# ---- random numbers (streamrt/random.py) --------------------------------------------------------
from . import random  # noqa: E402,F401

__all__.append("random")

# ---- intrinsics: products, linalg, sort, scans, FFT, convolution (frontend/linalg.py) --------
from .frontend.errors import LinAlgError  # noqa: E402,F401
from .frontend.linalg import (argsort, convolve, correlate, cumprod, cumsum,  # noqa: E402,F401
                              dot, einsum, inner, matmul, matrix_transpose, outer, sort,
                              tensordot, trace, vdot, vecdot)
from . import fft, linalg  # noqa: E402,F401
from .dtypes import complex64, complex128  # noqa: E402,F401
from .frontend.math import angle, conj, conjugate, imag, real  # noqa: E402,F401

__all__ += ["fft", "linalg", "complex64", "complex128", "LinAlgError", "argsort", "convolve",
            "correlate", "cumprod", "cumsum", "einsum", "inner", "outer", "sort", "tensordot",
            "vecdot", "trace", "matrix_transpose"]

# ---- indexing, assignment and shape operations (frontend/shape.py, frontend/indexing.py) ----
from .frontend import shape as _shape_mod  # noqa: E402
from .frontend.shape import *  # noqa: F401,F403,E402
from .frontend.errors import StreamrtIndexError  # noqa: F401,E402

__all__ += list(_shape_mod.__all__) + ["StreamrtIndexError"]

# ---- the Array API namespace (array_api.py) and Dask (distributed.py) ----------------------
# Imported when first used (``streamrt.array_api``, ``x.__array_namespace__()``,
# ``ps.distributed``): together ~6 ms of ``import streamrt`` that most scripts never need.
def _array_namespace(self, /, *, api_version=None):
    if api_version not in (None, "2021.12", "2022.12", "2023.12"):
        raise ValueError(f"unsupported Array API version {api_version!r}")
    from . import array_api
    return array_api


def _to_device(self, device, /, *, stream=None):
    from . import array_api
    return array_api._to_device(self, device, stream=stream)


Array.__array_namespace__ = _array_namespace
Array.device = property(lambda self: "cpu")
Array.to_device = _to_device


def __array_namespace__(*, api_version=None):
    """The Array API standard namespace (``streamrt.array_api``)."""
    return Array.__array_namespace__(None, api_version=api_version)


def __getattr__(name):
    if name in ("array_api", "distributed"):
        import importlib
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'streamrt' has no attribute {name!r}")


# ---- the C record path (streamrt/_native.c, when built): the hot operators in C ------------
from .frontend import native as _native_mod  # noqa: E402

_native_mod.install()
