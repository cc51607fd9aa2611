"""PolyBench doitgen: multiresolution analysis kernel, A[r, q, :] = A[r, q, :] @ C4."""
import numpy

from ._common import grid, njit

NAME = "doitgen"
SIZES = {"small": {"nr": 50, "nq": 40, "np": 60}, "large": {"nr": 150, "nq": 140, "np": 160}}


def inputs(size):
    nr, nq, np_ = SIZES[size]["nr"], SIZES[size]["nq"], SIZES[size]["np"]
    r, q, p = numpy.ogrid[:nr, :nq, :np_]
    a = ((r * q + p) % np_) / np_
    i, j = grid(np_, np_)
    c4 = (i * j % np_) / np_
    return (a, c4)


def kernel(np, A, C4):
    A = A.copy()
    nr, nq, _ = A.shape
    for r in range(nr):
        for q in range(nq):
            A[r, q, :] = A[r, q, :] @ C4
    return A


@njit
def numba_kernel(A, C4):
    nr, nq, np_ = A.shape
    A = A.copy()
    acc = numpy.zeros(np_)
    for r in range(nr):
        for q in range(nq):
            for p in range(np_):
                s = 0.0
                for k in range(np_):
                    s += A[r, q, k] * C4[k, p]
                acc[p] = s
            for p in range(np_):
                A[r, q, p] = acc[p]
    return A


def jax_kernel(jnp, A, C4):
    return A @ C4
