"""PolyBench gesummv: y = alpha * A @ x + beta * B @ x."""
import numpy

from ._common import grid, njit

NAME = "gesummv"
SIZES = {"small": {"n": 1300}, "large": {"n": 6000}}


def inputs(size):
    n = SIZES[size]["n"]
    i, j = grid(n, n)
    return (1.5, 1.2, ((i * j + 1) % n) / n, ((i * j + 2) % n) / n, (numpy.arange(n) % n) / n)


def kernel(np, alpha, beta, A, B, x):
    tmp = A @ x
    y = B @ x
    return alpha * tmp + beta * y


@njit
def numba_kernel(alpha, beta, A, B, x):
    n = A.shape[0]
    y = numpy.zeros(n)
    for i in range(n):
        tmp = 0.0
        acc = 0.0
        for j in range(n):
            tmp += A[i, j] * x[j]
            acc += B[i, j] * x[j]
        y[i] = alpha * tmp + beta * acc
    return y


def jax_kernel(jnp, alpha, beta, A, B, x):
    return alpha * (A @ x) + beta * (B @ x)
