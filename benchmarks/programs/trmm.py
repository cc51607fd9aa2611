"""PolyBench trmm: B = alpha * A.T @ B with A unit lower-triangular, row by row."""
import numpy

from ._common import grid, njit

NAME = "trmm"
SIZES = {"small": {"m": 200, "n": 240}, "large": {"m": 1000, "n": 1200}}


def inputs(size):
    m, n = SIZES[size]["m"], SIZES[size]["n"]
    i, j = grid(m, m)
    a = numpy.where(j < i, ((i + j) % m) / m, 0.0)
    a[numpy.arange(m), numpy.arange(m)] = 1.0
    i, j = grid(m, n)
    b = ((n + (i - j)) % n) / n
    return (1.5, a, b)


def kernel(np, alpha, A, B):
    B = B.copy()
    for i in range(B.shape[0]):
        B[i, :] = alpha * (B[i, :] + A[i + 1:, i] @ B[i + 1:, :])
    return B


@njit
def numba_kernel(alpha, A, B):
    m, n = B.shape
    B = B.copy()
    for i in range(m):
        for j in range(n):
            for k in range(i + 1, m):
                B[i, j] += A[k, i] * B[k, j]
            B[i, j] = alpha * B[i, j]
    return B
