"""PolyBench 2mm: D = alpha * A @ B @ C + beta * D."""
from ._common import grid

NAME = "2mm"
SIZES = {"small": {"ni": 300, "nj": 340, "nk": 380, "nl": 420},
         "large": {"ni": 1600, "nj": 1800, "nk": 2000, "nl": 2200}}


def inputs(size):
    ni, nj, nk, nl = (SIZES[size][k] for k in ("ni", "nj", "nk", "nl"))
    i, k = grid(ni, nk)
    a = ((i * k + 1) % ni) / ni
    k, j = grid(nk, nj)
    b = (k * (j + 1) % nj) / nj
    j, m = grid(nj, nl)
    c = ((j * (m + 3) + 1) % nl) / nl
    i, m = grid(ni, nl)
    d = (i * (m + 2) % nk) / nk
    return (1.5, 1.2, a, b, c, d)


def kernel(np, alpha, beta, A, B, C, D):
    tmp = alpha * A @ B
    return beta * D + tmp @ C


def jax_kernel(jnp, alpha, beta, A, B, C, D):
    return beta * D + (alpha * A @ B) @ C
