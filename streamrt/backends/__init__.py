"""Backends: one folder per device kind (numba_cpu, opencl, cuda, reference) with its renderer or
C dialect, runtime helpers, compile step and executor; what they share (the executor
interface, the C renderer, host intrinsics, device discovery)."""
