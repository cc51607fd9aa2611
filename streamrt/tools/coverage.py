"""NumPy coverage: every public name of NumPy's namespace and of ``ndarray``, with what
streamrt does with it -- lazy, a constant made at the call, a host function, NumPy's with a
one-time warning (the ``__array_function__`` / ``__array_ufunc__`` fallback), or not
provided and why. ``python -m streamrt.tools.coverage > docs/numpy_coverage.md`` writes the
table; tests/test_numpy_coverage.py fails when it is out of date. ``ps.<name>`` of a name
not provided raises an AttributeError naming the user's line and the reason (``reason``)."""
from __future__ import annotations

import types

import numpy as np

from ..frontend import creation as _creation, numeric as _numeric
from ..frontend.array import Array

LAZY = "lazy"
CONSTANT = "constant"
HOST = "host"
READ = "read"
FALLBACK = "numpy+warning"
MISSING = "not provided"

# names streamrt provides that are computed at the call rather than recorded
_CONSTANT_FUNCS = set(_creation.__all__) | {"identity", "mgrid", "ogrid", "indices",
                                             "logspace", "geomspace"}
# functions of other modules whose result's length depends on the values: computed at the call
_HOST_ELSEWHERE = {"unique", "nonzero", "argwhere", "flatnonzero"}
_READS = {"allclose", "array_equal", "iscomplexobj", "isrealobj", "array_equiv", "ndim", "shape", "size", "isscalar",
          "iterable", "may_share_memory", "shares_memory", "result_type", "can_cast"}
_NOT_ARRAYS = {"errstate", "geterr", "seterr", "geterrcall", "seterrcall", "dtype", "finfo",
               "iinfo"}

# NumPy names not provided, with a reason more precise than their category's
REASONS = {
    "frombuffer": "raw bytes: np.frombuffer(...) then ps.asarray",
    "fromfile": "file input: np.fromfile(...) then ps.asarray",
    "fromiter": "an iterator is consumed in Python: np.fromiter(...) then ps.asarray",
    "fromstring": "text input: np.fromstring(...) then ps.asarray",
    "fromregex": "file input: NumPy's, then ps.asarray",
    "loadtxt": "file input: NumPy's, then ps.asarray",
    "genfromtxt": "file input: NumPy's, then ps.asarray",
    "load": "file input: NumPy's, then ps.asarray",
    "save": "file output: np.save(path, np.asarray(a))",
    "savez": "file output: NumPy's on np.asarray(a)",
    "savez_compressed": "file output: NumPy's on np.asarray(a)",
    "savetxt": "file output: NumPy's on np.asarray(a)",
    "memmap": "memory-mapped files: NumPy's, then ps.asarray",
    "float16": "a dtype streamrt does not support (never widened silently)",
    "half": "a dtype streamrt does not support (never widened silently)",
    "longdouble": "a dtype streamrt does not support",
    "clongdouble": "a dtype streamrt does not support",
    "object_": "object arrays are not supported",
    "str_": "string arrays are not supported",
    "bytes_": "byte-string arrays are not supported",
    "void": "structured dtypes are not supported",
    "datetime64": "datetime arrays are not supported",
    "timedelta64": "timedelta arrays are not supported",
    "matrix": "the matrix class is deprecated in NumPy; use 2-d arrays and @",
    "recarray": "record arrays are not supported",
    "record": "record arrays are not supported",
    "char": "string functions: string arrays are not supported",
    "strings": "string functions: string arrays are not supported",
    "rec": "record arrays are not supported",
    "ma": "masked arrays are not supported (use where= or ps.where)",
    "ctypeslib": "raw pointers: the data may be on a device or not yet computed",
    "nditer": "element iteration in Python: iterate np.asarray(a)",
    "ndenumerate": "element iteration in Python: iterate np.asarray(a)",
    "ndindex": "index iteration in Python: NumPy's works (it takes shapes, not arrays)",
    "nested_iters": "element iteration in Python",
    "broadcast": "NumPy's broadcast object: use ps.broadcast_arrays / ps.broadcast_shapes",
    "vectorize": "calls a Python function per element: write it with array operations (or "
                 "@ps.macro)",
    "frompyfunc": "calls a Python function per element",
    "set_printoptions": "NumPy's printing options apply (streamrt prints through NumPy)",
    "get_printoptions": "NumPy's printing options apply (streamrt prints through NumPy)",
    "printoptions": "NumPy's printing options apply (streamrt prints through NumPy)",
}


def _kind_of_missing(name, obj):
    """(status, reason) of a NumPy name streamrt does not define."""
    if isinstance(obj, np.ufunc) or hasattr(obj, "_implementation"):
        return FALLBACK, ("NumPy's dispatch hands streamrt arrays to streamrt, which "
                          "materialises them and runs NumPy's (a one-time RuntimeWarning; "
                          "STREAMRT_STRICT=1 makes it an error)")
    if name in REASONS:
        return MISSING, REASONS[name]
    if isinstance(obj, types.ModuleType):
        return MISSING, "a NumPy submodule streamrt has no counterpart of"
    if isinstance(obj, type):
        if issubclass(obj, BaseException):
            return MISSING, "a NumPy exception class: streamrt raises NumPy's and its own"
        if issubclass(obj, np.generic):
            return MISSING, "a NumPy scalar type: streamrt's dtypes are ps.float64, ... " \
                            "(core/dtypes.py)"
        return MISSING, "a NumPy class: use numpy's"
    if callable(obj):
        return MISSING, ("takes no array NumPy could dispatch on: call numpy's and "
                         "ps.asarray the result")
    return MISSING, "a NumPy constant or setting: use numpy's"


def reason(name):
    """Why ``ps.<name>`` is not provided (None: not a NumPy name)."""
    obj = getattr(np, name, None)
    if obj is None and name not in dir(np):
        return None
    return _kind_of_missing(name, obj)[1]


def numpy_names():
    return sorted(n for n in dir(np) if not n.startswith("_"))


def ndarray_names():
    return sorted(n for n in dir(np.ndarray) if not n.startswith("_"))


def status(ps, name):
    """(status, note) of NumPy's ``name`` in the streamrt namespace ``ps``."""
    obj = getattr(np, name, None)
    if name in ps.__dict__:
        mine = ps.__dict__[name]
        if isinstance(mine, types.ModuleType):
            return LAZY, f"streamrt.{name}: its own module (docs/guide.md)"
        if name in _numeric.HOST_FUNCTIONS or name in _HOST_ELSEWHERE:
            return HOST, "NumPy's on the host at the call (a read of its inputs)"
        if name in _CONSTANT_FUNCS:
            return CONSTANT, "made at the call (NumPy's, with errors at the user's line)"
        if name in _READS:
            return READ, "answers a Python value (reads when it needs the data)"
        if name in _NOT_ARRAYS or isinstance(mine, type) or not callable(mine):
            return LAZY, "the same object or value as NumPy's"
        return LAZY, ""
    return _kind_of_missing(name, obj)


def method_status(name):
    """(status, note) of ``ndarray.<name>`` on a streamrt Array."""
    attr = next((k.__dict__[name] for k in Array.__mro__ if name in k.__dict__), None)
    missing = isinstance(attr, property) and attr.fget.__qualname__.startswith("_missing")
    if attr is not None and not missing:
        if name in ("item", "tolist", "tobytes", "__array__"):
            return READ, "a read"
        return LAZY, ""
    return MISSING, _numeric.NOT_PROVIDED_METHODS.get(name, "not provided by streamrt arrays")


def table(ps):
    """docs/numpy_coverage.md."""
    rows = [(n, *status(ps, n)) for n in numpy_names()]
    mrows = [(n, *method_status(n)) for n in ndarray_names()]
    counts = {}
    for _, s, _ in rows:
        counts[s] = counts.get(s, 0) + 1
    out = [
        "# NumPy coverage",
        "",
        f"Every public name of NumPy {np.__version__}'s namespace and of `ndarray`, and what "
        "streamrt does with it. Generated by `python -m streamrt.tools.coverage > "
        "docs/numpy_coverage.md`; `tests/test_numpy_coverage.py` fails when this file is out "
        "of date. See the [user guide](guide.md#numpy-coverage).",
        "",
        "* **lazy** -- recorded and fused (or, for small computed arrays, run at once on the "
        "NumPy tier); also dtypes and constants that are NumPy's own objects.",
        "* **constant** -- creation functions: NumPy makes the values at the call (errors "
        "name the user's line); what is computed from them is lazy.",
        "* **host** -- a *host function*: NumPy's runs on the host at the call, on the "
        "materialised inputs (a read), and answers streamrt arrays; no warning.",
        "* **read** -- answers a Python value, so it reads (waits for) its inputs.",
        "* **numpy+warning** -- not in `streamrt`'s namespace; called as `np.<name>(a)` on "
        "a streamrt array, NumPy's dispatch hands it to streamrt, which materialises the "
        "inputs and runs NumPy's (a one-time RuntimeWarning at the user's line; "
        "`STREAMRT_STRICT=1` makes it an error). `ps.<name>` raises AttributeError.",
        "* **not provided** -- `ps.<name>` raises an AttributeError naming the user's "
        "file:line and the reason below.",
        "",
        "Counts: " + ", ".join(f"{k} {counts.get(k, 0)}" for k in
                               (LAZY, CONSTANT, HOST, READ, FALLBACK, MISSING)) + ".",
        "",
        "## `numpy.*`",
        "",
        "| name | status | note |",
        "|------|--------|------|",
    ]
    out += [f"| `{n}` | {s} | {note} |" for n, s, note in rows]
    out += ["", "## `ndarray` methods and attributes", "",
            "| name | status | note |", "|------|--------|------|"]
    out += [f"| `{n}` | {s} | {note} |" for n, s, note in mrows]
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    import streamrt      # (the namespace the table describes: this script runs above it)
    print(table(streamrt), end="")
