"""The reference executor (NumPy, one op at a time: the oracle) and the cpu executor (fused
Numba kernels) give the same results."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest
from helpers import assert_same

import streamrt as ps


def _inputs():
    rng = np.random.default_rng(42)
    a = rng.uniform(-2, 2, (6, 7)).astype(np.float32)
    b = rng.uniform(-2, 2, (7,))
    i = rng.integers(-5, 6, (6, 7)).astype(np.int32)
    m = rng.random((6, 7)) < 0.5
    return a, b, i, m


def _program():
    a, b, i, m = _inputs()
    x, y, k, c = ps.asarray(a), ps.asarray(b), ps.asarray(i), ps.asarray(m)
    t = ps.sin(x) * 2.0 + ps.sqrt(ps.abs(x)) - x / 3.0
    u = ps.where(c, t, y) + k // 3 - k % 4
    z = x.T[::-1] * 1.5
    z[0] = 1.0
    out = {
        "t": t, "u": u, "z": z, "sum": ps.sum(t * t), "mean0": ps.mean(u, axis=0),
        "max1": ps.max(t, axis=1, keepdims=True), "argmin": ps.argmin(u, axis=1),
        "var": ps.var(x, axis=(0, 1)), "any": ps.any(c & (k > 2), axis=0),
        "bool_sin": ps.sin(c.astype(ps.float32)), "int_ops": (k << 2) ^ (k >> 1) | ~k,
        "small_ints": (k.astype(ps.uint8) * 37 + c) // 3 - ps.sum(k.astype(ps.int8) * 50),
        "cmp": (x >= y) != c, "cast": (t * 10).astype(np.int64), "mm": x @ z,
        "dot": ps.dot(y, y), "prod": ps.prod(k[:, :3] + 6, axis=1), "div": k / 2,
    }
    return {n: v.numpy() for n, v in out.items()}


def test_reference_backend_matches_cpu_backend(stats):
    cpu = _program()
    ps.reset_stats()
    with ps.config.override(backend="reference"):
        ref = _program()
        st = stats()
    assert st["kernels_compiled"] == 0 and st["kernels_loaded_from_disk"] == 0
    assert st["kernels_launched"] > 1            # one program per op, no fusion
    assert set(cpu) == set(ref)
    for name in cpu:
        # float32 sin may differ in the last place and t subtracts values of magnitude ~2
        tol = dict(atol=2e-6) if name in ("t", "u", "max1") else \
            dict(ulps=4) if name == "bool_sin" else \
            dict(ulps=8, rtol=1e-6) if name in ("sum", "mean0", "var") else \
            dict(ulps=8, rtol=1e-13) if name == "dot" else {}
        if name == "cast":
            # float -> int truncation of values that differ in the last place may differ
            assert np.abs(cpu[name] - ref[name]).max() <= 1 and cpu[name].dtype == ref[name].dtype
            continue
        assert_same(cpu[name], ref[name], what=name, **tol)
    # and both agree with NumPy (sin of a bool is float16 in NumPy: streamrt refuses it)
    with pytest.raises(ps.DTypeError, match="float16"):
        ps.sin(ps.asarray(np.ones(2, bool)))
    a, _, i, m = _inputs()
    expect_t = np.sin(a) * np.float32(2.0) + np.sqrt(np.abs(a)) - a / np.float32(3.0)
    for name, res in (("cpu", cpu), ("reference", ref)):
        assert_same(res["t"], expect_t, atol=2e-6, what=f"{name} t")
        assert_same(res["bool_sin"], np.sin(m.astype(np.float32)), ulps=4,
                    what=f"{name} sin(bool)")
        assert_same(res["int_ops"], (i << 2) ^ (i >> 1) | ~i, what=f"{name} int ops")
        with np.errstate(all="ignore"):
            want = (i.astype(np.uint8) * 37 + m) // 3 - np.sum(i.astype(np.int8) * 50)
        assert_same(res["small_ints"], want, what=f"{name} small ints")


_CHILD = r"""
import json, numpy as np, streamrt as ps
x = ps.asarray(np.linspace(-1, 1, 11))
y = ps.exp(x) * 2.0 - x
s = ps.sum(y, axis=0)
print(json.dumps({"y": np.asarray(y).tolist(), "s": float(s),
                  "compiled": ps.runtime_stats()["kernels_compiled"],
                  "backend": ps.config.settings.backend}))
"""


def test_streamrt_backend_environment_variable():
    env = dict(os.environ, STREAMRT_BACKEND="reference")
    out = subprocess.run([sys.executable, "-c", _CHILD], env=env, capture_output=True,
                         text=True, timeout=300, check=True)
    r = json.loads(out.stdout.strip().splitlines()[-1])
    assert r["backend"] == "reference" and r["compiled"] == 0
    xs = np.linspace(-1, 1, 11)
    np.testing.assert_allclose(r["y"], np.exp(xs) * 2.0 - xs, rtol=0, atol=0)
    assert r["s"] == pytest.approx(float(np.sum(np.exp(xs) * 2.0 - xs)), rel=1e-15)


def test_program_cache_key_covers_the_helpers_kernels_inline():
    """Generated kernels inline backends/numba_cpu/lib.py: a change there must change the
    program key (else Numba's disk cache would serve kernels compiled with the old helpers)."""
    import hashlib

    from streamrt.core import keys
    from streamrt.backends.numba_cpu import lib
    with open(lib.__file__, "rb") as f:
        digest = hashlib.blake2b(f.read(), digest_size=20).hexdigest()[:12]
    assert f"lib={digest}" in keys.compiler_versions()
