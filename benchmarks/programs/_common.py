"""Helpers shared by the program modules: PolyBench index grids, its SPD init, lazy njit."""
from __future__ import annotations

import functools

import numpy


def grid(n, m):
    """Integer index grids ``(i, j)`` of shape (n, 1) and (1, m), for PolyBench's init formulas."""
    return numpy.arange(n)[:, None], numpy.arange(m)[None, :]


def polybench_spd(n):
    """PolyBench's positive-definite init (cholesky, lu, ludcmp): a unit lower-triangular
    L with ``L[i, j] = -j / n + 1`` below the diagonal, returned as ``L @ L.T``."""
    i, j = grid(n, n)
    lower = numpy.where(j < i, -j / n + 1.0, 0.0)
    lower[numpy.arange(n), numpy.arange(n)] = 1.0
    return lower @ lower.T


def njit(fn):
    """``numba.njit(fn)``, compiled on the first call: importing a program module does not
    import Numba (the NumPy and streamrt workers never pay for it)."""
    compiled = None

    @functools.wraps(fn)
    def wrapper(*args):
        nonlocal compiled
        if compiled is None:
            import numba
            compiled = numba.njit(fn)
        return compiled(*args)

    wrapper.py_func = fn
    return wrapper
