"""The compile worker process: (module file, function, argument types) in on stdin, the
kernel compiled into Numba's disk cache next to the module out, (id, ok, seconds, error) on
stdout. Started by jit.py as ``python -m streamrt.backends.numba_cpu.compile_worker``, so the
application's own script is never imported here (multiprocessing's spawn would run it)."""
from __future__ import annotations

import importlib.util
import os
import pickle
import sys
import time

import numpy as np

from .executor import _setup_numba
from .program_cache import _slp, _write_atomic, private, variant_marker


def numba_types(desc):
    """Numba's types of the arguments described by jit.describe: what numba.typeof gives the
    application's arguments, so the compiled entry is the one its call looks up."""
    import numba            # (Numba: the worker loads it for its first compile)
    out = []
    for d in desc:
        if d[0] == "A":
            _, dt, ndim, writable = d
            out.append(numba.types.Array(numba.from_dtype(np.dtype(dt)), ndim, "C",
                                         readonly=not writable))
        else:
            out.append(numba.typeof({"int": 0, "float": 0.0, "complex": 0j,
                                     "bool": True}[d[1]]))
    return tuple(out)


def compile_one(path, name, fn, desc):
    """Compile ``fn`` of the module at ``path`` for the argument types ``desc`` (Numba writes
    its cache files beside the module, as the application's own first call would)."""
    _setup_numba()
    mod = sys.modules.get(name)
    if mod is None:
        spec = importlib.util.spec_from_file_location(name, path)
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod          # (Numba's cache unpickles the module by name)
        spec.loader.exec_module(mod)
    with _slp():
        getattr(mod, fn).compile(numba_types(desc))
    private(path)
    # (the variant's marker: the next process finds it compiled, even when the application
    # that asked has exited before this compile finished -- jit.py _Service.close)
    _write_atomic(variant_marker(path, fn.endswith("_serial")), "")


def main():
    try:
        os.nice(10)                      # the application comes first on a busy machine
    except OSError:
        pass
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr              # (anything printed goes to stderr, not the protocol)
    while True:
        try:
            req = pickle.load(stdin)
        except EOFError:
            return
        rid, path, name, fn, desc = req
        t0 = time.perf_counter()
        try:
            compile_one(path, name, fn, desc)
            reply = (rid, True, time.perf_counter() - t0, None)
        except BaseException as e:  # noqa: BLE001 - reported, the worker goes on
            if isinstance(e, KeyboardInterrupt):
                return
            reply = (rid, False, time.perf_counter() - t0, f"{type(e).__name__}: {e}"[:2000])
        try:
            pickle.dump(reply, stdout)
            stdout.flush()
        except OSError:              # the application has exited: finish the queue silently
            pass


if __name__ == "__main__":
    main()
