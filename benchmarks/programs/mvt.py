"""PolyBench mvt: x1 += A @ y1 and x2 += A.T @ y2."""
import numpy

from ._common import grid, njit

NAME = "mvt"
SIZES = {"small": {"n": 2000}, "large": {"n": 8000}}


def inputs(size):
    n = SIZES[size]["n"]
    k = numpy.arange(n)
    i, j = grid(n, n)
    return ((k % n) / n, ((k + 1) % n) / n, ((k + 3) % n) / n, ((k + 4) % n) / n,
            (i * j % n) / n)


def kernel(np, x1, x2, y_1, y_2, A):
    x1 = x1 + A @ y_1
    x2 = x2 + A.T @ y_2
    return x1, x2


@njit
def numba_kernel(x1, x2, y_1, y_2, A):
    n = A.shape[0]
    x1 = x1.copy()
    x2 = x2.copy()
    for i in range(n):
        for j in range(n):
            x1[i] += A[i, j] * y_1[j]
    for i in range(n):
        for j in range(n):
            x2[i] += A[j, i] * y_2[j]
    return x1, x2


def jax_kernel(jnp, x1, x2, y_1, y_2, A):
    return x1 + A @ y_1, x2 + A.T @ y_2
