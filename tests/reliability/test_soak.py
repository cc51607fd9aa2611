"""Soak (issue 26): a few hundred thousand ops in one process -- repeated traces, traces that
differ every time (new shapes: trace-cache misses and evictions), macros, reads of every
size class -- with the resident set growing under 5% after warm-up and every cache within
its bound. A child process, so the figures are its own."""
import json
import os
import subprocess
import sys

import streamrt as ps
from helpers import child_env

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(ps.__file__)))

CHILD = r"""
import gc, json, resource, sys, time
import numpy as np
import streamrt as ps
from streamrt.backends.numba_cpu import jit, program_cache
from streamrt.runtime import placement
placement.DISCOVERY_AFTER_S = 0.0   # (the devices found at the first large flush, as before
                                    # the baseline: it measures the steady state after them)

def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize()

@ps.macro
def step(u, c):
    return u * c + 1.0, ps.sum(u)

rng = np.random.default_rng(0)
big = ps.asarray(rng.random(200_000))
small = ps.asarray(rng.random(1000))
ITER = int(sys.argv[1])
t0 = time.perf_counter()
base = None
for i in range(ITER):
    if i == ITER // 5 - 10:
        jit.wait(120)       # (what the cost model asked for is compiled, then loaded below:
                            # Numba's own memory must not land after the baseline -- the
                            # large read too, which otherwise next runs after the baseline)
        float(ps.sum(ps.exp(big * 0.5) - big))
    if i == ITER // 5:
        gc.collect()
        base = rss()
    u = small * 2.0 + 1.0                       # a repeated small trace
    s = float(ps.sum(ps.sqrt(u) - u))
    v, t = step(small, float(i % 7))            # a macro replay
    float(t)
    w = ps.ones(1 + i % 3000) * i               # a new shape every iteration: misses
    float(ps.max(w))
    if i % 50 == 0:                             # a large read (the E-Scheduler path)
        float(ps.sum(ps.exp(big * 0.5) - big))
gc.collect()
end = rss()
info = ps.cache_info()
st = ps.runtime_stats()
print(json.dumps({"ops": st["ops_recorded"], "seconds": time.perf_counter() - t0,
                  "rss_base": base, "rss_end": end,
                  "trace": [info["trace"]["entries"], info["trace"]["max_entries"]],
                  "macro": [info["macro"]["entries"], info["macro"]["max_entries"]],
                  "program": [info["program"]["memory_entries"], info["program"]["memory_max"]],
                  "jit_states": [len(jit._states), jit.MAX_KERNELS],
                  "placement": [len(placement._measured), placement._MEASURED_MAX],
                  "keys": [len(program_cache._keys), 4 * program_cache._mem.maxsize + 1],
                  "evictions": info["trace"]["evictions"]}))
"""


def test_soak(tmp_path):
    # (a kernel cache of its own: kernels other tests compiled into the session's cache would
    # be loaded whenever the cost model decides loading Numba pays, which may be after the
    # baseline -- docs/guide.md, Tiers)
    env = child_env(tmp_path)
    env.pop("STREAMRT_JIT", None)        # (the default: kernels interpreted until compiled)
    # (STREAMRT_EAGER_ELEMENTS=0 kept: the small ops are recorded, so they exercise the caches)
    env["PYTHONPATH"] = ROOT + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    p = subprocess.run([sys.executable, "-c", CHILD, "12000"], env=env, capture_output=True,
                       text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    r = json.loads(p.stdout.strip().splitlines()[-1])
    growth = r["rss_end"] / r["rss_base"] - 1
    print(f"\nsoak: {r['ops']} ops in {r['seconds']:.1f} s; RSS {r['rss_base'] / 2**20:.0f} -> "
          f"{r['rss_end'] / 2**20:.0f} MB ({growth * 100:+.1f}%); trace cache {r['trace']}, "
          f"{r['evictions']} evictions; macro {r['macro']}; program {r['program']}; "
          f"jit {r['jit_states']}; placement {r['placement']}")
    assert r["ops"] >= 100_000
    assert growth < 0.05
    for k in ("trace", "macro", "program", "jit_states", "placement", "keys"):
        assert r[k][0] <= r[k][1], k
