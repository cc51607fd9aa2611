"""The program cache: compiled kernels on disk under STREAMRT_CACHE_DIR are reused by a second
process; damaged files are deleted and rebuilt; processes may share the directory;
ps.clear_caches(). Cross-process behaviour runs real child processes (each pays Numba's
start-up and at most one compile), so there are few of them."""
from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

import streamrt as ps
from helpers import child_env, assert_same

# The child computes one small fused kernel, checks it against NumPy and prints its counters.
CHILD = r"""
import json
import numpy as np
import streamrt as ps
x = np.linspace(-1, 1, 1000).astype(np.float32)
a = ps.asarray(x)
r = np.asarray(ps.sin(a * 3.0) + a)
want = np.sin(x * np.float32(3.0)) + x
ok = bool(r.dtype == np.float32 and np.allclose(r, want, rtol=1e-6, atol=1e-6))
print(json.dumps({"ok": ok, "stats": ps.runtime_stats(), "info": ps.cache_info()["program"]}))
"""


def _env(cache_dir):
    return child_env(cache_dir)


def _child(cache_dir):
    p = subprocess.run([sys.executable, "-c", CHILD], env=_env(cache_dir), capture_output=True,
                       text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout.strip().splitlines()[-1])


def _modules(cache_dir):
    return sorted(glob.glob(os.path.join(str(cache_dir), "numba", "k_*.py")))


def _numba_files(cache_dir, ext):
    return sorted(glob.glob(os.path.join(str(cache_dir), "numba", "__pycache__", f"k_*.{ext}")))


@pytest.fixture(scope="module")
def warm(tmp_path_factory):
    """A cache directory filled by a first process (which compiled the child's kernel)."""
    d = tmp_path_factory.mktemp("warm-cache")
    first = _child(d)
    return d, first


@pytest.fixture
def cache_copy(warm, tmp_path):
    """A private copy of the warm directory (tests damage it)."""
    d = tmp_path / "cache"
    shutil.copytree(warm[0], d)
    return d


def test_first_process_compiles_and_writes_files(warm):
    d, first = warm
    assert first["ok"]
    st = first["stats"]
    assert st["kernels_compiled"] == 1 and st["kernels_loaded_from_disk"] == 0
    assert st["compile_seconds"] > 0
    assert first["info"]["new_modules"] == 1 and first["info"]["disk_modules"] == 0
    assert len(_modules(d)) == 1
    assert _numba_files(d, "nbi") and _numba_files(d, "nbc")
    assert not glob.glob(os.path.join(str(d), "numba", "*.tmp"))


def test_second_process_compiles_nothing(cache_copy):
    second = _child(cache_copy)
    assert second["ok"]
    st = second["stats"]
    assert st["kernels_compiled"] == 0
    assert st["kernels_loaded_from_disk"] >= 1 and st["program_cache_disk_hits"] >= 1
    assert st["compile_seconds"] == 0 and st["disk_cache_rejected"] == 0
    assert second["info"]["disk_modules"] == 1 and second["info"]["new_modules"] == 0
    assert second["info"]["rebuilt"] == 0


def test_truncated_module_file_is_rebuilt(cache_copy):
    (path,) = _modules(cache_copy)
    with open(path) as f:
        good = f.read()
    with open(path, "w") as f:
        f.write(good[: len(good) // 2])
    r = _child(cache_copy)
    assert r["ok"]
    assert r["info"]["rebuilt"] == 1            # deleted and written again, never imported
    assert r["stats"]["kernels_compiled"] == 1  # its Numba cache went with it
    with open(path) as f:
        assert f.read() == good
    assert _modules(cache_copy) == [path]


@pytest.mark.parametrize("target,damage", [("nbi", "garbage"), ("nbc", "truncated")])
def test_damaged_numba_cache_file_is_rejected_and_rebuilt(cache_copy, target, damage):
    """Numba refuses the damaged file; it is deleted, the kernel compiled afresh, and (checked
    once) the entry written by the recovery is sound for the next process."""
    (path,) = _numba_files(cache_copy, target)
    with open(path, "rb") as f:
        good = f.read()
    with open(path, "wb") as f:
        f.write(b"\x80garbage" * 10 if damage == "garbage" else good[: len(good) // 3])
    r = _child(cache_copy)
    assert r["ok"]
    assert r["stats"]["disk_cache_rejected"] == 1
    assert r["stats"]["kernels_compiled"] == 1 and r["stats"]["kernels_loaded_from_disk"] == 0
    if target != "nbi":
        return
    again = _child(cache_copy)
    assert again["ok"]
    assert again["stats"]["disk_cache_rejected"] == 0
    assert again["stats"]["kernels_compiled"] == 0
    assert again["stats"]["kernels_loaded_from_disk"] >= 1


def test_two_processes_on_an_empty_directory(tmp_path):
    d = tmp_path / "shared"
    procs = [subprocess.Popen([sys.executable, "-c", CHILD], env=_env(d), text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
             for _ in range(2)]
    outs = [p.communicate(timeout=300) for p in procs]
    for p, (out, err) in zip(procs, outs):
        assert p.returncode == 0, err
        r = json.loads(out.strip().splitlines()[-1])
        assert r["ok"]
        assert r["stats"]["kernels_compiled"] + r["stats"]["kernels_loaded_from_disk"] == 1
    assert len(_modules(d)) == 1
    assert not glob.glob(os.path.join(str(d), "numba", "*.tmp"))
    assert len(_numba_files(d, "nbi")) == 1


# ---- clear_caches / cache_info (in this process) ---------------------------------------------------
def test_clear_caches_memory(stats):
    a = np.linspace(0, 1, 500)
    x = ps.asarray(a)

    @ps.macro
    def f(u):
        return u * 4.0 - 1.0

    def body():
        return x * 4.0 - 1.0

    assert_same(body(), a * 4.0 - 1.0)
    assert_same(f(x), a * 4.0 - 1.0)
    info = ps.cache_info()
    assert info["trace"]["entries"] >= 1
    assert info["macro"]["sections"] >= 1
    assert info["program"]["memory_entries"] >= 1
    ps.clear_caches()
    info = ps.cache_info()
    assert info["trace"]["entries"] == 0 and info["trace"]["buckets"] == 0
    assert info["macro"]["entries"] == 0 and info["macro"]["sections"] == 0
    assert info["program"]["memory_entries"] == 0
    # everything is built again -- from the disk cache, not compiled
    ps.reset_stats()
    assert_same(body(), a * 4.0 - 1.0)
    assert_same(f(x), a * 4.0 - 1.0)
    st = stats()
    assert st["trace_cache_misses"] == 1 and st["macro_cache_misses"] == 1
    assert st["kernels_compiled"] == 0 and st["kernels_loaded_from_disk"] >= 1
    assert f.calls == 2


def test_clear_caches_disk(tmp_path, stats):
    d = tmp_path / "cache"
    previous = ps.config.settings.cache_dir
    ps.clear_caches()
    ps.config.set(cache_dir=str(d))
    try:
        a = np.linspace(0, 1, 300)
        assert_same(ps.asarray(a) * 6.0 + 2.0, a * 6.0 + 2.0)
        assert len(_modules(d)) == 1 and _numba_files(d, "nbi")
        assert ps.cache_info()["program"]["directory"] == os.path.join(str(d), "numba")
        ps.clear_caches()                       # memory only: the files stay
        assert len(_modules(d)) == 1
        ps.clear_caches(disk=True)
        assert _modules(d) == [] and _numba_files(d, "nbi") == [] and _numba_files(d, "nbc") == []
        assert ps.cache_info()["program"]["memory_entries"] == 0
        ps.reset_stats()
        assert_same(ps.asarray(a) * 6.0 + 2.0, a * 6.0 + 2.0)   # rebuilt from nothing
        assert stats()["kernels_compiled"] == 1
        assert len(_modules(d)) == 1
    finally:
        ps.clear_caches()
        ps.config.set(cache_dir=previous)


GC_CHILD = r"""
import gc, json
import numpy as np
import streamrt as ps
before = gc.get_freeze_count()
x = ps.asarray(np.arange(100_000, dtype=np.float64))
r = float((x * 2.0 + 1.0).sum())
print(json.dumps({"before": before, "after": gc.get_freeze_count(), "r": r}))
"""


@pytest.mark.parametrize("flag", ["1", "0"])
def test_first_kernel_load_freezes_the_collectors_objects(tmp_path, flag):
    """STREAMRT_GC_FREEZE (default on): once a kernel is first called, the objects alive then
    (Numba's, mostly) are moved out of the collector's scans; off, nothing is frozen."""
    env = child_env(tmp_path, STREAMRT_GC_FREEZE=flag)
    p = subprocess.run([sys.executable, "-c", GC_CHILD], env=env, capture_output=True,
                       text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    res = json.loads(p.stdout.strip().splitlines()[-1])
    assert res["before"] == 0
    assert (res["after"] > 50_000) if flag == "1" else (res["after"] == 0)
    assert res["r"] == float((np.arange(100_000) * 2.0 + 1.0).sum())
