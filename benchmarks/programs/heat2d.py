"""Script: explicit 2-D heat diffusion with a heated edge, checking convergence every 20 steps."""
import numpy

from ._common import njit

NAME = "heat2d"
SIZES = {"small": {"n": 64, "steps": 100}, "large": {"n": 400, "steps": 1000}}


def inputs(size):
    n, steps = SIZES[size]["n"], SIZES[size]["steps"]
    u = numpy.zeros((n, n))
    u[0, :] = 100.0                      # the heated top edge (Dirichlet)
    return (u, 0.2, steps)


def kernel(np, u, alpha, steps):
    u = u.copy()
    changes = []
    for step in range(steps):
        lap = u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:] - 4.0 * u[1:-1, 1:-1]
        new = u[1:-1, 1:-1] + alpha * lap
        if step % 20 == 0:
            changes.append(float(np.max(np.abs(new - u[1:-1, 1:-1]))))
        u[1:-1, 1:-1] = new
        u[-1, :] = u[-2, :]              # insulated bottom edge
    return u, numpy.asarray(changes)


@njit
def numba_kernel(u, alpha, steps):
    n = u.shape[0]
    u = u.copy()
    new = numpy.empty((n - 2, n - 2))
    changes = []
    for step in range(steps):
        change = 0.0
        for i in range(1, n - 1):
            for j in range(1, n - 1):
                lap = u[i - 1, j] + u[i + 1, j] + u[i, j - 1] + u[i, j + 1] - 4.0 * u[i, j]
                new[i - 1, j - 1] = u[i, j] + alpha * lap
                change = max(change, abs(alpha * lap))
        if step % 20 == 0:
            changes.append(change)
        u[1:-1, 1:-1] = new
        u[-1, :] = u[-2, :]
    return u, numpy.asarray(changes)
