"""PolyBench seidel-2d: 9-point Gauss-Seidel sweeps, vectorised along wavefronts 2i + j."""

from ._common import grid, njit

NAME = "seidel-2d"
SIZES = {"small": {"tsteps": 2, "n": 40}, "large": {"tsteps": 10, "n": 200}}


def inputs(size):
    tsteps, n = SIZES[size]["tsteps"], SIZES[size]["n"]
    i, j = grid(n, n)
    return (tsteps, (i * (j + 2) + 2) / n)


def kernel(np, tsteps, A):
    # A[i, j] needs the new A[i-1, j-1..j+1] and A[i, j-1]: all points with the same 2i + j
    # are independent of each other, and the wavefronts run in increasing 2i + j
    A = A.copy()
    n = A.shape[0]
    for _ in range(tsteps):
        for w in range(3, 3 * (n - 2) + 1):
            lo = max(1, (w - (n - 2) + 1) // 2)
            hi = min(n - 2, (w - 1) // 2)
            i = np.arange(lo, hi + 1)
            j = w - 2 * i
            A[i, j] = (A[i - 1, j - 1] + A[i - 1, j] + A[i - 1, j + 1]
                       + A[i, j - 1] + A[i, j] + A[i, j + 1]
                       + A[i + 1, j - 1] + A[i + 1, j] + A[i + 1, j + 1]) / 9.0
    return A


@njit
def numba_kernel(tsteps, A):
    n = A.shape[0]
    A = A.copy()
    for _ in range(tsteps):
        for i in range(1, n - 1):
            for j in range(1, n - 1):
                A[i, j] = (A[i - 1, j - 1] + A[i - 1, j] + A[i - 1, j + 1]
                           + A[i, j - 1] + A[i, j] + A[i, j + 1]
                           + A[i + 1, j - 1] + A[i + 1, j] + A[i + 1, j + 1]) / 9.0
    return A
