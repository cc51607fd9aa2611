"""Every cache key is built here: what changes generated code enters, nothing else does."""
from __future__ import annotations

import functools
import os
import sys

import numpy

from .config import FLAGS, settings

try:
    from _blake2 import blake2b     # (0.2 ms to import; hashlib's OpenSSL: 2-3 ms)
except ImportError:                 # (a Python built without it)
    from hashlib import blake2b


@functools.lru_cache(maxsize=1)
def compiler_versions() -> str:
    """Compiler versions and the helpers generated kernels inline (backends/numba_cpu/lib.py,
    vecmath.py, rng.py and core/rngcore.py): a change to any must not load kernels compiled
    before it. Numba's version is read from its metadata: importing Numba costs ~0.5 s, and
    a key is needed before any kernel is (the compiled tier: backends/numba_cpu/jit.py)."""
    nv = _numba_version()
    pkg = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    libs = []
    for lib in (("backends", "numba_cpu", "lib.py"), ("backends", "numba_cpu", "vecmath.py"),
                ("backends", "numba_cpu", "rng.py"), ("core", "rngcore.py")):
        with open(os.path.join(pkg, *lib), "rb") as f:
            libs.append(f"{lib[-1][:-3]}={_hash(f.read()).hexdigest()[:12]}")
    return f"numba={nv};numpy={numpy.__version__};" + ";".join(libs)


def _numba_version() -> str:
    """Numba's installed version, from its dist-info folder's name beside the package
    (importlib.metadata costs ~60 ms to import: a first run's whole budget); the metadata
    when that folder is not found."""
    import importlib.util   # (cheap: importlib's own machinery)
    spec = importlib.util.find_spec("numba")
    if spec is None or not spec.origin:
        return "none"
    site = os.path.dirname(os.path.dirname(spec.origin))
    try:
        found = [e.name[len("numba-"):-len(".dist-info")] for e in os.scandir(site)
                 if e.name.startswith("numba-") and e.name.endswith(".dist-info")]
    except OSError:
        found = []
    if len(found) == 1:
        return found[0]
    import importlib.metadata   # (an unusual install: ask the metadata)
    try:
        return importlib.metadata.version("numba")
    except importlib.metadata.PackageNotFoundError:
        return "none"


def _hash(data=b""):
    """A BLAKE2b hash object (20-byte digest), from CPython's own _blake2 module: importing
    hashlib loads OpenSSL, ~2-3 ms, which a first run paid at its first kernel."""
    return blake2b(data, digest_size=20)


def program_key(backend: str, device: str, source: str, flags: str = "") -> str:
    h = _hash()
    for part in (backend, device, compiler_versions(), flags, source):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()[:24]


# ---- trace keys -----------------------------------------------------------------------------
# One small entry per work-queue compute entry, built when the op is recorded. Inputs are
# numbered by first occurrence within the key, so the same code run on new arrays gives the
# same key; scalar *values* are kernel parameters and never enter it.

def _hashable(params):
    try:
        hash(params)
        return params
    except TypeError:
        return repr(params)


def _external(port, num, kports):
    """Descriptor of a port this trace reads but did not compute (numbered on first use)."""
    num[port.id] = len(kports)
    kports.append(port)
    kind = port.kind
    if kind == "scalar":
        return ("S", port.dtype, port.params)
    if kind == "view":
        base = port.inputs[0]
        b = num.get(base.id)
        if b is None:
            b = _external(base, num, kports)
        return ("V", port.dtype, port.shape, port.params, b)
    if kind == "const" and port.params:       # a scratch buffer (frontend/shape.py)
        return ("X", port.dtype, port.shape, port.params)
    return ("X", port.dtype, port.shape)


def trace_entry(port, num, kports):
    """The key entry of one recorded op; assigns numbers to its new inputs and to itself."""
    get = num.get
    ins = []
    for i in port.inputs:           # (a loop, not a comprehension: this runs for every op)
        n = get(i.id)
        ins.append(n if n is not None else _external(i, num, kports))
    num[port.id] = len(kports)
    kports.append(port)
    s = port.site
    params = port.params
    # id(code): the cached template keeps the code object alive (through its call sites), so
    # the id cannot be reused while the key is cached; hashing a code object is much slower.
    return (id(s.code), s.lasti, port.kind, port.op, _hashable(params) if params else params,
            port.dtype, port.shape, port.loop_dtype, tuple(ins))


class KParts(tuple):
    """A trace's key entries as one tuple that hashes once (``KParts.of``). The trace cache
    offers the one its stored key holds to the work queue, which follows it while recording
    (scheduler/workqueue.py): a flush whose entries all matched takes that very object, so
    its key compares with the stored one by identity."""

    def __hash__(self):
        return self.h

    @classmethod
    def of(cls, entries):
        k = cls(entries)
        k.h = tuple.__hash__(k)
        return k


def kparts_of(kparts) -> KParts:
    return kparts if type(kparts) is KParts else KParts.of(kparts)


class TraceKey(tuple):
    """A trace-cache key (settings, key entries, released flags, macro key) that hashes once:
    a lookup, its LRU bookkeeping and an insert probe several dicts with the same key, and
    hashing a few hundred entries costs ~10 us each time."""

    def __hash__(self):
        return self.h


def trace_key(backend, kparts, released, macro_key, kports=(), reusable=frozenset()) -> TraceKey:
    """The trace-cache key of a flush. ``reusable`` (ids of computed bases its region writes
    may write in place: runtime/cscheduler.reusable_bases) changes the code: their numbers
    among ``kports`` join the released flags."""
    if reusable:
        released += (tuple(i for i, p in enumerate(kports) if p.id in reusable),)
    k = TraceKey((settings_key(backend), kparts_of(kparts), released, macro_key))
    k.h = tuple.__hash__(k)
    return k


# ---- kernel-group keys (one flush: compiler.generate's memo of kernel programs) -----------

def group_key(ops, stored, inplace, space, axes):
    """(key, numbered ports) of one fusion group -- its ops' trace-key entries numbered within
    the group, and what the passes decided for it (which ops it stores, which region writes
    reuse their base, its space and reduced axes) -- or None for an op without a call site.
    Two groups of a flush with one key compile to the same kernel (compiler.generate)."""
    num, kports = {}, []
    try:
        entries = tuple([trace_entry(p, num, kports) for p in ops])
    except AttributeError:               # an op without a call site (none is keyed)
        return None
    return (entries, tuple([p.id in stored for p in ops]), tuple([p.id in inplace for p in ops]),
            tuple(space), tuple(axes or ())), kports


# ---- shape-generic trace keys -----------------------------------------------------------------
# A loop whose slice bounds change every iteration (a triangular loop: LU, syrk, Cholesky) makes
# a new trace key every iteration. Its generic key keeps everything of the trace but the sizes:
# each dim as 0, 1 or "more" (broadcasting and empty arrays change the code), each view's and
# region's strides as 0, 1, positive or negative, no offsets. The trace cache keeps one template
# per generic key, which compiler.reshape re-derives for the new ports.

def _dims(shape):
    return tuple([d if d < 2 else 2 for d in shape])


def stride_classes(st):
    """Strides as the generated code sees them: 0 and 1 (written as literals) and the sign of
    the others (compiler.signature uses the same classes)."""
    return tuple([s if s == 0 or s == 1 else (2 if s > 0 else -2) for s in st])


def _generic_desc(d):
    if type(d) is int:
        return d
    if d[0] == "V":                 # ("V", dtype, shape, (offset, strides), base)
        return ("V", d[1], _dims(d[2]), stride_classes(d[3][1]), d[4])
    if d[0] == "X":
        return ("X", d[1], _dims(d[2])) + d[3:]
    return d


def _generic_entry(e):
    code, lasti, kind, op, params, dtype, shape, loop, ins = e
    if kind == "view":
        params = stride_classes(params[1])
    elif op == "update" and kind == "intrinsic":
        params = (_dims(params[1]), stride_classes(params[2]))
    return (code, lasti, kind, op, params, dtype, _dims(shape), loop,
            tuple([_generic_desc(d) for d in ins]))


def _desc_but_offset(d):
    if type(d) is tuple and d[0] == "V":    # ("V", dtype, shape, (offset, strides), base)
        return ("V", d[1], d[2], d[3][1], d[4])
    return d


def same_but_offsets(a: TraceKey, b: TraceKey) -> bool:
    """Whether trace keys ``a`` and ``b`` differ at most in their views' offsets (a window
    sliding over an array: ``x[k:k + m]``, ``path[:, k:k + 1]``), with no region write among
    their ops (a region's offset decides whether it may be written in place). The template
    of one then serves the other with only its kernels' offsets changed
    (compiler.reoffset)."""
    if a[0] != b[0] or a[2] != b[2] or a[3] != b[3] or len(a[1]) != len(b[1]):
        return False
    for ea, eb in zip(a[1], b[1]):
        if ea == eb:
            if ea[3] == "update" and ea[2] == "intrinsic":
                return False
            continue
        if ea[:4] != eb[:4] or ea[5:8] != eb[5:8] or ea[3] == "update":
            return False
        if ea[2] == "view":
            if ea[4][1] != eb[4][1]:
                return False
        elif ea[4] != eb[4]:
            return False
        ia, ib = ea[8], eb[8]
        if len(ia) != len(ib) or any(x != y and _desc_but_offset(x) != _desc_but_offset(y)
                                     for x, y in zip(ia, ib)):
            return False
    return True


def generic_key(key: TraceKey) -> TraceKey:
    """The shape-generic form of a trace key (see above)."""
    k = TraceKey((key[0], tuple([_generic_entry(e) for e in key[1]]), key[2], key[3]))
    k.h = tuple.__hash__(k)
    return k


def placement_key(kparts) -> tuple:
    """The trace a measured run time belongs to (scheduler/placement.py): its key entries and
    the code-changing settings, without the executor (times are kept per trace and executor)."""
    return (settings_key(""), kparts_of(kparts))


def settings_key(backend: str) -> tuple:
    """The settings that change generated code (part of every trace and macro key); kept per
    thread until a setting changes (config._invalidate / override drop it)."""
    d = settings.__dict__
    memo = d.get("_settings_key")
    if memo is None:
        memo = d["_settings_key"] = {}
    k = memo.get(backend)
    if k is None:
        k = memo[backend] = (backend,) + tuple(getattr(settings, n) for n, f in FLAGS.items()
                                               if f.in_key)
    return k


def discovery_key() -> list:
    """What a device discovery kept on disk holds for (runtime/placement.py): this
    interpreter, this machine, its core count and import path."""
    return [sys.executable, os.uname().nodename, os.cpu_count(), os.environ.get("PYTHONPATH")]
