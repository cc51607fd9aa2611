"""The Array: overloaded operators and NumPy protocols that record IR ports instead of computing.
Validation happens here, at record time, and errors name the user's file and line."""
from __future__ import annotations

import functools
import inspect
import math
import sys
import warnings
from sys import _getframe

import numpy as np

from ..core import dtypes as D, fpe as _fpe, hooks, stats
from ..core.config import settings
from ..core.ops import (COMPARISONS, OPS, REDUCTIONS, UFUNC_TO_OP, loop_operands, map_dtypes,
                        reduction_dtypes, signed_vs_uint64)
from ..core.ir import DONE, Port, c_strides, strided
from ..core.errors import (_INTERNAL, AbortError, ArgumentError, DTypeError,
                           FallbackError, NotLazyError, ShapeError, StreamrtAxisError,
                           StreamrtError, StreamrtIndexError, StreamrtOverflowError, callsite,
                           record_error, site_at)
from ..backends.base import ref_value, run_refop
from ..runtime import cscheduler, products as _products, tiers as _tiers
from ..runtime.workqueue import current_queue, _local as _tls
from . import indexing as _indexing, native as _native, pieces as _pieces
from .indexing import register as _register
from .pieces import PIECEWISE
_PIECEWISE_DATA = PIECEWISE.data        # (a dict: cheaper to test than the WeakKeyDictionary)


# ---- recording helpers --------------------------------------------------------------------
def _foreign_inputs(port, q):
    """Inputs recorded by another thread and not yet scheduled are submitted now, from their
    own queue, so this thread's program sees them as computed (or in-flight) buffers."""
    for inp in port.inputs:
        base = inp.inputs[0] if inp.kind == "view" else inp
        if base.state == 0 and base.queue is not None and base.queue is not q:
            cscheduler.flush(base.queue, reason="cross-thread")


def _eager(port):
    """The NumPy tier (scheduler/tiers.py): a small op over computed host buffers runs now,
    through NumPy (its reference definition), and its Array is computed. None: record it.
    At a line whose ops ended in a write run at once (CallSite.now), an element-wise op up
    to that statement's size runs now too (the C path's ``now_limit``)."""
    lim = settings.eager_elements
    if lim and port.kind == "map" and getattr(port.site, "now", False):
        lim = max(lim, cscheduler.WRITE_NOW_ELEMENTS)
    if port.size >= lim or hooks.on_record is not None:
        return None
    args = []
    for i in port.inputs:
        if i.kind == "scalar":
            args.append(i)
            continue
        if i.size >= lim:
            return None
        v = _tiers.concrete(i)
        if v is None:
            return None
    q = _tls.q
    if q is not None and q.recording is not None:
        return None
    # NumPy's floating-point warnings, at the user's line, as the error state asks now
    r = _fpe.run(_fp_name(port), run_refop, port, ref_value, False)
    for i in port.inputs:           # (a copy's NumPy answer can be its input itself)
        if i.kind != "scalar" and np.may_share_memory(r, _tiers.concrete(i)):
            r = r.copy()
            break
    _tiers.note_eager()
    return eager_array(own_buffer(r))


def _fp_name(port):
    """The name NumPy's floating-point warnings give for ``port``'s op ("divide by zero
    encountered in log"; a reduction's: "... in reduce")."""
    if port.kind == "map":
        op = OPS.get(port.op)
        return (op.ufunc if op is not None and op.ufunc else None) or port.op
    return "reduce" if port.kind == "reduce" else port.op


def _enqueue(port):
    r = _eager(port)
    if r is not None:
        return r
    if _PIECEWISE_DATA and port.kind == "map":
        # an input is a rolled array (frontend/pieces.py)
        r = _pieces.lower(port, _tls.temps)
        if r is not None:
            return r
    return _enqueue_plain(port)


def _enqueue_plain(port):
    q = _tls.q
    if q is None:
        q = current_queue()
    for inp in port.inputs:
        iq = inp.queue
        if iq is not q and iq is not None:      # recorded by another thread (rare)
            _foreign_inputs(port, q)
            break
    port.queue = q
    _tiers.capture(port, q)
    n = q.pending_computes
    if n >= settings.queue_threshold and q.recording is None:
        # Past the threshold, flush where a new loop iteration starts (this op's call site is
        # the one the queued trace began with), so successive flushes hold whole iterations
        # and their trace keys repeat; a hard limit at twice the threshold.
        first = q.entries[0][1].site if q.entries and q.entries[0][0] == "compute" else None
        if n >= 2 * settings.queue_threshold or (
                first is not None and first.code is port.site.code
                and first.lasti == port.site.lasti):
            cscheduler.flush(q, reason="threshold")
    q.compute(port)
    return _wrap(port)


def canonical_dtype(dtype, site):
    """D.canonical, with an unsupported dtype reported as a DTypeError at the user's line."""
    try:
        return D.canonical(dtype)
    except TypeError as e:
        raise record_error(DTypeError, str(e), site) from None


def host_copy(data, site, dtype=None):
    """A C-ordered copy of array-like ``data`` in its own dtype or ``dtype`` (NumPy's
    conversion: a Python int that does not fit ``dtype`` raises, at the user's line); a dtype
    streamrt does not compute in raises DTypeError, it is never replaced by another."""
    try:
        if dtype is None:
            a = np.asarray(data)
            return np.array(a, dtype=canonical_dtype(a.dtype, site), order="C", copy=True)
        dt = canonical_dtype(dtype, site)
        return np.array(data, dtype=dt, order="C", copy=True)
    except OverflowError as e:
        raise record_error(StreamrtOverflowError, str(e), site) from None
    except (ValueError, TypeError, MemoryError) as e:       # a ragged list, a bad value
        if isinstance(e, StreamrtError):
            raise
        raise record_error(type(e) if type(e).__module__ == "builtins" else ValueError,
                           str(e), site) from None


def const_port(data, site=None, dtype=None):
    """A port holding host data (copied: later changes to ``data`` do not leak in)."""
    arr = host_copy(data, site, dtype)
    p = Port("const", "const", arr.dtype, arr.shape, value=arr, site=site)
    stats.add("bytes_allocated", arr.nbytes)
    return p


def scalar_const(p, site):
    """Scalar port ``p`` as a 0-d constant: a NumPy scalar keeps its dtype (it is strong),
    a Python number takes NumPy's default for its kind."""
    strong = p.params[0] == "strong"
    return const_port(np.asarray(p.scalar, dtype=p.dtype if strong else None), site)


def _scalar_port(v, site):
    if isinstance(v, np.generic):
        dt = canonical_dtype(v.dtype, site)
        return Port("scalar", "scalar", dt, (), params=("strong",), scalar=v.item(), site=site)
    k = D.scalar_kind(v)
    return Port("scalar", "scalar", D.default_dtype(k), (), params=("weak", k), scalar=v,
                site=site)


def operand(x, site):
    """An op argument as a port: Arrays as they are, Python/NumPy scalars as kernel
    parameters, anything array-like as a constant."""
    if isinstance(x, Array):
        return x._port
    if isinstance(x, (bool, int, float, complex, np.bool_, np.integer, np.floating,
                      np.complexfloating)):
        return _scalar_port(x, site)
    if isinstance(x, (np.ndarray, list, tuple)):
        return const_port(x, site)
    raise record_error(ArgumentError, f"cannot use an object of type {type(x).__name__} as an "
                       "array operand", site)


def _kinds(ports):
    out = []
    for p in ports:
        if p.kind == "scalar" and p.params[0] == "weak":
            out.append(p.params[1])
        else:
            out.append(p.dtype)
    return out


_BCAST: dict = {}


def _broadcast(shapes):
    """np.broadcast_shapes, memoised (raises ValueError)."""
    if len(shapes) == 1:
        return shapes[0]
    if len(shapes) == 2 and shapes[0] == shapes[1]:
        return shapes[0]
    r = _BCAST.get(shapes)
    if r is None:
        r = tuple(np.broadcast_shapes(*shapes)) if shapes else ()
        if len(_BCAST) > 4096:
            _BCAST.clear()
        _BCAST[shapes] = r
    return r


def record_map(name, *args, site=None):
    op = OPS[name]
    site = site or callsite()
    if len(args) != op.arity:
        raise record_error(ArgumentError, f"{name}() takes {op.arity} array arguments, "
                           f"got {len(args)}", site)
    ports = [operand(a, site) for a in args]
    kinds = _kinds(ports)
    try:
        out_dt, loop_dt = map_dtypes(op, kinds)
    except TypeError as e:
        tys = ", ".join(str(k) if isinstance(k, np.dtype) else f"python {dict(b='bool', i='int', f='float', c='complex')[k]}"
                        for k in kinds)
        if isinstance(e, D.UnsupportedDType):     # NumPy's result dtype (float16): no kernel
            raise record_error(DTypeError, f"{name}({tys}) gives a dtype streamrt does not "
                               f"compute in: {e}", site) from None
        raise record_error(DTypeError, f"{name} is not defined for ({tys}): {e}", site) from None
    if signed_vs_uint64(name, kinds):
        return _compare_signed_u64(name, ports, site)
    shapes = tuple([p.shape for p in ports if p.kind != "scalar"])
    try:
        shape = _broadcast(shapes)
    except ValueError:
        raise record_error(ShapeError, f"{name}: operands could not be broadcast together with "
                           f"shapes {' '.join(str(tuple(s)) for s in shapes)}", site) from None
    want = loop_operands(name, loop_dt, op.arity)
    for k, (p, w) in enumerate(zip(ports, want)):
        if p.kind == "scalar":
            if op.truth and p.params[0] == "weak" and p.params[1] in ("f", "c"):
                # only its truth counts (NumPy takes the bool loop for a Python float):
                # 1e-300 stays true where the array's float32 would make it 0
                p.scalar = 1.0 if p.scalar != 0 else 0.0
            if p.params[0] == "weak" and p.params[1] == "i" and D.is_int(w):
                info = np.iinfo(w)
                if not info.min <= p.scalar <= info.max:
                    if op.truth and -2 ** 63 <= p.scalar < 2 ** 63:
                        p.scalar = int(p.scalar != 0)
                        p.dtype = w
                        continue
                    if name in COMPARISONS:
                        return _compare_out_of_range(name, k, p.scalar > info.max, shape, site)
                    raise record_error(StreamrtOverflowError, f"Python integer {p.scalar} out of "
                                       f"bounds for {w}", site)
            p.dtype = w
    if name == "power" and D.is_int(loop_dt) and ports[1].kind in ("scalar", "const") \
            and ports[1].size == 1 and ports[1].shape == ():
        e = ref_value(ports[1]) if ports[1].kind == "scalar" else ports[1].value
        if int(np.asarray(e)) < 0:
            raise record_error(ValueError, "Integers to negative integer powers are not "
                               "allowed.", site)
    if name == "power" and ports[0].kind != "scalar" and ports[1].kind == "scalar" and \
            ports[1].params[0] == "weak" and ports[1].scalar in _STRENGTH:
        r = _strength_reduced(ports[0], ports[1].scalar, out_dt, loop_dt, site)
        if r is not None:
            return r
    if all(p.kind in ("scalar", "const") and p.size == 1 and p.shape == () for p in ports):
        # constant folding: every operand is a known scalar
        with np.errstate(all="ignore"):
            vals = [ref_value(p) if p.kind == "scalar" else p.value.astype(w, copy=False)
                    for p, w in zip(ports, want)]
            r = op.ref(*vals) if name != "astype" else vals[0]
        return Array._wrap(const_port(np.asarray(r, dtype=out_dt), site))
    port = Port("map", name, out_dt, shape, tuple(ports), (), site, loop_dtype=loop_dt)
    return _enqueue(port)


# Strength reduction of ``x ** c`` for a Python scalar c: the exponent's value chooses the op
# (and so enters the trace key) only for these; any other exponent is a kernel parameter.
# 2, 0.5 and -1 are NumPy's own fast paths (the same results); 3 is x*x*x (within the ulp
# tolerance of power).
_STRENGTH = {2: "square", 0.5: "sqrt", -1: "reciprocal", 3: "cube"}
# NumPy's own fast paths, by exponent and its Python type: the only ones taken for a complex
# array (NumPy's operator computes ``z ** 2.0`` and ``z ** 3`` by power)
_COMPLEX_FAST = {(2, int), (-1, int), (0.5, float)}


def _strength_reduced(x, c, out_dt, loop_dt, site):
    """``x ** c`` as square / sqrt / reciprocal / x*x*x in ``loop_dt``, or None when that
    would not give ``out_dt`` (or c is -1 on integers, which NumPy refuses)."""
    name = _STRENGTH[c]
    if c == -1 and not D.is_float(loop_dt) and loop_dt.kind != "c":
        return None
    if type(c) is bool:
        return None
    if loop_dt.kind == "c" and (c, type(c)) not in _COMPLEX_FAST:
        return None     # (power: its values at infinities differ from square's, x*x*x's)
    if x.dtype == D.bool_ and c == 2 and type(c) is int:
        return record_map("square", _wrap(x), site=site)     # (int8, as NumPy's operator)
    a = _wrap(x) if x.dtype == loop_dt else astype(_wrap(x), loop_dt, site=site)
    if name == "cube":
        if map_dtypes(OPS["multiply"], [loop_dt, loop_dt])[0] != out_dt:
            return None
        return record_map("multiply", record_map("square", a, site=site), a, site=site)
    if map_dtypes(OPS[name], [loop_dt])[0] != out_dt:
        return None
    return record_map(name, a, site=site)


def _compare_signed_u64(name, ports, site):
    """Comparison ``name`` of a signed integer and a uint64 operand, exact as NumPy's (not in
    their common dtype float64): where the signed value is negative the answer is known
    (less/less_equal/not_equal true with it on the left, greater/greater_equal/not_equal
    with it on the right); elsewhere it compares as uint64. Four ops, fused."""
    args = [p.dtype.type(p.scalar) if p.kind == "scalar" else _wrap(p) for p in ports]
    left = ports[0].dtype.kind == "i"
    s = args[0 if left else 1]
    su = astype(s, D.uint64, site=site)
    cmp = record_map(name, su, args[1], site=site) if left else \
        record_map(name, args[0], su, site=site)
    if name in (("less", "less_equal", "not_equal") if left else
                ("greater", "greater_equal", "not_equal")):
        return record_map("bitwise_or", record_map("less", s, 0, site=site), cmp, site=site)
    return record_map("bitwise_and", record_map("greater_equal", s, 0, site=site), cmp,
                      site=site)


def _compare_out_of_range(name, k, above, shape, site):
    """Comparison ``name`` of an integer array with a Python int outside its dtype's range
    (operand ``k``; ``above``: beyond its largest value): NumPy 2 answers it exactly -- the
    same for every element (``uint8_array < -3``: all False) -- where any other op raises."""
    if name in ("equal", "not_equal"):
        val = name == "not_equal"
    else:
        less = name in ("less", "less_equal")
        val = above if less == (k == 1) else not above
    return Array._wrap(const_port(np.full(shape, val, dtype=bool), site))


_UFAST: dict = {}      # (op, operand dtype) -> (out, loop dtypes), filled by record_map


def record_unary(name, x, site):
    """record_map for one operand: an Array (not a 0-d constant, which record_map folds) of a
    dtype seen before takes the memoised path -- no operand conversion, broadcast or dtype
    resolution -- to the same port record_map builds."""
    if type(x) is Array:
        p = x._port
        if p.kind != "const" or p.shape:
            key = (name, p.dtype)
            dts = _UFAST.get(key)
            if dts is not None:
                return _enqueue(Port("map", name, dts[0], p.shape, (p,), (), site,
                                     loop_dtype=dts[1]))
            r = record_map(name, x, site=site)
            # (from the dtype rule, not the result: an op over a rolled array returns the
            # assembled array of its pieces, frontend/pieces.py)
            _UFAST[key] = map_dtypes(OPS[name], [p.dtype])
            return r
    return record_map(name, x, site=site)


def astype(x, dtype, site=None):
    site = site or callsite()
    dt = canonical_dtype(dtype, site)
    p = operand(x, site)
    if p.kind == "scalar":
        # (a cast: wraps as NumPy's astype does -- np.int64(-1) -> uint64 is 2**64 - 1)
        v = p.scalar if p.params[0] == "weak" else p.dtype.type(p.scalar)
        with np.errstate(all="ignore"):
            return Array._wrap(const_port(np.asarray(v).astype(dt), site))
    port = Port("map", "astype", dt, p.shape, (p,), (), site, loop_dtype=dt)
    return _enqueue(port)


def normalize_axes(axis, ndim, site, name):
    if axis is None:
        return tuple(range(ndim))
    ax = axis if isinstance(axis, tuple) else (axis,)
    out = []
    for a in ax:
        if not isinstance(a, (int, np.integer)) or isinstance(a, bool):
            raise record_error(ArgumentError, f"{name}: axis must be an int or a tuple of ints, "
                               f"got {a!r}", site)
        if not -ndim <= a < ndim:
            raise record_error(StreamrtAxisError, f"{name}: axis {a} is out of bounds for array "
                               f"of dimension {ndim}", site)
        out.append(int(a) % ndim if ndim else 0)
    if len(set(out)) != len(out):
        raise record_error(ArgumentError, f"{name}: duplicate value in 'axis'", site)
    return tuple(sorted(out))


_REDUCE_MEMO: dict = {}    # (op, dtype, shape, axis and its type, keepdims, dtype arg) ->
                           # (result shape, static params, result dtype)


def record_reduce(name, x, axis=None, keepdims=False, dtype=None, site=None):
    site = site or callsite()
    p = operand(x, site)
    if p.kind == "scalar":
        p = scalar_const(p, site)
        key = None
    else:
        # a combination validated before (a read in a loop: float(ps.max(u))): its result
        # shape, static parameters and dtype without validating again
        key = (name, p.dtype, p.shape, axis, type(axis), keepdims, dtype)
        try:
            m = _REDUCE_MEMO.get(key)
        except TypeError:       # an unhashable axis (a list): the general path
            m = key = None
        if m is not None:
            return _enqueue(Port("reduce", name, m[2], m[0], (p,), m[1], site))
    if name in ("argmax", "argmin") and isinstance(axis, tuple):
        raise record_error(ArgumentError, f"{name}: axis must be None or an int", site)
    axes = normalize_axes(axis, len(p.shape), site, name)
    red_n = math.prod(p.shape[a] for a in axes)
    if REDUCTIONS[name].needs_identity and red_n == 0:
        npname = {"max": "maximum", "min": "minimum"}.get(name, name)
        raise record_error(ShapeError, f"zero-size array to reduction operation {npname} which "
                           "has no identity", site)
    if p.dtype.kind == "c" and name in ("max", "min", "argmax", "argmin"):
        raise record_error(DTypeError, f"{name} of a complex array is not supported (NumPy "
                           "orders complex values lexicographically; reduce .real or abs())",
                           site)
    out_dt, acc_dt = reduction_dtypes(name, p.dtype)
    if dtype is not None and name in ("sum", "prod", "mean"):
        out_dt = canonical_dtype(dtype, site)
        acc_dt = D.float64 if D.is_float(out_dt) and name != "prod" else out_dt
    if keepdims:
        shape = tuple(1 if i in axes else s for i, s in enumerate(p.shape))
    else:
        shape = tuple(s for i, s in enumerate(p.shape) if i not in axes)
    params = (axes, bool(keepdims), acc_dt)
    if key is not None:
        if len(_REDUCE_MEMO) > 4096:
            _REDUCE_MEMO.clear()
        _REDUCE_MEMO[key] = (shape, params, out_dt)
    return _enqueue(Port("reduce", name, out_dt, shape, (p,), params, site))


_NoValue = np._NoValue
_COMBINE = {"sum": "add", "prod": "multiply", "max": "maximum", "min": "minimum"}
# the value a masked-out element takes (where=) so that it does not change the result
_NEUTRAL = {"sum": 0, "mean": 0, "prod": 1, "any": 0, "all": 1}


def _as_array(a, site):
    return a if isinstance(a, Array) else Array._wrap(operand(a, site))


def _mask(where, x, site, name):
    """The where= mask as an Array broadcastable to ``x`` (NumPy's rule)."""
    m = _as_array(where, site)
    if m.dtype != D.bool_:
        raise record_error(DTypeError, f"{name}: where= must be a boolean mask, got {m.dtype}",
                           site)
    try:
        ok = tuple(np.broadcast_shapes(m.shape, x.shape)) == tuple(x.shape)
    except ValueError:
        ok = False
    if not ok:
        raise record_error(ShapeError, f"{name}: where= mask of shape {m.shape} does not "
                           f"broadcast to the array's shape {x.shape}", site)
    return m


def _const(v, dt):
    return np.asarray(v).astype(dt)


def _initial(v, dt, site):
    """``initial=`` in a reduction's dtype: a Python int must fit it, as NumPy requires."""
    if type(v) is int and dt in D.INT_RANGE:
        lo, hi = D.INT_RANGE[dt]
        if not lo <= v <= hi:
            raise record_error(StreamrtOverflowError, f"Python integer {v} out of bounds for "
                               f"{dt}", site)
    return _const(v, dt)


def reduce_kw(name, a, axis, keepdims, dtype, initial, where, site):
    """A reduction with NumPy's ``initial=`` and ``where=``: masked-out elements are replaced
    by a value that leaves the result unchanged (``initial`` for max/min, which NumPy
    requires with a mask), and ``initial`` joins the reduced values."""
    if name == "mean" and dtype is not None and canonical_dtype(dtype, site).kind in "biu":
        return _mean_in(a, axis, keepdims, canonical_dtype(dtype, site), where, site)
    if initial is _NoValue and where is True:
        return record_reduce(name, a, axis, keepdims, dtype, site=site)
    x = _as_array(a, site)
    if initial is not _NoValue and name not in _COMBINE:
        raise record_error(ArgumentError, f"{name}() got an unexpected keyword argument "
                           "'initial'", site)
    if where is not True:
        if name in ("argmax", "argmin"):
            raise record_error(ArgumentError, f"{name}() got an unexpected keyword argument "
                               "'where'", site)
        m = _mask(where, x, site, name)
        if name in ("max", "min"):
            if initial is _NoValue:
                npname = {"max": "maximum", "min": "minimum"}[name]
                raise record_error(ValueError, f"reduction operation '{npname}' does not have "
                                   "an identity, so to use a where mask one has to specify "
                                   "'initial'", site)
            fill = _initial(initial, x.dtype, site)
        else:
            fill = _const(_NEUTRAL[name], x.dtype)
        xm = record_map("where", m, x, fill, site=site)
        if name == "mean":
            out_dt = reduction_dtypes("mean", x.dtype)[0] if dtype is None else \
                canonical_dtype(dtype, site)
            s = record_reduce("sum", xm, axis, keepdims,
                              out_dt if out_dt.kind in "fc" else D.float64, site=site)
            n = reduced_count(x, axis, keepdims, m, site)
            return astype(record_map("divide", s, n, site=site), out_dt, site=site)
        x = xm
    axes = normalize_axes(axis, x.ndim, site, name)
    if initial is not _NoValue and any(x.shape[ax] == 0 for ax in axes):
        # nothing to reduce: the result is ``initial`` (max/min of no element would raise)
        out_dt = canonical_dtype(dtype, site) if dtype is not None else \
            reduction_dtypes(name, x.dtype)[0]
        shape = tuple(1 if i in axes else n for i, n in enumerate(x.shape)) if keepdims \
            else tuple(n for i, n in enumerate(x.shape) if i not in axes)
        return Array._wrap(operand(np.full(shape, _initial(initial, out_dt, site)), site))
    r = record_reduce(name, x, axis, keepdims, dtype, site=site)
    if initial is not _NoValue:
        r = record_map(_COMBINE[name], r, _initial(initial, r.dtype, site), site=site)
    return r


def _mean_in(a, axis, keepdims, dt, where, site):
    """``mean`` with an integer or bool ``dtype=``: NumPy's steps (numpy/_core/_methods.py
    ``_mean``) -- the sum in that dtype, wrapping as NumPy's does, divided by the count and
    cast back to it."""
    x = _as_array(a, site)
    s = reduce_kw("sum", x, axis, keepdims, dt, _NoValue, where, site)
    m = None if where is True else _mask(where, x, site, "mean")
    n = reduced_count(x, axis, keepdims, m, site)
    return astype(record_map("divide", s, n, site=site), dt, site=site)


def reduced_count(x, axis, keepdims, m, site):
    """How many elements each result of a reduction of ``x`` over ``axis`` reduces: an int,
    or under the ``where=`` mask ``m`` (an Array) an int64 array of the result's shape."""
    if m is None:
        return math.prod(x.shape[ax] for ax in normalize_axes(axis, x.ndim, site, "mean"))
    mb = broadcast_to(m, x.shape, site=site) if m.shape != x.shape else m
    return record_reduce("sum", mb, axis, keepdims, D.int64, site=site)


def _view(p, off, shape, strides, site, src=None):
    base = p.base_view()[0]
    v = Port("view", "view", p.dtype, tuple(shape), (base,), (int(off), tuple(strides)), site)
    base.nrefs += 1            # a view keeps its base alive
    if base.state == DONE:
        v.state = DONE
        bv = base.value
        if type(bv) is np.ndarray and _tiers.eager_now():
            # the NumPy tier: a view of a computed buffer is an ndarray view of it, counted on
            # the base instead of registered (a computed base is written in place, which
            # every view sees: frontend/indexing.py write_region)
            base.nrefs -= 1
            hv = strided(bv, v.params[0], v.shape, v.params[1])
            if any(s == 0 and n > 1 for n, s in zip(v.shape, v.params[1])):
                hv.flags.writeable = False      # (a broadcast view is read-only, as in NumPy)
            return eager_array(hv, base)
        r = Array._wrap(v)
    else:
        r = _enqueue_plain(v)       # (a view of work not run yet: never the NumPy tier's)
    # a write through any alias of the base must be seen through all (frontend/indexing.py)
    _register(base, r)
    if type(src) is Array:
        _register(base, src)
    return r


def basic_index(p, key, site):
    """Basic indexing (ints, slices, None, Ellipsis) as (offset, shape, strides) or None when
    the key needs advanced indexing."""
    if not isinstance(key, tuple):
        key = (key,)
    base, off, st = p.base_view()
    shape = p.shape
    if len(key) <= len(shape):
        r = _simple_index(key, off, shape, st)
        if r is not None:
            return r
    n_idx = sum(1 for k in key if k is not None and k is not Ellipsis)
    if any(isinstance(k, (np.ndarray, list, Array)) or (isinstance(k, (bool, np.bool_))) for k in key):
        return None
    if n_idx > len(shape):
        raise record_error(StreamrtIndexError, f"too many indices for array: array is "
                           f"{len(shape)}-dimensional, but {n_idx} were indexed", site)
    if sum(1 for k in key if k is Ellipsis) > 1:
        raise record_error(ArgumentError, "an index can only have a single ellipsis ('...')", site)
    exp = []
    for k in key:
        if k is Ellipsis:
            exp.extend([slice(None)] * (len(shape) - n_idx))
        else:
            exp.append(k)
    while sum(1 for k in exp if k is not None) < len(shape):
        exp.append(slice(None))
    new_shape, new_st, dim = [], [], 0
    for k in exp:
        if k is None:
            new_shape.append(1)
            new_st.append(0)
        elif isinstance(k, slice):
            if k.step == 0:
                raise record_error(ValueError, "slice step cannot be zero", site)
            start, stop, step = k.indices(shape[dim])
            new_shape.append(len(range(start, stop, step)))
            new_st.append(st[dim] * step)
            off += start * st[dim] if new_shape[-1] else 0
            dim += 1
        elif isinstance(k, (int, np.integer)):
            i = int(k)
            if i < 0:
                i += shape[dim]
            if not 0 <= i < shape[dim]:
                raise record_error(StreamrtIndexError, f"index {int(k)} is out of bounds for axis "
                                   f"{dim} with size {shape[dim]}", site)
            off += i * st[dim]
            dim += 1
        else:
            raise record_error(ArgumentError, f"only integers, slices (`:`), ellipsis (`...`), "
                               f"numpy.newaxis (`None`) and integer or boolean arrays are valid "
                               f"indices, got {k!r}", site)
    return off, tuple(new_shape), tuple(new_st)


def _simple_index(key, off, shape, st):
    """basic_index's common case -- Python ints in range and slices of step not 0, one per
    leading dimension -- or None for basic_index's general path (and its errors)."""
    new_shape, new_st = [], []
    dim = 0
    for k in key:
        t = type(k)
        n = shape[dim]
        if t is slice:
            if k.step == 0:
                return None
            start, stop, step = k.indices(n)
            ln = len(range(start, stop, step))
            new_shape.append(ln)
            new_st.append(st[dim] * step)
            if ln:
                off += start * st[dim]
        elif t is int:
            i = k + n if k < 0 else k
            if not 0 <= i < n:
                return None
            off += i * st[dim]
        else:
            return None
        dim += 1
    if dim < len(shape):
        new_shape.extend(shape[dim:])
        new_st.extend(st[dim:])
    return off, tuple(new_shape), tuple(new_st)


def _basic_item(k):
    return (type(k) is int or type(k) is slice or k is Ellipsis or k is None or
            isinstance(k, np.integer))


def _eager_key(key):
    """(the key as NumPy takes it on the NumPy tier -- index Arrays as their host arrays --,
    whether it is basic: a view or an element, never a copy), or None: an index Array not
    computed or too large."""
    basic = True
    items = key if type(key) is tuple else (key,)
    out = []
    lim = settings.eager_elements
    for k in items:
        if _basic_item(k):
            out.append(k)
            continue
        if type(k) is Array:
            h = host(k)
            if h is None or h.size >= lim:
                return None
            k = h
        elif not (type(k) is np.ndarray or type(k) is list or type(k) is bool):
            return None
        basic = False
        out.append(k)
    return (tuple(out) if type(key) is tuple else out[0]), basic


def _static_key(key):
    key = key if isinstance(key, tuple) else (key,)
    out = []
    for k in key:
        if isinstance(k, slice):
            out.append(("s", k.start, k.stop, k.step))
        elif isinstance(k, (int, np.integer)):
            out.append(("i", int(k)))
        elif k is Ellipsis:
            out.append("...")
        else:
            out.append(k)
    return tuple(out)


# ---- NumPy fallback -----------------------------------------------------------------------
_warned = set()


def to_numpy_tree(x, writable=False):
    """Arrays in a nested argument structure as NumPy arrays: read-only views of the computed
    buffers, or (``writable``) copies a NumPy function may write into."""
    if isinstance(x, Array):
        v = x.numpy()
        return v.copy() if writable else v
    if isinstance(x, (list, tuple)):
        return type(x)(to_numpy_tree(i, writable) for i in x)
    if isinstance(x, dict):
        return {k: to_numpy_tree(v, writable) for k, v in x.items()}
    return x


def from_numpy_tree(x, site):
    if isinstance(x, np.ndarray) and x.dtype in D.SUPPORTED_SET:
        return Array._wrap(const_port(x, site))
    if isinstance(x, tuple):
        items = [from_numpy_tree(i, site) for i in x]
        return type(x)(*items) if hasattr(x, "_fields") else tuple(items)   # (namedtuples)
    if isinstance(x, list):
        return [from_numpy_tree(i, site) for i in x]
    return x


# NumPy functions that write into an argument (its position): the fallback runs them on a copy
# and writes the copy back into the streamrt array, as a region write (NumPy semantics)
MUTATING = {"copyto": 0, "fill_diagonal": 0, "put": 0, "place": 0, "putmask": 0,
            "put_along_axis": 0}


def fallback(name, func, args, kwargs, site=None, why=None):
    """Run a NumPy function streamrt does not implement (or not with these arguments: ``why``
    says which) on materialised inputs. ``out=`` arrays are written as region writes
    afterwards, never through their buffers (recorded work may still read the old values)."""
    site = site or callsite()
    what = f"numpy.{name}{why or ''} is not implemented lazily"
    if settings.strict:
        raise record_error(FallbackError, f"{what} (STREAMRT_STRICT=1 makes the NumPy fallback "
                           "an error)", site)
    stats.add("fallbacks")
    if what not in _warned:
        _warned.add(what)
        warnings.warn_explicit(f"streamrt: {what}; inputs are materialised and NumPy runs it "
                               "(warned once)", RuntimeWarning, site.filename, site.lineno)
    kwargs = dict(kwargs)
    out = kwargs.pop("out", None)
    if isinstance(out, tuple) and len(out) == 1:
        out = out[0]
    if isinstance(out, tuple) and all(o is None for o in out):
        out = None
    if out is not None and not isinstance(out, (Array, np.ndarray)):
        raise record_error(ArgumentError, f"numpy.{name}: out= must be an array", site)
    target = MUTATING.get(name)
    if target is not None and len(args) > target and isinstance(args[target], Array):
        host = to_numpy_tree(args[target], writable=True)
        res = func(*(host if i == target else to_numpy_tree(a) for i, a in enumerate(args)),
                   **to_numpy_tree(kwargs))
        _indexing.setitem(args[target], Ellipsis, host)
        return res
    res = func(*to_numpy_tree(args), **to_numpy_tree(kwargs))
    if out is not None:
        return finish_out(name, from_numpy_tree(np.asarray(res), site)
                          if isinstance(out, Array) else res, out, True, "unsafe", site, exact=True)
    return from_numpy_tree(res, site)


def finish_out(name, r, out, where, casting, site, exact=False):
    """NumPy's ``out=`` and ``where=`` for a result computed without them: masked-out elements
    keep ``out``'s values (0 without ``out``, where NumPy leaves them uninitialised), and the
    result is written into ``out`` as a region write -- the array and its views see it, work
    recorded earlier reads the old values. Returns ``out`` (or the result). ``exact``: ``out``
    must have the result's shape (a reduction's), not only one it broadcasts to."""
    if out is None and where is True:
        return r
    if isinstance(out, tuple):
        if len(out) != 1:
            raise record_error(ArgumentError, f"{name}: out= must be one array (got a tuple "
                               f"of {len(out)})", site)
        out = out[0]
    if out is not None and not isinstance(out, (Array, np.ndarray)):
        raise record_error(ArgumentError, f"{name}: out= must be an array, got "
                           f"{type(out).__name__}", site)
    rd = r.dtype if isinstance(r, Array) else np.asarray(r).dtype
    rs = r.shape if isinstance(r, Array) else np.shape(r)
    if out is not None:
        if rd != out.dtype and not np.can_cast(rd, out.dtype, casting):
            raise record_error(DTypeError, f"Cannot cast ufunc '{name}' output from "
                               f"dtype('{rd}') to dtype('{out.dtype}') with casting rule "
                               f"'{casting}'", site)
        try:
            ok = tuple(np.broadcast_shapes(rs, out.shape)) == tuple(out.shape)
        except ValueError:
            ok = False
        if exact and tuple(rs) != tuple(out.shape):
            raise record_error(ShapeError, f"{name}: output parameter has the wrong shape "
                               f"{tuple(out.shape)} (the result's is {tuple(rs)})", site)
        if not ok:
            raise record_error(ShapeError, f"{name}: non-broadcastable output operand with "
                               f"shape {out.shape} doesn't match the broadcast shape {rs}",
                               site)
    if where is not True:
        m = where if isinstance(where, Array) else Array._wrap(operand(np.asarray(where), site))
        if m.dtype != D.bool_:
            raise record_error(DTypeError, f"{name}: where= must be a boolean mask, got "
                               f"{m.dtype}", site)
        shape = out.shape if out is not None else rs
        try:
            ok = tuple(np.broadcast_shapes(m.shape, shape)) == tuple(shape)
        except ValueError:
            ok = False
        if not ok:
            raise record_error(ShapeError, f"{name}: where= mask of shape {m.shape} does not "
                               f"broadcast to the output's shape {shape}", site)
        if out is None:
            return record_map("where", m, r, np.zeros((), rd), site=site)
        old = out if isinstance(out, Array) else Array._wrap(const_port(out, site))
        r = record_map("where", m, astype(r, out.dtype, site=site), old, site=site)
    if isinstance(out, Array):
        _indexing.setitem(out, Ellipsis, r)
    else:
        out[...] = r.numpy() if isinstance(r, Array) else r
    return out


HANDLED_FUNCTIONS = {}     # numpy function name -> streamrt implementation (filled by ops modules)


def _handled(e, p):
    """Error handlers may choose to continue past a failed computation: the read then returns
    the optimised value (a reference mismatch) or NaN / 0 (a failed program)."""
    if not hooks.error_handlers or hooks.on_error is None or isinstance(e, AbortError):
        return False
    if hooks.on_error(e, getattr(e, "site", None) or p.site, getattr(e, "op", p.op)) \
            != "ignore":
        return False
    base = p.inputs[0] if p.kind == "view" else p
    if base.value is None:
        base.value = np.full(base.shape, np.nan if base.dtype.kind == "f" else 0, base.dtype)
    base.state = DONE
    return True


# ---- the Array ----------------------------------------------------------------------------
class Array:
    """A lazy n-dimensional array. Operations record ports; reads force evaluation.

    An Array refers to a port (``_p``), or -- computed on the NumPy tier -- holds its value
    as a host ndarray (``_v``; a view of a computed base port ``_b``, or a C-ordered buffer
    of its own) and gets a port only when recorded work reads it (``_port``)."""

    __slots__ = ("_p", "_v", "_b", "__weakref__")
    __array_priority__ = 100.0

    def __del__(self):
        try:
            p = self._p
            if p is not None:
                _decref(p)
            else:
                b = self._b
                if b is not None:
                    b.eager_views -= 1
                    _decref(b)
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass

    def __reduce__(self):
        """Pickled by value (multiprocessing, concurrent.futures): the computed array; it
        unpickles as a new constant Array (the recorded graph behind it stays here)."""
        return (_unpickle, (np.array(self.numpy()),))

    @property
    def _port(self):
        p = self._p
        return p if p is not None else _materialize(self)

    @_port.setter
    def _port(self, port):
        """(Rebinding: the Array now refers to ``port``; its port was read before.)"""
        self._p = port
        self._v = None

    # ---- metadata -------------------------------------------------------------------------
    def __new__(cls, *args, **kwargs):
        """``ps.ndarray(shape, dtype=float, buffer=None, offset=0, strides=None, order=None)``,
        NumPy's low-level constructor: zero-filled (NumPy's is uninitialised), or a copy of
        ``buffer`` read as NumPy reads it. (No arguments: a bare instance, for copy/pickle.)"""
        if not args and not kwargs:
            return object.__new__(cls)
        site = callsite()
        try:
            if kwargs.get("buffer", args[2] if len(args) > 2 else None) is None:
                kw = dict(kwargs)
                shape = args[0] if args else kw.pop("shape")
                dtype = args[1] if len(args) > 1 else kw.pop("dtype", float)
                for k in ("offset", "strides", "order"):
                    kw.pop(k, None)
                if kw:
                    raise TypeError(f"ndarray() got an unexpected keyword argument "
                                    f"{next(iter(kw))!r}")
                v = np.zeros(shape, canonical_dtype(dtype, site))
            else:
                v = np.ndarray(*args, **kwargs)
        except StreamrtError:
            raise
        except (TypeError, ValueError, MemoryError) as e:
            cls_ = next(c for c in type(e).__mro__ if c.__module__ == "builtins")
            raise record_error(cls_, f"ndarray: {e}", site) from None
        return _wrap(const_port(np.array(v, order="C"), site))

    @property
    def shape(self):
        v = self._v
        return v.shape if v is not None else self._p.shape

    @shape.setter
    def shape(self, shape):
        """``a.shape = (...)``: reshaped in place -- the array becomes a view of the same data
        with the new shape -- or, as NumPy, an AttributeError when that needs a copy."""
        site = callsite()
        if isinstance(shape, (int, np.integer)):
            shape = (int(shape),)
        v = self._v
        if v is not None:
            nv = v.view()
            try:
                nv.shape = shape
            except ValueError as e:
                raise record_error(ShapeError, str(e), site) from None
            except AttributeError as e:
                raise record_error(AttributeError, str(e), site) from None
            self._v = nv
            return
        p = self._p
        r = reshape(self, shape, site=site)           # (the size check first, as NumPy)
        if p.kind == "view" and any(n > 1 and s != c for n, s, c in zip(
                p.shape, p.params[1], c_strides(p.shape))):
            raise record_error(AttributeError, "Incompatible shape for in-place modification. "
                               "Use `.reshape()` to make a copy with the desired shape.", site)
        np_ = r._port
        np_.nrefs += 1
        self._p = np_
        _register(np_.inputs[0] if np_.kind == "view" else np_, self)
        _decref(p)
        del r

    @property
    def strides(self):
        """The byte strides NumPy's array of this value has: a computed view's own, else
        C-contiguous (streamrt lays out every buffer it makes in C order)."""
        v = self._v
        if v is not None:
            return v.strides
        p = self._p
        isz = p.dtype.itemsize
        if p.kind == "view":
            return tuple(int(s) * isz for s in p.params[1])
        return tuple(int(s) * isz for s in c_strides(p.shape))

    @property
    def dtype(self):
        v = self._v
        return v.dtype if v is not None else self._p.dtype

    @property
    def ndim(self):
        v = self._v
        return v.ndim if v is not None else len(self._p.shape)

    @property
    def size(self):
        v = self._v
        return v.size if v is not None else self._p.size

    @property
    def nbytes(self):
        return self.size * self.dtype.itemsize

    @property
    def itemsize(self):
        return self.dtype.itemsize

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    # ---- reads ----------------------------------------------------------------------------
    def numpy(self):
        """The value as a read-only NumPy array over the computed buffer (forces evaluation;
        ``np.array(x)`` or ``.copy()`` gives a writable copy). Read-only because recorded
        work that has not run yet may still read the buffer: a write through the returned
        array would change earlier results."""
        v = self._v
        if v is not None:
            v = v.view()
            v.flags.writeable = False
            return v
        p = self._port
        try:
            cscheduler.ensure(p)
        except StreamrtError as e:
            if not _handled(e, p):
                raise
        v = p.host_value()
        if hooks.on_read is not None:
            hooks.on_read(p, v)     # debugger: compare with the reference on copy-out
        if v.flags.writeable:
            v = v.view()
            v.flags.writeable = False
        return v

    def __array__(self, dtype=None, copy=None):
        v = self.numpy()
        if dtype is not None and v.dtype != dtype:
            return v.astype(dtype)          # (a copy: writable)
        return v.copy() if copy else v

    def item(self, *args):
        return self.numpy().item(*args)

    def tolist(self):
        return self.numpy().tolist()

    def __float__(self):
        return float(self._scalar("float"))

    def __int__(self):
        return int(self._scalar("int"))

    def __index__(self):
        if not D.is_int(self.dtype):
            raise TypeError("only integer arrays can be used as an index")
        return int(self._scalar("index"))

    def __bool__(self):
        if self.size != 1:
            raise record_error(ValueError, "The truth value of an array with more than one "
                               "element is ambiguous. Use a.any() or a.all()")
        return bool(self.numpy().reshape(()))

    def _scalar(self, what):
        if self.size != 1:
            raise record_error(ShapeError, f"only 1-element arrays can be converted to Python "
                               f"scalars ({what}() of an array of shape {self.shape})")
        return self.numpy().reshape(()).item()

    def __repr__(self):
        return "streamrt." + repr(self.numpy()).replace("\n", "\n         ")

    def __str__(self):
        return str(self.numpy())

    def __iter__(self):
        if not self.shape:
            raise TypeError("iteration over a 0-d array")
        for i in range(self.shape[0]):
            yield self[i]

    def __format__(self, spec):
        return format(self.numpy().item() if self.size == 1 and not self.shape else
                      self.numpy(), spec)

    # ---- views and shape ------------------------------------------------------------------
    def __getitem__(self, key):
        v = host(self)
        hk = _eager_key(key) if v is not None and _tiers.eager_now() else None
        if hk is not None:
            # the NumPy tier: NumPy's own indexing -- an element is a NumPy scalar, as NumPy
            # gives; a view stays a view of the base's buffer; an index array gives a copy
            try:
                r = v[hk[0]]
            except (IndexError, TypeError, ValueError):
                r = None                # (the checks below raise streamrt's error)
            if r is not None:
                if type(r) is not np.ndarray:
                    return r
                if not hk[1]:
                    return eager_array(own_buffer(r))
                b = self._b
                if b is None:
                    b = self._port.base_view()[0]
                return eager_array(r, b)
        site = callsite()
        if isinstance(key, Array):
            key = key.numpy() if key.ndim == 0 and key.dtype.kind in "iu" else (key,)
        r = basic_index(self._port, key, site)
        if r is None:
            return _indexing.gather(self, key, site)
        off, shape, st = r
        if v is None and self._p is not None and math.prod(shape) < settings.eager_elements \
                and _tiers.eager_now():
            # a small basic read (an element, a row) of an array not computed yet: it is
            # computed now, so that the small ops that follow -- a loop over the rows of a
            # large array -- run on the NumPy tier instead of recording a tiny kernel each
            # (docs/guide.md, Tiers)
            self.numpy()
            if host(self) is not None:
                return self[key]
        if not shape and not (key is Ellipsis or isinstance(key, tuple) and Ellipsis in key):
            # an element (every axis given an integer): NumPy gives a scalar, a copy -- an
            # in-place op on it must not write into this array (``a[...]`` stays a view).
            # Of a computed array, outside a macro's recording: its value now; else a
            # recorded copy
            bv = self._port.base_view()[0].value if v is not None else None
            if type(bv) is np.ndarray and not _tiers.recording():
                return eager_array(np.array(strided(bv, off, (), ())))
            return astype(_view(self._port, off, shape, st, site, src=self), self.dtype,
                          site=site)
        return _view(self._port, off, shape, st, site, src=self)

    def __setitem__(self, key, value):
        """NumPy semantics: the array and every view of (or array viewed by) it see the write;
        ops recorded earlier read the old value (frontend/indexing.py)."""
        _indexing.setitem(self, key, value)

    def reshape(self, *shape, order="C", copy=None):
        site = callsite()
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        r = reshape(self, shape, site=site, order=order)
        return astype(r, r.dtype, site=site) if copy else r

    def transpose(self, *axes):
        site = callsite()
        if len(axes) == 1 and isinstance(axes[0], (tuple, list)):
            axes = tuple(axes[0])
        return transpose(self, axes or None, site=site)

    @property
    def T(self):
        if _T_NOW is not None:
            r = _T_NOW(self)
            if r is not None:
                return r
        v = host(self)
        if v is not None and _tiers.eager_now():
            return _host_view(self, v.T)
        return transpose(self, None, site=callsite())

    @property
    def mT(self):
        ax = list(range(self.ndim))
        ax[-2:] = ax[-1], ax[-2]
        return transpose(self, tuple(ax), site=callsite())

    def ravel(self, order="C"):
        return reshape(self, (-1,), site=callsite(), order=order)

    def flatten(self, order="C"):
        return reshape(self, (-1,), site=callsite(), order=order).copy()

    def copy(self, order="C"):
        return astype(self, self.dtype, site=callsite())

    def astype(self, dtype, order="K", casting="unsafe", subok=True, copy=True):
        site = callsite()
        dt = canonical_dtype(dtype, site)
        if casting != "unsafe" and not np.can_cast(self.dtype, dt, casting):
            raise record_error(DTypeError, f"Cannot cast array data from dtype('{self.dtype}') "
                               f"to dtype('{dt}') according to the rule '{casting}'", site)
        if not copy and dt == self.dtype:
            return self
        return astype(self, dt, site=site)

    # ---- reductions as methods (ndarray's signatures) ----------------------------------------
    def sum(self, axis=None, dtype=None, out=None, keepdims=False, initial=_NoValue,
            where=True):
        site = callsite()
        r = reduce_kw("sum", self, axis, keepdims, dtype, initial, where, site)
        return finish_out("sum", r, out, True, "unsafe", site, exact=True)

    def prod(self, axis=None, dtype=None, out=None, keepdims=False, initial=_NoValue,
             where=True):
        site = callsite()
        r = reduce_kw("prod", self, axis, keepdims, dtype, initial, where, site)
        return finish_out("prod", r, out, True, "unsafe", site, exact=True)

    def mean(self, axis=None, dtype=None, out=None, keepdims=False, *, where=True):
        site = callsite()
        r = reduce_kw("mean", self, axis, keepdims, dtype, _NoValue, where, site)
        return finish_out("mean", r, out, True, "unsafe", site, exact=True)

    def max(self, axis=None, out=None, keepdims=False, initial=_NoValue, where=True):
        site = callsite()
        r = reduce_kw("max", self, axis, keepdims, None, initial, where, site)
        return finish_out("max", r, out, True, "unsafe", site, exact=True)

    def min(self, axis=None, out=None, keepdims=False, initial=_NoValue, where=True):
        site = callsite()
        r = reduce_kw("min", self, axis, keepdims, None, initial, where, site)
        return finish_out("min", r, out, True, "unsafe", site, exact=True)

    def any(self, axis=None, out=None, keepdims=False, *, where=True):
        site = callsite()
        r = reduce_kw("any", self, axis, keepdims, None, _NoValue, where, site)
        return finish_out("any", r, out, True, "unsafe", site, exact=True)

    def all(self, axis=None, out=None, keepdims=False, *, where=True):
        site = callsite()
        r = reduce_kw("all", self, axis, keepdims, None, _NoValue, where, site)
        return finish_out("all", r, out, True, "unsafe", site, exact=True)

    def argmax(self, axis=None, out=None, *, keepdims=False):
        site = callsite()
        r = record_reduce("argmax", self, axis, keepdims, site=site)
        return finish_out("argmax", r, out, True, "unsafe", site, exact=True)

    def argmin(self, axis=None, out=None, *, keepdims=False):
        site = callsite()
        r = record_reduce("argmin", self, axis, keepdims, site=site)
        return finish_out("argmin", r, out, True, "unsafe", site, exact=True)

    def var(self, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True,
            mean=None, correction=None):
        from .math import var        # (math.py is built on this module: imported at the call)
        return var(self, axis, dtype, out, ddof, keepdims, where=where, mean=mean,
                   correction=correction)

    def std(self, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True,
            mean=None, correction=None):
        from .math import std        # (math.py is built on this module: imported at the call)
        return std(self, axis, dtype, out, ddof, keepdims, where=where, mean=mean,
                   correction=correction)

    def clip(self, min=None, max=None, out=None, **kwargs):
        from .math import clip       # (math.py is built on this module: imported at the call)
        return clip(self, min, max, out, **kwargs)

    def dot(self, b, out=None):
        from .math import dot        # (math.py is built on this module: imported at the call)
        return finish_out("dot", dot(self, b), out, True, "safe", callsite())

    # ---- NumPy protocols ----------------------------------------------------------------------
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if method == "__call__" and not kwargs:
            f = UFUNC_CALLS.get(ufunc)      # (matmul: the intrinsic, frontend/linalg.py)
            if f is not None:
                return f(*inputs)
        site = callsite()
        name = UFUNC_TO_OP.get(ufunc.__name__)
        if method == "__call__" and name is not None and set(kwargs) <= _UFUNC_KW:
            # the namespace function takes NumPy's ufunc keywords (frontend/math.py); on the
            # NumPy tier, NumPy's floating-point warnings name the user's line (core/fpe.py)
            return _fpe.run(ufunc.__name__, HANDLED_UFUNCS[name], *inputs, **kwargs)
        if method != "__call__":
            # outer, reduce, accumulate, at, reduceat (frontend/numeric.py)
            return UFUNC_METHODS["impl"](ufunc, method, inputs, kwargs, site)
        func = getattr(ufunc, method)
        extra = sorted(set(kwargs) - _UFUNC_KW) if name else ()
        return fallback(ufunc.__name__, func, inputs, kwargs, site,
                        why=f" with {', '.join(k + '=' for k in extra)}" if extra else None)

    def __array_function__(self, func, types, args, kwargs):
        impl = HANDLED_FUNCTIONS.get(func.__name__)
        if impl is not None:
            bad = _unaccepted(impl, kwargs)
            if not bad:
                try:
                    return impl(*args, **kwargs)
                except NotLazyError as e:
                    return fallback(func.__name__, func, args, kwargs, e.site, why=e.detail)
            # a NumPy keyword streamrt's version does not take: NumPy runs the call
            return fallback(func.__name__, func, args, kwargs, callsite(),
                            why=f" with {', '.join(k + '=' for k in bad)}")
        return fallback(func.__name__, func, args, kwargs, callsite())

    # ---- the Array API --------------------------------------------------------------------
    def __array_namespace__(self, /, *, api_version=None):
        """The Array API namespace, ``streamrt.array_api`` (loaded on first use: the public API
        registers the loader in core/hooks.py)."""
        if api_version not in (None, "2021.12", "2022.12", "2023.12"):
            raise ValueError(f"unsupported Array API version {api_version!r}")
        return hooks.array_namespace()

    def __dlpack__(self, /, *, stream=None, max_version=None, dl_device=None, copy=None):
        """DLPack export of the computed value (evaluates the array). Zero-copy by default:
        the capsule is flagged read-only (DLPack >= 1.0), so a consumer such as
        ``np.from_dlpack`` gets a read-only view -- a write through it could otherwise change
        recorded results that have not run yet. A consumer that cannot take the read-only flag
        (``max_version`` None or < 1.0) gets a copy, unless ``copy=False`` (BufferError)."""
        if dl_device is not None and tuple(dl_device) != (1, 0):
            raise BufferError(f"streamrt exports to the CPU only (kDLCPU, 0), not {dl_device}")
        v = self.numpy()                        # read-only view of the computed buffer
        legacy = max_version is None or tuple(max_version)[0] < 1
        if copy or (legacy and copy is None):
            v = v.copy()                        # the consumer's own, writable
        elif legacy:
            raise BufferError("streamrt arrays are exported read-only; this DLPack consumer "
                              "(max_version < 1.0) cannot be told so and copy=False forbids "
                              "a copy")
        if legacy:
            return v.__dlpack__(stream=stream)  # (the writable copy)
        return v.__dlpack__(stream=stream, max_version=max_version, dl_device=dl_device,
                            copy=False)

    def __dlpack_device__(self, /):
        """(kDLCPU, 0): the exported buffer is the host copy-out of the value."""
        return (1, 0)

    @property
    def device(self):
        return "cpu"

    def to_device(self, device, /, *, stream=None):
        if device not in (None, "cpu"):
            raise record_error(ArgumentError, f"unsupported device {device!r} (streamrt arrays "
                               "live on the executor chosen by STREAMRT_BACKEND; use None)",
                               callsite())
        return self


_UFUNC_KW = frozenset({"out", "where", "casting", "order", "dtype", "subok", "signature"})
HANDLED_UFUNCS = {}     # op name -> namespace function taking the ufunc keywords (math.py)
UFUNC_CALLS = {}        # NumPy ufunc -> a function taking a call without keywords
UFUNC_METHODS = {}      # "impl": the ufunc methods (outer, reduce, ...; numeric.py)
_ACCEPTS: dict = {}


def _unaccepted(impl, kwargs):
    """The keywords of ``kwargs`` that ``impl``'s signature has no parameter for."""
    if not kwargs:
        return ()
    names = _ACCEPTS.get(impl)
    if names is None:
        try:
            ps = inspect.signature(impl).parameters.values()
            names = None if any(p.kind == p.VAR_KEYWORD for p in ps) else frozenset(
                p.name for p in ps if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY))
        except (TypeError, ValueError):
            names = None
        _ACCEPTS[impl] = names if names is not None else frozenset({"*"})
        names = _ACCEPTS[impl]
    if "*" in names:
        return ()
    return sorted(k for k in kwargs if k not in names)


def _decref(p):
    """One Array fewer refers to ``p``; at zero ``p`` is released -- the count is the release
    record the flush reads (docs/layout.md) -- and a view lets go of its base."""
    p.nrefs -= 1
    if p.nrefs <= 0 and p.kind == "view":
        if p.counted:
            p.counted = False
            p.inputs[0].eager_views -= 1
        _decref(p.inputs[0])


_FAST: dict = {}       # (op, dtype, dtype-or-scalar-kind, reflected) -> (out, loop dtypes)
_WEAK_F, _WEAK_I = ("weak", "f"), ("weak", "i")     # a Python scalar operand's port params
_new = object.__new__


def _wrap(port):
    """A new Array referring to ``port`` (``Array._wrap``; a plain function: the record path
    calls it for every op, and a classmethod call costs more)."""
    a = _new(Array)
    a._p = port
    a._v = a._b = None
    port.nrefs += 1
    return a


def _unpickle(v):
    """An Array from a pickled one's value (``Array.__reduce__``)."""
    return _wrap(const_port(v))


def eager_array(v, base=None):
    """A NumPy-tier Array holding host ndarray ``v``: a C-ordered buffer of its own, or
    (``base``) a view of computed base port ``base``'s buffer, counted on it."""
    a = _new(Array)
    a._p = None
    a._v = v
    a._b = base
    if base is not None:
        base.nrefs += 1
        base.eager_views += 1
    return a


def _materialize(a):
    """The port of a NumPy-tier Array (made when recorded work first reads it): a constant
    over its buffer, or a view port of its base that takes over the base's counts."""
    v, b = a._v, a._b
    if b is None:
        p = Port("const", "const", v.dtype, v.shape, value=v)
    else:
        isz = v.itemsize
        off = (v.__array_interface__["data"][0] -
               b.value.__array_interface__["data"][0]) // isz
        p = Port("view", "view", v.dtype, v.shape, (b,),
                 (off, tuple(s // isz for s in v.strides)))
        p.state = DONE
        p.value = v
        p.counted = True
        a._b = None
    p.nrefs = 1
    a._p = p
    return p


def host(a):
    """The computed host ndarray of Array ``a`` (the NumPy tier's operand), or None."""
    v = a._v
    return v if v is not None else _tiers.concrete(a._p)


def _eager_arg(v, lim, found):
    """``v`` as a NumPy-tier call passes it (an Array's host ndarray; a list or tuple of them,
    one level), or NotImplemented when an Array is not computed or too large."""
    if type(v) is Array:
        h = host(v)
        if h is None or h.size >= lim:
            return NotImplemented
        found.append((h, v))
        return h
    if type(v) is list or type(v) is tuple:
        if not any(type(e) is Array for e in v):
            return v
        out = [_eager_arg(e, lim, found) for e in v]
        if any(e is NotImplemented for e in out):
            return NotImplemented
        return type(v)(out)
    return v


def _root(a):
    while isinstance(a, np.ndarray) and a.base is not None:
        a = a.base
    return a


def _eager_out(r, found):
    """A NumPy-tier call's answer: an ndarray becomes a NumPy-tier Array -- a view of the
    Array it shares a buffer with (NumPy's reshape, transpose, ...), else a buffer of its own
    -- or NotImplemented when its dtype is not one streamrt has; scalars stay NumPy scalars,
    tuples and lists are converted element by element."""
    t = type(r)
    if t is np.ndarray:
        if r.dtype not in D.SUPPORTED_SET:
            return NotImplemented
        if r.base is not None:
            root = _root(r)
            for h, a in found:
                if _root(h) is root:
                    return _host_view(a, r)
        return eager_array(own_buffer(r))
    if t is tuple or t is list:
        out = [_eager_out(e, found) for e in r]
        if any(e is NotImplemented for e in out):
            return NotImplemented
        return t(out) if t is list else (r.__class__(*out) if hasattr(r, "_fields") else
                                         tuple(out))
    if isinstance(r, np.generic) and r.dtype not in D.SUPPORTED_SET:
        return NotImplemented           # a float16 scalar (arccos of a 0-d bool): refused
    return r


def eager_function(ref, args, kwargs, any_size=False):
    """``ref(*args, **kwargs)`` on the NumPy tier (NumPy's own function over the host arrays
    of computed Arrays), or NotImplemented: an Array not computed or too large, an ``out=``,
    no Array at all, or an error NumPy raised (the streamrt function then raises its own)."""
    if not _tiers.eager_now() or kwargs.get("out") is not None:
        return NotImplemented
    lim = settings.eager_elements if not any_size else sys.maxsize
    found = []
    hargs = [_eager_arg(a, lim, found) for a in args]
    hkw = {k: _eager_arg(v, lim, found) for k, v in kwargs.items()} if kwargs else {}
    if not found or any(a is NotImplemented for a in hargs) or \
            any(v is NotImplemented for v in hkw.values()):
        return NotImplemented
    r = _batched_product(ref, args, found) if len(args) == 2 and not hkw else None
    if r is None:
        try:
            r = _fpe.run(getattr(ref, "__name__", "numpy"), ref, *hargs, **hkw)
        except (TypeError, ValueError, IndexError, OverflowError):
            return NotImplemented
    r = _eager_out(r, found)
    if r is not NotImplemented:
        _tiers.note_eager()
    return r


def _batched_product(ref, args, found):
    """A vector-matrix product of a loop from runtime/products.py's block, or None (the C
    path's ``batched_product``, _native.c, is the same test)."""
    if ref not in PRODUCT_REFS or len(found) != 2 or \
            type(args[0]) is not Array or type(args[1]) is not Array:
        return None
    (h0, a0), (h1, a1) = found
    if type(h0) is not np.ndarray or type(h1) is not np.ndarray or \
            (h0.ndim, h1.ndim) not in ((1, 2), (2, 1)) or h0.dtype != h1.dtype or \
            h0.dtype.char not in "fd":
        return None
    left = h0.ndim == 1
    u, w, au, aw = (h0, h1, a0, a1) if left else (h1, h0, a1, a0)
    if w.size < _products.MIN_ELEMENTS:
        return None
    bu, bw = _host_base(au), _host_base(aw)
    if bu is None or bw is None:
        return None
    r = _products.serve(u, w, bu, bw, left, u.__array_interface__["data"][0],
                        w.__array_interface__["data"][0])
    return r if r is not False else None


def _host_base(a):
    """The base port whose buffer computed Array ``a``'s host ndarray views, or None (a
    NumPy-tier buffer of its own)."""
    p = a._p
    return a._b if p is None else p.base_view()[0]


# NumPy functions that streamrt records as intrinsics (BLAS, LAPACK, FFT, sorts, scans): no
# kernel fuses them with their inputs once those are computed, so on computed inputs they run
# on the NumPy tier whatever their size (a vector-matrix product over a large matrix in a
# loop: recorded, each iteration cost a flush and a trace lookup besides NumPy's call)
ANY_SIZE = frozenset({
    "matmul", "dot", "vdot", "inner", "tensordot", "einsum", "kron", "sort", "argsort",
    "cumsum", "cumprod", "convolve", "correlate", "solve", "inv", "det", "slogdet",
    "cholesky", "qr", "svd", "svdvals", "eigh", "eigvalsh", "lstsq", "pinv", "matrix_power",
    "matrix_rank", "fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fft2", "ifft2", "rfft2",
    "irfft2", "fftn", "ifftn", "rfftn", "irfftn"})


def numpy_twin(f, ref):
    """``f`` (a namespace function) that runs NumPy's ``ref`` on the NumPy tier when its
    Array arguments are computed and small -- computed at all, for an intrinsic (ANY_SIZE)
    -- (the C path's Fast when built; a Python wrapper otherwise); ``f`` itself where NumPy
    has no such function."""
    if ref is None:
        return f
    any_size = getattr(ref, "__name__", None) in ANY_SIZE

    @functools.wraps(f)
    def g(*args, **kwargs):
        r = eager_function(ref, args, kwargs, any_size)
        if r is not NotImplemented:
            return r
        try:
            return f(*args, **kwargs)
        except TypeError as e:
            if e.__traceback__.tb_next is not None:     # raised inside f: f's own error
                raise
            # the arguments did not bind to f (no frame of f ran): name the user's line,
            # as the C path's twin does by calling f from the user's frame
            raise ArgumentError(f"{callsite()}: {e}") from None
    # the C path's twin, when built, falls back to this one (the C path off, or not for it)
    twin = _native.numpy_twin(g, ref, any_size)
    return twin if twin is not None else g


def twin_of(ns, name):
    """The NumPy function a streamrt namespace function ``name`` stands for on the NumPy
    tier: a ufunc, or the implementation behind a NumPy function's dispatch; None."""
    f = getattr(ns, name, None)
    if isinstance(f, np.ufunc):
        return f
    return getattr(f, "_implementation", None)


# the NumPy functions whose vector-matrix products runtime/products.py may answer (the C path
# is given the same two)
PRODUCT_REFS = (np.matmul, twin_of(np, "dot"))


def twin_namespace(g, names, ns):
    """Each function ``g[name]`` (a module's namespace) becomes its NumPy twin (numpy_twin
    with ``ns``'s function of that name), in ``g`` and in HANDLED_FUNCTIONS."""
    made = {}                       # (aliases -- true_divide, divide -- share one twin)
    for name in names:
        f = g.get(name)
        if not callable(f) or isinstance(f, type) or type(f).__name__ in ("MapFunc", "Fast"):
            continue
        t = made.get(id(f))
        if t is None:
            t = made[id(f)] = numpy_twin(f, twin_of(ns, name))
        g[name] = t
        if HANDLED_FUNCTIONS.get(name) is f:
            HANDLED_FUNCTIONS[name] = t


def _host_view(a, r):
    """A NumPy-tier view ``r`` of computed Array ``a``'s buffer, as an Array (counted on its
    base port, made now for a buffer of its own: _native.c ``view_base``)."""
    b = _host_base(a)
    if b is None:
        b = a._port.base_view()[0]
    return eager_array(r, b)


def own_buffer(r):
    """NumPy's answer as a NumPy-tier buffer: C-ordered, not a view of an input."""
    if type(r) is not np.ndarray:
        return np.asarray(r)
    if r.base is not None or not r.flags.c_contiguous:
        return np.array(r, order="C")
    return r


Array._wrap = staticmethod(_wrap)
# the NumPy tier: the methods run ndarray's own over a computed small array (numpy_twin)
for _m in ("sum", "prod", "mean", "max", "min", "any", "all", "argmax", "argmin", "var", "std",
           "clip", "dot", "reshape", "transpose", "ravel", "flatten", "copy", "astype"):
    setattr(Array, _m, numpy_twin(Array.__dict__[_m], getattr(np.ndarray, _m)))
# the range of every integer dtype a Python int operand may take (the C record path reads it
# too: a loop dtype missing here would let an out-of-range int through unchecked)
_IINFO = dict(D.INT_RANGE)


def _binop(name, reflected=False):
    op = OPS[name]
    general = record_map

    def fast(self, other, site):
        """The hot path: Array (op) Array of the same shape, or Array (op) Python scalar.
        Everything else -- and every first occurrence of a dtype combination -- takes
        record_map, which validates fully and fills the memo this path relies on."""
        p = self._port
        t = type(other)
        shape = p.shape
        if t is Array:
            q = other._port
            if q.shape != shape:
                # a computed 0-d array against an array (CG's ``alpha * p``): NumPy 2
                # promotes 0-d arrays like any other, so the same-shape memo entry holds
                if not shape and p.kind != "const":
                    shape = q.shape
                elif q.shape or q.kind == "const":
                    return None
            key = (name, p.dtype, q.dtype, reflected)
        elif t is float or t is int:
            q = None
            key = (name, p.dtype, "f" if t is float else "i", reflected)
        else:
            return None
        if p.kind == "const" and not p.shape:
            return None                      # constant folding: the general path
        dts = _FAST.get(key)
        if dts is None:
            return None
        out_dt, loop_dt = dts
        if q is None:
            if t is int:
                lim = _IINFO.get(loop_dt)
                if lim is not None and not lim[0] <= other <= lim[1]:
                    return None              # the general path raises the overflow error
                if name == "power" and other < 0 and loop_dt.kind in "iu":
                    return None
            if name == "power" and other in _STRENGTH:
                return None                  # strength reduction: the general path
            q = Port("scalar", "scalar", loop_dt, (), (), _WEAK_F if t is float else _WEAK_I,
                     site, None, None, other)
        ins = (q, p) if reflected else (p, q)
        port = Port("map", name, out_dt, shape, ins, (), site, None, None, None, loop_dt)
        r = _eager(port)
        if r is not None:
            return r
        return _enqueue(port) if _PIECEWISE_DATA else _enqueue_plain(port)

    def slow(self, other, site):
        r = general(name, other, self, site=site) if reflected else \
            general(name, self, other, site=site)
        t = type(other)
        if t is Array or t is float or t is int:
            k = other._port.dtype if t is Array else ("f" if t is float else "i")
            if not (t is Array and other._port.shape != self._port.shape
                    and other._port.shape and self._port.shape):
                try:
                    a, b = (k, self._port.dtype) if reflected else (self._port.dtype, k)
                    if not signed_vs_uint64(name, (a, b)):     # (recorded as four ops)
                        _FAST[(name, self._port.dtype, k, reflected)] = map_dtypes(op, [a, b])
                except TypeError:
                    pass
        return r

    def f(self, other):
        fr = _getframe(1)
        c = fr.f_code
        # the caller is the user's code (known not internal): its site without the walk
        site = site_at(c, fr.f_lasti) if _INTERNAL.get(c) is False else callsite()
        if _PIECEWISE_DATA and _TEMP_RC:
            # which operands are temporaries of the caller's expression (held by its stack
            # alone): their chained pieces may be read (frontend/pieces.py)
            _tls.temps = (self._port.id if _getrefcount(self) == _TEMP_RC else None,
                          other._port.id if type(other) is Array
                          and _getrefcount(other) == _TEMP_RC else None)
            try:
                r = fast(self, other, site)
                return r if r is not None else slow(self, other, site)
            finally:
                _tls.temps = ()
        r = fast(self, other, site)
        return r if r is not None else slow(self, other, site)
    f.__name__ = name
    f._slow, f._reflected = slow, reflected      # (for the C operator: frontend/native.py)
    return f


def _unop(name):
    def f(self):
        return record_unary(name, self, callsite())
    f.__name__ = name
    return f


def _temp_refcount():
    """What ``sys.getrefcount`` reports, inside a binary-operator method built as ``_binop``'s
    ``f``, for an operand only the caller's evaluation stack holds (NumPy's temporary
    elision relies on the same count); 0 when a named operand is not told apart by it on this
    interpreter (chaining is then off)."""
    def f(self, other):
        return _getrefcount(self), _getrefcount(other)

    class Probe:
        __add__ = __radd__ = f
    t = Probe() + Probe()
    a, b = Probe(), Probe()
    n = a + b
    r = 1.0 + Probe()
    m = 1.0 + a
    ok = t[0] == t[1] == r[0] and n[0] == n[1] == m[0] == t[0] + 1
    return t[0] if ok else 0


_getrefcount = sys.getrefcount
_TEMP_RC = _temp_refcount()


for _dunder, _name in (("add", "add"), ("sub", "subtract"), ("mul", "multiply"),
                       ("truediv", "divide"), ("floordiv", "floor_divide"), ("mod", "remainder"),
                       ("pow", "power"), ("and", "bitwise_and"), ("or", "bitwise_or"),
                       ("xor", "bitwise_xor"), ("lshift", "left_shift"),
                       ("rshift", "right_shift")):
    setattr(Array, f"__{_dunder}__", _binop(_name))
    setattr(Array, f"__r{_dunder}__", _binop(_name, reflected=True))
    # in-place forms write into the array and its aliases (NumPy's out=, casting 'same_kind')
    setattr(Array, f"__i{_dunder}__", _indexing.make_inplace(_name))
for _dunder, _name in (("lt", "less"), ("le", "less_equal"), ("gt", "greater"),
                       ("ge", "greater_equal"), ("eq", "equal"), ("ne", "not_equal")):
    setattr(Array, f"__{_dunder}__", _binop(_name))
for _dunder, _name in (("neg", "negative"), ("pos", "positive"), ("abs", "absolute"),
                       ("invert", "invert")):
    setattr(Array, f"__{_dunder}__", _unop(_name))
Array.__hash__ = None


# __matmul__ / __rmatmul__, sort, argsort, cumsum, cumprod: frontend/linalg.py


# ---- shape functions ----------------------------------------------------------------------
def reshape(x, shape, site=None, order="C"):
    site = site or callsite()
    if order != "C":
        raise record_error(ArgumentError, f"reshape: order={order!r} is not supported (only "
                           "'C')", site)
    p = operand(x, site)
    if isinstance(shape, (int, np.integer)):
        shape = (int(shape),)
    shape = tuple(int(s) for s in shape)
    if shape.count(-1) > 1:
        raise record_error(ArgumentError, "can only specify one unknown dimension", site)
    if -1 in shape:
        known = math.prod(s for s in shape if s != -1)
        if known == 0 or p.size % known:
            raise record_error(ShapeError, f"cannot reshape array of size {p.size} into shape "
                               f"{shape}", site)
        shape = tuple(p.size // known if s == -1 else s for s in shape)
    if math.prod(shape) != p.size:
        raise record_error(ShapeError, f"cannot reshape array of size {p.size} into shape "
                           f"{shape}", site)
    if p.kind == "scalar":
        p = scalar_const(p, site)
    base, off, st = p.base_view()
    new_st = c_strides(shape)
    if p.kind == "view" and tuple(st) != c_strides(p.shape):
        new_st = _nocopy_strides(p.shape, st, shape) if p.size else new_st
        if new_st is None:      # (not expressible with strides: NumPy copies too)
            c = astype(_wrap(p), p.dtype, site=site)
            return reshape(c, shape, site=site)
    return _view(p, off, shape, new_st, site, src=x)


def _nocopy_strides(old_shape, old_strides, shape):
    """The strides of ``shape`` as a view of the strided array (``old_shape``,
    ``old_strides``, in elements), or None when a copy is needed: NumPy's
    ``_attempt_nocopy_reshape`` (C order), so that a reshape is a view exactly when NumPy's
    is (``a[::-1].reshape(-1)``, ``b.T.ravel()`` of an (n, 1) array)."""
    od = [(n, s) for n, s in zip(old_shape, old_strides) if n != 1]
    new_st = [0] * len(shape)
    oi, oj, ni, nj = 0, 1, 0, 1
    while ni < len(shape) and oi < len(od):
        np_, op = shape[ni], od[oi][0]
        while np_ != op:
            if np_ < op:
                np_ *= shape[nj]
                nj += 1
            else:
                op *= od[oj][0]
                oj += 1
        for ok in range(oi, oj - 1):
            if od[ok][1] != od[ok + 1][0] * od[ok + 1][1]:
                return None
        new_st[nj - 1] = od[oj - 1][1]
        for nk in range(nj - 1, ni, -1):
            new_st[nk - 1] = new_st[nk] * shape[nk]
        ni, oi = nj, oj
        nj, oj = nj + 1, oj + 1
    last = new_st[ni - 1] if ni >= 1 else 1
    for nk in range(ni, len(shape)):
        new_st[nk] = last
    return new_st


def transpose(x, axes=None, site=None):
    site = site or callsite()
    p = operand(x, site)
    nd = len(p.shape)
    if axes is None:
        axes = tuple(reversed(range(nd)))
    for a in axes if axes and len(axes) == nd else ():
        if not -nd <= int(a) < nd:
            raise record_error(StreamrtAxisError, f"transpose: axis {a} is out of bounds for "
                               f"array of dimension {nd}", site)
    axes = tuple(int(a) % nd if nd else 0 for a in axes) if axes else ()
    if sorted(axes) != list(range(nd)):
        raise record_error(ArgumentError, f"axes {axes} don't match array of {nd} dims", site)
    base, off, st = p.base_view()
    return _view(p, off, [p.shape[a] for a in axes], [st[a] for a in axes], site, src=x)


def broadcast_to(x, shape, site=None):
    site = site or callsite()
    p = operand(x, site)
    if p.kind == "scalar":
        p = scalar_const(p, site)
    shape = tuple(shape)
    try:
        if tuple(np.broadcast_shapes(p.shape, shape)) != shape:
            raise ValueError
    except ValueError:
        raise record_error(ShapeError, f"cannot broadcast shape {p.shape} to {shape}", site) from None
    base, off, st = p.base_view()
    nd = len(shape)
    new_st = [0] * nd
    for j, s in enumerate(p.shape):
        k = nd - len(p.shape) + j
        new_st[k] = st[j] if s != 1 else 0
    return _view(p, off, shape, new_st, site, src=x)


# ---- the C record path ----------------------------------------------------------------------
# When the extension is built and on, Array's operators, its finalizer and ``_enqueue_plain``
# are replaced by their C twins (frontend/native.py; the Python above stays the definition and
# takes every case the C path leaves to it). native.py reads this module's classes and memos.
_enqueue_plain = _native.install(_enqueue_plain)
_T_NOW = _native.transpose_now()        # (Array.T on the NumPy tier, in C)
