"""PolyBench ludcmp: LU decomposition followed by forward and backward substitution."""
import numpy

from ._common import polybench_spd

NAME = "ludcmp"
SIZES = {"small": {"n": 80}, "large": {"n": 400}}


def inputs(size):
    n = SIZES[size]["n"]
    b = (numpy.arange(n) + 1) / n / 2.0 + 4
    return (polybench_spd(n), b)


def kernel(np, A, b):
    A = A.copy()
    n = A.shape[0]
    for i in range(n):
        for j in range(i):
            w = A[i, j] - A[i, :j] @ A[:j, j]
            A[i, j] = w / A[j, j]
        A[i, i:] = A[i, i:] - A[i, :i] @ A[:i, i:]
    y = np.zeros(n)
    for i in range(n):
        y[i] = b[i] - A[i, :i] @ y[:i]
    x = np.zeros(n)
    for i in range(n - 1, -1, -1):
        x[i] = (y[i] - A[i, i + 1:] @ x[i + 1:]) / A[i, i]
    return x
