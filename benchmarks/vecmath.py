"""Time the vectorisable transcendental primitives (streamrt/executors/vecmath.py) against NumPy
and against the Numba kernel that calls Numba's scalar libm, in the same process.

    python benchmarks/vecmath.py [--n 10000000] [--repeat 7] [--only exp,log] [--dtypes float32]

Each function runs as a parallel Numba loop ``out[i] = f(x[i])`` over n elements (the shape of a
fused streamrt kernel); prints the median time of each and the ratios (libm / vecmath and
NumPy / vecmath: > 1 means the primitive is faster). Primitives that streamrt's kernels do not
use (ops.VECMATH) are marked."""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from numba import njit, prange  # noqa: E402

from streamrt.core import ops  # noqa: E402
from streamrt.backends.numba_cpu import vecmath as V  # noqa: E402

# input ranges where each function is interesting (and finite)
RANGES = {"exp": (-80, 80), "exp2": (-120, 120), "expm1": (-5, 5), "log": (1e-30, 1e30),
          "log2": (1e-30, 1e30), "log10": (1e-30, 1e30), "log1p": (-0.9, 100),
          "sin": (-100, 100), "cos": (-100, 100), "tan": (-100, 100), "sinh": (-20, 20),
          "cosh": (-20, 20), "tanh": (-10, 10), "cbrt": (-1e6, 1e6), "power": (0.1, 10),
          "erf": (-5, 5)}


def unary(f):
    @njit(parallel=True, nogil=True, error_model="numpy")
    def k(a, o):
        for i in prange(a.shape[0]):
            o[i] = f(a[i])
    return k


def binary(f):
    @njit(parallel=True, nogil=True, error_model="numpy")
    def k(a, b, o):
        for i in prange(a.shape[0]):
            o[i] = f(a[i], b[i])
    return k


def libm(name):
    """The kernel streamrt generated before vecmath: Numba's np.<name> (scalar libm)."""
    if name == "power":
        return binary(njit(lambda a, b: a ** b))
    if name == "erf":
        import math
        return unary(njit(lambda a: math.erf(a)))
    f = getattr(np, name)
    return unary(njit(lambda a: f(a)))


def timeit(fn, repeat):
    fn()
    ts = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=10_000_000)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--only", default="")
    ap.add_argument("--dtypes", default="float32,float64")
    a = ap.parse_args(argv)
    names = a.only.split(",") if a.only else list(RANGES)
    rng = np.random.default_rng(0)
    print(f"n={a.n}, median of {a.repeat}; ratios > 1: vecmath faster")
    print(f"{'function':9s} {'dtype':8s} {'numpy ms':>9s} {'libm ms':>9s} {'vecmath ms':>10s} "
          f"{'libm/vm':>8s} {'numpy/vm':>8s}")
    for dtn in a.dtypes.split(","):
        dt = np.dtype(dtn)
        for name in names:
            if not hasattr(V, f"_vm_{'pow' if name == 'power' else name}_"
                              f"{'f32' if dt == np.float32 else 'f64'}"):
                continue
            used = dt in ops.VECMATH.get(name, ())
            lo, hi = RANGES[name]
            if lo > 0 and hi / lo > 1e3:
                x = np.exp(rng.uniform(np.log(lo), np.log(hi), a.n)).astype(dt)
            else:
                x = rng.uniform(lo, hi, a.n).astype(dt)
            out = np.empty_like(x)
            suffix = "f32" if dt == np.float32 else "f64"
            if name == "power":
                y = rng.uniform(-20, 20, a.n).astype(dt)
                vm = binary(getattr(V, f"_vm_pow_{suffix}"))
                old = libm(name)
                t_np = timeit(lambda: np.power(x, y), a.repeat)
                t_old = timeit(lambda: old(x, y, out), a.repeat)
                t_vm = timeit(lambda: vm(x, y, out), a.repeat)
            else:
                vm = unary(getattr(V, f"_vm_{name}_{suffix}"))
                old = libm(name)
                if name == "erf":
                    from scipy.special import erf as npf      # NumPy has no erf
                else:
                    npf = getattr(np, name)
                t_np = timeit(lambda: npf(x), a.repeat)
                t_old = timeit(lambda: old(x, out), a.repeat)
                t_vm = timeit(lambda: vm(x, out), a.repeat)
            print(f"{name:9s} {dtn:8s} {t_np * 1e3:9.1f} {t_old * 1e3:9.1f} {t_vm * 1e3:10.1f} "
                  f"{t_old / t_vm:8.2f} {t_np / t_vm:8.2f}"
                  f"{'' if used else '  (kernels keep libm)'}", flush=True)


if __name__ == "__main__":
    main()
