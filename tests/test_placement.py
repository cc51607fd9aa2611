"""Automatic placement (STREAMRT_BACKEND=auto, scheduler/placement.py): decisions follow the
size threshold, where the inputs are, dtype support and measured times. Deterministic: the
speed estimates are injected with placement.set_estimate and measured times are replaced in
the table; the tests assert the ``placements_*`` counters and results, never timings."""
from __future__ import annotations

import numpy as np
import pytest
from helpers import OPENCL, assert_same

import streamrt as ps
from streamrt.runtime import placement


@pytest.fixture
def auto():
    placement.reset()
    if placement._devices is None:
        # the discovery runs in a child on a thread of its own: until it is done no device is
        # offered, and on a loaded machine that outlasted the first tests' decisions
        placement.discover_now()
    with ps.config.override(backend="auto"):
        yield placement
    placement.reset()


def _placed(s):
    return s["placements_cpu"], s["placements_opencl"]


def test_default_backend_is_auto_and_small_work_stays_on_cpu(auto, stats):
    assert ps.config.FLAGS["backend"].default == "auto"
    a = np.linspace(0, 1, 1000)
    r = ps.sum(ps.asarray(a) * 2.0 + 1.0)
    assert_same(r, np.sum(a * 2.0 + 1.0), rtol=1e-12)
    assert _placed(stats()) == (1, 0)


def test_forced_backend_makes_no_decision(stats):
    with ps.config.override(backend="cpu"):
        a = np.arange(10.0)
        assert_same(ps.asarray(a) + 1, a + 1)
    s = stats()
    assert s["placements_cpu"] == 0 and s["placements_opencl"] == 0


def test_cpu_only_machine_keeps_large_work_on_cpu(auto, stats, monkeypatch):
    monkeypatch.setattr(placement, "_devices", [])          # nothing but the CPU found
    with ps.config.override(device_min_elements=100):
        a = np.linspace(0, 1, 5000)
        assert_same(ps.asarray(a) * 3.0, a * 3.0)
    assert _placed(stats()) == (1, 0)


needs_opencl = pytest.mark.skipif(not OPENCL, reason="no OpenCL device")


@needs_opencl
def test_default_estimates_keep_work_on_numba_for_a_cpu_opencl_device(auto, stats):
    """PoCL runs on the same cores as Numba: the default estimate prefers Numba."""
    dev = dict(placement._available())["opencl"]
    if dev.get("type") == "gpu":
        pytest.skip("the OpenCL device is a GPU")
    with ps.config.override(device_min_elements=1000):
        a = np.linspace(0, 1, 50_000).astype(np.float32)
        x = ps.asarray(a)
        assert_same(ps.sqrt(x) * 2.0, np.sqrt(a) * np.float32(2.0))
    assert _placed(stats()) == (1, 0)


@needs_opencl
def test_size_threshold_and_estimates(auto, stats):
    auto.set_estimate("opencl", launch_s=0.0, ops_per_s=1e15, bytes_per_s=1e15)
    a = np.linspace(0, 1, 5000).astype(np.float32)
    x = ps.asarray(a)
    y = x * 2.0 + 1.0                            # below the threshold: the CPU
    assert_same(y, a * np.float32(2) + np.float32(1))
    assert _placed(stats()) == (1, 0)
    with ps.config.override(device_min_elements=1000):
        z = x * 3.0 - 1.0                        # above it, and the device is "faster"
        assert_same(z, a * np.float32(3) - np.float32(1))
    assert _placed(stats()) == (1, 1)
    auto.set_estimate("opencl", ops_per_s=1.0)   # now the device is hopeless
    with ps.config.override(device_min_elements=1000):
        w = x * 4.0
        assert_same(w, a * np.float32(4))
    assert _placed(stats()) == (2, 1)


@needs_opencl
def test_decisions_follow_where_the_inputs_are(auto, stats):
    """Same estimated compute speed; moving data is slow: work goes to its data."""
    auto.set_estimate("cpu", launch_s=0.0, ops_per_s=1e9)
    auto.set_estimate("opencl", launch_s=0.0, ops_per_s=1e9, bytes_per_s=1e3)
    a = np.linspace(-1, 1, 4000)
    with ps.config.override(backend="opencl"):
        on_dev = ps.asarray(a) * 2.0             # computed on (and left on) the device
        ps.sync()
    host = ps.asarray(a)
    ps.reset_stats()
    r1 = on_dev + 1.0                            # input on the device: stays there
    ps.sync()
    assert _placed(stats()) == (0, 1)
    r2 = host + 1.0                              # input on the host: the CPU
    ps.sync()
    assert _placed(stats()) == (1, 1)
    assert stats()["bytes_to_host"] == 0 and stats()["bytes_to_device"] == 0
    assert_same(r1, a * 2.0 + 1.0)
    assert_same(r2, a + 1.0)


@needs_opencl
def test_float64_avoids_a_device_without_fp64(auto, stats, monkeypatch):
    auto.set_estimate("opencl", launch_s=0.0, ops_per_s=1e15, bytes_per_s=1e15)
    monkeypatch.setattr(placement, "_devices",
                        [(n, dict(d, fp64=False)) for n, d in placement._available()])
    a = np.linspace(0, 1, 3000)
    with ps.config.override(device_min_elements=100):
        r64 = ps.exp(ps.asarray(a))
        ps.sync()
        assert _placed(stats()) == (1, 0)
        r32 = ps.exp(ps.asarray(a.astype(np.float32)))
        ps.sync()
        assert _placed(stats()) == (1, 1)
    assert_same(r64, np.exp(a), ulps=4)
    assert_same(r32, np.exp(a.astype(np.float32)), ulps=4)


def _run(x):
    return ps.sum(ps.sin(x) * 2.0 + 1.0)


@needs_opencl
def test_measured_times_of_the_same_trace_decide(auto, stats, capfd):
    auto.set_estimate("opencl", launch_s=0.0, ops_per_s=1e15, bytes_per_s=1e15)
    a = np.linspace(0, 1, 5000).astype(np.float32)
    x = ps.asarray(a)
    want = np.sum(np.sin(a) * np.float32(2) + np.float32(1), dtype=np.float64)
    with ps.config.override(device_min_elements=1000):
        for _ in range(2):                       # warm-up, then a timed run on the device
            assert_same(_run(x), want.astype(np.float32), rtol=1e-5)
        assert _placed(stats()) == (0, 2)
        m = auto.measured()
        (runs, secs), = [v for (k, n), v in m.items() if n == "opencl"]
        assert runs == 2 and secs is not None and secs > 0
        # the device turned out slow for this trace: it goes to the CPU, is measured there
        for k in list(auto._measured):
            if k[1] == "opencl":
                auto._measured[k][1] = 1e3
        for _ in range(3):
            assert_same(_run(x), want.astype(np.float32), rtol=1e-5)
        assert _placed(stats()) == (3, 2)
        # ... until the CPU measures slower still
        for k in list(auto._measured):
            if k[1] == "cpu":
                assert auto._measured[k][1] is not None
                auto._measured[k][1] = 1e4
        with ps.config.override(debug=1):
            assert_same(_run(x), want.astype(np.float32), rtol=1e-5)
        assert _placed(stats()) == (3, 3)
    err = capfd.readouterr().err
    assert "placement: opencl" in err and "(measured)" in err
    # a different trace has no measurements: the estimates decide
    with ps.config.override(device_min_elements=1000):
        assert_same(ps.max(x * 5.0), np.max(a * np.float32(5)))
    assert _placed(stats()) == (3, 4)


@needs_opencl
def test_a_slow_measurement_does_not_exclude_an_executor_for_good(auto, stats, monkeypatch):
    """One CPU run timed while the machine was busy sends the trace to the device; every
    EXPLORE_EVERY runs on the device the CPU is measured again, and wins back the trace."""
    monkeypatch.setattr(auto, "EXPLORE_EVERY", 4)
    auto.set_estimate("opencl", launch_s=0.0, ops_per_s=1e15, bytes_per_s=1e15)
    a = np.linspace(0, 1, 5000).astype(np.float32)
    x = ps.asarray(a)
    want = np.sum(np.sin(a) * np.float32(2) + np.float32(1), dtype=np.float64)
    with ps.config.override(device_min_elements=1000):
        for _ in range(2):                               # warm-up and a measured run on opencl
            assert_same(_run(x), want.astype(np.float32), rtol=1e-5)
        key = next(k for k, n in auto._measured if n == "opencl")
        auto._measured[(key, "opencl")][1] = 1.0         # the device: 1 s per run
        auto._measured[(key, "cpu")] = [2, 100.0]        # the CPU, measured once when busy
        for _ in range(2):                               # opencl runs 3 and 4
            assert_same(_run(x), want.astype(np.float32), rtol=1e-5)
        assert _placed(stats()) == (0, 4)
        assert_same(_run(x), want.astype(np.float32), rtol=1e-5)   # run 4 done: re-measure
        assert _placed(stats()) == (1, 4) and stats()["placement_explorations"] == 1
        assert auto._measured[(key, "cpu")][1] < 100.0             # the new time counts
        auto._measured[(key, "cpu")][1] = 1e-6                     # (a quiet machine)
        assert_same(_run(x), want.astype(np.float32), rtol=1e-5)   # back to the CPU
        assert _placed(stats()) == (2, 4) and stats()["placement_explorations"] == 1


def test_the_discovery_is_kept_in_the_cache_directory(tmp_path, monkeypatch):
    """A child process probes the devices once; the next processes (here: calls) read its
    answer from the cache directory until it is a day old."""
    asked = []
    monkeypatch.setattr(placement, "_ask_a_child",
                        lambda: asked.append(1) or [{"backend": "cpu", "available": True}])
    d = str(tmp_path)
    assert placement._devices_of_a_child(d) == [{"backend": "cpu", "available": True}]
    assert placement._devices_of_a_child(d) == [{"backend": "cpu", "available": True}]
    assert len(asked) == 1
    monkeypatch.setattr(placement, "DISCOVERY_TTL_S", 0)
    placement._devices_of_a_child(d)
    assert len(asked) == 2
