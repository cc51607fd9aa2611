"""PolyBench correlation: the correlation matrix of M columns of an N x M data matrix."""

from ._common import grid

NAME = "correlation"
SIZES = {"small": {"m": 240, "n": 260}, "large": {"m": 600, "n": 700}}


def inputs(size):
    m, n = SIZES[size]["m"], SIZES[size]["n"]
    i, j = grid(n, m)
    return (i * j / m + i, float(n))


def kernel(np, data, float_n):
    eps = 0.1
    mean = np.sum(data, axis=0) / float_n
    stddev = np.sqrt(np.sum((data - mean) ** 2, axis=0) / float_n)
    stddev = np.where(stddev <= eps, 1.0, stddev)
    data = (data - mean) / (np.sqrt(float_n) * stddev)
    m = data.shape[1]
    corr = np.zeros((m, m))
    for i in range(m - 1):
        corr[i, i] = 1.0
        corr[i, i + 1:] = data[:, i] @ data[:, i + 1:]
        corr[i + 1:, i] = corr[i, i + 1:]
    corr[m - 1, m - 1] = 1.0
    return corr


def jax_kernel(jnp, data, float_n):
    mean = jnp.sum(data, axis=0) / float_n
    stddev = jnp.sqrt(jnp.sum((data - mean) ** 2, axis=0) / float_n)
    stddev = jnp.where(stddev <= 0.1, 1.0, stddev)
    data = (data - mean) / (jnp.sqrt(float_n) * stddev)
    corr = data.T @ data
    return corr.at[jnp.diag_indices(corr.shape[0])].set(1.0)
