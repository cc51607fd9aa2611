"""Overhead of streamrt's caches on small arrays, against NumPy, in one run.

    python benchmarks/overhead.py

0. Per-op cost on the NumPy tier (the default for arrays this small: each op runs at once
   through NumPy's loop) of an 8-op body on 1,000-element float32 arrays, against NumPy's.
   Sections 1, 2 and 4 then turn the tier off (``eager_elements=0``) to time the recorded
   path itself.
1. Per-op cost on 1,000-element float32 arrays, trace-cache hit path: an 8-op loop body plus
   a read per iteration (end to end: record, flush, instantiate the cached template, run the
   fused kernel, read), and pure recording (many ops, then one ps.sync()), against NumPy's
   own per-op cost for the same body.
2. A 20-op @ps.macro section: the direct replay's cost per call (executors/direct.py: the
   kernel runs inside the call), the general replay path on the application side (direct
   replay off, the executor stubbed out, so only signature, port re-creation and submission
   are timed) and end to end (call + read), against the same body in eager NumPy.
3. A second process: its first call (Numba import + kernels loaded from the disk cache +
   ProgGen, compiling on the first call: STREAMRT_JIT=sync) against its warm call, and Numba's
   one-time start-up (``import numba`` + a trivial njit call in a fresh process); and the
   first call with the tiers (the default: NumPy tier, kernels interpreted until compiled).
4. A program with no repetition (every flush a new trace): trace cache on vs off.

    python benchmarks/overhead.py --callgrind

instead counts instructions (valgrind's callgrind, which must be installed: exact and
repeatable on a noisy machine, where timings drift 30-50%) of the small-array loop of the
``smallloop`` benchmark -- 200 iterations of an 11-op update on 1,000-element float32 arrays,
a scalar read every 10 -- recorded by the C path and by the Python path
(``STREAMRT_NATIVE=0``), and of the recording alone (the same loop without reads: one
2,200-op trace, itself cached by the runs before). Counted inside
``streamrt.frontend._native.measured`` (``--toggle-collect``). Under valgrind Numba compiles for the
CPU valgrind emulates (no AVX-512): the kernels' share is not the real one.

Every figure is the median of >= 5 repetitions. Kernels are cached under a fresh temporary
directory (removed at the end): nothing is written to the repository or $HOME."""
from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

CACHE = tempfile.mkdtemp(prefix="streamrt-bench-")
for _k in [k for k in os.environ if k.startswith("STREAMRT_")]:
    del os.environ[_k]
os.environ["STREAMRT_CACHE_DIR"] = CACHE

import numpy as np  # noqa: E402

import streamrt as ps  # noqa: E402
from streamrt.runtime import cscheduler  # noqa: E402

N = 1000
REPEATS = 7


def median_time(fn, inner, repeats=REPEATS):
    """Median over ``repeats`` of the time of ``inner`` calls of fn, per call (seconds)."""
    out = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(inner):
            fn()
        out.append((time.perf_counter() - t0) / inner)
    return statistics.median(out)


# ---- the bodies -----------------------------------------------------------------------------
def body8(m, x, s):
    """8 ops (scalars are kernel parameters, not ops)."""
    y = x * s + 1.0
    y = y * y - x
    y = m.sqrt(m.abs(y))
    return y * 0.5 + s


def body20(m, u, v):
    """20 ops."""
    a = u * 0.5 + v
    b = a * a - u
    c = m.sqrt(m.abs(b)) + v
    d = c * 0.25 - a
    e = m.abs(d) * b
    f = e + c * a
    g = m.sqrt(m.abs(f)) - 1.0
    h = g * d
    return h * h + m.abs(h)


@ps.macro
def section20(u, v):
    return body20(ps, u, v)


# ---- 0. per-op cost on the NumPy tier (the default for arrays this small) -------------------
def bench_numpy_tier():
    rng = np.random.default_rng(0)
    a = rng.uniform(-1, 1, N).astype(np.float32)
    x = ps.asarray(a)
    ps.reset_stats()
    np.testing.assert_allclose(np.asarray(body8(ps, x, 0.3)), body8(np, a, 0.3), rtol=1e-6)
    t_sr = median_time(lambda: body8(ps, x, 0.3), 5000)
    st = ps.runtime_stats()
    assert st["ops_recorded"] == 0 and st["ops_eager"] >= 8 * 5000, st
    t_np = median_time(lambda: body8(np, a, 0.3), 5000)
    return t_sr / 8, t_np / 8


# ---- 1. per-op overhead, trace-cache hit path ----------------------------------------------
def bench_trace_path():
    rng = np.random.default_rng(0)
    a = rng.uniform(-1, 1, N).astype(np.float32)
    x = ps.asarray(a)
    state = {"s": 0.0}

    def sr_iter():
        state["s"] += 1e-3
        return np.asarray(body8(ps, x, state["s"]))

    def np_iter():
        state["s"] += 1e-3
        return body8(np, a, state["s"])

    for _ in range(20):
        sr_iter()                              # compile, then fill the trace cache
    np.testing.assert_allclose(np.asarray(body8(ps, x, 0.3)), body8(np, a, 0.3), rtol=1e-5,
                               atol=1e-6)
    ps.reset_stats()
    t_sr = median_time(sr_iter, 2000)
    st = ps.runtime_stats()
    assert st["trace_cache_misses"] == 0 and st["kernels_compiled"] == 0, st
    t_np = median_time(np_iter, 2000)

    # pure recording: 200 bodies (1,600 ops) recorded, then one ps.sync()
    reps, rec = [], []
    ps.reset_stats()
    for _ in range(REPEATS + 1):
        t0 = time.perf_counter()
        for i in range(200):
            y = body8(ps, x, 1e-3 * i)
        t1 = time.perf_counter()
        ps.sync()
        reps.append(t1 - t0)
        rec.append(ps.runtime_stats()["ops_recorded"])
        ps.reset_stats()
        del y
    assert rec[0] == 1600, rec
    t_rec = statistics.median(reps[1:]) / 1600
    return t_sr / 8, t_np / 8, t_rec


# ---- 2. a 20-op macro ------------------------------------------------------------------------
def bench_macro():
    rng = np.random.default_rng(1)
    a = rng.uniform(-1, 1, N).astype(np.float32)
    b = rng.uniform(-1, 1, N).astype(np.float32)
    x, y = ps.asarray(a), ps.asarray(b)
    ps.reset_stats()
    np.asarray(section20(x, y))                # records
    assert ps.runtime_stats()["ops_recorded"] == 20, ps.runtime_stats()["ops_recorded"]
    for _ in range(20):
        np.asarray(section20(x, y))
    np.testing.assert_allclose(np.asarray(section20(x, y)), body20(np, a, b), rtol=1e-4,
                               atol=1e-5)

    def e2e():
        return np.asarray(section20(x, y))

    replays0 = section20.replays
    d0 = ps.runtime_stats()["direct_replays"]
    t_e2e = median_time(e2e, 2000)
    # the direct replay (executors/direct.py): the whole call, kernel included, no read
    t_direct = median_time(lambda: section20(x, y), 2000)
    assert ps.runtime_stats()["direct_replays"] - d0 >= 2 * REPEATS * 2000
    # application side of the general replay path: the executor stubbed out
    real = cscheduler.dispatch
    cscheduler.dispatch = lambda seq, executor, inline=False: None
    try:
        with ps.config.override(direct_replay=False):
            t_app = median_time(lambda: section20(x, y), 2000)
    finally:
        cscheduler.dispatch = real
    assert section20.calls == 1 and section20.replays - replays0 == 3 * REPEATS * 2000
    t_np = median_time(lambda: body20(np, a, b), 2000)
    return t_app, t_direct, t_e2e, t_np


# ---- 3. a second process -------------------------------------------------------------------
CHILD = r"""
import json, time
t0 = time.perf_counter()
import numpy as np
import streamrt as ps
t_import = time.perf_counter() - t0
x = ps.asarray(np.linspace(-1, 1, 1000).astype(np.float32))
def body(x, s):
    y = x * s + 1.0
    y = y * y - x
    y = ps.sqrt(ps.abs(y))
    return y * 0.5 + s
t0 = time.perf_counter()
np.asarray(body(x, 0.5))
t_first = time.perf_counter() - t0
warm = []
for i in range(50):
    t0 = time.perf_counter()
    np.asarray(body(x, 0.5 + i))
    warm.append(time.perf_counter() - t0)
warm.sort()
st = ps.runtime_stats()
print(json.dumps({"import": t_import, "first": t_first, "warm": warm[len(warm) // 2],
                  "compiled": st["kernels_compiled"], "loaded": st["kernels_loaded_from_disk"]}))
"""

NUMBA_CHILD = r"""
import time
t0 = time.perf_counter()
import numba
@numba.njit
def f(x):
    return x + 1
f(1)
print(time.perf_counter() - t0)
"""


def _run(code, cache, tiered=False):
    # (bytecode cached under the temporary directory, as an installed package has it:
    # PYTHONDONTWRITEBYTECODE would recompile every module of an editable install per child)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("STREAMRT_") and k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = os.path.join(cache, "pycache")
    env["STREAMRT_CACHE_DIR"] = cache
    # the kernel path is measured compiling on the first call (the tiers, the default, would
    # interpret it while the compile worker builds the kernel)
    if not tiered:
        env["STREAMRT_JIT"] = "sync"
        env["STREAMRT_EAGER_ELEMENTS"] = "0"
    env["NUMBA_CACHE_DIR"] = cache             # (only matters for NUMBA_CHILD: nothing cached)
    p = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                       check=True)
    return json.loads(p.stdout.strip().splitlines()[-1])


def bench_second_process():
    cache = tempfile.mkdtemp(prefix="streamrt-bench-proc-")
    try:
        first = _run(CHILD, cache)             # compiles and fills the disk cache
        assert first["compiled"] >= 1
        runs = [_run(CHILD, cache) for _ in range(5)]
        assert all(r["compiled"] == 0 and r["loaded"] >= 1 for r in runs), runs
        numba_start = statistics.median(_run(NUMBA_CHILD, cache) for _ in range(5))
        tiered = [_run(CHILD, cache, tiered=True) for _ in range(5)]
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    med = lambda k: statistics.median(r[k] for r in runs)  # noqa: E731
    cold = statistics.median(r["first"] for r in tiered)
    return first["first"], med("first"), med("warm"), med("import"), numba_start, cold


# ---- 4. no repetition: trace cache on vs off ---------------------------------------------------
def bench_no_repetition():
    rng = np.random.default_rng(2)
    data = [rng.uniform(-1, 1, N + i).astype(np.float32) for i in range(400)]
    arrays = [ps.asarray(d) for d in data]

    def run(sl):
        for x in arrays[sl]:
            np.asarray(body8(ps, x, 0.5))     # a new shape every flush: never a hit

    run(slice(0, 1))                           # compile
    on, off = [], []

    def timed(sl, use_cache):
        with ps.config.override(trace_cache=use_cache):
            t0 = time.perf_counter()
            run(sl)
            (on if use_cache else off).append((time.perf_counter() - t0) / 50)

    for r in range(REPEATS):
        sl = slice(1 + r * 50, 1 + (r + 1) * 50)
        first = r % 2 == 0                     # alternate which setting sees the shapes first
        timed(sl, first)
        timed(sl, not first)
    return statistics.median(on), statistics.median(off)


_CG_CHILD = """
import sys, numpy as np, streamrt as ps
from streamrt.frontend import _native
def body(u, v):
    u2 = u + 0.01 * (v - u) * (1.0 - u)
    v2 = v * 0.99 + 0.01 * ps.sqrt(u2 * u2 + 1.0)
    return u2, v2
def run(u, v, reads=True):
    for it in range(200):
        u, v = body(u, v)
        if reads and it % 10 == 9:
            float(ps.max(u))
    return u, v
rng = np.random.default_rng(0)
u = ps.asarray(rng.random(1000).astype(np.float32))
v = ps.asarray(rng.random(1000).astype(np.float32))
reads = sys.argv[1] == "run"
for _ in range(3):                      # (the same loop before: its trace is the cached one)
    run(u, v, reads)
    ps.sync()
_native.measured(lambda: run(u, v, reads))
ps.sync()
"""


def callgrind():
    """Instructions of the smallloop loop (see the module docstring), C and Python paths."""
    import re
    ops = 200 * 11
    out = {}
    for native in ("1", "0"):
        for what in ("run", "record"):
            env = dict(os.environ, STREAMRT_NATIVE=native, STREAMRT_JIT="sync",
                       STREAMRT_EAGER_ELEMENTS="0")
            with tempfile.TemporaryDirectory() as d:
                r = subprocess.run(["valgrind", "--tool=callgrind",
                                    "--toggle-collect=streamrt_measured",
                                    f"--callgrind-out-file={d}/cg.out", sys.executable, "-c",
                                    _CG_CHILD, what], env=env, capture_output=True, text=True)
            m = re.search(r"Collected : (\d+)", r.stderr)
            if r.returncode or not m:
                sys.exit(f"valgrind failed:\n{r.stderr[-2000:]}")
            out[native, what] = int(m.group(1))
    shutil.rmtree(CACHE, ignore_errors=True)
    print(f"instructions (callgrind), smallloop: 200 iterations x 11 ops on {N} float32, "
          f"a read every 10")
    print(f"{'':34s} {'C path':>14s} {'Python path':>14s}")
    for what, label in (("run", "whole loop (reads included)"),
                        ("record", "recording only (no reads)")):
        a, b = out["1", what], out["0", what]
        print(f"{label:34s} {a:14,d} {b:14,d}")
        print(f"{'  per op':34s} {a / ops:14,.0f} {b / ops:14,.0f}")


def main():
    if "--callgrind" in sys.argv:
        return callgrind()
    us = 1e6
    try:
        tier_op, np_tier_op = bench_numpy_tier()
        # sections 1, 2 and 4 time the recorded path with compiled kernels: the NumPy tier
        # off, so that the small arrays' ops are recorded (with it on they run at once: the
        # first row), and kernels compiled at once (STREAMRT_JIT=sync; by default they run
        # interpreted until compiling pays, and the direct replay needs compiled kernels)
        ps.config.set(jit="sync")
        with ps.config.override(eager_elements=0):
            sr_op, np_op, rec_op = bench_trace_path()
            app, direct, e2e, np20 = bench_macro()
            miss_on, miss_off = bench_no_repetition()
        ps.sync()
        ps.config.set(jit="background")
        first_fill, first2, warm2, imp2, numba_start, cold = bench_second_process()
    finally:
        shutil.rmtree(CACHE, ignore_errors=True)
    rows = [
        ("per op, NumPy tier (the default; 8-op body)", tier_op * us, np_tier_op * us, "us/op"),
        ("per op, trace-cache hit (8-op body + read)", sr_op * us, np_op * us, "us/op"),
        ("per op, recording only (1,600 ops, 1 sync)", rec_op * us, np_op * us, "us/op"),
        ("20-op macro replay, general path, app side", app * us, np20 * us, "us/call"),
        ("20-op macro replay, direct (kernel included)", direct * us, np20 * us, "us/call"),
        ("20-op macro replay, end to end (+ read)", e2e * us, np20 * us, "us/call"),
        ("no repetition: flush, trace cache on/off", miss_on * us, miss_off * us, "us/flush"),
    ]
    print(f"streamrt {ps.__version__}, numpy {np.__version__}, {N}-element float32 arrays, "
          f"median of {REPEATS}")
    print(f"{'measurement':46s} {'streamrt':>10s} {'numpy':>10s} {'diff':>10s}  unit")
    for name, a, b, unit in rows:
        if name.startswith("no repetition"):
            print(f"{name:46s} {a:10.1f} {b:10.1f} {a - b:+10.1f}  {unit} (on / off)")
        else:
            print(f"{name:46s} {a:10.2f} {b:10.2f} {a - b:+10.2f}  {unit}")
    print()
    print("second process (same cache directory, median of 5 processes; kernel path: "
          "STREAMRT_JIT=sync):")
    print(f"  first call in the process that compiled      {first_fill * 1e3:9.1f} ms")
    print(f"  first call in a second process               {first2 * 1e3:9.1f} ms")
    print(f"  warm call (trace-cache hit)                  {warm2 * 1e3:9.3f} ms")
    print(f"  Numba start-up (import + trivial njit)       {numba_start * 1e3:9.1f} ms")
    ratio = first2 / (1.5 * warm2 + numba_start)
    print(f"  first / (1.5 x warm + Numba start-up)        {ratio:9.2f}")
    print(f"  (import streamrt in the child: {imp2 * 1e3:.1f} ms, not in the first call)")
    print(f"  first call with the tiers (the default: NumPy tier / interpreted, no Numba) "
          f"{cold * 1e3:.1f} ms")


if __name__ == "__main__":
    main()
