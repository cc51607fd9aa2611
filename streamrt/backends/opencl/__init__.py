"""The OpenCL backend: the shared C renderer in the OpenCL dialect, kernels built by pyopencl
(PoCL in CI), device buffers and launches (backends/device.py)."""
