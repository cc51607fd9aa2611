"""PolyBench symm: C = alpha * A @ B + beta * C with A symmetric (lower triangle stored)."""
import numpy

from ._common import grid

NAME = "symm"
SIZES = {"small": {"m": 200, "n": 240}, "large": {"m": 500, "n": 600}}


def inputs(size):
    m, n = SIZES[size]["m"], SIZES[size]["n"]
    i, j = grid(m, n)
    c = ((i + j) % 100) / m
    b = ((n + i - j) % 100) / m
    i, j = grid(m, m)
    a = numpy.where(j <= i, ((i + j) % 100) / m, -999.0)
    return (1.5, 1.2, c, a, b)


def kernel(np, alpha, beta, C, A, B):
    C = C.copy()
    for i in range(C.shape[0]):
        C[:i, :] += alpha * np.outer(A[i, :i], B[i, :])
        temp2 = A[i, :i] @ B[:i, :]
        C[i, :] = beta * C[i, :] + alpha * B[i, :] * A[i, i] + alpha * temp2
    return C
