"""PolyBench floyd-warshall: all-pairs shortest paths on an int32 weight matrix."""
import numpy

from ._common import grid, njit

NAME = "floyd-warshall"
SIZES = {"small": {"n": 180}, "large": {"n": 1000}}


def inputs(size):
    n = SIZES[size]["n"]
    i, j = grid(n, n)
    path = i * j % 7 + 1
    path = numpy.where(((i + j) % 13 == 0) | ((i + j) % 7 == 0) | ((i + j) % 11 == 0), 999, path)
    return (path.astype(numpy.int32),)


def kernel(np, path):
    n = path.shape[0]
    for k in range(n):
        path = np.minimum(path, path[:, k:k + 1] + path[k:k + 1, :])
    return path


@njit
def numba_kernel(path):
    n = path.shape[0]
    path = path.copy()
    for k in range(n):
        for i in range(n):
            for j in range(n):
                path[i, j] = min(path[i, j], path[i, k] + path[k, j])
    return path


def jax_kernel(jnp, path):
    import jax

    def step(k, p):
        return jnp.minimum(p, p[:, k][:, None] + p[k, :][None, :])
    return jax.lax.fori_loop(0, path.shape[0], step, path)
