"""Real NumPy-style programs for benchmarks/programs.py: PolyBench/C 4.2 kernels and scripts.

Each module has ``NAME``, ``SIZES`` ({"small": {...}, "large": {...}}), ``inputs(size)``,
``kernel(np, *inputs)`` (written against the array namespace passed as ``np``) and, for
some, ``numba_kernel(*inputs)`` and ``jax_kernel(jnp, *inputs)``. Modules are listed here by
name and imported only when run, so a worker imports just the program it measures."""

POLYBENCH = (
    "correlation", "covariance",
    "mm2", "mm3", "atax", "bicg", "doitgen", "mvt",
    "gemm", "gemver", "gesummv", "symm", "syr2k", "syrk", "trmm",
    "cholesky", "durbin", "gramschmidt", "lu", "ludcmp", "trisolv",
    "deriche", "floyd_warshall", "nussinov",
    "adi", "fdtd_2d", "heat_3d", "jacobi_1d", "jacobi_2d", "seidel_2d",
)
SCRIPTS = ("lorenz", "heat2d", "smith_waterman", "montecarlo", "mlp", "life", "nbody")
MODULES = POLYBENCH + SCRIPTS
