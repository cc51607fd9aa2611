"""The Numba CPU backend: kernels rendered as Python source, compiled by Numba (parallel,
nogil), cached on disk by the program cache."""
