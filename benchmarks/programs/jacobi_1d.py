"""PolyBench jacobi-1d: 3-point Jacobi stencil on a line, two buffers, Python time loop."""
import numpy

from ._common import njit

NAME = "jacobi-1d"
SIZES = {"small": {"tsteps": 500, "n": 2000}, "large": {"tsteps": 2000, "n": 40000}}


def inputs(size):
    tsteps, n = SIZES[size]["tsteps"], SIZES[size]["n"]
    i = numpy.arange(n)
    return (tsteps, (i + 2.0) / n, (i + 3.0) / n)


def kernel(np, tsteps, A, B):
    A, B = A.copy(), B.copy()
    for _ in range(tsteps):
        B[1:-1] = 0.33333 * (A[:-2] + A[1:-1] + A[2:])
        A[1:-1] = 0.33333 * (B[:-2] + B[1:-1] + B[2:])
    return A, B


@njit
def numba_kernel(tsteps, A, B):
    n = A.shape[0]
    A, B = A.copy(), B.copy()
    for _ in range(tsteps):
        for i in range(1, n - 1):
            B[i] = 0.33333 * (A[i - 1] + A[i] + A[i + 1])
        for i in range(1, n - 1):
            A[i] = 0.33333 * (B[i - 1] + B[i] + B[i + 1])
    return A, B


def jax_kernel(jnp, tsteps, A, B):
    import jax

    def step(_, state):
        A, B = state
        B = B.at[1:-1].set(0.33333 * (A[:-2] + A[1:-1] + A[2:]))
        A = A.at[1:-1].set(0.33333 * (B[:-2] + B[1:-1] + B[2:]))
        return A, B
    return jax.lax.fori_loop(0, tsteps, step, (A, B))
