"""PolyBench fdtd-2d: 2-D finite-difference time-domain (Yee) electromagnetic kernel."""
import numpy

from ._common import grid, njit

NAME = "fdtd-2d"
SIZES = {"small": {"tmax": 40, "nx": 60, "ny": 80}, "large": {"tmax": 200, "nx": 500, "ny": 600}}


def inputs(size):
    tmax, nx, ny = SIZES[size]["tmax"], SIZES[size]["nx"], SIZES[size]["ny"]
    i, j = grid(nx, ny)
    ex = i * (j + 1) / nx
    ey = i * (j + 2) / ny
    hz = i * (j + 3) / nx
    return (ex, ey, hz, numpy.arange(tmax, dtype=numpy.float64))


def kernel(np, ex, ey, hz, fict):
    ex, ey, hz = ex.copy(), ey.copy(), hz.copy()
    for t in range(fict.shape[0]):
        ey[0, :] = fict[t]
        ey[1:, :] -= 0.5 * (hz[1:, :] - hz[:-1, :])
        ex[:, 1:] -= 0.5 * (hz[:, 1:] - hz[:, :-1])
        hz[:-1, :-1] -= 0.7 * (ex[:-1, 1:] - ex[:-1, :-1] + ey[1:, :-1] - ey[:-1, :-1])
    return ex, ey, hz


@njit
def numba_kernel(ex, ey, hz, fict):
    nx, ny = ex.shape
    ex, ey, hz = ex.copy(), ey.copy(), hz.copy()
    for t in range(fict.shape[0]):
        for j in range(ny):
            ey[0, j] = fict[t]
        for i in range(1, nx):
            for j in range(ny):
                ey[i, j] -= 0.5 * (hz[i, j] - hz[i - 1, j])
        for i in range(nx):
            for j in range(1, ny):
                ex[i, j] -= 0.5 * (hz[i, j] - hz[i, j - 1])
        for i in range(nx - 1):
            for j in range(ny - 1):
                hz[i, j] -= 0.7 * (ex[i, j + 1] - ex[i, j] + ey[i + 1, j] - ey[i, j])
    return ex, ey, hz


def jax_kernel(jnp, ex, ey, hz, fict):
    import jax

    def step(t, state):
        ex, ey, hz = state
        ey = ey.at[0, :].set(fict[t])
        ey = ey.at[1:, :].add(-0.5 * (hz[1:, :] - hz[:-1, :]))
        ex = ex.at[:, 1:].add(-0.5 * (hz[:, 1:] - hz[:, :-1]))
        hz = hz.at[:-1, :-1].add(-0.7 * (ex[:-1, 1:] - ex[:-1, :-1] + ey[1:, :-1] - ey[:-1, :-1]))
        return ex, ey, hz
    return jax.lax.fori_loop(0, fict.shape[0], step, (ex, ey, hz))
