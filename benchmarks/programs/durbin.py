"""PolyBench durbin: Levinson-Durbin recursion for a Toeplitz system."""
import numpy

from ._common import njit

NAME = "durbin"
SIZES = {"small": {"n": 2000}, "large": {"n": 20000}}


def inputs(size):
    n = SIZES[size]["n"]
    return (numpy.asarray(n + 1 - numpy.arange(n), dtype=numpy.float64),)


def kernel(np, r):
    n = r.shape[0]
    y = np.zeros(n)
    y[0] = -r[0]
    beta = 1.0
    alpha = -r[0]
    for k in range(1, n):
        beta = (1 - alpha * alpha) * beta
        s = r[k - 1::-1] @ y[:k]
        alpha = -(r[k] + s) / beta
        y[:k] = y[:k] + alpha * y[k - 1::-1]
        y[k] = alpha
    return y


@njit
def numba_kernel(r):
    n = r.shape[0]
    y = numpy.zeros(n)
    z = numpy.zeros(n)
    y[0] = -r[0]
    beta = 1.0
    alpha = -r[0]
    for k in range(1, n):
        beta = (1 - alpha * alpha) * beta
        s = 0.0
        for i in range(k):
            s += r[k - i - 1] * y[i]
        alpha = -(r[k] + s) / beta
        for i in range(k):
            z[i] = y[i] + alpha * y[k - i - 1]
        for i in range(k):
            y[i] = z[i]
        y[k] = alpha
    return y
