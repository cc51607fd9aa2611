"""The OpenCL executor (PoCL in CI) against NumPy: every map op x dtype, every reduction along
each axis of a 3-D array, fusion, transfer counters, fp64 routing, build/launch failures. (The op-table suite of
test_ops.py and the fuzzer of test_fuzz.py are parametrized over the executors themselves.)

Many ops are recorded per flush so that PoCL (which compiles each kernel on its first launch,
0.1-0.5 s) builds few kernels. The backend is chosen per flush with
``ps.config.override(backend="opencl")``."""
from __future__ import annotations

import numpy as np
import pytest
from helpers import DTYPE_IDS, DTYPES, OPENCL, assert_same, data, numpy_supports, op_ulps, ref_call

import streamrt as ps
from streamrt.core import dtypes as D, ops
from streamrt.backends import registry

pytest.importorskip("pyopencl")


pytestmark = pytest.mark.skipif(not OPENCL, reason="no OpenCL device")


@pytest.fixture
def ocl():
    with ps.config.override(backend="opencl"):
        ex = registry.get()
        assert ex.name == "opencl"
        yield ex


def _no_fallbacks(s, splits_ok=False):
    assert (splits_ok or s["kernel_splits"] == 0) and s["fallbacks"] == 0 and \
        s["fallback_to_reference"] == 0 and s["fp64_fallbacks"] == 0, \
        "a kernel did not run on the OpenCL device"


UNARY = [n for n, o in ops.OPS.items() if o.kind == "map" and o.arity == 1 and n != "astype"]
BINARY = [n for n, o in ops.OPS.items() if o.kind == "map" and o.arity == 2]


# ---- every map op x dtype ---------------------------------------------------------------------
@pytest.mark.parametrize("dt", DTYPES, ids=DTYPE_IDS)
def test_map_ops_every_dtype(dt, ocl, stats):
    a, b = data(dt, "a"), data(dt, "b")
    a_nz = a if D.is_float(dt) else np.where(a == 0, 2, a).astype(dt)
    x, y, xnz = ps.asarray(a), ps.asarray(b), ps.asarray(a_nz)
    got = {}
    for name in UNARY:
        src, xs = (a_nz, xnz) if name == "reciprocal" else (a, x)
        if numpy_supports(ops.OPS[name].ref, src):
            got[name] = (getattr(ps, name)(xs), ref_call(ops.OPS[name].ref, src))
    for name in BINARY:
        bb, yy = (np.abs(b), ps.asarray(np.abs(b))) if name == "power" and D.is_int(dt) \
            else (b, y)
        if numpy_supports(ops.OPS[name].ref, a, bb):
            got[name] = (getattr(ps, name)(x, yy), ref_call(ops.OPS[name].ref, a, bb))
    got["where"] = (ps.where(y, x, a[::-1].copy()), np.where(b, a, a[::-1]))
    for to in DTYPES:
        with np.errstate(all="ignore"):
            got[f"astype_{to}"] = (x.astype(to), a.astype(to))
    assert len(got) > 20
    ps.sync()
    for name, (r, ref) in got.items():
        if name.startswith("astype_") and D.is_float(dt) and not D.is_float(ref.dtype) and \
                ref.dtype != np.bool_:
            # float -> int of NaN/inf or of a value out of the integer dtype's range is
            # undefined (C and NumPy)
            info = np.iinfo(ref.dtype)
            with np.errstate(invalid="ignore"):
                fin = np.isfinite(a) & (a > float(info.min) - 1) & (a < float(info.max) + 1)
            r, ref = np.asarray(r)[fin], ref[fin]
        assert_same(r, ref, ulps=op_ulps(name) if name in ops.OPS else 0, what=f"{name}({dt})")
    _no_fallbacks(stats())


def test_mixed_dtypes_and_scalars(ocl, stats):
    got = []
    for i, da in enumerate(DTYPES):
        for db in DTYPES[i + 1:]:
            a, b = data(da, "a"), data(db, "b")
            x, y = ps.asarray(a), ps.asarray(b)
            for name in ("add", "multiply", "divide", "floor_divide", "less_equal", "maximum"):
                fn = ops.OPS[name].ref
                if numpy_supports(fn, a, b):
                    got.append((getattr(ps, name)(x, y), ref_call(fn, a, b), name))
        a = data(da)
        x = ps.asarray(a)
        for s in (True, 3, 2.5):
            for name in ("add", "multiply", "subtract", "less"):
                fn = ops.OPS[name].ref
                if numpy_supports(fn, a, s):
                    got.append((getattr(ps, name)(x, s), ref_call(fn, a, s), name))
    ps.sync()
    for r, ref, name in got:
        assert_same(r, ref, ulps=op_ulps(name), what=name)
    # ~120 outputs in one kernel pass PoCL's 1024-byte argument limit: split, on the device
    _no_fallbacks(stats(), splits_ok=True)


def test_numpy_integer_semantics(ocl, stats):
    """Division/modulo by zero give 0, INT_MIN // -1 wraps, shifts past the width give 0 or
    -1, arithmetic wraps: exactly NumPy's values."""
    got = []
    for dt in (np.int32, np.int64):
        lo = np.iinfo(dt).min
        a = np.array([7, -7, 0, lo, lo, 5, -5, lo, 1, -1, 3, -3], dt)
        b = np.array([0, 0, 0, -1, 1, 3, 3, 2, -3, 70, -2, 64], dt)
        x, y = ps.asarray(a), ps.asarray(b)
        with np.errstate(all="ignore"):
            got += [(x // y, a // b), (x % y, a % b), (x << y, a << b), (x >> y, a >> b),
                    (x + y, a + b), (x * y, a * b), (-x, -a), (abs(x), np.abs(a)),
                    (x - y, a - b), (ps.sign(x), np.sign(a))]
    ps.sync()
    for i, (r, ref) in enumerate(got):
        assert_same(r, ref, what=f"case {i}")
    _no_fallbacks(stats())


def test_float_special_semantics(ocl, stats):
    a = np.array([np.nan, 1.0, -2.5, 2.5, 0.5, -0.5, 1.5, np.inf, -np.inf, 0.0, -0.0, 3.0])
    b = np.array([1.0, np.nan, 2.0, -2.0, np.inf, 0.0, -0.0, 2.0, 3.0, np.nan, 1.0, -4.0])
    for dt in (np.float32, np.float64):
        ad, bd = a.astype(dt), b.astype(dt)
        x, y = ps.asarray(ad), ps.asarray(bd)
        with np.errstate(all="ignore"):
            cases = {"maximum": (ps.maximum(x, y), np.maximum(ad, bd)),
                     "minimum": (ps.minimum(x, y), np.minimum(ad, bd)),
                     "fmax": (ps.fmax(x, y), np.fmax(ad, bd)),
                     "fmin": (ps.fmin(x, y), np.fmin(ad, bd)),
                     "sign": (ps.sign(x), np.sign(ad)), "rint": (ps.rint(x), np.rint(ad)),
                     "floor_divide": (x // y, np.floor_divide(ad, bd)),
                     "remainder": (x % y, np.remainder(ad, bd))}
        ps.sync()
        for name, (r, ref) in cases.items():
            assert_same(r, ref, what=f"{name} {np.dtype(dt)}")
    _no_fallbacks(stats())


# ---- reductions ------------------------------------------------------------------------------
RED = list(ops.REDUCTIONS)


def _red_data(dt, shape, seed=0):
    rng = np.random.default_rng(seed)
    if dt == np.bool_:
        return rng.random(shape) < 0.6
    if D.is_int(dt):
        return rng.integers(-5, 6, shape).astype(dt)
    return rng.uniform(-2, 2, shape).astype(dt)


@pytest.mark.parametrize("dt", DTYPES, ids=DTYPE_IDS)
def test_reductions_every_axis(dt, ocl, stats):
    shape = (5, 6, 7)
    a = _red_data(dt, shape)
    if D.is_float(dt):
        a[1, 2, 3] = a[1, 2, 4] = a.max()     # ties: first index
    x = ps.asarray(a)
    got = []
    for name in RED:
        axes = [None, 0, 1, 2] + ([] if name.startswith("arg") else [(0, 2), (1, 2)])
        for ax in axes:
            fn = getattr(ps, name)
            ref = getattr(np, name)
            if not numpy_supports(ref, a):
                continue
            with np.errstate(all="ignore"):
                want = ref(a, axis=ax)
            want = np.asarray(want)
            got.append((fn(x, axis=ax), want, f"{name}(axis={ax})"))
            if ax == 1:
                got.append((fn(x, axis=ax, keepdims=True), ref(a, axis=ax, keepdims=True),
                            f"{name}(axis=1, keepdims)"))
    ps.sync()
    for r, want, what in got:
        tol = ops.REDUCTIONS[what.split("(")[0]].float_tol
        assert_same(r, np.asarray(want).astype(np.asarray(r).dtype)
                    if np.asarray(want).dtype != np.asarray(r).dtype and what.startswith("mean")
                    else want, atol=1e-5 if tol and r.dtype == np.float32 else 0.0,
                    rtol=1e-5 if tol and r.dtype == np.float32 else
                    (1e-12 if tol else 0.0), what=f"{what} {dt}")
    _no_fallbacks(stats())


def test_large_reductions_use_partials(ocl, stats):
    """Reductions long enough to be cut into chunks (C > 1: partials + the combine kernel),
    with NaN and ties for argmax/argmin."""
    rng = np.random.default_rng(5)
    a = rng.uniform(-1, 1, 300_001)
    a[1000] = a[200_000] = 7.0
    a[5000] = a[250_000] = -7.0
    n = a.copy()
    n[123_456] = np.nan
    n[223_456] = np.nan
    i = rng.integers(-3, 4, 300_001).astype(np.int32)
    x, xn, xi = ps.asarray(a), ps.asarray(n), ps.asarray(i)
    xf = ps.asarray(a.astype(np.float32))
    got = [(ps.sum(x), np.sum(a), 1e-12), (ps.mean(x), np.mean(a), 1e-12),
           (ps.argmax(x), np.argmax(a), 0), (ps.argmin(x), np.argmin(a), 0),
           (ps.max(xn), np.max(n), 0), (ps.argmax(xn), np.argmax(n), 0),
           (ps.argmin(xn), np.argmin(n), 0), (ps.sum(xi), np.sum(i), 0),
           (ps.max(xi), np.max(i), 0), (ps.prod(xi != 5), np.prod(i != 5), 0),
           (ps.sum(xf), np.sum(a.astype(np.float32), dtype=np.float64).astype(np.float32), 1e-6),
           (ps.any(xi > 2), np.any(i > 2), 0), (ps.all(xi > -4), np.all(i > -4), 0)]
    ps.sync()
    for j, (r, want, tol) in enumerate(got):
        assert_same(r, np.asarray(want), rtol=tol, what=f"case {j}")
    _no_fallbacks(stats())


def test_empty_and_tiny(ocl, stats):
    e = ps.asarray(np.zeros((0, 3)))
    t = ps.asarray(np.array([[2.5]], np.float32))
    got = [(e + 1, np.zeros((0, 3)) + 1), (ps.sum(e, axis=0), np.zeros(3)),
           (ps.sum(e, axis=1), np.zeros(0)), (t * 2, np.array([[5.0]], np.float32)),
           (ps.argmax(t), np.int64(0))]
    ps.sync()
    for r, want in got:
        assert_same(r, np.asarray(want))


# ---- fusion, views, intrinsics ----------------------------------------------------------------
def test_fused_chain_is_one_kernel(ocl, stats):
    a = np.linspace(-1, 1, 10_000).astype(np.float32)
    b = np.linspace(0, 2, 10_000).astype(np.float32)
    x, y = ps.asarray(a), ps.asarray(b)
    r = ps.sum(ps.sin(x * 2.0 + 1.0) * y - ps.sqrt(y) / (1.0 + x * x))
    ps.sync()
    assert stats()["kernels_launched"] == 1
    want = np.sum(np.sin(a * 2 + 1) * b - np.sqrt(b) / (1 + a * a), dtype=np.float64)
    assert_same(r, want.astype(np.float32), rtol=1e-5)
    z = ps.exp(-x * x) * y + 3
    ps.sync()
    assert stats()["kernels_launched"] == 2
    assert_same(z, np.exp(-a * a) * b + 3, ulps=4)


def test_views_and_broadcasting(ocl, stats):
    rng = np.random.default_rng(3)
    a = rng.uniform(-2, 2, (6, 5, 4))
    c = rng.uniform(-2, 2, (4,))
    x, z = ps.asarray(a), ps.asarray(c)
    got = [(x.T + 1, a.T + 1), (x[::2, 1:, ::-1] * z[::-1], a[::2, 1:, ::-1] * c[::-1]),
           (ps.sum(x.T, axis=0), np.sum(a.T, axis=0)), (x[2] - z, a[2] - c),
           (ps.max(x[:, ::2], axis=(0, 2)), np.max(a[:, ::2], axis=(0, 2)))]
    ps.sync()
    for i, (r, want) in enumerate(got):
        assert_same(r, want, rtol=1e-12, what=f"case {i}")
    _no_fallbacks(stats())


def test_intrinsics_host_round_trip(ocl, stats):
    a = np.arange(12.0).reshape(3, 4)
    x = ps.asarray(a)
    y = x * 2
    y[1, 2] = -1.0
    m = (y + 1) @ ps.asarray(np.ones((4, 2)))
    w = a * 2
    w[1, 2] = -1.0
    ps.sync()
    assert_same(m, (w + 1) @ np.ones((4, 2)))
    assert_same(y, w)
    assert stats()["host_round_trips"] >= 1


def test_large_async_path(ocl, stats):
    """Big enough to go through the E-Scheduler thread and the executor's worker."""
    a = np.random.default_rng(1).uniform(-1, 1, 1 << 20).astype(np.float32)
    x = ps.asarray(a)
    y = x
    for _ in range(5):
        y = y * 1.5 - 0.25
    s = ps.max(y)
    want = a
    for _ in range(5):
        want = want * np.float32(1.5) - np.float32(0.25)
    assert_same(y, want)
    assert_same(s, want.max())


# ---- data movement ------------------------------------------------------------------------------
def test_transfer_counters(ocl, stats):
    n = 5000
    a = np.arange(n, dtype=np.float64)
    x = ps.asarray(a)
    y = x * x + x                 # x used twice: copied to the device once
    ps.sync()
    s = stats()
    assert s["bytes_to_device"] == a.nbytes
    assert s["bytes_to_host"] == 0
    np.testing.assert_array_equal(np.asarray(y), a * a + a)
    assert stats()["bytes_to_host"] == a.nbytes
    np.testing.assert_array_equal(np.asarray(y), a * a + a)      # second read: no copy
    assert stats()["bytes_to_host"] == a.nbytes
    z = y - x                     # y and x are already on the device
    ps.sync()
    assert stats()["bytes_to_device"] == a.nbytes
    np.testing.assert_array_equal(np.asarray(z), a * a)
    assert stats()["bytes_to_host"] == 2 * a.nbytes


def test_backend_is_read_per_flush(stats):
    a = np.arange(10.0)
    x = ps.asarray(a)
    y = x + 1
    ps.sync()                     # computed on the CPU
    assert registry.get().name == "cpu"
    with ps.config.override(backend="opencl"):
        assert registry.get().name == "opencl"
        z = y * 2                 # CPU result read by an OpenCL kernel
        ps.sync()
        assert stats()["bytes_to_device"] == a.nbytes
    w = z - 1                     # OpenCL result read by a CPU kernel
    np.testing.assert_array_equal(np.asarray(w), (a + 1) * 2 - 1)
    assert stats()["bytes_to_host"] == a.nbytes


# ---- limits and failures ----------------------------------------------------------------------
def test_fp64_program_on_device_without_fp64_runs_on_cpu(ocl, stats, monkeypatch):
    monkeypatch.setattr(ocl, "fp64", False)
    assert ocl.caps["render"].keywords["fp64"] is False
    a = np.linspace(0, 1, 1000)
    x = ps.asarray(a)
    r = ps.sin(x) * 3 + x            # float64: the CPU executor computes it
    ps.sync()
    assert stats()["fp64_fallbacks"] == 1
    assert_same(r, np.sin(a) * 3 + a, ulps=4)
    f = a.astype(np.float32)
    xf = ps.asarray(f)
    s = ps.sum(xf * 2)               # float32 data: stays on the device, float accumulator
    m = xf - 1
    ps.sync()
    assert stats()["fp64_fallbacks"] == 1
    assert_same(s, np.sum(f * 2, dtype=np.float64).astype(np.float32), rtol=1e-5)
    assert_same(m, f - 1)


def test_build_failure_splits_then_falls_back(ocl, stats, monkeypatch):
    real = ocl._build

    def flaky(src):
        if "sin(" in src:
            from streamrt.backends.device import BuildError
            raise BuildError("injected")
        return real(src)

    monkeypatch.setattr(ocl, "_build", flaky)
    a = np.linspace(-1, 1, 999)
    x = ps.asarray(a)
    r = ps.sin(x * 2 + 1) * 3 - x     # the kernel with sin is split, then run on the CPU
    ps.sync()
    s = stats()
    assert s["kernel_splits"] >= 1 and s["fallbacks"] >= 1
    assert_same(r, np.sin(a * 2 + 1) * 3 - a, ulps=4)


def test_launch_failure_falls_back_to_cpu(ocl, stats, monkeypatch):
    def broken(*a, **k):
        raise RuntimeError("injected device failure")

    monkeypatch.setattr(ocl, "_enqueue", broken)
    a = np.arange(100, dtype=np.int64)
    x = ps.asarray(a)
    r = ps.sum(x * 3 - 1)
    q = x % 7
    ps.sync()
    assert stats()["fallbacks"] >= 1
    assert_same(r, np.sum(a * 3 - 1))
    assert_same(q, a % 7)


def test_devices_lists_opencl():
    d = ps.devices()
    assert d[0]["backend"] == "cpu"
    ocl = [e for e in d if e["backend"] == "opencl" and e["available"]]
    assert ocl and ocl[0]["max_work_group_size"] >= 1


def test_every_op_has_a_c_template():
    from streamrt.backends import c_render as render_c
    assert render_c.missing_templates() == []
