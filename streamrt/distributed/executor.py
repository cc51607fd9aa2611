"""Dask executor: a program sequence over arrays partitioned along axis 0 in, Dask tasks out --
one task per chunk per run of chunk-aligned fused kernels (planner.py; the kernels' generated
source is shipped and compiled once per worker process, worker.py), a small combine tree per
fused reduction over the chunked axis, one whole-array task per intrinsic. Results stay on the
workers (values.py: Dask futures in a ``DistValue``) until read. Also the C-Scheduler's route
to it (core/hooks.distributed)."""
from __future__ import annotations

import collections
import itertools
import math
import threading
import types
import weakref

from ..core import stats
from ..core.config import settings
from ..core.ir import FAILED, SUBMITTED
from ..backends import numba_cpu
from ..backends.base import Executor, ref_value
from ..runtime import cscheduler, escheduler
from .planner import Group, _rows, space_bounds
from .values import PENDING, PENDING_TASKS, SUBMITTED, DistValue, _extent
from .worker import _Spec, combine, run_whole

_task_ids = itertools.count(1)


class DaskExecutor(Executor):
    """Runs program sequences on the Dask cluster of ``streamrt.distributed``."""
    name = "dask"
    # region writes and scans stay intrinsics (whole-array tasks): per-chunk planning knows
    # plain loads and stores only
    caps = dict(numba_cpu.BACKEND.caps, fuse_updates=False, fuse_scans=False, inline_scalars=False,
                row_fusion=False)

    def __init__(self):
        super().__init__()
        self.client = None          # the cluster's Client (set by ps.distributed.connect)
        self.submitted = SUBMITTED                        # task keys, newest last
        self._window = collections.deque()                # per sequence: weakrefs to ports
        self._adm = threading.Lock()

    def alloc(self, shape, dtype):
        return PENDING

    def _client(self):
        return self.client

    def _submit(self, fn, *args, kind="k"):
        key = f"streamrt-{kind}-{next(_task_ids)}"
        f = self._client().submit(fn, *args, key=key, pure=False)
        self.submitted.append(key)
        PENDING_TASKS.append(weakref.ref(f))
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
            from distributed import wait     # (dask: an optional dependency)
            stats.add("dask_flow_waits")
            wait(futs)

    # ---- programs --------------------------------------------------------------------------
    def launch(self, prog):
        """Run one program on its own (the E-Scheduler path; ``run_sequence`` is the usual
        one)."""
        g = Group(self, escheduler.get(cscheduler.flow()), {})
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
        stats.add("sequences_submitted")
        stats.add("dask_sequences")
        es = escheduler.get(cscheduler.flow())
        readers = {}
        for i, prog in enumerate(seq.programs):
            for d in prog.deps():
                readers.setdefault(d.id, set()).add(i)
        g = Group(self, es, readers)
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


_instance = None
_lock = threading.Lock()


def get() -> DaskExecutor:
    global _instance
    with _lock:
        if _instance is None:
            _instance = DaskExecutor()
        return _instance
