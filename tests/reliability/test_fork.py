"""Fork safety (issue 26, item 1): a forked child has none of the parent's runtime threads;
streamrt resets itself in the child (core/atfork.py) so work of any size runs there, with the
JIT in either mode, and process pools (fork, spawn, concurrent.futures) work on streamrt
arrays and functions. Each case runs in a child process under a timeout: a hang fails."""
import json
import os
import subprocess
import sys
import time

import pytest

import streamrt as ps
from helpers import child_env
from streamrt.frontend import native

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(ps.__file__)))   # (the checkout tested)

FORK = r"""
import json, os, sys, time
import streamrt as ps
n = int(sys.argv[1])
first = float(ps.sum(ps.sqrt(ps.ones(n)) * 2))
pending = ps.sqrt(ps.ones(n)) * 5          # recorded, not read: computed before the fork
ps.hint_execute()
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    os.close(r)
    t = time.perf_counter()
    out = {"child": float(ps.sum(ps.sqrt(ps.ones(n)) * 3)), "pending": float(ps.sum(pending)),
           "small": float(ps.sum(ps.ones(10) * 3))}
    for _ in range(3):                      # a loop: the trace cache and the JIT tier in the child
        out["loop"] = float(ps.sum(ps.exp(ps.ones(n) * 0.5) - 1))
    out["seconds"] = time.perf_counter() - t
    os.write(w, json.dumps(out).encode())
    os._exit(0)
os.close(w)
data = b""
while True:
    b = os.read(r, 65536)
    if not b:
        break
    data += b
_, st = os.waitpid(pid, 0)
after = float(ps.sum(ps.ones(n) * 4))       # the parent goes on
print(json.dumps({"first": first, "status": st, "after": after, **json.loads(data or b"{}")}))
"""


def _run(code, *args, timeout=120, **env):
    e = child_env(os.environ["STREAMRT_CACHE_DIR"], **env)
    e["PYTHONPATH"] = os.pathsep.join([HERE, ROOT] + ([e["PYTHONPATH"]] if e.get("PYTHONPATH")
                                                      else []))
    t = time.perf_counter()
    p = subprocess.run([sys.executable, "-c", code, *map(str, args)], env=e,
                       capture_output=True, text=True, timeout=timeout)
    dt = time.perf_counter() - t
    assert p.returncode == 0, p.stderr[-3000:]
    return json.loads(p.stdout.strip().splitlines()[-1]), dt


@pytest.mark.parametrize("jit", ["sync", "background"])
@pytest.mark.parametrize("n", [300_000, 3_000_000])
def test_work_after_fork(jit, n):
    out, dt = _run(FORK, n, STREAMRT_JIT=jit)
    print(f"\nfork, jit={jit}, n={n}: child ran its work in {out['seconds']:.2f} s "
          f"(process {dt:.1f} s)")
    assert out["status"] == 0
    assert out["first"] == 2.0 * n and out["child"] == 3.0 * n and out["pending"] == 5.0 * n
    assert out["small"] == 30.0 and out["after"] == 4.0 * n
    assert abs(out["loop"] - n * 0.6487212707001282) < 1e-6 * n


CUT = r"""
import json, os, sys
import numpy as np
import streamrt as ps
x0 = np.linspace(0.0, 1.0, 8192)
x = ps.asarray(x0)
out = {"parent": bool(np.array_equal(np.asarray(x + x), x0 + x0))}   # the helper thread starts
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    from streamrt.frontend import native
    os.close(r)
    before = ps.runtime_stats()["loops_split"]
    with native.split_helper_always():      # (the helper must run its part: a dead one hangs)
        res = {"child": bool(np.array_equal(np.asarray(x * 2.0 + x), x0 * 2.0 + x0)),
               "cut": ps.runtime_stats()["loops_split"] - before}
    os.write(w, json.dumps(res).encode())
    os._exit(0)
os.close(w)
_, st = os.waitpid(pid, 0)
out.update(json.loads(os.read(r, 1 << 16).decode() or "{}"), status=st,
           cut_parent=ps.runtime_stats()["loops_split"])
print(json.dumps(out))
"""


@pytest.mark.skipif(not native.available() or native._cpus() < 2,
                    reason="the loops are cut by the C extension, on two CPUs")
def test_loops_cut_over_two_threads_after_fork():
    """The C path's helper thread (frontend/_loops.c) does not survive fork(): the child
    starts its own (made to run every part there, a child waiting on the parent's helper
    would hang), its cut loops are right, and nothing hangs."""
    out, _ = _run(CUT, timeout=60, STREAMRT_SPLIT_ELEMENTS="256", STREAMRT_EAGER_ELEMENTS="65536",
                  STREAMRT_JIT="background")
    assert out["status"] == 0 and out["parent"] and out["child"]
    assert out["cut_parent"] > 0 and out["cut"] > 0


POOLS = r"""
import json, sys
import multiprocessing as mp
import concurrent.futures as cf
import numpy as np
import streamrt as ps
import _workers
kind = sys.argv[1]
n = 200_000
arrays = [ps.ones(n) * (i + 1) for i in range(4)]
float(ps.sum(arrays[0] * 2))                 # the runtime's threads are running in the parent
if kind == "executor":
    with cf.ProcessPoolExecutor(2, mp_context=mp.get_context("fork")) as ex:
        sums = list(ex.map(_workers.double_sum, arrays))
        roots = list(ex.map(ps.sqrt, arrays[:2]))
        scaled = list(ex.map(_workers.scaled, arrays[:2]))
else:
    with mp.get_context(kind).Pool(2) as pool:
        sums = pool.map(_workers.double_sum, arrays)
        roots = pool.map(ps.sqrt, arrays[:2])
        scaled = pool.map(_workers.scaled, arrays[:2])
ok_roots = all(isinstance(r, ps.Array) and np.allclose(np.asarray(r), np.sqrt(i + 1))
               for i, r in enumerate(roots))
ok_scaled = all(np.allclose(np.asarray(r), 3 * np.sqrt(i + 1)) for i, r in enumerate(scaled))
print(json.dumps({"sums": sums, "roots": ok_roots, "scaled": ok_scaled,
                  "parent": float(ps.sum(arrays[3]))}))
"""


@pytest.mark.parametrize("kind", ["fork", "spawn", "executor"])
def test_process_pools(kind):
    out, dt = _run(POOLS, kind, STREAMRT_JIT="background")
    print(f"\npool ({kind}): 3 maps over streamrt arrays in {dt:.1f} s")
    assert out["sums"] == [2.0 * 200_000 * (i + 1) for i in range(4)]
    assert out["roots"] and out["scaled"]
    assert out["parent"] == 4 * 200_000


DASK_FORK = r"""
import json, os, sys
import numpy as np
import streamrt as ps


def main():
    ps.distributed.connect()                         # a LocalCluster: 2 worker processes
    x = ps.asarray(np.ones((200_000, 4)), chunks=50_000)
    out = {"parent": float(ps.sum(x * 2))}
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        res = {}
        try:
            res["local"] = float(ps.sum(ps.ones(300_000) * 3))
            try:
                res["dask"] = float(ps.sum(x * 3))
            except ps.ExecutionError as e:
                res["dask_error"] = str(e)
        finally:
            os.write(w, json.dumps(res).encode())
            os._exit(0)
    os.close(w)
    os.waitpid(pid, 0)
    out["child"] = json.loads(os.read(r, 1 << 16).decode())
    out["parent_again"] = float(ps.sum(x * 4))
    ps.distributed.close()
    print(json.dumps(out))


if __name__ == "__main__":
    main()
"""


def test_fork_of_a_process_attached_to_a_dask_cluster(tmp_path):
    """The child computes locally; an array the cluster holds gives a clear error there (the
    parent's Client is not usable in a child: a gather waited forever); the parent goes on."""
    script = tmp_path / "dask_fork.py"              # (spawned workers re-import the main file)
    script.write_text(DASK_FORK)
    env = child_env(os.environ["STREAMRT_CACHE_DIR"])
    env["PYTHONPATH"] = ROOT + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    p = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True,
                       timeout=180, cwd=tmp_path)       # (a hang guard, not a timing)
    assert p.returncode == 0, p.stderr[-3000:]
    res = json.loads(p.stdout.strip().splitlines()[-1])
    print("\n", res)
    assert res["parent"] == 1_600_000.0 and res["parent_again"] == 3_200_000.0
    assert res["child"]["local"] == 900_000.0
    assert "forked child" in res["child"]["dask_error"]
