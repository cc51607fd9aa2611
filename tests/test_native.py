"""The C record path (frontend/_native.c and native.py): it is built and installed (CI
requires it), and it records exactly what the Python path records -- the same trace-key
entries, ports, work-queue entries, release counts and errors at the user's line."""
import contextlib
import gc
import os
import subprocess
import sys
import threading

import numpy as np
import pytest

import streamrt as ps
from streamrt.frontend import native, pieces
from streamrt.core import ir
from streamrt.runtime import workqueue

needs_native = pytest.mark.skipif(not native.available(),
                                  reason="the C extension is not built here, or is off")


@needs_native
def test_installed():
    # (CI sets STREAMRT_TEST_REQUIRE_NATIVE=1: conftest.py then fails the whole run if the
    # extension is not built, rather than skipping this file)
    assert native.available()
    assert type(ps.Array.__dict__["__add__"]).__name__ == "BinOp"
    assert type(ps.Array.__dict__["__del__"]).__name__ == "ArrayDel"
    assert type(ps.sqrt).__name__ == "MapFunc"
    assert type(workqueue.current_queue().lock).__name__ == "QueueLock"
    assert ps.runtime_stats()["native_record"] == 1


def _record(fn, *args):
    """Run ``fn`` on a fresh work queue; return what it recorded: the key entries, and per
    entry the port's description (without ids), before anything is flushed."""
    ps.sync()
    q = workqueue.current_queue()
    out = fn(*args)
    keys = q.key_entries()
    ports = []
    for e in q.entries:
        p = e[1]
        ports.append((p.kind, p.op, p.dtype, p.shape, p.params, p.loop_dtype, p.state,
                      p.nrefs, p.site.code, p.site.lasti,
                      tuple((i.kind, i.dtype, i.params, i.scalar) for i in p.inputs)))
    released = tuple(p.nrefs <= 0 for p in q.kports if p.state == ir.NEW)
    return keys, ports, released, out


def _program(u, v, w, z):
    a = u + v                      # array (op) array
    b = a * 2.0 - 1                # array (op) float, array (op) int
    c = 3.0 / (b + 0.5)            # reflected
    d = ps.sqrt(ps.abs(c)) ** 2    # map functions, power with a small integer exponent
    e = (d > u) & (v <= 1.0)       # comparisons, a boolean operator
    f = w + z                      # int32 + int64
    g = f // 3 - f % 4             # integer floor division and remainder
    h = u[::2] * 2.0               # a view
    s = u.sum() * v                # a computed 0-d array against an array
    k = ps.exp(u) + ps.negative(v)
    m = ps.dot(u, v) + ps.max(u)   # the dot's product at its site (BinOp.at), reductions
    o = ps.outer(u[:4], v[:3]) @ v[:3]    # an intrinsic (queued by _native.enqueue)
    del a                          # released before the read
    return b, c, d, e, g, h, s, k, m, o


@needs_native
def test_records_what_the_python_path_records():
    rng = np.random.default_rng(0)
    u = ps.asarray(rng.random(64).astype(np.float32))
    v = ps.asarray(rng.random(64).astype(np.float32))
    w = ps.asarray(rng.integers(-9, 9, 64).astype(np.int32))
    z = ps.asarray(rng.integers(-9, 9, 64).astype(np.int64))
    _record(_program, u, v, w, z)            # memo dicts filled (both paths read them)
    with native.disabled():
        kp, pp, rp, out_p = _record(_program, u, v, w, z)
        ref = [np.asarray(x) for x in out_p]
    assert native.available()
    kc, pc, rc, out_c = _record(_program, u, v, w, z)
    assert kc == kp
    assert pc == pp
    assert rc == rp
    for x, r in zip(out_c, ref):
        np.testing.assert_array_equal(np.asarray(x), r)


@needs_native
def test_same_trace_cache_entry_from_either_path(stats):
    u = ps.asarray(np.arange(100, dtype=np.float64))

    def step(x):
        return float(ps.max(x * 0.5 + 1.0 - x / 3.0))

    with native.disabled():
        first = step(u)
    n = stats()["trace_cache_misses"]
    assert step(u) == first
    assert stats()["trace_cache_misses"] == n          # the C path's key hit the same entry
    assert stats()["trace_cache_hits"] >= 1


@needs_native
def test_hot_operators_are_recorded_in_c(stats):
    u = ps.asarray(np.ones(100, np.float32))
    v = ps.asarray(np.ones(100, np.float32))

    def body(u, v):
        return ps.sqrt(u * 0.5 + v) - 1.0 / v, u < v

    body(u, v)                       # first occurrences validate on the Python path
    ps.sync()
    ps.reset_stats()
    for _ in range(10):
        a, b = body(u, v)
    s = stats()
    assert s["ops_recorded"] == 60
    assert s["ops_recorded_native"] == 60


@needs_native
def test_only_ops_reading_a_piecewise_array_leave_the_c_path(stats):
    """While a rolled (piecewise) array lives, the ops that read it are recorded by the Python
    path (piece by piece); every other op still by the C path."""
    u = ps.asarray(np.ones(100, np.float32))
    v = ps.asarray(np.ones(100, np.float32))

    def body(u, v):
        return ps.sqrt(u * 0.5 + v) - 1.0 / v, u < v

    body(u, v)                       # first occurrences validate on the Python path
    big = np.arange(pieces.MIN_ELEMENTS + 100, dtype=np.float32)
    x = ps.asarray(big) * 1
    ps.sync()
    r = ps.roll(x, 3)
    assert r._port in pieces.PIECEWISE
    ps.reset_stats()
    for _ in range(10):
        a, b = body(u, v)
    s = stats()
    assert s["ops_recorded"] == s["ops_recorded_native"] == 60
    ps.reset_stats()
    y = r + x
    z = ps.sqrt(r)
    assert stats()["ops_recorded_native"] == 0
    np.testing.assert_array_equal(np.asarray(y), np.roll(big, 3) + big)
    np.testing.assert_array_equal(np.asarray(z), np.sqrt(np.roll(big, 3)))


@needs_native
def test_c_ports_have_every_slot():
    """A port made in C sets every slot of the Python class (a slot added there and not in
    _native.c would be missing)."""
    u = ps.asarray(np.ones(4, np.float32))
    p = (u * 2.0)._port
    q = p.inputs[1]                                  # the scalar operand's port
    for port in (p, q):
        for name in ir.Port.__slots__:
            if name != "__weakref__":
                getattr(port, name)
    assert q.kind == "scalar" and q.scalar == 2.0 and q.state == ir.DONE
    assert p.state == ir.NEW and p.queue is workqueue.current_queue()


@needs_native
def test_release_counts_and_views():
    u = ps.asarray(np.ones(10, np.float32))
    x = u * 2.0
    p = x._port
    assert p.nrefs == 1
    y = x[1:4]                      # a view keeps its base alive
    assert p.nrefs == 2
    del x
    assert p.nrefs == 1
    vp = y._port
    del y
    gc.collect()
    assert vp.nrefs == 0 and p.nrefs == 0


@needs_native
def test_numpy_tier_views_release_their_base_however_they_die():
    """Array's C dealloc (and its free list of dead Arrays) releases a NumPy-tier view's
    count on its base once, whether the view dies by reference count, in a cycle the
    collector finalizes first, or as an instance of a subclass; a reused Array counts
    again from zero."""
    with ps.config.override(eager_elements=1 << 16):
        _views_release(ps.asarray(np.arange(100.0)))


def _views_release(a):
    _ = a[1:]                         # (a view gives ``a`` its base port)
    del _
    b = a._port
    base_refs = b.nrefs

    def counts():
        return b.nrefs - base_refs, b.eager_views

    for _ in range(200):              # (more than the free list holds)
        v = a[2:10]
        assert counts() == (1, 1)
        del v
        assert counts() == (0, 0)
    views = [a[k:k + 5] for k in range(100)]
    assert counts() == (100, 100)
    del views
    assert counts() == (0, 0)

    cycle = [a[3:7]]
    cycle.append(cycle)              # only the collector frees it, after its finalizer ran
    del cycle
    gc.collect()
    assert counts() == (0, 0)
    for _ in range(3):
        v = a[4:8]
        assert counts() == (1, 1) and float(v[0]) == 4.0
        del v
        assert counts() == (0, 0)

    class Sub(ps.Array):
        __slots__ = ("extra",)
    s = ps.Array.__new__(Sub)         # a bare instance, then a view's state set on it
    v = a[5:9]
    s._p, s._v, s._b = None, v._v, b
    b.nrefs += 1
    b.eager_views += 1
    s.extra = [s]                     # (a cycle through the subclass's own slot)
    del v, s
    gc.collect()
    assert counts() == (0, 0)


@needs_native
def test_operator_slots_keep_pythons_dispatch_rules():
    """Array's operator slots are C functions calling its BinOps (native.install_slots); the
    operand rules are Python's: a subclass's reflected method comes first, and NumPy
    operands, numbers and the reflected forms give what the methods give."""
    a = ps.asarray(np.arange(4.0))

    class Sub(ps.Array):
        def __add__(self, other):
            return "Sub.__add__"

        def __radd__(self, other):
            return "Sub.__radd__"

        def __lt__(self, other):
            return "Sub.__lt__"

        def __gt__(self, other):
            return "Sub.__gt__"
    s = ps.Array.__new__(Sub)
    assert a + s == "Sub.__radd__"        # the subclass's reflected method first
    assert s + a == "Sub.__add__"
    assert 1.0 + s == "Sub.__radd__"
    assert (a < s) == "Sub.__gt__"        # (a < s: the subclass's reflection, s > a)
    assert (s < a) == "Sub.__lt__"

    import operator
    for name in ("add", "sub", "mul", "truediv", "floordiv", "mod",
                 "lt", "le", "eq", "ne", "gt", "ge"):
        f = getattr(operator, name)
        for x, y in ((a, 2.0), (2.0, a), (a, np.float64(3.0)), (a, a[::-1]), (np.ones(4), a)):
            want = f(np.asarray(x) if isinstance(x, ps.Array) else x,
                     np.asarray(y) if isinstance(y, ps.Array) else y)
            np.testing.assert_array_equal(np.asarray(f(x, y)), want)
    ints = ps.asarray(np.arange(8))
    for op in ("and_", "or_", "xor", "lshift", "rshift"):
        f = getattr(operator, op)
        np.testing.assert_array_equal(np.asarray(f(ints, 3)), f(np.arange(8), 3))
        np.testing.assert_array_equal(np.asarray(f(3, ints)), f(3, np.arange(8)))
    # in-place operators and indexing (mp_subscript, mp_ass_subscript), on the NumPy tier
    # and recorded
    for eager in (1 << 16, 0):
        with ps.config.override(eager_elements=eager):
            m, want = ps.asarray(np.arange(12.0).reshape(3, 4)), np.arange(12.0).reshape(3, 4)
            for f in (operator.iadd, operator.isub, operator.imul, operator.itruediv):
                m = f(m, 2.0)
                want = f(want, 2.0)
                m[1, 1:3] = 7.0
                want[1, 1:3] = 7.0
                row = m[2]
                row += m[0]
                want[2] += want[0]
            np.testing.assert_array_equal(np.asarray(m), want)
            assert float(m[1, 2]) == want[1, 2]
    with pytest.raises(AttributeError):
        del a[0]

    class Indexed(ps.Array):
        def __getitem__(self, key):
            return ("Indexed", key)
    assert ps.Array.__new__(Indexed)[1:2] == ("Indexed", slice(1, 2))


@needs_native
def test_a_float64_element_is_numpys_and_meets_arrays_directly():
    """An element of a float64 Array on the NumPy tier is a NumPy float64 (of a subclass,
    _native.float64: type(e) is np.float64 is the one thing that differs) whose + - * / with
    an Array go straight to the Array's operator; values, dtypes and promotion are NumPy's,
    also for the results of its arithmetic with numbers, which keep the subclass."""
    import pickle
    with ps.config.override(eager_elements=1 << 16):
        a = np.arange(12.0).reshape(3, 4)
        x = ps.asarray(a)
        e = x[1, 2]
        assert type(e) is native._native.float64 and isinstance(e, (np.float64, float))
        assert e.dtype == np.float64 and repr(e) == repr(a[1, 2]) and hash(e) == hash(6.0)
        assert type(pickle.loads(pickle.dumps(e))) is np.float64
        assert x[-1, -1] == a[-1, -1] and x[1][2] == 6.0
        s = 1.5 * e
        assert type(s) is native._native.float64 and s == 9.0
        assert type(-e) is type(abs(-e)) is native._native.float64 and abs(-e) == 6.0
        f32 = ps.asarray(np.arange(4, dtype=np.float32))
        for got, want in ((e * x[0], a[1, 2] * a[0]), (x[0] * e, a[0] * a[1, 2]),
                          (e - x[0], a[1, 2] - a[0]), (e / (x[0] + 1.0), a[1, 2] / (a[0] + 1)),
                          (1.5 * e * x[:, 1], 1.5 * a[1, 2] * a[:, 1]),
                          (e + f32, a[1, 2] + np.arange(4, dtype=np.float32))):
            assert isinstance(got, ps.Array)
            assert got.dtype == want.dtype
            np.testing.assert_array_equal(np.asarray(got), want)
        assert np.sqrt(e) == np.sqrt(6.0) and float(e) == 6.0 and e / 0.0 == np.inf
        # element writes of floats, NumPy floats and elements; other values through NumPy
        x[0, 0] = e
        x[0, 1] = np.float64(2.5)
        x[0, 2] = 7
        x[0, -1] = 1.25
        np.testing.assert_array_equal(np.asarray(x[0]), [6.0, 2.5, 7.0, 1.25])
        with pytest.raises(IndexError):
            x[3, 0]
        with pytest.raises(IndexError):
            x[0, 4] = 1.0
        ints = ps.asarray(np.arange(4))
        assert type(ints[1]) is np.int64             # (other dtypes: NumPy's own scalars)
        # a float64 scalar from a NumPy function on the NumPy tier is one too (atax's
        # ``(A[i, :] @ x) * A[i, :]``), with NumPy's value
        h = np.asarray(x)                            # (x's elements were written above)
        for got, want in ((x[0] @ x[1], h[0] @ h[1]), (x.sum(), h.sum()),
                          (ps.dot(x[2], x[0]), np.dot(h[2], h[0]))):
            assert type(got) is native._native.float64 and got == want


@needs_native
def test_errors_name_the_users_line():
    u = ps.asarray(np.ones(3, np.float32))
    v = ps.asarray(np.ones(4, np.float32))
    with pytest.raises(ps.ShapeError) as e:
        u + v                                        # the marked line
    assert f"test_native.py:{e.tb.tb_lineno}" in str(e.value)
    w = ps.asarray(np.ones(3, np.int32))
    with pytest.raises(ps.StreamrtOverflowError) as e:
        w + 2 ** 40
    assert f"test_native.py:{e.tb.tb_lineno}" in str(e.value)
    with pytest.raises(ps.ArgumentError):
        u + object()
    with pytest.raises(ps.DTypeError):
        ps.sqrt(u, dtype="no such dtype")


@needs_native
def test_map_function_keeps_its_identity():
    import inspect
    assert ps.sqrt.__name__ == "sqrt"
    assert "sqrt" in ps.sqrt.__doc__
    assert list(inspect.signature(ps.sqrt).parameters) == [
        "x", "out", "where", "casting", "order", "dtype", "subok", "signature"]
    u = ps.asarray(np.array([4.0, 9.0]))
    np.testing.assert_array_equal(np.asarray(ps.sqrt(u, dtype=np.float32)), [2, 3])
    assert ps.sqrt(4.0) == 2.0                       # a Python scalar: the Python path
    import pickle
    assert pickle.loads(pickle.dumps(ps.sqrt)) is ps.sqrt
    assert ps.Array.__add__.__name__ == "add"
    assert ps.Array.__radd__(u, 1.0).shape == (2,)   # called unbound, as a method


@needs_native
def test_queue_threshold_setting_is_seen_by_the_c_path(stats):
    u = ps.asarray(np.ones(8, np.float32))
    with ps.config.override(queue_threshold=4):
        x = u
        for _ in range(20):
            x = x + 1.0
        assert stats()["flushes"] >= 2               # the threshold flushed on the way
    x = u
    for _ in range(20):
        x = x + 1.0
    n = stats()["flushes"]
    np.testing.assert_array_equal(np.asarray(x), np.full(8, 21.0, np.float32))
    assert stats()["flushes"] == n + 1               # back to the default: one flush, the read


@needs_native
@pytest.mark.parametrize("preamble", [False, True])
def test_past_the_threshold_the_c_path_flushes_where_python_would(stats, preamble):
    """Past the queue threshold the C path records on its own until an op's call site is the
    one the trace began with (a new loop iteration) or the queue holds twice the threshold;
    the flushes fall where the Python path puts them: at each iteration start, or -- a trace
    that began before its loop, whose first site never comes round -- at the hard limit."""
    u0 = np.linspace(0.0, 1.0, 8)

    def run():
        u = ps.asarray(u0)
        flushes = stats()["flushes"]
        with ps.config.override(queue_threshold=4):
            x = u * 2.0 if preamble else u
            for _ in range(30):
                x = x + 1.0
                x = x * 0.5
            n = stats()["flushes"] - flushes
        return n, np.asarray(x)

    n_c, x_c = run()
    with native.disabled():
        n_py, x_py = run()
    assert n_c == n_py and n_c >= 5
    np.testing.assert_array_equal(x_c, x_py)


@needs_native
def test_threads_record_their_own_queues():
    a = np.random.default_rng(1).random(1000)
    results, errors = {}, []

    def work(k):
        try:
            x = ps.asarray(a)
            for _ in range(200):
                x = x * 0.5 + k
            results[k] = np.asarray(x)
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    ts = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors
    for k in range(4):
        ref = a.copy()
        for _ in range(200):
            ref = ref * 0.5 + k
        np.testing.assert_allclose(results[k], ref)


@needs_native
def test_an_array_from_another_threads_queue():
    made = {}

    def record():
        made["x"] = ps.asarray(np.arange(5.0)) * 2.0      # recorded, not flushed, there

    t = threading.Thread(target=record)
    t.start()
    t.join()
    y = made["x"] + 1.0              # its queue is flushed from here (the Python path)
    np.testing.assert_array_equal(np.asarray(y), np.arange(5.0) * 2.0 + 1.0)


@needs_native
def test_queue_lock_is_reentrant_and_owned():
    lock = native._native.QueueLock()
    assert lock.acquire() and lock.acquire()         # reentrant
    assert lock._is_owned()
    lock.release()
    lock.release()
    assert not lock._is_owned()
    with pytest.raises(RuntimeError):
        lock.release()
    with lock:
        got = []
        t = threading.Thread(target=lambda: got.append(lock.acquire(False)))
        t.start()
        t.join()
        assert got == [False]                        # held by this thread
    t = threading.Thread(target=lambda: got.append(lock.acquire(False)) or lock.release())
    t.start()
    t.join()
    assert got == [False, True]


def test_disabled_path_gives_the_same_values():
    u = ps.asarray(np.linspace(0, 1, 50, dtype=np.float32))
    with native.disabled():
        a = np.asarray(ps.sqrt(u * 3.0 + 1.0) - u)
    b = np.asarray(ps.sqrt(u * 3.0 + 1.0) - u)
    np.testing.assert_array_equal(a, b)


def test_native_off_by_environment(tmp_path):
    """STREAMRT_NATIVE=0: the Python path alone, same values (a fresh process: the operators
    are chosen at import)."""
    code = ("import numpy as np, streamrt as ps\n"
            "u = ps.asarray(np.arange(6.0))\n"
            "print(ps.runtime_stats()['native_record'], type(ps.Array.__dict__['__add__']).__name__,"
            " float(ps.sum(ps.sqrt(u * 2.0 + 1.0))))\n")
    env = dict(os.environ, STREAMRT_NATIVE="0", STREAMRT_CACHE_DIR=str(tmp_path),
               STREAMRT_JIT="background")        # (interpreted while it compiles)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True).stdout.split()
    assert out[:2] == ["0", "function"]
    assert float(out[2]) == float(np.sum(np.sqrt(np.arange(6.0) * 2.0 + 1.0)))


@needs_native
def test_following_a_cached_trace_and_leaving_it(stats):
    """A queue starting where a cached trace started follows it (no key entries built); a
    flush that matched it all takes the cached entries object itself; a trace that diverges
    keys exactly as if nothing had been followed."""
    from streamrt.runtime import trace_cache

    u = ps.asarray(np.arange(8.0))

    def prog(x, n):
        y = x * 2.0
        for _ in range(n):
            y = y + 1.0
        return ps.sum(y)

    for _ in range(2):
        float(prog(u, 5))
    q = workqueue.current_queue()
    r = prog(u, 5)
    assert q.follow is not None and q.fpos == len(q.follow) == 7
    assert q.keyparts == []                          # nothing built while following
    followed = q.follow
    assert q.take_trace()[1] is followed             # the cached entries object itself
    r = prog(u, 8)                                   # diverges at the 7th op
    assert q.follow is None
    diverged = q.key_entries()
    ps.sync()
    trace_cache.get().follow.clear()
    r = prog(u, 8)
    assert q.follow is None
    assert q.key_entries() == diverged
    assert float(r) == float(np.sum(np.arange(8.0) * 2.0 + 8.0))


@needs_native
def test_a_numpy_tier_scalar_of_a_dtype_streamrt_lacks_is_refused():
    """A NumPy function on the NumPy tier giving a float16 scalar (arctan2 of 0-d bools) is
    refused with streamrt's DTypeError, as the Python path refuses it (the fuzzer found the C
    path returning NumPy's float16)."""
    with ps.config.override(eager_elements=16):
        x = ps.asarray(np.array(True))
        for path in (contextlib.nullcontext(), native.disabled()):
            with path, pytest.raises(ps.DTypeError, match="float16"):
                ps.arctan2(x, x)
        assert float(ps.arctan2(x, 1)) == float(np.arctan2(np.array(True), 1))
