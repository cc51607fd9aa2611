"""Threads (issue 26, item 7, and the shared-input check): 8 threads recording the same kinds
of work compile nothing that one thread loads from the disk cache (they compiled 12 OpenCL
programs: with the cores busy the CPU's measured times lost against PoCL's idle-machine
estimate, and placement sent their sequences to the device, runtime/placement.py), and 8
threads computing over shared inputs get exactly NumPy's values."""
import json
import os
import subprocess
import sys
import threading

import numpy as np

import streamrt as ps
from helpers import child_env

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(ps.__file__)))

WORK = r"""
import json, sys, threading
import numpy as np
import streamrt as ps
ps.config.set(jit="sync")          # (process-wide: kernels launch on the E-Scheduler thread)
threads, n = int(sys.argv[1]), 300_000
rng = np.random.default_rng(0)
A, B = ps.asarray(rng.random((n // 100, 100))), ps.asarray(rng.random(n))
def work():
    for i in range(6):
        float(ps.sum(ps.sqrt(B) * 2 + 1))
        float(ps.max(ps.exp(B) - B))
        float(A.sum(axis=0)[5])
        float((A * 2 - A.mean(axis=1, keepdims=True)).sum())
        float(ps.sum(ps.where(B > 0.5, B, -B)))
ts = [threading.Thread(target=work) for _ in range(threads)]
[t.start() for t in ts]
[t.join() for t in ts]
st = ps.runtime_stats()
print(json.dumps({k: st[k] for k in ("kernels_compiled", "kernels_loaded_from_disk",
                                     "kernels_launched", "placements_opencl")}))
"""


def _run(threads):
    e = child_env(os.environ["STREAMRT_CACHE_DIR"])
    e.pop("STREAMRT_JIT", None)
    e["PYTHONPATH"] = ROOT + (os.pathsep + e["PYTHONPATH"] if e.get("PYTHONPATH") else "")
    p = subprocess.run([sys.executable, "-c", WORK, str(threads)], env=e, capture_output=True,
                       text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    return json.loads(p.stdout.strip().splitlines()[-1])


def test_eight_threads_compile_nothing_one_thread_loads():
    one = _run(1)               # (warms the shared test cache; compiles on a first run only)
    again = _run(1)
    eight = _run(8)
    print(f"\nwarm disk cache: 1 thread compiled {again['kernels_compiled']} (loaded "
          f"{again['kernels_loaded_from_disk']}); 8 threads compiled "
          f"{eight['kernels_compiled']} (loaded {eight['kernels_loaded_from_disk']}, "
          f"{eight['kernels_launched']} launches, {eight['placements_opencl']} on OpenCL)")
    assert one["kernels_launched"] > 0
    assert again["kernels_compiled"] == 0 and eight["kernels_compiled"] == 0


def test_eight_threads_over_shared_inputs_match_numpy():
    rng = np.random.default_rng(1)
    xa = rng.random(200_000)
    xb = rng.integers(-1000, 1000, 200_000)
    a, b = ps.asarray(xa), ps.asarray(xb)
    want = {
        "f": np.where(xa > 0.5, np.sqrt(xa) * 3.0 + xa, xa * xa - 1.0),
        "i": int(np.sum(xb * 3 - 7)),
        "m": int(np.max(np.abs(xb) % 17)),
        "c": np.clip(xb, -10, 10) * 2,
    }
    errors, mismatches = [], []

    def worker(k):
        try:
            for it in range(10):
                got = {
                    "f": np.asarray(ps.where(a > 0.5, ps.sqrt(a) * 3.0 + a, a * a - 1.0)),
                    "i": int(ps.sum(b * 3 - 7)),
                    "m": int(ps.max(ps.abs(b) % 17)),
                    "c": np.asarray(ps.clip(b, -10, 10) * 2),
                }
                for key, w in want.items():
                    if not np.array_equal(got[key], w):
                        mismatches.append((k, it, key))
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(f"{type(e).__name__}: {e}")

    ts = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(timeout=300)
    assert not any(t.is_alive() for t in ts), "a thread hangs"
    print(f"\n8 threads x 10 iterations x 4 results over shared inputs: "
          f"{len(mismatches)} mismatches, {len(errors)} errors")
    assert errors == [] and mismatches == []
