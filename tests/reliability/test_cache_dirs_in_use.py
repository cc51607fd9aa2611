"""Nothing streamrt does kills the interpreter (issue 26, item 3): ps.clear_caches(disk=True)
deleted PoCL's cache folder under a live OpenCL context, and PoCL's next build aborted the
process. A process using a compiler's cache folder holds a shared lock on it
(backends/device.hold_cache_dir); clear_caches deletes the folder only when no process
holds it."""
import os
import subprocess
import sys
import time

import pytest

import streamrt as ps
from helpers import OPENCL, child_env

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(ps.__file__)))

HOLDER = r"""
import sys, time
from streamrt.backends.device import hold_cache_dir
hold_cache_dir(sys.argv[1])
print("holding", flush=True)
sys.stdin.read()            # until the test closes our stdin
"""

CLEAR = r"""
import json, os, sys
import streamrt as ps
kept = ps.clear_caches(disk=True)
print(json.dumps({"kept": kept, "left": os.listdir(os.path.join(sys.argv[1], "pocl"))}))
"""


def _env(cache, **kw):
    env = child_env(cache, **kw)
    env.pop("POCL_CACHE_DIR", None)     # (this process set it to its own cache)
    env["PYTHONPATH"] = ROOT + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def _clear(cache):
    import json
    p = subprocess.run([sys.executable, "-c", CLEAR, str(cache)], env=_env(cache),
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-2000:]
    return json.loads(p.stdout.strip().splitlines()[-1])


def test_a_held_folder_is_kept_until_its_holder_exits(tmp_path):
    pocl = tmp_path / "pocl"
    (pocl / "DG").mkdir(parents=True)
    (pocl / "DG" / "build.log").write_text("x")
    h = subprocess.Popen([sys.executable, "-c", HOLDER, str(pocl)], env=_env(tmp_path),
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert h.stdout.readline().strip() == "holding"
        while_held = _clear(tmp_path)
    finally:
        h.stdin.close()
        h.wait(timeout=60)
    after = _clear(tmp_path)
    print(f"\nclear_caches while another process holds pocl/: kept {while_held['kept']}; "
          f"after it exits: {len(after['left'])} entries left")
    assert while_held["kept"] == ["pocl"] and while_held["left"] == ["DG"]
    assert after["kept"] == [] and after["left"] == []


OPENCL_RUN = r"""
import json, os
import streamrt as ps
a = float(ps.sum(ps.ones(100_000) * 2))
kept = ps.clear_caches(disk=True)
b = [float(ps.sum(f(ps.ones(100_000)) * 5)) for f in (ps.sqrt, ps.exp, ps.sin)]
print(json.dumps({"a": a, "kept": kept, "b": b, "fallbacks": ps.runtime_stats()["fallbacks"]}))
"""


@pytest.mark.skipif(not OPENCL, reason="no OpenCL device")
def test_clear_caches_under_a_live_opencl_context(tmp_path):
    import json
    p = subprocess.run([sys.executable, "-c", OPENCL_RUN],
                       env=_env(tmp_path, STREAMRT_BACKEND="opencl"),
                       capture_output=True, text=True, timeout=300)
    print(f"\nOpenCL, clear_caches(disk=True) under a live context: exit code {p.returncode}")
    assert p.returncode == 0, p.stderr[-3000:]
    out = json.loads(p.stdout.strip().splitlines()[-1])
    assert out["a"] == 200_000 and "pocl" in out["kept"] and out["b"][0] == 500_000
