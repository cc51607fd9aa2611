"""PolyBench jacobi-2d: 5-point Jacobi stencil, two buffers, Python time loop."""
from ._common import grid, njit

NAME = "jacobi-2d"
SIZES = {"small": {"tsteps": 40, "n": 90}, "large": {"tsteps": 100, "n": 1000}}


def inputs(size):
    tsteps, n = SIZES[size]["tsteps"], SIZES[size]["n"]
    i, j = grid(n, n)
    return (tsteps, (i * (j + 2) + 2) / n, (i * (j + 3) + 3) / n)


def kernel(np, tsteps, A, B):
    A, B = A.copy(), B.copy()
    for _ in range(tsteps):
        B[1:-1, 1:-1] = 0.2 * (A[1:-1, 1:-1] + A[1:-1, :-2] + A[1:-1, 2:]
                               + A[2:, 1:-1] + A[:-2, 1:-1])
        A[1:-1, 1:-1] = 0.2 * (B[1:-1, 1:-1] + B[1:-1, :-2] + B[1:-1, 2:]
                               + B[2:, 1:-1] + B[:-2, 1:-1])
    return A, B


@njit
def numba_kernel(tsteps, A, B):
    n = A.shape[0]
    A, B = A.copy(), B.copy()
    for _ in range(tsteps):
        for i in range(1, n - 1):
            for j in range(1, n - 1):
                B[i, j] = 0.2 * (A[i, j] + A[i, j - 1] + A[i, j + 1] + A[i + 1, j] + A[i - 1, j])
        for i in range(1, n - 1):
            for j in range(1, n - 1):
                A[i, j] = 0.2 * (B[i, j] + B[i, j - 1] + B[i, j + 1] + B[i + 1, j] + B[i - 1, j])
    return A, B


def jax_kernel(jnp, tsteps, A, B):
    import jax

    def update(s):
        return 0.2 * (s[1:-1, 1:-1] + s[1:-1, :-2] + s[1:-1, 2:] + s[2:, 1:-1] + s[:-2, 1:-1])

    def step(_, state):
        A, B = state
        B = B.at[1:-1, 1:-1].set(update(A))
        A = A.at[1:-1, 1:-1].set(update(B))
        return A, B
    return jax.lax.fori_loop(0, tsteps, step, (A, B))
