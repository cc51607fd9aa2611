"""CUDA executor (CuPy): generated CUDA C from render_c compiled with ``cupy.RawModule`` (NVRTC),
CuPy device memory, one stream per executor, counted transfers, device limits read from the
device, and the same split / CPU fallback as the OpenCL executor (executors/device.py).
Needs a GPU: where ``cupy.cuda.is_available()`` is False the registry uses the CPU executor."""
from __future__ import annotations

import os
import sys
import threading

import numpy as np

from ...core.config import cache_dir, settings
from ..device import BuildError, DeviceExecutor
from . import intrinsics

_OPTIONS = ("--std=c++11",)
_cp = None
_imp_lock = threading.Lock()


def _import():
    """cupy, with its kernel cache under STREAMRT_CACHE_DIR (CUPY_CACHE_DIR is read at import)."""
    global _cp
    if _cp is None:
        with _imp_lock:
            if _cp is None:
                os.environ.setdefault("CUPY_CACHE_DIR", os.path.join(cache_dir(), "cupy"))
                import cupy         # (an optional dependency; after CUPY_CACHE_DIR is set)
                _cp = cupy
    return _cp


class CUDAExecutor(DeviceExecutor):
    name = "cuda"

    def __init__(self, index=None):
        super().__init__()
        cp = self.cp = _import()
        if not cp.cuda.is_available():
            raise RuntimeError("no CUDA device (cupy.cuda.is_available() is False)")
        self.index = settings.cuda_device if index is None else index
        self.dev = cp.cuda.Device(self.index)
        with self.dev:
            self.stream = cp.cuda.Stream(non_blocking=True)
            attrs = self.dev.attributes
            props = cp.cuda.runtime.getDeviceProperties(self.index)
        name = props["name"]
        self.device_name = name.decode() if isinstance(name, bytes) else str(name)
        self.max_wg = int(attrs.get("MaxThreadsPerBlock", 1024))
        self.units = int(attrs.get("MultiProcessorCount", 1))
        self.global_mem = int(props.get("totalGlobalMem", 1 << 34))
        self.max_alloc = self.global_mem
        self.max_param_bytes = 4096          # CUDA kernel parameter space
        self.fp64 = True
        if settings.debug >= 1:
            print(f"[streamrt] cuda: {self.device_name} (SMs={self.units}, "
                  f"max_threads_per_block={self.max_wg}, mem={self.global_mem >> 20} MiB)",
                  file=sys.stderr)

    # ---- primitives ----------------------------------------------------------------------
    def _dev_alloc(self, nbytes):
        cp = self.cp
        try:
            with self.dev:
                return cp.empty(nbytes, dtype=cp.uint8)
        except cp.cuda.memory.OutOfMemoryError as e:
            raise MemoryError(f"CUDA allocation of {nbytes} bytes failed: {e}") from e

    @staticmethod
    def _bytes(host):
        h = np.ascontiguousarray(host)
        return h.reshape(-1).view(np.uint8)

    def _h2d(self, buf, host):
        with self.dev:
            buf[:host.nbytes].set(self._bytes(host), stream=self.stream)

    def _d2h(self, host, buf):
        with self.dev:
            out = host.reshape(-1).view(np.uint8)
            buf[:host.nbytes].get(stream=self.stream, out=out)
            self.stream.synchronize()

    def _build(self, source):
        cp = self.cp
        try:
            with self.dev:
                mod = cp.RawModule(code=source, options=_OPTIONS)
                if hasattr(mod, "compile"):
                    mod.compile()
                else:                      # older CuPy: compiled on first get_function
                    mod.get_function("sr_map" if "sr_map(" in source else "sr_red")
        except Exception as e:
            raise BuildError(str(e)) from e
        return mod

    def _get_function(self, mod, name):
        with self.dev:
            return mod.get_function(name)

    def _kernel_max_wg(self, kern):
        try:
            return int(kern.max_threads_per_block)
        except Exception:  # noqa: BLE001
            return self.max_wg

    def _enqueue(self, kern, groups, local, args):
        cp = self.cp
        with self.dev, self.stream:
            kern((int(groups),), (int(local),), tuple(args))
            ev = cp.cuda.Event(disable_timing=True)
            ev.record(self.stream)
        return ev

    def _is_oom(self, e):
        return isinstance(e, (MemoryError, self.cp.cuda.memory.OutOfMemoryError))

    def _free_pool(self):
        """Return CuPy's cached (freed but pooled) device blocks to the driver."""
        pool = self.cp.get_default_memory_pool()
        n = int(pool.free_bytes())
        with self.dev:
            pool.free_all_blocks()
        return n

    def _wait(self, ev):
        ev.synchronize()

    def _finish(self):
        self.stream.synchronize()

    # ---- intrinsics with CuPy (intrinsics.py) ---------------------------------------------
    def _host_program(self, prog):
        if not intrinsics.run(self, prog):
            super()._host_program(prog)
