"""streamrt against NumPy, numexpr, Numba (and JAX when installed) on a few workloads.

    python benchmarks/run.py [--quick] [--only NAME[,NAME]] [--libs numpy,numba,...]
                             [--repeat 5] [--json PATH] [--warm-cache]

Each (workload, library) pair runs in its own subprocess (this file with ``--worker``), so
libraries do not share threads, allocator state or JIT caches. A worker builds the inputs
from a seeded RNG, computes the NumPy result in-process, calls the library once (the
*first* call: JIT compilation; streamrt gets an empty kernel cache per worker unless
``--warm-cache``), once more untimed (warm-up; streamrt first runs it for ~3 s, as a longer
program would, and waits for the background compiles its cost model asked for: the timed
calls are its steady state), then ``--repeat`` timed calls; it checks the library's result against NumPy's and prints
one JSON line. The parent prints a table. See benchmarks/README.md.

Adding a workload: subclass ``Workload`` with ``name``, ``sizes``, ``inputs``, a ``formula``
(written once against an array module ``m``: numpy, streamrt or jax.numpy) and, where it
makes sense, hand-written ``numexpr`` / ``numba`` setups; decorate it with ``@register``.
A formula that cannot run under ``jax.jit`` (slice assignment, a scalar read) gets its own
``jax`` setup or ``jax = None``; ``reference`` replaces NumPy's result as the value checked
against (``montecarlo_pi``: every library draws its own numbers, so the check is against pi)."""
from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from typing import ClassVar

import numpy as np

HERE = os.path.abspath(__file__)
ROOT = os.path.dirname(os.path.dirname(HERE))
LIBS = ("numpy", "numexpr", "numba", "streamrt", "streamrt-opencl", "streamrt-cuda", "jax")
# streamrt on a forced executor: the worker runs with STREAMRT_BACKEND set (its own process)
BACKEND_LIBS = {"streamrt-opencl": ("opencl", "pyopencl"), "streamrt-cuda": ("cuda", "cupy")}

WORKLOADS: dict[str, type] = {}


def register(cls):
    WORKLOADS[cls.name] = cls
    return cls


# ---- helpers used by the library setups ---------------------------------------------------
_FLOAT = re.compile(r"(?<![\w.])(\d+\.\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?)")


def ne_expr(expr: str):
    """A numexpr evaluator for ``expr`` whose float literals stay float32 (numexpr treats a
    literal like ``0.5`` as float64, which would turn every float32 expression into float64).
    Returns f(**arrays) -> array."""
    import numexpr as ne
    consts = {}

    def name(m):
        consts[f"_c{len(consts)}"] = np.float32(m.group(1))
        return f"_c{len(consts) - 1}"

    text = _FLOAT.sub(name, expr)
    return lambda **arrays: ne.evaluate(text, local_dict={**consts, **arrays})


def to_numpy(results):
    """Results as NumPy arrays or Python floats (forces lazy/async results)."""
    out = []
    for r in results:
        a = np.asarray(r)
        out.append(float(a) if a.ndim == 0 else a)
    return tuple(out)


def max_rel_err(got, want, floor):
    """max |got - want| / max(|want|, floor) over all results (float64 arithmetic)."""
    err = 0.0
    for g, w in zip(got, want):
        g, w = np.atleast_1d(np.asarray(g, np.float64)), np.atleast_1d(np.asarray(w, np.float64))
        if g.shape != w.shape:
            return float("inf")
        with np.errstate(invalid="ignore"):
            d = np.abs(g - w) / np.maximum(np.abs(w), floor)
        d[(g == w) | (np.isnan(g) & np.isnan(w))] = 0.0   # equal infinities, NaN for NaN
        d[np.isnan(d)] = np.inf                  # NaN on one side only (or inf - inf)
        err = max(err, float(d.max()) if d.size else 0.0)
    return err


# ---- workloads ----------------------------------------------------------------------------
class Workload:
    name = ""
    doc = ""
    sizes: ClassVar[dict] = {"full": (), "quick": ()}     # input shape
    rtol, floor = 1e-5, 1e-6              # check: max_rel_err(got, numpy) <= rtol

    def __init__(self, shape):
        self.shape = tuple(shape)

    def inputs(self, rng) -> tuple:
        raise NotImplementedError

    @staticmethod
    def formula(m, *inputs) -> tuple:
        """The computation, against array module ``m`` (numpy, streamrt, jax.numpy)."""
        raise NotImplementedError

    def bytes_moved(self) -> int | None:
        """Bytes read + written by an ideal single pass (for achieved bandwidth)."""
        return None

    def reference(self, inputs) -> tuple:
        """What every library's result is checked against (default: NumPy's result).
        A workload whose libraries legitimately differ (their own random numbers) overrides
        it with the exact answer and a tolerance that covers the sampling error."""
        return to_numpy(self.formula(np, *inputs))

    # each setup takes the NumPy inputs and returns a zero-argument callable whose result
    # is fully computed and readable by NumPy when it returns (None: not implemented)
    def numpy(self, inputs):
        return lambda: self.formula(np, *inputs)

    def streamrt(self, inputs):
        import streamrt as ps
        lazy = [ps.asarray(a) for a in inputs]   # copied into streamrt, outside the timing
        ps.sync()
        return lambda: to_numpy(self.formula(ps, *lazy))

    def jax(self, inputs):
        import jax
        jax.config.update("jax_enable_x64", True)   # float64 workloads stay float64
        import jax.numpy as jnp
        f = jax.jit(lambda *a: self.formula(jnp, *a))
        dev = [jax.device_put(a) for a in inputs]
        return lambda: to_numpy(jax.block_until_ready(f(*dev)))

    numexpr = None
    numba = None

    def extra(self, lib, inputs, repeat) -> dict:
        """Additional measurements of a worker (e.g. copy bandwidth)."""
        return {}


# Abramowitz-Stegun polynomial for the cumulative normal distribution
A1, A2, A3, A4, A5 = 0.31938153, -0.356563782, 1.781477937, -1.821255978, 1.330274429
RSQRT2PI = 0.3989422804014327
RATE, VOL = 0.02, 0.30


@register
class BlackScholes(Workload):
    name = "blackscholes"
    doc = "European call + put prices, A-S polynomial CND, float32"
    sizes: ClassVar[dict] = {"full": (10_000_000,), "quick": (1_000_000,)}
    rtol, floor = 1e-3, 1.0       # float32 with cancellation in the put: 1e-3 relative / $1e-3

    def inputs(self, rng):
        n = self.shape[0]
        return (rng.uniform(5.0, 30.0, n).astype(np.float32),     # spot
                rng.uniform(1.0, 100.0, n).astype(np.float32),    # strike
                rng.uniform(0.25, 10.0, n).astype(np.float32))    # years

    @staticmethod
    def formula(m, S, X, T):
        def cnd(d):
            k = 1.0 / (1.0 + 0.2316419 * m.abs(d))
            poly = k * (A1 + k * (A2 + k * (A3 + k * (A4 + k * A5))))
            c = RSQRT2PI * m.exp(-0.5 * d * d) * poly
            return m.where(d > 0, 1.0 - c, c)
        sqrt_t = m.sqrt(T)
        d1 = (m.log(S / X) + (RATE + 0.5 * VOL * VOL) * T) / (VOL * sqrt_t)
        d2 = d1 - VOL * sqrt_t
        xe = X * m.exp(-RATE * T)
        n1, n2 = cnd(d1), cnd(d2)
        return S * n1 - xe * n2, xe * (1.0 - n2) - S * (1.0 - n1)

    def numexpr(self, inputs):
        S, X, T = inputs
        d1_ = ne_expr(f"(log(S / X) + {RATE + 0.5 * VOL * VOL!r} * T) / ({VOL!r} * sqrt(T))")
        d2_ = ne_expr(f"d1 - {VOL!r} * sqrt(T)")
        k_ = ne_expr("1.0 / (1.0 + 0.2316419 * abs(d))")
        c_ = ne_expr(f"{RSQRT2PI!r} * exp(-0.5 * d * d) * (k * ({A1!r} + k * ({A2!r} + k * "
                     f"({A3!r} + k * ({A4!r} + k * {A5!r})))))")
        cnd_ = ne_expr("where(d > 0, 1.0 - c, c)")
        xe_ = ne_expr(f"X * exp({-RATE!r} * T)")
        call_ = ne_expr("S * n1 - xe * n2")
        put_ = ne_expr("xe * (1.0 - n2) - S * (1.0 - n1)")

        def cnd(d):
            return cnd_(d=d, c=c_(d=d, k=k_(d=d)))

        def run():
            d1 = d1_(S=S, X=X, T=T)
            d2 = d2_(d1=d1, T=T)
            n1, n2, xe = cnd(d1), cnd(d2), xe_(X=X, T=T)
            return call_(S=S, n1=n1, xe=xe, n2=n2), put_(S=S, n1=n1, xe=xe, n2=n2)
        return run

    def numba(self, inputs):
        from numba import njit, prange
        f = np.float32
        rate, vol = f(RATE), f(VOL)

        @njit(fastmath=False, inline="always")
        def cnd(d):
            k = f(1.0) / (f(1.0) + f(0.2316419) * abs(d))
            c = f(RSQRT2PI) * np.exp(f(-0.5) * d * d) * (
                k * (f(A1) + k * (f(A2) + k * (f(A3) + k * (f(A4) + k * f(A5))))))
            return f(1.0) - c if d > 0 else c

        @njit(parallel=True, fastmath=False)
        def bs(S, X, T, rate, vol):
            n = S.shape[0]
            call = np.empty(n, np.float32)
            put = np.empty(n, np.float32)
            for i in prange(n):
                s, x, t = S[i], X[i], T[i]
                sqrt_t = np.sqrt(t)
                d1 = (np.log(s / x) + (rate + f(0.5) * vol * vol) * t) / (vol * sqrt_t)
                d2 = d1 - vol * sqrt_t
                xe = x * np.exp(-rate * t)
                n1, n2 = cnd(d1), cnd(d2)
                call[i] = s * n1 - xe * n2
                put[i] = xe * (f(1.0) - n2) - s * (f(1.0) - n1)
            return call, put
        return lambda: bs(*inputs, rate, vol)


@register
class Chain(Workload):
    name = "chain"
    doc = "10-op element-wise chain, 2 float32 inputs -> 1 output (memory-bound)"
    sizes: ClassVar[dict] = {"full": (20_000_000,), "quick": (2_000_000,)}
    rtol, floor = 1e-5, 1e-3
    EXPR = "((((a * 1.5 + b) * 0.5 - a) * b + a) * 0.25 - b) * a + 1.0"

    def inputs(self, rng):
        n = self.shape[0]
        return (rng.random(n, np.float32), rng.random(n, np.float32))

    @staticmethod
    def formula(m, a, b):
        return (((((a * 1.5 + b) * 0.5 - a) * b + a) * 0.25 - b) * a + 1.0,)

    def bytes_moved(self):
        return 3 * 4 * int(np.prod(self.shape))     # read a, b; write the result

    def numexpr(self, inputs):
        f = ne_expr(self.EXPR)
        a, b = inputs
        return lambda: (f(a=a, b=b),)

    def numba(self, inputs):
        from numba import njit, prange
        f = np.float32

        @njit(parallel=True, fastmath=False)
        def chain(a, b):
            out = np.empty_like(a)
            for i in prange(a.shape[0]):
                x, y = a[i], b[i]
                out[i] = ((((x * f(1.5) + y) * f(0.5) - x) * y + x) * f(0.25) - y) * x + f(1.0)
            return out
        return lambda: (chain(*inputs),)

    def extra(self, lib, inputs, repeat):
        """numba and streamrt workers: the 2-thread copy bandwidth (prange copy into a warm
        buffer), measured right after the library's timed runs in the same process (the
        VM's memory bandwidth drifts from one minute to the next)."""
        if lib not in ("numba", "streamrt"):
            return {}
        import numba
        from numba import njit, prange

        @njit(parallel=True, fastmath=False)
        def copy(src, dst):
            for i in prange(src.shape[0]):
                dst[i] = src[i]
        a = inputs[0]
        dst = np.empty_like(a)
        copy(a, dst)
        copy(a, dst)
        ts = []
        for _ in range(max(repeat, 5)):
            t0 = time.perf_counter()
            copy(a, dst)
            ts.append(time.perf_counter() - t0)
        return {"copy_gbps": 2 * a.nbytes / statistics.median(ts) / 1e9,
                "copy_threads": numba.get_num_threads()}


@register
class Softmax(Workload):
    name = "softmax"
    doc = "row softmax of a float32 matrix"
    sizes: ClassVar[dict] = {"full": (4096, 2048), "quick": (1024, 1024)}
    rtol, floor = 1e-4, 1e-7

    def inputs(self, rng):
        return (rng.standard_normal(self.shape, np.float32) * np.float32(4.0),)

    @staticmethod
    def formula(m, x):
        e = m.exp(x - m.max(x, axis=1, keepdims=True))
        return (e / m.sum(e, axis=1, keepdims=True),)

    def bytes_moved(self):
        return 2 * 4 * int(np.prod(self.shape))

    def numexpr(self, inputs):
        """numexpr for the element-wise parts; the row max/sum with NumPy (numexpr's own
        axis reductions are single-threaded and ~5x slower than NumPy's)."""
        (x,) = inputs
        ex, div = ne_expr("exp(x - mx)"), ne_expr("e / s")

        def run():
            e = ex(x=x, mx=x.max(axis=1, keepdims=True))
            return (div(e=e, s=e.sum(axis=1, keepdims=True)),)
        return run

    def numba(self, inputs):
        from numba import njit, prange

        @njit(parallel=True, fastmath=False)
        def softmax(x):
            rows, cols = x.shape
            out = np.empty_like(x)
            for r in prange(rows):
                mx = np.float32(-np.inf)
                for c in range(cols):
                    mx = max(mx, x[r, c])
                s = 0.0
                for c in range(cols):
                    e = np.exp(x[r, c] - mx)
                    out[r, c] = e
                    s += e
                s32 = np.float32(s)
                for c in range(cols):
                    out[r, c] = out[r, c] / s32
            return out
        return lambda: (softmax(*inputs),)


@register
class Reduce(Workload):
    name = "reduce"
    doc = "sum(x*x) and max(abs(x)) of a float32 vector"
    sizes: ClassVar[dict] = {"full": (20_000_000,), "quick": (2_000_000,)}
    rtol, floor = 1e-5, 1e-6

    def inputs(self, rng):
        return (rng.standard_normal(self.shape[0], np.float32),)

    @staticmethod
    def formula(m, x):
        return m.sum(x * x), m.max(m.abs(x))

    def bytes_moved(self):
        return 4 * int(np.prod(self.shape))

    def numexpr(self, inputs):
        """numexpr's reductions (note: they accumulate a float32 sum in float32)."""
        (x,) = inputs
        ss, mx = ne_expr("sum(x * x)"), ne_expr("max(abs(x))")
        return lambda: (ss(x=x), mx(x=x))

    def numba(self, inputs):
        from numba import njit, prange

        @njit(parallel=True, fastmath=False)
        def reduce(x):
            s = 0.0
            m = np.float32(0.0)
            for i in prange(x.shape[0]):
                v = x[i]
                s += v * v             # float32 product, float64 accumulator
                m = max(m, abs(v))
            return np.float32(s), m
        return lambda: reduce(*inputs)


@register
class LayerNorm(Workload):
    name = "layernorm"
    doc = "layer norm over the rows of a float32 matrix, with scale and shift"
    sizes: ClassVar[dict] = {"full": (4096, 2048), "quick": (1024, 1024)}
    rtol, floor = 1e-3, 1e-3

    def inputs(self, rng):
        r, c = self.shape
        return (rng.standard_normal(self.shape, np.float32) * np.float32(3.0) + np.float32(1.0),
                rng.standard_normal(c, np.float32), rng.standard_normal(c, np.float32))

    @staticmethod
    def formula(m, x, g, b):
        mu = m.mean(x, axis=1, keepdims=True)
        d = x - mu
        var = m.mean(d * d, axis=1, keepdims=True)
        return (d / m.sqrt(var + 1e-5) * g + b,)

    def bytes_moved(self):
        return 2 * 4 * int(np.prod(self.shape))

    def numba(self, inputs):
        from numba import njit, prange

        @njit(parallel=True, fastmath=False)
        def layernorm(x, g, b):
            rows, cols = x.shape
            out = np.empty_like(x)
            for r in prange(rows):
                s = 0.0
                for c in range(cols):
                    s += x[r, c]
                mu = np.float32(s / cols)
                v = 0.0
                for c in range(cols):
                    d = x[r, c] - mu
                    v += d * d
                inv = np.float32(1.0) / np.sqrt(np.float32(v / cols) + np.float32(1e-5))
                for c in range(cols):
                    out[r, c] = (x[r, c] - mu) * inv * g[c] + b[c]
            return out
        return lambda: (layernorm(*inputs),)


@register
class NBody(Workload):
    name = "nbody"
    doc = "one all-pairs gravitational n-body step (accelerations, velocity and position update), float64"
    sizes: ClassVar[dict] = {"full": (4096,), "quick": (1024,)}
    rtol, floor = 1e-9, 1e-6

    def inputs(self, rng):
        n = self.shape[0]
        return (rng.standard_normal((3, n)), rng.standard_normal((3, n)) * 0.1,
                rng.random(n) + 0.5)

    @staticmethod
    def formula(m, pos, vel, mass):
        dt, eps2 = 0.01, 0.01
        x, y, z = pos[0], pos[1], pos[2]
        n = x.shape[0]
        dx = x.reshape(1, n) - x.reshape(n, 1)
        dy = y.reshape(1, n) - y.reshape(n, 1)
        dz = z.reshape(1, n) - z.reshape(n, 1)
        r2 = dx * dx + dy * dy + dz * dz + eps2
        w = mass.reshape(1, n) / (r2 * m.sqrt(r2))
        ax, ay, az = m.sum(dx * w, axis=1), m.sum(dy * w, axis=1), m.sum(dz * w, axis=1)
        vx, vy, vz = vel[0] + dt * ax, vel[1] + dt * ay, vel[2] + dt * az
        return (x + dt * vx, y + dt * vy, z + dt * vz, vx, vy, vz)

    def numba(self, inputs):
        from numba import njit, prange

        @njit(parallel=True, fastmath=False)
        def step(pos, vel, mass):
            dt, eps2 = 0.01, 0.01
            n = pos.shape[1]
            out = np.empty((6, n))
            for i in prange(n):
                ax = ay = az = 0.0
                for j in range(n):
                    dx = pos[0, j] - pos[0, i]
                    dy = pos[1, j] - pos[1, i]
                    dz = pos[2, j] - pos[2, i]
                    r2 = dx * dx + dy * dy + dz * dz + eps2
                    w = mass[j] / (r2 * np.sqrt(r2))
                    ax += dx * w
                    ay += dy * w
                    az += dz * w
                vx, vy, vz = vel[0, i] + dt * ax, vel[1, i] + dt * ay, vel[2, i] + dt * az
                out[3, i], out[4, i], out[5, i] = vx, vy, vz
                out[0, i] = pos[0, i] + dt * vx
                out[1, i] = pos[1, i] + dt * vy
                out[2, i] = pos[2, i] + dt * vz
            return out
        return lambda: tuple(step(*inputs))


class _SmallLoop(Workload):
    """Per-op overhead: many iterations of a 10-op update on small arrays, reading a scalar
    every 10 iterations (as a convergence check would)."""
    sizes: ClassVar[dict] = {"full": (1000, 200), "quick": (1000, 50)}   # (elements, iterations)
    rtol, floor = 1e-4, 1e-6

    def inputs(self, rng):
        return (rng.random(self.shape[0]).astype(np.float32),
                rng.random(self.shape[0]).astype(np.float32))

    @staticmethod
    def body(m, u, v):
        u2 = u + 0.01 * (v - u) * (1.0 - u)
        v2 = v * 0.99 + 0.01 * m.sqrt(u2 * u2 + 1.0)
        return u2, v2

    def iterate(self, step, maximum, u, v):
        """The loop every library runs: ``step`` per iteration, ``maximum(u)`` read every 10."""
        checks = []
        for it in range(self.shape[1]):
            u, v = step(u, v)
            if it % 10 == 9:
                checks.append(float(maximum(u)))
        return u, v, np.array(checks, np.float32)

    def formula(self, m, u, v):
        return self.iterate(lambda a, b: self.body(m, a, b), m.max, u, v)


@register
class SmallLoop(_SmallLoop):
    name = "smallloop"
    doc = "per-op overhead: 200 iterations of a 10-op update on 1000-element arrays"

    def numba(self, inputs):
        from numba import njit

        @njit
        def body(u, v):
            u2 = u + np.float32(0.01) * (v - u) * (np.float32(1.0) - u)
            v2 = v * np.float32(0.99) + np.float32(0.01) * np.sqrt(u2 * u2 + np.float32(1.0))
            return u2, v2

        return lambda: self.iterate(body, np.max, *inputs)

    def jax(self, inputs):
        """The body jitted, the loop and the scalar reads in Python (a read under jax.jit
        would be a ConcretizationTypeError)."""
        import jax
        jax.config.update("jax_enable_x64", True)
        import jax.numpy as jnp
        body = jax.jit(lambda u, v: self.body(jnp, u, v))
        dev = [jax.device_put(a) for a in inputs]

        return lambda: to_numpy(self.iterate(body, jnp.max, *dev))


@register
class SmallLoopMacro(SmallLoop):
    name = "smallloop_macro"
    doc = "the small-array loop with its body as a @ps.macro (one replay per iteration)"
    numba = None
    numexpr = None
    jax = None          # a streamrt variant: the jax column is smallloop's

    def streamrt(self, inputs):
        import streamrt as ps
        body = ps.macro(lambda u, v: self.body(ps, u, v))
        lazy = [ps.asarray(a) for a in inputs]
        ps.sync()

        return lambda: to_numpy(self.iterate(body, ps.max, *lazy))


@register
class Stencil(Workload):
    name = "stencil"
    doc = "2-D Jacobi / heat stencil, 20 steps of a slice assignment on a float32 grid"
    sizes: ClassVar[dict] = {"full": (2048, 2048), "quick": (512, 512)}
    rtol, floor = 1e-5, 1e-3
    STEPS = 20

    def inputs(self, rng):
        u0 = rng.random(self.shape, np.float32)
        u0[0, :] = 1.0                               # a hot edge
        return (u0,)

    @staticmethod
    def formula(m, u0):
        u = m.asarray(u0).copy()                     # the input is not modified
        for _ in range(Stencil.STEPS):
            u[1:-1, 1:-1] = 0.25 * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:])
        return (u,)

    def bytes_moved(self):
        return self.STEPS * 2 * 4 * int(np.prod(self.shape))     # each step: read + write u

    def numexpr(self, inputs):
        """Two buffers: each step evaluates the interior of one from the other (``out=``)."""
        import numexpr as ne
        (u0,) = inputs
        q, steps = np.float32(0.25), self.STEPS

        def run():
            u, v = u0.copy(), u0.copy()              # same boundary in both
            for _ in range(steps):
                ne.evaluate("q * (n + s + w + e)", out=v[1:-1, 1:-1], local_dict=dict(
                    q=q, n=u[:-2, 1:-1], s=u[2:, 1:-1], w=u[1:-1, :-2], e=u[1:-1, 2:]))
                u, v = v, u
            return (u,)
        return run

    def numba(self, inputs):
        from numba import njit, prange
        q = np.float32(0.25)

        @njit(parallel=True, fastmath=False)
        def jacobi(u0, steps):
            rows, cols = u0.shape
            u, v = u0.copy(), u0.copy()
            for _ in range(steps):
                for i in prange(1, rows - 1):
                    for j in range(1, cols - 1):
                        v[i, j] = q * (u[i - 1, j] + u[i + 1, j] + u[i, j - 1] + u[i, j + 1])
                u, v = v, u
            return u
        return lambda: (jacobi(inputs[0], self.STEPS),)

    def jax(self, inputs):
        """JAX arrays are immutable: ``.at[1:-1, 1:-1].set`` in a ``fori_loop``."""
        import jax

        def step(_, u):
            return u.at[1:-1, 1:-1].set(
                0.25 * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:]))
        f = jax.jit(lambda u0: jax.lax.fori_loop(0, self.STEPS, step, u0))
        u0 = jax.device_put(inputs[0])
        return lambda: to_numpy((jax.block_until_ready(f(u0)),))


@register
class Wave(Workload):
    name = "wave"
    doc = "1-D wave equation, 32 leapfrog steps with periodic roll, float64"
    sizes: ClassVar[dict] = {"full": (4_000_000,), "quick": (262_144,)}
    rtol, floor = 1e-10, 1e-3
    STEPS, C2 = 32, 0.25                 # C2 = (c dt / dx)^2 <= 1: stable

    def inputs(self, rng):
        n = self.shape[0]
        x = np.arange(n) / n
        u = np.exp(-(((x - 0.5) / 0.05) ** 2)) + 0.01 * rng.standard_normal(n)
        return (u, np.roll(u, 1))        # u now, u one step earlier (a right-moving start)

    @staticmethod
    def formula(m, u, u_prev):
        c2 = Wave.C2
        for _ in range(Wave.STEPS):
            u, u_prev = 2.0 * u - u_prev + c2 * (m.roll(u, 1) + m.roll(u, -1) - 2.0 * u), u
        return (u,)

    def bytes_moved(self):
        return self.STEPS * 3 * 8 * self.shape[0]     # each step: read u, u_prev; write u_next

    def numexpr(self, inputs):
        """The interior with shifted slices (no roll copies) into a rotating buffer; the two
        periodic end points in Python (same arithmetic, same order)."""
        import numexpr as ne
        c2, steps = self.C2, self.STEPS
        expr = "2.0 * u - up + c2 * (l + r - 2.0 * u)"

        def run():
            u, up = inputs[0].copy(), inputs[1].copy()      # three rotating buffers
            un = np.empty_like(u)
            for _ in range(steps):
                ne.evaluate(expr, out=un[1:-1], local_dict=dict(
                    u=u[1:-1], up=up[1:-1], l=u[:-2], r=u[2:], c2=c2))
                un[0] = 2.0 * u[0] - up[0] + c2 * (u[-1] + u[1] - 2.0 * u[0])
                un[-1] = 2.0 * u[-1] - up[-1] + c2 * (u[-2] + u[0] - 2.0 * u[-1])
                un, u, up = up, un, u
            return (u,)
        return run

    def numba(self, inputs):
        from numba import njit, prange

        @njit(parallel=True, fastmath=False)
        def wave(u0, up0, steps, c2):
            n = u0.shape[0]
            u, up, un = u0.copy(), up0.copy(), np.empty_like(u0)
            for _ in range(steps):
                for i in prange(n):
                    left = u[i - 1] if i > 0 else u[n - 1]
                    right = u[i + 1] if i < n - 1 else u[0]
                    un[i] = 2.0 * u[i] - up[i] + c2 * (left + right - 2.0 * u[i])
                un, u, up = up, un, u
            return u
        return lambda: (wave(*inputs, self.STEPS, self.C2),)

    def jax(self, inputs):
        """The same step in a ``lax.fori_loop``: the shared formula, unrolled under jax.jit,
        lets XLA fuse the 32 steps into one another and recompute the rolled neighbours
        (~80x slower at 256K elements)."""
        import jax
        jax.config.update("jax_enable_x64", True)
        import jax.numpy as jnp
        c2 = self.C2

        def step(_, state):
            u, u_prev = state
            return 2.0 * u - u_prev + c2 * (jnp.roll(u, 1) + jnp.roll(u, -1) - 2.0 * u), u
        f = jax.jit(lambda u, up: jax.lax.fori_loop(0, self.STEPS, step, (u, up))[0])
        dev = [jax.device_put(a) for a in inputs]
        return lambda: to_numpy((jax.block_until_ready(f(*dev)),))


@register
class MonteCarloPi(Workload):
    name = "montecarlo_pi"
    doc = "Monte Carlo pi: count float32 uniform (x, y) with x*x + y*y <= 1, each library's RNG"
    sizes: ClassVar[dict] = {"full": (50_000_000,), "quick": (2_000_000,)}
    floor = 1.0

    def __init__(self, shape):
        super().__init__(shape)
        # the libraries draw different numbers: each estimate is checked against pi, within
        # 6 standard deviations of the estimate (sd = 4 sqrt(p (1 - p) / N), p = pi / 4)
        p = np.pi / 4
        self.rtol = 6 * 4 * np.sqrt(p * (1 - p) / self.shape[0]) / np.pi

    def inputs(self, rng):
        return (int(rng.integers(2**31)),)           # the seed (not an array)

    def formula(self, m, seed):
        """NumPy: ``np.random.default_rng`` (PCG64); streamrt: ``ps.random.default_rng``
        (Philox, the numbers made inside the counting kernel)."""
        n = self.shape[0]
        rng = m.random.default_rng(seed)
        x = rng.random(n, dtype=np.float32)
        y = rng.random(n, dtype=np.float32)
        return (4.0 * m.count_nonzero(x * x + y * y <= 1.0) / n,)

    def reference(self, inputs):
        return (np.pi,)

    def streamrt(self, inputs):
        import streamrt as ps
        return lambda: to_numpy(self.formula(ps, *inputs))

    def numba(self, inputs):
        """np.random inside a prange loop (Numba keeps one generator state per thread;
        ``np.random.random()`` draws float64, rounded to float32 here)."""
        from numba import njit, prange
        f = np.float32

        @njit(parallel=True, fastmath=False)
        def count(n):
            c = 0
            for _ in prange(n):
                x, y = f(np.random.random()), f(np.random.random())
                if x * x + y * y <= f(1.0):
                    c += 1
            return c

        @njit
        def seed(s):
            np.random.seed(s)            # seeds the calling thread's state only
        seed(inputs[0])
        n = self.shape[0]
        return lambda: (4.0 * count(n) / n,)

    def jax(self, inputs):
        import jax
        jax.config.update("jax_enable_x64", True)
        import jax.numpy as jnp
        n = self.shape[0]

        @jax.jit
        def estimate(key):
            kx, ky = jax.random.split(key)
            x = jax.random.uniform(kx, (n,), jnp.float32)
            y = jax.random.uniform(ky, (n,), jnp.float32)
            return 4.0 * jnp.count_nonzero(x * x + y * y <= 1.0) / n
        key = jax.random.PRNGKey(inputs[0])
        return lambda: to_numpy((jax.block_until_ready(estimate(key)),))


@register
class CG(Workload):
    name = "cg"
    doc = "conjugate gradient, 50 iterations (no early exit) with a dense float64 SPD matrix"
    sizes: ClassVar[dict] = {"full": (2048,), "quick": (512,)}
    rtol, floor = 1e-8, 1e-3
    ITERS = 50

    def inputs(self, rng):
        n = self.shape[0]
        M = rng.standard_normal((n, n))
        # eigenvalues in ~[0.05, 4.05]: condition ~80, so 50 iterations reduce the residual
        # to ~1e-5 and do not reach rounding level (where the libraries' results would differ)
        A = M @ M.T / n + 0.05 * np.eye(n)
        return (A, rng.standard_normal(n))

    @staticmethod
    def formula(m, A, b):
        """Scalars stay 0-d arrays (no float()), so streamrt records all iterations lazily."""
        x = m.zeros_like(b)
        r = p = b
        rr = m.dot(r, r)
        for _ in range(CG.ITERS):
            Ap = A @ p
            alpha = rr / m.dot(p, Ap)
            x = x + alpha * p
            r = r - alpha * Ap
            rr_new = m.dot(r, r)
            p = r + (rr_new / rr) * p
            rr = rr_new
        return x, rr

    def bytes_moved(self):
        return self.ITERS * 8 * self.shape[0] ** 2        # one read of A per matvec

    def numba(self, inputs):
        from numba import njit, prange

        @njit(parallel=True, fastmath=False)
        def matvec(A, p, out):
            n = A.shape[0]
            for i in prange(n):
                s = 0.0
                for j in range(n):
                    s += A[i, j] * p[j]
                out[i] = s

        @njit(parallel=True, fastmath=False)
        def dot(a, b):
            s = 0.0
            for i in prange(a.shape[0]):
                s += a[i] * b[i]
            return s

        @njit(parallel=True, fastmath=False)
        def update(x, r, p, Ap, alpha):            # x += alpha p; r -= alpha Ap
            for i in prange(x.shape[0]):
                x[i] += alpha * p[i]
                r[i] -= alpha * Ap[i]

        @njit(parallel=True, fastmath=False)
        def direction(p, r, beta):                 # p = r + beta p
            for i in prange(p.shape[0]):
                p[i] = r[i] + beta * p[i]

        @njit
        def cg(A, b, iters):
            x = np.zeros_like(b)
            r, p, Ap = b.copy(), b.copy(), np.empty_like(b)
            rr = dot(r, r)
            for _ in range(iters):
                matvec(A, p, Ap)
                alpha = rr / dot(p, Ap)
                update(x, r, p, Ap, alpha)
                rr_new = dot(r, r)
                direction(p, r, rr_new / rr)
                rr = rr_new
            return x, rr
        return lambda: cg(*inputs, self.ITERS)


_COLD = {
    "numpy": "import numpy as np\nx = np.linspace(0, 1, 100000, dtype=np.float32)\n"
             "print(float(np.sum(np.sin(x) * 2.0 + 1.0)))",
    "numba": "import numpy as np\nfrom numba import njit, prange\n"
             "@njit(parallel=True, cache=True)\ndef f(x):\n    s = 0.0\n"
             "    for i in prange(x.shape[0]):\n        s += np.sin(x[i]) * 2.0 + 1.0\n    return s\n"
             "x = np.linspace(0, 1, 100000, dtype=np.float32)\nprint(float(f(x)))",
    "streamrt": "import numpy as np, streamrt as ps\nx = ps.asarray(np.linspace(0, 1, 100000, "
                "dtype=np.float32))\nprint(float(ps.sum(ps.sin(x) * 2.0 + 1.0)))",
}


@register
class ColdStart(Workload):
    name = "coldstart"
    doc = "a second process: interpreter start, import, first small computation (warm disk caches)"
    sizes: ClassVar[dict] = {"full": (1,), "quick": (1,)}
    rtol, floor = 1e-3, 1.0
    jax = None          # no JAX script (the shared formula here does not use ``m``)

    def inputs(self, rng):
        return ()

    @staticmethod
    def formula(m):
        x = np.linspace(0, 1, 100000, dtype=np.float32)
        return (np.float32(np.sum(np.sin(x) * 2.0 + 1.0)),)

    def _runner(self, lib):
        script = _COLD[lib]
        d = tempfile.mkdtemp(prefix="streamrt-cold-")
        path = os.path.join(d, "cold.py")       # numba's cache=True needs a real file
        with open(path, "w") as f:
            f.write(script + "\n")

        env = self._env(d)

        def run():
            p = subprocess.run([sys.executable, path], capture_output=True, text=True,
                               check=True, cwd=ROOT, env=env)
            return (np.float32(float(p.stdout.strip().splitlines()[-1])),)
        self._path = path
        return run

    @staticmethod
    def _env(d, **extra):
        """Warm disk caches for every library alike: Python's bytecode caches are written under
        the run's temporary directory (PYTHONDONTWRITEBYTECODE would recompile every module
        of an editable install at each start)."""
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env["PYTHONPYCACHEPREFIX"] = os.path.join(d, "pycache")
        env.update(extra)
        return env

    def extra(self, lib, inputs, repeat):
        """streamrt worker: the same script compiling at once (STREAMRT_JIT=sync, no NumPy
        tier: Numba loaded, the kernel loaded from the disk cache), to show what the tiers
        save."""
        if lib != "streamrt":
            return {}
        env = self._env(os.path.dirname(self._path), STREAMRT_JIT="sync",
                        STREAMRT_EAGER_ELEMENTS="0")
        ts = []
        for _ in range(max(repeat, 3) + 1):
            t0 = time.perf_counter()
            subprocess.run([sys.executable, self._path], capture_output=True, check=True,
                           cwd=ROOT, env=env)
            ts.append(time.perf_counter() - t0)
        return {"kernel_path_s": statistics.median(ts[1:])}

    def numpy(self, inputs):
        return self._runner("numpy")

    def numba(self, inputs):
        return self._runner("numba")

    def streamrt(self, inputs):
        return self._runner("streamrt")


# ---- worker -------------------------------------------------------------------------------
def worker(lib, name, shape, repeat, seed) -> dict:
    wl = WORKLOADS[name](shape)
    inputs = wl.inputs(np.random.default_rng(seed))
    want = wl.reference(inputs)
    res = {"lib": lib, "workload": name, "shape": list(wl.shape)}
    flavour = lib
    lib = "streamrt" if lib in BACKEND_LIBS else lib
    res["lib"] = flavour
    setup = getattr(wl, lib)
    if setup is None:
        return {**res, "skipped": "not implemented"}
    if lib == "streamrt":
        sys.path.insert(0, ROOT)
    fn = setup(inputs)
    if lib == "streamrt":
        import streamrt as ps
        ps.reset_stats()
    t0 = time.perf_counter()
    got = to_numpy(fn())
    first = time.perf_counter() - t0
    if lib == "streamrt":
        # the first call ran on the tiers (NumPy, interpreted kernels) while the compile worker
        # built what pays: warm means the compiled steady state
        # (the cost model compiles a kernel once its interpreted runs have cost what the switch
        # does: calls for ~3 s, as a program running that long would, then wait for the worker)
        from streamrt.backends.numba_cpu import jit
        t_end = time.perf_counter() + 3.0
        for _ in range(1000):
            to_numpy(fn())
            if time.perf_counter() > t_end:
                break
        jit.wait(600)
    to_numpy(fn())                                   # warm-up
    if lib == "streamrt":
        first_stats = ps.runtime_stats()
        ps.reset_stats()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        to_numpy(fn())
        times.append(time.perf_counter() - t0)
    err = max_rel_err(got, want, wl.floor)
    res.update(times=times, first=first, err=err, ok=bool(err <= wl.rtol), rtol=wl.rtol,
               bytes=wl.bytes_moved(), **wl.extra(lib, inputs, repeat))
    if lib == "streamrt":
        st = ps.runtime_stats()
        res.update(backend=ps.config.settings.backend,
                   device_fallbacks=st["fallbacks"] + st["fp64_fallbacks"],
                   kernels_per_run=st["kernels_launched"] / repeat,
                   first_compiled=first_stats["kernels_compiled"],
                   first_loaded=first_stats["kernels_loaded_from_disk"])
    if lib in ("numba", "streamrt"):
        import numba
        res["threads"] = numba.get_num_threads()
        res["threading_layer"] = numba.threading_layer()
    elif lib == "numexpr":
        import numexpr
        res["threads"] = numexpr.get_num_threads() if hasattr(numexpr, "get_num_threads") \
            else numexpr.nthreads
    return res


def run_worker(lib, name, shape, args, env) -> dict:
    cmd = [sys.executable, HERE, "--worker", lib, name, "--shape", ",".join(map(str, shape)),
           "--repeat", str(args.repeat), "--seed", str(args.seed)]
    base = {"lib": lib, "workload": name, "shape": list(shape)}
    if lib in BACKEND_LIBS:
        env = dict(env, STREAMRT_BACKEND=BACKEND_LIBS[lib][0])
    try:
        p = subprocess.run(cmd, check=False, capture_output=True, text=True, env=env, timeout=args.timeout)
    except subprocess.TimeoutExpired:
        return {**base, "ok": False, "error": f"timeout after {args.timeout} s"}
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("{")]
    if p.returncode != 0 or not lines:
        tail = [ln.strip() for ln in (p.stderr or p.stdout).strip().splitlines()[-3:]]
        return {**base, "ok": False, "error": f"exit {p.returncode}: " + " | ".join(tail)}
    return json.loads(lines[-1])


def merge_rounds(rs) -> dict:
    """One library's workers on one workload (``--rounds``) as one result: every round's timed
    runs pooled, the first round's first call and notes; not ok if any round was not."""
    bad = [r for r in rs if "times" not in r]
    if bad:
        return bad[0]
    out = dict(rs[0])
    out["times"] = [t for r in rs for t in r["times"]]
    out["ok"] = all(r.get("ok") for r in rs)
    out["rounds"] = len(rs)
    return out


# ---- table --------------------------------------------------------------------------------
def fmt_ms(t):
    return f"{t * 1e3:.1f}" if t < 10 else f"{t:.2f}s"


def report(results) -> str:
    rows = [("workload", "library", "median ms", "min-max ms", "first ms", "vs numpy",
             "first vs numpy", "check", "notes")]
    summary = []
    vs_numpy = []           # (workload, streamrt's ratio to NumPy): the geometric mean line
    first_vs = []           # (workload, the same for the first call)
    by_wl: dict[str, dict] = {}
    for r in results:
        by_wl.setdefault(r["workload"], {})[r["lib"]] = r
    for wl, rs in by_wl.items():
        med = {lib: statistics.median(r["times"]) for lib, r in rs.items() if r.get("times")}
        t_np = med.get("numpy")
        for lib, r in rs.items():
            if r.get("skipped"):
                continue
            if "times" not in r:
                rows.append((wl, lib, "-", "-", "-", "-", "-", "ERROR",
                             r.get("error", "")[-240:]))
                continue
            t = med[lib]
            notes = []
            if lib.startswith("streamrt"):
                if r.get("device_fallbacks"):
                    notes.append(f"{r['device_fallbacks']} program(s) fell back to the CPU")
                notes.append(f"{r['kernels_per_run']:g} kernel(s)/run; first call "
                             + ("compiled" if r["first_compiled"] else
                                "disk cache" if r["first_loaded"] else "in-memory")
                             + f" ({r['first_compiled']}c/{r['first_loaded']}l)")
            if r.get("bytes") and wl == "chain":
                notes.append(f"{r['bytes'] / t / 1e9:.1f} GB/s")
            if "copy_gbps" in r:
                notes.append(f"copy {r['copy_gbps']:.1f} GB/s")
            if not r["ok"]:
                notes.append(f"max rel err {r['err']:.1e} > {r['rtol']:.0e}")
            spread = f"{fmt_ms(min(r['times']))}-{fmt_ms(max(r['times']))}"
            f_np = rs["numpy"]["first"] if t_np else None
            rows.append((wl, lib, fmt_ms(t), spread, fmt_ms(r["first"]),
                         f"{t_np / t:.2f}x" if t_np else "-",
                         f"{f_np / r['first']:.2f}x" if f_np else "-",
                         "ok" if r["ok"] else "FAIL", "; ".join(notes)))
        if "streamrt" in med and t_np and rs["streamrt"]["ok"]:
            vs_numpy.append((wl, t_np / med["streamrt"]))
            first_vs.append((wl, rs["numpy"]["first"] / rs["streamrt"]["first"]))
        if "streamrt" in med:
            peers = {lib: t for lib, t in med.items()
                     if not lib.startswith("streamrt") and rs[lib]["ok"]}
            if peers:
                best = min(peers, key=peers.get)
                ratio = peers[best] / med["streamrt"]
                line = (f"{wl}: streamrt vs best peer ({best}): {ratio:.2f}x "
                        f"({'faster' if ratio > 1 else 'slower'})")
                if "numba" in med and "numba" != best:
                    line += f"; vs numba: {med['numba'] / med['streamrt']:.2f}x"
                copy = rs["streamrt"].get("copy_gbps") or rs.get("numba", {}).get("copy_gbps")
                if copy and rs["streamrt"].get("bytes") and wl == "chain":
                    bw = rs["streamrt"]["bytes"] / med["streamrt"] / 1e9
                    line += f"; streamrt bandwidth {bw:.1f} GB/s = {bw / copy:.0%} of copy"
                kp = rs["streamrt"].get("kernel_path_s")
                if kp:
                    line += (f"; with STREAMRT_JIT=sync (Numba + a kernel from the disk "
                             f"cache) {fmt_ms(kp)} ms")
                summary.append(line)
    widths = [max(len(str(row[i])) for row in rows) for i in range(len(rows[0]) - 1)]
    out = []
    for i, row in enumerate(rows):
        cells = [str(c).ljust(w) if j < 2 else str(c).rjust(w)
                 for j, (c, w) in enumerate(zip(row, widths))]
        out.append("  ".join(cells) + "  " + row[-1])
        if i == 0:
            out.append("-" * len(out[0]))
    out.append("")
    out.extend(summary)
    if vs_numpy:
        gm = math.exp(sum(math.log(r) for _, r in vs_numpy) / len(vs_numpy))
        line = f"geometric mean of streamrt vs numpy over {len(vs_numpy)} workload(s): {gm:.2f}x"
        rest = [r for wl, r in vs_numpy if wl != "coldstart"]
        if len(rest) < len(vs_numpy) and rest:
            line += (f" ({math.exp(sum(map(math.log, rest)) / len(rest)):.2f}x without "
                     "coldstart)")
        out.append(line)
        gf = math.exp(sum(math.log(r) for _, r in first_vs) / len(first_vs))
        out.append(f"first call (a fresh process; an empty kernel cache unless --warm-cache): "
                   f"geometric mean of streamrt vs numpy {gf:.2f}x, lowest "
                   f"{min(r for _, r in first_vs):.2f}x ({min(first_vs, key=lambda x: x[1])[0]})")
    return "\n".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--worker", nargs=2, metavar=("LIB", "WORKLOAD"), help=argparse.SUPPRESS)
    ap.add_argument("--shape", help=argparse.SUPPRESS)
    ap.add_argument("--quick", action="store_true", help="smaller sizes")
    ap.add_argument("--only", help="comma-separated workloads (" + ", ".join(WORKLOADS) + ")")
    ap.add_argument("--libs", default=",".join(LIBS), help="comma-separated libraries")
    ap.add_argument("--repeat", type=int, default=5, help="timed runs per worker")
    ap.add_argument("--rounds", type=int, default=1,
                    help="workers per library and workload, run in turn with the other "
                         "libraries' (the medians pool every round: a shared VM's slow "
                         "phases then fall on every library alike)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", metavar="PATH", help="save the results as JSON")
    ap.add_argument("--warm-cache", action="store_true",
                    help="streamrt workers share STREAMRT_CACHE_DIR as set (their first call "
                         "loads kernels compiled before); by default each gets an empty one, "
                         "so 'first ms' is a first run")
    ap.add_argument("--env", action="append", default=[], metavar="KEY=VALUE",
                    help="environment variable for every worker (repeatable), e.g. "
                         "OMP_WAIT_POLICY=PASSIVE or NUMBA_THREADING_LAYER=workqueue")
    ap.add_argument("--timeout", type=float, default=900, help="seconds per worker")
    args = ap.parse_args(argv)

    if args.worker:
        lib, name = args.worker
        shape = tuple(int(s) for s in args.shape.split(","))
        print(json.dumps(worker(lib, name, shape, args.repeat, args.seed)), flush=True)
        return 0

    names = args.only.split(",") if args.only else list(WORKLOADS)
    unknown = [n for n in names if n not in WORKLOADS]
    if unknown:
        ap.error(f"unknown workload(s) {unknown}; known: {list(WORKLOADS)}")
    libs = []
    for lib in args.libs.split(","):
        if lib not in LIBS:
            ap.error(f"unknown library {lib!r}; known: {', '.join(LIBS)}")
        mod = BACKEND_LIBS[lib][1] if lib in BACKEND_LIBS else lib
        if lib in ("numpy", "streamrt") or importlib.util.find_spec(mod) is not None:
            libs.append(lib)
        elif lib in LIBS and lib != "jax":
            print(f"note: {lib} is not installed, skipped", file=sys.stderr)
    load = os.getloadavg()[0]
    if load > 0.5:
        print(f"warning: load average {load:.1f} -- other processes are running; multi-threaded "
              "libraries (numba, numexpr, streamrt) suffer most", file=sys.stderr)
    env = dict(os.environ)
    for kv in args.env:
        k, sep, v = kv.partition("=")
        if not sep:
            ap.error(f"--env {kv!r}: expected KEY=VALUE")
        env[k] = v
    tmp = None
    if not args.warm_cache:
        tmp = tempfile.mkdtemp(prefix="streamrt-bench-")
    size = "quick" if args.quick else "full"
    results = []
    try:
        for name in names:
            wl = WORKLOADS[name]
            shape = wl.sizes[size]
            runs = {}
            for rnd in range(args.rounds):
                for lib in libs:
                    if getattr(wl, "streamrt" if lib in BACKEND_LIBS else lib, None) is None:
                        continue
                    print(f"  {name} {'x'.join(map(str, shape))} / {lib}"
                          f"{f' (round {rnd + 1})' if args.rounds > 1 else ''} ...",
                          file=sys.stderr, flush=True)
                    wenv = env
                    if tmp and (lib == "streamrt" or lib in BACKEND_LIBS):
                        wenv = dict(env, STREAMRT_CACHE_DIR=tempfile.mkdtemp(dir=tmp))
                    runs.setdefault(lib, []).append(run_worker(lib, name, shape, args, wenv))
            results += [merge_rounds(rs) for rs in runs.values()]
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)
    layers = sorted({r["threading_layer"] for r in results if r.get("threading_layer")})
    rounds = f" x {args.rounds} rounds" if args.rounds > 1 else ""
    print(f"streamrt benchmarks ({size} sizes, median of {args.repeat} timed runs{rounds} after "
          f"1 warm-up, {os.cpu_count()} cores, load before {load:.2f}; numba threading layer: "
          f"{'/'.join(layers) or '-'}{'; ' + ' '.join(args.env) if args.env else ''})")
    print("'vs numpy' = numpy time / library time (above 1: faster than numpy)")
    print(report(results))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"size": size, "repeat": args.repeat, "rounds": args.rounds,
                       "cpus": os.cpu_count(),
                       "load_before": load, "env": args.env,
                       "results": results}, f, indent=1)
    # exit status: streamrt wrong or any worker crashed (a peer's inaccuracy is only shown)
    bad = [r for r in results if "error" in r or (r["lib"] == "streamrt" and not r.get("ok"))]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
