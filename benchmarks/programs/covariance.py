"""PolyBench covariance: the covariance matrix of M columns of an N x M data matrix."""
import numpy

from ._common import grid, njit

NAME = "covariance"
SIZES = {"small": {"m": 240, "n": 260}, "large": {"m": 600, "n": 700}}


def inputs(size):
    m, n = SIZES[size]["m"], SIZES[size]["n"]
    i, j = grid(n, m)
    return (i * j / m, float(n))


def kernel(np, data, float_n):
    mean = np.sum(data, axis=0) / float_n
    data = data - mean
    m = data.shape[1]
    cov = np.zeros((m, m))
    for i in range(m):
        cov[i, i:] = data[:, i] @ data[:, i:] / (float_n - 1.0)
        cov[i:, i] = cov[i, i:]
    return cov


@njit
def numba_kernel(data, float_n):
    n, m = data.shape
    data = data.copy()
    mean = numpy.zeros(m)
    for j in range(m):
        for i in range(n):
            mean[j] += data[i, j]
        mean[j] /= float_n
    for i in range(n):
        for j in range(m):
            data[i, j] -= mean[j]
    cov = numpy.zeros((m, m))
    for i in range(m):
        for j in range(i, m):
            s = 0.0
            for k in range(n):
                s += data[k, i] * data[k, j]
            cov[i, j] = s / (float_n - 1.0)
            cov[j, i] = cov[i, j]
    return cov


def jax_kernel(jnp, data, float_n):
    data = data - jnp.sum(data, axis=0) / float_n
    return data.T @ data / (float_n - 1.0)
