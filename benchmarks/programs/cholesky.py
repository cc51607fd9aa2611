"""PolyBench cholesky: in-place Cholesky factorisation (lower triangle), one entry at a time."""
import numpy

from ._common import njit, polybench_spd

NAME = "cholesky"
SIZES = {"small": {"n": 80}, "large": {"n": 400}}


def inputs(size):
    return (polybench_spd(SIZES[size]["n"]),)


def kernel(np, A):
    A = A.copy()
    n = A.shape[0]
    for i in range(n):
        for j in range(i):
            A[i, j] -= A[i, :j] @ A[j, :j]
            A[i, j] /= A[j, j]
        A[i, i] -= A[i, :i] @ A[i, :i]
        A[i, i] = np.sqrt(A[i, i])
    return A


@njit
def numba_kernel(A):
    A = A.copy()
    n = A.shape[0]
    for i in range(n):
        for j in range(i):
            for k in range(j):
                A[i, j] -= A[i, k] * A[j, k]
            A[i, j] /= A[j, j]
        for k in range(i):
            A[i, i] -= A[i, k] * A[i, k]
        A[i, i] = numpy.sqrt(A[i, i])
    return A
