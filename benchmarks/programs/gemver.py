"""PolyBench gemver: a rank-2 update of A followed by two matrix-vector products."""
import numpy

from ._common import grid

NAME = "gemver"
SIZES = {"small": {"n": 1000}, "large": {"n": 4000}}


def inputs(size):
    n = SIZES[size]["n"]
    fn = float(n)
    k = numpy.arange(n)
    i, j = grid(n, n)
    a = (i * j % n) / n
    u1 = k.astype(numpy.float64)
    u2, v1, v2 = (k + 1) / fn / 2.0, (k + 1) / fn / 4.0, (k + 1) / fn / 6.0
    y, z = (k + 1) / fn / 8.0, (k + 1) / fn / 9.0
    return (1.5, 1.2, a, u1, v1, u2, v2, numpy.zeros(n), y, z)


def kernel(np, alpha, beta, A, u1, v1, u2, v2, w, y, z):
    A = A + np.outer(u1, v1) + np.outer(u2, v2)
    x = beta * (A.T @ y) + z
    w = w + alpha * (A @ x)
    return A, x, w


def jax_kernel(jnp, alpha, beta, A, u1, v1, u2, v2, w, y, z):
    A = A + jnp.outer(u1, v1) + jnp.outer(u2, v2)
    x = beta * (A.T @ y) + z
    return A, x, w + alpha * (A @ x)
