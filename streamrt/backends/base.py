"""What every backend has: the ``Backend`` descriptor, the executor interface (alloc, free,
copy_in, copy_out, compile, launch, synchronize) with a worker thread that runs launched
programs in order and reports completion to the E-Scheduler, output allocation, the host
buffer pool, and the reference (NumPy) evaluation of one port."""
from __future__ import annotations

import ctypes
import math
import queue
import sys
import threading
import time

import numpy as np

from ..core import atfork, dtypes as D, hooks, stats, config
from ..core.config import settings
from ..core.ir import strided
from ..core.ops import OPS, REDUCTIONS, loop_operands
from ..compiler.sequence import elements
from .intrinsics import INTRINSICS


_heap_tuned = None


def tune_host_heap():
    """Keep freed host buffers in the heap (glibc ``mallopt``): a fresh result buffer of a few
    hundred KB or more would otherwise be a new ``mmap`` whose pages fault in one by one when
    it is first written (a 16 MB kernel output: about as long as the kernel; the 320 KB
    arrays of a 200-body all-pairs step: half its time), and glibc's own adaptive thresholds
    make that depend on what the process allocated before. With the mmap and trim
    thresholds raised, a buffer freed earlier is handed out again with its pages mapped
    (what a GPU runtime's memory pool does). Applied once, when streamrt is imported (the
    NumPy tier's results are NumPy's own allocations); ``STREAMRT_HOST_HEAP_BYTES=0`` leaves
    malloc alone. Returns whether the setting took."""
    global _heap_tuned
    if _heap_tuned is not None:
        return _heap_tuned
    _heap_tuned = False
    n = settings.host_heap_bytes
    if n <= 0 or not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None)
        mallopt = libc.mallopt               # glibc; absent on musl
    except (OSError, AttributeError):
        return False
    M_TRIM_THRESHOLD, M_MMAP_THRESHOLD, M_ARENA_MAX = -1, -3, -8
    n = min(n, (1 << 31) - 1)
    _heap_tuned = bool(mallopt(M_MMAP_THRESHOLD, n)) and bool(mallopt(M_TRIM_THRESHOLD, n))
    # One heap for every thread: the executor's worker allocates the outputs, and a thread's
    # own arena is at most 64 MB, so a larger buffer would be a fresh mmap whatever the
    # threshold (its pages faulted in again at every step)
    if _heap_tuned:
        mallopt(M_ARENA_MAX, 1)
    return _heap_tuned


def alloc_outputs(prog, ex):
    """Output buffers of ``prog`` from executor ``ex`` (a region write that reuses its base's
    buffer gets none)."""
    k = prog.kernel
    skip = [a.port for a in k.stores if a.role == "alias"] if k is not None else ()
    for p in prog.outputs:
        if p.value is None and not any(p is q for q in skip):
            p.value = ex.alloc(p.shape, p.dtype)


class HostPool:
    """Large host result buffers (at least ``MIN_BYTES``) kept for reuse: a pooled buffer is
    handed out again once nothing references it any more -- no array, view or exported buffer
    derived from it (every NumPy view keeps its base alive, so the base's reference count says
    so). A step that makes a new 32 MB result then gets the previous step's buffer with its
    pages mapped, instead of asking malloc, whose main heap fragments when small allocations
    land in the freed holes of large ones and then grows (and faults in) by the size of a
    result at every step. At most ``STREAMRT_HOST_HEAP_BYTES`` are pooled; beyond that buffers are plain ``np.empty``."""
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


def _pool_after_fork():
    host_pool.lock = threading.Lock()


atfork.register(_pool_after_fork)


class Backend:
    """One backend as the rest of streamrt knows it: defined by its folder
    (``backends/<folder>/__init__.py``: ``BACKEND``), listed in registry.py.

    ``name``        its STREAMRT_BACKEND value
    ``executor``    its Executor class (created once per process, without arguments)
    ``caps``        what the compiler asks of it: ``render(kernel, plan)``, ``render_scan``,
                    ``max_ops``, the passes it takes (compiler/passes.py); ``complex`` is
                    derived from ``dtypes``
    ``dtypes``      the dtypes its kernels compute in (a kernel over another runs on the CPU)
    ``dialect``     its c_render.Dialect (the C backends)
    ``device``      it has memory of its own: placement weighs transfers, ps.devices() lists
                    its devices, and a device that cannot open is served by the CPU executor
    ``discover``    () -> [device dicts] for ps.devices() and placement, or None
    ``estimate``    (device dict or None) -> (launch seconds, element-ops per second, host
                    transfer bytes per second): what placement assumes before measuring
    ``cache_dirs``  directories under STREAMRT_CACHE_DIR its compilers write (listed by
                    ps.cache_info(), emptied by ps.clear_caches(disk=True)); ``cache_listed``:
                    listed, never emptied
    ``settings``    its own STREAMRT_* flags, {name: config.Flag}
    """

    __slots__ = ("name", "executor", "caps", "dtypes", "dialect", "device", "discover",
                 "estimate", "cache_dirs", "cache_listed", "settings")

    def __init__(self, name, executor, caps, dtypes, dialect=None, device=False,
                 discover=None, estimate=None, cache_dirs=(), cache_listed=(), settings=None):
        self.name, self.executor, self.dialect, self.device = name, executor, dialect, device
        self.dtypes = tuple(np.dtype(d) for d in dtypes)
        self.caps = dict(caps, complex=any(d.kind == "c" for d in self.dtypes))
        self.discover, self.estimate = discover, estimate
        self.cache_dirs, self.cache_listed = tuple(cache_dirs), tuple(cache_listed)
        self.settings = dict(settings or {})
        for key, flag in self.settings.items():
            config.declare(key, flag)
        executor.backend = self

    def __repr__(self):
        return f"Backend({self.name!r}, {self.executor.__name__})"


class Executor:
    name = "base"
    backend = None          # its Backend (set by the descriptor of the backend it serves)
    # Programs submitted run one at a time in submission order on the worker thread, so the
    # E-Scheduler may submit a program whose inputs are still being computed by programs
    # queued before it here (scheduler/escheduler.py). Executors that reorder set False.
    in_order = True

    @property
    def caps(self):
        """What the compiler asks of this executor's kernels (its Backend's caps)."""
        return self.backend.caps

    def __init__(self):
        self._q = queue.SimpleQueue()
        self._thread = None
        self._lock = threading.Lock()
        self.run_lock = threading.Lock()   # one launch at a time (worker or inline caller)

    def after_fork(self):
        """In a forked child (core/atfork.py): the worker thread is gone and its locks may be
        held by a thread that no longer exists."""
        self._q = queue.SimpleQueue()
        self._thread = None
        self._lock = threading.Lock()
        self.run_lock = threading.Lock()

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
        self._start()
        self._q.put(("run", prog, on_done))

    def call(self, fn):
        """Run ``fn()`` on the worker thread, after what was queued before it (a whole
        sequence a read waits for: runtime/escheduler.py ``run_on_worker``)."""
        self._start()
        self._q.put(("call", fn))

    def _start(self):
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._worker, name=f"streamrt-{self.name}",
                                                daemon=True)
                self._thread.start()

    def _worker(self):
        done = []           # completions not reported yet: [(on_done, prog, err, seconds)]
        while True:
            if done and self._q.empty():
                _report(done)
                done = []
            msg = self._q.get()
            if msg[0] == "call":
                if done:
                    _report(done)
                    done = []
                msg[1]()            # (it delivers its own errors: run_on_worker)
                del msg
                continue
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
            # an input produced by a program queued before this one that failed: not run;
            # a program of a cancelled sequence (a read interrupted by Ctrl-C): not run
            err = next((d.error for d in prog.deps() if d.error is not None), None)
            seq = getattr(prog, "seq", None)
            if err is None and seq is not None and seq.cancelled is not None:
                err = seq.cancelled
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
            prof = hooks.profiler
            if prof is not None and err is None:
                prof.kernel(prog, self, t0, dt)
            if settings.debug >= 2:
                print(f"[streamrt] {self.name} {prog.describe()} {dt * 1e3:.3f} ms",
                      file=sys.stderr)
            done.append((on_done, prog, err, dt))
            # (the worker then idles in get(): its locals must not keep the last program,
            # its ports and their buffers alive -- `done` alone holds them until reported)
            del msg, prog, on_done, seq, err

    def stop(self):
        if self._thread is not None:
            self._q.put(("stop",))
            self._thread.join(timeout=5)
            self._thread = None


def _report(done):
    """Report completed programs to their E-Scheduler callbacks, one call per callback: a
    worker running many small programs back to back wakes the scheduler thread once per
    batch instead of once per program (on 2 cores each wake-up competes with the worker)."""
    by = {}
    for on_done, prog, err, dt in done:
        by.setdefault(on_done, []).append((prog, err, dt))
    for on_done, items in by.items():
        on_done(items)


def run_refop(p, val, quiet=True):
    """Evaluate one port with NumPy (the reference semantics); ``quiet``: its floating-point
    flags ignored (the NumPy tier passes False and reports them itself, core/fpe.py)."""
    args = [val(i) for i in p.inputs]
    if not quiet:
        return _refop(p, args)
    with np.errstate(all="ignore"):
        return _refop(p, args)


def _refop(p, args):
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
    r = np.asarray(r).astype(p.dtype, copy=False)
    # (the array itself when its shape is right, not a view of it: the interpreter reuses
    # a dead temporary's buffer only when it owns its memory)
    return r if r.shape == tuple(p.shape) else r.reshape(p.shape)


def ufunc_into(p, out, cut=True):
    """``p`` (a map op whose NumPy definition is a ufunc) computed into ``out``; False when
    it is not such an op, or its operands are not all of its loop dtype (the definition
    computes in the loop dtype, then casts: run_refop). A result of another dtype than the
    loop's (a comparison's bool) only by the ufunc's own loop for those types (hooks.ufunc_loop,
    the C path: exactly NumPy's loop, which makes that dtype). Its floating-point flags are
    the caller's to set (``interpret``: ignored, as run_refop's). ``cut``: a long loop may run
    on two threads (hooks.ufunc_loop)."""
    if p.kind != "map":
        return False
    op = OPS[p.op]
    uf = op.ref
    if type(uf) is not np.ufunc or uf.nout != 1 or op.counter:
        return False
    ld = p.loop_dtype
    args = loop_args(p, [ref_value(i) for i in p.inputs])
    for a in args:
        if isinstance(a, (np.ndarray, np.generic)) and a.dtype != ld:
            return False
    f = hooks.ufunc_loop
    if f is not None and type(out) is np.ndarray and f(uf, tuple(args), out, cut) is not None:
        return True
    if ld != p.dtype:
        return False
    try:
        uf(*args, out=out)
    except (TypeError, ValueError):
        return False
    return True


def spare(p, dead):
    """The buffer of a temporary dying at ``p`` that can take ``p``'s result, or None."""
    shape = tuple(p.shape)
    for i in dead:
        v = i.value
        if type(v) is np.ndarray and v.dtype == p.dtype and v.shape == shape and \
                v.flags.c_contiguous and v.flags.writeable and v.base is None:
            return v
    return None


def region_values(ops, regions, keep, alias):
    """Value port id -> the region of its base it may be computed into, for the region
    writes ``regions`` (their ``value``: the base's own buffer for those in ``alias``, or a
    copy of it) among ``ops``: as NumPy's ``a[1:] -= t`` writes into ``a``'s elements, the
    write's value is not computed into a temporary and then copied. The value must be one
    of ``ops`` read by the write alone, of the region's shape and dtype, not in ``keep``;
    and, where the region is its base's own buffer, no op after it but the write may read
    that base (an op may read the base at the written elements, which the value's own ufunc
    may do: NumPy's overlap rules cover an output that is exactly an input)."""
    pos = {p.id: n for n, p in enumerate(ops)}
    uses = {}
    for p in ops:
        for i in p.inputs:
            uses[i.id] = uses.get(i.id, 0) + 1
    out = {}
    for u in ops:
        if u.id not in regions:
            continue
        v, b = u.inputs[1], u.inputs[0]
        off, shape, st = u.params
        if v.id not in pos or v.id in keep or uses.get(v.id) != 1 or v.kind != "map" or \
                tuple(v.shape) != tuple(shape) or v.dtype != u.dtype or v is b:
            continue
        if u.id in alias and any(
                i is b or i.kind == "view" and i.inputs[0] is b
                for q in ops[pos[v.id] + 1:pos[u.id]] for i in q.inputs):
            continue
        out[v.id] = strided(u.value, off, shape, st)
    return out


def interpret(ops, keep, regions, alias, alloc, dying=(), cut=True):
    """Each of ``ops`` through NumPy, in order (its reference definition), into the buffers
    a kernel would have written: the CPU executor's interpreted kernels and the statements
    the C-Scheduler runs at once (runtime/cscheduler.py ``_run_statement``). ``keep``: the
    ids of the values that must stay their own (stored, held by an Array); a value not kept
    is a temporary, dropped after its last use (as NumPy drops an expression's temporaries:
    keeping them all made a 62-op kernel over 8 MB arrays fault 500 MB of new pages), and an
    element-wise op writes into the buffer of a temporary that dies with it, or into its
    output buffer (NumPy's elision of temporaries: a fresh 8 MB result faults its pages in
    again each time). ``regions``, ``alias``: the region writes whose ``value`` buffer is
    ready, see ``region_values``; ``alloc(shape, dtype)``: a new buffer. ``dying``: the ids
    of inputs computed before whose buffers nothing else reads (core/ir.py ``dying_buffer``:
    the C-Scheduler's ``_dying``, the CPU executor's ``_last_read``): temporaries too,
    dropped after their last use here. ``cut``: long element-wise loops may run on two
    threads (hooks.ufunc_loop; the CPU executor says no while a compile worker needs the
    second core)."""
    mine = {p.id for p in ops}
    if dying:
        mine.update(dying)
    last = {}
    for n, p in enumerate(ops):
        for i in p.inputs:
            last[i.id] = n
            if i.kind == "view":        # (read through a view: its base lives as long)
                last[i.inputs[0].id] = n
    into_region = region_values(ops, regions, keep, alias) if regions else {}
    # an element-wise op this long gets its result buffer first: its loop then runs on two
    # threads where NumPy's call would make the result itself
    big = split_limit(cut)
    with np.errstate(all="ignore"):         # (once: entering it costs ~0.7 us)
        _interpret(ops, keep, alloc, mine, last, into_region, regions, big, cut)


def split_limit(cut=True) -> int:
    """The elements from which an interpreted element-wise op's loop runs on two threads
    (the C path's hooks.ufunc_loop, STREAMRT_SPLIT_ELEMENTS); 0: never."""
    return settings.split_elements if cut and hooks.ufunc_loop is not None else 0


def _interpret(ops, keep, alloc, mine, last, into_region, regions, big=0, cut=True):
    written = set()
    for n, p in enumerate(ops):
        dead = [i for i in p.inputs
                if last.get(i.id) == n and i.id not in keep and i.id in mine]
        if p.id in regions:
            if p.inputs[1].id not in written:
                off, shape, st = p.params
                strided(p.value, off, shape, st)[...] = ref_value(p.inputs[1])
        elif (r := into_region.get(p.id)) is not None and ufunc_into(p, r, cut):
            p.value = r                     # (computed straight into the region)
            written.add(p.id)
        elif (into := _preset(p, dead) if p.value is not None else _result(p, dead, big)) \
                is None or not ufunc_into(p, into, cut):
            r = _refop(p, [ref_value(i) for i in p.inputs])
            if p.value is None and _fits(r, p):
                p.value = r
            else:
                if p.value is None:
                    p.value = alloc(p.shape, p.dtype)
                p.value[...] = r
        elif p.value is None:
            p.value = into
        for i in dead:
            i.value = None


def _preset(p, dead):
    """The buffer an output ``p`` given a buffer before the run (alloc_outputs) is computed
    into: a temporary dying at ``p`` (``spare``) when nothing but the port holds the given
    buffer -- it then stays unwritten, its pages not faulted in (a first run's fresh 8 MB
    output: ~420 page faults, 1-3 ms on a VM) and goes back to the pool --; else the given
    buffer."""
    v = p.value
    # (references: the port, ``v``, getrefcount's argument -- nothing else holds it)
    if dead and type(v) is np.ndarray and sys.getrefcount(v) == 3 and \
            ufunc_ready(p) and (r := spare(p, dead)) is not None:
        p.value = r
        return r
    return v


def ufunc_ready(p):
    """Whether ``p`` is an element-wise op ``ufunc_into`` may compute into a given buffer
    (its reference a one-output ufunc): the buffer swap of ``_preset`` only then, since
    another op's definition writes a new array that is copied into the output."""
    return p.kind == "map" and type(OPS[p.op].ref) is np.ufunc and not OPS[p.op].counter


def _result(p, dead, big):
    """The buffer ``p``'s result is computed into: a dying temporary's (``spare``), or, for an
    element-wise op of ``big`` elements or more, a new one, as NumPy's call would make (its
    loop then runs on two threads: hooks.ufunc_loop); None: NumPy's call makes it."""
    r = spare(p, dead)
    if r is None and 0 < big <= p.size and ufunc_ready(p):
        r = _fresh(p)
    return r


def _fresh(p):
    """A new result buffer for ``p`` (the one NumPy's call would have made)."""
    return np.empty(p.shape, p.dtype)


def _fits(r, p) -> bool:
    """Whether ``r``, the reference op's answer for ``p``, can be ``p``'s value as it is: a
    C-ordered ndarray of its shape and dtype that owns its memory (``_own``)."""
    return type(r) is np.ndarray and r.flags.c_contiguous and r.dtype == p.dtype and \
        r.shape == tuple(p.shape) and _own(r, p)


def keeps_answer(p, r) -> bool:
    """Whether a port given a buffer before its run (``alloc_outputs``) takes ``r``, its
    reference answer, as its value instead of copying it into that buffer: ``r`` fits
    (``_fits``, and writeable) and nothing but the port holds the given buffer, which then
    goes back unwritten (a mask's gather over 500 x 500 float64 copied 2 MB a call: ~35 µs
    of ~210). The CPU executor's intrinsics."""
    v = p.value
    # (references to ``v``: the port, ``v``, getrefcount's argument -- nothing else)
    return type(v) is np.ndarray and type(r) is np.ndarray and r.flags.writeable and \
        sys.getrefcount(v) == 3 and _fits(r, p)


def _own(r, p):
    """Whether ``r``, the reference op's answer for ``p``, shares no memory with ``p``'s
    inputs (it may be one of them, or a view of one: ``astype`` without a copy). A fresh
    result owns its buffer: it is not an input's own ndarray or an input view's base's."""
    if r.base is None:
        for i in p.inputs:
            b = i.inputs[0] if i.kind == "view" else i
            if b.value is r or i.value is r:
                return False
        return True
    return not any(i.kind != "scalar" and np.may_share_memory(r, i.host_value())
                   for i in p.inputs)


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
