"""Script: Smith-Waterman local alignment of two DNA sequences, one anti-diagonal at a time."""
import numpy

from ._common import njit

NAME = "smith-waterman"
SIZES = {"small": {"m": 120, "n": 100}, "large": {"m": 1200, "n": 1000}}


def inputs(size):
    rng = numpy.random.default_rng(42)
    m, n = SIZES[size]["m"], SIZES[size]["n"]
    return (rng.integers(0, 4, m), rng.integers(0, 4, n))


def kernel(np, a, b):
    match, mismatch, gap = 2, -1, 1
    m, n = a.shape[0], b.shape[0]
    H = np.zeros((m + 1, n + 1), dtype=np.int64)
    for d in range(2, m + n + 1):
        i = np.arange(max(1, d - n), min(m, d - 1) + 1)
        j = d - i
        diag = H[i - 1, j - 1] + np.where(a[i - 1] == b[j - 1], match, mismatch)
        H[i, j] = np.maximum(np.maximum(diag, 0), np.maximum(H[i - 1, j], H[i, j - 1]) - gap)
    return H, np.max(H)


@njit
def numba_kernel(a, b):
    m, n = a.shape[0], b.shape[0]
    H = numpy.zeros((m + 1, n + 1), dtype=numpy.int64)
    best = 0
    for i in range(1, m + 1):
        for j in range(1, n + 1):
            s = 2 if a[i - 1] == b[j - 1] else -1
            h = max(0, H[i - 1, j - 1] + s, H[i - 1, j] - 1, H[i, j - 1] - 1)
            H[i, j] = h
            best = max(best, h)
    return H, best
