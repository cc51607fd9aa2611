"""streamrt-on-Dask against dask.array (same chunks, same cluster) and NumPy, in one run.

    python benchmarks/dask_bench.py [--workers 1,2] [--chunks 8] [--repeat 3] [--quick]

For each worker count a LocalCluster of worker processes (one thread each) is started; each
workload's inputs are put on the cluster first (untimed: ``ps.distributed.asarray`` /
``dask.array.from_array(...).persist()``), the formula is written once against an array
module; the full results are gathered once and checked against NumPy's; then each peer runs
once untimed (compilation) and ``--repeat`` timed runs of the formula plus a float64 sum of
the result, of which only the scalar returns to the client (NumPy: the same, locally)."""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from run import BlackScholes  # noqa: E402  (benchmarks/run.py: the same formula)


def blackscholes(m, S, X, T):
    return BlackScholes.formula(m, S, X, T)[0]          # the call price


def stencil(m, u):
    for _ in range(4):        # four Jacobi-like sweeps (each one shrinks the grid by 2)
        u = 0.25 * (u[2:, 1:-1] + u[:-2, 1:-1] + u[1:-1, 2:] + u[1:-1, :-2]) \
            + 0.5 * u[1:-1, 1:-1]
    return u


def softmax(m, x):
    e = m.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def workloads(quick):
    rng = np.random.default_rng(1)
    n = 1_000_000 if quick else 8_000_000
    r = 1000 if quick else 2800
    yield "blackscholes", blackscholes, (
        rng.uniform(5.0, 30.0, n).astype(np.float32),
        rng.uniform(1.0, 100.0, n).astype(np.float32),
        rng.uniform(0.25, 10.0, n).astype(np.float32))
    yield "stencil2d", stencil, (rng.standard_normal((r, r)),)
    yield "softmax", softmax, (rng.standard_normal((n // 256, 256)).astype(np.float32),)


def timed(fn, repeat):
    fn()
    ts = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts), out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--workers", default="1,2")
    ap.add_argument("--chunks", type=int, default=8)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--quick", action="store_true")
    a = ap.parse_args()
    import dask.array as da
    from distributed import Client, LocalCluster
    import streamrt as ps
    rows = []
    for nw in [int(w) for w in a.workers.split(",")]:
        cluster = LocalCluster(n_workers=nw, threads_per_worker=1, processes=True,
                               dashboard_address=":0")
        client = Client(cluster)
        ps.distributed.connect(client)
        for name, f, inputs in workloads(a.quick):
            t_np, ref = timed(lambda: f(np, *inputs).sum(dtype=np.float64), a.repeat)
            c0 = -(-inputs[0].shape[0] // a.chunks)
            dins = [da.from_array(x, chunks=(c0,) + x.shape[1:]).persist() for x in inputs]
            sins = [ps.distributed.asarray(x, chunks=c0) for x in inputs]
            # the full results, once, untimed: both must match NumPy
            ref, got_da, got_ps = f(np, *inputs), f(da, *dins).compute(), \
                np.asarray(f(ps, *sins))
            # timed: the whole computation on the cluster, only a checksum comes back (moving
            # the result to the client costs both peers the same)
            t_da, _ = timed(lambda: float(f(da, *dins).sum(dtype=np.float64).compute()),
                            a.repeat)
            ps.reset_stats()
            t_ps, _ = timed(lambda: float(f(ps, *sins).sum(dtype=np.float64)), a.repeat)
            tasks = ps.runtime_stats()["dask_tasks"] // (a.repeat + 1)
            ntasks_da = len(f(da, *dins).sum(dtype=np.float64).__dask_graph__())
            tol = dict(rtol=1e-3, atol=1e-3) if ref.dtype == np.float32 else dict(rtol=1e-9)
            np.testing.assert_allclose(got_ps, ref, **tol)
            np.testing.assert_allclose(got_da, ref, **tol)
            rows.append((name, nw, t_np, t_da, t_ps, tasks, ntasks_da))
            del sins, dins
        ps.distributed.close()
        client.close()
        cluster.close()
    print(f"{'workload':14s} {'workers':>7s} {'numpy s':>9s} {'dask.array s':>12s} "
          f"{'streamrt s':>10s} {'vs dask':>8s} {'vs numpy':>8s} {'tasks ps/da':>12s}")
    for name, nw, t_np, t_da, t_ps, tasks, nda in rows:
        print(f"{name:14s} {nw:7d} {t_np:9.4f} {t_da:12.4f} {t_ps:10.4f} {t_da / t_ps:7.2f}x "
              f"{t_np / t_ps:7.2f}x {tasks:>5d}/{nda:<6d}")


if __name__ == "__main__":
    main()
