"""The cold tier (scheduler/placement.py): in a fresh process, the first run of a small trace
runs on the NumPy interpreter without importing Numba; its second run compiles; large work
and STREAMRT_COLD_INTERPRET=0 compile at once. Each case is a fresh process (the tier ends
once Numba is loaded, and the test session itself runs with it off)."""
import json
import subprocess
import sys

import numpy as np

from helpers import child_env

CHILD = r"""
import json, sys
import numpy as np
import streamrt as ps
n = int(sys.argv[1])
x = np.linspace(-1, 1, n).astype(np.float32)
a = ps.asarray(x)
out = []
for i in range(3):
    r = float(ps.sum(ps.sin(a * 3.0) + a))
    st = ps.runtime_stats()
    out.append({"r": r, "numba": "numba" in sys.modules,
                "stats": {k: st[k] for k in ("placements_interpreted", "placements_cpu",
                                             "kernels_compiled", "kernels_loaded_from_disk",
                                             "trace_cache_hits")}})
want = float(np.sum(np.sin(x * np.float32(3.0)) + x, dtype=np.float64))
print(json.dumps({"runs": out, "want": want}))
"""


def _child(tmp_path, n, **env):
    p = subprocess.run([sys.executable, "-c", CHILD, str(n)], env=child_env(tmp_path, **env),
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout.strip().splitlines()[-1])


def _close(got, want, n):
    assert abs(got - want) <= 1e-5 * n, (got, want)


def test_first_small_run_is_interpreted_and_the_second_compiles(tmp_path):
    res = _child(tmp_path, 1000)
    first, second, third = res["runs"]
    assert first["stats"]["placements_interpreted"] == 1
    assert first["stats"]["placements_cpu"] == 0
    assert first["stats"]["kernels_compiled"] == 0
    assert not first["numba"]                      # Numba was not even imported
    assert second["numba"]
    assert second["stats"]["placements_cpu"] == 1  # the trace came back: it is hot
    assert second["stats"]["kernels_compiled"] + second["stats"]["kernels_loaded_from_disk"] == 1
    assert third["stats"]["placements_interpreted"] == 1      # nothing more interpreted
    assert third["stats"]["trace_cache_hits"] == 1
    for r in res["runs"]:
        _close(r["r"], res["want"], 1000)


def test_large_work_and_the_flag_off_compile_at_once(tmp_path):
    cases = [(300_000, {}),                        # over STREAMRT_DEVICE_MIN_ELEMENTS
             (1000, {"STREAMRT_COLD_INTERPRET": "0"}),
             (1000, {"STREAMRT_BACKEND": "cpu"})]
    for n, env in cases:
        res = _child(tmp_path, n, **env)
        first = res["runs"][0]
        assert first["stats"]["placements_interpreted"] == 0, env
        assert first["numba"], env
        for r in res["runs"]:
            _close(r["r"], res["want"], n)


FIRST_READ = r"""
import json, threading
import numpy as np
import streamrt as ps
x = ps.asarray(np.linspace(0, 1, 100_000, dtype=np.float32))    # over inline_elements
r = float(ps.sum(ps.sin(x) * 2.0 + 1.0))
st = ps.runtime_stats()
print(json.dumps({"r": r, "threads": sorted(t.name for t in threading.enumerate()),
                  "inline": st["inline_sequences"], "interpreted": st["placements_interpreted"]}))
"""


def test_a_first_read_starts_no_runtime_thread(tmp_path):
    """A script whose only read is interpreted by the cold tier runs it on its own thread,
    whatever its size, and starts neither the E-Scheduler's thread nor an executor's (a
    thread start and a join at exit: part of a cold start's cost)."""
    p = subprocess.run([sys.executable, "-c", FIRST_READ], env=child_env(tmp_path),
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    res = json.loads(p.stdout.strip().splitlines()[-1])
    assert res["interpreted"] == 1 and res["inline"] == 1
    assert res["threads"] == ["MainThread"]
    x = np.linspace(0, 1, 100_000, dtype=np.float32)
    assert abs(res["r"] - float(np.sum(np.sin(x) * 2.0 + 1.0))) <= 1e-2
