"""OpenCL executor (pyopencl): generated OpenCL C kernels from render_c, device buffers with
counted transfers, asynchronous enqueue on one in-order queue (events bound the work in
flight), device limits read from the device, and fallback to the CPU executor. Tested on PoCL
(pip install pocl-binary-distribution), which needs no GPU."""
from __future__ import annotations

import os
import sys
import threading
import warnings

from ...core.config import cache_dir, make_private_dir, settings
from ..device import BuildError, DeviceExecutor, hold_cache_dir

_BUILD_OPTIONS = ["-cl-fp32-correctly-rounded-divide-sqrt"]


def _setup_env():
    """Keep every OpenCL compiler cache under STREAMRT_CACHE_DIR (set before the first context:
    PoCL reads POCL_CACHE_DIR once); nothing is written to $HOME."""
    base = cache_dir()
    for d in ("pocl", "pyopencl", "pytools"):   # (private: 0700, whatever the umask)
        make_private_dir(os.path.join(base, d))
    os.environ.setdefault("POCL_CACHE_DIR", os.path.join(base, "pocl"))
    _icd_vendors(base)
    return os.path.join(base, "pyopencl")


def _icd_vendors(base):
    """Make Intel's CPU OpenCL runtime visible when pip installed it into this environment
    (``intel-opencl-rt``, the ``opencl-intel`` extra): its wheel's ``.icd`` file names the path
    of the machine it was built on, so the ICD loader cannot find it. A vendors folder under
    STREAMRT_CACHE_DIR lists it beside the system's ICDs (``/etc/OpenCL/vendors``), and
    ``OCL_ICD_VENDORS`` points there -- unless the user set ``OCL_ICD_VENDORS`` already. PoCL
    (pyopencl's own ICD) is found either way. Why it is needed: PoCL's wheel is built with
    LLVM 14, which does not know newer CPUs (AMD Zen 5: every build fails with "unknown target
    CPU 'generic'"); see ``choose_device``."""
    lib = os.path.join(sys.prefix, "lib", "libintelocl.so")
    if "OCL_ICD_VENDORS" in os.environ or not os.path.exists(lib):
        return
    d = os.path.join(base, "icd")
    try:
        make_private_dir(d)
        want = {"streamrt-intel-cpu.icd": lib + "\n"}
        sysdir = "/etc/OpenCL/vendors"
        if os.path.isdir(sysdir):
            for f in os.listdir(sysdir):
                if f.endswith(".icd"):
                    with open(os.path.join(sysdir, f)) as fh:
                        want[f] = fh.read()
        for f, text in want.items():
            path = os.path.join(d, f)
            try:
                with open(path) as fh:
                    if fh.read() == text:
                        continue
            except OSError:
                pass
            with open(path + ".tmp", "w") as fh:
                fh.write(text)
            os.chmod(path + ".tmp", 0o600)
            os.replace(path + ".tmp", path)
    except OSError:
        return
    os.environ["OCL_ICD_VENDORS"] = d


_cl = None
_imp_lock = threading.Lock()


def _import():
    """pyopencl, imported with its own caches (the kernel invoker cache pytools keeps under
    $XDG_CACHE_HOME) directed under STREAMRT_CACHE_DIR."""
    global _cl
    if _cl is not None:
        return _cl
    with _imp_lock:
        if _cl is None:
            base = os.path.dirname(_setup_env())
            # PoCL's cache folder is in use from now on: clear_caches must leave it alone
            hold_cache_dir(os.environ["POCL_CACHE_DIR"])
            old = os.environ.get("XDG_CACHE_HOME")
            os.environ["XDG_CACHE_HOME"] = base
            try:
                # (an optional dependency, imported with its caches redirected)
                import pyopencl as cl
                import pyopencl.invoker     # (as above)
            finally:
                if old is None:
                    os.environ.pop("XDG_CACHE_HOME", None)
                else:
                    os.environ["XDG_CACHE_HOME"] = old
            _cl = cl
    return _cl


def list_devices():
    """[(platform index, device index, platform, device)] of every OpenCL device found."""
    cl = _import()
    out = []
    try:
        plats = cl.get_platforms()
    except cl.Error:
        return out
    for pi, p in enumerate(plats):
        try:
            devs = p.get_devices()
        except cl.Error:
            continue
        for di, d in enumerate(devs):
            out.append((pi, di, p, d))
    return out


def choose_device(spec=""):
    """The device STREAMRT_OPENCL_DEVICE names ("P:D" platform and device index, or a name
    substring); by default the first GPU, else PoCL, else another device -- the first whose
    compiler builds a probe kernel. None if there is none."""
    devs = list_devices()
    if not devs:
        return None
    if spec:
        if ":" in spec and all(x.strip().isdigit() for x in spec.split(":", 1)):
            pi, di = (int(x) for x in spec.split(":", 1))
            for e in devs:
                if e[0] == pi and e[1] == di:
                    return e
            raise RuntimeError(f"STREAMRT_OPENCL_DEVICE={spec!r}: no such device")
        for e in devs:
            if spec.lower() in e[3].name.lower() or spec.lower() in e[2].name.lower():
                return e
        raise RuntimeError(f"STREAMRT_OPENCL_DEVICE={spec!r}: no such device")
    cl = _import()
    # GPUs first, then PoCL (the CPU device the tests run on), then the others; a device whose
    # compiler cannot build a trivial kernel is passed over (PoCL's LLVM 14 on a CPU it does
    # not know fails every build: Intel's CPU runtime, when installed, serves instead)
    order = sorted(devs, key=lambda e: (not e[3].type & cl.device_type.GPU,
                                        "Portable" not in e[2].name))
    for e in order:
        if probe(e[3]) is None:
            return e
    return None


_probed = {}


def probe(dev):
    """None if ``dev``'s compiler builds a trivial kernel, else the build error (a string);
    cached per device for the process."""
    key = dev.int_ptr
    if key not in _probed:
        cl = _import()
        try:
            ctx = cl.Context([dev])
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")     # compiler chatter (Intel's runtime)
                cl.Program(ctx, "__kernel void probe(__global float *a) "
                                "{ a[get_global_id(0)] *= 2.0f; }").build(options=_BUILD_OPTIONS)
            _probed[key] = None
        except Exception as e:  # noqa: BLE001 - any failure: this device cannot serve
            msg = " ".join(str(e).split())
            _probed[key] = msg[-300:]
    return _probed[key]


class OpenCLExecutor(DeviceExecutor):
    name = "opencl"

    def __init__(self, device=None):
        super().__init__()
        cl = self.cl = _import()
        self._pycache = _setup_env()
        e = device or choose_device(settings.opencl_device)
        if e is None:
            raise RuntimeError("no working OpenCL device found" + "".join(
                f"; {x[2].name.strip()}: {x[3].name.strip()}: {probe(x[3])}"
                for x in list_devices()))
        _, _, plat, dev = e
        self.device = dev
        self.device_name = f"{plat.name.strip()}: {dev.name.strip()}"
        self.ctx = cl.Context([dev])
        self.queue = cl.CommandQueue(self.ctx)
        # device limits, read from the device and respected by the launches
        self.max_wg = int(dev.max_work_group_size)
        self.units = int(dev.max_compute_units)
        self.max_alloc = int(dev.max_mem_alloc_size)
        self.global_mem = int(dev.global_mem_size)
        self.max_param_bytes = int(dev.max_parameter_size)
        self.fp64 = bool(dev.double_fp_config) or "cl_khr_fp64" in dev.extensions
        if settings.debug >= 1:
            print(f"[streamrt] opencl: {self.device_name} (units={self.units}, "
                  f"max_work_group={self.max_wg}, fp64={self.fp64}, "
                  f"mem={self.global_mem >> 20} MiB)", file=sys.stderr)

    # ---- primitives ----------------------------------------------------------------------
    def _dev_alloc(self, nbytes):
        cl = self.cl
        try:
            return cl.Buffer(self.ctx, cl.mem_flags.READ_WRITE, nbytes)
        except cl.Error as e:
            raise MemoryError(f"OpenCL allocation of {nbytes} bytes failed: {e}") from e

    def _h2d(self, buf, host):
        self.cl.enqueue_copy(self.queue, buf, host, is_blocking=False)

    def _d2h(self, host, buf):
        self.cl.enqueue_copy(self.queue, host, buf, is_blocking=True)

    def _build(self, source):
        cl = self.cl
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                prg = cl.Program(self.ctx, source).build(options=_BUILD_OPTIONS,
                                                         cache_dir=self._pycache)
        except cl.Error as e:
            raise BuildError(str(e)) from e
        return prg

    def _get_function(self, mod, name):
        return self.cl.Kernel(mod, name)

    def _kernel_max_wg(self, kern):
        cl = self.cl
        try:
            return int(kern.get_work_group_info(cl.kernel_work_group_info.WORK_GROUP_SIZE,
                                                self.device))
        except cl.Error:
            return self.max_wg

    def _enqueue(self, kern, groups, local, args):
        kern.set_args(*args)
        return self.cl.enqueue_nd_range_kernel(self.queue, kern, (groups * local,), (local,))

    def _is_oom(self, e):
        cl = self.cl
        return isinstance(e, (MemoryError, cl.MemoryError)) or (
            isinstance(e, cl.Error) and "MEM_OBJECT_ALLOCATION_FAILURE" in str(e))

    def _wait(self, ev):
        ev.wait()

    def _finish(self):
        self.queue.finish()
