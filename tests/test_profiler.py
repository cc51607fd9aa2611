"""Profiler: run file contents, attribution to source lines, CLI, Chrome trace, HTML."""
import inspect
import json
import subprocess
import sys
from html.parser import HTMLParser

import numpy as np
import pytest

import streamrt as ps
from streamrt.tools.profiler import report

HERE = report._rel(__file__)        # (reports name files relative to the working directory)


def _line():
    return inspect.currentframe().f_back.f_lineno


@pytest.fixture(scope="module")
def run_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("prof") / "run.stprof"
    x = ps.asarray(np.linspace(0.1, 1.0, 4096).astype(np.float32))
    lines = {}
    with ps.profile(str(path)):
        for i in range(3):
            y = ps.sin(x) * 2.0 + 1.0; lines["a"] = _line()           # noqa: E702
            z = ps.sqrt(y) - x / 3.0; lines["b"] = _line()            # noqa: E702
            s = ps.sum(z * z); lines["c"] = _line()                   # noqa: E702
            float(s)
    return path, lines


def test_run_file_is_json_lines_with_header_and_end(run_file):
    path, _ = run_file
    recs = [json.loads(ln) for ln in open(path)]
    assert recs[0]["t"] == "header" and recs[0]["format"] == "streamrt-profile"
    assert recs[0]["version"] == 1
    assert recs[-1]["t"] == "end"
    kinds = {r["t"] for r in recs}
    assert {"site", "pc", "ck", "flush", "cache"} <= kinds


def test_weights_sum_to_one_and_point_at_the_fused_lines(run_file):
    path, lines = run_file
    run = report.Run(str(path))
    kernels = [k for k in run.kernels if k["kind"] == "kernel"]
    assert len(kernels) == 3                       # one fused kernel per iteration
    for k in kernels:
        assert sum(k["weights"].values()) == pytest.approx(1.0)
        labels = {run.label(s) for s in k["weights"]}
        assert labels == {f"{HERE}:{lines[n]}" for n in "abc"}
    # the sin line has the most expensive op (sin): it gets the largest share
    w = {run.label(s): v for s, v in kernels[0]["weights"].items()}
    assert max(w, key=w.get) == f"{HERE}:{lines['a']}"


def test_calls_per_site_and_cache_events(run_file):
    path, lines = run_file
    run = report.Run(str(path))
    calls = {run.label(s): n for s, n in run.calls.items()}
    assert calls[f"{HERE}:{lines['a']}"] == 3 * 3     # sin, *, + per iteration
    assert calls[f"{HERE}:{lines['c']}"] == 3 * 2     # *, sum
    trace = [c for c in run.caches if c["cache"] == "trace"]
    assert [c["hit"] for c in trace] == [False, True, True]


def test_cli_report_prints_the_lines(run_file):
    path, lines = run_file
    out = subprocess.run([sys.executable, "-m", "streamrt.tools.profiler", "report", str(path)],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    for n in "abc":
        assert f"test_profiler.py:{lines[n]}" in out.stdout
    assert "Summary" in out.stdout and "Runtime / caches" in out.stdout


def test_cli_compare(run_file, tmp_path):
    path, _ = run_file
    out = subprocess.run([sys.executable, "-m", "streamrt.tools.profiler", "report", str(path),
                          "--compare", str(path)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "Comparison" in out.stdout and "1.00x" in out.stdout


def test_chrome_trace_loads_with_kernel_events(run_file, tmp_path):
    path, _ = run_file
    out = report.chrome_trace(str(path), str(tmp_path / "t.json"))
    d = json.load(open(out))
    ev = d["traceEvents"]
    ks = [e for e in ev if e.get("ph") == "X" and e.get("cat") == "kernel"]
    assert len(ks) == 3 and all(e["dur"] > 0 for e in ks)
    names = {e["args"]["name"] for e in ev if e.get("ph") == "M" and e["name"] == "thread_name"}
    assert "executor cpu" in names


def test_html_is_well_formed_and_self_contained(run_file, tmp_path):
    path, lines = run_file
    out = report.html_report(str(path), str(tmp_path / "r.html"))
    text = open(out).read()

    class P(HTMLParser):
        def __init__(self):
            super().__init__()
            self.stack, self.ext = [], []

        def handle_starttag(self, tag, attrs):
            for k, v in attrs:
                if k in ("src", "href") and v and "://" in v:
                    self.ext.append(v)
            if tag not in ("meta", "br", "rect", "img", "link"):
                self.stack.append(tag)

        def handle_startendtag(self, tag, attrs):
            pass

        def handle_endtag(self, tag):
            if tag in ("meta", "br", "rect", "img", "link"):
                return
            assert self.stack and self.stack[-1] == tag, (tag, self.stack[-5:])
            self.stack.pop()
    p = P()
    p.feed(text)
    assert p.stack == [] and p.ext == []
    assert "<script" not in text
    assert f"test_profiler.py:{lines['a']}" in text and "<svg" in text


def test_profile_env_var_writes_a_file(tmp_path):
    path = tmp_path / "env.stprof"
    code = ("import numpy as np, streamrt as ps\n"
            "x = ps.asarray(np.ones(100, np.float32))\n"
            "print(float(ps.sum(x * 2.0)))\n")
    env = dict(__import__("os").environ, STREAMRT_PROFILE=str(path))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, timeout=300)
    assert out.returncode == 0, out.stderr
    run = report.Run(str(path))
    assert len(run.kernels) == 1 and run.summary()["ops_recorded"] == 2


def test_nested_profile_is_an_error(tmp_path):
    with ps.profile(str(tmp_path / "a.stprof")):
        with pytest.raises(RuntimeError):
            with ps.profile(str(tmp_path / "b.stprof")):
                pass
