"""PolyBench 3mm: G = (A @ B) @ (C @ D)."""
from ._common import grid

NAME = "3mm"
SIZES = {"small": {"ni": 200, "nj": 225, "nk": 250, "nl": 275, "nm": 300},
         "large": {"ni": 1600, "nj": 1800, "nk": 2000, "nl": 2200, "nm": 2400}}


def inputs(size):
    ni, nj, nk, nl, nm = (SIZES[size][k] for k in ("ni", "nj", "nk", "nl", "nm"))
    i, j = grid(ni, nk)
    a = ((i * j + 1) % ni) / (5 * ni)
    i, j = grid(nk, nj)
    b = ((i * (j + 1) + 2) % nj) / (5 * nj)
    i, j = grid(nj, nm)
    c = (i * (j + 3) % nl) / (5 * nl)
    i, j = grid(nm, nl)
    d = ((i * (j + 2) + 2) % nk) / (5 * nk)
    return (a, b, c, d)


def kernel(np, A, B, C, D):
    E = A @ B
    F = C @ D
    return E @ F


def jax_kernel(jnp, A, B, C, D):
    return (A @ B) @ (C @ D)
