"""PolyBench adi: alternating-direction implicit solver for 2-D heat diffusion."""
from ._common import grid, njit

NAME = "adi"
SIZES = {"small": {"tsteps": 4, "n": 40}, "large": {"tsteps": 40, "n": 200}}


def inputs(size):
    tsteps, n = SIZES[size]["tsteps"], SIZES[size]["n"]
    i, j = grid(n, n)
    return (tsteps, (i + n - j) / n)


def _coefficients(tsteps, n):
    dx = 1.0 / n
    dy = 1.0 / n
    dt = 1.0 / tsteps
    mul1 = 2.0 * dt / (dx * dx)
    mul2 = 1.0 * dt / (dy * dy)
    a = -mul1 / 2.0
    d = -mul2 / 2.0
    return a, 1.0 + mul1, a, d, 1.0 + mul2, d


def kernel(np, tsteps, u):
    n = u.shape[0]
    a, b, c, d, e, f = _coefficients(tsteps, n)
    u = u.copy()
    v = np.zeros((n, n))
    p = np.zeros((n, n))
    q = np.zeros((n, n))
    for _ in range(tsteps):
        # column sweep: the tridiagonal solves of all columns i at once
        v[0, 1:-1] = 1.0
        p[1:-1, 0] = 0.0
        q[1:-1, 0] = v[0, 1:-1]
        for j in range(1, n - 1):
            den = a * p[1:-1, j - 1] + b
            p[1:-1, j] = -c / den
            q[1:-1, j] = (-d * u[j, :-2] + (1.0 + 2.0 * d) * u[j, 1:-1] - f * u[j, 2:]
                          - a * q[1:-1, j - 1]) / den
        v[n - 1, 1:-1] = 1.0
        for j in range(n - 2, 0, -1):
            v[j, 1:-1] = p[1:-1, j] * v[j + 1, 1:-1] + q[1:-1, j]
        # row sweep: all rows i at once
        u[1:-1, 0] = 1.0
        p[1:-1, 0] = 0.0
        q[1:-1, 0] = u[1:-1, 0]
        for j in range(1, n - 1):
            den = d * p[1:-1, j - 1] + e
            p[1:-1, j] = -f / den
            q[1:-1, j] = (-a * v[:-2, j] + (1.0 + 2.0 * a) * v[1:-1, j] - c * v[2:, j]
                          - d * q[1:-1, j - 1]) / den
        u[1:-1, n - 1] = 1.0
        for j in range(n - 2, 0, -1):
            u[1:-1, j] = p[1:-1, j] * u[1:-1, j + 1] + q[1:-1, j]
    return u


def numba_kernel(tsteps, u):
    return _adi_loops(tsteps, *_coefficients(tsteps, u.shape[0]), u)


@njit
def _adi_loops(tsteps, a, b, c, d, e, f, u):
    n = u.shape[0]
    u = u.copy()
    v = u * 0.0
    p = u * 0.0
    q = u * 0.0
    for _ in range(tsteps):
        for i in range(1, n - 1):
            v[0, i] = 1.0
            p[i, 0] = 0.0
            q[i, 0] = v[0, i]
            for j in range(1, n - 1):
                p[i, j] = -c / (a * p[i, j - 1] + b)
                q[i, j] = (-d * u[j, i - 1] + (1.0 + 2.0 * d) * u[j, i] - f * u[j, i + 1]
                           - a * q[i, j - 1]) / (a * p[i, j - 1] + b)
            v[n - 1, i] = 1.0
            for j in range(n - 2, 0, -1):
                v[j, i] = p[i, j] * v[j + 1, i] + q[i, j]
        for i in range(1, n - 1):
            u[i, 0] = 1.0
            p[i, 0] = 0.0
            q[i, 0] = u[i, 0]
            for j in range(1, n - 1):
                p[i, j] = -f / (d * p[i, j - 1] + e)
                q[i, j] = (-a * v[i - 1, j] + (1.0 + 2.0 * a) * v[i, j] - c * v[i + 1, j]
                           - d * q[i, j - 1]) / (d * p[i, j - 1] + e)
            u[i, n - 1] = 1.0
            for j in range(n - 2, 0, -1):
                u[i, j] = p[i, j] * u[i, j + 1] + q[i, j]
    return u
