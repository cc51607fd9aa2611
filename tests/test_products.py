"""The NumPy tier's products in a loop (runtime/products.py): a vector-matrix product whose
vector steps through one buffer is answered from a block of the next rows' products. Results
equal NumPy's up to rounding; a write into either buffer drops the block; the counters say what
was batched."""
import numpy as np
import pytest

import streamrt as ps
from streamrt.core import stats
from streamrt.frontend import native
from streamrt.runtime.products import MIN_ELEMENTS

EAGER = 1 << 16


@pytest.fixture(autouse=True)
def _tier():
    ps.clear_caches()
    with ps.config.override(eager_elements=EAGER):
        stats.reset_stats()
        yield
    ps.clear_caches()


def _counts():
    s = ps.runtime_stats()
    return s["products_batched"], s["product_blocks"], s["product_blocks_dropped"]


def _data(*shape, seed=0, dtype=np.float64):
    return np.random.default_rng(seed).random(shape).astype(dtype)


def _rows(xp, A, B):
    out = []
    for i in range(A.shape[0]):
        out.append(np.asarray(A[i, :] @ B))
    return np.array(out)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_row_products_come_from_blocks(dtype):
    a, b = _data(64, 128, dtype=dtype), _data(128, 160, seed=1, dtype=dtype)
    got = _rows(ps, ps.asarray(a), ps.asarray(b))
    want = _rows(np, a, b)
    assert got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=1e-5 if dtype == np.float32 else 1e-12)
    batched, blocks, dropped = _counts()
    # the first two calls find the step; every later row is answered from a block
    # (8, 16, 32 rows, the last one as many as are left in A)
    assert (batched, blocks, dropped) == (62, 4, 0)


def test_off_gives_numpy_exactly():
    a, b = _data(40, 128), _data(128, 130, seed=1)
    with ps.config.override(batch_products=False):
        got = _rows(ps, ps.asarray(a), ps.asarray(b))
    np.testing.assert_array_equal(got, _rows(np, a, b))
    assert _counts() == (0, 0, 0)


def test_column_windows_shrinking():
    """covariance: ``X[:, i] @ X[:, i:]`` -- the vector steps by one element, the matrix is a
    window of the base's columns shrinking from the left"""
    x = _data(200, 150)

    def cov(xp, X):
        out = np.zeros((150, 150))
        for i in range(150):
            out[i, i:] = np.asarray(X[:, i] @ X[:, i:])
        return out

    np.testing.assert_allclose(cov(ps, ps.asarray(x)), cov(np, x), rtol=1e-12)
    watched = sum(200 * (150 - i) >= MIN_ELEMENTS for i in range(150))
    batched, blocks, _ = _counts()
    # (the C path answers a block's rows past the size limit too)
    assert (batched >= watched - 2 if native.available() else batched == watched - 2) and blocks > 1


def test_row_windows_growing():
    """syrk: ``A[:i + 1, :] @ A[i, :]`` -- the matrix on the left, a window of the base's rows
    growing at every call; and np.dot, the same product"""
    a = _data(300, 120)

    def syrk(xp, A, f):
        return [np.asarray(f(A[:i + 1, :], A[i, :])) for i in range(300)]

    watched = sum((i + 1) * 120 >= MIN_ELEMENTS for i in range(300))
    for f in (lambda m, v: m @ v, ps.dot):
        got = syrk(ps, ps.asarray(a), f)
        for g, w in zip(got, syrk(np, a, np.dot), strict=True):
            np.testing.assert_allclose(g, w, rtol=1e-12)
        batched, blocks, _ = _counts()
        assert batched == watched - 2 and blocks > 2
        stats.reset_stats()


def _rows_written_at(xp, A, B, at, write):
    """The rows' products of A and B, ``write(A, B)`` done before row ``at``'s"""
    out = []
    for i in range(A.shape[0]):
        if i == at:
            write(A, B)
        out.append(np.asarray(A[i, :] @ B))
    return np.array(out)


def test_write_into_the_matrix_drops_the_block():
    a, b = _data(64, 128), _data(128, 130, seed=1)

    def write(A, B):
        B[3, :] = 7.0                   # every later product sees the new B

    got = _rows_written_at(ps, ps.asarray(a), ps.asarray(b), 20, write)
    np.testing.assert_allclose(got, _rows_written_at(np, a, b.copy(), 20, write), rtol=1e-12)
    batched, blocks, dropped = _counts()
    assert dropped == 1
    # the line is not watched again after its block was written: rows 20 on one by one
    assert (batched, blocks) == (18, 2)


def test_write_ahead_into_the_vectors_drops_the_block():
    a, b = _data(64, 128), _data(128, 130, seed=1)

    def write(A, B):
        A[20, :] = -1.0                 # a row the block (rows 10 to 25) computed already

    got = _rows_written_at(ps, ps.asarray(a), ps.asarray(b), 12, write)
    np.testing.assert_allclose(got, _rows_written_at(np, a.copy(), b, 12, write), rtol=1e-12)
    assert _counts()[2] == 1


def test_write_through_a_view_drops_the_block():
    a, b = _data(64, 128), _data(128, 130, seed=1)
    A, B = ps.asarray(a), ps.asarray(b)
    Bv = B[:, :10]
    out = []
    for i in range(64):
        if i == 30:
            Bv *= 2.0
        out.append(np.asarray(A[i, :] @ B))
    b2 = b.copy()
    want = [a[i] @ b for i in range(30)]
    b2[:, :10] *= 2.0
    want += [a[i] @ b2 for i in range(30, 64)]
    np.testing.assert_allclose(np.array(out), np.array(want), rtol=1e-12)
    assert _counts()[2] == 1


def test_not_finite_values_leave_the_products_to_numpy():
    a, b = _data(64, 128), _data(128, 130, seed=1)
    a[40, 5] = np.nan
    a[50, 7] = np.inf
    got = _rows(ps, ps.asarray(a), ps.asarray(b))
    with np.errstate(all="ignore"):
        want = _rows(np, a, b)
    np.testing.assert_allclose(got, want, rtol=1e-12)
    assert np.isnan(got[40]).all() and np.isinf(got[50]).all()


def test_moving_contraction():
    """trmm's ``A[i + 1:, i] @ B[i + 1:, :]`` (B's row i written after) and symm's ``A[i, :i]
    @ B[:i, :]``: the contracted window moves with the row; the block computes the union of
    its rows' windows, each row's outside zeroed"""
    a, b = _data(200, 200), _data(200, 150, seed=1)

    def trmm(xp, A, B):
        for i in range(200):
            B[i, :] = 0.5 * (B[i, :] + A[i + 1:, i] @ B[i + 1:, :])
        return np.asarray(B)

    def symm(xp, A, B):
        return np.array([np.asarray(A[i, :i] @ B[:i, :]) for i in range(1, A.shape[0])])

    np.testing.assert_allclose(trmm(ps, ps.asarray(a), ps.asarray(b)), trmm(np, a, b.copy()),
                               rtol=1e-11)
    batched, blocks, dropped = _counts()
    if native.available():            # (the Python path drops a block at the first write into B)
        # (until the blocks get small near the end: products.MASKED_MIN_WORK)
        assert batched > 40 and dropped == 0
    stats.reset_stats()
    a, b = _data(400, 400), _data(400, 200, seed=1)      # (blocks of 2**20 multiply-adds)
    np.testing.assert_allclose(symm(ps, ps.asarray(a), ps.asarray(b)), symm(np, a, b),
                               rtol=1e-11)
    assert _counts()[0] > 100


def test_changing_shapes_stop_asking():
    """a contracted length that changes by no constant: nothing is batched and the line is
    left to NumPy's call"""
    a, b = _data(200, 200), _data(200, 150, seed=1)
    A, B = ps.asarray(a), ps.asarray(b)
    ks = np.random.default_rng(3).integers(20, 199, 199)
    got = [np.asarray(A[i, :k] @ B[:k, :]) for i, k in enumerate(ks)]
    for i, (g, k) in enumerate(zip(got, ks, strict=True)):
        np.testing.assert_allclose(g, a[i, :k] @ b[:k, :], rtol=1e-12)
    assert _counts() == (0, 0, 0)


def test_products_of_recorded_arrays():
    """the matrix computed by a flush (a recorded op above the NumPy tier's size) has a base
    port too: its rows' products are batched"""
    a = _data(300, 256)
    A = ps.asarray(a) * 2.0 + 1.0           # (recorded: 76,800 elements)
    b = _data(256, 100, seed=2)
    got = _rows(ps, A, ps.asarray(b))
    np.testing.assert_allclose(got, _rows(np, a * 2.0 + 1.0, b), rtol=1e-12)
    assert _counts()[1] > 0


def test_scaled_rows():
    """gemm row by row: ``alpha * A[i, :] @ B`` multiplies a temporary first; the C path
    answers it as alpha times the block's answer for ``A[i, :]``"""
    a, b = _data(64, 128), _data(128, 130, seed=1)

    def gemm(xp, A, B):
        return np.array([np.asarray(1.5 * A[i, :] @ B) for i in range(64)] +
                        [np.asarray(A[i, :] * 0.5 @ B) for i in range(64)])

    np.testing.assert_allclose(gemm(ps, ps.asarray(a), ps.asarray(b)), gemm(np, a, b),
                               rtol=1e-12)
    assert _counts()[0] == (124 if native.available() else 0)


def test_scaled_rows_changed_since():
    """the scaled vector no longer x times its row (written in between, or the row itself
    written): NumPy's product of the vector as it is"""
    a, b = _data(64, 128), _data(128, 130, seed=1)

    def loop(xp, A, B):
        out = []
        for i in range(64):
            t = 1.5 * A[i, :]
            if i == 30:
                t += 1.0
            if i == 40:
                A[i, :] = 0.0
            out.append(np.asarray(t @ B))
        return np.array(out)

    np.testing.assert_allclose(loop(ps, ps.asarray(a), ps.asarray(b)), loop(np, a.copy(), b),
                               rtol=1e-12)


def test_rows_written_back():
    """doitgen: ``A[r, q, :] = A[r, q, :] @ C`` writes each row after its product; the C path
    keeps the block (the write is outside the rows it has still to answer) and answers no
    written row again"""
    a, c = _data(6, 20, 64), _data(64, 64, seed=1)

    def doitgen(xp, A, C):
        for r in range(6):
            for q in range(20):
                A[r, q, :] = A[r, q, :] @ C
                if q == 7:              # the same row again, after its write
                    A[r, q, :] = A[r, q, :] @ C
        return np.asarray(A)

    np.testing.assert_allclose(doitgen(ps, ps.asarray(a), ps.asarray(c)),
                               doitgen(np, a.copy(), c), rtol=1e-11)
    batched, blocks, dropped = _counts()
    assert dropped == 0 if native.available() else dropped == 1
    assert batched > 90 if native.available() else batched == 1


def test_same_row_again_stops_asking():
    a, b = _data(64, 128), _data(128, 130, seed=1)
    A, B = ps.asarray(a), ps.asarray(b)
    got = [np.asarray(A[5, :] @ B) for _ in range(40)]
    for g in got:
        np.testing.assert_array_equal(g, a[5] @ b)
    assert _counts() == (0, 0, 0)


def _random_loop(xp, seed, A, B):
    """One random loop of products (the differential test below): rows in order, reversed or
    every other one; plain, scaled, windowed (syrk's), np.dot's, written-back, trmm's and
    symm's products; a
    write into either array, a view of it, or elsewhere at a random iteration; the same row's
    product again now and then."""
    rng = np.random.default_rng(seed)
    kind = rng.integers(0, 9)
    n, K = A.shape
    order = list(range(n))
    if rng.random() < 0.2:
        order = order[::-1]
    if rng.random() < 0.15:
        order = order[::2]
    write_at = rng.integers(0, n) if rng.random() < 0.4 else -1
    write_what = rng.integers(0, 5)
    alpha = float(rng.choice([1.5, -0.25, 0.0, 3.0]))
    out = []
    for t, i in enumerate(order):
        if t == write_at:
            r = int(rng.integers(0, n))
            if write_what == 0:
                A[r, :] = 1.25
            elif write_what == 1:
                B[r % B.shape[0], :] = -2.0
            elif write_what == 2:
                A[:, 1] *= 2.0
            elif write_what == 3:
                B += 1.0
            else:
                A[r] = A[r] * 0.5
        if kind == 0:
            v = A[i, :] @ B
        elif kind == 1:
            v = alpha * A[i, :] @ B
        elif kind == 2:
            v = A[i, :] * alpha @ B
        elif kind == 3:
            v = A[:i + 1, :] @ A[i, :]
        elif kind == 4:
            v = xp.dot(B.T, A[i, :])
        elif kind == 5:
            v = A[i, :] @ B
            if v.shape[0] >= K:
                A[i, :] = v[:K]
        elif kind == 6:
            v = A[i, :K // 2] @ B[:K // 2, :]
        elif kind == 7:                 # trmm: a suffix contracted, B's row written after
            k = i % K
            v = A[i, k + 1:] @ B[k + 1:, :]
            B[k, :] = 0.5 * (B[k, :] + v)
        else:                           # symm: a prefix contracted
            k = i % K
            v = A[i, :k] @ B[:k, :]
        out.append(np.asarray(v, dtype=np.float64).ravel())
        if rng.random() < 0.05:
            out.append(np.asarray(A[i, :] @ B, dtype=np.float64).ravel())
    return out


@pytest.mark.parametrize("chunk", range(4))
def test_random_loops_against_numpy(chunk):
    for seed in range(chunk * 40, chunk * 40 + 40):
        rng = np.random.default_rng(seed)
        dt = np.float64 if rng.random() < 0.7 else np.float32
        n = int(rng.integers(3, 70))
        K = int(rng.integers(8, 100))
        N = int(rng.integers(16, 120))
        a = rng.standard_normal((n, K)).astype(dt)
        b = rng.standard_normal((K, N)).astype(dt)
        want = _random_loop(np, seed, a.copy(), b.copy())
        A, B = ps.asarray(a.copy()), ps.asarray(b.copy())
        got = _random_loop(ps, seed, A[:, :] if seed % 3 == 0 else A, B)
        tol = 1e-9 if dt == np.float64 else 2e-3
        assert len(got) == len(want), seed
        for g, w in zip(got, want, strict=True):
            np.testing.assert_allclose(g, w, rtol=tol, atol=10 * tol, err_msg=f"seed {seed}")
    assert ps.runtime_stats()["products_batched"] > 0


def test_a_block_keeps_no_array_alive():
    """a loop that stops in the middle of a block: releasing its arrays frees them (the C
    path's slots and the runs refer to the ports weakly) and the block"""
    import gc
    import weakref
    a, b = _data(64, 128), _data(128, 130, seed=1)
    A, B = ps.asarray(a), ps.asarray(b)
    for i in range(20):                 # (blocks of 8 and 16 rows: stops inside the second)
        np.asarray(A[i, :] @ B)
    assert _counts()[1] == 2
    ports = [weakref.ref(A._p), weakref.ref(B._p)]
    del A, B
    gc.collect()
    assert [r() for r in ports] == [None, None]
