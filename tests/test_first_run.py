"""A script's first run in a fresh process (an empty kernel cache, the default settings): its
kernels run interpreted through NumPy while the compile worker builds them, so the script
neither imports Numba nor waits for a compiler; large work too. Fresh processes, as the test
session runs with the NumPy tier off and compiles on the launching thread."""
import json
import subprocess
import sys

import numpy as np

from helpers import child_env

CHILD = r"""
import json, sys, threading
import numpy as np
import streamrt as ps
n = int(sys.argv[1])
x = np.linspace(-1, 1, n).astype(np.float32)
a = ps.asarray(x)
out = []
for i in range(3):
    r = float(ps.sum(ps.sin(a * 3.0) + a))
    c = float(ps.cumsum(a * 2.0)[-1])          # a fused scan
    st = ps.runtime_stats()
    out.append({"r": r, "c": c, "numba": "numba" in sys.modules,
                "threads": sorted(t.name for t in threading.enumerate()),
                "stats": {k: st[k] for k in ("kernels_interpreted", "kernels_compiled",
                                             "ops_eager", "compiles_requested",
                                             "first_sights")}})
want = float(np.sum(np.sin(x * np.float32(3.0)) + x, dtype=np.float64))
print(json.dumps({"runs": out, "want": want, "c": float(np.cumsum(x * np.float32(2.0))[-1])}))
"""


def _child(tmp_path, n, **env):
    env.setdefault("STREAMRT_JIT", "background")
    env.setdefault("STREAMRT_EAGER_ELEMENTS", "65536")       # the defaults
    p = subprocess.run([sys.executable, "-c", CHILD, str(n)], env=child_env(tmp_path, **env),
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout.strip().splitlines()[-1])


def test_a_first_run_waits_for_no_compiler(tmp_path):
    for n in (1000, 300_000):              # under and over STREAMRT_EAGER_ELEMENTS
        res = _child(tmp_path / str(n), n)
        first = res["runs"][0]
        print(n, first)
        assert not first["numba"]           # Numba is not even imported in the process
        assert first["stats"]["kernels_compiled"] == 0
        if n < 65536:
            assert first["stats"]["ops_eager"] >= 3            # the NumPy tier ran it
        else:
            # its two traces' first sights: NumPy ran them op by op, without ProgGen
            assert first["stats"]["first_sights"] == 2
            assert first["stats"]["kernels_interpreted"] == 0
            # seen again: their kernels, interpreted
            assert res["runs"][1]["stats"]["kernels_interpreted"] >= 1
        if n >= 65536:
            # what runs interpreted is read on this thread: no hand-off to the scheduler's
            assert "streamrt-escheduler" not in first["threads"], first["threads"]
        for r in res["runs"]:
            assert abs(r["r"] - res["want"]) <= 1e-5 * n, (r["r"], res["want"])
            assert abs(r["c"] - res["c"]) <= 1e-4 * abs(res["c"]) + 1e-3, (r["c"], res["c"])


def test_jit_off_compiles_at_the_first_run(tmp_path):
    res = _child(tmp_path, 300_000, STREAMRT_JIT="sync")
    first = res["runs"][0]
    assert first["numba"] and first["stats"]["kernels_compiled"] >= 1
    assert first["stats"]["kernels_interpreted"] == 0


def test_the_heap_keeps_freed_buffers_from_the_import_on(tmp_path):
    """glibc's mmap and trim thresholds are raised when streamrt is imported, before any
    flush (NumPy-tier programs allocate through NumPy only: their 320 KB temporaries were
    unmapped and faulted in again at every op under malloc's adaptive defaults), and left
    alone with STREAMRT_HOST_HEAP_BYTES=0."""
    import platform
    glibc = platform.system() == "Linux" and platform.libc_ver()[0] == "glibc"
    code = ("import streamrt as ps; from streamrt.backends import base, registry; "
            "print(base._heap_tuned, bool(registry._instances))")
    for env, tuned in (({}, glibc), ({"STREAMRT_HOST_HEAP_BYTES": "0"}, False)):
        p = subprocess.run([sys.executable, "-c", code], env=child_env(tmp_path, **env),
                           capture_output=True, text=True, timeout=120)
        assert p.returncode == 0, p.stderr
        assert p.stdout.split() == [str(tuned), "False"]      # (no executor made yet)


GC_CHILD = r"""
import gc, sys
if sys.argv[1] == "off":
    gc.disable()
import streamrt
print(gc.get_stats()[2]["collections"], gc.get_count()[2], gc.isenabled())
"""


def test_the_import_ends_with_a_full_collection_unless_the_collector_is_off(tmp_path):
    """The imports' objects are collected through once while the heap is small, so the first
    long trace does not pay a full collection over them and its own ports
    (cscheduler.collect_at_import); a program that turned the collector off keeps it off."""
    def run(mode):
        p = subprocess.run([sys.executable, "-c", GC_CHILD, mode], env=child_env(tmp_path),
                           capture_output=True, text=True, timeout=300)
        assert p.returncode == 0, p.stderr
        return p.stdout.split()
    full, since, on = run("on")
    assert int(full) >= 1 and int(since) == 0 and on == "True"
    full, _, on = run("off")
    assert full == "0" and on == "False"


KEY_CHILD = r"""
import numpy as np
import streamrt as ps
from streamrt.core import keys
x = ps.asarray(np.linspace(0, 1, 200_000))
print(float(ps.sum(ps.sin(x) * 2.0 + x)), keys.compiler_versions.cache_info().currsize,
      ps.runtime_stats()["first_sights"])
"""


def test_a_new_kernel_cache_is_not_searched_for_markers(tmp_path):
    """A first run with a new cache (no kernel folder) looks for no marker file beside a
    kernel it has not compiled, so it computes no program key -- the compiler versions --
    before it asks for a compile (program_cache.disk_may_hold); with a kernel folder it
    does. The same holds for a trace's first sight: without a kernel folder nothing
    compiled can be ready for it, so it runs through NumPy without ProgGen; with one, its
    kernels may be on disk, so ProgGen builds them (and their keys are looked up)."""
    env = child_env(tmp_path, STREAMRT_JIT="background", STREAMRT_JIT_MARGIN="1e9",
                    STREAMRT_EAGER_ELEMENTS="65536")

    def run():
        p = subprocess.run([sys.executable, "-c", KEY_CHILD], env=env, capture_output=True,
                           text=True, timeout=300)
        assert p.returncode == 0, p.stderr
        return p.stdout.split()
    value, keyed, first = run()
    want = np.linspace(0, 1, 200_000)
    assert abs(float(value) - float(np.sum(np.sin(want) * 2.0 + want))) < 1e-6
    assert keyed == "0" and first == "1"
    (tmp_path / "numba").mkdir(exist_ok=True)
    assert run()[1:] == ["1", "0"]
