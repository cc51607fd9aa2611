"""PolyBench gramschmidt: QR decomposition by modified Gram-Schmidt, column by column."""

from ._common import grid

NAME = "gramschmidt"
SIZES = {"small": {"m": 240, "n": 200}, "large": {"m": 700, "n": 600}}


def inputs(size):
    # PolyBench's matrix (M < N, rank ~M/2) is rank-deficient: past its rank the columns of
    # Q are rounding noise that differs between any two correct implementations. Here it is
    # tall (M > N) with 100 added on the diagonal: full rank, condition number ~200-400.
    m, n = SIZES[size]["m"], SIZES[size]["n"]
    i, j = grid(m, n)
    return ((((i * j) % m) / m) * 100 + 10 + 100.0 * (i == j),)


def kernel(np, A):
    A = A.copy()
    m, n = A.shape
    Q = np.zeros((m, n))
    R = np.zeros((n, n))
    for k in range(n):
        nrm = A[:, k] @ A[:, k]
        R[k, k] = np.sqrt(nrm)
        Q[:, k] = A[:, k] / R[k, k]
        R[k, k + 1:] = Q[:, k] @ A[:, k + 1:]
        A[:, k + 1:] -= np.outer(Q[:, k], R[k, k + 1:])
    return A, R, Q
