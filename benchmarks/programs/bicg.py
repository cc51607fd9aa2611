"""PolyBench bicg: the BiCG sub-kernel s = A.T @ r and q = A @ p, row by row."""
import numpy

from ._common import grid, njit

NAME = "bicg"
SIZES = {"small": {"m": 1900, "n": 2100}, "large": {"m": 6000, "n": 6200}}


def inputs(size):
    m, n = SIZES[size]["m"], SIZES[size]["n"]
    i, j = grid(n, m)
    a = (i * (j + 1) % n) / n
    r = (numpy.arange(n) % n) / n
    p = (numpy.arange(m) % m) / m
    return (a, r, p)


def kernel(np, A, r, p):
    n, m = A.shape
    s = np.zeros(m)
    q = np.zeros(n)
    for i in range(n):
        s = s + r[i] * A[i, :]
        q[i] = A[i, :] @ p
    return s, q


@njit
def numba_kernel(A, r, p):
    n, m = A.shape
    s = numpy.zeros(m)
    q = numpy.zeros(n)
    for i in range(n):
        for j in range(m):
            s[j] += r[i] * A[i, j]
            q[i] += A[i, j] * p[j]
    return s, q


def jax_kernel(jnp, A, r, p):
    return r @ A, A @ p
