"""Dtypes and promotion: NumPy 2 rules (NEP 50), Python scalars weak; what the kernels accept."""
from __future__ import annotations

import functools

import numpy as np

bool_ = np.dtype(np.bool_)
int8 = np.dtype(np.int8)
int16 = np.dtype(np.int16)
int32 = np.dtype(np.int32)
int64 = np.dtype(np.int64)
uint8 = np.dtype(np.uint8)
uint16 = np.dtype(np.uint16)
uint32 = np.dtype(np.uint32)
uint64 = np.dtype(np.uint64)
float32 = np.dtype(np.float32)
float64 = np.dtype(np.float64)
complex64 = np.dtype(np.complex64)
complex128 = np.dtype(np.complex128)

INTS = (int8, int16, int32, int64, uint8, uint16, uint32, uint64)
SUPPORTED = (bool_, *INTS, float32, float64, complex64, complex128)
SUPPORTED_SET = frozenset(SUPPORTED)
# (min, max) of every supported integer dtype: the range a Python int must fit to become one
# (frontend/array.py's _IINFO, also read by the C record path)
INT_RANGE = {d: (int(np.iinfo(d).min), int(np.iinfo(d).max)) for d in INTS}


class UnsupportedDType(TypeError):
    """A dtype streamrt cannot compute in (raised by :func:`canonical`; the frontend reports
    it as a DTypeError at the user's line). Nothing is ever widened in its place: a result
    in another dtype than NumPy's would be a silently different answer."""


_canonical: dict = {}    # dtype arguments answered before (``float``, "f4", ...) -> the dtype


def canonical(dt) -> np.dtype:
    """``dt`` as a NumPy dtype if streamrt computes in it, else an :class:`UnsupportedDType`
    (no dtype is replaced by another: float16 is refused, not computed as float32)."""
    try:
        return _canonical[dt]
    except (KeyError, TypeError):       # (not seen, or not hashable)
        pass
    d = np.dtype(dt)
    if d in SUPPORTED_SET:
        try:
            _canonical[dt] = d
        except TypeError:
            pass
        return d
    if d == np.float16:
        raise UnsupportedDType(
            "dtype float16 is not supported by streamrt (its kernels cannot compute float16 "
            "exactly as NumPy does); use float32: .astype(np.float32)")
    raise UnsupportedDType(f"dtype {d} is not supported by streamrt (supported: "
                           f"{', '.join(str(s) for s in SUPPORTED)})")


def is_float(d: np.dtype) -> bool:
    return d.kind == "f"


def is_int(d: np.dtype) -> bool:
    return d.kind in "iu"


_WEAK = {"b": True, "i": 1, "f": 1.0, "c": 1j}


def u64_bits(v) -> int:
    """An unsigned integer as the Python int an int64 kernel parameter carries: its 64-bit
    pattern read as signed (a uint64 above 2**63 - 1 does not fit int64; the kernel's
    ``np.uint64(sc)`` turns the pattern back into the value, and ``np.uint8(sc)`` etc. the
    smaller ones, which pass unchanged)."""
    v = int(v) & 0xFFFFFFFFFFFFFFFF
    return v - (1 << 64) if v >= (1 << 63) else v


# The Python number type of a dtype kind (or of a Python scalar's kind, scalar_kind) -- for the
# unsigned kind the function giving it, u64_bits -- and the dtype Numba gives that number: how
# a kernel's scalar parameter travels (executors/base.py ``kernel_scalar``) and the dtype its
# prologue casts from (proggen/render_numba.py).
PY_NUMBER = {"b": bool, "i": int, "u": u64_bits, "f": float, "c": complex}
PY_NUMBER_DTYPE = {"b": bool_, "i": int64, "u": int64, "f": float64, "c": complex128}


def scalar_kind(v):
    """'b', 'i', 'f', 'c' for Python/NumPy scalars; None otherwise."""
    if isinstance(v, (bool, np.bool_)):
        return "b"
    if isinstance(v, (int, np.integer)):
        return "i"
    if isinstance(v, (float, np.floating)):
        return "f"
    if isinstance(v, (complex, np.complexfloating)):
        return "c"
    return None


@functools.lru_cache(maxsize=4096)
def _ufunc_result(ufunc_name: str, sig: tuple) -> tuple:
    """Ask NumPy itself which dtype its ufunc returns for these operand kinds.

    ``sig`` holds a dtype for an array operand, or 'weak-int'/'weak-float'/'weak-bool' for a
    Python scalar, so promotion is NumPy's own (NEP 50) without re-implementing it.
    """
    uf = getattr(np, ufunc_name)
    args = []
    for s in sig:
        if s == "weak-bool":
            args.append(True)
        elif s == "weak-int":
            args.append(1)
        elif s == "weak-float":
            args.append(1.0)
        elif s == "weak-complex":
            args.append(1j)
        else:
            args.append(np.ones(1, dtype=s))
    with np.errstate(all="ignore"):
        out = uf(*args)
    outs = out if isinstance(out, tuple) else (out,)
    return tuple(np.asarray(o).dtype for o in outs)


def ufunc_result(ufunc_name: str, operands) -> np.dtype:
    sig = []
    for o in operands:
        if isinstance(o, np.dtype):
            sig.append(o)
        else:
            sig.append({"b": "weak-bool", "i": "weak-int", "f": "weak-float",
                        "c": "weak-complex"}[o])
    return _ufunc_result(ufunc_name, tuple(sig))[0]


def result_type(*operands) -> np.dtype:
    """np.result_type over dtypes and weak scalar kinds ('b','i','f')."""
    args = []
    for o in operands:
        if isinstance(o, np.dtype):
            args.append(o)
        else:
            args.append(_WEAK[o])
    return np.result_type(*args)


def weak_scalar_dtype(kind: str, other: np.dtype) -> np.dtype:
    """The dtype a weak Python scalar takes next to an array of dtype ``other``."""
    return result_type(other, kind) if kind != "b" or other == bool_ else other


def default_dtype(kind: str) -> np.dtype:
    return {"b": bool_, "i": int64, "f": float64, "c": complex128}[kind]
