"""The CUDA backend: the shared C renderer in the CUDA dialect, kernels built by CuPy (NVRTC),
intrinsics with CuPy over device buffers."""
