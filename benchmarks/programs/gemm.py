"""PolyBench gemm: C = alpha * A @ B + beta * C, one row of C at a time."""

from ._common import grid, njit

NAME = "gemm"
SIZES = {"small": {"ni": 200, "nj": 220, "nk": 240}, "large": {"ni": 500, "nj": 550, "nk": 600}}


def inputs(size):
    ni, nj, nk = SIZES[size]["ni"], SIZES[size]["nj"], SIZES[size]["nk"]
    i, j = grid(ni, nj)
    c = ((i * j + 1) % ni) / ni
    i, k = grid(ni, nk)
    a = (i * (k + 1) % nk) / nk
    k, j = grid(nk, nj)
    b = (k * (j + 2) % nj) / nj
    return (1.5, 1.2, c, a, b)


def kernel(np, alpha, beta, C, A, B):
    C = C.copy()
    for i in range(C.shape[0]):
        C[i, :] = beta * C[i, :] + alpha * A[i, :] @ B
    return C


@njit
def numba_kernel(alpha, beta, C, A, B):
    ni, nj = C.shape
    nk = A.shape[1]
    C = C.copy()
    for i in range(ni):
        for j in range(nj):
            C[i, j] *= beta
        for k in range(nk):
            for j in range(nj):
                C[i, j] += alpha * A[i, k] * B[k, j]
    return C


def jax_kernel(jnp, alpha, beta, C, A, B):
    return beta * C + alpha * A @ B
