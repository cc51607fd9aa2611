"""Compiled kernels beside matrix products: GNU OpenMP's spin count, in one run.

    python benchmarks/spin.py [--sizes 300,1000,2000] [--spins gomp,streamrt,3000,passive]

Two loops over an n x n float64 array, each in a fresh process per setting (one kernel
cache, compiled first): a fused element-wise kernel (multi-threaded: Numba's OpenMP layer)
followed by a matrix-vector product (OpenBLAS's threads), and the kernel alone followed by a
read. NumPy runs the first loop too. Prints µs per step (best of five runs of 100 steps)
for each setting: ``gomp`` is GNU OpenMP's own (~300,000 pauses), ``streamrt`` sets nothing
(streamrt's choice, executor.OMP_SPINCOUNT), a number is GOMP_SPINCOUNT, ``passive`` is
OMP_WAIT_POLICY=passive (docs/decisions.md).
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.abspath(__file__)
ROOT = os.path.dirname(os.path.dirname(HERE))


def best_us(f, steps=100, runs=5):
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        for _ in range(steps):
            f()
        times.append((time.perf_counter() - t0) / steps * 1e6)
    return min(times)


def worker(n, lib):
    import numpy
    a = numpy.random.default_rng(0).random((n, n))
    x = numpy.random.default_rng(1).random(n)
    if lib == "numpy":
        print(best_us(lambda: (a * 1.5 + a * a - 0.25) @ x), "-")
        return
    import streamrt as ps
    pa, px = ps.asarray(a), ps.asarray(x)

    def with_product():
        return numpy.asarray((pa * 1.5 + pa * pa - 0.25) @ px)

    def alone():
        return float(ps.sum(pa * 1.5 + pa * pa - 0.25))

    for _ in range(5):
        with_product()
        alone()
    print(best_us(with_product), best_us(alone))


def run(n, lib, spin, cache):
    env = {k: v for k, v in os.environ.items() if k not in ("GOMP_SPINCOUNT", "OMP_WAIT_POLICY")}
    env.update(STREAMRT_CACHE_DIR=cache, STREAMRT_JIT="sync",
               PYTHONPATH=ROOT + os.pathsep + env.get("PYTHONPATH", ""))
    if spin == "passive":
        env["OMP_WAIT_POLICY"] = "passive"
    elif spin == "gomp":
        env["GOMP_SPINCOUNT"] = "300000"        # (GNU OpenMP's own when nothing is set)
    elif spin != "streamrt":
        env["GOMP_SPINCOUNT"] = spin
    out = subprocess.run([sys.executable, HERE, "--worker", str(n), lib], env=env,
                         capture_output=True, text=True, check=True)
    return out.stdout.split()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--sizes", default="300,1000,2000")
    p.add_argument("--spins", default="gomp,streamrt,3000,passive")
    p.add_argument("--worker", nargs=2)
    args = p.parse_args()
    if args.worker:
        worker(int(args.worker[0]), args.worker[1])
        return
    spins = args.spins.split(",")
    with tempfile.TemporaryDirectory() as cache:
        print("| n | NumPy kernel+product | " +
              " | ".join(f"{s}: kernel+product / kernel" for s in spins) + " |")
        print("|---:|---:|" + "---:|" * len(spins))
        for n in map(int, args.sizes.split(",")):
            run(n, "streamrt", "streamrt", cache)   # (compiles the kernels once)
            base = run(n, "numpy", "gomp", cache)[0]
            cells = [" / ".join(f"{float(v):.0f}" for v in run(n, "streamrt", s, cache))
                     for s in spins]
            print(f"| {n} | {float(base):.0f} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
