"""Device memory on OpenCL (PoCL in CI): the executor's account of device bytes, spilling of
least-recently-used arrays to the host, retries after allocation failures, splitting and CPU
fallback when a program cannot fit -- always NumPy's result, with the counters saying what
happened. STREAMRT_DEVICE_MEMORY_LIMIT makes the device behave as if it had that much memory;
allocation and launch failures are injected."""
from __future__ import annotations

import gc

import numpy as np
import pytest
from helpers import OPENCL, assert_same

import streamrt as ps
from streamrt.backends import registry

pytestmark = pytest.mark.skipif(not OPENCL, reason="no OpenCL device")

N = 10_000                       # float32: 40 000 bytes per array


@pytest.fixture
def ocl():
    with ps.config.override(backend="opencl"):
        ex = registry.get()
        assert ex.name == "opencl"
        yield ex


@pytest.fixture
def limit():
    """ps.config.set (all threads: the executor's worker reads it too), restored after."""
    def set_limit(n):
        ps.config.set(device_memory_limit=n)
    yield set_limit
    ps.sync()
    ps.config.set(device_memory_limit=0)


def _arrays(k):
    return [np.arange(N, dtype=np.float32) * (i + 1) for i in range(k)]


def test_spill_least_recently_used_and_bring_back(ocl, limit, stats):
    limit(130_000)                    # three arrays (and an index table) fit
    a = _arrays(4)
    ys = []
    for v in a:                       # one sequence each: x (in), y (out) on the device
        ys.append(ps.asarray(v) * 2.0)
        ps.sync()
    s = stats()
    assert s["device_spills"] >= 1 and s["bytes_spilled"] >= 4 * N
    assert s["fallbacks"] == 0 and s["device_oom_fallbacks"] == 0
    assert ocl.mem_used <= 130_000
    # the first result was spilled: a device kernel reading it brings it back
    z = ys[0] + ys[3]
    ps.sync()
    assert stats()["fallbacks"] == 0
    assert_same(z, a[0] * 2 + a[3] * 2)
    for y, v in zip(ys, a):
        assert_same(y, v * 2)


def test_program_larger_than_the_device_runs_on_cpu(ocl, limit, stats):
    limit(60_000)                     # x + y needs 3 x 40 000 bytes
    a, b = _arrays(2)
    r = ps.asarray(a) + ps.asarray(b)
    assert_same(r, a + b)
    s = stats()
    assert s["device_oom_fallbacks"] == 1 and s["fallbacks"] == 1
    assert s["device_alloc_retries"] >= 1


def test_fused_program_too_large_is_split(ocl, limit, stats):
    limit(170_000)                    # 2 inputs + 3 outputs do not fit; each half does
    a, b = _arrays(2)
    x, y = ps.asarray(a), ps.asarray(b)
    u, v, w = x * 2.0, y - 1.0, x + y
    ps.sync()
    s = stats()
    assert s["device_oom_splits"] >= 1 and s["device_oom_fallbacks"] == 0
    assert_same(u, a * 2)
    assert_same(v, b - 1)
    assert_same(w, a + b)


def test_account_returns_to_zero_when_arrays_die(ocl, stats):
    ps.sync()
    gc.collect()
    before = ocl.mem_used
    x = ps.asarray(_arrays(1)[0])
    y = ps.sqrt(x) + 1.0
    ps.sync()
    assert ocl.mem_used >= before + 2 * 4 * N
    del x, y
    gc.collect()
    assert ocl.mem_used <= before + 64       # (an index table may stay cached)


def test_injected_allocation_failure_is_retried(ocl, stats, monkeypatch):
    real = ocl._dev_alloc
    failures = [1]

    def flaky(n):
        if failures[0] and n >= 4 * N:
            failures[0] -= 1
            raise MemoryError("injected device allocation failure")
        return real(n)

    monkeypatch.setattr(ocl, "_dev_alloc", flaky)
    a = _arrays(1)[0]
    r = ps.asarray(a) * 3.0
    assert_same(r, a * 3)
    s = stats()
    assert s["device_alloc_retries"] >= 1 and s["fallbacks"] == 0 and failures == [0]


def test_injected_out_of_memory_at_launch_spills_and_retries(ocl, stats, monkeypatch):
    import pyopencl as cl
    real = ocl._enqueue
    failures = [1]

    def flaky(*args):
        if failures[0]:
            failures[0] -= 1
            raise cl.MemoryError("injected MEM_OBJECT_ALLOCATION_FAILURE")
        return real(*args)

    a, b = _arrays(2)
    keep = ps.asarray(b) * 2.0                # another live device array: spilled
    ps.sync()
    monkeypatch.setattr(ocl, "_enqueue", flaky)
    r = ps.asarray(a) - 1.0
    assert_same(r, a - 1)
    s = stats()
    assert s["device_alloc_retries"] == 1 and s["device_spills"] >= 1
    assert s["fallbacks"] == 0 and failures == [0]
    assert_same(keep, b * 2)


def test_device_allocation_that_always_fails_falls_back(ocl, stats, monkeypatch):
    def broken(n):
        raise MemoryError("injected: device full")

    monkeypatch.setattr(ocl, "_dev_alloc", broken)
    a = _arrays(1)[0]
    r = ps.sum(ps.asarray(a) * 0.5)
    assert_same(r, np.sum(a * np.float32(0.5), dtype=np.float64).astype(np.float32),
                rtol=1e-6)
    assert stats()["device_oom_fallbacks"] >= 1


def test_device_program_cache_in_cache_info_and_clear(ocl, stats, tmp_path):
    a = np.linspace(0, 1, 100)
    assert_same(ps.cos(ps.asarray(a)) * 7.0, np.cos(a) * 7.0, ulps=4)
    info = ps.cache_info()["device"]
    assert info["memory_entries"]["opencl"] >= 1
    ps.clear_caches()
    assert ps.cache_info()["device"]["memory_entries"]["opencl"] == 0
    ps.reset_stats()
    assert_same(ps.cos(ps.asarray(a)) * 7.0, np.cos(a) * 7.0, ulps=4)
    assert stats()["kernels_compiled"] == 1          # built again (PoCL's disk cache helps)
    # disk=True deletes the device compilers' directories under STREAMRT_CACHE_DIR (a
    # private one here: the test cache is shared with other test processes)
    previous = ps.config.settings.cache_dir
    ps.config.set(cache_dir=str(tmp_path))
    try:
        for d in ("pocl", "cupy"):
            (tmp_path / d / "sub").mkdir(parents=True)
            (tmp_path / d / "sub" / "k.bin").write_bytes(b"x" * 100)
        info = ps.cache_info()["device"]["directories"]
        assert info["pocl"]["files"] == 1 and info["cupy"]["bytes"] == 100
        ps.clear_caches(disk=True)
        info = ps.cache_info()["device"]["directories"]
        assert info["pocl"]["files"] == 0 and info["cupy"]["files"] == 0
    finally:
        ps.clear_caches()
        ps.config.set(cache_dir=previous)
