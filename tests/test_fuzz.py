"""Differential fuzzing: random small programs (DAGs of element-wise ops from the op table over
1-3 inputs with broadcast-compatible shapes, mixed dtypes -- every integer width, signed and
unsigned, with their extreme values, so wrap-around and signed/unsigned promotion are
exercised --, strided/transposed/reversed views,
Python scalars, final reductions along random axes) run with streamrt and with NumPy.

Comparison: dtype and shape exactly; values exactly, except downstream of a transcendental
function (op.float_tol: NumPy and Numba use different libms and may differ in the last
place) and of floating-point reductions (reassociated), which are compared with a tolerance.
So that a last-place difference cannot be amplified into a different branch, values that
carry one are only fed to continuous ops (no comparisons, rounding, domain edges)."""
from __future__ import annotations

import math

import numpy as np
import pytest
from helpers import DTYPES, EXECUTORS, ref_call
from hypothesis import HealthCheck, given, settings, strategies as st

import streamrt as ps
from streamrt.core import dtypes as D, ops

# (random-number ops take no arrays; tests/test_random.py covers them)
MAP_OPS = sorted(n for n, o in ops.OPS.items() if o.kind == "map" and not o.counter
                 and n not in ("astype", "where"))
# ops that are continuous on their whole domain: the only ones fed inexact values
CONTINUOUS = {"add", "subtract", "multiply", "negative", "positive", "absolute", "square",
              "maximum", "minimum", "fmax", "fmin", "sin", "cos", "tanh", "arctan", "arcsinh",
              "exp", "exp2", "expm1", "sinh", "cosh", "cbrt", "hypot"}
REDUCTIONS = ["sum", "prod", "max", "min", "mean", "var", "std", "any", "all", "argmax",
              "argmin"]
CONTINUOUS_REDUCTIONS = {"sum", "prod", "max", "min", "mean", "var", "std"}

MAX_DIM, MAX_NDIM, MAX_STEPS = 5, 3, 6      # program size (bounds the kernels compiled)

FUZZ = settings(max_examples=100, deadline=None, derandomize=True, database=None,
                suppress_health_check=list(HealthCheck), print_blob=True)


class Node:
    # eps: a narrower float dtype whose rounding the values carry (a float32 loop written
    # into a float64 array with out=), or None
    __slots__ = ("eps", "inexact", "np", "ps")

    def __init__(self, p, n, inexact, eps=None):
        self.ps, self.np, self.inexact, self.eps = p, n, inexact, eps


def _eps(*nodes):
    """The narrowest ``eps`` of ``nodes`` (other arguments ignored)."""
    e = [n.eps for n in nodes if isinstance(n, Node) and n.eps is not None]
    return min(e, key=lambda d: d.itemsize) if e else None


def _tol_dtype(node, dt=None):
    """The dtype whose epsilon a comparison of ``node`` (its result dtype ``dt``) allows."""
    dt = node.np.dtype if dt is None else dt
    return node.eps if node.eps is not None and node.eps.itemsize < dt.itemsize else dt


def _values(rng, shape, dt):
    if dt == D.bool_:
        return np.asarray(rng.random(shape) < 0.5)
    if D.is_int(dt):
        v = rng.integers(-6, 7, shape)
        if v.size and rng.random() < 0.5:
            # the dtype's extremes and their neighbours (negative values of an unsigned
            # dtype wrap to its maximum)
            info = np.iinfo(dt)
            edge = np.array([int(info.min), int(info.max), int(info.min) + 1,
                             int(info.max) - 1, 0, -1], dtype=object)
            idx = rng.integers(0, v.size, max(1, v.size // 4))
            v = v.astype(object)
            v.flat[idx] = rng.choice(edge, idx.size)
            span = int(info.max) - int(info.min) + 1
            v = np.vectorize(lambda x: (int(x) - int(info.min)) % span + int(info.min),
                             otypes=[object])(v)
        return np.asarray(v, dtype=dt)
    v = rng.uniform(-3, 3, shape)
    if v.size and rng.random() < 0.5:
        special = np.array([0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 0.5])
        idx = rng.integers(0, v.size, max(1, v.size // 4))
        v.flat[idx] = rng.choice(special, idx.size)
    return np.asarray(v, dtype=dt)


def _make_input(data, rng, full):
    nd = data.draw(st.integers(0, len(full)), label="input ndim")
    shape = tuple(s if data.draw(st.booleans()) else 1 for s in full[len(full) - nd:])
    dt = data.draw(st.sampled_from(DTYPES), label="input dtype")
    layout = data.draw(st.sampled_from(["c", "strided", "transposed", "reversed"]),
                       label="layout")
    if layout == "strided" and nd:
        big = _values(rng, (shape[0] * 2,) + shape[1:], dt)
        return Node(ps.asarray(big)[::2], big[::2], False)
    if layout == "transposed" and nd >= 2:
        t = _values(rng, shape[::-1], dt)
        return Node(ps.asarray(t).T, t.T, False)
    a = _values(rng, shape, dt)
    if layout == "reversed" and nd:
        return Node(ps.asarray(a)[::-1], a[::-1], False)
    return Node(ps.asarray(a), a, False)


def _scalar(data):
    return data.draw(st.sampled_from([2, -3, 0, 1, 2.5, -0.5, True, False]), label="scalar")


def _apply(name, args):
    """Record ``name`` on streamrt and compute NumPy's answer. None if NumPy's result is
    data-dependent or undefined (int ** negative, integer reciprocal of 0, float->int of
    non-finite values); raises AssertionError if only one side rejects the dtypes."""
    op = ops.OPS[name]
    nargs = [a.np if isinstance(a, Node) else a for a in args]
    pargs = [a.ps if isinstance(a, Node) else a for a in args]
    try:
        with np.errstate(all="ignore"):
            r = op.ref(*nargs)
    except TypeError:
        try:
            getattr(ps, name)(*pargs)
        except ps.DTypeError:
            return None
        raise AssertionError(f"NumPy rejects {name} for these dtypes, streamrt does not")
    except ValueError:
        return None               # integers to negative integer powers
    except OverflowError:         # a Python int out of the array dtype's range (-3 + uint8)
        with pytest.raises(ps.StreamrtOverflowError):
            getattr(ps, name)(*pargs)
        return None
    if np.asarray(r).dtype not in D.SUPPORTED_SET:      # float16 (sqrt(int8)): refused
        with pytest.raises(ps.DTypeError):
            getattr(ps, name)(*pargs)
        return None
    if name == "reciprocal" and np.asarray(nargs[0]).dtype.kind in "biu" and \
            (np.asarray(nargs[0]) == 0).any():
        return None
    ref = ref_call(op.ref, *nargs)
    if name == "power" and ref.dtype.kind in "iu" and (np.asarray(nargs[1]) < 0).any():
        return None               # streamrt gives 0 inside a kernel, NumPy raises
    try:
        got = getattr(ps, name)(*pargs)
    except ps.StreamrtOverflowError:
        if name in ops.COMPARISONS:
            return None           # documented: NumPy 2 compares an out-of-range Python int
        raise
    inexact = op.float_tol and ref.dtype.kind == "f" or any(
        isinstance(a, Node) and a.inexact for a in args)
    return Node(got, ref, inexact, _eps(*args))


def _binds(ref, args):
    try:
        with np.errstate(all="ignore"):
            ref(*[a.np for a in args])
        return True
    except (TypeError, ValueError, OverflowError):
        return False


def _pick(data, pool, exact_only):
    cand = [n for n in pool if not (exact_only and n.inexact)]
    if not cand:
        return None
    return cand[data.draw(st.integers(0, len(cand) - 1), label="operand")]


def _out_step(data, pool):
    """``np.<ufunc>(a, b, out=target[, where=mask])``: written into an existing array (and
    every view sharing its memory, on both sides); what was computed from the target before
    keeps the old values."""
    name = data.draw(st.sampled_from([n for n in MAP_OPS if ops.OPS[n].ufunc]), label="out op")
    op = ops.OPS[name]
    args = [_pick(data, pool, name not in CONTINUOUS) for _ in range(op.arity)]
    target = _pick(data, pool, False)
    if any(a is None for a in args) or not target.np.flags.writeable or \
            not isinstance(target.ps, ps.Array):
        return None         # (on the NumPy tier a 0-d result is a NumPy scalar, as in NumPy)
    try:
        shape = np.broadcast_shapes(*[a.np.shape for a in args])
        if np.broadcast_shapes(shape, target.np.shape) != target.np.shape:
            return None
    except ValueError:
        return None
    mask = None
    if data.draw(st.booleans(), label="where mask"):
        mask = np.random.default_rng(len(pool)).random(target.np.shape) < 0.5
    kw = {} if mask is None else {"where": mask}
    uf = getattr(np, op.ufunc, None)
    if uf is None:
        return None                        # (erf: no NumPy ufunc to compare out= with)
    with np.errstate(all="ignore"):
        natural = np.asarray(op.ref(*[a.np for a in args])).dtype \
            if _binds(op.ref, args) else None
    if natural is not None and natural not in D.SUPPORTED_SET:
        with pytest.raises(ps.DTypeError):          # float16 (arccos of bool): refused
            getattr(ps, name)(*[a.ps for a in args], out=target.ps, **kw)
        return None
    before = target.np.copy()
    try:
        with np.errstate(all="ignore"):
            uf(*[a.np for a in args], out=target.np, **kw)
    except (TypeError, ValueError):
        target.np[...] = before            # (NumPy may have written before raising)
        with pytest.raises((TypeError, ValueError)):
            getattr(ps, name)(*[a.ps for a in args], out=target.ps, **kw)
        return None
    if name in ("reciprocal", "power", "floor_divide", "remainder") and \
            before.dtype.kind in "biu":
        target.np[...] = before            # (integer edge cases: see _apply)
        return None
    r = getattr(ps, name)(*[a.ps for a in args], out=target.ps, **kw)
    assert r is target.ps
    target.inexact = target.inexact or op.float_tol or any(a.inexact for a in args)
    # NumPy runs the inputs' loop and casts: a float32 loop's rounding in a float64 target
    loop = natural if natural is not None and natural.kind == "f" else None
    target.eps = _eps(target, *args, *([Node(None, None, False, loop)] if loop else []))
    return None


def _read_step(data, pool):
    """A read in the middle of the program: a read-only view of the computed buffer (a write
    through it must fail, not change earlier work); ``np.array`` gives a writable copy whose
    writes change nothing."""
    n = _pick(data, pool, False)
    if not isinstance(n.ps, ps.Array):
        return None         # (a NumPy scalar: the NumPy tier's 0-d result, as in NumPy)
    v = np.asarray(n.ps)
    assert not v.flags.writeable
    if v.size:
        with pytest.raises(ValueError):
            v[(0,) * v.ndim] = 0
        c = np.array(n.ps)
        assert c.flags.writeable
        c[(0,) * c.ndim] = 1
    rtol, atol = (_tolerance(_tol_dtype(n), 1.0 + float(np.max(np.abs(
        n.np[np.isfinite(n.np)]), initial=0.0))) if n.inexact and n.np.dtype.kind == "f"
        else (0.0, 0.0))
    _compare(v, n.np, "a read in the middle", rtol, atol)
    return None


def _step(data, rng, pool):
    kind = data.draw(st.sampled_from(["map"] * 8 + ["where", "astype", "view", "out", "read"]),
                     label="step")
    if kind == "out":
        return _out_step(data, pool)
    if kind == "read":
        return _read_step(data, pool)
    if kind == "view":
        n = _pick(data, pool, False)
        if not n.np.ndim:
            return None
        ax = data.draw(st.integers(0, n.np.ndim - 1), label="reversed axis")
        key = tuple(slice(None, None, -1) if i == ax else slice(None) for i in range(n.np.ndim))
        return Node(n.ps[key], n.np[key], n.inexact, n.eps)
    if kind == "astype":
        n = _pick(data, pool, True)
        if n is None:
            return None     # (every node inexact: nothing exact to convert)
        dt = data.draw(st.sampled_from(DTYPES), label="astype dtype")
        a = n.np
        if a.dtype.kind == "f" and dt.kind in "iu":
            info = np.iinfo(dt)
            with np.errstate(invalid="ignore"):
                if not (np.isfinite(a) & (a > float(info.min) - 1)
                        & (a < float(info.max) + 1)).all():
                    return None   # float -> int of NaN/inf/out of range: undefined
        return Node(n.ps.astype(dt), a.astype(dt), False)
    if kind == "where":
        c = _pick(data, pool, True)
        if c is None:
            return None     # (every node inexact: no exact condition)
        x, y = _pick(data, pool, False), _pick(data, pool, False)
        if data.draw(st.booleans(), label="scalar branch"):
            y = _scalar(data)
        try:
            np.broadcast_shapes(c.np.shape, x.np.shape, np.shape(y))
        except ValueError:
            return None
        ref = ref_call(np.where, c.np, x.np, y.np if isinstance(y, Node) else y)
        if ref.dtype not in D.SUPPORTED_SET:
            return None
        inexact = x.inexact or (isinstance(y, Node) and y.inexact)
        try:
            got = ps.where(c.ps, x.ps, y.ps if isinstance(y, Node) else y)
        except ps.StreamrtOverflowError:
            # np.where wraps a Python int out of the array's range (-3 into uint8: 253);
            # streamrt raises instead
            assert isinstance(y, int) and not isinstance(y, bool)
            return None
        return Node(got, ref, inexact, _eps(x, y))
    name = data.draw(st.sampled_from(MAP_OPS), label="op")
    op = ops.OPS[name]
    exact_only = name not in CONTINUOUS
    args = [_pick(data, pool, exact_only) for _ in range(op.arity)]
    if any(a is None for a in args):
        return None
    if op.arity == 2 and data.draw(st.integers(0, 3), label="scalar operand") == 0:
        args[data.draw(st.integers(0, 1))] = _scalar(data)
    return _apply(name, args)


def _reduce(data, node):
    nd = node.np.ndim
    cand = [r for r in REDUCTIONS if not (node.inexact and r not in CONTINUOUS_REDUCTIONS)]
    name = data.draw(st.sampled_from(cand), label="reduction")
    axis = data.draw(st.one_of(st.none(), st.integers(-nd, nd - 1) if nd else st.none(),
                               st.lists(st.integers(0, nd - 1), min_size=1, max_size=nd,
                                        unique=True).map(tuple) if nd else st.none()),
                     label="axis")
    if name in ("argmax", "argmin") and isinstance(axis, tuple):
        axis = axis[0]
    if name in ("argmax", "argmin") and node.np.size == 0:
        return None
    kd = data.draw(st.booleans(), label="keepdims")
    a = node.np
    kw = {}
    # NumPy's reduction keywords: a where= mask (max/min need initial= with it), initial=
    if name not in ("argmax", "argmin") and data.draw(st.booleans(), label="where="):
        kw["where"] = np.random.default_rng(a.size).random(a.shape) < 0.6
    if name in ("sum", "prod", "max", "min") and (
            data.draw(st.booleans(), label="initial=") or
            ("where" in kw and name in ("max", "min"))):
        kw["initial"] = data.draw(st.sampled_from([0, 1, -2, 3]), label="initial")
    if name in ("max", "min") and a.size == 0 and "initial" not in kw:
        return None
    try:
        with np.errstate(all="ignore"):
            if name in ("sum", "mean", "var", "std") and a.dtype == np.float32:
                ref = getattr(np, name)(a.astype(np.float64), axis=axis, keepdims=kd, **kw)
                ref = np.asarray(ref).astype(np.float32)
            else:
                ref = np.asarray(getattr(np, name)(a, axis=axis, keepdims=kd, **kw))
    except (OverflowError, ValueError, TypeError):
        # NumPy refuses (initial=-2 for an unsigned dtype): so must streamrt
        with pytest.raises((OverflowError, ValueError, TypeError)):
            np.asarray(getattr(ps, name)(node.ps, axis=axis, keepdims=kd, **kw))
        return None
    got = getattr(ps, name)(node.ps, axis=axis, keepdims=kd, **kw)
    n_red = a.size if axis is None else math.prod(
        a.shape[i] for i in (axis if isinstance(axis, tuple) else (axis,)))
    return name, got, ref, n_red


def _tolerance(ref_dt, scale, n=1, inexact=True):
    eps = float(np.finfo(ref_dt).eps)
    rtol = (64 * eps if inexact else 0.0) + 4 * n * eps
    return rtol, rtol * scale


def _compare(got, ref, what, rtol=0.0, atol=0.0):
    g = np.asarray(got)
    assert g.dtype == ref.dtype, f"{what}: dtype {g.dtype}, NumPy {ref.dtype}"
    assert g.shape == ref.shape, f"{what}: shape {g.shape}, NumPy {ref.shape}"
    if ref.dtype.kind == "f" and (rtol or atol):
        np.testing.assert_allclose(g, ref, rtol=rtol, atol=atol, equal_nan=True, err_msg=what)
    else:
        np.testing.assert_array_equal(g, ref, err_msg=what)     # NaNs compare equal


@pytest.fixture(params=EXECUTORS, scope="module")
def executor(request):
    """The executor the random programs run on: the Numba CPU, and OpenCL where a device
    works (PoCL in CI). Selected per flush with ``ps.config.override(backend=...)``."""
    return request.param


@FUZZ
@given(st.data())
def test_random_programs_match_numpy(executor, data):
    with ps.config.override(backend=executor):
        from streamrt.backends import registry
        assert registry.get().name == executor
        before = ps.runtime_stats()
        _random_program(data, sight=executor == "cpu")
        after = ps.runtime_stats()
    for k in ("fallbacks", "fp64_fallbacks", "fallback_to_reference"):
        assert after[k] == before[k], f"{k}: a program did not run on {executor}"


# Larger arrays: the parallel kernel variants, reductions cut into chunks (partials + a
# combine), work-groups of several sizes on OpenCL. Fewer examples: each builds new kernels.
LARGE_DIMS = st.sampled_from([1, 2, 7, 64, 257, 1000, 4099])
LARGE_MAX_ELEMENTS = 300_000
FUZZ_LARGE = settings(FUZZ, max_examples=20)


@FUZZ_LARGE
@given(st.data())
def test_random_programs_on_large_arrays_match_numpy(executor, data):
    with ps.config.override(backend=executor):
        before = ps.runtime_stats()
        _random_program(data, LARGE_DIMS, max_elements=LARGE_MAX_ELEMENTS,
                        sight=executor == "cpu")
        after = ps.runtime_stats()
    for k in ("fallbacks", "fp64_fallbacks", "fallback_to_reference"):
        assert after[k] == before[k], f"{k}: a program did not run on {executor}"


def _random_program(data, dims=st.integers(1, MAX_DIM), max_elements=None, sight=False):
    # the tiers: everything recorded (0), everything small on the NumPy tier, or a limit in
    # between so that computed and recorded arrays meet (the switch points)
    lim = data.draw(st.sampled_from([0, 3, 16, 1 << 16]), label="eager limit")
    kw = {}
    # ... and, on the CPU, kernels not compiled and every trace's first read a first sight:
    # its ops run through NumPy without ProgGen (runtime/cscheduler.py _first_sight)
    if sight and data.draw(st.booleans(), label="first sights"):
        from streamrt.runtime import trace_cache
        trace_cache.get().forget_sights()
        kw["jit"] = "off"
    with ps.config.override(eager_elements=lim, **kw):
        _program(data, dims, max_elements)


def _program(data, dims, max_elements):
    seed = data.draw(st.integers(0, 2 ** 32 - 1), label="seed")
    rng = np.random.default_rng(seed)
    full = tuple(data.draw(st.lists(dims, min_size=0, max_size=MAX_NDIM), label="shape"))
    while max_elements is not None and math.prod(full) > max_elements:
        full = full[1:]
    pool = [_make_input(data, rng, full) for _ in range(data.draw(st.integers(1, 3)))]
    n_steps = data.draw(st.integers(1, MAX_STEPS), label="steps")
    for _ in range(n_steps):
        node = _step(data, rng, pool)
        if node is not None:
            pool.append(node)
    scale = 1.0 + max((float(np.max(np.abs(n.np[np.isfinite(n.np)]), initial=0.0))
                       for n in pool if n.np.dtype.kind == "f"), default=0.0)
    # outputs: the last node, a random other one, and up to two reductions
    outputs = [("last", pool[-1])]
    if len(pool) > 1 and data.draw(st.booleans(), label="second output"):
        outputs.append(("other", pool[data.draw(st.integers(0, len(pool) - 2))]))
    reductions = []
    for _ in range(data.draw(st.integers(0, 2), label="reductions")):
        node = pool[data.draw(st.integers(0, len(pool) - 1), label="reduced node")]
        r = _reduce(data, node)
        if r is not None:
            reductions.append(r + (node,))
    # release every intermediate that is not read: fusion keeps them in registers
    keep = {id(n) for _, n in outputs}
    for n in pool:
        if id(n) not in keep:
            n.ps = None
    ps.sync()
    for what, node in outputs:
        rtol, atol = (_tolerance(_tol_dtype(node), scale) if node.inexact and
                      node.np.dtype.kind == "f" else (0.0, 0.0))
        _compare(node.ps, node.np, what, rtol, atol)
    for name, got, ref, n_red, node in reductions:
        rtol = atol = 0.0
        if ref.dtype.kind == "f" and (node.np.dtype.kind == "f" or name in ("mean", "var",
                                                                            "std")):
            if name in ("max", "min") and not node.inexact:
                pass                                  # exact: a selection, not arithmetic
            else:
                sc = scale
                if node.np.dtype.kind in "iu" and node.np.size:
                    # a float64 sum of integers as large as 2**63 rounds (and cancels)
                    sc = max(sc, 1.0 + float(np.max(np.abs(node.np.astype(np.float64)))))
                sc = sc ** 2 if name == "var" else sc
                if name == "prod":
                    sc = 0.0
                rtol, atol = _tolerance(_tol_dtype(node, ref.dtype), sc, max(n_red, 1),
                                        node.inexact)
                if name == "prod":
                    rtol *= 4
                atol = max(atol, rtol * 1e-300)
        _compare(got, ref, f"{name}", rtol, atol)
