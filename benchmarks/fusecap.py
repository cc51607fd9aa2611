"""What bounds a kernel's size: Numba compile time against op count, and the run time a kernel
boundary costs against array size (docs/decisions.md, "Kernel size bounded by array size").

    STREAMRT_CACHE_DIR=$(mktemp -d) PYTHONPATH=. python benchmarks/fusecap.py compile
    STREAMRT_CACHE_DIR=$(mktemp -d) PYTHONPATH=. python benchmarks/fusecap.py boundary

``compile``: a chain of N element-wise ops over four float64 arrays (each op one binary op:
``+``, ``*`` with another state array, ``*`` with a Python float -- a kernel parameter), fused
into one kernel, compiled on first launch (STREAMRT_JIT=sync) -- its serial variant over
1,000 elements, its parallel one over 2**20 -- and the same chain ending in a sum (a
reduction kernel). Reported: ``compile_seconds`` of ``ps.runtime_stats()`` for that kernel,
after one warm-up compile (Numba's own first-compile cost is not the kernel's).

``boundary``: the same 128-op chain cut into kernels of at most C ops (STREAMRT_MAX_KERNEL_OPS),
compiled, timed warm (best of several runs of record + flush + read) over N elements. Each
cut adds a store and a load of the live state and a kernel launch."""
from __future__ import annotations

import os
import sys
import tempfile
import time

os.environ.setdefault("STREAMRT_CACHE_DIR", tempfile.mkdtemp(prefix="streamrt-fusecap-"))
os.environ["STREAMRT_JIT"] = "sync"
os.environ["STREAMRT_EAGER_ELEMENTS"] = "0"

import numpy as np  # noqa: E402

import streamrt as ps  # noqa: E402


PATTERN = np.random.default_rng(7).integers(0, 3, 4096)


def chain(s, n_ops, salt=0):
    """``n_ops`` recorded element-wise ops over the state arrays ``s`` (a list, updated), in
    an order that does not repeat (no loop body for the compiler to find: the kernels are cut
    by the op cap alone); ``salt`` varies one constant."""
    k = len(s)
    for i in range(n_ops):
        j = i % k
        r = PATTERN[i]
        if r == 0:
            s[j] = s[j] + s[(j + 1) % k]
        elif r == 1:
            s[j] = s[j] * s[(j + 2) % k]
        else:
            s[j] = s[j] * (0.5 + salt * 1e-9)
    return s


def state(n, seed=0):
    rng = np.random.default_rng(seed)
    return [ps.asarray(rng.uniform(0.9, 1.1, n)) for _ in range(4)]


def compile_seconds(n, n_ops, reduce, variant):
    s = state(n, variant)
    ps.sync()
    before = ps.runtime_stats()
    s = chain(s, n_ops)
    if reduce:
        np.asarray(s[0].sum())
    else:
        for a in s:
            np.asarray(a)
    after = ps.runtime_stats()
    k = after["kernels_compiled"] - before["kernels_compiled"]
    return after["compile_seconds"] - before["compile_seconds"], k


def cmd_compile():
    # warm-up: Numba's first compile in a process loads and initialises much of Numba
    compile_seconds(1000, 4, False, 99)
    compile_seconds(1 << 20, 4, False, 98)
    print("| ops | map, serial (1e3) | map, parallel (2^20) | sum, serial | sum, parallel |")
    print("|---:|---:|---:|---:|---:|")
    for n_ops in (8, 16, 32, 64, 128):
        row = []
        for reduce in (False, True):
            for n in (1000, 1 << 20):
                t, k = compile_seconds(n, n_ops, reduce, n_ops)
                row.append(f"{t:.2f} s" + ("" if k == 1 else f" ({k} kernels)"))
        print(f"| {n_ops} | " + " | ".join([row[0], row[1], row[2], row[3]]) + " |", flush=True)


def run_once(s0, n_ops):
    s = chain(list(s0), n_ops)
    out = [np.asarray(a) for a in s]
    return out


def cmd_boundary():
    n_ops = 128
    caps = (8, 16, 32, 64, 128)
    sizes = (1000, 10_000, 100_000, 1_000_000)
    print("| elements | " + " | ".join(f"cap {c}" for c in caps) +
          " | per boundary |")
    print("|---:|" + "---:|" * (len(caps) + 1))
    for n in sizes:
        row = []
        for c in caps:
            ps.clear_caches()
            with ps.config.override(max_kernel_ops=c):
                s0 = state(n)
                for a in s0:
                    np.asarray(a)
                run_once(s0, n_ops)          # compiles
                k = -(-n_ops // c)           # kernels (the chain does not repeat: cut by the cap)
                reps = max(5, min(200, int(2e7 / n)))
                best = float("inf")
                for _ in range(reps):
                    t0 = time.perf_counter()
                    run_once(s0, n_ops)
                    best = min(best, time.perf_counter() - t0)
                row.append((best, k))
        t128, k128 = row[-1]
        t8, k8 = row[0]
        per = (t8 - t128) / max(k8 - k128, 1)
        cells = [f"{t * 1e6:,.0f} us ({k})" for t, k in row]
        print(f"| {n:,} | " + " | ".join(cells) + f" | {per * 1e6:.1f} us |", flush=True)


if __name__ == "__main__":
    what = sys.argv[1] if len(sys.argv) > 1 else "compile"
    {"compile": cmd_compile, "boundary": cmd_boundary}[what]()
