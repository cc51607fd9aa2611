"""Shared test data and comparisons against NumPy (dtype exact, values exact or within the
documented tolerance)."""
from __future__ import annotations

import contextlib
import os

import numpy as np

from streamrt.core import dtypes as D, ops

DTYPES = (np.dtype(np.float32), np.dtype(np.float64), np.dtype(np.int32), np.dtype(np.int64),
          np.dtype(np.bool_), np.dtype(np.int8), np.dtype(np.int16), np.dtype(np.uint8),
          np.dtype(np.uint16), np.dtype(np.uint32), np.dtype(np.uint64))
INT_DTYPES = tuple(d for d in DTYPES if d.kind in "iu")
DTYPE_IDS = [d.name for d in DTYPES]

# Tolerance of transcendental functions (ops.Op.float_tol): units in the last place of the
# result dtype. Numba and NumPy call different libm implementations; both are within a few ulp
# of the exact result. Everything else (arithmetic, comparisons, rounding, casts) is exact.
ULPS = 4


def data(dtype, kind="a", n=40):
    """Deterministic test values of ``dtype``: special values first, then random ones.
    kind 'a': a first operand; 'b': a second operand (different values, zeros included)."""
    dtype = np.dtype(dtype)
    rng = np.random.default_rng(0 if kind == "a" else 1)
    if dtype == D.bool_:
        v = rng.random(n) < 0.5
        v[:4] = [True, False, True, False] if kind == "a" else [True, True, False, False]
        return v
    if D.is_int(dtype):
        v = [int(x) for x in rng.integers(-9, 10, n)]
        info = np.iinfo(dtype)
        lo, hi = int(info.min), int(info.max)
        if kind == "a":
            # zero, +-1, small values, the dtype's extremes and their neighbours (negative
            # values of an unsigned dtype wrap: -1 is its maximum)
            v[:12] = [0, 1, -1, 7, -7, 2 ** 20, lo, hi, lo + 1, hi - 1, lo, hi]
        else:
            # zero divisors, -1 (INT_MIN // -1), shift counts at and past the width
            v[:12] = [0, 1, -1, 3, -3, 0, -1, 2, 0, -1, 8 * dtype.itemsize - 1,
                      8 * dtype.itemsize]
        span = hi - lo + 1
        return np.array([(x - lo) % span + lo for x in v], dtype)
    v = rng.uniform(-3, 3, n)
    special = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 0.5, -0.5, 2.5, -2.5, 1e-30,
               30.0, 100.0]
    if kind == "b":
        special = special[::-1] + [0.0]
    v[:len(special)] = special
    return v.astype(dtype)


SMALL_DTYPES = ["float64", "float32", "int32", "int64", "uint8", "bool"]


def small_values(rng, shape, dt, exact=False):
    """Random values of ``dt`` for the differential checks of small programs: integers in
    [-9, 9) (uint8: [1, 9)), bools, floats (``exact``: quarters, whose sums are exact)."""
    if dt == "bool":
        return rng.random(shape) < 0.5
    if np.dtype(dt).kind in "iu":
        return rng.integers(1 if dt == "uint8" else -9, 9, shape).astype(dt)
    if exact:
        return rng.integers(-9, 9, shape).astype(dt) / 4
    return (rng.standard_normal(shape) * 3).astype(dt)


def ref_call(fn, *args):
    """NumPy's answer (in its own dtype: streamrt computes in every dtype NumPy's answer may
    have, or refuses the op -- numpy_supports)."""
    with np.errstate(all="ignore"):
        return np.asarray(fn(*args))


def numpy_supports(fn, *args):
    """False if NumPy has no loop for these operand dtypes (raises TypeError) or its result
    has a dtype streamrt does not compute in (float16: sqrt(int8), sin(bool)); streamrt
    raises DTypeError for both."""
    try:
        with np.errstate(all="ignore"):
            r = fn(*args)
    except TypeError:
        return False
    return all(np.asarray(x).dtype in D.SUPPORTED_SET
               for x in (r if isinstance(r, tuple) else (r,)))


def assert_same(actual, expected, ulps=0, rtol=0.0, atol=0.0, what=""):
    """``actual`` (a streamrt array, read here) equals ``expected``: same dtype and shape; NaN
    in the same places; infinities equal; finite values equal, or within ``ulps`` units in
    the last place / rtol / atol."""
    a = np.asarray(actual)
    e = np.asarray(expected)
    assert a.dtype == e.dtype, f"{what}: dtype {a.dtype} != NumPy's {e.dtype}"
    assert a.shape == e.shape, f"{what}: shape {a.shape} != NumPy's {e.shape}"
    if e.dtype.kind != "f":
        np.testing.assert_array_equal(a, e, err_msg=what, strict=True)
        return
    an, en = np.isnan(a), np.isnan(e)
    assert (an == en).all(), f"{what}: NaN at {np.argwhere(an != en)[:5].tolist()} " \
                             f"(got {a[an != en][:5]}, NumPy {e[an != en][:5]})"
    fin = np.isfinite(e)
    inf = ~fin & ~en
    assert (a[inf] == e[inf]).all(), f"{what}: infinities differ: {a[inf]} vs {e[inf]}"
    ef, af = e[fin].astype(np.float64), a[fin].astype(np.float64)
    tol = atol + rtol * np.abs(ef)
    if ulps:
        tol = tol + ulps * np.spacing(np.abs(e[fin])).astype(np.float64)
    bad = ~(np.abs(af - ef) <= tol)
    assert not bad.any(), (f"{what}: values differ at {np.argwhere(fin)[bad][:5].tolist()}: "
                           f"got {af[bad][:5]}, NumPy {ef[bad][:5]}")


def op_ulps(name):
    return ULPS if ops.OPS[name].float_tol else 0


def _opencl_available():
    try:
        import pyopencl  # noqa: F401
    except Exception:  # noqa: BLE001
        return False
    import streamrt as ps
    return any(d["backend"] == "opencl" and d["available"] for d in ps.devices())


OPENCL = _opencl_available()
# The executors the differential suites (test_ops, test_fuzz, test_fusion's reductions) run on:
# fused Numba kernels always, OpenCL kernels where an OpenCL device works (PoCL in CI).
EXECUTORS = ["cpu"] + (["opencl"] if OPENCL else [])


def child_env(cache_dir, **settings):
    """Environment of a child Python process: this one's without its STREAMRT_* settings, the
    kernel cache in ``cache_dir``, plus ``settings`` (e.g. STREAMRT_JIT="background")."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("STREAMRT_")}
    env["STREAMRT_CACHE_DIR"] = str(cache_dir)
    env["STREAMRT_EAGER_ELEMENTS"] = "0"         # (as in this process: conftest.py)
    env["STREAMRT_JIT"] = "sync"
    env.update(settings)
    return env


def compiler_caps(backend, **over):
    """The caps compiler.generate gets from ``backend``'s executor ('cpu', 'opencl', 'cuda'),
    without the executor (no device needed); ``over`` replaces entries."""
    from streamrt.backends import registry
    return dict(registry.BACKENDS[backend].caps, **over)


@contextlib.contextmanager
def jit_mode(mode):
    """STREAMRT_JIT ``mode`` process-wide (kernels may launch on the scheduler's thread, which
    a ``ps.config.override`` of this thread does not reach); the previous mode after, with
    what was recorded under each run under it."""
    import streamrt as ps
    from streamrt.core.config import settings
    old = settings.jit
    ps.sync()
    ps.config.set(jit=mode)
    try:
        yield
    finally:
        ps.sync()
        ps.config.set(jit=old)
