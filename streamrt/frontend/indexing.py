"""Mutation with NumPy semantics on lazy arrays: slice assignment, in-place operators, integer
and boolean array indexing (gather and scatter) and the index functions built on them.

A write never changes a computed buffer behind a reader's back. ``a[region] = v`` records an
*update* port -- the base's new value -- and rebinds every Array that aliases the old base (the
array itself, its views, views of its views) to it, so a write through one alias is seen
through all of them, while ops recorded earlier keep reading the old value (NumPy's "the right
side is evaluated fully first", e.g. ``u[1:-1] = u[:-2] + u[2:]``). ProgGen fuses the update
into the kernel that computes ``v``: that kernel stores straight into the region of the
target's buffer, which is the base's own buffer when nothing else can read the old value
(proggen/analysis.py: inplace_updates), else a copy of it.

Advanced indexes (integer and boolean arrays) are data: they are evaluated when the indexing
op is recorded (the result's shape depends on them); the array being indexed stays lazy and
the gather/scatter runs as an intrinsic."""
from __future__ import annotations

import weakref

import numpy as np

from ..core import dtypes as D, hooks
from ..core.config import settings
from ..core.ir import DONE, Port, c_strides, is_scratch, scratch_written, strided
from ..core.errors import (ArgumentError, DTypeError, ShapeError, StreamrtIndexError,
                           StreamrtOverflowError, callsite, record_error)
from ..core.errors import MacroError
from ..core.ops import OPS
from ..backends.intrinsics import INTRINSICS
from ..runtime import cscheduler, tiers as _tiers
from ..runtime.workqueue import current_queue
from . import array as _array


# ---- aliases ----------------------------------------------------------------------------------
def register(base, arr):
    """Note that Array ``arr`` reads base port ``base`` (directly or through a view)."""
    h = base.holders
    if h is None:
        base.holders = {id(arr): weakref.ref(arr)}
        return
    if id(arr) in h and h[id(arr)]() is arr:             # already noted (views of a view)
        return
    n = len(h)
    if n >= 32 and n & (n - 1) == 0:                      # prune dead entries now and then
        for k in [k for k, r in h.items() if r() is None]:
            del h[k]
    h[id(arr)] = weakref.ref(arr)


def _base_of(p):
    return p.inputs[0] if p.kind == "view" else p


def rebind(old, new, extra, site):
    """Every Array aliasing base ``old`` now aliases base ``new`` (same shape and dtype)."""
    arrs = {}
    for r in (old.holders or {}).values():
        a = r()
        if a is not None:
            arrs[id(a)] = a
    for a in extra:
        arrs[id(a)] = a
    q = current_queue()
    for a in arrs.values():
        p = a._port
        if p is old:
            a._port = new
            new.nrefs += 1
            register(new, a)
            _array._decref(old)
        elif p.kind == "view" and p.inputs[0] is old:
            nv = Port("view", "view", p.dtype, p.shape, (new,), p.params, site)
            new.nrefs += 1
            if new.state == DONE:
                nv.state = DONE
            else:
                nv.queue = q
                q.compute(nv)
            a._port = nv
            nv.nrefs += 1
            register(new, a)
            _array._decref(p)


def _check_macro_input(base, site):
    rec = current_queue().recording
    if rec is not None and base.id in rec.input_ids:
        raise record_error(MacroError, f"assignment to an input of the macro {rec.name!r}: "
                           "inputs are read-only inside a macro (copy it first: "
                           "x = x.copy())", site)


def _check_writable(p, site):
    """A broadcast view (a zero stride over a length > 1 dim) is read-only, as in NumPy."""
    if p.kind == "view" and any(s == 0 and n > 1 for n, s in zip(p.shape, p.params[1])):
        raise record_error(ValueError, "assignment destination is read-only (a broadcast "
                           "view: copy it first)", site)


# ---- values ---------------------------------------------------------------------------------
def _value_port(value, dt, tshape, site):
    """The assigned value as a port broadcastable to ``tshape`` (NumPy's setitem casting:
    any value converts, Python integers must fit, NaN/inf do not become integers)."""
    if isinstance(value, (bool, int, float, np.bool_, np.integer, np.floating)):
        if D.is_int(dt) and isinstance(value, (int, np.integer)) and not isinstance(value, bool):
            info = np.iinfo(dt)
            if not info.min <= int(value) <= info.max:
                raise record_error(StreamrtOverflowError, f"Python integer {int(value)} out of "
                                   f"bounds for {dt}", site)
        if D.is_int(dt) and isinstance(value, (float, np.floating)) and not np.isfinite(value):
            raise record_error(ValueError, f"cannot convert float {value} to integer", site)
        return _array.const_port(np.asarray(value).astype(dt), site)
    v = _array.operand(value, site)
    if v.kind == "scalar":
        v = _array.const_port(np.asarray(v.scalar), site)
    vshape = v.shape
    try:
        # (equal shapes broadcast: NumPy's broadcast_shapes costs ~3 us a region write)
        if tuple(vshape) != tuple(tshape) and \
                tuple(np.broadcast_shapes(vshape, tshape)) != tuple(tshape):
            raise ValueError
    except ValueError:
        if len(vshape) > len(tshape) and all(s == 1 for s in vshape[:len(vshape) - len(tshape)]):
            pass
        else:
            raise record_error(ShapeError, f"could not broadcast input array from shape "
                               f"{vshape} into shape {tshape}", site) from None
    if len(vshape) > len(tshape):            # NumPy drops leading length-1 dims of the value
        v = _array.reshape(_array.Array._wrap(v), vshape[len(vshape) - len(tshape):],
                           site=site)._port
    return v


def _full(base, off, shape, st):
    return off == 0 and tuple(shape) == tuple(base.shape) and all(
        n == 1 or s == c for n, s, c in zip(shape, st, c_strides(shape)))


def write_in_place(base, off, shape, st, value, site, key=None, flat=False, owned=False):
    """The NumPy tier's write (runtime/tiers.py): ``base`` is a computed host buffer, so
    the region is written in place with NumPy's own assignment -- every view of the buffer
    sees it, as in NumPy -- once the recorded work that reads the buffer has run. ``key``:
    an advanced index into the region (a scatter). False when the write must be recorded
    instead: the base is not computed, a macro is being recorded, or the value is still to
    be computed and no NumPy-tier view needs the buffer itself (the recorded update then
    fuses into the kernel computing the value). ``owned``: see ``write_region``."""
    bv = base.value
    if base.state != DONE or type(bv) is not np.ndarray or not _tiers.eager_now():
        return False
    if isinstance(value, _array.Array):
        vh = _array.host(value)
        if vh is None:
            if not base.eager_views:
                return False
            if key is None and _write_through(base, off, shape, st, value, site, owned):
                return True
            vh = value.numpy()
    else:
        vh = value
    _tiers.settle(base)
    if is_scratch(base):        # (concatenate/roll's new buffer now holds this piece)
        scratch_written(base)
    dst = strided(bv, off, shape, st)
    try:
        if key is None:
            if type(vh) is np.ndarray and vh.__array_interface__ == dst.__array_interface__:
                return True     # a region assigned to itself (``a[1:4] *= 3`` ends with one)
            dst[...] = vh
        elif flat:
            if dst.flags.c_contiguous:
                dst.reshape(-1)[key] = vh
            else:
                t = dst.reshape(-1)             # (a copy: written back)
                t[key] = vh
                dst[...] = t.reshape(dst.shape)
        else:
            dst[key] = vh
    except (ValueError, TypeError, OverflowError, IndexError):
        return False        # (raised before writing: the recorded path raises streamrt's error)
    _tiers.note_eager()
    return True


def _write_through(base, off, shape, st, value, site, owned=False):
    """``base[region] = value`` now, ``value`` still to be computed by this thread's recorded
    work and NumPy-tier views showing ``base``'s buffer (the left side of ``C[:i] += t``
    is one): the region write is recorded and flushed at once, with ``base`` offered to the
    compiler as a buffer its kernel may write in place (cscheduler.reusable_bases). The
    kernel computing ``value`` then stores straight into the region, as NumPy's in-place
    operators do, instead of into a new array copied over afterwards; when it may not (its
    reads of ``base`` are not at the written elements), the region of the result it wrote is
    copied in. False: not for this write (the value belongs to another thread's work)."""
    q = current_queue()
    if value._port.queue is not q or q.recording is not None:
        return False
    v = _value_port(value, base.dtype, shape, site)
    _tiers.settle(base, own=q)  # (the recorded work of other threads reading base runs first)
    u = _array._enqueue(update_port(base, v, off, shape, st, site))
    # (a value port no Array holds -- a temporary, or made here by a cast -- may be computed
    # straight into the region: cscheduler._run_statement)
    private = v if owned or v is not value._port else None
    cscheduler.flush(q, reason="write", through=base, private=private)
    cscheduler.ensure(u._port)
    out = u._port.value
    bv = base.value
    if not (type(out) is np.ndarray and np.shares_memory(out, bv)):
        strided(bv, off, shape, st)[...] = strided(u._port.host_value(), off, shape, st)
    return True


def write_region(arr, off, shape, st, value, site, owned=False):
    """``base(arr)[region] = value`` with NumPy semantics (see the module docstring).
    ``owned``: ``value`` is a temporary Array nobody else holds (its port may be adopted)."""
    base = _base_of(arr._port)
    _check_macro_input(base, site)
    _check_writable(arr._port, site)
    if write_in_place(base, off, shape, st, value, site, owned=owned):
        return
    dt = base.dtype
    v = _value_port(value, dt, shape, site)
    if v.kind == "view" and v.inputs[0] is base and v.shape == tuple(shape) and \
            v.params == (int(off), tuple(st)):
        return          # a region assigned to itself (``a[1:4] *= 3`` ends with one)
    if _full(base, off, shape, st):
        # the whole array is replaced: the new value is simply the (cast, broadcast) value
        if owned and v.kind == "map" and v.shape == tuple(shape) and v.dtype == dt:
            new = v
        else:
            va = _array.broadcast_to(_array.Array._wrap(v), tuple(shape), site=site) \
                if v.shape != tuple(shape) else _array.Array._wrap(v)
            new = _array.astype(va, dt, site=site)._port
            if new.kind != "map":           # a folded constant: copy it into a fresh port
                new = _array._enqueue(Port("map", "astype", dt, tuple(shape), (new,), (), site,
                                    loop_dtype=dt))._port
    else:
        new = _array._enqueue(update_port(base, v, off, shape, st, site))._port
    new.nrefs += 1                      # held while rebinding (the temporary Array may die)
    rebind(base, new, (arr,), site)
    new.nrefs -= 1


def update_port(base, value, off, shape, st, site):
    """The region write ``base[region] = value`` (region: element offset, shape, strides) as
    a new version of ``base`` (proggen/kernel.py ``is_update``)."""
    return Port("intrinsic", "update", base.dtype, base.shape, (base, value),
                (int(off), tuple(shape), tuple(st)), site)


def setitem(arr, key, value):
    site = callsite()
    if isinstance(key, Array_t()):
        key = _eval_index(key, site)
    r = _array.basic_index(arr._port, key, site)
    if r is None:
        return scatter(arr, key, value, site)
    off, shape, st = r
    write_region(arr, off, shape, st, value, site)


def Array_t():
    return _array.Array


def _ufunc_name(name):
    return OPS[name].ufunc or name


def _inplace_now(name, a, other, site):
    """The NumPy tier's ``a op= b``: NumPy's own in-place ufunc into ``a``'s computed buffer
    (its casting rule and errors), when ``a`` and ``b`` are computed and small -- or, at any
    size, when NumPy-tier views of ``a``'s base make the write happen now."""
    lim = settings.eager_elements
    av = _array.host(a)
    if av is None or not _tiers.eager_now():
        return False
    base = a._b if a._p is None else _base_of(a._p)
    if av.size >= lim:
        # a large target only when the write has to happen now anyway -- NumPy-tier views
        # show its buffer (``C[:i] += t`` writes through one) -- and the operand is computed
        # too: one op that nothing can fuse with, best run as NumPy's own
        if base is None or not base.eager_views:
            return False
        lim = None
    if isinstance(other, _array.Array):
        ov = _array.host(other)
        if ov is None or lim is not None and ov.size >= lim:
            return False
    elif isinstance(other, (bool, int, float, complex, np.generic)):
        ov = other
    elif type(other) is np.ndarray and other.dtype in D.SUPPORTED_SET and (
            lim is None or other.size < lim):
        ov = other
    else:
        return False
    uf = getattr(np, OPS[name].ufunc)
    if base is not None:
        _tiers.settle(base)
    loop = hooks.ufunc_loop if lim is None else None
    try:
        # a large one by the ufunc's loop, cut over two threads (its bits and errors NumPy's)
        if loop is None or loop(uf, (av, ov), av) is None:
            uf(av, ov, out=av)
    except (ValueError, TypeError, OverflowError):
        return False        # (raised before writing: the recorded path raises streamrt's error)
    _tiers.note_eager()
    return True


def make_inplace(name):
    """``a op= b``: NumPy's ``np.<ufunc>(a, b, out=a)`` (casting 'same_kind', no broadcasting
    of the output), written into ``a`` and every alias of it."""
    def f(self, other):
        site = callsite()
        if _inplace_now(name, self, other, site):
            return self
        r = _array.record_map(name, self, other, site=site)
        if r.dtype != self.dtype and not np.can_cast(r.dtype, self.dtype, "same_kind"):
            raise record_error(DTypeError, f"Cannot cast ufunc '{_ufunc_name(name)}' output "
                               f"from dtype('{r.dtype}') to dtype('{self.dtype}') with casting "
                               "rule 'same_kind'", site)
        if r.shape != self.shape:
            raise record_error(ShapeError, f"non-broadcastable output operand with shape "
                               f"{self.shape} doesn't match the broadcast shape {r.shape}", site)
        p, new = self._port, r._port
        if p.kind != "view" and new.kind == "map" and new.dtype == p.dtype and (
                _tiers.concrete(p) is None or not p.eager_views and new.state != DONE):
            # the whole of a base array, same dtype: what write_region's full-array branch
            # ends with, without re-deriving the value port and the region
            _check_macro_input(p, site)
            new.nrefs += 1
            rebind(p, new, (self,), site)
            new.nrefs -= 1
            return self
        _, off, st = p.base_view()
        write_region(self, off, self.shape, st, r, site, owned=True)
        return self
    f.__name__ = f"__i{name}__"
    f._inplace_op = name          # (the C path's NumPy-tier in-place operator: frontend/native.py)
    return f


# ---- advanced indexing ------------------------------------------------------------------------
def _eval_index(k, site):
    """An index array as host data (Arrays are evaluated: the result shape depends on them)."""
    if isinstance(k, _array.Array):
        k = k.numpy()
    a = np.asarray(k)
    if a.dtype == object or (a.dtype.kind not in "biu" and a.size) or a.dtype.kind in "fc" \
            and a.size:
        raise record_error(StreamrtIndexError, "arrays used as indices must be of integer "
                           f"(or boolean) type, got {a.dtype}", site)
    if a.dtype.kind not in "biu":
        a = a.astype(np.intp)
    return a


def _normalize_key(key, site):
    """(key with host index arrays, positions of the arrays in it)."""
    if not isinstance(key, tuple):
        key = (key,)
    out, arrays = [], []
    for k in key:
        if isinstance(k, (_array.Array, np.ndarray, list)) or isinstance(k, (bool, np.bool_)):
            a = _eval_index(k, site) if not isinstance(k, (bool, np.bool_)) else np.bool_(k)
            arrays.append(len(out))
            out.append(a)
        else:
            out.append(k)
    return tuple(out), arrays


def _probe_shape(shape, key, site):
    """The shape of ``x[key]`` for an array of ``shape`` (NumPy's checks and errors). A lone
    boolean mask over the leading axes is counted (the probe's gather of a 500 x 500 mask
    took ~80 µs, the count ~10); anything else indexes a zero-strided probe."""
    if len(key) == 1:
        m = key[0]
        if type(m) is np.ndarray and m.dtype == np.bool_ and 0 < m.ndim <= len(shape) and \
                m.shape == tuple(shape[:m.ndim]):
            return (int(np.count_nonzero(m)),) + tuple(shape[m.ndim:])
    probe = np.broadcast_to(np.zeros((), np.int8), shape)
    try:
        return probe[key].shape
    except IndexError as e:
        raise record_error(StreamrtIndexError, str(e), site) from None
    except (TypeError, ValueError) as e:
        raise record_error(ArgumentError, str(e), site) from None


def _split(key, arrays, site):
    """Key arrays become const ports (inputs of the intrinsic); the static rest is a param."""
    spec, ins = [], []
    for i, k in enumerate(key):
        if i in arrays:
            spec.append(("arr", len(ins)))
            ins.append(_array.const_port(np.asarray(k), site))
        else:
            spec.append(_array._static_key((k,))[0] if k is not None else None)
    return tuple(spec), ins


def _key(k):
    """Static index key (tuples of ('s', start, stop, step) / ('i', n) / None / Ellipsis)."""
    out = []
    for e in k:
        if isinstance(e, tuple) and e and e[0] == "s":
            out.append(slice(e[1], e[2], e[3]))
        elif isinstance(e, tuple) and e and e[0] == "i":
            out.append(e[1])
        elif e == "...":
            out.append(Ellipsis)
        else:
            out.append(e)
    return tuple(out)



def rebuild_key(spec, arrays):
    out = []
    for e in spec:
        if isinstance(e, tuple) and e and e[0] == "arr":
            out.append(arrays[e[1]])
        else:
            out.append(_key((e,))[0])
    return tuple(out)


def gather(arr, key, site=None):
    """``arr[key]`` with integer/boolean array indexes: a gather intrinsic (``arr`` stays lazy)."""
    site = site or callsite()
    key, arrays = _normalize_key(key, site)
    p = arr._port
    shape = _probe_shape(p.shape, key, site)
    spec, ins = _split(key, arrays, site)
    return _array._enqueue(Port("intrinsic", "gather", p.dtype, tuple(shape), (p, *ins), (spec,),
                                site))


def scatter(arr, key, value, site=None, flat=False):
    """``arr[key] = value`` with array indexes (``flat``: on the raveled array, like put)."""
    site = site or callsite()
    key, arrays = _normalize_key(key, site)
    base = _base_of(arr._port)
    _check_macro_input(base, site)
    _check_writable(arr._port, site)
    p = arr._port
    tshape = _probe_shape((p.size,) if flat else p.shape, key, site)
    v = _value_port(value, p.dtype, tshape, site)
    spec, ins = _split(key, arrays, site)
    _, off, st = p.base_view()
    idx = [i.value if i.kind == "const" else None for i in ins]
    if all(i is not None for i in idx) and write_in_place(
            base, off, p.shape, st, value, site, key=rebuild_key(spec, idx), flat=flat):
        return
    new = _array._enqueue(Port("intrinsic", "scatter", base.dtype, base.shape, (base, v, *ins),
                        (spec, int(off), tuple(p.shape), tuple(st), bool(flat)), site))._port
    new.nrefs += 1
    rebind(base, new, (arr,), site)
    new.nrefs -= 1


def run_gather(p, a, *arrays):
    return np.asarray(a)[rebuild_key(p.params[0], arrays)]


def run_scatter(p, old, value, *arrays):
    spec, off, shape, st, flat = p.params
    out = np.array(old, copy=True, order="C")
    target = strided(out, off, shape, st)
    if flat:
        target = target.reshape(-1)          # a copy for a non-contiguous view: write back
        target[rebuild_key(spec, arrays)] = value
        strided(out, off, shape, st)[...] = target.reshape(shape)
    else:
        target[rebuild_key(spec, arrays)] = value
    return out


def _install():
    INTRINSICS["gather"] = run_gather
    INTRINSICS["scatter"] = run_scatter


_install()
