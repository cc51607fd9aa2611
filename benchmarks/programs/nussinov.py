"""PolyBench nussinov: RNA secondary-structure dynamic programming (maximum base pairs)."""
import numpy

from ._common import njit

NAME = "nussinov"
SIZES = {"small": {"n": 40}, "large": {"n": 180}}


def inputs(size):
    n = SIZES[size]["n"]
    return (((numpy.arange(n) + 1) % 4).astype(numpy.int32),)


def kernel(np, seq):
    n = seq.shape[0]
    table = np.zeros((n, n), dtype=np.int32)
    for i in range(n - 1, -1, -1):
        for j in range(i + 1, n):
            best = table[i, j - 1]
            if i + 1 < n:
                best = max(best, table[i + 1, j])
                if i < j - 1:
                    match = int(seq[i] + seq[j] == 3)
                    best = max(best, table[i + 1, j - 1] + match)
                else:
                    best = max(best, table[i + 1, j - 1])
            if j - i > 1:
                best = max(best, np.max(table[i, i + 1:j] + table[i + 2:j + 1, j]))
            table[i, j] = best
    return table


@njit
def numba_kernel(seq):
    n = seq.shape[0]
    table = numpy.zeros((n, n), dtype=numpy.int32)
    for i in range(n - 1, -1, -1):
        for j in range(i + 1, n):
            if j - 1 >= 0:
                table[i, j] = max(table[i, j], table[i, j - 1])
            if i + 1 < n:
                table[i, j] = max(table[i, j], table[i + 1, j])
            if j - 1 >= 0 and i + 1 < n:
                if i < j - 1:
                    match = 1 if seq[i] + seq[j] == 3 else 0
                    table[i, j] = max(table[i, j], table[i + 1, j - 1] + match)
                else:
                    table[i, j] = max(table[i, j], table[i + 1, j - 1])
            for k in range(i + 1, j):
                table[i, j] = max(table[i, j], table[i, k] + table[k + 1, j])
    return table
