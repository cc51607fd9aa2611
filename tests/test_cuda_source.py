"""The generated CUDA C, everywhere: every map op x dtype and every reduction is rendered for
the CUDA dialect; where ``nvcc`` is found (PATH, $NVCC or $CUDA_HOME/bin) each source is
compiled with ``nvcc --ptx`` so syntax and type errors are caught without a GPU. The CUDA
executor's run tests skip unless ``cupy.cuda.is_available()``."""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile

import numpy as np
import pytest
from helpers import (DTYPE_IDS, DTYPES, assert_same, compiler_caps, data, numpy_supports, op_ulps,
                     ref_call)

import streamrt as ps
from streamrt.core import dtypes as D, ops
from streamrt import compiler
from streamrt.backends import c_render as render_c
from streamrt.runtime.workqueue import current_queue

UNARY = [n for n, o in ops.OPS.items() if o.kind == "map" and o.arity == 1 and n != "astype"]
BINARY = [n for n, o in ops.OPS.items() if o.kind == "map" and o.arity == 2]


def _nvcc():
    for c in (os.environ.get("NVCC"), shutil.which("nvcc"),
              os.path.join(os.environ.get("CUDA_HOME", "/usr/local/cuda"), "bin", "nvcc")):
        if c and os.path.isfile(c) and os.access(c, os.X_OK):
            return c
    return None


NVCC = _nvcc()


def _sources(build, renderer="cuda", fusion=True):
    """Record with ``build()`` (on this thread's queue), run ProgGen with ``renderer``, and
    return the programs' sources -- nothing is executed. The queue is emptied."""
    ps.sync()
    with ps.config.override(fusion=fusion):
        keep = build()
        entries = current_queue().take()
        seq = compiler.generate(entries, compiler_caps(renderer, fuse=fusion, max_ops=64))
    del keep
    return [p.source for p in seq.programs if p.kind == "kernel"]


def _nvcc_check(sources):
    """Compile the sources with one ``nvcc --ptx`` run: each goes into its own namespace with
    its kernels renamed (the preludes' macros are identical redefinitions, which C++ allows)."""
    parts = []
    for i, s in enumerate(sources):
        for fn in ("sr_map", "sr_red", "sr_comb"):
            s = s.replace(f"{fn}(", f"{fn}_{i}(")
        parts.append(f"namespace k{i} {{\n{s}\n}}  // namespace k{i}\n")
    with tempfile.TemporaryDirectory() as d:
        f = os.path.join(d, "kernels.cu")
        with open(f, "w") as fh:
            fh.write("\n".join(parts))
        r = subprocess.run([NVCC, "--ptx", "-arch=compute_75", "-o", f[:-3] + ".ptx", f],
                           capture_output=True, text=True, check=False)
        assert r.returncode == 0, f"nvcc rejected the generated CUDA C:\n{r.stderr[:4000]}"


def _map_ops(dt):
    a, b = data(dt, "a"), data(dt, "b")
    x, y = ps.asarray(a), ps.asarray(b)
    out = []
    for name in UNARY:
        if numpy_supports(ops.OPS[name].ref, a):
            out.append(getattr(ps, name)(x))
    for name in BINARY:
        bb, yy = (np.abs(b), ps.asarray(np.abs(b))) if name == "power" and D.is_int(dt) \
            else (b, y)
        if numpy_supports(ops.OPS[name].ref, a, bb):
            out.append(getattr(ps, name)(x, yy))
    out.append(ps.where(y, x, x))
    out.extend(x.astype(t) for t in DTYPES)
    out.append(x + 2)                # a scalar parameter
    return out


@pytest.mark.parametrize("dt", DTYPES, ids=DTYPE_IDS)
def test_cuda_source_every_map_op(dt):
    # one kernel per op (fusion off): every template is compiled on its own
    srcs = _sources(lambda: _map_ops(dt), fusion=False)
    assert len(srcs) > 20
    for s in srcs:
        assert '#define SR_KERNEL extern "C" __global__ void' in s and "SR_KERNEL sr_map(" in s
        assert "__kernel" not in s and "get_global_id" not in s
    # fused into one kernel as well
    fused = _sources(lambda: _map_ops(dt))
    assert 1 <= len(fused) <= 3


@pytest.mark.parametrize("dt", DTYPES, ids=DTYPE_IDS)
def test_cuda_source_every_reduction(dt):
    srcs = _sources(lambda: _reductions(dt))
    assert srcs and all("sr_red(" in s and "sr_comb(" in s for s in srcs)
    assert all("__shared__" in s and "__syncthreads()" in s for s in srcs)


def _reductions(dt):
    x = ps.asarray(np.ones((3, 4, 5), dt))
    out = []
    for name in ops.REDUCTIONS:
        for ax in (None, 0, 1, 2):
            out.append(getattr(ps, name)(x, axis=ax))
        if not name.startswith("arg"):
            out.append(getattr(ps, name)(x, axis=(0, 2)))
    out.append(ps.sum(ps.sqrt(ps.abs(x) + 1.0), axis=1))    # fused producers
    return out


@pytest.mark.skipif(NVCC is None, reason="nvcc is not on this machine")
@pytest.mark.parametrize("dt", DTYPES, ids=DTYPE_IDS)
def test_cuda_sources_compile_with_nvcc(dt):
    """Every map-op template (one kernel each and fused) and every reduction of ``dt`` compiles
    with ``nvcc --ptx``: syntax and type errors are caught without a GPU."""
    _nvcc_check(_sources(lambda: _map_ops(dt), fusion=False) + _sources(lambda: _map_ops(dt))
                + _sources(lambda: _reductions(dt)))


def test_cuda_and_opencl_share_the_body():
    def build():
        x = ps.asarray(np.arange(10.0))
        return [ps.sum(x * 2 // 3), ps.exp(x) % 2]
    cu = _sources(build, "cuda")
    cl = _sources(build, "opencl")
    body = lambda s: s.split("#define SR_NAN_D", 1)[1].split("\n", 1)[1]
    assert len(cu) == len(cl) >= 1
    for a, b in zip(cu, cl):
        assert body(a) == body(b)
    assert "expf" not in "".join(cu) and "exp(" in "".join(cu)       # float64: no f suffix


def test_cuda_float32_math_names():
    def build():
        x = ps.asarray(np.arange(10.0, dtype=np.float32))
        return [ps.exp(x) + ps.arctan2(x, x) + x % 2]
    (src,) = _sources(build, "cuda")
    assert "expf(" in src and "atan2f(" in src and "fmodf(" in src
    (ocl,) = _sources(build, "opencl")
    assert "expf(" not in ocl and "exp(" in ocl


def test_every_op_has_a_c_template():
    assert render_c.missing_templates() == []


def test_launch_specs_respect_limits():
    ps.sync()
    x = ps.asarray(np.ones((3, 100_000)))
    r = ps.sum(x, axis=1)
    seq = compiler.generate(current_queue().take(), compiler_caps("cuda", max_ops=64))
    k = seq.programs[0].kernel
    for max_wg in (1, 7, 64, 1024):
        groups, L, C = render_c.reduce_launch(k, max_wg, 80)
        assert L <= max(1, max_wg) and L <= render_c.LMAX and L & (L - 1) == 0
        assert C >= 1 and groups >= 1
    g, L = render_c.map_launch(k, 1024, 80)
    assert g % L == 0 and L <= 1024
    del r


def _cuda_ok():
    try:
        import cupy
        return bool(cupy.cuda.is_available())
    except Exception:  # noqa: BLE001
        return False


@pytest.mark.skipif(not _cuda_ok(), reason="needs cupy and a CUDA device")
@pytest.mark.parametrize("dt", DTYPES, ids=DTYPE_IDS)
def test_cuda_executor_against_numpy(dt, stats):
    with ps.config.override(backend="cuda"):
        a, b = data(dt, "a"), data(dt, "b")
        x, y = ps.asarray(a), ps.asarray(b)
        got = {}
        for name in UNARY + BINARY:
            args = (a,) if name in UNARY else (a, b)
            xs = (x,) if name in UNARY else (x, y)
            if name == "reciprocal" and not D.is_float(dt):
                continue
            if name == "power" and D.is_int(dt):
                continue
            if numpy_supports(ops.OPS[name].ref, *args):
                got[name] = (getattr(ps, name)(*xs), ref_call(ops.OPS[name].ref, *args))
        r3 = np.asarray(data(dt, "a", 60)).reshape(3, 4, 5)
        x3 = ps.asarray(r3)
        reds = {}
        for name in ("sum", "max", "argmin", "any"):
            for ax in (None, 0, 2):
                if numpy_supports(getattr(np, name), r3):
                    reds[name, ax] = (getattr(ps, name)(x3, axis=ax), getattr(np, name)(r3, axis=ax))
        ps.sync()
        for name, (r, ref) in got.items():
            assert_same(r, ref, ulps=op_ulps(name), what=f"{name}({dt})")
        for (name, ax), (r, ref) in reds.items():
            assert_same(r, np.asarray(ref).astype(np.asarray(r).dtype), rtol=1e-6,
                        what=f"{name}(axis={ax})")
        assert stats()["fallbacks"] == 0


def test_cuda_executor_implements_the_device_primitives():
    """cuda.py supplies every primitive the shared device code (executors/device.py) calls,
    and maps CuPy's out-of-memory error into the spill / retry path (checked with a stand-in
    for cupy: this runs without a GPU)."""
    import contextlib
    from types import SimpleNamespace

    from streamrt.backends.cuda.executor import CUDAExecutor
    from streamrt.backends.device import DeviceExecutor
    prims = [m for m in vars(DeviceExecutor) if m.startswith("_") and not m.startswith("__")]
    for m in ("_dev_alloc", "_h2d", "_d2h", "_build", "_get_function", "_kernel_max_wg", "_enqueue",
              "_wait", "_finish", "_is_oom", "_free_pool"):
        assert m in vars(CUDAExecutor), m
    assert "_is_oom" in prims and "_free_pool" in prims

    class OutOfMemoryError(Exception):
        pass

    freed = []

    class Pool:
        def free_bytes(self):
            return 4096

        def free_all_blocks(self):
            freed.append(True)

    def empty(n, dtype=None):
        raise OutOfMemoryError(f"out of memory allocating {n} bytes")

    ex = object.__new__(CUDAExecutor)
    ex.cp = SimpleNamespace(cuda=SimpleNamespace(memory=SimpleNamespace(
        OutOfMemoryError=OutOfMemoryError)), get_default_memory_pool=Pool, empty=empty,
        uint8="uint8")
    ex.dev = contextlib.nullcontext()
    assert ex._is_oom(OutOfMemoryError()) and ex._is_oom(MemoryError())
    assert not ex._is_oom(ValueError())
    assert ex._free_pool() == 4096 and freed == [True]
    with pytest.raises(MemoryError, match="CUDA allocation of 64 bytes failed"):
        ex._dev_alloc(64)
