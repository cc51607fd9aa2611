"""Executor interface: alloc, free, copy_in, copy_out, compile, launch, synchronize -- and a
worker thread that runs launched programs in order and reports completion to the E-Scheduler."""
from __future__ import annotations

import math
import queue
import sys
import threading
import time

import numpy as np

from .. import dtypes as D
from .. import stats
from ..config import settings
from ..ops import loop_operands
from ..profiler import collector
from ..proggen.sequence import elements


def alloc_outputs(prog, ex):
    """Output buffers of ``prog`` from executor ``ex`` (a region write that reuses its base's
    buffer gets none)."""
    k = prog.kernel
    skip = [a.port for a in k.stores if a.role == "alias"] if k is not None else ()
    for p in prog.outputs:
        if p.value is None and not any(p is q for q in skip):
            p.value = ex.alloc(p.shape, p.dtype)


def kernel_partials(spec, n, row=0):
    """The scratch arguments of a Numba reduction kernel (proggen/render_numba.py): per-chunk
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
        import numba
        from ..proggen.render_numba import BLOCK
        _BLOCK_SHAPE = (numba.config.NUMBA_NUM_THREADS, BLOCK)
    return _BLOCK_SHAPE


class HostPool:
    """Large host result buffers (at least ``MIN_BYTES``) kept for reuse: a pooled buffer is
    handed out again once nothing references it any more -- no array, view or exported buffer
    derived from it (every NumPy view keeps its base alive, so the base's reference count says
    so). A step that makes a new 32 MB result then gets the previous step's buffer with its
    pages mapped, instead of asking malloc, whose main heap fragments when small allocations
    land in the freed holes of large ones and then grows (and faults in) by the size of a
    result at every step: the 4M-element wave equation ~24,000 page faults per run when NumPy
    work ran before streamrt's first launch (186 ms), none with the pool (~105 ms). At most
    ``STREAMRT_HOST_HEAP_BYTES`` are pooled; beyond that buffers are plain ``np.empty``."""
    MIN_BYTES = 1 << 20

    def __init__(self):
        self.lock = threading.Lock()
        self.by_size = {}          # nbytes -> [base uint8 array] (free or in use)
        self.total = 0

    def take(self, nbytes):
        """A 1-D uint8 buffer of ``nbytes``: a free pooled one, or a new one (pooled if the
        limit allows)."""
        with self.lock:
            bufs = self.by_size.get(nbytes)
            if bufs:
                for b in bufs:
                    # references: the list, ``b``, getrefcount's argument -- nothing else
                    if sys.getrefcount(b) == 3:
                        stats.add("host_buffers_reused")
                        return b
            b = np.empty(nbytes, np.uint8)
            if self.total + nbytes <= settings.host_heap_bytes:
                self.by_size.setdefault(nbytes, []).append(b)
                self.total += nbytes
            return b

    def array(self, shape, dtype):
        """An array of ``shape`` and ``dtype`` over a buffer ``take`` hands out."""
        dtype = np.dtype(dtype)
        return self.take(dtype.itemsize * math.prod(shape)).view(dtype).reshape(shape)


host_pool = HostPool()


class Executor:
    name = "base"
    caps = {"fuse": True, "renderer": None, "max_ops": 128}
    # Programs submitted run one at a time in submission order on the worker thread, so the
    # E-Scheduler may submit a program whose inputs are still being computed by programs
    # queued before it here (scheduler/escheduler.py). Executors that reorder set False.
    in_order = True

    def __init__(self):
        self._q = queue.SimpleQueue()
        self._thread = None
        self._lock = threading.Lock()
        self.run_lock = threading.Lock()   # one launch at a time (worker or inline caller)

    # ---- memory --------------------------------------------------------------------------
    def alloc(self, shape, dtype):
        dtype = np.dtype(dtype)
        n = dtype.itemsize * math.prod(shape)
        if n >= HostPool.MIN_BYTES and not dtype.hasobject:
            a = host_pool.array(shape, dtype)
        else:
            a = np.empty(shape, dtype)
        stats.add("bytes_allocated", a.nbytes)
        stats.add("buffers_allocated")
        return a

    def launch_parts(self, parts):
        """Run the pieces of a split program in order, each with its own output buffers."""
        for part in parts:
            alloc_outputs(part, self)
            self.launch(part)

    def free(self, buf):
        pass  # host memory: dropped references are freed by Python

    def copy_in(self, host):
        return host

    def copy_out(self, buf):
        return buf

    # ---- programs ------------------------------------------------------------------------
    def compile(self, prog):
        return None

    def launch(self, prog):
        """Run one program synchronously on the calling (worker) thread."""
        raise NotImplementedError

    def synchronize(self):
        done = threading.Event()
        self._q.put(("sync", done))
        done.wait()

    # ---- asynchronous submission ---------------------------------------------------------
    def submit(self, prog, on_done):
        """Queue ``prog`` for the worker; ``on_done([(prog, error, seconds), ...])`` is called
        on the worker thread once the program has run (several completions per call when
        small programs run back to back)."""
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._worker, name=f"streamrt-{self.name}",
                                                daemon=True)
                self._thread.start()
        self._q.put(("run", prog, on_done))

    def _worker(self):
        done = []           # completions not reported yet: [(on_done, prog, err, seconds)]
        while True:
            if done and self._q.empty():
                _report(done)
                done = []
            msg = self._q.get()
            if msg[0] in ("stop", "sync"):
                if done:
                    _report(done)
                    done = []
                if msg[0] == "stop":
                    return
                msg[1].set()
                continue
            _, prog, on_done = msg
            if done and (len(done) >= 64 or elements(prog) > settings.inline_elements):
                _report(done)           # nobody waits behind a long program for these
                done = []
            # an input produced by a program queued before this one that failed: not run
            err = next((d.error for d in prog.deps() if d.error is not None), None)
            t0 = time.perf_counter()
            if err is None:
                try:
                    with self.run_lock:
                        self.launch(prog)
                except BaseException as e:  # noqa: BLE001 - delivered to the application
                    err = e
            if err is not None:
                for p in prog.outputs:          # seen by the programs queued after this one
                    p.error = err
            dt = time.perf_counter() - t0
            prof = collector._active
            if prof is not None and err is None:
                prof.kernel(prog, self, t0, dt)
            if settings.debug >= 2:
                print(f"[streamrt] {self.name} {prog.describe()} {dt * 1e3:.3f} ms",
                      file=sys.stderr)
            done.append((on_done, prog, err, dt))

    def stop(self):
        if self._thread is not None:
            self._q.put(("stop",))
            self._thread.join(timeout=5)
            self._thread = None


def _report(done):
    """Report completed programs to their E-Scheduler callbacks, one call per callback: a
    worker running many small programs back to back wakes the scheduler thread once per
    batch instead of once per program (on 2 cores each wake-up competes with the worker --
    CG's 200 programs of 2048 elements spent ~30 ms in hand-offs)."""
    by = {}
    for on_done, prog, err, dt in done:
        by.setdefault(on_done, []).append((prog, err, dt))
    for on_done, items in by.items():
        on_done(items)


def run_refop(p, val):
    """Evaluate one port with NumPy (the reference semantics)."""
    from ..ops import OPS, REDUCTIONS
    from ..proggen.intrinsics import INTRINSICS
    args = [val(i) for i in p.inputs]
    with np.errstate(all="ignore"):
        if p.kind == "map":
            op = OPS[p.op]
            if p.op == "astype":
                r = np.asarray(args[0]).astype(p.dtype)
            elif op.counter:        # counter-based RNG: scalar parameters, no array inputs
                r = op.ref(*[int(a) for a in args], shape=p.shape, dtype=p.loop_dtype)
            else:
                r = op.ref(*loop_args(p, args))
        elif p.kind == "reduce":
            axes, keepdims, acc = p.params
            x = np.asarray(args[0])
            if p.op in ("argmax", "argmin"):
                ax = axes[0] if len(axes) == 1 else None
                r = REDUCTIONS[p.op].ref(x, axis=ax, keepdims=keepdims)
            elif p.op in ("sum", "prod", "mean"):
                r = REDUCTIONS[p.op].ref(x, axis=axes, keepdims=keepdims, dtype=acc if p.op != "mean"
                                         else None)
            else:
                r = REDUCTIONS[p.op].ref(x, axis=axes, keepdims=keepdims)
        elif p.kind == "intrinsic":
            r = INTRINSICS[p.op](p, *args)
        else:
            raise TypeError(f"cannot evaluate {p}")
    return np.asarray(r).astype(p.dtype, copy=False).reshape(p.shape)


def loop_args(p, args):
    """Array operands of map port ``p`` cast to the dtypes its kernel loop uses, so NumPy
    computes in the dtype streamrt promises (bool -> float32, not NumPy's float16)."""
    want = loop_operands(p.op, p.loop_dtype, len(args))
    return [a.astype(w, copy=False) if w is not None and isinstance(a, (np.ndarray, np.generic))
            else a for a, w in zip(args, want)]


def scalar_value(p):
    """A scalar port's value cast to its loop dtype (a NumPy scalar: the C renderers'
    typed kernel arguments)."""
    return p.dtype.type(p.scalar)


def kernel_scalar(p):
    """A scalar port's value as a Numba kernel receives it: the Python number of its dtype's
    kind (``dtypes.PY_NUMBER``: float, complex, int or bool; an unsigned integer as its 64-bit
    pattern in an int, ``dtypes.u64_bits``), which the kernel casts to the dtype
    (render_numba.scalar_params). (A Python int too large for int64 under a float dtype
    arrives as the float it converts to; integer dtypes' values are range-checked when
    recorded.)"""
    v = p.scalar
    t = D.PY_NUMBER[p.dtype.kind]
    if type(v) is not t:
        v = t(v.item() if isinstance(v, np.generic) else v)
    return v


def ref_value(i):
    """Host value of an input port for the reference evaluation (Python scalars stay weak)."""
    if i.kind == "scalar":
        return i.scalar if i.params and i.params[0] == "weak" else i.dtype.type(i.scalar)
    return i.host_value()
