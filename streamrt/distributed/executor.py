"""Dask executor: a program sequence over arrays partitioned along axis 0 in, Dask tasks out --
one task per chunk per fused kernel (the kernel's generated source is shipped and compiled once
per worker process through the program cache), a small combine tree per fused reduction over
the chunked axis, one whole-array task per intrinsic. Results stay on the workers (as Dask
futures in a ``DistValue``) until read; a read gathers only the chunks it needs."""
from __future__ import annotations

import collections
import itertools
import math
import threading
import weakref

import numpy as np

from ..core import stats
from ..core.config import settings
from ..core.ops import REDUCTIONS
from ..core.ir import strided
from ..compiler import plan
from ..backends.base import Executor, kernel_scalar, ref_value
from ..backends.numba_cpu import render as render_numba
from ..backends import numba_cpu
from ..backends.numba_cpu.executor import kernel_partials

_task_ids = itertools.count(1)


# ---- values that live on the cluster ----------------------------------------------------------
class DistValue:
    """An array value held by Dask workers: chunk ``i`` holds rows ``bounds[i]:bounds[i+1]``
    of axis 0 (``bounds`` is None for a 0-d value, which has one chunk). Each chunk is a pair
    (future, item): the future's result, or item ``item`` of its tuple result."""

    __slots__ = ("shape", "dtype", "bounds", "refs", "sites", "_host", "__weakref__")

    def __init__(self, shape, dtype, bounds, refs, sites=()):
        self.shape, self.dtype, self.bounds, self.refs = tuple(shape), dtype, bounds, refs
        self.sites = tuple(sites)
        self._host = None

    @property
    def nchunks(self):
        return len(self.refs) if self.refs else 0

    def __repr__(self):
        return f"DistValue({self.dtype}{list(self.shape)}, {self.nchunks} chunks)"

    # ---- reads --------------------------------------------------------------------------
    def _gather(self, idxs):
        from ..core.errors import ExecutionError
        if not self.refs:
            raise RuntimeError(f"internal error: {self!r} was released on the cluster before "
                               "it was read")
        refs = [self.refs[i] for i in idxs]
        try:
            vals = _client_of(refs).gather([f for f, _ in refs])
        except Exception as e:  # noqa: BLE001 - delivered with the call sites
            sites = "\n  ".join(str(s) for s in self.sites) or "(unknown)"
            raise ExecutionError(f"{type(e).__name__}: {e}\n in a Dask task computing ops "
                                 f"recorded at:\n  {sites}") from e
        out = [v if it is None else v[it] for v, (_, it) in zip(vals, refs)]
        stats.add("dask_bytes_gathered", sum(int(np.asarray(a).nbytes) for a in out))
        stats.add("dask_chunks_gathered", len(out))
        return out

    def host(self):
        """The whole value as one host array (gathered once, then kept)."""
        if self._host is None:
            parts = self._gather(range(self.nchunks))
            a = parts[0] if len(parts) == 1 else np.concatenate(parts)
            self._host = np.ascontiguousarray(a, dtype=self.dtype).reshape(self.shape)
        return self._host

    def host_view(self, off, shape, st):
        """A strided view (element offset and strides into this value's C layout), gathering
        only the chunks whose rows it touches."""
        if self._host is not None or self.bounds is None or self.nchunks == 1 or not shape \
                or math.prod(shape) == 0:
            return strided(np.asarray(self.host()), off, shape, st)
        R = math.prod(self.shape[1:])
        lo, hi = _extent(off, shape, st)
        b0, b1 = lo // R, hi // R + 1
        idxs = [i for i in range(self.nchunks)
                if self.bounds[i] < b1 and self.bounds[i + 1] > b0]
        parts = self._gather(idxs)
        c0 = self.bounds[idxs[0]]
        a = parts[0] if len(parts) == 1 else np.concatenate(parts)
        a = np.ascontiguousarray(a, dtype=self.dtype)
        return np.array(strided(np.asarray(a), off - c0 * R, shape, st))


PENDING = DistValue((), None, None, None)   # placeholder: computed on the cluster, not launched


def _client_of(refs):
    for f, _ in refs:
        c = getattr(f, "client", None)
        if c is not None:
            return c
    from .. import distributed
    return distributed.get_client()


def _extent(off, shape, st):
    """(lowest, highest) element index a strided view touches."""
    lo = hi = off
    for n, s in zip(shape, st):
        lo += min(0, (n - 1) * s)
        hi += max(0, (n - 1) * s)
    return lo, hi


# ---- worker side ------------------------------------------------------------------------------
def _assemble(pieces):
    """One contiguous array from row pieces [(value, item, lo, hi)] of one base."""
    arrs = []
    for v, item, lo, hi in pieces:
        a = v if item is None else v[item]
        if lo is not None:
            a = a[lo:hi]
        arrs.append(a)
    a = arrs[0] if len(arrs) == 1 else np.concatenate(arrs)
    return np.ascontiguousarray(a)


class Local:
    """A piece produced earlier in the same group task (output ``i`` of its step list)."""
    __slots__ = ("i",)

    def __init__(self, i):
        self.i = i

    def __reduce__(self):
        return (Local, (self.i,))


def _kernel_outputs(k, table, bufs, stores, scalars, reds, partials, K, shifts):
    from ..backends.numba_cpu import program_cache
    args = [table] + bufs
    outs = [np.empty(s, d) for s, d in stores]
    args += [o.reshape(-1) for o in outs]
    args += list(scalars)
    routs = [np.empty(s, d) for s, d in reds]
    if reds:
        args += [r.reshape(-1) for r in routs]
        args += kernel_partials(partials, K)
        args.append(1)
    program_cache.call(k, True, args)      # serial: Dask's parallelism is across chunks
    for j, shift in shifts:
        routs[j] += shift
    return outs + routs


def run_group(steps, keep):
    """Worker: run the fused kernels of one chunk, in order (one task per chunk for a run of
    chunk-aligned kernels). Each step: (source, fn, table, bases, load_base, stores, scalars,
    reds, partials, K, shifts); ``bases`` are row pieces of each local buffer, a ``Local``
    piece being an output of an earlier step. Returns the outputs listed in ``keep`` (one
    array or a tuple)."""
    from ..backends.numba_cpu import program_cache
    got = []
    for source, fn, table, bases, load_base, stores, scalars, reds, partials, K, shifts \
            in steps:
        k = program_cache.numba_kernels(source, fn)
        bufs = []
        for pieces in bases:
            pieces = [(got[v.i], None, lo, hi) if isinstance(v, Local) else (v, it, lo, hi)
                      for v, it, lo, hi in pieces]
            bufs.append(_assemble(pieces).reshape(-1))
        got.extend(_kernel_outputs(k, table, [bufs[i] for i in load_base], stores, scalars,
                                   reds, partials, K, shifts))
    res = [got[i] for i in keep]
    return res[0] if len(res) == 1 else tuple(res)


def _merge(op, a, b):
    merge = REDUCTIONS[op].merge
    if merge is not None:
        return (merge(a[0], b[0]),)
    ia, va = a                  # slots: (index, value at the index) of each chunk
    ib, vb = b
    better = (vb > va) if op == "argmax" else (vb < va)
    take = (va == va) & ((vb != vb) | better)       # the first NaN wins, then the extreme
    return (np.where(take, ib, ia), np.where(take, vb, va))


def combine(specs, pos, final, *results):
    """Worker: combine the partial results of consecutive chunks (in chunk order). ``specs``:
    per reduction (op, number of slots, out dtype, count); ``pos``: where the slots sit in each
    result. ``final``: also finish (mean division, cast to the result dtype)."""
    rows = []
    for r in results:
        t = r if isinstance(r, tuple) else (r,)
        rows.append([t[i] for i in pos])
    acc = rows[0]
    for row in rows[1:]:
        new, i = [], 0
        for op, n, _, _ in specs:
            new.extend(_merge(op, acc[i:i + n], row[i:i + n]))
            i += n
        acc = new
    if not final:
        return tuple(acc)
    out, i = [], 0
    for op, n, out_dt, count in specs:
        if op == "mean":
            v = acc[i] / count
        else:
            v = acc[i]
        out.append(np.asarray(v).astype(out_dt))
        i += n
    return out[0] if len(out) == 1 else tuple(out)


class _Spec:
    """A picklable stand-in for a port, for evaluating an intrinsic on a worker."""
    def __init__(self, p, inputs):
        self.kind, self.op, self.dtype, self.shape = p.kind, p.op, p.dtype, p.shape
        self.params, self.loop_dtype, self.scalar = p.params, p.loop_dtype, p.scalar
        self.inputs = inputs
        self.size = math.prod(p.shape)


def run_whole(spec, args):
    """Worker: evaluate one non-fusible op on whole (assembled) inputs."""
    from ..backends.base import run_refop
    vals = []
    for a in args:
        if a[0] == "scalar":
            vals.append(a[1])
        else:
            _, pieces, off, shape, st, view = a
            base = _assemble(pieces)
            vals.append(np.array(strided(np.asarray(base), off, shape, st)) if view else base)
    return np.ascontiguousarray(run_refop(spec, lambda i: vals[i]))


# ---- client side: planning a kernel over chunks --------------------------------------------
def _value(b):
    v = b.value
    if isinstance(v, (np.ndarray, DistValue)):
        return v
    return v.host() if hasattr(v, "host") else np.asarray(v)


def _rows(b, b0, b1, whole):
    """Pieces of base port ``b`` covering rows [b0, b1) (all of it when ``whole``)."""
    v = _value(b)
    if isinstance(v, DistValue):
        if v.bounds is None or whole:
            return [(f, it, None, None) for f, it in v.refs]
        out = []
        for i, (f, it) in enumerate(v.refs):
            c0, c1 = v.bounds[i], v.bounds[i + 1]
            if c0 < b1 and c1 > b0:
                lo, hi = max(b0, c0) - c0, min(b1, c1) - c0
                out.append((f, it, None if (lo == 0 and hi == c1 - c0) else lo,
                            None if (lo == 0 and hi == c1 - c0) else hi))
        return out
    if whole or not v.shape:
        return [(v, None, None, None)]
    return [(np.ascontiguousarray(v[b0:b1]), None, None, None)]


def space_bounds(k):
    """Row bounds of the kernel's iteration space along axis 0: those of its most chunked
    distributed input read row-for-row (shifted by the view's row offset), else an even split
    into as many chunks as its most chunked input has; None for a 0-d space."""
    S = k.space
    if not S:
        return None
    S0 = S[0]
    best, most = None, 1
    for a in k.loads:
        v = a.port
        B, off, st = v.base_view()
        val = _value(B)
        if not isinstance(val, DistValue) or val.bounds is None:
            continue
        most = max(most, val.nchunks)
        if len(v.shape) != len(S) or v.shape[0] != S0 or not B.shape:
            continue
        R = math.prod(B.shape[1:])
        if R == 0 or st[0] != R:
            continue
        c = off // R
        b = sorted({min(max(x - c, 0), S0) for x in val.bounds} | {0, S0})
        if best is None or len(b) > len(best):
            best = b
    if best is None:
        n = max(1, min(most, S0))
        best = sorted({int(x) for x in np.linspace(0, S0, n + 1)})
    return best


def _local_shape(shape, S, n):
    if len(shape) == len(S) and shape and shape[0] == S[0]:
        return (n,) + tuple(shape[1:])
    return tuple(shape)


def plan_chunk(prog, r0, r1, partial, rows=None):
    """The kernel of ``prog`` restricted to space rows [r0, r1): (local kernel, pieces of each
    local base, base of each load, argmax index shifts). Loads of one base share one local
    buffer (the union of the rows they read: a stencil's shifted slices share their halo)."""
    from ..compiler.kernel import build_kernel
    from ..core.ir import Port
    k = prog.kernel
    S = k.space
    n = r1 - r0
    # rows of each base every load needs
    need = {}
    for a in k.loads:
        v = a.port
        B, off, st = v.base_view()
        whole = (len(v.shape) != len(S) or v.shape[0] != S[0] or not B.shape or st[0] == 0
                 or math.prod(B.shape[1:]) == 0)
        if whole:
            need[B.id] = (B, None)
            continue
        R = math.prod(B.shape[1:])
        lo, hi = _extent(off + r0 * st[0], (n,) + tuple(v.shape[1:]), st)
        rng = (lo // R, hi // R + 1)
        old = need.get(B.id)
        if old is None:
            need[B.id] = (B, rng)
        elif old[1] is not None:
            need[B.id] = (B, (min(old[1][0], rng[0]), max(old[1][1], rng[1])))
    shadow, bases, base_ix = {}, [], {}
    for bid, (B, rng) in need.items():
        b0, b1 = (0, B.shape[0] if B.shape else 0) if rng is None else rng
        shape = tuple(B.shape) if rng is None else (b1 - b0,) + tuple(B.shape[1:])
        sb = Port("const", "const", B.dtype, shape)
        base_ix[sb.id] = len(bases)
        bases.append((rows or _rows)(B, b0, b1, rng is None))
        shadow[("base", bid)] = (sb, b0 * math.prod(B.shape[1:]) if rng is not None else 0)
    for a in k.loads:
        v = a.port
        B, off, st = v.base_view()
        sb, shift = shadow[("base", B.id)]
        lshape = _local_shape(v.shape, S, n) if need[B.id][1] is not None else tuple(v.shape)
        loff = off - shift + (r0 * st[0] if need[B.id][1] is not None else 0)
        if v.kind != "view" and loff == 0 and lshape == sb.shape:
            shadow[v.id] = sb
        else:
            shadow[v.id] = Port("view", "view", v.dtype, lshape, (sb,), (int(loff), tuple(st)))
    ops, stored, shifts = [], set(), []
    for p in k.ops:
        ins = tuple(shadow.get(i.id, i) for i in p.inputs)
        if p.kind == "reduce":
            axes, keepdims, acc = p.params
            ish = ins[0].shape
            shape = tuple(1 if d in axes else s for d, s in enumerate(ish)) if keepdims else \
                tuple(s for d, s in enumerate(ish) if d not in axes)
            op, dt = p.op, p.dtype
            if partial and op not in ("argmax", "argmin"):
                op, dt = ("sum" if op == "mean" else op), acc
            q = Port("reduce", op, dt, shape, ins, p.params, p.site)
            ops.append(q)
            if partial and p.op in ("argmax", "argmin"):
                ops.append(Port("reduce", "max" if p.op == "argmax" else "min", acc, shape, ins,
                                p.params, p.site))
                shifts.append((p, r0 * math.prod(S[d] for d in axes if d != 0)))
        else:
            q = Port(p.kind, p.op, p.dtype, _local_shape(p.shape, S, n), ins, p.params, p.site,
                     scalar=p.scalar, loop_dtype=p.loop_dtype)
            ops.append(q)
            if p.id in prog.stored:
                stored.add(q.id)
        shadow[p.id] = q
    space = _local_shape(S, S, n)
    lk = build_kernel(ops, stored, space, k.axes)
    if lk.index is not None:            # counter-based RNG: the chunk's first flat element
        lk.index.off = r0 * math.prod(S[1:])
    load_base = [base_ix[a.port.base_view()[0].id] for a in lk.loads]
    return lk, bases, load_base, shifts, shadow, need


class DaskExecutor(Executor):
    """Runs program sequences on the Dask cluster of ``streamrt.distributed``."""
    name = "dask"
    # region writes and scans stay intrinsics (whole-array tasks): per-chunk planning knows
    # plain loads and stores only
    caps = dict(numba_cpu.BACKEND.caps, fuse_updates=False, fuse_scans=False, inline_scalars=False,
                row_fusion=False)

    def __init__(self):
        super().__init__()
        self.submitted = collections.deque(maxlen=4096)   # task keys, newest last
        self._window = collections.deque()                # per sequence: weakrefs to ports
        self._adm = threading.Lock()

    def alloc(self, shape, dtype):
        return PENDING

    def _client(self):
        from .. import distributed
        return distributed.get_client()

    def _submit(self, fn, *args, kind="k"):
        key = f"streamrt-{kind}-{next(_task_ids)}"
        f = self._client().submit(fn, *args, key=key, pure=False)
        self.submitted.append(key)
        stats.add("dask_tasks")
        stats.add(f"dask_{ {'k': 'kernel', 'c': 'combine', 'w': 'whole', 'r': 'rowwise'}[kind]}_tasks")
        return f

    # ---- the route (core/hooks.distributed, set by ps.distributed.connect) -----------------
    def route(self, entries, executor):
        """The executor a flush runs on: this one when it reads an array held by the cluster
        (every array it computes then lives on the cluster too), else ``executor``."""
        for e in entries:
            if e[0] != "compute":
                continue
            for i in e[1].inputs:
                b = i.inputs[0] if i.kind == "view" else i
                if isinstance(b.value, DistValue):
                    break
            else:
                continue
            break
        else:
            return executor
        ports = [e[1] for e in entries if e[0] == "compute" and e[1].kind != "view"]
        for p in ports:
            if p.value is None:
                p.value = PENDING
        self.admit(ports)
        return self

    # ---- flow control ---------------------------------------------------------------------
    def admit(self, ports):
        """Called by the C-Scheduler before a sequence is dispatched: at most
        ``STREAMRT_DASK_INFLIGHT`` sequences are computing on the cluster; past that the
        application waits (no spinning) for the oldest to finish there."""
        limit = max(1, settings.dask_inflight)
        with self._adm:
            while len(self._window) >= limit:
                self._drain(self._window.popleft())
            self._window.append([weakref.ref(p) for p in ports])

    def wait_all(self):
        """Block until every sequence submitted to the cluster has been computed there."""
        with self._adm:
            while self._window:
                self._drain(self._window.popleft())

    def _drain(self, refs):
        from ..runtime import cscheduler, escheduler
        es = escheduler.get(cscheduler.flow())
        futs = []
        for r in refs:
            p = r()
            if p is None:
                continue
            es.wait(p)
            v = p.value
            if isinstance(v, DistValue) and v.refs:
                futs.extend(f for f, _ in v.refs)
        if futs:
            from distributed import wait
            stats.add("dask_flow_waits")
            wait(futs)

    # ---- programs --------------------------------------------------------------------------
    def launch(self, prog):
        """Run one program on its own (the E-Scheduler path; ``run_sequence`` is the usual
        one)."""
        from ..runtime import cscheduler, escheduler
        g = _Group(self, escheduler.get(cscheduler.flow()), {})
        if prog.kind == "kernel":
            g.add(prog)
            g.flush(settle=False)
        else:
            self._launch_whole(prog)

    def run_sequence(self, seq):
        """Called by the C-Scheduler in place of the E-Scheduler: launches the whole sequence
        now, on the application thread (submitting tasks is asynchronous; nothing waits for
        the cluster). Consecutive kernels whose chunks line up row for row are grouped into
        one task per chunk; a kernel that reads a neighbour's rows, is chunked differently
        or reads a combined reduction starts a new group."""
        from ..runtime import cscheduler, escheduler
        from ..core.ir import FAILED, SUBMITTED
        stats.add("sequences_submitted")
        stats.add("dask_sequences")
        es = escheduler.get(cscheduler.flow())
        readers = {}
        for i, prog in enumerate(seq.programs):
            for d in prog.deps():
                readers.setdefault(d.id, set()).add(i)
        g = _Group(self, es, readers)
        for i, prog in enumerate(seq.programs):
            prog.executor = self
            prog.seq = seq
            g.index = i
            err = None
            try:
                deps = prog.deps()
                if any(d.id in g.out for d in deps) and not (
                        prog.kind == "kernel" and g.joinable(prog)):
                    g.flush()
                for d in deps:
                    if d.id in g.out:
                        continue
                    if d.state == SUBMITTED:
                        es.wait(d)
                    if d.state == FAILED:
                        err = d.error
                        break
                if err is None:
                    if prog.kind == "kernel":
                        if not g.joinable(prog):
                            g.flush()
                        g.add(prog)
                        if g.closed:
                            g.flush()
                    else:
                        g.flush()
                        self._launch_whole(prog)
                        stats.add("intrinsics_launched")
                        es._settle(prog, None)
            except Exception as e:  # noqa: BLE001 - delivered at the read
                err = e
                g.drop(prog)
            if err is not None:
                es._settle(prog, err)
        g.index = len(seq.programs)
        try:
            g.flush()
        except Exception as e:  # noqa: BLE001
            for prog in g.progs:
                es._settle(prog, e)
        seq.programs = []

    def _combine_tree(self, futs, specs, pos, nslots):
        """Partials of consecutive chunks combined by a tree of fan-in STREAMRT_DASK_FANIN."""
        level = futs
        F = max(2, settings.dask_fanin)
        while len(level) > F:
            level = [self._submit(combine, specs, pos, False, *level[i:i + F], kind="c")
                     for i in range(0, len(level), F)]
            pos = list(range(nslots))
        return self._submit(combine, specs, pos, True, *level, kind="c")

    def _launch_rowwise(self, p):
        """``A @ B`` with the rows of a 2-D ``A`` chunked: one task per chunk of A's rows
        (B whole in each), the result chunked like A. True if it applied."""
        import types
        if p.op != "matmul" or len(p.inputs) != 2:
            return False
        A, Bm = p.inputs
        if len(A.shape) != 2 or len(Bm.shape) not in (1, 2) or A.kind == "scalar" \
                or Bm.kind == "scalar":
            return False
        fake = types.SimpleNamespace(space=tuple(A.shape),
                                     loads=[types.SimpleNamespace(port=A)])
        bounds = space_bounds(fake)
        if bounds is None or len(bounds) <= 2:
            return False
        BA, off, st = A.base_view()
        if not BA.shape or st[0] == 0 or math.prod(BA.shape[1:]) == 0:
            return False
        R = math.prod(BA.shape[1:])
        BB, offb, stb = Bm.base_view()
        bargs = ("array", _rows(BB, 0, 0, True), offb, Bm.shape, stb, Bm.kind == "view")
        futs = []
        for r0, r1 in zip(bounds[:-1], bounds[1:]):
            n = r1 - r0
            lo, hi = _extent(off + r0 * st[0], (n, A.shape[1]), st)
            b0, b1 = lo // R, hi // R + 1
            aargs = ("array", _rows(BA, b0, b1, False), off + r0 * st[0] - b0 * R,
                     (n, A.shape[1]), st, True)
            spec = _Spec(p, [0, 1])
            spec.shape = (n,) + tuple(p.shape[1:])
            futs.append(self._submit(run_whole, spec, [aargs, bargs], kind="r"))
        p.value = DistValue(p.shape, p.dtype, bounds, [(f, None) for f in futs],
                            [p.site] if p.site is not None else [])
        return True

    def _launch_whole(self, prog):
        """A non-fusible op: ``A @ B`` over A's row chunks (``_launch_rowwise``), anything else
        one task over whole inputs (counted as dask_whole_tasks and dask_rechunks); its result
        is then one chunk."""
        for p in prog.ops:
            if self._launch_rowwise(p):
                continue
            stats.add("dask_rechunks")
            args, ins = [], []
            for i in p.inputs:
                ins.append(len(args))
                if i.kind == "scalar":
                    args.append(("scalar", ref_value(i)))
                    continue
                B, off, st = i.base_view()
                args.append(("array", _rows(B, 0, 0, True), off, i.shape, st, i.kind == "view"))
            spec = _Spec(p, ins)
            f = self._submit(run_whole, spec, args, kind="w")
            p.value = DistValue(p.shape, p.dtype, None if not p.shape else [0, p.shape[0]],
                                [(f, None)], prog.sites())


class _Group:
    """Kernels of one sequence that run chunk by chunk in the same tasks."""

    def __init__(self, ex, es, readers):
        self.ex, self.es, self.readers = ex, es, readers
        self.index = 0
        self._reset()

    def _reset(self):
        self.progs, self.bounds, self.chunks = [], None, None
        self.steps = None           # per chunk: list of step tuples
        self.out = {}               # port id -> output index in the step list (chunk-local)
        self.ports = []             # (port, output index) of every output, in order
        self.nout = 0
        self.partial = None         # (program, first partial slot) of a closing reduction
        self.closed = False
        self.plans = {}

    def _plan(self, prog):
        """Per-chunk plans of ``prog`` (cached), with pieces produced in this group local."""
        got = self.plans.get(prog)
        if got is not None:
            return got
        k = prog.kernel
        bounds = space_bounds(k)
        chunks = list(zip(bounds[:-1], bounds[1:])) if bounds and len(bounds) > 2 else [None]
        partial = len(chunks) > 1 and 0 in k.axes

        def rows(B, b0, b1, whole):
            j = self.out.get(B.id)
            if j is not None:
                return [(Local(j), None, None, None)]
            return _rows(B, b0, b1, whole)
        plans = []
        for c in chunks:
            if c is None:
                lk, shifts = k, []
                source, fn, table, partials = prog.source, prog.fn, prog.table, prog.partials
                bases, load_base, bix = [], [], {}
                for a in k.loads:
                    B = a.port.base_view()[0]
                    if B.id not in bix:
                        bix[B.id] = len(bases)
                        bases.append(rows(B, 0, 0, True))
                    load_base.append(bix[B.id])
                need = {}
            else:
                lk, bases, load_base, shifts, shadow, need = plan_chunk(prog, c[0], c[1],
                                                                        partial, rows)
                source, fn, table, partials = render_numba.render(lk, plan.choose(lk))
                shifts = [(lk.reductions.index(shadow[p.id]), s) for p, s in shifts]
            step = (source, fn, table, bases, load_base,
                    [(a.port.shape, a.port.dtype) for a in lk.stores],
                    [kernel_scalar(s) for s in lk.scalars],
                    [(r.shape, r.dtype) for r in lk.reductions], partials,
                    math.prod(lk.kept) if lk.kept else 1, shifts)
            plans.append((c, step, need, len(lk.stores), len(lk.reductions)))
        got = (bounds, chunks, partial, plans)
        self.plans = {prog: got}
        return got

    def joinable(self, prog):
        if not self.progs:
            return True
        if self.closed:
            return False
        bounds, chunks, partial, plans = self._plan(prog)
        if chunks != self.chunks:
            return False
        if chunks == [None]:
            return True
        for c, _, need, _, _ in plans:
            for bid, (B, rng) in need.items():
                if bid in self.out and rng != c:
                    return False
        return True

    def add(self, prog):
        bounds, chunks, partial, plans = self._plan(prog)
        if not self.progs:
            self.bounds, self.chunks = bounds, chunks
            self.steps = [[] for _ in chunks]
        k = prog.kernel
        first = self.nout
        for ci, (c, step, _, nst, nred) in enumerate(plans):
            self.steps[ci].append(step)
        nst, nred = plans[0][3], plans[0][4]
        sites = prog.sites()
        sb = bounds if len(chunks) > 1 else (None if not k.space else [0, k.space[0]])
        for j, a in enumerate(k.stores):
            a.port.value = DistValue(a.port.shape, a.port.dtype, sb, None, sites)
            self.out[a.port.id] = first + j
            self.ports.append((a.port, first + j))
        if partial:
            self.partial = (prog, first + nst)
            self.closed = True
            for r in k.reductions:
                r.value = DistValue(r.shape, r.dtype, None if not r.shape else [0, r.shape[0]],
                                    None, sites)
        else:
            for j, r in enumerate(k.reductions):
                rb = None if not r.shape else (sb if len(chunks) > 1 else [0, r.shape[0]])
                r.value = DistValue(r.shape, r.dtype, rb, None, sites)
                self.out[r.id] = first + nst + j
                self.ports.append((r, first + nst + j))
        self.nout = first + nst + nred
        self.progs.append(prog)
        self.plans = {}
        stats.add("dask_kernel_steps", len(chunks))

    def drop(self, prog):
        if prog in self.progs:
            self._reset()

    def flush(self, settle=True):
        if not self.progs:
            return
        keep = []
        for p, j in self.ports:
            rd = self.readers.get(p.id, ())
            if p.nrefs > 0 or any(i >= self.index for i in rd) or not self.readers:
                keep.append(j)
        nslots = 0
        if self.partial is not None:
            pprog, first = self.partial
            nslots = sum(2 if r.op in ("argmax", "argmin") else 1
                         for r in pprog.kernel.reductions)
            keep.extend(range(first, first + nslots))
        keep = sorted(set(keep))
        at = {j: q for q, j in enumerate(keep)}
        single = len(keep) == 1
        futs = [self.ex._submit(run_group, steps, keep) for steps in self.steps]
        for p, j in self.ports:
            v = p.value
            if j in at:
                v.refs = [(f, None if single else at[j]) for f in futs]
            else:
                v.refs = []          # released and read only inside the group: never kept
        if self.partial is not None:
            pprog, first = self.partial
            k = pprog.kernel
            specs = []
            for r in k.reductions:
                axes, _, _ = r.params
                count = math.prod(k.space[d] for d in axes)
                specs.append((r.op, 2 if r.op in ("argmax", "argmin") else 1, r.dtype, count))
            pos = [at[j] for j in range(first, first + nslots)]
            root = self.ex._combine_tree(futs, specs, pos, nslots)
            one = len(k.reductions) == 1
            for j, r in enumerate(k.reductions):
                r.value.refs = [(root, None if one else j)]
        progs = self.progs
        self._reset()
        for prog in progs:
            stats.add("kernels_launched")
            if settle:
                self.es._settle(prog, None)


_instance = None
_lock = threading.Lock()


def get() -> DaskExecutor:
    global _instance
    with _lock:
        if _instance is None:
            _instance = DaskExecutor()
        return _instance

