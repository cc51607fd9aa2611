"""PolyBench lu: in-place LU decomposition without pivoting (Doolittle, row by row)."""
from ._common import njit, polybench_spd

NAME = "lu"
SIZES = {"small": {"n": 80}, "large": {"n": 400}}


def inputs(size):
    return (polybench_spd(SIZES[size]["n"]),)


def kernel(np, A):
    A = A.copy()
    n = A.shape[0]
    for i in range(n):
        for j in range(i):
            A[i, j] -= A[i, :j] @ A[:j, j]
            A[i, j] /= A[j, j]
        A[i, i:] -= A[i, :i] @ A[:i, i:]
    return A


@njit
def numba_kernel(A):
    A = A.copy()
    n = A.shape[0]
    for i in range(n):
        for j in range(i):
            for k in range(j):
                A[i, j] -= A[i, k] * A[k, j]
            A[i, j] /= A[j, j]
        for j in range(i, n):
            for k in range(i):
                A[i, j] -= A[i, k] * A[k, j]
    return A
