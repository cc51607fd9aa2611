"""Slice assignment, in-place operators, shape operations and array indexing against NumPy:
the same code runs with ``xp = numpy`` and ``xp = streamrt`` (reference and cpu executors)."""
from __future__ import annotations

import inspect
import itertools
import math

import numpy as np
import pytest
from helpers import OPENCL, SMALL_DTYPES, assert_same, small_values

import streamrt as ps

# on OpenCL, region writes, gathers and scatters are host round trips (intrinsics)
BACKENDS = ["cpu", "reference", pytest.param("opencl", marks=pytest.mark.skipif(
    not OPENCL, reason="no OpenCL device"))]


def _line():
    return inspect.currentframe().f_back.f_lineno


def _data():
    rng = np.random.default_rng(5)
    return {"f": rng.uniform(-2, 2, (5, 6)), "i": rng.integers(-9, 10, (5, 6)),
            "b": rng.random((5, 6)) < 0.5, "g": rng.uniform(-1, 1, (5, 6)).astype(np.float32),
            "k": rng.integers(-9, 10, (5, 6)).astype(np.int32)}


def _run(scenario, backend):
    """(streamrt results as NumPy arrays, NumPy results) of ``scenario(xp, inputs)``."""
    d = _data()
    expect = scenario(np, {k: v.copy() for k, v in d.items()})
    with ps.config.override(backend=backend):
        got = scenario(ps, {k: ps.asarray(v) for k, v in d.items()})
        got = [np.asarray(g) if not isinstance(g, (tuple, list)) else tuple(np.asarray(x) for x in g)
               for g in got]
    return got, expect


def _compare(got, expect):
    assert len(got) == len(expect)
    for n, (g, e) in enumerate(zip(got, expect)):
        if isinstance(e, tuple):
            for gg, ee in zip(g, e):
                assert_same(gg, np.asarray(ee), what=f"result {n}")
        else:
            assert_same(g, np.asarray(e), what=f"result {n}", ulps=2)


# ---- assignment ---------------------------------------------------------------------------------
def _assignment(xp, d):
    f, i, b, g, k = d["f"], d["i"], d["b"], d["g"], d["k"]
    out = []
    # in-place operators on arrays and views, NumPy's casting
    f += 1.5
    f[1:-1] *= 2
    v = f[::2, 1:]                       # a view: its writes are seen through f and back
    v -= f[1::2, 1:][:1]                 # broadcast value (1, 5) into (3, 5)
    i += 3
    i //= 2
    i[:, -1] = -7
    k *= 2                               # int32 *= python int stays int32
    k -= i[:, ::-1].astype(xp.int32)
    g += 1                               # float32 stays float32
    g /= f.astype(xp.float32)
    b |= f > 1
    b[0] = True
    out += [f, v, i, k, g, b]
    # overlapping reads and writes: the right side is evaluated fully first
    u = d["f"] * 1.0
    u[1:-1] = 0.5 * (u[:-2] + u[2:])
    u[:, 1:] = u[:, :-1]
    u[::-1] = u                          # reversed self-assignment
    out.append(u)
    # aliases: a view of a view, a transpose, newaxis, negative steps, int from float
    w = xp.zeros((4, 5))
    t = w.T
    r = w[1]
    t[2] = 9.0
    r[::-2] = xp.arange(3)
    w[-1, None, ::2] = 4.5
    c = i.copy()
    c[0, 0] = 7.9                        # float into int truncates (NumPy's setitem cast)
    out += [w, t, r, c]
    return out


@pytest.mark.parametrize("backend", BACKENDS)
def test_assignment_and_inplace_operators_match_numpy(backend):
    _compare(*_run(_assignment, backend))


def _heat(xp, n=24, steps=6):
    u = xp.zeros((n, n))
    u[0, :] = 1.0
    u[:, 0] = 0.5
    for _ in range(steps):
        u[1:-1, 1:-1] = 0.25 * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:])
    return u


def test_jacobi_heat_stencil_2d(stats):
    expect = _heat(np)
    got = _heat(ps)
    assert_same(got, expect, ulps=2)
    st = stats()
    # each step is one fused kernel writing straight into the new buffer, no intrinsics
    assert st["intrinsics_launched"] == 0
    assert st["kernels_launched"] == 6 + 2       # 6 steps and the two edge writes


def test_region_writes_reuse_the_buffer_when_nothing_reads_the_old_value(stats):
    x = ps.asarray(np.arange(1000.0))
    ps.sync()
    ps.reset_stats()
    c = x * 2                 # computed in this flush, held only by c
    c[1:4] *= 3               # reads exactly what it writes: in place
    c[10:20] = 5.0            # nothing else reads c: in place
    xn = np.arange(1000.0) * 2
    xn[1:4] *= 3
    xn[10:20] = 5.0
    assert_same(c, xn)
    st = stats()
    assert st["buffers_allocated"] == 1 and st["kernels_launched"] == 3
    ps.reset_stats()
    u = x * 1.0
    keep = u                  # another holder of the same array sees the write too
    u[1:-1] = 0.5 * (u[:-2] + u[2:])     # reads neighbours: written into a copy
    un = np.arange(1000.0)
    un[1:-1] = 0.5 * (un[:-2] + un[2:])
    assert_same(keep, un)
    assert stats()["buffers_allocated"] == 2


def test_old_values_stay_readable_by_earlier_ops(stats):
    a = ps.asarray(np.arange(6.0))
    s = a * 10                # recorded before the write: reads the old value
    snap = a.copy()
    a[2:4] = -1
    assert_same(s, np.arange(6.0) * 10)
    assert_same(snap, np.arange(6.0))
    assert_same(a, np.array([0, 1, -1, -1, 4, 5.0]))


def test_assignment_errors_name_the_line():
    x = ps.asarray(np.arange(6))
    f = ps.asarray(np.ones((2, 3)))
    with pytest.raises(TypeError) as ei:
        line = _line() + 1
        x += 1.5
    assert f"{__file__}:{line}:" in str(ei.value) and "same_kind" in str(ei.value)
    with pytest.raises(ValueError) as ei:
        line = _line() + 1
        x += ps.ones((2, 6), dtype=np.int64)
    assert f"{__file__}:{line}:" in str(ei.value) and "non-broadcastable" in str(ei.value)
    with pytest.raises(IndexError) as ei:
        line = _line() + 1
        x[6] = 1
    assert f"{__file__}:{line}:" in str(ei.value) and "out of bounds" in str(ei.value)
    with pytest.raises(ValueError) as ei:
        line = _line() + 1
        f[0] = ps.ones(4)
    assert f"{__file__}:{line}:" in str(ei.value) and "broadcast" in str(ei.value)
    with pytest.raises(OverflowError):
        ps.asarray(np.arange(3, dtype=np.int32))[0] = 2 ** 40
    with pytest.raises(IndexError) as ei:
        line = _line() + 1
        x[np.array([0, 9])] = 1
    assert f"{__file__}:{line}:" in str(ei.value)
    with pytest.raises(IndexError):
        x[x > 2, 0]
    with pytest.raises(ValueError) as ei:
        line = _line() + 1
        ps.broadcast_to(x, (2, 6))[0] = 1
    assert f"{__file__}:{line}:" in str(ei.value) and "read-only" in str(ei.value)


# ---- shape operations ---------------------------------------------------------------------------
def _shapes(xp, d):
    f, i, b = d["f"], d["i"], d["b"]
    return [xp.flip(f), xp.flip(i, 1), xp.roll(f, 4), xp.roll(i, -2, axis=1),
            xp.roll(f, (1, 2), axis=(0, 1)), xp.concatenate([f, i]),
            xp.concatenate([i, b], axis=1), xp.stack([f, f], axis=2), xp.hstack([i, i]),
            xp.vstack([f[0], i[1]]), xp.pad(f, 2), xp.pad(i, ((1, 0), (2, 3)), constant_values=4),
            xp.pad(f, 1, mode="edge"), xp.pad(i, (2, 7), mode="wrap"), xp.repeat(i, 2),
            xp.repeat(f, 3, axis=0), xp.repeat(i, [1, 0, 2, 1, 1, 3], axis=1), xp.tile(b, (2, 1)),
            xp.tile(f, 2), xp.diagonal(f, 1), xp.diag(i), xp.diag(f[0], -2), xp.triu(f, 1),
            xp.tril(i), xp.meshgrid(f[0], i[:, 0]), xp.meshgrid(f[0], i[:, 0], indexing="ij"),
            xp.expand_dims(f, (0, 3)), xp.squeeze(f[None, :, None, :1]), f[:, xp.newaxis, 1],
            xp.broadcast_to(i[0], (3, 6)), xp.moveaxis(f[None], 0, -1), xp.swapaxes(f, 0, 1),
            xp.atleast_3d(i[0])]


@pytest.mark.parametrize("backend", BACKENDS)
def test_shape_operations_match_numpy(backend):
    got, expect = _run(_shapes, backend)
    got = [tuple(g) if isinstance(e, (list, tuple)) else g for g, e in zip(got, expect)]
    _compare(got, [tuple(e) if isinstance(e, list) else e for e in expect])


def test_shape_errors_name_the_line():
    f = ps.ones((2, 3))
    with pytest.raises(ValueError) as ei:
        line = _line() + 1
        ps.concatenate([f, ps.ones((2, 4))])
    assert f"{__file__}:{line}:" in str(ei.value) and "dimension 1" in str(ei.value)
    with pytest.raises(np.exceptions.AxisError) as ei:
        line = _line() + 1
        ps.roll(f, 1, axis=2)
    assert f"{__file__}:{line}:" in str(ei.value)
    with pytest.raises(ValueError) as ei:
        ps.stack([f, f.T])


# ---- gathers and scatters -----------------------------------------------------------------------
def _gathers(xp, d):
    f, i, b = d["f"], d["i"], d["b"]
    out = [f[[0, -1, 2]], i[[1, 3], 2:], f[:, [True, False, True, True, False, True]],
           f[b], i[i > 2], f[[0, 1], [5, -6]], xp.take(i, [0, -1, 7]),
           xp.take(f, [3, 0], axis=1), xp.take_along_axis(f, xp.argsort(f, axis=1), axis=1)
           if xp is np else xp.take_along_axis(f, np.argsort(np.asarray(f), axis=1), axis=1),
           xp.nonzero(b), xp.argwhere(i > 5), xp.flatnonzero(b[0]), xp.unique(i),
           xp.unique(b, return_counts=True), xp.count_nonzero(i), xp.where(b[1])]
    g = f.copy()
    g[g < 0] = 0
    g[[0, 1], [2, 3]] = xp.asarray([7.0, 8.0])
    r = g[1:]                            # masked write through a view
    r[r > 1] = -1
    xp.put(i, [0, 5, -1], [9, 8])
    j = i[:, ::2]
    j[b[:, ::2]] = 100                   # boolean mask assignment through a strided view
    out += [g, i]
    return out


@pytest.mark.parametrize("backend", BACKENDS)
def test_gathers_and_scatters_match_numpy(backend):
    _compare(*_run(_gathers, backend))


def test_index_arrays_are_evaluated_the_indexed_array_stays_lazy(stats):
    x = ps.asarray(np.arange(10.0)) * 2.0
    y = x[np.array([1, 3])]              # x is not computed by recording the gather
    assert stats()["kernels_launched"] == 0
    assert_same(y, np.array([2.0, 6.0]))


@pytest.mark.parametrize("shape,mshape", [((40, 30), (40, 30)), ((40, 30), (40,)),
                                          ((6, 7, 5), (6, 7)), ((6, 7, 5), (6,))])
def test_a_boolean_mask_over_the_leading_axes_reads_and_writes_as_numpy(shape, mshape):
    """A lone mask's result shape is counted, not probed (indexing._probe_shape): every
    mask layout NumPy takes, all true and all false included; a mask of another shape raises
    NumPy's IndexError at the line."""
    rng = np.random.default_rng(3)
    a = rng.random(shape)
    for m in (rng.random(mshape) < 0.4, np.ones(mshape, bool), np.zeros(mshape, bool)):
        x = ps.asarray(a.copy())
        assert_same(x[m], a[m])
        assert_same(x[ps.asarray(m)], a[m])
        want = a.copy()
        want[m] = want[m] * 2.0 + 1.0
        x[m] = x[m] * 2.0 + 1.0
        assert_same(x, want)
    bad = np.ones((shape[0] + 1,) + tuple(mshape[1:]), bool)
    with pytest.raises(IndexError) as ei:
        line = _line() + 1
        ps.asarray(a)[bad]
    assert f"{__file__}:{line}:" in str(ei.value)


def test_an_intrinsic_keeps_its_own_result_and_it_is_not_an_input(monkeypatch):
    """A gather's NumPy answer becomes its value (no copy into the buffer it was given:
    backends/base.keeps_answer); the value shares no memory with its input, which a later
    write then does not reach."""
    from streamrt.backends.numba_cpu import executor
    kept, keeps = [], executor.keeps_answer
    monkeypatch.setattr(executor, "keeps_answer",
                        lambda p, r: kept.append(keeps(p, r)) or kept[-1])
    a = np.random.default_rng(4).random((300, 200))
    x = ps.asarray(a.copy())
    y = x[x > 0.5]
    assert_same(y, a[a > 0.5])
    assert True in kept
    x[...] = 0.0
    assert_same(y, a[a > 0.5])


@pytest.mark.parametrize("eager", [0, 1 << 16])
def test_an_element_read_is_a_copy_and_an_ellipsis_read_a_view(eager):
    """NumPy: ``a[1]`` of a 1-D array is a scalar (an in-place op on it leaves ``a`` alone),
    ``a[1, ...]`` a 0-d view (it writes through). Recorded reads (the NumPy tier off, or an
    array not computed yet) keep that: a lazy element was once a 0-d view, and ``t += 5``
    wrote into the array."""
    with ps.config.override(eager_elements=eager):
        a = np.arange(6.0).reshape(2, 3)
        x = ps.asarray(a.copy()) * 1.0          # (not computed yet when eager is 0)
        t = x[1, 2]
        t += 5.0
        u = x[0][1]
        u *= 10.0
        assert_same(x, a)
        assert float(t) == 10.0 and float(u) == 10.0
        v = x[1, ...][2, ...]
        v += 1.0
        w = a.copy()
        w[1, 2] += 1.0
        assert_same(x, w)
        z = ps.asarray(np.float64(3.0))         # a 0-d array: [()] a copy, [...] a view
        c = z[()]
        c += 1.0
        assert float(z) == 3.0
        d = z[...]
        d += 1.0
        assert float(z) == 4.0


@pytest.mark.parametrize("eager", [1 << 16, 3, 0])
def test_random_basic_keys_read_write_and_reduce_as_numpy(eager):
    """Random basic keys (integers, slices with any step, None, Ellipsis) over small arrays
    of six dtypes on the NumPy tier, recorded and mixed: a read then an op, an assignment of
    a broadcast value, an in-place op through what the key gives (a view, or an element's
    copy), a reduction of the view -- NumPy's values."""
    rng = np.random.default_rng(21)
    dts = SMALL_DTYPES

    def val(shape, dt):
        return small_values(rng, shape, dt, exact=True)

    def key_for(shape):
        k = []
        for s in shape:
            r = rng.random()
            if r < 0.2:
                k.append(int(rng.integers(-s, s)))
            elif r < 0.8:
                k.append(slice(int(rng.integers(-s - 1, s + 1)) if rng.random() < 0.7 else None,
                               int(rng.integers(-s - 1, s + 2)) if rng.random() < 0.7 else None,
                               int(rng.choice([1, 1, 2, -1, -2, 3]))))
            else:
                k.append(slice(None))
        if rng.random() < 0.1:
            k.insert(int(rng.integers(0, len(k) + 1)), None)
        if rng.random() < 0.1:
            k[int(rng.integers(0, len(k)))] = Ellipsis
        return tuple(k)

    checked = 0
    with ps.config.override(eager_elements=eager), np.errstate(all="ignore"):
        for it in range(250):
            shape = tuple(int(rng.integers(1, 6)) for _ in range(int(rng.integers(1, 4))))
            dt = dts[it % 6]
            a = val(shape, dt)
            x, w, k = ps.asarray(a.copy()), a.copy(), key_for(shape)
            try:
                ref = w[k]
            except IndexError:
                continue
            kind = it % 4
            if kind == 0:
                got, want = x[k] * 2 + 1, ref * 2 + 1
            elif kind == 1:
                vs = ref.shape[int(rng.integers(0, ref.ndim + 1)):] if ref.ndim else ()
                v = val(tuple(1 if rng.random() < 0.3 else s for s in vs), dt)
                w[k] = v
                x[k] = ps.asarray(v) if it % 8 == 1 else v
                got, want = x, w
            elif kind == 2:
                v = val(np.shape(ref), dt)
                tw, t = w[k], x[k]
                if dt == "bool":
                    tw |= v
                    t |= ps.asarray(v)
                else:
                    tw += v
                    t += ps.asarray(v)
                got, want = x, w
            else:
                name = ["sum", "max", "min", "mean", "prod", "any", "all"][it % 7]
                ax = None if ref.ndim == 0 or rng.random() < 0.4 else \
                    int(rng.integers(-ref.ndim, ref.ndim))
                if name in ("max", "min") and (ref.size == 0 or ax is not None and
                                               ref.shape[ax] == 0):
                    continue
                kd = bool(it % 3 == 0)
                got = getattr(ps, name)(x[k], axis=ax, keepdims=kd)
                want = np.asarray(getattr(np, name)(ref, axis=ax, keepdims=kd))
            assert_same(got, np.asarray(want), rtol=1e-6 if dt == "float32" else 1e-12)
            checked += 1
    assert checked > 180


@pytest.mark.parametrize("shape", [(70_000,), (70_000, 1), (350, 200), (35_000, 2), (6,),
                                   (3, 4), (4, 1), (2, 3, 4), (70, 50, 20)])
def test_a_reshape_is_a_view_exactly_when_numpys_is(shape):
    """Reshapes of strided views (reversed, transposed, sliced, stepped), computed and
    recorded: the values are NumPy's, and a write into the result reaches the array exactly
    when NumPy's reaches it (a view); ``a.real`` of a real array is the array."""
    x = np.arange(math.prod(shape), dtype=np.float64).reshape(shape)
    views = [lambda a: a[::-1], lambda a: a[::2]]
    if x.ndim >= 2:
        views += [lambda a: a.T, lambda a: a[..., 1:], lambda a: a[::2, ::3],
                  lambda a: a[:, :1]]
    for v in views:
        xv = v(x)
        cands = [(-1,), (1, xv.size), (xv.size, 1), (xv.shape[0], -1)]
        if xv.ndim >= 2:
            cands += [xv.shape[::-1], (xv.shape[0] * xv.shape[1],) + xv.shape[2:]]
        for ns, lazy in itertools.product(cands, (False, True)):
            xn = x.copy()
            try:
                want = v(xn).reshape(ns)
            except ValueError:
                continue
            if want.size == 0:
                continue
            a = ps.asarray(x.copy())
            a = a * 1.0 if lazy else a
            got = v(a).reshape(ns)
            np.testing.assert_array_equal(np.asarray(got), want)
            want[(0,) * want.ndim] = -5
            got[(0,) * want.ndim] = -5
            np.testing.assert_array_equal(np.asarray(a), xn, err_msg=f"{ns} {lazy}")
    a = ps.asarray(x.copy())
    r = a.real
    r += 1
    np.testing.assert_array_equal(np.asarray(a), x + 1)
