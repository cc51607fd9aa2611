"""CPU executor: generated Numba kernels (parallel=True, nogil=True) loaded through the program
cache; intrinsics run with NumPy. A kernel that fails to compile is split, then falls back to
the reference evaluation op by op; both are counted."""
from __future__ import annotations

import math
import os
import sys
import threading
import time

import numpy as np

from ...core import atfork, hooks, stats
from ...core.ops import OPS
from ...core.config import settings
from ...core.ir import c_strides, strided
from ... import compiler
from ..base import (Executor, interpret, keeps_answer, kernel_scalar, ref_value,
                    run_refop)
from . import jit, program_cache, render, scan

_layer_lock = threading.Lock()
_layer_set = False
OMP_SPINCOUNT = 10_000      # an idle OpenMP thread's pauses before it sleeps: ~0.2 ms
omp_spincount = None        # the GOMP_SPINCOUNT GNU OpenMP was loaded with (None: its own)


def _setup_numba():
    global _layer_set
    with _layer_lock:
        if _layer_set:
            return
        import numba    # (most of a second: at the first compiled launch, not at import)
        # GNU OpenMP reads how long its idle threads spin when it is loaded (omppool links
        # it): by default ~300,000 pauses (several ms on AMD cores), holding the second core
        # while the NumPy tier's BLAS or cut loops want it (docs/decisions.md). A value the
        # user set is kept; ours is taken out of the environment again (not inherited by
        # the program's child processes).
        global omp_spincount
        ours = "OMP_WAIT_POLICY" not in os.environ and "GOMP_SPINCOUNT" not in os.environ
        if ours:
            os.environ["GOMP_SPINCOUNT"] = str(OMP_SPINCOUNT)
        omp_spincount = os.environ.get("GOMP_SPINCOUNT")
        try:
            from numba.np.ufunc import omppool  # noqa: F401
            numba.config.THREADING_LAYER = "omp"
        except ImportError:
            numba.config.THREADING_LAYER = "workqueue"
        finally:
            if ours:
                os.environ.pop("GOMP_SPINCOUNT", None)
        _layer_set = True


def _after_fork():
    global _layer_lock
    _layer_lock = threading.Lock()


atfork.register(_after_fork)

def chunks_for(K, R0):
    """How many chunks a reduction's outer reduced dim is cut into (parallelism when K is small)."""
    if R0 < 8192:
        return 1                  # (before asking Numba: get_num_threads is not cheap)
    import numba        # (loaded by then: the executor loaded it)
    T = numba.get_num_threads()
    if K >= 4 * T:
        return 1
    want = max(1, (16 * T + K - 1) // K)
    return int(max(1, min(want, R0 // 4096)))


def _last_read(prog):
    """The ids of the constants ``prog`` is the last program of its sequence to read that
    nothing else can read (compiler/sequence.py ``mark_transient``'s ``elidable``): its
    interpreted ops may write into them, as NumPy writes into a dying temporary. None while
    the debugger compares a kernel's results with a reference run of its inputs."""
    seq = prog.seq
    if seq is None or not seq.elidable or hooks.on_complete is not None:
        return ()
    t, el = seq.transient, seq.elidable
    return [b.id for b in prog.bases() if b.id in el and t.get(b.id, (None, 0))[1] == 1]


def prepare_region_write(a, alloc):
    """The output buffer of a region write: the base's own buffer ('alias') or a copy of it."""
    u = a.port
    base = u.inputs[0].host_value()
    if a.role == "alias" and base.flags.c_contiguous:
        u.value = base
    else:
        if u.value is None:
            u.value = alloc(u.shape, u.dtype)
        if not _copy_complement(u.value, base, *u.params):
            np.copyto(u.value, base)


def _copy_complement(dst, src, off, shape, st):
    """Copy only the elements outside a rectangular unit-step region (the kernel writes the
    rest): for ``u[1:-1, 1:-1] = ...`` the boundary, not the whole array. False: not such a
    region (the caller copies everything)."""
    nd = src.ndim
    cs = c_strides(src.shape)
    if not src.size or len(shape) != nd or any(n > 1 and s != c for n, s, c in
                                                zip(shape, st, cs)):
        return False
    starts, rem = [], off
    for c in cs:
        q, rem = divmod(rem, c)
        starts.append(q)
    if rem or any(b + n > m for b, n, m in zip(starts, shape, src.shape)):
        return False
    for d in range(nd):
        pre = tuple(slice(starts[k], starts[k] + shape[k]) for k in range(d))
        for sl in (slice(0, starts[d]), slice(starts[d] + shape[d], None)):
            dst[pre + (sl,)] = src[pre + (sl,)]
    return True


def kernel_partials(spec, n, row=0):
    """The scratch arguments of a Numba reduction kernel (render.py): per-chunk
    partials (``n`` = K * C elements of each dtype), for blocked reductions one
    (threads, BLOCK) block per reduction (``("block", dtype)``), and for a row kernel's
    row-buffered values one (threads, ``row``) buffer each (``("row", dtype)``)."""
    out = []
    for s in spec:
        if isinstance(s, tuple):
            shape = _block_shape() if s[0] == "block" else (_block_shape()[0], row)
            out.append(np.empty(shape, s[1]))
        else:
            out.append(np.empty(n, s))
    return out


_BLOCK_SHAPE = None


def _block_shape():
    """(Numba's thread count, BLOCK): rows of a blocked reduction's scratch (fixed once Numba
    is loaded: ``NUMBA_NUM_THREADS`` is the pool size, not ``set_num_threads``)."""
    global _BLOCK_SHAPE
    if _BLOCK_SHAPE is None:
        import numba      # (Numba's import is most of a second: loaded with the first kernel)
        _BLOCK_SHAPE = (numba.config.NUMBA_NUM_THREADS, render.BLOCK)
    return _BLOCK_SHAPE


def _call(d, serial, args):
    """Run a compiled kernel's variant. Before a parallel one the C path's helper thread
    stops spinning (it spins ~0.2 ms after each cut loop of an interpreted kernel): on two
    cores it held one of them while OpenMP's team needed both -- nbody large's compiled
    kernels, between interpreted ones, 494 and 650 us against 161 and 270 with no helper
    (docs/decisions.md)."""
    if not serial and hooks.park_helper is not None:
        hooks.park_helper()
    program_cache.call(d, serial, args)


class CPUExecutor(Executor):
    name = "cpu"

    def __init__(self):
        super().__init__()
        self._scratch = {}      # (partials spec, K * C, R0) -> scratch arguments (reused)

    def compile(self, prog):
        _setup_numba()
        return program_cache.numba_kernels(prog.source, prog.fn)

    def launch(self, prog):
        if prog.kind == "kernel":
            serial = jit.use_serial(prog.kernel.elements)
            m = jit.mode()
            if m == "off" or (m == "background" and not jit.ready(prog, serial) and
                              not jit.compile_first(prog, serial,
                                                    lambda: self.describe(prog))):
                # the kernel is not compiled (yet): its ops run through NumPy, and the cost
                # model may send it to the compile worker (backends/numba_cpu/jit.py)
                t0 = time.perf_counter()
                self._interpret(prog)
                if m == "off":          # (never compiled: nothing to account)
                    stats.add("kernels_interpreted")
                else:
                    jit.interpreted(prog, serial, time.perf_counter() - t0,
                                    lambda: self.describe(prog))
                return
            try:
                d = self.compile(prog)
                t0 = time.perf_counter()
                self._run_kernel(prog, d)
                if m == "background":   # (measured against its interpreted runs)
                    jit.compiled(prog, serial, time.perf_counter() - t0)
            except Exception as e:  # noqa: BLE001
                if settings.debug >= 1:
                    print(f"[streamrt] kernel failed ({type(e).__name__}: {str(e)[:200]}); "
                          "splitting", file=sys.stderr)
                self._split_and_run(prog)
        elif prog.kind == "scan":          # cumsum/cumprod fused with producers (scan.py)
            self._run_scan(prog)
        elif prog.kind in ("intrinsic", "refop"):
            for p in prog.ops:
                r = run_refop(p, ref_value)
                if keeps_answer(p, r):
                    p.value = r     # (its own result: the given buffer goes back unwritten)
                else:
                    p.value[...] = r
            stats.add("intrinsics_launched")

    def _interpret(self, prog):
        """Each op of the kernel through NumPy, in order (its reference definition), into the
        buffers the kernel would have written; a value the kernel keeps in registers is a
        temporary, dropped after its last use (as NumPy drops an expression's temporaries:
        keeping them all made a 62-op kernel over 8 MB arrays fault 500 MB of new pages), and
        an element-wise op writes into the buffer of a temporary that dies with it, or into
        its output buffer (NumPy's elision of temporaries: a fresh 8 MB result faults its
        pages in again each time)."""
        ops = prog.ops
        mine = {p.id for p in ops}
        # a region write the kernel stores into its base's buffer ('alias') or into a copy of
        # the base made outside the region ('copy'): its region is written, as the kernel
        # would, not the whole base copied (the reference definition, intrinsics.update)
        regions, alias = set(), set()
        k = prog.kernel
        for a in (k.stores if k is not None else ()):
            if a.role in ("copy", "alias") and a.port.inputs[0].id not in mine:
                prepare_region_write(a, self.alloc)
                regions.add(a.port.id)
                if a.role == "alias":
                    alias.add(a.port.id)
        # (the loops stay on this thread while the compile worker runs: it needs the other
        # core -- cut, a stencil's kernel compiled 2-5 s later, or not within 6 s)
        interpret(ops, {p.id for p in prog.outputs}, regions, alias, self.alloc,
                  _last_read(prog), cut=jit.in_flight() == 0)

    def describe(self, prog):
        """The kernel's argument types as _run_kernel passes them (jit.py's compile worker
        compiles for exactly these): ("A", dtype, ndim, writable) or ("S", Python type)."""
        k = prog.kernel

        def arr(dt, nd=1):
            return ("A", np.dtype(dt).str, nd, True)
        d = [arr(np.int64)]
        for a in k.loads:
            p = a.port
            d.append(arr((p.inputs[0] if p.kind == "view" else p).dtype))
        for a in k.stores:
            d.append(arr(a.port.dtype))
        for s in k.scalars:
            d.append(("S", type(kernel_scalar(s)).__name__))
        if k.is_reduction:
            for r in k.reductions:
                d.append(arr(r.dtype))
            for s in prog.partials:
                d.append(arr(s[1], 2) if isinstance(s, tuple) else arr(s))
            d.append(("S", "int"))
        return tuple(d)

    def _run_scan(self, prog):
        serial = jit.use_serial(prog.ops[-1].size)
        if jit.mode() == "off" or (jit.mode() == "background" and
                                   not program_cache.compiled_on_disk(prog.source, serial)):
            # the compiled tier does not build scans (their arguments are not a kernel's):
            # NumPy runs them unless an earlier STREAMRT_JIT=sync run compiled this one
            scan.run_reference(prog)
            stats.add("kernels_interpreted")
            return
        try:
            d = self.compile(prog)
            _call(d, serial, scan.arguments(prog))
        except Exception as e:  # noqa: BLE001
            if settings.debug >= 1:
                print(f"[streamrt] scan kernel failed ({type(e).__name__}: {str(e)[:200]}); "
                      "NumPy evaluates it", file=sys.stderr)
            stats.add("fallback_to_reference")
            scan.run_reference(prog)
        stats.add("kernels_launched")

    def _split_and_run(self, prog):
        parts = compiler.split(prog, self.caps)
        if parts is None:
            # a single op that will not compile: evaluate it with NumPy (counted)
            stats.add("fallback_to_reference")
            for p in prog.ops:
                if p.value is None:
                    p.value = self.alloc(p.shape, p.dtype)
                p.value[...] = run_refop(p, ref_value)
            return
        stats.add("kernel_splits")
        self.launch_parts(parts)

    def scratch(self, spec, n, row):
        """The scratch arguments of a reduction kernel (``kernel_partials``), reused from one
        launch to the next: launches hold ``run_lock``, one at a time, and a kernel reads its
        scratch only while it runs."""
        key = (spec, n, row)
        s = self._scratch.get(key)
        if s is None:
            if len(self._scratch) > 64:
                self._scratch.clear()
            s = self._scratch[key] = tuple(kernel_partials(spec, n, row))
        return s

    def _run_kernel(self, prog, d):
        # (the arguments are built per launch, which small kernels feel: a 1-D buffer is its
        # own flat view, and the scratch partials are reused -- launches hold ``run_lock``,
        # one at a time)
        k = prog.kernel
        args = [prog.table]
        nd = np.ndarray
        for a in k.loads:
            p = a.port
            b = p.inputs[0] if p.kind == "view" else p
            v = b.value
            if type(v) is not nd:
                v = b.host_value()
            args.append(v if v.ndim == 1 else v.reshape(-1))
        for a in k.stores:
            if a.role in ("copy", "alias"):
                prepare_region_write(a, self.alloc)
            v = a.port.value
            args.append(v if v.ndim == 1 else v.reshape(-1))
        for s in k.scalars:
            args.append(kernel_scalar(s))
        if k.is_reduction:
            K = math.prod(k.kept) if k.kept else 1
            R0 = k.red[0] if k.red else 1
            C = chunks_for(K, R0)
            for r in k.reductions:
                v = r.value
                args.append(v if v.ndim == 1 else v.reshape(-1))
            args += self.scratch(prog.partials, K * C, R0)
            args.append(C)
        _call(d, jit.use_serial(k.elements), args)
        stats.add("kernels_launched")
