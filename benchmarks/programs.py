"""Real NumPy-style programs: streamrt against NumPy, Numba and JAX, first run and warm.

    python benchmarks/programs.py [--sizes small,large] [--only NAME[,NAME]]
                                  [--libs numpy,streamrt,numba,jax] [--repeat N] [--first-runs N]
                                  [--timeout 120] [--json PATH] [--list]

The programs (benchmarks/programs/: PolyBench/C 4.2 kernels and short scripts) are written
as a scientist writes NumPy: the innermost loops vectorised with slices, the outer loops
(time steps, triangular loops whose slice bounds change every iteration) in Python. Each
module's ``kernel(np, *inputs)`` runs unchanged on NumPy and on streamrt (``np`` is the
namespace passed in); ``numba_kernel`` and ``jax_kernel`` are hand-written where natural.

Every measurement runs in its own fresh process (this file with ``--worker``):

* *first*: a process that builds the inputs, converts them with the library's ``asarray``,
  then times the first call including forcing the result (``numpy.asarray``): JIT
  compilation for Numba and JAX, tracing and kernel compilation for streamrt, which gets an
  empty kernel cache (``STREAMRT_CACHE_DIR``: a new temporary directory per program and
  size). The process's wall time (interpreter start to exit) is reported beside it.
  Every worker writes and reads Python's bytecode caches under the run's temporary
  directory (``PYTHONPYCACHEPREFIX``; ``PYTHONDONTWRITEBYTECODE`` is dropped from their
  environment), as an installed package has them: otherwise an editable install of
  streamrt recompiles its ~80 modules (~0.1 s) in every process, and a module first
  imported during the timed call is compiled inside it.
  This runs ``--first-runs`` times (default 3), each process with a new empty cache
  directory, and the median is reported: one fresh process's time varies by 30-50% on a
  small VM, more than the differences measured.
* *warm*: a second process (streamrt: the last first run's, now filled, cache directory,
  once the compile worker has built what that process left it to compile after exiting) calls
  the kernel once untimed, then N more times (N so that the calls take about ``--warm-seconds``,
  at least 3, or ``--repeat``) and reports the median, each result forced.

Both processes save their result; the parent checks it against NumPy's (computed in the
parent): ``numpy.allclose`` with rtol 1e-5 / atol 1e-8 for float64, rtol 1e-3 / atol 1e-5
for float32, exact for integers. A mismatch is reported as WRONG (and kept out of the
geometric means). Ratios are NumPy time / library time: above 1 is faster than NumPy.
"""
from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import math
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import traceback

import numpy

HERE = os.path.abspath(__file__)
sys.path.insert(0, os.path.dirname(HERE))

from programs import MODULES  # noqa: E402 (the package benchmarks/programs/)

LIBS = ("numpy", "streamrt", "numba", "jax")
SIZES = ("small", "large")
SLOW_RATIO = 0.8            # programs below this ratio to NumPy are counted
MAX_WARM_CALLS = 200


def load(module):
    return importlib.import_module(f"programs.{module}")


def force(result):
    """The result as a tuple of NumPy arrays (forces lazy and asynchronous results)."""
    if not isinstance(result, (tuple, list)):
        result = (result,)
    return tuple(numpy.asarray(r) for r in result)


# ---- worker: one library, one program, one size, in this process --------------------------
def setup(lib, mod, inputs):
    """(call, args): the library's version of the program and its converted inputs."""
    if lib == "numpy":
        def call(*a):
            return mod.kernel(numpy, *a)
        conv = numpy.asarray
    elif lib == "streamrt":
        import streamrt as ps

        def call(*a):
            return mod.kernel(ps, *a)
        conv = ps.asarray
    elif lib == "numba":
        call, conv = mod.numba_kernel, numpy.asarray
    elif lib == "jax":
        import functools

        import jax
        jax.config.update("jax_enable_x64", True)
        import jax.numpy as jnp
        static = tuple(k for k, x in enumerate(inputs) if isinstance(x, int))
        call = jax.jit(functools.partial(mod.jax_kernel, jnp), static_argnums=static)
        conv = jnp.asarray
    else:
        raise ValueError(f"unknown library {lib!r}")
    args = tuple(conv(x) if isinstance(x, numpy.ndarray) else x for x in inputs)
    return call, args


def worker(module, size, lib, mode, outdir, repeat, warm_seconds):
    report = {}
    try:
        mod = load(module)
        call, args = setup(lib, mod, mod.inputs(size))
        t0 = time.perf_counter()
        out = force(call(*args))
        first = time.perf_counter() - t0
        if mode == "first":
            report["first_ms"] = first * 1e3
        else:
            times = []
            while True:
                t0 = time.perf_counter()
                out = force(call(*args))
                times.append(time.perf_counter() - t0)
                if repeat:
                    if len(times) >= repeat:
                        break
                elif (len(times) >= 3 and sum(times) >= warm_seconds) \
                        or len(times) >= MAX_WARM_CALLS:
                    break
            report["warm_ms"] = statistics.median(times) * 1e3
            report["warm_n"] = len(times)
        numpy.savez(os.path.join(outdir, f"{mode}.npz"), *out)
    except BaseException as exc:  # noqa: BLE001 - every failure is a finding to report
        report["error"] = f"{type(exc).__name__}: {exc}".strip()
        report["traceback"] = traceback.format_exc()[-3000:]
    print("RESULT " + json.dumps(report), flush=True)


# ---- parent ---------------------------------------------------------------------------------
def available(lib, mod):
    if lib == "numba":
        return hasattr(mod, "numba_kernel") and importlib.util.find_spec("numba") is not None
    if lib == "jax":
        return hasattr(mod, "jax_kernel") and importlib.util.find_spec("jax") is not None
    if lib == "streamrt":
        return importlib.util.find_spec("streamrt") is not None
    return True


def worker_env(args):
    """A worker's environment: Python's bytecode caches read and written under the run's
    temporary directory (see the module docstring)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = args.pycache
    return env


def run_worker(module, size, lib, mode, outdir, cache_dir, args):
    """Run one worker process; returns its report plus ``wall_s`` (or an error/timeout)."""
    cmd = [sys.executable, HERE, "--worker", module, size, lib, mode, outdir,
           "--warm-seconds", str(args.warm_seconds)]
    if args.repeat:
        cmd += ["--repeat", str(args.repeat)]
    env = worker_env(args)
    if lib == "streamrt":
        env["STREAMRT_CACHE_DIR"] = cache_dir
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env, start_new_session=True)
    try:
        stdout, stderr = proc.communicate(timeout=args.timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        return {"error": "timeout", "timeout": True, "wall_s": time.perf_counter() - t0}
    wall = time.perf_counter() - t0
    for line in stdout.splitlines():
        if line.startswith("RESULT "):
            report = json.loads(line[len("RESULT "):])
            report["wall_s"] = wall
            return report
    tail = (stderr.strip().splitlines() or ["(no output)"])[-1]
    return {"error": f"worker exited {proc.returncode}: {tail}", "wall_s": wall,
            "traceback": stderr[-3000:]}


def tolerance(dtype):
    if dtype.kind == "f" and dtype.itemsize <= 4:
        return 1e-3, 1e-5
    return 1e-5, 1e-8


def check(path, want):
    """None if the saved result matches ``want``, else a short description of the mismatch.
    Also returns notes (dtype differences that are not errors)."""
    notes = []
    with numpy.load(path) as f:
        got = [f[f"arr_{k}"] for k in range(len(f.files))]
    if len(got) != len(want):
        return f"{len(got)} results, expected {len(want)}", notes
    for k, (g, w) in enumerate(zip(got, want, strict=True)):
        if g.shape != w.shape:
            return f"result {k}: shape {g.shape}, expected {w.shape}", notes
        if g.dtype != w.dtype:
            notes.append(f"result {k}: dtype {g.dtype}, NumPy gives {w.dtype}")
        if w.dtype.kind in "iub":
            ok = numpy.array_equal(g, w)
        else:
            rtol, atol = tolerance(w.dtype)
            ok = numpy.allclose(g, w, rtol=rtol, atol=atol, equal_nan=True)
        if not ok:
            with numpy.errstate(all="ignore"):
                diff = numpy.abs(g.astype(numpy.float64) - w.astype(numpy.float64))
            diff[numpy.isnan(diff)] = numpy.inf          # NaN on one side only
            where = tuple(int(x) for x in numpy.unravel_index(numpy.argmax(diff), diff.shape))
            bad = int(numpy.count_nonzero(~numpy.isclose(g, w, *tolerance(w.dtype))))
            return (f"result {k}: {bad} of {w.size} elements differ, max |diff| "
                    f"{diff[where]:.3g} at {where} (got {g[where].item()!r}, expected "
                    f"{w[where].item()!r})"), notes
    return None, notes


def compiles_done(lib, cache_dir, args):
    """Wait until no streamrt compile worker works for ``cache_dir`` (the processes measured
    with it have exited; their worker may still be building what they left it)."""
    if lib.startswith("streamrt") and os.path.isdir(cache_dir):
        from streamrt.backends.numba_cpu import jit
        jit.workers_idle(cache_dir, timeout=args.timeout)


def measure(module, size, lib, reference, args):
    """First-run and warm processes of one (program, size, library)."""
    record = {"program": load(module).NAME, "module": module, "size": size, "lib": lib}
    outdir = tempfile.mkdtemp(prefix=f"progbench-{module}-{size}-{lib}-")
    try:
        firsts, walls = [], []
        for k in range(args.first_runs):
            # each first run: a fresh process with an empty kernel cache of its own
            cache_dir = os.path.join(outdir, f"streamrt-cache-{k}")
            first = run_worker(module, size, lib, "first", outdir, cache_dir, args)
            if "error" in first:
                record["error"] = first["error"]
                record["traceback"] = first.get("traceback", "")
                record["timeout"] = first.get("timeout", False)
                record["wall_s"] = first.get("wall_s")
                return record
            firsts.append(first["first_ms"])
            walls.append(first["wall_s"])
            # the kernels the first run's compile worker builds after that run exits are
            # the cache a second run finds: the next process starts once they are built
            compiles_done(lib, cache_dir, args)
        record["first_ms"] = statistics.median(firsts)
        record["wall_s"] = statistics.median(walls)
        record["first_all"] = firsts
        warm = run_worker(module, size, lib, "warm", outdir, cache_dir, args)
        # and what the warm process left it is built before the next measurement starts: a
        # worker still compiling would take a core from it
        compiles_done(lib, cache_dir, args)
        record["warm_ms"], record["warm_n"] = warm.get("warm_ms"), warm.get("warm_n")
        if "error" in warm:
            record["warm_error"] = warm["error"]
            record["traceback"] = warm.get("traceback", "")
            record["timeout"] = warm.get("timeout", False)
        notes = []
        for mode in ("first", "warm"):
            path = os.path.join(outdir, f"{mode}.npz")
            if os.path.exists(path):
                wrong, more = check(path, reference)
                notes += [n for n in more if n not in notes]
                if wrong and "wrong" not in record:
                    record["wrong"] = f"{mode} run: {wrong}"
        if notes:
            record["notes"] = notes
        return record
    finally:
        shutil.rmtree(outdir, ignore_errors=True)


def status(rec, key):
    """A table cell for ``rec[key]`` (ms), or why there is none."""
    if rec is None:
        return "—"
    if rec.get("error"):
        return "timeout" if rec.get("timeout") else "error"
    if key == "warm_ms" and rec.get("warm_error"):
        return "timeout" if rec.get("timeout") else "error"
    value = rec.get(key)
    return "—" if value is None else fmt_ms(value)


def fmt_ms(ms):
    return f"{ms:.3g}" if ms < 1000 else f"{ms:,.0f}"


def ratio(base, rec, key):
    """NumPy's time / the library's, or None when either is missing or the result is wrong."""
    if base is None or rec is None or rec.get("wrong") or rec.get("error"):
        return None
    b, t = base.get(key), rec.get(key)
    if not b or not t:
        return None
    return b / t


def geomean(values):
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def table(records, libs):
    index = {(r["program"], r["size"], r["lib"]): r for r in records}
    rows = list(dict.fromkeys((r["program"], r["size"]) for r in records))   # run order
    others = [lib for lib in libs if lib != "numpy"]
    head = ["program", "size", "numpy first", "numpy warm"]
    for lib in others:
        head += [f"{lib} first", f"{lib} warm", f"{lib} ×first", f"{lib} ×warm"]
    lines = ["| " + " | ".join(head) + " |",
             "|" + "|".join(["---"] * 2 + ["---:"] * (len(head) - 2)) + "|"]
    ratios = {(lib, key): [] for lib in others for key in ("first_ms", "warm_ms")}
    for prog, size in rows:
        base = index.get((prog, size, "numpy"))
        cells = [prog, size, status(base, "first_ms"), status(base, "warm_ms")]
        for lib in others:
            rec = index.get((prog, size, lib))
            cells += [status(rec, "first_ms"), status(rec, "warm_ms")]
            for key in ("first_ms", "warm_ms"):
                r = ratio(base, rec, key)
                if r is not None:
                    ratios[(lib, key)].append(r)
                    cells.append(f"{r:.3g}×")
                else:
                    cells.append("WRONG" if rec and rec.get("wrong") else "—")
        lines.append("| " + " | ".join(cells) + " |")
    summary = []
    for lib in others:
        for key, label in (("first_ms", "first run"), ("warm_ms", "warm")):
            rs = ratios[(lib, key)]
            if rs:
                slow = sum(r < SLOW_RATIO for r in rs)
                summary.append(f"- {lib}, {label}: geometric mean {geomean(rs):.3g}× NumPy "
                               f"over {len(rs)} runs; {slow} below {SLOW_RATIO}× NumPy")
    return "\n".join(lines), "\n".join(summary)


def wall_table(records, libs):
    index = {(r["program"], r["size"], r["lib"]): r for r in records}
    rows = list(dict.fromkeys((r["program"], r["size"]) for r in records))
    head = ["program", "size"] + [f"{lib} (s)" for lib in libs]
    lines = ["| " + " | ".join(head) + " |", "|---|---|" + "---:|" * len(libs)]
    for prog, size in rows:
        cells = [prog, size]
        for lib in libs:
            rec = index.get((prog, size, lib))
            cells.append("—" if rec is None or rec.get("wall_s") is None
                         else f"{rec['wall_s']:.2f}")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def findings(records):
    out = []
    for r in records:
        what = r.get("error") or r.get("warm_error")
        if what:
            stage = "warm run" if r.get("warm_error") and not r.get("error") else "first run"
            out.append(f"- {r['program']} {r['size']} {r['lib']}: {stage}: {what}")
        if r.get("wrong"):
            out.append(f"- {r['program']} {r['size']} {r['lib']}: WRONG ({r['wrong']})")
        for note in r.get("notes", ()):
            out.append(f"- {r['program']} {r['size']} {r['lib']}: {note}")
    return "\n".join(out)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--only", help="comma-separated program names or modules")
    p.add_argument("--sizes", default="small,large")
    p.add_argument("--libs", default=",".join(LIBS))
    p.add_argument("--repeat", type=int, default=0,
                   help="warm calls per measurement (default: ~--warm-seconds, at least 3)")
    p.add_argument("--warm-seconds", type=float, default=1.0)
    p.add_argument("--first-runs", type=int, default=3,
                   help="first-run processes per measurement, each with an empty kernel cache "
                        "(the median is reported; default 3)")
    p.add_argument("--timeout", type=float, default=120.0, help="seconds per process")
    p.add_argument("--json", help="write every measurement to this file")
    p.add_argument("--list", action="store_true", help="list the programs and their sizes")
    p.add_argument("--worker", nargs=5, metavar=("MODULE", "SIZE", "LIB", "MODE", "OUTDIR"),
                   help=argparse.SUPPRESS)
    args = p.parse_args()
    args.first_runs = max(1, args.first_runs)

    if args.worker:
        worker(*args.worker, repeat=args.repeat, warm_seconds=args.warm_seconds)
        return

    if args.list:
        for module in MODULES:
            mod = load(module)
            libs = [lib for lib in ("numba", "jax") if hasattr(mod, f"{lib}_kernel")]
            print(f"{mod.NAME:16} small={mod.SIZES['small']} large={mod.SIZES['large']}"
                  f"  {'+'.join(libs)}")
        return

    modules = MODULES
    if args.only:
        wanted = set(args.only.split(","))
        modules = [m for m in MODULES if m in wanted or load(m).NAME in wanted]
        if not modules:
            p.error(f"no program matches {args.only!r}")
    sizes = [s for s in args.sizes.split(",") if s]
    libs = [lib for lib in args.libs.split(",") if lib]
    for lib in libs:
        if lib not in LIBS:
            p.error(f"unknown library {lib!r} (choose from {', '.join(LIBS)})")

    records = []
    args.pycache = tempfile.mkdtemp(prefix="progbench-pycache-")   # (see the docstring)
    env = worker_env(args)
    for lib in libs:        # (the caches written before the first measured process)
        mods = {"numpy": "numpy", "streamrt": "streamrt, numba", "numba": "numba",
                "jax": "jax"}.get(lib, "numpy")
        subprocess.run([sys.executable, "-c", f"import {mods}"], env=env,
                       capture_output=True)
    for module in modules:
        mod = load(module)
        for size in sizes:
            reference = force(mod.kernel(numpy, *mod.inputs(size)))
            for lib in libs:
                if not available(lib, mod):
                    continue
                rec = measure(module, size, lib, reference, args)
                records.append(rec)
                state = ("WRONG" if rec.get("wrong") else rec.get("error")
                         or rec.get("warm_error") or "ok")
                print(f"{mod.NAME:16} {size:5} {lib:8} first {status(rec, 'first_ms'):>8} ms"
                      f"  warm {status(rec, 'warm_ms'):>8} ms  wall "
                      f"{rec.get('wall_s') or 0:6.2f} s  {state}", file=sys.stderr, flush=True)
    shutil.rmtree(args.pycache, ignore_errors=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(records, f, indent=1)
    libs_shown = [lib for lib in libs if any(r["lib"] == lib for r in records)]
    if "numpy" not in libs_shown:
        libs_shown = ["numpy", *libs_shown]
    body, summary = table(records, libs_shown)
    print(f"Times in ms (first: first call in a fresh process, empty streamrt cache, median "
          f"of {args.first_runs} processes; warm: median of later calls); ×: NumPy "
          "time / library time.\n")
    print(body)
    print()
    print(summary)
    print("\nProcess wall time of the first-run process (interpreter start to exit; the "
          "median):\n")
    print(wall_table(records, [lib for lib in libs_shown if any(r["lib"] == lib
                                                                for r in records)]))
    problems = findings(records)
    if problems:
        print("\nFailures, wrong results and notes:\n")
        print(problems)


if __name__ == "__main__":
    main()
