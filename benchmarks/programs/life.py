"""Script: Conway's Game of Life on a uint8 grid with a dead border, Python generation loop."""
import numpy

from ._common import njit

NAME = "life"
SIZES = {"small": {"n": 128, "generations": 50}, "large": {"n": 1024, "generations": 200}}


def inputs(size):
    rng = numpy.random.default_rng(1970)
    n, generations = SIZES[size]["n"], SIZES[size]["generations"]
    Z = (rng.random((n, n)) < 0.3).astype(numpy.uint8)
    Z[0, :] = Z[-1, :] = Z[:, 0] = Z[:, -1] = 0
    return (Z, generations)


def kernel(np, Z, generations):
    Z = Z.copy()
    for _ in range(generations):
        N = (Z[:-2, :-2] + Z[:-2, 1:-1] + Z[:-2, 2:]
             + Z[1:-1, :-2] + Z[1:-1, 2:]
             + Z[2:, :-2] + Z[2:, 1:-1] + Z[2:, 2:])
        birth = (N == 3) & (Z[1:-1, 1:-1] == 0)
        survive = ((N == 2) | (N == 3)) & (Z[1:-1, 1:-1] == 1)
        Z[1:-1, 1:-1] = birth | survive
    return Z


@njit
def numba_kernel(Z, generations):
    n, m = Z.shape
    Z = Z.copy()
    new = Z.copy()
    for _ in range(generations):
        for i in range(1, n - 1):
            for j in range(1, m - 1):
                k = (Z[i - 1, j - 1] + Z[i - 1, j] + Z[i - 1, j + 1] + Z[i, j - 1]
                     + Z[i, j + 1] + Z[i + 1, j - 1] + Z[i + 1, j] + Z[i + 1, j + 1])
                new[i, j] = 1 if k == 3 or (k == 2 and Z[i, j] == 1) else 0
        Z[:, :] = new
    return Z


def jax_kernel(jnp, Z, generations):
    import jax

    def step(_, Z):
        N = (Z[:-2, :-2] + Z[:-2, 1:-1] + Z[:-2, 2:] + Z[1:-1, :-2] + Z[1:-1, 2:]
             + Z[2:, :-2] + Z[2:, 1:-1] + Z[2:, 2:])
        alive = (N == 3) | ((N == 2) & (Z[1:-1, 1:-1] == 1))
        return Z.at[1:-1, 1:-1].set(alive.astype(Z.dtype))
    return jax.lax.fori_loop(0, generations, step, Z)
