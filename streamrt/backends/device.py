"""Device executors' common part: port data with a host and a device copy (DeviceArray),
counted transfers, fused C kernels launched from the render_c index table, split on a failed
build, and fallback to the CPU executor (a float64 program on a device without fp64, a failed
launch or allocation). opencl.py and cuda.py supply the device primitives."""
from __future__ import annotations

import collections
import contextlib
import functools
import math
import os
import sys
import threading
import time
import weakref

import numpy as np

try:
    import fcntl
except ImportError:         # (Windows: a directory is protected within the process only)
    fcntl = None

from ..core import hooks, stats
from ..core.config import settings
from .. import compiler
from . import c_render as render_c
from .base import Executor, ref_value, run_refop, scalar_value


# ---- compiler cache directories in use ---------------------------------------------------
# A device compiler may keep state about its cache directory for the life of the process
# (PoCL creates its per-device folders once, at context creation: deleting them under a live
# context made its next build abort the process). A process using such a directory holds a
# shared lock on "<dir>.lock" while it lives; ps.clear_caches(disk=True), in this or another
# process, deletes the directory only when it gets the lock exclusively.
_held: dict = {}


def hold_cache_dir(path):
    """Mark compiler cache directory ``path`` in use by this process, for its lifetime."""
    path = os.path.realpath(path)
    if path in _held:
        return
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd = os.open(path + ".lock", os.O_RDWR | os.O_CREAT, 0o600)
    except OSError:
        _held[path] = None
        return
    if fcntl is not None:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH)
        except OSError:
            pass
    _held[path] = fd


@contextlib.contextmanager
def cache_dir_unused(path):
    """Yields whether no process (this one included) holds ``path`` (hold_cache_dir); while
    the block runs, none can start to."""
    path = os.path.realpath(path)
    if path in _held:
        yield False
        return
    if fcntl is None:
        yield True
        return
    try:
        fd = os.open(path + ".lock", os.O_RDWR)     # (no lock file: never held)
    except OSError:
        yield True
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            yield False
            return
        yield True
    finally:
        os.close(fd)          # (releases the lock)


class BuildError(Exception):
    """The device compiler rejected a generated kernel."""


class DeviceMemoryError(MemoryError):
    """A device allocation failed even after freeing cached buffers and spilling."""


class HostCopy:
    """A device copy of a host value (a const or a CPU result) read by device kernels; its
    device bytes are returned to the executor's account when it is dropped."""
    __slots__ = ("buf", "ex", "nbytes", "value")

    def __init__(self, ex, value, buf, nbytes):
        self.ex, self.value, self.buf, self.nbytes = ex, value, buf, nbytes

    def __del__(self):
        if self.buf is not None:
            self.buf = None
            try:
                self.ex._released(self.nbytes)
            except Exception:  # noqa: BLE001 - interpreter shutdown
                pass


class DeviceArray:
    """The data of one port computed by a device executor: a device buffer and/or a host
    ndarray, and which of them hold the current value. ``host()`` brings the value to the
    host once (counted in ``bytes_to_host``); ``Executor.device_buffer`` takes it to the
    device once (``bytes_to_device``)."""

    __slots__ = (
        "__weakref__",
        "buf",
        "dtype",
        "ex",
        "hostarr",
        "nbytes",
        "on_device",
        "on_host",
        "shape",
    )

    def __init__(self, ex, shape, dtype):
        self.ex = ex
        self.shape = tuple(shape)
        self.dtype = np.dtype(dtype)
        self.nbytes = math.prod(self.shape) * self.dtype.itemsize
        self.buf = None
        self.hostarr = None
        self.on_host = False
        self.on_device = False

    def __del__(self):
        if self.buf is not None:
            self.buf = None
            try:
                ex = self.ex
                ex._resident.pop(id(self), None)
                ex._released(max(1, self.nbytes))
            except Exception:  # noqa: BLE001 - interpreter shutdown
                pass

    def host(self):
        """The value as a host ndarray (copied from the device if the host copy is stale)."""
        if self.on_host:
            return self.hostarr
        return self.ex.to_host(self)

    # a few ndarray-like conveniences for code that looks at a port's value
    def reshape(self, *shape):
        return self.host().reshape(*shape)

    @property
    def size(self):
        return math.prod(self.shape)

    def __repr__(self):
        where = "+".join(w for w, f in (("host", self.on_host), ("device", self.on_device)) if f)
        return f"DeviceArray({self.ex.name}, {self.dtype}{list(self.shape)}, {where or 'empty'})"


def host_array(v):
    """A port value as a host ndarray (a DeviceArray is copied back once)."""
    return v if v is None or isinstance(v, np.ndarray) else v.host()


class DeviceExecutor(Executor):
    """Executor over a device with its own memory. Subclasses implement the primitives:
    ``_dev_alloc(nbytes)``, ``_h2d(buf, host)`` (asynchronous), ``_d2h(host, buf)``
    (blocking, ordered after everything enqueued), ``_build(source)`` -> module (raises
    BuildError), ``_get_function(module, name)``, ``_kernel_max_wg(kern)``, ``_enqueue(kern,
    groups, local, args)`` -> event or None, ``_wait(event)``, ``_finish()``."""

    name = "device"
    cpu = None          # () -> the CPU executor its programs fall back to (set by the registry)
    max_events = 32            # kernels in flight before the worker waits for the oldest
    # outputs are allocated when a program is handed to the worker: queuing programs ahead of
    # their inputs would hold device memory early and let a spill race a queued reader
    in_order = False

    def __init__(self):
        super().__init__()
        self.mem_lock = threading.RLock()
        self._copies = weakref.WeakKeyDictionary()   # port with a host value -> device buffer
        self._tables = collections.OrderedDict()     # index table bytes -> device buffer
        self._events = collections.deque()
        self._modules = collections.OrderedDict()    # source -> compiled module (LRU)
        self._kcache = {}                            # (id(module), name) -> (module, kernel)
        self.fp64 = True
        self.max_wg = 256
        self.units = 1
        self.max_alloc = 1 << 62
        self.max_param_bytes = 4096
        self.global_mem = 1 << 62
        self.device_name = self.name
        # device memory account: bytes of live buffers, the device arrays holding buffers in
        # least-recently-used order (spill candidates), and what the running program uses
        self.mem_used = 0
        self._resident = collections.OrderedDict()   # id(DeviceArray) -> weakref
        self._pinned = set()                         # ids of DeviceArrays / ports in use
        self._scratch = []                           # (buffer, bytes) of in-flight partials

    def _kernel(self, mod, name):
        """The kernel object ``name`` of a built module, looked up once."""
        key = (id(mod), name)
        k = self._kcache.get(key)
        if k is None or k[0] is not mod:
            k = self._kcache[key] = (mod, self._get_function(mod, name))
            if len(self._kcache) > 4096:
                self._kcache.clear()
                self._kcache[key] = k
        return k[1]

    @property
    def caps(self):
        """Its backend's caps, the kernel size limit (STREAMRT_MAX_KERNEL_OPS) and the C
        renderer told whether this device has fp64 (without it float sums accumulate in
        float)."""
        return dict(self.backend.caps, max_ops=settings.max_kernel_ops,
                    render=functools.partial(render_c.render, dialect=self.backend.dialect,
                                             fp64=self.fp64))

    # ---- memory --------------------------------------------------------------------------
    def alloc(self, shape, dtype):
        a = DeviceArray(self, shape, dtype)
        stats.add("bytes_allocated", a.nbytes)
        stats.add("buffers_allocated")
        return a

    def free(self, buf):
        if isinstance(buf, DeviceArray):
            with self.mem_lock:
                if buf.buf is not None:
                    buf.buf = None
                    self._resident.pop(id(buf), None)
                    self._released(max(1, buf.nbytes))
                buf.on_device = False

    # ---- the device memory account, spilling ----------------------------------------------
    @property
    def mem_limit(self):
        """Bytes this executor may hold on the device: STREAMRT_DEVICE_MEMORY_LIMIT if set
        (a test or a shared GPU), else the device's global memory."""
        lim = settings.device_memory_limit
        return min(lim, self.global_mem) if lim and lim > 0 else self.global_mem

    def _released(self, n):
        with self.mem_lock:
            self.mem_used -= n

    def _touch(self, a):
        """Mark DeviceArray ``a`` (holding a buffer) most recently used."""
        r = self._resident
        k = id(a)
        if k in r:
            r.move_to_end(k)
        else:
            r[k] = weakref.ref(a)

    def _free_pool(self):
        """Subclasses: return cached blocks of the device library's allocator (CuPy's pool)."""
        return 0

    def _drop_caches(self):
        """Free device copies of host values and index tables the running program does not
        use (their host data is still valid). Returns the bytes freed."""
        freed = 0
        with self.mem_lock:
            for port in list(self._copies.keys()):
                if port.id in self._pinned:
                    continue
                ent = self._copies.pop(port, None)
                if ent is not None:
                    freed += ent.nbytes
                    ent.buf = None
                    self._released(ent.nbytes)
            for key in list(self._tables):
                if key in self._pinned:
                    continue
                b = self._tables.pop(key)
                n = max(1, len(key))
                freed += n
                self._released(n)
                del b
        return freed

    def _spill(self, need):
        """Copy least-recently-used device arrays the running program does not use to the
        host and free their device buffers until ``need`` more bytes fit. Returns the bytes
        freed; a spilled array comes back to the device when a kernel reads it again."""
        freed = 0
        with self.mem_lock:
            for k in list(self._resident):
                if self.mem_used + need <= self.mem_limit and freed >= need:
                    break
                if k in self._pinned:
                    continue
                a = self._resident[k]()
                if a is None or a.buf is None:
                    self._resident.pop(k, None)
                    continue
                if not a.on_host:
                    self.to_host(a)
                    stats.add("bytes_spilled", a.nbytes)
                a.buf = None
                a.on_device = False
                self._resident.pop(k, None)
                n = max(1, a.nbytes)
                self._released(n)
                freed += n
                stats.add("device_spills")
                if settings.debug >= 1:
                    print(f"[streamrt] {self.name}: spilled {a.nbytes} bytes to the host",
                          file=sys.stderr)
        return freed

    def copy_in(self, host):
        """A DeviceArray holding ``host`` (Move_Data_In: copied to the device now)."""
        host = np.ascontiguousarray(host)
        a = DeviceArray(self, host.shape, host.dtype)
        a.hostarr, a.on_host = host, True
        self._upload(a)
        return a

    def copy_out(self, buf):
        """Move_Data_Out: the host ndarray of a DeviceArray."""
        return host_array(buf)

    def _new_buffer(self, nbytes):
        """A device buffer of ``nbytes``. When the device is full (a real allocation failure,
        or STREAMRT_DEVICE_MEMORY_LIMIT reached): free cached copies and the allocator's pool,
        retry; spill least-recently-used arrays to the host, retry; then DeviceMemoryError
        (the program is split or runs on the CPU: see launch)."""
        if nbytes > self.max_alloc:
            raise DeviceMemoryError(f"{nbytes} bytes exceed the device's largest allocation "
                                    f"({self.max_alloc})")
        n = max(1, nbytes)
        err = None
        for attempt in range(3):
            if attempt:
                stats.add("device_alloc_retries")
                freed = self._drop_caches() + self._free_pool() if attempt == 1 \
                    else self._spill(n)
                if not freed and attempt == 2:
                    break
            with self.mem_lock:
                if self.mem_used + n > self.mem_limit:
                    err = f"{n} bytes would exceed the device memory limit ({self.mem_limit}" \
                          f", {self.mem_used} in use)"
                    continue
                try:
                    buf = self._dev_alloc(n)
                except MemoryError as e:
                    err = str(e)
                    continue
                self.mem_used += n
                return buf
        if settings.debug >= 1:
            print(f"[streamrt] {self.name}: out of device memory: {err}", file=sys.stderr)
        raise DeviceMemoryError(err)

    def _count(self, key, n, t0, direction):
        stats.add(key, n)
        prof = hooks.profiler
        if prof is not None:
            prof.transfer(direction, n, t0, time.perf_counter() - t0, self.name)

    def _upload(self, a):
        with self.mem_lock:
            if a.on_device:
                return a.buf
            if a.buf is None:
                a.buf = self._new_buffer(a.nbytes)
                self._touch(a)
            if a.nbytes:
                t0 = time.perf_counter()
                self._h2d(a.buf, a.hostarr)
                self._count("bytes_to_device", a.nbytes, t0, "to_device")
            a.on_device = True
            return a.buf

    def to_host(self, a):
        """Bring DeviceArray ``a`` to the host (waits for the kernels that write it)."""
        with self.mem_lock:
            if a.on_host:
                return a.hostarr
            if a.hostarr is None:
                a.hostarr = np.empty(a.shape, a.dtype)
            if a.on_device and a.nbytes:
                t0 = time.perf_counter()
                self._d2h(a.hostarr, a.buf)
                self._count("bytes_to_host", a.nbytes, t0, "to_host")
            a.on_host = True
            return a.hostarr

    def device_buffer(self, port):
        """The device buffer holding (non-view) ``port``'s current value, copied in if needed:
        once per DeviceArray, and once per host value (consts, CPU results) while it lives."""
        v = port.value
        if isinstance(v, DeviceArray) and v.ex is not self:
            v = v.host()
        if isinstance(v, DeviceArray):
            buf = self._upload(v)
            self._touch(v)
            return buf
        if v is None:
            raise RuntimeError(f"internal error: {port} has no value")
        with self.mem_lock:
            ent = self._copies.get(port)
            if ent is not None and ent.value is v and ent.buf is not None:
                return ent.buf
            h = np.ascontiguousarray(v)
            buf = self._new_buffer(h.nbytes)
            if h.nbytes:
                t0 = time.perf_counter()
                self._h2d(buf, h)
                self._count("bytes_to_device", h.nbytes, t0, "to_device")
            self._copies[port] = HostCopy(self, v, buf, max(1, h.nbytes))
            return buf

    def output_buffer(self, port):
        v = port.value
        if not isinstance(v, DeviceArray) or v.ex is not self:
            v = port.value = self.alloc(port.shape, port.dtype)
        with self.mem_lock:
            if v.buf is None:
                v.buf = self._new_buffer(v.nbytes)
            self._touch(v)
            return v

    def _table_buffer(self, table):
        key = table.tobytes()
        with self.mem_lock:
            self._pinned.add(key)
            b = self._tables.get(key)
            if b is not None:
                self._tables.move_to_end(key)
                return b
            b = self._new_buffer(len(key))
            if table.nbytes:
                self._h2d(b, np.ascontiguousarray(table, dtype=np.int64))
            self._tables[key] = b
            if len(self._tables) > 4096:
                old, _ = self._tables.popitem(last=False)
                self._released(max(1, len(old)))
            return b

    # ---- programs ------------------------------------------------------------------------
    def compile(self, prog):
        """The compiled module of ``prog.source`` (in memory by source; the device compiler
        keeps its own disk cache under STREAMRT_CACHE_DIR)."""
        src = prog.source
        with self._lock:
            m = self._modules.get(src)
            if m is not None:
                self._modules.move_to_end(src)
                stats.add("program_cache_memory_hits")
                return m
        if settings.debug >= 4:
            print(f"[streamrt] {self.name} kernel:\n{src}", file=sys.stderr)
        t0 = time.perf_counter()
        m = self._build(src)
        dt = time.perf_counter() - t0
        stats.add("kernels_compiled")
        stats.add("compile_seconds", dt)
        prof = hooks.profiler
        if prof is not None:
            prof.compile(t0, dt, "compiled", f"{self.name}:{prog.fn}")
        with self._lock:
            self._modules[src] = m
            if len(self._modules) > 1024:
                self._modules.popitem(last=False)
        return m

    def launch(self, prog):
        if prog.kind != "kernel":
            self._host_program(prog)
            return
        k = prog.kernel
        if prog.source is None:          # complex dtypes: no C kernel (compiler.kernel_program)
            stats.add("host_round_trips")
            self._cpu_fallback(prog)
            return
        if not self.fp64 and render_c.uses_fp64(k, fp64=False):
            stats.add("fp64_fallbacks")
            if settings.debug >= 1:
                print(f"[streamrt] {self.name}: float64 program on a device without fp64 runs "
                      "on the CPU executor", file=sys.stderr)
            self._cpu_fallback(prog, count=False)
            return
        nargs = 1 + len(k.loads) + len(k.stores) + len(k.scalars) + 3 * len(k.reductions) + 1
        if nargs * 8 > self.max_param_bytes:
            self._split_or_fallback(prog, f"{nargs} kernel arguments exceed the device limit")
            return
        try:
            mod = self.compile(prog)
        except BuildError as e:
            self._split_or_fallback(prog, f"build failed: {str(e)[:300]}")
            return
        try:
            self._run_kernel(prog, mod)
            t = prog.seq.timing if prog.seq is not None else None
            if t is not None and t.measure:
                self._finish()           # placement: time the first runs of a trace for real
        except DeviceMemoryError as e:
            self._out_of_memory(prog, e)
        except Exception as e:  # noqa: BLE001 - a device error: the CPU computes it
            if self._is_oom(e):
                self._retry_after_oom(prog, mod, e)
                return
            if settings.debug >= 1:
                print(f"[streamrt] {self.name} launch failed ({type(e).__name__}: "
                      f"{str(e)[:200]}); running on the CPU executor", file=sys.stderr)
            self._cpu_fallback(prog)

    def _is_oom(self, e):
        """Subclasses: is ``e`` the device library's out-of-memory error (raised by a launch:
        OpenCL allocates buffers lazily, at their first use)?"""
        return isinstance(e, MemoryError)

    def _retry_after_oom(self, prog, mod, err):
        """A launch ran out of device memory: free cached copies and the allocator's pool,
        spill every other array to the host, launch again; then split / CPU (counted)."""
        stats.add("device_alloc_retries")
        if settings.debug >= 1:
            print(f"[streamrt] {self.name}: launch out of memory ({type(err).__name__}: "
                  f"{str(err)[:200]}); spilling and retrying", file=sys.stderr)
        try:
            self._finish()
        except Exception:  # noqa: BLE001 - the queue may report the same failure
            pass
        self._drop_caches()
        self._free_pool()
        self._spill(self.mem_used + 1)
        try:
            self._run_kernel(prog, mod)
        except Exception as e:  # noqa: BLE001
            if isinstance(e, DeviceMemoryError) or self._is_oom(e):
                self._out_of_memory(prog, e)
            else:
                stats.add("fallbacks")
                self._cpu_fallback(prog, count=False)

    def _out_of_memory(self, prog, err):
        """The program's buffers do not fit even after spilling: run it as smaller programs
        (fewer buffers each) if it splits, else on the CPU executor. Counted in
        ``device_oom_splits`` / ``device_oom_fallbacks``; the result is the same."""
        self._split_or_fallback(prog, str(err), "device_oom_splits", "device_oom_fallbacks")

    def _split_or_fallback(self, prog, why, split_stat="kernel_splits", fallback_stat=None):
        """Run ``prog`` as two smaller programs, or on the CPU executor when it does not split."""
        parts = compiler.split(prog, self.caps)
        if settings.debug >= 1:
            print(f"[streamrt] {self.name}: {why}; "
                  f"{'splitting' if parts else 'running on the CPU executor'}", file=sys.stderr)
        if parts is None:
            if fallback_stat:
                stats.add(fallback_stat)
            self._cpu_fallback(prog)
            return
        stats.add(split_stat)
        self.launch_parts(parts)

    def _cpu_fallback(self, prog, count=True):
        """Run ``prog`` on the CPU executor (its inputs are brought to the host); the outputs
        become host values, copied to the device again only when a device kernel reads them."""
        if count:
            stats.add("fallbacks")
        cpu = self.cpu()
        if prog.kind == "kernel":
            k = prog.kernel
            prog = compiler.kernel_program(prog.ops, prog.stored, k.space, k.axes, cpu.caps)
        for p in prog.outputs:
            p.value = np.empty(p.shape, p.dtype)
        with cpu.run_lock:
            cpu.launch(prog)

    def _host_program(self, prog):
        """Intrinsics (setitem, matmul): a host round trip (inputs copied back, result copied
        in when a device kernel reads it), counted in ``host_round_trips``."""
        for p in prog.ops:
            r = run_refop(p, ref_value)
            p.value = np.ascontiguousarray(r, dtype=p.dtype)
        stats.add("intrinsics_launched")
        stats.add("host_round_trips")

    def _scalar_arg(self, s):
        v = scalar_value(s)
        return np.uint8(bool(v)) if s.dtype == np.bool_ else np.dtype(s.dtype).type(v)

    def _run_kernel(self, prog, mod):
        """Launch with the program's own arrays pinned (never spilled while it is set up)."""
        pin = self._pinned
        for a in prog.kernel.loads:
            b = a.port.base_view()[0]
            pin.add(b.id)
            pin.add(id(b.value))
        for p in prog.outputs:
            pin.add(id(p.value))
        try:
            self._run_kernel_pinned(prog, mod)
        finally:
            pin.clear()
            # partials are scratch: their device memory is released once the kernels that
            # use them complete (OpenCL reference counts, CuPy's stream-ordered pool)
            self._free_scratch()

    def _run_kernel_pinned(self, prog, mod):
        k = prog.kernel
        if k.is_reduction:
            K = math.prod(k.kept) if k.kept else 1
            if K == 0:
                return
        elif k.elements == 0:
            return
        args = [self._table_buffer(prog.table)]
        for a in k.loads:
            args.append(self.device_buffer(a.port.base_view()[0]))
        outs = [self.output_buffer(a.port) for a in k.stores]
        args.extend(o.buf for o in outs)
        args.extend(self._scalar_arg(s) for s in k.scalars)
        if not k.is_reduction:
            kern = self._kernel(mod, prog.fn)
            gsz, lsz = render_c.map_launch(k, min(self.max_wg, self._kernel_max_wg(kern)),
                                           self.units)
            self._push(self._enqueue(kern, gsz // lsz, lsz, args))
        else:
            kern = self._kernel(mod, prog.fn)
            groups, L, C = render_c.reduce_launch(
                k, min(self.max_wg, self._kernel_max_wg(kern)), self.units)
            routs = [self.output_buffer(r) for r in k.reductions]
            args.extend(o.buf for o in routs)
            psz = [max(1, K * C * np.dtype(dt).itemsize) for dt in prog.partials]
            parts = []
            try:
                for n in psz:
                    parts.append(self._new_buffer(n))
            finally:                    # scratch: released when the kernel no longer needs it
                self._scratch.extend(zip(parts, psz))
            args.extend(parts)
            args.append(np.int64(C))
            self._push(self._enqueue(kern, groups, L, args))
            if C > 1:
                comb = self._kernel(mod, "sr_comb")
                cargs = [args[0]] + [o.buf for o in routs] + parts + [np.int64(C)]
                l2 = render_c._pow2_floor(min(64, self.max_wg, self._kernel_max_wg(comb)))
                g2 = max(1, min(-(-K // l2), 64 * max(1, self.units)))
                self._push(self._enqueue(comb, g2, l2, cargs))
            outs = outs + routs
        with self.mem_lock:
            for o in outs:
                o.on_device, o.on_host = True, False
        stats.add("kernels_launched")

    def _push(self, ev):
        if ev is None:
            return
        self._events.append(ev)
        while len(self._events) > self.max_events:
            self._wait(self._events.popleft())

    def _free_scratch(self):
        with self.mem_lock:
            for _, n in self._scratch:
                self._released(n)
            self._scratch.clear()

    def synchronize(self):
        super().synchronize()
        self._finish()
        self._events.clear()
        self._free_scratch()
