"""What runs on the Dask workers: one chunk's fused kernels in order (the generated source,
compiled once per worker process through the program cache), the combine step of a
reduction over chunks, and a whole-array intrinsic."""
from __future__ import annotations

import math

import numpy as np

from ..core.ir import strided
from ..core.ops import REDUCTIONS
from ..backends.base import run_refop
from ..backends.numba_cpu import program_cache
from ..backends.numba_cpu.executor import kernel_partials


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
    vals = []
    for a in args:
        if a[0] == "scalar":
            vals.append(a[1])
        else:
            _, pieces, off, shape, st, view = a
            base = _assemble(pieces)
            vals.append(np.array(strided(np.asarray(base), off, shape, st)) if view else base)
    return np.ascontiguousarray(run_refop(spec, lambda i: vals[i]))
