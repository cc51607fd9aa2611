"""Distributed execution on a Dask LocalCluster (2 worker processes): fused programs run per
chunk on the workers and match NumPy; one task per chunk per kernel; a lost worker is
recovered by Dask's recomputation."""
import os
import signal

import numpy as np
import pytest

import streamrt as ps

distributed = pytest.importorskip("distributed")

from streamrt.distributed import executor as dex  # noqa: E402

N, M, K = 64, 33, 4           # 4 chunks of 16 rows


@pytest.fixture(scope="module")
def client():
    c = ps.distributed.connect(n_workers=2, threads_per_worker=1, memory_limit="1GiB")
    yield c
    ps.distributed.close()


@pytest.fixture(scope="module")
def data():
    return np.random.default_rng(7).standard_normal((N, M))


@pytest.fixture
def x(client, data):
    return ps.asarray(data, chunks=N // K)


def chain(v):
    for _ in range(5):
        v = v * 1.01 + 0.5          # 10 recorded ops
    return v


def test_chain_one_task_per_chunk(x, data, stats):
    assert ps.distributed.is_distributed(x) and ps.distributed.chunks(x) == [0, 16, 32, 48, 64]
    ex = dex.get()
    before = set(ex.submitted)
    distributed.wait([f for f, _ in x._port.value.refs])
    sched_before = set(x._port.value.refs[0][0].client.run_on_scheduler(
        lambda dask_scheduler: list(dask_scheduler.tasks)))
    y = chain(x)
    ps.sync()
    new = [k for k in ex.submitted if k not in before]
    assert stats()["dask_tasks"] == K and stats()["dask_kernel_tasks"] == K and len(new) == K
    distributed.wait([f for f, _ in y._port.value.refs])
    # the scheduler's graph gained exactly those k tasks (the chain's ops are not tasks)
    c = ps.distributed.get_client()
    sched_new = set(c.run_on_scheduler(lambda dask_scheduler: list(dask_scheduler.tasks))) \
        - sched_before
    assert sched_new == set(new)
    np.testing.assert_allclose(np.asarray(y), chain(data), rtol=1e-12)
    assert ps.distributed.is_distributed(y)


def test_random_numbers_per_chunk_match_the_local_draw(x, data):
    """A draw consumed by a distributed kernel uses each chunk's own counters: the same numbers
    as the local draw, not one chunk's numbers repeated."""
    got = np.asarray(x + ps.random.default_rng(11).random((N, M)))
    want = data + np.asarray(ps.random.default_rng(11).random((N, M)))
    np.testing.assert_allclose(got, want, rtol=1e-12)
    assert not np.allclose(got[:16] - data[:16], got[16:32] - data[16:32])


def test_reduction_tree_task_count(x, data, stats):
    s = chain(x).sum()
    assert float(s) == pytest.approx(chain(data).sum(), rel=1e-12)
    assert stats()["dask_kernel_tasks"] == K and stats()["dask_combine_tasks"] == 1
    ps.config.set(dask_fanin=2)
    try:
        ps.reset_stats()
        m = chain(x).max(axis=0)
        np.testing.assert_array_equal(np.asarray(m), chain(data).max(axis=0))
        assert stats()["dask_kernel_tasks"] == K and stats()["dask_combine_tasks"] == 2 + 1
    finally:
        ps.config.set(dask_fanin=8)


@pytest.mark.parametrize("axis", [0, 1, None])
def test_reductions_each_axis(x, data, axis):
    got = [x.sum(axis=axis), x.mean(axis=axis), x.max(axis=axis), x.min(axis=axis),
           (x > 0.5).any(axis=axis), (x > -3).all(axis=axis), x.argmax(axis=axis),
           x.argmin(axis=axis), x.astype(ps.float32).sum(axis=axis)]
    want = [data.sum(axis=axis), data.mean(axis=axis), data.max(axis=axis),
            data.min(axis=axis), (data > 0.5).any(axis=axis), (data > -3).all(axis=axis),
            data.argmax(axis=axis), data.argmin(axis=axis),
            data.astype(np.float32).sum(axis=axis)]
    for g, w in zip(got, want):
        g = np.asarray(g)
        assert g.dtype == np.asarray(w).dtype and g.shape == np.shape(w)
        if g.dtype == np.float32:      # streamrt accumulates float32 sums in float64
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)
        else:
            np.testing.assert_allclose(g, w, rtol=1e-12)


def test_nan_argmax_and_int_sum(client):
    a = np.arange(40 * 3, dtype=np.int32).reshape(40, 3) % 7
    xi = ps.asarray(a, chunks=(8, 12, 20))
    assert np.asarray(xi.sum(axis=0)).dtype == np.int64
    np.testing.assert_array_equal(np.asarray(xi.sum(axis=0)), a.sum(axis=0))
    f = np.ones((40, 3))
    f[25, 1] = np.nan
    f[30, 2] = 5.0
    xf = ps.asarray(f, chunks=10)
    np.testing.assert_array_equal(np.asarray(xf.argmax(axis=0)), f.argmax(axis=0))
    assert int(xf.argmax()) == f.argmax()
    assert np.isnan(float(xf.max()))


def test_small_integers_wrap_per_chunk(client):
    """uint8 arithmetic wraps on the workers, a uint64 scalar past 2**63 reaches their
    kernels, sums of small integers accumulate in uint64/int64 across the chunks."""
    a = (np.arange(40 * 3).reshape(40, 3) * 37 % 256).astype(np.uint8)
    xu = ps.asarray(a, chunks=10)
    assert xu.dtype == np.uint8
    np.testing.assert_array_equal(np.asarray(xu + 200), a + np.uint8(200))
    s = xu.sum(axis=0)
    assert s.dtype == np.uint64
    np.testing.assert_array_equal(np.asarray(s), a.sum(axis=0))
    big = xu.astype(np.uint64) + (2 ** 64 - 100)
    np.testing.assert_array_equal(np.asarray(big), a.astype(np.uint64) + np.uint64(2 ** 64 - 100))
    i8 = ps.asarray(a.view(np.int8), chunks=(8, 12, 20))
    np.testing.assert_array_equal(np.asarray(i8 // -3), a.view(np.int8) // -3)
    assert int(ps.min(i8)) == int(a.view(np.int8).min())


def test_slices_and_partial_reads(x, data, stats):
    y = chain(x)
    ps.sync()
    ps.reset_stats()
    np.testing.assert_allclose(np.asarray(y[20:30, 3]), chain(data)[20:30, 3])
    assert stats()["dask_chunks_gathered"] == 1           # rows 20:30 sit in chunk 1 only
    np.testing.assert_allclose(np.asarray(y[-1]), chain(data)[-1])
    for key in [np.s_[::2], np.s_[::-1, 1:], np.s_[10:50, ::3], np.s_[:, 5]]:
        np.testing.assert_allclose(np.asarray(x[key] * 2 + 1), data[key] * 2 + 1)


def test_stencil(x, data):
    u = 0.25 * (x[2:, 1:-1] + x[:-2, 1:-1] + x[1:-1, 2:] + x[1:-1, :-2]) - x[1:-1, 1:-1]
    d = data
    want = 0.25 * (d[2:, 1:-1] + d[:-2, 1:-1] + d[1:-1, 2:] + d[1:-1, :-2]) - d[1:-1, 1:-1]
    np.testing.assert_allclose(np.asarray(u), want, rtol=1e-12)
    # chunked like x, shifted by one of the stencil's row offsets (no rechunk)
    assert ps.distributed.chunks(u) in ([0, 14, 30, 46, 62], [0, 15, 31, 47, 62],
                                        [0, 16, 32, 48, 62])


def test_broadcasts_softmax_and_locals(x, data):
    row = np.linspace(0, 1, M)
    e = ps.exp(x - x.max(axis=1, keepdims=True))
    sm = e / e.sum(axis=1, keepdims=True)
    de = np.exp(data - data.max(axis=1, keepdims=True))
    np.testing.assert_allclose(np.asarray(sm), de / de.sum(axis=1, keepdims=True), rtol=1e-12)
    np.testing.assert_allclose(np.asarray((x - x.mean(axis=0)) * row + 2.0),
                               (data - data.mean(axis=0)) * row + 2.0, rtol=1e-12)
    ps.reset_stats()
    e = ps.exp(x - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(np.asarray(e / e.sum(axis=1, keepdims=True)),
                               de / de.sum(axis=1, keepdims=True), rtol=1e-12)
    # three chunk-aligned kernels (max, exp+sum, divide) run as one task per chunk
    assert ps.runtime_stats()["dask_kernel_steps"] == 3 * K
    assert ps.runtime_stats()["dask_tasks"] == K
    loc = ps.asarray(data[:, :1] * 3)                      # a local (N, 1) array
    np.testing.assert_allclose(np.asarray(x + loc), data + data[:, :1] * 3)


def test_from_dask_matmul_setitem(client, data, stats):
    import dask.array as da
    darr = da.from_array(data, chunks=(20, 11))            # axis 1 is rechunked whole
    z = ps.distributed.from_dask(darr)
    assert ps.distributed.chunks(z) == [0, 20, 40, 60, 64]
    w = data[:5].T
    zw = z @ w                         # row chunks of z times a local matrix: per chunk
    np.testing.assert_allclose(np.asarray(zw), data @ w, rtol=1e-12)
    assert ps.distributed.chunks(zw) == [0, 20, 40, 60, 64]
    np.testing.assert_allclose(np.asarray(z[1:] @ w[:, 0]), data[1:] @ w[:, 0], rtol=1e-12)
    z[3:5] = 0.0
    d2 = data.copy()
    d2[3:5] = 0.0
    np.testing.assert_allclose(np.asarray(z * 2), d2 * 2)
    assert stats()["dask_rowwise_tasks"] == 4 + 4 and stats()["dask_whole_tasks"] == 1
    assert stats()["dask_rechunks"] == 2          # axis 1 made whole; the slice update
    back = ps.distributed.to_dask(ps.sqrt(abs(z)))
    np.testing.assert_allclose(back.compute(), np.sqrt(abs(d2)))


def test_flow_control_bounds_sequences(x, data, stats):
    ps.config.set(dask_inflight=1)
    try:
        acc = x
        for _ in range(3):
            acc = acc * 0.5 + 1.0
            ps.hint_execute()
        np.testing.assert_allclose(np.asarray(acc), ((data * .5 + 1) * .5 + 1) * .5 + 1)
        assert stats()["dask_flow_waits"] >= 2
    finally:
        ps.config.set(dask_inflight=4)


def test_bad_chunks(client, data):
    with pytest.raises(ps.ArgumentError, match="test_distributed.py"):
        ps.asarray(data, chunks=(16, 11))
    with pytest.raises(ps.ArgumentError, match="add up"):
        ps.asarray(data, chunks=(10, 10, 10))


def test_lost_worker_recomputed(client, data):
    """A worker holding results of the first program is killed before the second program
    (which reads them) runs: Dask recomputes the lost chunks from the tasks holding the
    input data and the read is correct."""
    x = ps.asarray(data, chunks=N // K)
    y = chain(x)
    ps.sync()
    futs = [f for f, _ in y._port.value.refs]
    distributed.wait(futs)
    who = client.who_has(futs)
    victim = next(iter(who[futs[0].key]))
    pid = client.run(os.getpid, workers=[victim])[victim]
    os.kill(pid, signal.SIGKILL)            # the nanny restarts it
    z = (y * 3).sum(axis=0)
    np.testing.assert_allclose(np.asarray(z), (chain(data) * 3).sum(axis=0), rtol=1e-12)
    assert victim not in {w for ws in client.who_has(futs).values() for w in ws}
    np.testing.assert_allclose(np.asarray(y), chain(data), rtol=1e-12)
    client.wait_for_workers(2, timeout=60)
