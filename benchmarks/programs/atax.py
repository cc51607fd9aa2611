"""PolyBench atax: y = A.T @ (A @ x), accumulated row by row."""
import numpy

from ._common import grid, njit

NAME = "atax"
SIZES = {"small": {"m": 1900, "n": 2100}, "large": {"m": 6000, "n": 6200}}


def inputs(size):
    m, n = SIZES[size]["m"], SIZES[size]["n"]
    i, j = grid(m, n)
    a = ((i + j) % n) / (5 * m)
    x = 1.0 + numpy.arange(n) / n
    return (a, x)


def kernel(np, A, x):
    m, n = A.shape
    y = np.zeros(n)
    for i in range(m):
        tmp = A[i, :] @ x
        y = y + tmp * A[i, :]
    return y


@njit
def numba_kernel(A, x):
    m, n = A.shape
    y = numpy.zeros(n)
    for i in range(m):
        tmp = 0.0
        for j in range(n):
            tmp += A[i, j] * x[j]
        for j in range(n):
            y[j] += A[i, j] * tmp
    return y


def jax_kernel(jnp, A, x):
    return A.T @ (A @ x)
