"""The E-Scheduler and its pending-operation table: dependencies, completions arriving out of
order, error delivery; flow control; execution errors reaching the application at the read."""
from __future__ import annotations

import inspect
import os
import threading

import numpy as np
import pytest

import streamrt as ps
from streamrt.core.errors import callsite
from streamrt.backends import intrinsics
from streamrt.compiler.sequence import Program, ProgramSequence
from streamrt.runtime import cscheduler, escheduler
from streamrt.runtime.flow import Flow
from streamrt.runtime.pending import PendingTable
from streamrt.core.ir import DONE, FAILED, SUBMITTED, Port

HERE = os.path.basename(__file__)


# ---- the pending-operation table -------------------------------------------------------------
def _port(op="add", inputs=(), state=SUBMITTED):
    p = Port("map", op, np.dtype(np.float64), (4,), tuple(inputs), (), callsite())
    p.state = state
    return p


def test_pending_table_parks_and_hands_back():
    t = PendingTable()
    a, b = _port(), _port()
    t.add(a)
    t.add(b)
    assert len(t) == 2 and t.pending(a) and t.pending(b)
    t.park("prog1", a)
    t.park("prog2", a)
    t.park("prog3", b)
    assert t.complete(b) == ["prog3"]           # completions in any order
    assert not t.pending(b) and t.pending(a)
    assert t.complete(a) == ["prog1", "prog2"]  # parked programs come back in parking order
    assert len(t) == 0
    assert t.complete(a) == []                  # a second completion hands back nothing
    t.add(a)
    t.add(a)                                    # adding twice keeps the parked programs
    t.park("p", a)
    t.add(a)
    assert t.complete(a) == ["p"]


# ---- the E-Scheduler with a fake executor ----------------------------------------------------
class FakeExecutor:
    """Records launched programs; the test decides when (and in which order) they complete."""
    name = "fake"
    in_order = False        # completes in any order: dependents must be parked

    def __init__(self):
        self.cond = threading.Condition()
        self.launched = []            # (program, on_done)

    def alloc(self, shape, dtype):
        return np.zeros(shape, dtype)

    def submit(self, prog, on_done):
        with self.cond:
            self.launched.append((prog, on_done))
            self.cond.notify_all()

    def wait_launched(self, n):
        with self.cond:
            assert self.cond.wait_for(lambda: len(self.launched) >= n, timeout=30), \
                f"{len(self.launched)} programs launched, expected {n}"
            return [p for p, _ in self.launched]

    def complete(self, prog, err=None):
        for p, done in self.launched:
            if p is prog:
                done([(p, err, 0.0)])
                return
        raise AssertionError(f"{prog.describe()} was never launched")


@pytest.fixture
def sched():
    flow = Flow(4)
    es = escheduler.EScheduler(flow)
    es.launch_log = []
    yield es, flow
    es.stop()


def _diamond():
    """a <- A; b <- B(a); c <- C (independent); d <- D(b, c)."""
    a = _port("exp")
    b = _port("sin", [a])
    c = _port("cos")
    d = _port("add", [b, c])
    progs = {}
    for name, p in zip("ABCD", (a, b, c, d)):
        progs[name] = Program("kernel", [p], list(p.inputs), [p])
    seq = ProgramSequence([progs[k] for k in "ABCD"], [])
    return (a, b, c, d), progs, seq


def _wait(es, *ports):
    for p in ports:
        es.wait(p)


@pytest.mark.parametrize("order", ["C A B", "A B C", "A C B"])
def test_escheduler_dependencies_and_out_of_order_completion(sched, order):
    es, flow = sched
    ex = FakeExecutor()
    (a, b, c, d), P, seq = _diamond()
    flow.acquire()
    es.submit(seq, ex)
    assert ex.wait_launched(2) == [P["A"], P["C"]]      # B and D are parked
    assert len(es.table) == 4
    launched = 2
    for name in order.split():
        ex.complete(P[name])
        _wait(es, P[name].outputs[0])
        assert P[name].outputs[0].state == DONE
        if name == "A":
            launched += 1                               # B is ready now
            assert ex.wait_launched(launched)[-1] is P["B"]
        if b.state == DONE and c.state == DONE and P["D"] not in [p for p, _ in ex.launched]:
            launched += 1                               # D needed both b and c
            assert ex.wait_launched(launched)[-1] is P["D"]
        # nothing is launched before its inputs are computed
        for prog in [p for p, _ in ex.launched]:
            assert all(i.state == DONE for i in prog.deps())
    assert [p for p, _ in ex.launched][-1] is P["D"] and len(ex.launched) == 4
    ex.complete(P["D"])
    _wait(es, d)
    assert d.state == DONE and len(es.table) == 0
    with flow.cond:
        assert flow.cond.wait_for(lambda: flow.inflight == 0, timeout=30)
    assert es.launch_log == [p for p, _ in ex.launched]
    assert all(p.value is not None for p in (a, b, c, d))


def test_escheduler_delivers_an_error_to_dependents_only(sched):
    es, flow = sched
    ex = FakeExecutor()
    (a, b, c, d), P, seq = _diamond()
    flow.acquire()
    es.submit(seq, ex)
    ex.wait_launched(2)
    ex.complete(P["A"], RuntimeError("device on fire"))
    _wait(es, a, b)
    ex.complete(P["C"])
    _wait(es, c, d)
    assert c.state == DONE
    for p in (a, b, d):
        assert p.state == FAILED
        assert isinstance(p.error, ps.ExecutionError)
        assert "RuntimeError: device on fire" in str(p.error)
        assert HERE in str(p.error)                   # the call site of the failed op
    assert P["B"] not in [p for p, _ in ex.launched]  # never launched on a failed input
    assert P["D"] not in [p for p, _ in ex.launched]
    assert len(es.table) == 0
    with flow.cond:
        assert flow.cond.wait_for(lambda: flow.inflight == 0, timeout=30)


def test_in_order_executor_gets_dependents_queued_at_once(sched):
    """An executor that runs its queue in order receives a program whose inputs its earlier
    programs compute without waiting for their completion (no hand-off per program)."""
    es, flow = sched

    class InOrder(FakeExecutor):
        in_order = True

    ex = InOrder()
    (a, b, c, d), P, seq = _diamond()
    flow.acquire()
    es.submit(seq, ex)
    assert ex.wait_launched(4) == [P[k] for k in "ABCD"]    # nothing parked
    for k in "ABCD":
        ex.complete(P[k])
    _wait(es, a, b, c, d)
    assert all(p.state == DONE for p in (a, b, c, d)) and len(es.table) == 0
    assert not es.queued
    with flow.cond:
        assert flow.cond.wait_for(lambda: flow.inflight == 0, timeout=30)


def test_in_order_executor_starts_a_sequences_programs_in_its_order(sched):
    """On an in-order executor, once a program of a sequence waits for a port another
    executor computes, the programs after it wait behind it, even those whose inputs are
    ready: a region write may reuse a buffer an earlier program still has to read
    (compiler/analysis.py ``inplace_updates``)."""
    es, flow = sched

    class InOrder(FakeExecutor):
        in_order = True

    ex = InOrder()
    elsewhere = _port("exp")                    # computed by another executor, in flight
    elsewhere.state = SUBMITTED
    es.table.add(elsewhere)
    a = _port("sin")
    b = _port("add", [a, elsewhere])            # reads a, waits for ``elsewhere``
    c = _port("cos")                            # ready at once
    P = {k: Program("kernel", [p], list(p.inputs), [p]) for k, p in zip("ABC", (a, b, c))}
    flow.acquire()
    es.submit(ProgramSequence([P[k] for k in "ABC"], []), ex)
    assert ex.wait_launched(1) == [P["A"]]
    ex.complete(P["A"])
    _wait(es, a)
    assert [p for p, _ in ex.launched] == [P["A"]]          # C waits behind B
    elsewhere.state = DONE
    es._post(("complete", [(Program("kernel", [elsewhere], [], [elsewhere]), None, 0.0)]))
    assert ex.wait_launched(2) == [P["A"], P["B"]]
    ex.complete(P["B"])
    assert ex.wait_launched(3) == [P["A"], P["B"], P["C"]]
    ex.complete(P["C"])
    _wait(es, b, c)
    with flow.cond:
        assert flow.cond.wait_for(lambda: flow.inflight == 0, timeout=30)


def test_in_order_worker_skips_programs_after_a_failed_input(sched):
    """The real worker thread (executors/base.py): a queued program whose input's producer
    failed is not run, and its outputs fail with the producer's error."""
    from streamrt.backends.base import Executor
    es, flow = sched
    ran = []

    class Failing(Executor):
        name = "failing"

        def launch(self, prog):
            ran.append(prog.ops[0].op)
            if prog.ops[0].op == "exp":
                raise RuntimeError("kernel on fire")
            for p in prog.outputs:
                p.value[...] = 1.0

    ex = Failing()
    (a, b, c, d), P, seq = _diamond()
    flow.acquire()
    es.submit(seq, ex)
    _wait(es, a, b, c, d)
    ex.stop()
    assert ran == ["exp", "cos"]                   # sin (reads a) and add (reads b) skipped
    assert c.state == DONE
    for p in (a, b, d):
        assert p.state == FAILED and "RuntimeError: kernel on fire" in str(p.error)
    assert len(es.table) == 0 and not es.queued


def test_escheduler_survives_an_executor_that_raises(sched):
    es, flow = sched

    class Broken(FakeExecutor):
        def alloc(self, shape, dtype):
            raise MemoryError("no memory")

    (a, b, c, d), _, seq = _diamond()
    flow.acquire()
    es.submit(seq, Broken())
    _wait(es, a, b, c, d)
    assert all(p.state == FAILED for p in (a, b, c, d))
    assert "MemoryError: no memory" in str(a.error)
    # the thread is still alive and serves the next sequence
    ex = FakeExecutor()
    (a2, *_), P2, seq2 = _diamond()
    flow.acquire()
    es.submit(seq2, ex)
    ex.wait_launched(2)
    ex.complete(P2["A"])
    _wait(es, a2)
    assert a2.state == DONE


def test_flow_control_blocks_and_wakes():
    f = Flow(2)
    f.acquire()
    f.acquire()
    assert not f.try_idle()
    passed = threading.Event()

    def third():
        f.acquire()
        passed.set()

    t = threading.Thread(target=third, daemon=True)
    t.start()
    assert not passed.wait(0.2)          # blocked while two sequences are in flight
    f.release()
    assert passed.wait(30)
    t.join(30)
    assert f.inflight == 2 and f.waits == 1
    f.release()
    f.release()
    assert f.try_idle() and f.inflight == 1


# ---- the executor's worker: completions reported in batches -----------------------------------
class _Stub:
    """A program as the worker sees it: no dependencies, no outputs, inputs of a given size."""
    kernel = None

    def __init__(self, name, size=16):
        self.name, self.inputs, self.outputs = name, [_Sized(size)], []

    def deps(self):
        return []


class _Sized:
    def __init__(self, size):
        self.size = size


def test_worker_reports_small_programs_in_batches():
    from streamrt.backends.base import Executor

    ran, reports = [], []

    class Recorder(Executor):
        name = "recorder"

        def launch(self, prog):
            ran.append(prog.name)

    ex = Recorder()
    big = _Stub("big", size=10 ** 8)
    progs = [_Stub(f"s{i}") for i in range(5)] + [big, _Stub("after")]

    def on_done(items):
        reports.append([p.name for p, err, _ in items])
        assert all(err is None for _, err, _ in items)

    for prog in progs:                      # all queued before the worker starts
        ex._q.put(("run", prog, on_done))
    ex._thread = threading.Thread(target=ex._worker, daemon=True)
    ex._thread.start()
    ex.synchronize()
    ex.stop()
    assert ran == [p.name for p in progs]
    # the five small programs in one report (made before the long one starts), then the rest
    assert reports == [["s0", "s1", "s2", "s3", "s4"], ["big", "after"]]


# ---- execution errors at the read ------------------------------------------------------------
def _boom(p, a, b):
    raise FloatingPointError("matmul exploded")


@pytest.mark.parametrize("inline", [True, False], ids=["inline", "escheduler-thread"])
def test_execution_error_surfaces_at_the_read_with_call_site(monkeypatch, inline, stats):
    monkeypatch.setitem(intrinsics.INTRINSICS, "matmul", _boom)
    m = np.arange(12.0).reshape(3, 4)
    A = ps.asarray(m)
    with ps.config.override(inline_elements=1 << 16 if inline else 0):
        ok = A * 2.0                                          # independent of the failure
        line = inspect.currentframe().f_lineno + 1
        bad = A @ A.T                                         # recorded fine: fails later
        dep = bad + 1.0                                       # depends on the failure
        with pytest.raises(ps.ExecutionError) as ei:
            bad.numpy()
        msg = str(ei.value)
        assert f"{HERE}:{line}" in msg, msg
        assert "FloatingPointError: matmul exploded" in msg
        with pytest.raises(ps.ExecutionError):
            float(dep.sum())
        np.testing.assert_array_equal(ok.numpy(), m * 2.0)
    monkeypatch.undo()
    # the runtime keeps working after the error
    good = A @ A.T
    np.testing.assert_array_equal(good.numpy(), m @ m.T)


def test_launch_log_orders_an_intrinsic_before_its_consumer(stats):
    es = escheduler.get(cscheduler.flow())
    m = np.arange(6.0).reshape(2, 3)
    A = ps.asarray(m)
    es.launch_log = []
    try:
        C = (A @ A.T) * 2.0 + 1.0
        out = C.numpy()
        kinds = [p.kind for p in es.launch_log]
    finally:
        es.launch_log = None
    assert kinds == ["intrinsic", "kernel"]
    np.testing.assert_array_equal(out, (m @ m.T) * 2.0 + 1.0)


def test_async_program_waits_for_a_port_another_thread_computes_inline(monkeypatch, stats):
    """Thread A reads a small result: its sequence runs inline on A (not through the pending
    table). Thread B meanwhile submits work reading that result; B's program must wait for
    A's, not read an unwritten buffer."""
    entered, release = threading.Event(), threading.Event()

    def slow_matmul(p, a, b):
        entered.set()
        release.wait(60)
        return np.matmul(a, b)

    monkeypatch.setitem(intrinsics.INTRINSICS, "matmul", slow_matmul)
    m = np.arange(4.0).reshape(2, 2)
    M = ps.asarray(m)
    box, res = {}, {}

    def thread_a():
        box["y"] = (M @ M) * 2.0          # matmul, then a kernel: one inline sequence
        box["a"] = box["y"].numpy()

    def thread_b():
        try:
            res["z"] = (box["y"] + 1.0).numpy()
        except Exception as e:  # noqa: BLE001 - reported by the assertion below
            res["z"] = e

    ta = threading.Thread(target=thread_a, daemon=True)
    ta.start()
    try:
        assert entered.wait(60)
        tb = threading.Thread(target=thread_b, daemon=True)
        tb.start()
        tb.join(2)                         # a B that does not wait would be done by now
    finally:
        release.set()
    ta.join(60)
    tb.join(60)
    np.testing.assert_array_equal(box["a"], (m @ m) * 2.0)
    assert not isinstance(res["z"], Exception), res["z"]
    np.testing.assert_array_equal(res["z"], (m @ m) * 2.0 + 1.0)


def test_released_buffers_are_dropped_after_their_last_reader(monkeypatch):
    """Buffers of a sequence that the application already released live only until their last
    reader in the sequence has run (not until the whole sequence completes)."""
    from streamrt.backends.numba_cpu.executor import CPUExecutor
    outs, seen = [], []
    orig = CPUExecutor.launch

    def launch(self, prog):
        seen.append([o.value is None for o in outs])
        orig(self, prog)
        outs.extend(prog.outputs)

    a = np.arange(1000, dtype=np.float64)
    with ps.config.override(fusion=False):        # one kernel per op: every result is stored
        x = ps.asarray(a)
        y = (((x + 1.0) * 2.0) - 3.0) / 4.0
        monkeypatch.setattr(CPUExecutor, "launch", launch)
        got = np.asarray(y)
    # each intermediate is gone once the next op has read it; the result y is kept
    assert seen == [[], [False], [True, False], [True, True, False]]
    assert outs[-1].value is not None
    np.testing.assert_array_equal(got, (((a + 1.0) * 2.0) - 3.0) / 4.0)


def test_only_single_threaded_work_runs_on_the_calling_thread(stats):
    """A read of a small sequence runs inline only if its kernels are single-threaded (at
    most serial_elements): a parallel kernel started from the application thread would give
    OpenMP a second thread team (docs/guide.md, Small arrays). Values are NumPy's either way."""
    with ps.config.override(inline_elements=1 << 16, serial_elements=1 << 15, backend="cpu"):
        for n, inline in ((10_000, 1), (40_000, 0)):
            x = ps.asarray(np.linspace(0.0, 1.0, n))
            ps.sync()
            ps.reset_stats()
            r = float(ps.sum(ps.sin(x) * 2.0))
            assert stats()["inline_sequences"] == inline, n
            assert r == pytest.approx(float(np.sum(np.sin(np.linspace(0.0, 1.0, n)) * 2.0)),
                                      rel=1e-12, abs=1e-12)


def test_a_read_of_parallel_kernels_runs_whole_on_the_executor_thread(stats, monkeypatch):
    """A read whose sequence has parallel kernels (too large to run on the calling thread)
    runs the sequence on the CPU executor's own thread -- the one whose OpenMP team runs every
    parallel kernel -- without the E-Scheduler's thread in between; its errors reach the read,
    and the pipeline's slot comes back (the next read works). With inline runs off it goes
    through the E-Scheduler as before."""
    from streamrt.backends.numba_cpu.executor import CPUExecutor
    seen = []
    launch = CPUExecutor.launch

    def spy(self, prog):
        seen.append(threading.current_thread().name)
        return launch(self, prog)

    monkeypatch.setattr(CPUExecutor, "launch", spy)
    a = np.linspace(0.0, 1.0, 100_000)
    with ps.config.override(inline_elements=1 << 16, serial_elements=1 << 15, backend="cpu"):
        x = ps.asarray(a)
        ps.sync()
        ps.reset_stats()
        r = float(ps.sum(ps.sin(x) * 2.0))
        st = stats()
        assert st["worker_sequences"] == 1 and st["inline_sequences"] == 0
        assert seen == ["streamrt-cpu"]
        assert r == pytest.approx(float(np.sum(np.sin(a) * 2.0)), rel=1e-12)

        def fail(self, prog):
            raise RuntimeError("device lost")

        monkeypatch.setattr(CPUExecutor, "launch", fail)
        y = ps.cos(x) * 3.0
        with pytest.raises(ps.ExecutionError, match="device lost"):
            np.asarray(y)
        monkeypatch.setattr(CPUExecutor, "launch", spy)
        assert float(ps.sum(ps.cos(x) * 3.0)) == pytest.approx(float(np.sum(np.cos(a) * 3.0)))
        assert cscheduler.flow().inflight == 0

    with ps.config.override(inline_elements=0, backend="cpu"):
        ps.reset_stats()
        seen.clear()
        r = float(ps.sum(ps.sin(x) * 4.0))
        assert stats()["worker_sequences"] == 0 and stats()["sequences_submitted"] == 1
        assert r == pytest.approx(float(np.sum(np.sin(a) * 4.0)), rel=1e-12)


def test_ended_threads_leave_no_settings_behind():
    """Each thread reading a setting keeps a per-thread cache in config.py; a thread that
    ended must not leave it there (a server spawning threads would grow without bound)."""
    import threading

    from streamrt.core import config

    def work():
        x = ps.asarray(np.arange(10.0))
        float(ps.sum(x * 2.0))

    for _ in range(40):
        t = threading.Thread(target=work)
        t.start()
        t.join()
    live = threading.active_count()
    assert len(config._thread_dicts) <= live + 1
