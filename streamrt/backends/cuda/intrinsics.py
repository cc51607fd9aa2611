"""Intrinsics on the CUDA executor with CuPy: the same functions as the CPU's
(proggen/linalg_intrinsics.py) run with ``cupy`` (cuBLAS matmul/einsum, cusolver linalg,
cuFFT, CuPy sort and scans) and ``cupyx.scipy.linalg`` (lu_factor, lu_solve) over the ports'
device buffers: no host round trip. Intrinsics CuPy cannot run (setitem, an unknown op) return
False and take the executor's counted host round trip."""
from __future__ import annotations

import numpy as np

from ...core import stats
from ..linalg_intrinsics import GENERIC


class CupyModules:
    def __init__(self, cp):
        self.np = cp

    @property
    def linalg_sp(self):
        import cupyx.scipy.linalg       # (an optional dependency, as CuPy)
        return cupyx.scipy.linalg


def _as_cupy(ex, port):
    """A CuPy ndarray over ``port``'s device buffer (views keep their offset and strides)."""
    cp = ex.cp
    base, off, st = port.base_view()
    buf = ex.device_buffer(base)
    it = np.dtype(port.dtype).itemsize
    mem = buf.data + off * it if hasattr(buf, "data") else buf
    return cp.ndarray(port.shape, dtype=port.dtype, memptr=mem,
                      strides=tuple(s * it for s in st))


def run(ex, prog):
    """Run intrinsic program ``prog`` on the device; False when CuPy cannot."""
    fns = [GENERIC.get(p.op) for p in prog.ops]
    if not all(fns):
        return False
    cp = ex.cp
    import cupyx        # (an optional dependency, as CuPy)
    mods = CupyModules(cp)
    # CuPy reports a singular matrix only when asked (else inf/nan): raise, as NumPy does
    with ex.dev, ex.stream, cupyx.errstate(linalg="raise"):
        for p, f in zip(prog.ops, fns):
            args = [_as_cupy(ex, i) if i.kind != "scalar" else i.dtype.type(i.scalar)
                    for i in p.inputs]
            r = cp.asarray(f(mods, p, *args))
            out = ex.output_buffer(p)
            dst = cp.ndarray(p.shape, dtype=p.dtype, memptr=out.buf.data)
            dst[...] = r.astype(p.dtype, copy=False).reshape(p.shape)
            with ex.mem_lock:
                out.on_device, out.on_host = True, False
    stats.add("intrinsics_launched")
    return True
