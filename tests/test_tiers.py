"""The NumPy tier: small ops over computed arrays run at once through NumPy; recorded work and
in-place writes on shared buffers stay consistent across the tiers (NumPy's semantics)."""
from __future__ import annotations

import threading

import numpy as np
import pytest
from helpers import SMALL_DTYPES, assert_same, jit_mode, small_values

import streamrt as ps
from streamrt.frontend import native

EAGER = 1 << 16


@pytest.fixture(params=["native", "python"])
def tier(request, stats):
    """The NumPy tier on (as by default; conftest.py turns it off for the other tests), with
    the C record path and with the Python path, its definition."""
    if request.param == "python":
        with native.disabled(), ps.config.override(eager_elements=EAGER):
            yield stats
    else:
        with ps.config.override(eager_elements=EAGER):
            yield stats


def test_small_ops_run_through_numpy_and_record_nothing(tier):
    a = np.arange(12.0).reshape(3, 4)
    x = ps.asarray(a)
    y = ps.sqrt(x * 2.0 + 1.0) - x[1] / 3.0
    s = y.sum(axis=0)
    st = tier()
    assert st["ops_recorded"] == 0 and st["kernels_launched"] == 0 and st["flushes"] == 0
    assert st["ops_eager"] >= 5
    assert_same(y, np.sqrt(a * 2.0 + 1.0) - a[1] / 3.0)
    assert_same(s, (np.sqrt(a * 2.0 + 1.0) - a[1] / 3.0).sum(axis=0), rtol=1e-15)


def test_an_element_is_a_numpy_scalar_and_a_view_shares_the_buffer(tier):
    x = ps.asarray(np.arange(6.0).reshape(2, 3))
    e = x[1, 2]
    assert isinstance(e, np.float64) and e.dtype == np.float64 and e == 5.0
    v = x[1]
    x[1, 0] = 10.0                 # a write into the base is seen through the view
    assert float(v[0]) == 10.0
    v[1] = -1.0                    # and a write through the view in the base
    assert float(x[1, 1]) == -1.0
    w = v[::2]                     # a view of a view
    w *= 2
    assert_same(x, np.array([[0.0, 1.0, 2.0], [20.0, -1.0, 10.0]]))


def test_recorded_work_reads_the_value_it_was_recorded_with(tier):
    """A large op over a small computed array is recorded; a later in-place write into that
    array (the NumPy tier) first runs the recorded work that reads it."""
    small = ps.asarray(np.ones(8))
    big = ps.asarray(np.arange(EAGER * 2, dtype=np.float64).reshape(-1, 8))
    r = big + small                # recorded (large): reads small's buffer later
    small[0] = 100.0               # in place, after r's kernel has read the old value
    small += 1
    expect = np.arange(EAGER * 2, dtype=np.float64).reshape(-1, 8) + 1.0
    assert_same(r, expect)
    assert_same(small, np.array([101.0] + [2.0] * 7))


def test_a_recorded_value_written_into_a_viewed_buffer(tier):
    """``base[region] = lazy`` where NumPy-tier views of base are alive: the value is
    computed and written in place, so the views see it (NumPy's semantics)."""
    base = ps.asarray(np.zeros(10))
    v = base[2:5]
    big = ps.asarray(np.ones(EAGER * 2))
    base[2:5] = big[:3] * 7.0      # big[:3] * 7 is small but reads a large base: recorded
    assert_same(v, np.full(3, 7.0))
    assert_same(base, np.array([0, 0, 7, 7, 7, 0, 0, 0, 0, 0], dtype=np.float64))


def test_large_work_keeps_fusing(tier):
    n = EAGER * 4
    a = np.random.default_rng(1).random(n)
    x = ps.asarray(a)
    y = ps.sin(x) * 2.0 + x * x
    st0 = tier()["kernels_launched"]
    assert_same(y, np.sin(a) * 2.0 + a * a, rtol=1e-15)
    st = tier()
    assert st["kernels_launched"] - st0 == 1       # one fused kernel
    assert st["ops_recorded"] >= 4


def test_the_tier_limit_is_a_setting(tier):
    x = ps.asarray(np.arange(100.0))
    with ps.config.override(eager_elements=0):
        y = x + 1.0
    assert tier()["ops_recorded"] == 1
    with ps.config.override(eager_elements=101):
        z = y * 2.0                # y is recorded, not computed: z is recorded too
    assert_same(z, (np.arange(100.0) + 1.0) * 2.0)
    w = z - 1.0                    # z was read: computed, the NumPy tier again
    assert tier()["ops_recorded"] == 2
    assert_same(w, (np.arange(100.0) + 1.0) * 2.0 - 1.0)


def test_errors_are_the_recorded_tiers_errors(tier):
    x = ps.asarray(np.arange(4.0))
    with pytest.raises(ps.ShapeError):
        x + ps.asarray(np.ones(3))
    with pytest.raises(ps.DTypeError):
        -ps.asarray(np.array([True, False]))
    with pytest.raises(ps.StreamrtIndexError):
        x[7]
    with pytest.raises(ValueError):
        x[1:3] = np.ones(4)
    i = ps.asarray(np.arange(3))
    with pytest.raises(ps.DTypeError):
        i += 1.5                   # NumPy's same_kind rule


def test_dtypes_follow_numpy(tier):
    f32 = ps.asarray(np.ones(3, np.float32))
    assert (f32 * 2.0).dtype == np.float32
    assert (f32 * np.float64(2.0)).dtype == np.float64     # a NumPy scalar is strong
    assert (np.float64(2.0) * f32).dtype == np.float64
    i32 = ps.asarray(np.arange(3, dtype=np.int32))
    assert (i32 + 1).dtype == np.int32
    assert (i32 / 2).dtype == np.float64


def test_a_macro_records_even_small_work(tier):
    @ps.macro
    def step(u):
        return u * 0.5 + 1.0
    u = ps.asarray(np.arange(4.0))
    for _ in range(3):
        u = step(u)
    expect = np.arange(4.0)
    for _ in range(3):
        expect = expect * 0.5 + 1.0
    assert_same(u, expect)


def test_reads_of_computed_arrays_are_read_only(tier):
    x = ps.asarray(np.arange(3.0)) + 1.0
    v = np.asarray(x)
    with pytest.raises(ValueError, match="read-only"):
        v[0] = 5
    c = np.array(x)
    c[0] = 5
    assert float(x[0]) == 1.0


def test_threads_each_run_their_own_small_work(tier):
    out = {}

    def work(k):
        x = ps.asarray(np.full(50, float(k)))
        for _ in range(100):
            x = x * 1.01 + 0.5
        out[k] = x.numpy().copy()

    ts = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    for k in range(4):
        e = np.full(50, float(k))
        for _ in range(100):
            e = e * 1.01 + 0.5
        assert_same(out[k], e)


def test_a_small_read_of_recorded_work_computes_it_once(tier):
    """Rows of a large recorded array (doitgen's ``A[r, q, :] = A[r, q, :] @ C4``): the first
    small read runs the recorded work, and the loop then runs on the NumPy tier -- one flush,
    not a tiny kernel per row."""
    a0 = np.linspace(0, 1, EAGER * 2).reshape(-1, 8, 16)
    c = np.linspace(-1, 1, 256).reshape(16, 16)
    A = ps.asarray(a0) * 2.0               # recorded (large)
    C = ps.asarray(c)
    want = a0 * 2.0
    for r in range(4):
        for q in range(8):
            A[r, q, :] = A[r, q, :] @ C
            want[r, q, :] = want[r, q, :] @ c
    st = tier()
    assert st["flushes"] == 1 and st["ops_recorded"] == 1
    assert st["ops_eager"] >= 64
    assert_same(A, want, rtol=1e-13)
    e = (ps.asarray(a0) + 1.0)[3, 2, 1]    # an element: a NumPy scalar, as NumPy gives
    assert isinstance(e, np.float64) and e == a0[3, 2, 1] + 1.0


def test_a_dying_temporary_may_take_the_result_never_a_live_array(tier):
    """On the NumPy tier a large float temporary that dies in the expression lends its
    buffer to the result (NumPy's elision of temporaries); an Array with a name, a view, a
    buffer recorded work reads and a dtype-changing operand keep theirs."""
    n = 40_000                                  # 320 kB: above NumPy's elision threshold
    b0 = np.linspace(0, 1, n)
    b = ps.asarray(b0)
    x = ((b * 2.0) * 3.0 + 1.0) / 2.0           # temporaries all the way
    assert_same(x, ((b0 * 2.0) * 3.0 + 1.0) / 2.0)
    y = b * 2.0                                 # named: must keep its value
    z = y * 3.0
    assert_same(y, b0 * 2.0)
    assert_same(z, b0 * 6.0)
    v = (b * 1.0)[::2] * 5.0                    # a view of a temporary
    assert_same(v, b0[::2] * 5.0)
    f = ps.asarray(b0.astype(np.float32))
    w = (f * 2.0) * np.float64(3.0)             # float64 scalar: the dtype changes
    assert w.dtype == np.float64
    assert_same(w, (b0.astype(np.float32) * np.float32(2.0)) * np.float64(3.0))
    big = ps.asarray(np.ones(EAGER * 2))
    t = b * 2.0
    r = big[:n] + t                             # recorded (large base): reads t's buffer
    u = (t * 1.0)                               # t is named anyway; r must see 2 * b
    del t
    assert_same(r, 1.0 + b0 * 2.0)
    assert_same(u, b0 * 2.0)
    assert_same(b, b0)


def test_an_intrinsic_on_computed_inputs_runs_on_the_numpy_tier_at_any_size(tier):
    """A vector-matrix product over a large computed matrix (gemm's rows) is BLAS either
    way: it runs at once instead of being recorded and flushed each iteration."""
    b0 = np.linspace(0, 1, EAGER * 2).reshape(256, -1)
    B = ps.asarray(b0)
    v = ps.asarray(np.linspace(-1, 1, 256))
    r = v @ B
    s = ps.sort(B[0] * 1.0)
    st = tier()
    assert st["ops_recorded"] == 0 and st["flushes"] == 0
    assert_same(r, np.linspace(-1, 1, 256) @ b0, rtol=1e-12)
    assert_same(s, np.sort(b0[0]))
    w = ps.asarray(b0) * 2.0                   # an element-wise op over it is still recorded
    assert tier()["ops_recorded"] == 1
    assert_same(w, b0 * 2.0)


def test_a_region_write_into_a_computed_array_reuses_its_buffer(tier):
    """``a[r] = f(a[r])`` on a large computed array, nothing else reading it: the kernel
    writes the region in place (no copy of ``a``, no new buffer); a write whose value reads
    the array's other elements (a stencil) still gets a buffer of its own, and both give
    NumPy's values."""
    n = EAGER * 4
    a0 = np.linspace(0.0, 1.0, n)
    a = ps.asarray(a0)
    a.numpy()
    before = tier()["bytes_allocated"]
    expect = a0.copy()
    for _ in range(3):
        a[10:] = ps.sin(a[10:]) * 2.0
        expect[10:] = np.sin(expect[10:]) * 2.0
        a.numpy()                      # computed again: the next write starts from it
    st = tier()
    assert st["bytes_allocated"] - before < n * 8       # the writes allocated no array
    assert_same(a, expect, rtol=1e-15)
    u = ps.asarray(a0)
    e = a0.copy()
    for _ in range(3):
        u[1:-1] = u[:-2] + u[2:] - u[1:-1]
        e[1:-1] = e[:-2] + e[2:] - e[1:-1]
        u.numpy()
    assert_same(u, e, rtol=1e-15)
    held = ps.asarray(a0)
    old = held[10:] * 1.0              # recorded work that reads held's buffer ...
    held[10:] = ps.sin(held[10:])      # ... is computed before the write
    assert_same(old, a0[10:])
    assert_same(held, np.concatenate([a0[:10], np.sin(a0[10:])]))


@pytest.mark.parametrize("jit", ["sync", "off"])
def test_a_region_write_after_the_kernels_reading_its_base_reuses_its_buffer(tier, jit):
    """A time step that reads an array in one kernel and updates it in a later one (the Yee
    scheme of fdtd-2d: ``ey`` from ``hz``, then ``hz`` from ``ey``): the earlier kernels have
    run when the later one writes, so the write reuses the base's buffer instead of copying
    it -- compiled and interpreted (the interpreter computes the written value straight into
    the region, as NumPy's ``a[1:] -= t`` does) -- and gives NumPy's values."""
    from streamrt.core.config import settings
    old = settings.jit
    ps.config.set(jit=jit)
    try:
        n = EAGER * 2
        u0, w0 = np.linspace(0.0, 1.0, n), np.cos(np.linspace(0.0, 3.0, n))
        ua, wa = ps.asarray(u0), ps.asarray(w0)
        before = tier()
        u, w = ua.copy(), wa.copy()     # (recorded: the loop is one flush)
        eu, ew = u0.copy(), w0.copy()
        for _ in range(4):
            w[1:] -= 0.5 * (u[1:] - u[:-1])
            u[:-1] -= 0.7 * (w[1:] - w[:-1])
            ew[1:] -= 0.5 * (eu[1:] - eu[:-1])
            eu[:-1] -= 0.7 * (ew[1:] - ew[:-1])
        ps.sync()
        st = tier()
        assert st["flushes"] - before["flushes"] == 1
        # the two copies; the eight writes allocate no array
        assert st["bytes_allocated"] - before["bytes_allocated"] <= 2 * n * 8 + 4096
        assert_same(u, eu, rtol=1e-12)
        assert_same(w, ew, rtol=1e-12)
    finally:
        ps.config.set(jit=old)


def test_functions_of_numbers_and_small_ranges_run_on_the_numpy_tier(tier):
    """``np.sqrt(A[i, i])`` (NumPy's element is a NumPy scalar) and ``np.arange(lo, hi)`` in a
    loop run at once -- computed Arrays, nothing recorded -- with NumPy's values and dtypes;
    a range too large for the tier is a constant as before."""
    a = np.arange(1.0, 17.0).reshape(4, 4)
    A = ps.asarray(a)
    for i in range(4):
        r = ps.sqrt(A[i, i])
        k = ps.arange(i, 2 * i + 3)
        assert_same(r, np.sqrt(a[i, i]))
        assert_same(k, np.arange(i, 2 * i + 3))
    for v in (np.float32(2.0), 3, 2.5):
        assert_same(ps.exp(v), np.asarray(np.exp(v)))
    assert_same(ps.arange(0.5, 3.0, 0.5), np.arange(0.5, 3.0, 0.5))
    st = tier()
    assert st["ops_recorded"] == 0 and st["flushes"] == 0
    big = ps.arange(EAGER + 5)
    assert_same(big, np.arange(EAGER + 5))


def test_small_operands_with_a_large_broadcast_result_are_recorded(tier):
    """The NumPy tier takes an operator whose inputs *and result* are small: ``d[:, k:k+1] +
    d[k:k+1, :]`` of two small slices is a large array, recorded to fuse with what reads it
    (Floyd-Warshall's ``minimum`` of it and the matrix: one kernel, not a NumPy pass and a
    kernel). (A namespace function's result is known only once NumPy computed it: it is
    kept, as computed.)"""
    v0 = np.linspace(0.0, 1.0, 300)
    v = ps.asarray(v0)
    before = tier()
    r = v[:, None] + v[None, :]
    m = ps.minimum(r, v[None, :] * 0.5)
    st = tier()
    assert st["ops_eager"] - before["ops_eager"] == 1          # (only the small v * 0.5)
    assert st["ops_recorded"] - before["ops_recorded"] >= 2
    assert_same(r, v0[:, None] + v0[None, :])
    assert_same(m, np.minimum(v0[:, None] + v0[None, :], v0[None, :] * 0.5))


def test_a_small_statement_written_through_a_view_runs_through_numpy(tier):
    """``C[:i] += alpha * np.outer(a[:i], b)`` on a large computed ``C`` whose NumPy-tier
    views show it (symm): the write must happen now, and a statement this small runs
    through NumPy in order -- no flush, no kernel -- its value computed straight into the
    region. A value an Array still holds keeps its own buffer: a later write into ``C``
    does not change it."""
    m, n = 300, 400                                  # (C: 120,000 elements, over the tier)
    c0 = np.linspace(0.0, 1.0, m * n).reshape(m, n)
    a0, b0 = np.linspace(1.0, 2.0, m), np.linspace(-1.0, 1.0, n)
    C, a, b = ps.asarray(c0), ps.asarray(a0), ps.asarray(b0)
    C.numpy()
    e = c0.copy()
    before = tier()
    for i in (200, 250, 299):
        row = C[i]                                   # a NumPy-tier view of C, alive
        C[:i] += 1.5 * ps.outer(a[:i], b)
        e[:i] += 1.5 * np.outer(a0[:i], b0)
        assert_same(row, e[i])
    st = tier()
    assert st["flushes"] == before["flushes"] and st["kernels_launched"] == 0
    assert_same(C, e, rtol=1e-13)
    t = 1.5 * ps.outer(a[:250], b)                   # held: no temporary of the statement
    C[:250] += t + 1.0
    e[:250] += 1.5 * np.outer(a0[:250], b0) + 1.0
    assert_same(t, 1.5 * np.outer(a0[:250], b0), rtol=1e-15)
    keep = C[:250] + 1.0 * ps.outer(a[:250], b)      # held by an Array
    C[:250] = keep
    e[:250] = e[:250] + np.outer(a0[:250], b0)
    C[:250] *= 2.0
    assert_same(keep, e[:250], rtol=1e-13)
    e[:250] *= 2.0
    assert_same(C, e, rtol=1e-13)


def test_a_line_whose_ops_ended_in_a_write_now_runs_them_at_once(tier):
    """The ops of a line that ended in a statement NumPy ran at once (the test above) run on
    the NumPy tier from then on past its size limit, as NumPy's own (CallSite.now): the next
    rows record nothing and build no statement. Another line's large ops over the same
    arrays are still recorded (they may fuse), and so are the marked line's while the tier
    is off. ``ps.clear_caches`` forgets the marks."""
    ps.clear_caches()               # (the other parameter's run marked this test's lines)
    stats = tier
    m, n = 300, 400
    c0 = np.linspace(0.0, 1.0, m * n).reshape(m, n)
    a0, b0 = np.linspace(1.0, 2.0, m), np.linspace(-1.0, 1.0, n)
    e = c0.copy()

    def rows(C, a, b, e, lo, hi):
        for i in range(lo, hi):
            C[:i] += 1.5 * ps.outer(a[:i], b)
            e[:i] += 1.5 * np.outer(a0[:i], b0)

    with ps.config.override(eager_elements=EAGER):
        C, a, b = ps.asarray(c0), ps.asarray(a0), ps.asarray(b0)
        C.numpy()
        row = C[0]                                   # (a NumPy-tier view: the write is now)
        rows(C, a, b, e, 200, 201)
        st = stats()
        assert st["ops_recorded"] == 4 and st["ops_eager"] >= 3
        rows(C, a, b, e, 201, 240)
        st2 = stats()
        assert st2["ops_recorded"] == 4 and st2["ops_eager"] >= st["ops_eager"] + 3 * 39
        assert_same(C, e, rtol=1e-13)
        t = 1.5 * ps.outer(a[:250], b) + 1.0         # another line: recorded
        assert stats()["ops_recorded"] == 7
        assert_same(t, 1.5 * np.outer(a0[:250], b0) + 1.0, rtol=1e-15)
    with ps.config.override(eager_elements=0):
        rows(C, a, b, e, 240, 241)                   # the tier off: the line records again
        assert stats()["ops_recorded"] > 7
        assert_same(C, e, rtol=1e-13)
    with ps.config.override(eager_elements=EAGER):
        ps.clear_caches()
        n = stats()["ops_recorded"]
        rows(C, a, b, e, 241, 243)                   # forgotten: one row records, then marked
        assert stats()["ops_recorded"] == n + 4
        assert_same(C, e, rtol=1e-13)
    del row


def test_a_statement_counts_its_element_wise_ops_not_its_write(tier):
    """gramschmidt's ``A[:, k + 1:] -= np.outer(Q[:, k], R[k, k + 1:])`` over 700 x 600: two
    element-wise ops of 419,300 elements (under the statement limit, ~1M) and the write of
    the region, whose value is computed straight into it: the statement runs through NumPy
    on its first row -- no flush, no kernel (counting the write too sent it to an
    interpreted kernel that gave both temporaries fresh buffers: 1.1 ms a row against
    NumPy's 0.26)."""
    from streamrt.runtime import cscheduler
    m, n = 700, 600
    assert 2 * m * (n - 1) <= cscheduler.WRITE_NOW_ELEMENTS < 3 * m * (n - 1)
    a0 = np.linspace(0.0, 1.0, m * n).reshape(m, n)
    q0, r0 = np.linspace(1.0, 2.0, m), np.linspace(-1.0, 1.0, n)
    A, q, r = ps.asarray(a0), ps.asarray(q0), ps.asarray(r0)
    A.numpy()
    e = a0.copy()
    col = A[:, 0]                                    # (a NumPy-tier view: the write is now)
    before = tier()
    for k in range(3):
        A[:, k + 1:] -= ps.outer(q, r[k + 1:])
        e[:, k + 1:] -= np.outer(q0, r0[k + 1:])
    st = tier()
    assert st["flushes"] == before["flushes"] and st["kernels_launched"] == 0
    assert_same(A, e, rtol=1e-15)
    del col


def test_a_statement_scales_a_dying_constant_in_its_own_buffer(tier, monkeypatch):
    """``alpha * np.outer(a, b)`` in a statement written through a view: the outer product
    no Array holds any more is a temporary as NumPy sees one, and the product is computed
    in its buffer (no fresh result from the reference op). An outer product whose buffer a
    NumPy array still shows, or an Array still holds, is left as it was."""
    ps.clear_caches()       # (the statement path: the other parameter's run marked the lines)
    calls = fresh_results(monkeypatch)
    m, n = 300, 400
    c0 = np.linspace(0.0, 1.0, m * n).reshape(m, n)
    a0, b0 = np.linspace(1.0, 2.0, m), np.linspace(-1.0, 1.0, n)
    C, a, b = ps.asarray(c0), ps.asarray(a0), ps.asarray(b0)
    C.numpy()
    e = c0.copy()
    row = C[0]                                       # (a NumPy-tier view: the write is now)
    C[:250] += 1.5 * tier_outer(a[:250], b)
    e[:250] += 1.5 * np.outer(a0[:250], b0)
    assert_same(C, e, rtol=1e-13)
    assert "multiply" not in calls
    box = [tier_outer(a[:250], b)]
    shown = np.asarray(box[0])                       # its buffer, seen by NumPy
    held = tier_outer(a[:200], b)
    C[:250] += 2.0 * box.pop()                       # (no Array holds it once multiplied)
    C[:200] += 3.0 * held
    assert calls.count("multiply") == 2
    e[:250] += 2.0 * np.outer(a0[:250], b0)
    e[:200] += 3.0 * np.outer(a0[:200], b0)
    assert_same(C, e, rtol=1e-13)
    assert_same(shown, np.outer(a0[:250], b0), rtol=1e-15)
    assert_same(held, np.outer(a0[:200], b0), rtol=1e-15)
    del row


def tier_outer(a, b):
    """A large NumPy-tier result made from small computed Arrays: NumPy's einsum of the
    outer product (``ps.outer`` itself is the multiply operator of two views, recorded when
    its result is large, so that it fuses)."""
    return ps.einsum("i,j->ij", a, b)


def fresh_results(monkeypatch):
    """The ops whose result the interpreter made a new buffer for (NumPy's call made it, or
    the interpreter did for a loop run on two threads), in order, as a list that fills."""
    from streamrt.backends import base
    calls = []
    ref, fresh = base._refop, base._fresh
    monkeypatch.setattr(base, "_refop", lambda p, args: (calls.append(p.op), ref(p, args))[1])
    monkeypatch.setattr(base, "_fresh", lambda p: (calls.append(p.op), fresh(p))[1])
    return calls


@pytest.fixture
def interpreted():
    """Kernels interpreted, process-wide (they may launch on the scheduler's thread)."""
    with jit_mode("off"):
        yield


def _matrix_and_vectors():
    """A computed 300 x 400 matrix (120,000 elements: work over it is recorded) and two
    computed vectors, as NumPy arrays and as Arrays."""
    m, n = 300, 400
    a0 = np.linspace(0.0, 1.0, m * n).reshape(m, n)
    u0, v0 = np.linspace(1.0, 2.0, m), np.linspace(-1.0, 1.0, n)
    A, u, v = ps.asarray(a0), ps.asarray(u0), ps.asarray(v0)
    A.numpy()
    return a0, u0, v0, A, u, v


def test_an_interpreted_kernel_computes_into_a_dying_constant(tier, interpreted, monkeypatch):
    """``A + np.outer(u, v)`` over large arrays: the outer product (a NumPy-tier result no
    Array holds once added) is a temporary as NumPy sees one, and the interpreted kernel
    adds into its buffer (the reference op does not allocate a result). A constant a NumPy
    array still shows, one an Array holds and one a later program still reads keep their
    values."""
    calls = fresh_results(monkeypatch)
    a0, u0, v0, A, u, v = _matrix_and_vectors()
    r = (A + tier_outer(u, v)) * 2.0                 # (the sum: a temporary of the kernel)
    assert_same(r, (a0 + np.outer(u0, v0)) * 2.0, rtol=1e-15)
    assert calls.count("add") == 0
    box = [tier_outer(u, v)]
    shown = np.asarray(box[0])
    held = tier_outer(u, v) + 0.0
    r2 = (A + box.pop()) * 2.0
    r3 = (A + held) * 2.0
    assert_same(r2, (a0 + np.outer(u0, v0)) * 2.0, rtol=1e-15)
    assert_same(shown, np.outer(u0, v0), rtol=1e-15)
    assert calls.count("add") == 2
    o = tier_outer(u, v)
    s1 = (A + o) * 2.0
    s2 = o * s1.sum()                               # (a second kernel, after the sum)
    del o
    e1 = (a0 + np.outer(u0, v0)) * 2.0
    assert_same(s1, e1, rtol=1e-15)
    assert_same(s2, np.outer(u0, v0) * e1.sum(), rtol=1e-12)
    assert_same(held, np.outer(u0, v0), rtol=1e-15)
    assert_same(r3, (a0 + np.outer(u0, v0)) * 2.0, rtol=1e-15)


def test_an_interpreted_kernel_computes_its_output_into_a_dying_constant(tier, interpreted,
                                                                          monkeypatch):
    """``r = A + np.outer(u, v)`` kept: the kernel's output buffer is given before it runs,
    and the add goes into the outer product's buffer instead (a temporary NumPy would elide),
    so a first run's fresh output is never written (its pages never faulted in). A buffer
    something else holds is kept."""
    calls = fresh_results(monkeypatch)
    a0, u0, v0, A, u, v = _matrix_and_vectors()
    box = [tier_outer(u, v)]
    where = np.asarray(box[0]).ctypes.data         # (the ndarray dropped at once)
    r = A + box.pop()
    got = np.asarray(r)
    assert got.ctypes.data == where
    assert_same(got, a0 + np.outer(u0, v0), rtol=1e-15)
    assert calls.count("add") == 0
    box = [tier_outer(u, v)]
    shown = np.asarray(box[0])                     # (shown: not a temporary)
    r2 = A + box.pop()
    assert np.asarray(r2).ctypes.data != shown.ctypes.data
    assert_same(r2, a0 + np.outer(u0, v0), rtol=1e-15)
    assert_same(shown, np.outer(u0, v0), rtol=1e-15)


@pytest.fixture
def first_sights(interpreted, stats):
    """Kernels never compiled (STREAMRT_JIT=off), flushes on the CPU executor, and no trace
    seen yet: a new trace's first read is its first sight (runtime/cscheduler.py
    ``_first_sight``)."""
    from streamrt.runtime import trace_cache
    trace_cache.get().forget_sights()
    with ps.config.override(backend="cpu"):
        yield stats


def test_a_first_sight_runs_through_numpy_then_the_trace_builds_its_kernels(first_sights):
    """The first read of a trace runs its ops through NumPy without ProgGen; the second
    builds the kernels (a trace-cache miss) and runs them interpreted; the third hits."""
    def f(xp, x):
        return xp.sum(xp.sin(x) * 2.0 + x)
    a0 = np.linspace(-1.0, 1.0, 100_000)
    x = ps.asarray(a0)
    seen = []
    for _ in range(3):
        assert_same(f(ps, x), f(np, a0), rtol=1e-12)
        st = first_sights()
        seen.append((st["first_sights"], st["trace_cache_misses"], st["trace_cache_hits"],
                     st["kernels_interpreted"]))
    assert seen == [(1, 0, 0, 0), (1, 1, 0, 1), (1, 1, 1, 2)]
    # another size of the same code is not a first sight (a triangular loop's rows)
    b0 = a0[:70_000].copy()
    assert_same(f(ps, ps.asarray(b0)), f(np, b0), rtol=1e-12)
    assert first_sights()["first_sights"] == 1


def test_a_first_sight_keeps_what_arrays_and_views_still_show(first_sights):
    """Values an Array holds keep their buffers; a temporary read through a view lives until
    that read (the loop fuzzer found a dying constant dropped before its view was read)."""
    a0 = np.linspace(0.0, 1.0, 4096).reshape(64, 64)
    A = ps.asarray(a0)
    t = A * 2.0                           # held
    r = ps.sum(t[::-1] + t, axis=0)       # read through a view and directly
    s = (A + 1.0)[::-1, :].sum()          # a temporary read through a view only
    assert_same(r, np.sum((a0 * 2.0)[::-1] + a0 * 2.0, axis=0), rtol=1e-14)
    assert_same(s, (a0 + 1.0)[::-1, :].sum(), rtol=1e-14)
    assert_same(t, a0 * 2.0)
    assert first_sights()["first_sights"] >= 1
    # the fuzzer's program: u's old buffer (a dying constant) read directly and reversed
    with native.disabled():
        u0, w0, M = np.linspace(0.1, 0.8, 8), np.array([0.3, 0.7]), np.linspace(0, 1, 16)
        M = M.reshape(8, 2)
        e = {"u": ps.asarray(u0.copy()), "w": ps.asarray(w0.copy()), "A": ps.asarray(M)}
        ref = {"u": u0.copy(), "w": w0.copy(), "A": M}
        for xp, d in ((ps, e), (np, ref)):
            for _ in range(2):
                d["w"] = d["w"] * 0.5 + (d["A"].T @ d["u"]) * 0.1
                u = d["u"]
                u[:8] = u[:8] + -1.5 * u[7::-1]
        for k in ("u", "w"):
            assert_same(e[k], ref[k], rtol=1e-14)


def test_a_first_sight_is_not_taken_for_region_writes_or_with_compiles_wanted(first_sights):
    """A trace writing a region of an array, and any trace while kernels compile at once
    (STREAMRT_JIT=sync), go to ProgGen at their first sight."""
    a0 = np.linspace(0.0, 1.0, 100_000)
    x = ps.asarray(a0.copy())
    x[10:20] = ps.sin(x[10:20]) + 1.0
    y = ps.cos(x) * 3.0
    want = a0.copy()
    want[10:20] = np.sin(want[10:20]) + 1.0
    assert_same(y, np.cos(want) * 3.0, rtol=1e-15)
    assert first_sights()["first_sights"] == 0
    with ps.config.override(jit="sync"):
        assert_same(ps.exp(x) - x, np.exp(want) - want, rtol=1e-15)
    assert first_sights()["first_sights"] == 0


def test_a_first_sight_that_fails_fails_at_the_read_and_the_next_runs(first_sights,
                                                                        monkeypatch):
    """A fault while a first sight runs (memory exhausted) fails the read with an
    ExecutionError naming the ops' lines; nothing hangs, the inputs keep their values, and
    the trace runs when asked again."""
    from streamrt.backends import base
    ref = base._interpret

    def run(ops, *args, **kw):
        if any(p.op == "sin" for p in ops):
            raise MemoryError("no memory for sin")
        return ref(ops, *args, **kw)
    a0 = np.linspace(0.0, 1.0, 100_000)
    x = ps.asarray(a0)
    monkeypatch.setattr(base, "_interpret", run)
    y = ps.sin(x) * 2.0
    with pytest.raises(ps.ExecutionError, match="MemoryError: no memory for sin") as ei:
        y.numpy()
    assert "test_tiers.py" in str(ei.value)
    assert first_sights()["first_sights"] == 1
    monkeypatch.setattr(base, "_interpret", ref)
    assert_same(ps.sin(x) * 2.0, np.sin(a0) * 2.0, rtol=1e-15)
    assert_same(x, a0)


BROADCAST_UFUNCS = [np.add, np.subtract, np.multiply, np.true_divide, np.maximum, np.minimum,
                    np.less, np.equal, np.floor_divide, np.bitwise_and, np.logical_xor, np.fmod,
                    np.arctan2, np.power]


@pytest.mark.parametrize("eager", [EAGER, 3, 0])
def test_broadcast_pairs_of_small_shapes_match_numpy(eager):
    """Operands whose shapes broadcast (axes of length 1 anywhere, fewer axes, a strided
    view), every dtype, on the NumPy tier, recorded, and mixed: NumPy's values, also written
    in place and assigned. (A length-1 1-D operand once read past its end on the NumPy
    tier's own loop call: [5.] + [1., 2.] gave [6., 2.].)"""
    rng = np.random.default_rng(11)
    dts = SMALL_DTYPES

    def val(shape, dt):
        return small_values(rng, shape, dt)

    checked = 0
    with ps.config.override(eager_elements=eager), np.errstate(all="ignore"):
        for it in range(600):
            nd = int(rng.integers(1, 4))
            full = [int(rng.integers(1, 5)) for _ in range(nd)]
            sa = tuple(1 if rng.random() < 0.4 else s for s in full)
            sb = tuple(1 if rng.random() < 0.4 else s for s in full)
            if rng.random() < 0.3:
                sa = sa[int(rng.integers(0, nd)):]
            dt = dts[it % len(dts)]
            a, b = val(sa, dt), val(sb, dt)
            if rng.random() < 0.25 and b.ndim and b.shape[-1]:
                b = np.concatenate([b, b], axis=-1)[..., ::2]       # a strided view
            uf = BROADCAST_UFUNCS[it % len(BROADCAST_UFUNCS)]
            try:
                want = uf(a, b)
            except (TypeError, ValueError):     # (no loop; an integer to a negative power)
                continue
            if want.dtype == np.float16:
                continue                        # (refused: DTypeError, tests/test_errors.py)
            B = ps.asarray(b) if rng.random() < 0.5 else ps.asarray(b.copy())
            got = np.asarray(uf(ps.asarray(a), B))
            assert got.shape == want.shape and got.dtype == want.dtype, (uf, sa, sb, dt)
            if uf in (np.arctan2, np.power) and want.dtype.kind == "f":
                np.testing.assert_allclose(got, want, rtol=1e-6, equal_nan=True)
            else:
                np.testing.assert_array_equal(got, want, err_msg=f"{uf.__name__} {sa} {sb} {dt}")
            checked += 1
            if np.broadcast_shapes(sa, b.shape) == sa and uf in (np.add, np.multiply):
                a2, A2 = a.copy(), ps.asarray(a.copy())
                uf(a2, b, out=a2)
                uf(A2, B, out=A2)
                np.testing.assert_array_equal(np.asarray(A2), a2)
                a3, A3 = a.copy(), ps.asarray(a.copy())
                a3[...] = b
                A3[...] = B
                np.testing.assert_array_equal(np.asarray(A3), a3)
    assert checked > 400


@pytest.mark.parametrize("dt", [np.float64, np.float32, np.int64, np.int32, np.uint8, np.bool_,
                                np.complex128])
def test_outer_of_two_arrays_is_their_broadcast_multiply(tier, dt, monkeypatch):
    """``ps.outer`` of two computed Arrays runs as ``a[:, None] * b[None, :]``: on the NumPy
    tier when small (NumPy's values bit for bit, without calling NumPy's ``outer``), recorded
    when large (it fuses with what uses it); N-d and 0-d operands are flattened, as NumPy's."""
    rng = np.random.default_rng(3)
    real = np.outer
    monkeypatch.setattr(np, "outer", lambda *a, **k: pytest.fail("NumPy's outer was called"))
    cases = [((7,), (5,)), ((3, 4), (6,)), ((), (4,)), ((0,), (3,)), ((40,), (60,))]
    for sa, sb in cases:
        a0 = (rng.random(sa) * 9).astype(dt)
        b0 = (rng.random(sb) * 9).astype(dt)
        before = tier()
        r = ps.outer(ps.asarray(a0), ps.asarray(b0))
        st = tier()
        assert st["ops_recorded"] == before["ops_recorded"]
        got = np.asarray(r)
        want = real(a0, b0)
        assert got.dtype == want.dtype and got.shape == want.shape
        assert np.array_equal(got, want)
    m, n = 300, 400                                  # (120,000 elements: recorded)
    a0, b0 = rng.random(m).astype(dt), rng.random(n).astype(dt)
    A0 = (rng.random((m, n)) * 3).astype(dt)
    before = tier()
    r = ps.asarray(A0) + ps.outer(ps.asarray(a0), ps.asarray(b0))
    assert tier()["ops_recorded"] - before["ops_recorded"] == 2       # the multiply, the add
    assert np.array_equal(np.asarray(r), A0 + real(a0, b0))


def test_transpose_of_a_computed_array_is_a_numpy_tier_view(tier):
    """``a.T`` of a computed Array on the NumPy tier (the C path's ``transpose_now``) is a
    view of its buffer: it records nothing, shows later writes into ``a`` and keeps ``a``'s
    buffer from being reused while it lives; with the tier off it is recorded."""
    a0 = np.arange(12.0).reshape(3, 4)
    a = ps.asarray(a0)
    before = tier()
    t = a.T
    tv = a[1:].T
    assert tier()["ops_recorded"] == before["ops_recorded"]
    assert t.shape == (4, 3) and tv.shape == (4, 2)
    a[1, 2] = 100.0
    e = a0.copy()
    e[1, 2] = 100.0
    assert_same(t, e.T)
    assert_same(tv, e[1:].T)
    del a
    assert_same(t @ np.ones(3), e.T @ np.ones(3))
    with ps.config.override(eager_elements=0):
        n = tier()["ops_recorded"]
        r = (ps.asarray(a0) + 1.0).T
        assert tier()["ops_recorded"] > n
        assert_same(r, (a0 + 1.0).T)
