"""E-Scheduler: its own thread and message queue. Program sequences in, launches out: it
allocates output buffers, enters outputs in the pending-operation table, launches ready
programs, parks the others, and on each completion callback retries what was parked."""
from __future__ import annotations

import atexit
import queue
import threading
import time

from ..core import atfork, hooks, stats
from ..core.errors import CancelledError, ExecutionError
from ..core.ir import DONE, FAILED, SUBMITTED
from ..backends import registry
from ..backends.base import alloc_outputs
from . import placement
from .pending import PendingTable


def execution_error(err, sites):
    """``err``, raised while computing ops recorded at ``sites``, as the ExecutionError a
    read of their arrays raises."""
    where = "\n  ".join(str(s) for s in sites) or "(unknown)"
    return ExecutionError(f"{type(err).__name__}: {err}\n in a program computing ops "
                          f"recorded at:\n  {where}")


class EScheduler:
    def __init__(self, flow=None):
        self.q = queue.SimpleQueue()
        self.table = PendingTable()
        self.cond = threading.Condition()
        self.flow = flow
        # ports another application thread is computing inline (not in the table) that
        # parked programs wait for: run_inline posts ("inline_done", prog) when they are done
        self.inline_waits = set()
        self.wlock = threading.Lock()
        # outputs of programs handed to an in-order executor and not completed yet (E-Scheduler
        # thread only): a program that reads only such ports, on the same executor, is
        # launched at once -- the executor runs its queue in order -- instead of waiting for a
        # completion message (two thread hand-offs per dependent program saved)
        self.queued = {}
        # started by the first message: a script whose reads all run inline (small arrays, the
        # reference interpreter) never starts it -- a thread start and its join at exit saved
        self.thread = threading.Thread(target=self._loop, name="streamrt-escheduler", daemon=True)
        self._start_lock = threading.Lock()
        self.launch_log = None     # tests may set a list: program launch order
        # sequences submitted and not done, by id (``cancel`` finds a thread's among them)
        self.live = {}
        self.live_lock = threading.Lock()

    def _post(self, msg):
        if self.thread.ident is None:           # (set once start() returns)
            with self._start_lock:
                if self.thread.ident is None:
                    self.thread.start()
        self.q.put(msg)

    # ---- application side ----------------------------------------------------------------
    def submit(self, seq, executor):
        stats.add("sequences_submitted")
        seq.owner = threading.get_ident()
        with self.live_lock:
            self.live[id(seq)] = seq
        self._post(("submit", seq, executor))

    def cancel(self, owner=None):
        """Cancel the sequences thread ``owner`` (default: this one) submitted that have not
        finished (a KeyboardInterrupt in one of its reads): their programs not started are
        dropped -- the E-Scheduler and the executors skip them, failing their outputs with
        CancelledError -- and a running kernel finishes. Returns how many were cancelled."""
        owner = threading.get_ident() if owner is None else owner
        err = CancelledError(
            "cancelled: a KeyboardInterrupt interrupted a read on the thread that recorded "
            "this computation, and its programs that had not started were dropped (compute "
            "the array again to get its value)")
        n = 0
        with self.live_lock:
            for seq in self.live.values():
                if seq.owner == owner and seq.cancelled is None:
                    seq.cancelled = err
                    n += 1
        if n:
            stats.add("sequences_cancelled", n)
        return n

    def wait(self, port):
        """Block until ``port`` is computed or failed (no busy-waiting)."""
        if port.state == SUBMITTED:
            with self.cond:
                self.cond.wait_for(lambda: port.state != SUBMITTED)

    def run_inline(self, seq, executor):
        """Run a small sequence on the calling thread while the pipeline is idle (no thread
        hand-off: for small arrays that costs more than the kernels). Same results, same
        error delivery as the asynchronous path."""
        stats.add("sequences_submitted")
        stats.add("inline_sequences")
        try:
            self._run_inline(seq, executor)
        except KeyboardInterrupt:
            # interrupted (Ctrl-C) on this thread: what has not run is cancelled -- its
            # outputs fail, so a later read raises instead of waiting for a run that will
            # not come
            self._fail_unrun(seq, CancelledError(
                "cancelled: a KeyboardInterrupt interrupted the read that was computing this "
                "array (compute it again to get its value)"))
            stats.add("sequences_cancelled")
            raise

    def _fail_unrun(self, seq, err):
        """Fail the outputs of ``seq``'s programs that have not run (a later read raises
        ``err`` instead of waiting for a run that will not come)."""
        for prog in seq.programs:
            if any(p.state == SUBMITTED for p in prog.outputs):
                self._settle(prog, err)
                self._inline_settled(prog)
        seq.programs = []

    def run_on_worker(self, seq, executor, release):
        """Run a sequence a read is about to wait for on ``executor``'s own thread, whole, as
        ``run_inline`` runs one here (the pipeline is idle: the caller holds its only slot,
        and ``release()`` gives it back when the sequence is done). Its parallel kernels
        start from the thread whose OpenMP team runs every other parallel kernel, and the
        read waits for one hand-off each way instead of four (application -> E-Scheduler ->
        executor -> E-Scheduler -> application). Ctrl-C in that read cancels what has not
        started (``cancel``), as for a submitted sequence."""
        stats.add("sequences_submitted")
        stats.add("worker_sequences")
        seq.owner = threading.get_ident()
        with self.live_lock:
            self.live[id(seq)] = seq

        def run():
            try:
                self._run_inline(seq, executor)
            except BaseException as e:  # noqa: BLE001 - delivered at the read, never lost
                self._fail_unrun(seq, e)
            finally:
                with self.live_lock:
                    self.live.pop(id(seq), None)
                release()

        executor.call(run)

    def _run_inline(self, seq, executor):
        for prog in seq.programs:
            prog.executor = executor
            prog.seq = seq
            err = seq.cancelled     # (set only for a sequence run_on_worker runs)
            for dep in prog.deps() if err is None else ():
                if dep.state == FAILED:
                    err = dep.error
                    break
                if dep.state == SUBMITTED:
                    self.wait(dep)
            if err is None:
                try:
                    alloc_outputs(prog, executor)
                    if self.launch_log is not None:
                        self.launch_log.append(prog)
                    t0 = time.perf_counter()
                    with executor.run_lock:
                        executor.launch(prog)
                    dt = time.perf_counter() - t0
                    if seq.timing is not None:
                        seq.timing.seconds += dt
                    prof = hooks.profiler
                    if prof is not None:
                        prof.kernel(prog, executor, t0, dt)
                except Exception as e:  # noqa: BLE001 - delivered at the read
                    err = e
            self._settle(prog, err)
            seq.done_reading(prog)
            self._inline_settled(prog)
        if seq.timing is not None:
            placement.finish(seq)
        seq.programs = []

    def _inline_settled(self, prog):
        """Wake the programs another thread parked on ``prog``'s outputs (run inline here)."""
        # under the lock even when the set looks empty: _try may be adding one of these
        # ports right now, having seen it SUBMITTED before _settle (a lost wake-up)
        with self.wlock:
            hit = [p for p in prog.outputs if p.id in self.inline_waits] \
                if self.inline_waits else ()
            self.inline_waits.difference_update(p.id for p in hit)
        if hit:
            self._post(("inline_done", prog))

    def _settle(self, prog, err):
        if err is not None and not isinstance(err, ExecutionError):
            err = execution_error(err, prog.sites())
        mismatch = None
        if err is None and hooks.on_complete is not None:
            mismatch = hooks.on_complete(prog)      # debugger: compare with the reference
        with self.cond:
            for p in prog.outputs:
                if err is None and mismatch is None:
                    p.state = DONE
                    if p.kind != "view" and not hooks.keep_graph:   # (the debugger's)
                        p.inputs = ()
                elif err is None:
                    p.state = FAILED            # the optimised value is kept (handlers may
                    p.error = mismatch          # choose to continue with it)
                else:
                    p.state = FAILED
                    p.error = err
                    p.value = None
            self.cond.notify_all()
        return err

    def stop(self):
        if self.thread is not None and self.thread.is_alive():
            self.q.put(("stop",))
            self.thread.join(timeout=10)

    # ---- the thread ----------------------------------------------------------------------
    def _loop(self):
        while True:
            msg = self.q.get()
            kind = msg[0]
            try:
                if kind == "submit":
                    self._submit(msg[1], msg[2])
                elif kind == "complete":
                    self._complete(msg[1])
                elif kind == "inline_done":
                    self._retry(msg[1])
                elif kind == "stop":
                    return
            except BaseException as e:  # noqa: BLE001 - never let the scheduler thread die
                if kind == "submit":
                    for prog in msg[1].programs:
                        self._finish(prog, e)
                elif kind == "inline_done":
                    self._finish(msg[1], e)
                # ("complete": each program's failure is delivered inside _complete)
            # the thread then idles in get(): the last message must not keep its programs,
            # their ports and buffers alive until the next one comes
            del msg

    def _submit(self, seq, executor):
        for prog in seq.programs:
            prog.seq = seq
            prog.executor = executor
            for p in prog.outputs:
                self.table.add(p)
        if not seq.programs:
            self._seq_done(seq)
        behind = None
        for prog in seq.programs:
            # On an in-order executor the programs of a sequence start in its order: once one
            # waits (a port pending on another executor or thread, or the debugger's
            # completion hook unordering the launches), the rest wait behind it -- a region
            # write may reuse a buffer that an earlier program still has to read
            # (compiler/analysis.py ``inplace_updates``).
            if behind is not None and getattr(executor, "in_order", False):
                self.table.park(prog, behind)
                continue
            if not self._try(prog) and prog.outputs and self.table.pending(prog.outputs[0]):
                behind = prog.outputs[0]

    def _try(self, prog):
        """Launch ``prog``, or park it on a port it waits for; False when parked."""
        ex = prog.executor
        seq = prog.seq
        if seq is not None and seq.cancelled is not None:
            self._finish(prog, seq.cancelled)       # (Ctrl-C on its thread: not started)
            return True
        ordered = getattr(ex, "in_order", False) and hooks.on_complete is None
        for dep in prog.deps():
            if dep.state == FAILED:
                self._finish(prog, dep.error)
                return True
            if dep.state != DONE:
                if self.table.pending(dep):
                    if ordered and self.queued.get(dep.id) is ex:
                        continue            # queued before this one on the same executor
                    self.table.park(prog, dep)
                    return False
                # a port of another thread's queue not flushed yet cannot occur: the read
                # that created this program flushed its inputs' queues first. A port that
                # thread is computing inline is waited for through inline_waits.
                with self.wlock:
                    inline = dep.state == SUBMITTED
                    if inline:
                        self.inline_waits.add(dep.id)
                        self.table.add(dep)
                        self.table.park(prog, dep)
                if inline:
                    return False
                return self._try(prog)          # it completed meanwhile: check again
        alloc_outputs(prog, ex)
        if self.launch_log is not None:
            self.launch_log.append(prog)
        if ordered:
            for p in prog.outputs:
                self.queued[p.id] = ex
        ex.submit(prog, self._on_done)
        return True

    def _on_done(self, items):
        """Completion callback, called on the executor's thread: [(prog, err, seconds)]."""
        for prog, _, seconds in items:
            seq = prog.seq
            if seq is not None and seq.timing is not None:
                seq.timing.seconds += seconds
        self._post(("complete", items))

    def _complete(self, items):
        for prog, err, _ in items:
            try:
                self._finish(prog, err)
            except BaseException as e:  # noqa: BLE001 - the others still complete
                self._finish(prog, e)

    def _finish(self, prog, err):
        if self.queued:
            for p in prog.outputs:
                self.queued.pop(p.id, None)
        self._settle(prog, err)
        if prog.seq is not None:
            prog.seq.done_reading(prog)
        self._retry(prog)
        seq = prog.seq
        if seq is not None:
            seq.remaining -= 1
            if seq.remaining == 0:
                self._seq_done(seq)

    def _retry(self, prog):
        """Launch (or park again) the programs parked on ``prog``'s outputs."""
        retry = []
        for p in prog.outputs:
            retry.extend(self.table.complete(p))
        for r in retry:
            self._try(r)

    def _seq_done(self, seq):
        with self.live_lock:
            self.live.pop(id(seq), None)
        if seq.timing is not None:
            placement.finish(seq)
        seq.programs = []
        if self.flow is not None:
            self.flow.release()


_instance = None
_lock = threading.Lock()


def get(flow=None) -> EScheduler:
    global _instance
    with _lock:
        if _instance is None:
            _instance = EScheduler(flow)
            atexit.unregister(shutdown)     # (once: a forked child makes a new instance)
            atexit.register(shutdown)
        return _instance


def _after_fork():
    """A forked child has no E-Scheduler thread: a new scheduler (thread, queue, pending
    table, locks) is made by the next submission."""
    global _instance, _lock
    _lock = threading.Lock()
    if _instance is not None:
        _instance.thread = None         # (its stop() at exit: nothing to join)
    _instance = None


atfork.register(_after_fork)


def shutdown():
    for fn in list(hooks.shutdown):     # (the profiler writes its run file: work still runs)
        try:
            fn()
        except Exception:  # noqa: BLE001 - never fail interpreter exit
            pass
    if _instance is not None:
        _instance.stop()
    for ex in registry.all_instances():
        ex.stop()
