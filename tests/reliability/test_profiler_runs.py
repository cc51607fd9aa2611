"""Profiler robustness (issue 26, item 8): a profiled run interrupted by Ctrl-C -- inside
``with ps.profile()`` or under STREAMRT_PROFILE -- still writes a readable run file; a damaged
run file gives a clear error naming the line; the report names files relative to the working
directory and shows each line's source text."""
import json
import os
import signal
import subprocess
import sys
import time

import pytest

import streamrt as ps
from helpers import child_env
from streamrt.tools.profiler import report

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(ps.__file__)))

CHILD = r"""
import sys
import numpy as np
import streamrt as ps
a = ps.asarray(np.random.default_rng(0).random(2_000_000))
def loop():
    x = a
    while True:
        x = ps.sort(x * -1.0)         # the profiled line
        float(ps.sum(x))
        print("step", flush=True)
if sys.argv[1] == "block":
    try:
        with ps.profile(sys.argv[2]):
            loop()
    except KeyboardInterrupt:
        print("interrupted", flush=True)
else:
    loop()                            # STREAMRT_PROFILE: written at exit
"""


@pytest.mark.parametrize("how", ["block", "env"])
def test_an_interrupted_profile_writes_its_run_file(tmp_path, how):
    path = tmp_path / "run.stprof"
    env = child_env(os.environ["STREAMRT_CACHE_DIR"])
    env["PYTHONPATH"] = ROOT + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    if how == "env":
        env["STREAMRT_PROFILE"] = str(path)
    p = subprocess.Popen([sys.executable, "-c", CHILD, how, str(path)], env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path)
    try:
        for _ in range(2):
            assert p.stdout.readline().strip() == "step"
        p.send_signal(signal.SIGINT)
        p.communicate(timeout=120)                  # (a hang guard)
    finally:
        if p.poll() is None:
            p.kill()
    run = report.Run(str(path))
    s = run.summary()
    print(f"\nprofile interrupted ({how}): exit code {p.returncode}; run file with "
          f"{s['kernels']} kernel records, {len(run.sites)} call sites")
    assert s["kernels"] >= 2 and run.sites


def test_a_damaged_run_file_gives_a_clear_error(tmp_path):
    good = tmp_path / "run.stprof"
    with ps.profile(str(good)):
        float(ps.sum(ps.ones(1000) * 2))
    lines = good.read_text().splitlines()
    cases = {"empty": "", "garbage": "\x00\x01 not json\n",
             "truncated": "\n".join(lines[:2]) + "\n" + lines[2][: len(lines[2]) // 2] + "\n"
             + "\n".join(lines[3:]),
             "not a profile": json.dumps({"t": "header", "format": "other"}) + "\n"}
    msgs = {}
    for name, text in cases.items():
        p = tmp_path / f"{name}.stprof"
        p.write_text(text)
        with pytest.raises(ValueError) as e:
            report.Run(str(p))
        msgs[name] = str(e.value)
        assert "Expecting value" not in msgs[name].split("(")[0]
    print("\n" + "\n".join(f"  {k}: {v}" for k, v in msgs.items()))
    assert "is empty" in msgs["empty"]
    assert "not a streamrt profile" in msgs["garbage"]
    assert "line 3" in msgs["truncated"] and "damaged" in msgs["truncated"]
    assert "not a streamrt profile" in msgs["not a profile"]
    # the CLI says it in one line and exits 1
    from streamrt.tools.profiler.__main__ import main
    assert main(["report", str(tmp_path / "truncated.stprof")]) == 1


def test_report_names_lines_relative_and_shows_their_code(tmp_path, monkeypatch):
    path = tmp_path / "run.stprof"
    x = ps.asarray([1.0, 2.0, 3.0] * 1000)
    with ps.profile(str(path)):
        for _ in range(2):
            float(ps.sum(ps.sqrt(x) * 7.0))      # the line the report shows
    monkeypatch.chdir(ROOT)
    from rich.console import Console
    con = Console(record=True, width=200)
    report.print_report(str(path), console=con)
    out = con.export_text()
    rel = os.path.relpath(__file__, ROOT)
    print(f"\nreport line: {next(ln for ln in out.splitlines() if rel in ln).strip()[:150]}")
    assert rel in out and os.path.abspath(__file__) not in out
    assert "ps.sqrt(x) * 7.0" in out
