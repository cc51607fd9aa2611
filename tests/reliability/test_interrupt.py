"""Ctrl-C cancels (issue 26, item 2): a KeyboardInterrupt during a read reaches the user at
once and cancels what that thread submitted and has not started (a running kernel or
intrinsic finishes); the arrays cancelled raise CancelledError when read, and the next
computation starts at once instead of queueing behind the abandoned work. The child gets a
real SIGINT from this process while it waits in a read of a long sequence."""
import json
import os
import signal
import subprocess
import sys
import time

import streamrt as ps
from helpers import child_env

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(ps.__file__)))

CHILD = r"""
import json, sys, time
import numpy as np
import streamrt as ps
n = 2_000_000
a = ps.asarray(np.random.default_rng(0).random(n))
float(ps.sum(ps.ones(300_000) * 2))            # (its kernel compiled: the check below is warm)
x = a
for i in range(60):                            # one sequence: 60 sorts, ~0.1 s each
    x = ps.sort(x * -1.0)
ps.reset_stats()
print("reading", flush=True)
t0 = time.perf_counter()
try:
    float(ps.sum(x))
    r = "finished"
except KeyboardInterrupt:
    r = "interrupted"
t1 = time.perf_counter()
v = float(ps.sum(ps.ones(300_000) * 2))        # a new computation, on the E-Scheduler
t2 = time.perf_counter()
try:
    float(ps.sum(x))
    err = None
except ps.ExecutionError as e:
    err = f"{type(e).__name__}: {e}"
st = ps.runtime_stats()
print(json.dumps({"r": r, "interrupt_s": t1 - t0, "next_s": t2 - t1, "v": v, "err": err,
                  "cancelled": st["sequences_cancelled"], "sorts": st["intrinsics_launched"]}))
"""


def _interrupted_child(args, timeout, cwd=None):
    """Run ``args`` (a child that prints "reading" before its long read), send it SIGINT
    0.5 s into that read, and return its last line's JSON."""
    env = child_env(os.environ["STREAMRT_CACHE_DIR"])
    env["PYTHONPATH"] = ROOT + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    p = subprocess.Popen([sys.executable, *args], env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, cwd=cwd)
    try:
        assert p.stdout.readline().strip() == "reading"
        time.sleep(0.5)
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=timeout)   # (a hang guard, not a timing)
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == 0, err[-3000:]
    return json.loads(out.strip().splitlines()[-1])


def test_sigint_cancels_the_read():
    res = _interrupted_child(["-c", CHILD], 60)
    print(f"\nSIGINT during a read: raised after {res['interrupt_s']:.2f} s; the next "
          f"computation took {res['next_s'] * 1e3:.0f} ms; {res['sorts']} of 60 sorts ran")
    assert res["r"] == "interrupted"
    assert res["v"] == 600_000.0
    assert res["cancelled"] >= 1
    assert res["sorts"] < 60                       # the rest were dropped
    assert res["err"] and res["err"].startswith("CancelledError: cancelled")


DASK_CHILD = r"""
import json, time
import numpy as np
import streamrt as ps


def main():
    ps.distributed.connect()                          # a LocalCluster: 2 worker processes
    x = ps.asarray(np.random.default_rng(0).random((400_000, 8)), chunks=50_000)
    float(ps.sum(x))                                  # workers up
    y = x
    for i in range(40):                               # many tasks queued on the workers
        y = ps.sort(y * -1.0, axis=1)
    ps.reset_stats()
    print("reading", flush=True)
    t0 = time.perf_counter()
    try:
        float(ps.sum(y))
        r = "finished"
    except KeyboardInterrupt:
        r = "interrupted"
    t1 = time.perf_counter()
    v = float(ps.sum(x[:1000] * 0.0 + 2.0))           # a new computation on the cluster
    t2 = time.perf_counter()
    try:
        float(ps.sum(y))
        err = None
    except ps.ExecutionError as e:
        err = f"{type(e).__name__}: {e}"
    st = ps.runtime_stats()
    print(json.dumps({"r": r, "interrupt_s": t1 - t0, "next_s": t2 - t1, "v": v,
                      "err": err, "cancelled": st["dask_tasks_cancelled"]}))
    ps.distributed.close()


if __name__ == "__main__":
    main()
"""


def test_sigint_cancels_a_read_on_a_dask_cluster(tmp_path):
    """The same on the Dask path: the tasks this process queued on the workers and not
    finished are cancelled (a running task finishes), so the next computation does not wait
    behind them."""
    script = tmp_path / "dask_child.py"              # (spawned workers re-import the main file)
    script.write_text(DASK_CHILD)
    res = _interrupted_child([str(script)], 120, cwd=tmp_path)
    print(f"\nSIGINT during a Dask read: raised after {res['interrupt_s']:.2f} s; the next "
          f"computation took {res['next_s'] * 1e3:.0f} ms; {res['cancelled']} tasks cancelled")
    assert res["r"] == "interrupted"
    assert res["v"] == 16000.0
    assert res["cancelled"] >= 1
    assert res["err"] and res["err"].startswith("CancelledError: cancelled")
