"""The kernel cache directory (issue 26, items 4 and 5, and the damaged-cache cases): an
unusable directory compiles into a private temporary one with one warning, said in
ps.cache_info(); the directory is private (0700, files 0600) whatever the umask; an entry is
compared with the module it should be (source and versions) before it is loaded, so a
truncated, garbage or foreign entry is rebuilt, never run; two processes filling one
directory at once both finish, and a third then compiles nothing. Each case is a child
process with its own directory."""
import json
import os
import stat
import subprocess
import sys

import pytest

import streamrt as ps
from helpers import child_env

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(ps.__file__)))

WORK = r"""
import json, os, sys, warnings
import numpy as np
import streamrt as ps
caught = []
warnings.showwarning = lambda m, *a, **k: caught.append(str(m))
x = np.linspace(0, 1, 300_000)
a = ps.asarray(x)
got = []
for i in range(2):
    got.append(float(ps.sum(ps.sqrt(a) * 2 + 1)))
    got.append(float(ps.max(ps.exp(a) - a)))
    got.append(float(ps.sum(a * a, dtype=ps.float64)))
want = [float(np.sum(np.sqrt(x) * 2 + 1)), float(np.max(np.exp(x) - x)), float(np.sum(x * x))]
ok = all(abs(g - w) <= 1e-9 * max(1.0, abs(w)) for g, w in zip(got, want * 2))
st = ps.runtime_stats()
info = ps.cache_info()["program"]
print(json.dumps({"ok": ok, "warnings": [c for c in caught if "streamrt" in c],
                  "info": {k: info[k] for k in ("persistent", "reason", "directory", "rebuilt",
                                                "new_modules", "disk_modules")},
                  "stats": {k: st[k] for k in ("kernels_compiled", "kernels_loaded_from_disk",
                                               "fallback_to_reference", "disk_cache_rejected",
                                               "kernels_launched")}}))
"""


def _run(cache, umask=None, **env):
    e = child_env(cache, **env)
    e["PYTHONPATH"] = ROOT + (os.pathsep + e["PYTHONPATH"] if e.get("PYTHONPATH") else "")
    pre = (lambda: os.umask(umask)) if umask is not None else None
    p = subprocess.run([sys.executable, "-c", WORK], env=e, capture_output=True, text=True,
                       timeout=300, preexec_fn=pre)
    assert p.returncode == 0, p.stderr[-3000:]
    return json.loads(p.stdout.strip().splitlines()[-1])


def test_unusable_directory_compiles_in_a_private_one(tmp_path):
    f = tmp_path / "a-file"
    f.write_text("")
    out = _run(f / "cache")                     # a path under a regular file
    print(f"\nunusable cache dir: {out['stats']['kernels_compiled']} kernels compiled, "
          f"{len(out['warnings'])} warning; reason: {out['info']['reason']}")
    assert out["ok"]
    assert out["stats"]["kernels_compiled"] >= 3 and out["stats"]["fallback_to_reference"] == 0
    assert len(out["warnings"]) == 1 and "cannot be used" in out["warnings"][0]
    assert out["info"]["persistent"] is False and "NotADirectory" in out["info"]["reason"]
    assert not os.path.exists(os.path.dirname(out["info"]["directory"]))   # deleted at exit


def test_directory_writable_by_others_is_not_trusted(tmp_path):
    d = tmp_path / "shared"
    d.mkdir()
    os.chmod(d, 0o777)
    out = _run(d)
    print(f"\ngroup/world-writable cache dir: replaced ({out['info']['reason']})")
    assert out["ok"] and out["info"]["persistent"] is False
    assert "other users may write it" in out["info"]["reason"]
    assert not os.listdir(d)                    # nothing written there


def _modes(root):
    bad = []
    for folder, dirs, files in os.walk(root):
        for n in dirs:
            m = stat.S_IMODE(os.stat(os.path.join(folder, n)).st_mode)
            if m & 0o077:
                bad.append((os.path.join(folder, n), oct(m)))
        for n in files:
            m = stat.S_IMODE(os.stat(os.path.join(folder, n)).st_mode)
            if m & 0o077:
                bad.append((os.path.join(folder, n), oct(m)))
    return bad


def test_private_modes_whatever_the_umask(tmp_path):
    cache = tmp_path / "c"
    out = _run(cache, umask=0)
    numba = cache / "numba"
    files = sum(len(f) for _, _, f in os.walk(numba))
    bad = _modes(numba) + ([(str(cache), oct(stat.S_IMODE(os.stat(cache).st_mode)))]
                           if stat.S_IMODE(os.stat(cache).st_mode) & 0o077 else [])
    print(f"\numask 000: {files} files under numba/, {len(bad)} readable by others")
    assert out["ok"] and out["info"]["persistent"] is True
    assert files > 0 and bad == []


def _damage(numba, how):
    mods = sorted(p for p in os.listdir(numba) if p.startswith("k_") and p.endswith(".py"))
    assert len(mods) >= 2
    a, b = os.path.join(numba, mods[0]), os.path.join(numba, mods[1])
    if how == "truncated":
        for m in mods:
            p = os.path.join(numba, m)
            with open(p, "r+") as f:
                f.truncate(os.path.getsize(p) // 2)
    elif how == "garbage":
        for m in mods:
            with open(os.path.join(numba, m), "wb") as f:
                f.write(os.urandom(300))
    elif how == "foreign":                      # a valid entry of another kernel
        with open(b) as f:
            text = f.read()
        with open(a, "w") as f:
            f.write(text)
    elif how == "numba-files":                  # Numba's own index and data files
        for folder, _, files in os.walk(os.path.join(numba, "__pycache__")):
            for n in files:
                with open(os.path.join(folder, n), "r+b") as f:
                    f.truncate(7)


@pytest.mark.parametrize("how", ["truncated", "garbage", "foreign", "numba-files"])
def test_damaged_entries_are_rebuilt(tmp_path, how):
    cache = tmp_path / "c"
    first = _run(cache)
    assert first["ok"]
    _damage(cache / "numba", how)
    out = _run(cache)
    print(f"\ndamaged cache ({how}): results exact: {out['ok']}; rebuilt "
          f"{out['info']['rebuilt']}, Numba entries rejected "
          f"{out['stats']['disk_cache_rejected']}, compiled {out['stats']['kernels_compiled']}")
    assert out["ok"]
    assert out["stats"]["fallback_to_reference"] == 0
    if how == "numba-files":
        assert out["stats"]["disk_cache_rejected"] >= 1
    else:
        assert out["info"]["rebuilt"] >= 1


def test_two_processes_fill_one_directory(tmp_path):
    cache = tmp_path / "c"
    e = child_env(cache)
    e["PYTHONPATH"] = ROOT + (os.pathsep + e["PYTHONPATH"] if e.get("PYTHONPATH") else "")
    procs = [subprocess.Popen([sys.executable, "-c", WORK], env=e, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outs = []
    for p in procs:
        o, err = p.communicate(timeout=300)
        assert p.returncode == 0, err[-3000:]
        outs.append(json.loads(o.strip().splitlines()[-1]))
    third = _run(cache)
    print(f"\ntwo processes filling one cache: compiled {[o['stats']['kernels_compiled'] for o in outs]}"
          f"; a third process compiled {third['stats']['kernels_compiled']}, loaded "
          f"{third['stats']['kernels_loaded_from_disk']}")
    assert all(o["ok"] for o in outs) and third["ok"]
    assert third["stats"]["kernels_compiled"] == 0
    assert not [n for n in os.listdir(cache / "numba") if n.endswith(".tmp")]


def test_atomic_write_leaves_nothing_half_written(tmp_path, monkeypatch):
    from streamrt.backends.numba_cpu import program_cache
    target = tmp_path / "k_x.py"
    target.write_text("old")

    def boom(*a):
        raise OSError("disk full")
    monkeypatch.setattr(program_cache.os, "replace", boom)
    with pytest.raises(OSError):
        program_cache._write_atomic(str(target), "new text")
    monkeypatch.undo()
    left = os.listdir(tmp_path)
    print(f"\na failed atomic write leaves {left}")
    assert target.read_text() == "old" and left == ["k_x.py"]
    program_cache._write_atomic(str(target), "new text")
    assert target.read_text() == "new text"
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o600
