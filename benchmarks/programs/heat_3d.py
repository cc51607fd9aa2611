"""PolyBench heat-3d: explicit 3-D heat equation, two buffers, Python time loop."""
import numpy

from ._common import njit

NAME = "heat-3d"
SIZES = {"small": {"tsteps": 40, "n": 20}, "large": {"tsteps": 100, "n": 80}}


def inputs(size):
    tsteps, n = SIZES[size]["tsteps"], SIZES[size]["n"]
    i, j, k = numpy.ogrid[:n, :n, :n]
    a = (i + j + (n - k)) * 10 / n
    return (tsteps, a, a.copy())


def kernel(np, tsteps, A, B):
    A, B = A.copy(), B.copy()
    for _ in range(tsteps):
        B[1:-1, 1:-1, 1:-1] = (
            0.125 * (A[2:, 1:-1, 1:-1] - 2.0 * A[1:-1, 1:-1, 1:-1] + A[:-2, 1:-1, 1:-1])
            + 0.125 * (A[1:-1, 2:, 1:-1] - 2.0 * A[1:-1, 1:-1, 1:-1] + A[1:-1, :-2, 1:-1])
            + 0.125 * (A[1:-1, 1:-1, 2:] - 2.0 * A[1:-1, 1:-1, 1:-1] + A[1:-1, 1:-1, :-2])
            + A[1:-1, 1:-1, 1:-1])
        A[1:-1, 1:-1, 1:-1] = (
            0.125 * (B[2:, 1:-1, 1:-1] - 2.0 * B[1:-1, 1:-1, 1:-1] + B[:-2, 1:-1, 1:-1])
            + 0.125 * (B[1:-1, 2:, 1:-1] - 2.0 * B[1:-1, 1:-1, 1:-1] + B[1:-1, :-2, 1:-1])
            + 0.125 * (B[1:-1, 1:-1, 2:] - 2.0 * B[1:-1, 1:-1, 1:-1] + B[1:-1, 1:-1, :-2])
            + B[1:-1, 1:-1, 1:-1])
    return A, B


@njit
def numba_kernel(tsteps, A, B):
    n = A.shape[0]
    A, B = A.copy(), B.copy()
    for _ in range(tsteps):
        for src, dst in ((A, B), (B, A)):
            for i in range(1, n - 1):
                for j in range(1, n - 1):
                    for k in range(1, n - 1):
                        c = src[i, j, k]
                        dst[i, j, k] = (0.125 * (src[i + 1, j, k] - 2.0 * c + src[i - 1, j, k])
                                        + 0.125 * (src[i, j + 1, k] - 2.0 * c + src[i, j - 1, k])
                                        + 0.125 * (src[i, j, k + 1] - 2.0 * c + src[i, j, k - 1])
                                        + c)
    return A, B


def jax_kernel(jnp, tsteps, A, B):
    import jax

    def update(s):
        c = s[1:-1, 1:-1, 1:-1]
        return (0.125 * (s[2:, 1:-1, 1:-1] - 2.0 * c + s[:-2, 1:-1, 1:-1])
                + 0.125 * (s[1:-1, 2:, 1:-1] - 2.0 * c + s[1:-1, :-2, 1:-1])
                + 0.125 * (s[1:-1, 1:-1, 2:] - 2.0 * c + s[1:-1, 1:-1, :-2]) + c)

    def step(_, state):
        A, B = state
        B = B.at[1:-1, 1:-1, 1:-1].set(update(A))
        A = A.at[1:-1, 1:-1, 1:-1].set(update(B))
        return A, B
    return jax.lax.fori_loop(0, tsteps, step, (A, B))
