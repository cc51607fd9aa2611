"""PolyBench trisolv: forward substitution L x = b with L lower-triangular."""
import numpy

from ._common import grid, njit

NAME = "trisolv"
SIZES = {"small": {"n": 2000}, "large": {"n": 8000}}


def inputs(size):
    n = SIZES[size]["n"]
    i, j = grid(n, n)
    L = numpy.where(j <= i, (i + n - j + 1) * 2 / n, 0.0)
    return (L, numpy.arange(n, dtype=numpy.float64))


def kernel(np, L, b):
    n = L.shape[0]
    x = np.zeros(n)
    for i in range(n):
        x[i] = (b[i] - L[i, :i] @ x[:i]) / L[i, i]
    return x


@njit
def numba_kernel(L, b):
    n = L.shape[0]
    x = numpy.zeros(n)
    for i in range(n):
        x[i] = b[i]
        for j in range(i):
            x[i] -= L[i, j] * x[j]
        x[i] = x[i] / L[i, i]
    return x
