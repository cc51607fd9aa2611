"""PolyBench syrk: the lower triangle of C = alpha * A @ A.T + beta * C."""

from ._common import grid, njit

NAME = "syrk"
SIZES = {"small": {"m": 200, "n": 240}, "large": {"m": 1000, "n": 1200}}


def inputs(size):
    m, n = SIZES[size]["m"], SIZES[size]["n"]
    i, j = grid(n, m)
    a = ((i * j + 1) % n) / n
    i, j = grid(n, n)
    c = ((i * j + 2) % m) / m
    return (1.5, 1.2, c, a)


def kernel(np, alpha, beta, C, A):
    C = C.copy()
    for i in range(C.shape[0]):
        C[i, :i + 1] = beta * C[i, :i + 1] + alpha * (A[:i + 1, :] @ A[i, :])
    return C


@njit
def numba_kernel(alpha, beta, C, A):
    n, m = A.shape
    C = C.copy()
    for i in range(n):
        for j in range(i + 1):
            C[i, j] *= beta
        for k in range(m):
            for j in range(i + 1):
                C[i, j] += alpha * A[i, k] * A[j, k]
    return C
