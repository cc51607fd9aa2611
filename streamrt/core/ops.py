"""The single op table: every map and reduction op declared once (dtype rule, NumPy reference,
kernel expression template, identity, instruction estimate). Everything else looks ops up here."""
from __future__ import annotations

import functools

import numpy as np

from . import dtypes as D, rngcore
from .config import settings

Template = "str | Callable[[np.dtype, tuple[str, ...]], str]"


class Op:
    """One element-wise op of the table (a plain class: @dataclass cost ~1 ms of import)."""

    __slots__ = ("name", "kind", "arity", "ufunc", "ref", "numba", "cost", "loop", "float_tol",
                 "aliases", "counter", "dtypes", "quad", "truth")

    def __init__(self, name, kind, arity, ufunc, ref, numba, cost=1, loop="out",
                 float_tol=False, aliases=(), counter=False, dtypes=None, quad=None,
                 truth=False):
        self.name = name            # streamrt name (ps.<name>) and IR op name
        self.kind = kind            # 'map' | 'reduce'
        self.arity = arity
        self.ufunc = ufunc          # NumPy ufunc this op is (dtype rule, __array_ufunc__ dispatch)
        self.ref = ref              # NumPy reference: the reference executor and the tests
        self.numba = numba          # template: "{0} + {1}" or callable(loop_dtype, args) -> str
        self.cost = cost            # instruction estimate per element (profiler weights, splits)
        self.loop = loop            # dtype the inputs are cast to: 'out' (result dtype) or 'in'
        self.float_tol = float_tol  # compared with a ulp tolerance (transcendentals), else exactly
        self.aliases = aliases
        self.counter = counter      # counter-based RNG: scalar inputs passed uncast + flat index
        self.dtypes = dtypes        # (operand dtypes) -> (result, loop): ops that are no ufunc
        self.quad = quad            # counter op: template of the Numba helper giving the values
                                    # of flat indices i .. i + 3 at once (ctr + i a multiple of
                                    # 4: one Philox block feeds several values), or None
        self.truth = truth          # only its operands' truth counts (logical ops): a Python
                                    # int outside the loop dtype's range is taken as 0 or 1,
                                    # as NumPy's logical loops take any C long

    def __repr__(self):
        return f"Op({self.name!r})"


OPS: dict[str, Op] = {}


def _op(name, kind, arity, numba, ufunc=None, ref=None, **kw):
    ufunc = ufunc if ufunc is not None else (name if hasattr(np, name) and
                                             isinstance(getattr(np, name), np.ufunc) else None)
    ref = ref if ref is not None else getattr(np, ufunc or name)
    OPS[name] = Op(name, kind, arity, ufunc, ref, numba, **kw)


def _dt(d: np.dtype) -> str:
    """Name of the Numba/NumPy scalar constructor for a dtype."""
    return "np.bool_" if d == D.bool_ else f"np.{d.name}"


def by_dtype(int_t, float_t, bool_t=None, uint_t=None):
    """A template by the loop dtype's kind; ``uint_t``: the unsigned integers' (default
    ``int_t``), whose helpers compute in uint64 -- Numba mixes uint64 with an int64 value or
    literal into float64 (executors/cpu_lib.py)."""
    def render(dt, a):
        if dt == D.bool_ and bool_t is not None:
            return bool_t.format(*a)
        if dt.kind == "u" and uint_t is not None:
            return uint_t.format(*a)
        return (float_t if dt.kind in "fc" else int_t).format(*a)
    return render


# ---- arithmetic ---------------------------------------------------------------------------
_op("add", "map", 2, by_dtype("({0} + {1})", "({0} + {1})", "({0} or {1})"))
_op("subtract", "map", 2, "({0} - {1})")
_op("multiply", "map", 2, by_dtype("({0} * {1})", "({0} * {1})", "({0} and {1})"))
_op("divide", "map", 2, "({0} / {1})", ufunc="divide", ref=np.true_divide, aliases=("true_divide",))
_op("floor_divide", "map", 2, by_dtype("_ifloordiv({0}, {1})", "_ffloordiv({0}, {1})",
                                      uint_t="_ufloordiv({0}, {1})"))
_op("remainder", "map", 2, by_dtype("_imod({0}, {1})", "_fmod({0}, {1})",
                                    uint_t="_umod({0}, {1})"), aliases=("mod",))
_op("power", "map", 2, by_dtype("_ipow({0}, {1})", "({0} ** {1})", uint_t="_upow({0}, {1})"),
    cost=20, float_tol=True, aliases=("pow",))
_op("negative", "map", 1, "(-{0})")
_op("positive", "map", 1, "({0})")
_op("absolute", "map", 1, by_dtype("abs({0})", "abs({0})", "({0})"), aliases=("abs",), loop="in")
_op("square", "map", 1, by_dtype("({0} * {0})", "({0} * {0})", "({0} and {0})"))
_op("reciprocal", "map", 1, by_dtype("_irecip({0})", "(1.0 / {0})", uint_t="_urecip({0})"))
_op("sign", "map", 1, by_dtype("_isign({0})", "_fsign({0})"))
# ---- comparisons (loop over the promoted input dtype, result bool) ---------------------------
for _n, _s in (("equal", "=="), ("not_equal", "!="), ("less", "<"), ("less_equal", "<="),
               ("greater", ">"), ("greater_equal", ">=")):
    _op(_n, "map", 2, "({0} %s {1})" % _s, loop="in")
# ---- logical and bitwise ------------------------------------------------------------------
_op("logical_and", "map", 2, "(({0} != 0) and ({1} != 0))", loop="in", truth=True)
_op("logical_or", "map", 2, "(({0} != 0) or ({1} != 0))", loop="in", truth=True)
_op("logical_xor", "map", 2, "(({0} != 0) != ({1} != 0))", loop="in", truth=True)
_op("logical_not", "map", 1, "({0} == 0)", loop="in")
_op("bitwise_and", "map", 2, "({0} & {1})")
_op("bitwise_or", "map", 2, "({0} | {1})")
_op("bitwise_xor", "map", 2, "({0} ^ {1})")
_op("invert", "map", 1, by_dtype("(~{0})", "(~{0})", "(not {0})"), aliases=("bitwise_not", "bitwise_invert"))
_op("left_shift", "map", 2,
    lambda dt, a: f"_{'u' if dt.kind == 'u' else ''}shl({a[0]}, {a[1]}, {dt.itemsize * 8})",
    aliases=("bitwise_left_shift",))
_op("right_shift", "map", 2,
    lambda dt, a: f"_{'u' if dt.kind == 'u' else ''}shr({a[0]}, {a[1]}, {dt.itemsize * 8})",
    aliases=("bitwise_right_shift",))
# ---- selection ----------------------------------------------------------------------------
_op("maximum", "map", 2, "({0} if ({0} >= {1} or {0} != {0}) else {1})")
_op("minimum", "map", 2, "({0} if ({0} <= {1} or {0} != {0}) else {1})")
_op("fmax", "map", 2, "({0} if ({0} >= {1} or {1} != {1}) else {1})")
_op("fmin", "map", 2, "({0} if ({0} <= {1} or {1} != {1}) else {1})")
_op("where", "map", 3, "({1} if {0} else {2})", ufunc=None, ref=np.where)
_op("astype", "map", 1, "({0})", ufunc=None, ref=lambda a, dtype: np.asarray(a).astype(dtype))
# ---- exponents, logarithms, roots, rounding ----------------------------------------------
_ident_int = "({0})"
for _n, _c in (("exp", 20), ("exp2", 20), ("expm1", 20), ("log", 20), ("log2", 20),
               ("log10", 20), ("log1p", 20), ("sqrt", 4), ("cbrt", 20)):
    _op(_n, "map", 1, f"np.{_n}({{0}})", cost=_c, float_tol=True)
for _n in ("floor", "ceil", "trunc", "rint"):
    _op(_n, "map", 1, by_dtype(_ident_int, f"np.{_n}({{0}})", _ident_int))
_op("isnan", "map", 1, by_dtype("False", "np.isnan({0})", "False"), loop="in")
_op("isinf", "map", 1, by_dtype("False", "np.isinf({0})", "False"), loop="in")
_op("isfinite", "map", 1, by_dtype("True", "np.isfinite({0})", "True"), loop="in")
# ---- trigonometric and hyperbolic ---------------------------------------------------------
for _n in ("sin", "cos", "tan", "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh",
           "arcsinh", "arccosh", "arctanh"):
    _op(_n, "map", 1, f"np.{_n}({{0}})", cost=20, float_tol=True,
        aliases=(_n.replace("arc", "a"),) if _n.startswith("arc") else ())
OPS["tanh"].numba = lambda dt, a: f"_ctanh({a[0]})" if dt.kind == "c" else f"np.tanh({a[0]})"


def _erf_dtypes(operands):
    """scipy.special.erf's dtypes: float32 stays float32, every other real (bool, integers,
    float64, Python scalars) gives float64; complex is refused."""
    (o,) = operands
    kind = o.kind if isinstance(o, np.dtype) else o
    if kind == "c":
        raise TypeError("erf of a complex argument is not supported (scipy.special.erf is; "
                        "streamrt's erf is real only)")
    out = D.float32 if o == D.float32 else D.float64
    return out, out


def _erf_ref(x):
    from scipy.special import erf      # (~100 ms to import: only when erf is evaluated)
    if np.asarray(x).dtype.kind == "c":
        raise TypeError("erf: complex argument")
    return erf(x)


# the ufunc name is scipy.special.erf's: that ufunc applied to an Array records this op
_op("erf", "map", 1, "_erf_libm({0})", ufunc="erf", ref=_erf_ref, cost=30, float_tol=True,
    dtypes=_erf_dtypes)
_op("arctan2", "map", 2, "np.arctan2({0}, {1})", cost=25, float_tol=True, aliases=("atan2",))
_op("hypot", "map", 2, "np.hypot({0}, {1})", cost=10, float_tol=True)
# ---- sign bits (NumPy's loops are float only: integer inputs compute in float64) --------------
_op("copysign", "map", 2, "np.copysign({0}, {1})", cost=2)
_op("signbit", "map", 1, by_dtype("({0} < 0)", "np.signbit({0})", "False", uint_t="False"),
    loop="in")
# ---- counter-based random numbers (streamrt/rngcore.py, streamrt/random.py) -----------------
# No array inputs (arity 0): the inputs are int64 scalar kernel parameters -- key, counter base
# (integers: also low and range) -- and the kernel appends the element's flat index, so the
# numbers are computed where they are consumed. Not in the public namespace.
def _rng_ops():
    def quad_uni(dt, a):
        return f"_rngq_uniform_{'f32' if dt == D.float32 else 'f64'}({', '.join(a)})"

    for g, gen in enumerate(rngcore.GENERATORS):
        def uni(dt, a, g=g):
            return f"_rng_uniform_{'f32' if dt == D.float32 else 'f64'}({g}, {', '.join(a)})"
        philox = gen == "philox"      # (a Squares value is its own hash: nothing to share)
        _op(f"random_uniform_{gen}", "map", 0, uni, ufunc=None, cost=30, counter=True,
            ref=lambda key, ctr, shape, dtype, gen=gen: rngcore.uniform01(gen, key, ctr, shape,
                                                                           dtype),
            quad=quad_uni if philox else None)
        _op(f"random_normal_{gen}", "map", 0, f"_rng_normal({g}, {{0}}, {{1}}, {{2}})",
            ufunc=None, cost=60, counter=True,
            ref=lambda key, ctr, shape, dtype, gen=gen: rngcore.normal(gen, key, ctr, shape))
        _op(f"random_integers_{gen}", "map", 0,
            f"_rng_integers({g}, {{0}}, {{1}}, {{2}}, {{3}}, {{4}})", ufunc=None, cost=35,
            counter=True, ref=lambda key, ctr, low, rng, shape, dtype, gen=gen:
            rngcore.integers(gen, key, ctr, low, rng, shape),
            quad="_rngq_integers({0}, {1}, {2}, {3}, {4})" if philox else None)


_rng_ops()

# ---- complex parts (loop over the input dtype; NumPy's result dtypes) -------------------------


def _part_dtypes(angle=False):
    def rule(operands):
        d = operands[0] if isinstance(operands[0], np.dtype) else D.default_dtype(operands[0])
        if d.kind == "c":
            return np.dtype(d.char.lower()), d
        if angle:
            # np.angle of a real array is arctan2(0, x): NumPy's dtype for it (float16 for
            # int8/uint8: refused by canonical, as everywhere)
            f = D.ufunc_result("arctan2", ["i", d])
            return f, f
        return d, d
    return rule


_cplx = lambda c, r: lambda dt, a: (c if dt.kind == "c" else r).format(*a)  # noqa: E731
_op("real", "map", 1, _cplx("({0}).real", "({0})"), ufunc=None, ref=np.real, dtypes=_part_dtypes())
_op("imag", "map", 1, _cplx("({0}).imag", "0"), ufunc=None, ref=np.imag,
    dtypes=_part_dtypes())
_op("conjugate", "map", 1, _cplx("({0}).conjugate()", "({0})"), aliases=("conj",))
_op("angle", "map", 1, _cplx("np.arctan2(({0}).imag, ({0}).real)", "np.arctan2(0.0, {0})"),
    ufunc=None, ref=np.angle, dtypes=_part_dtypes(angle=True), cost=25, float_tol=True)


# ---- reductions ---------------------------------------------------------------------------
class Reduction:
    """One reduction of the table."""

    __slots__ = ("name", "ref", "init", "update", "combine", "needs_identity", "cost",
                 "float_tol", "merge")

    def __init__(self, name, ref, init, update, combine, needs_identity=False, cost=1,
                 float_tol=True, merge=None):
        self.name = name
        self.ref = ref                  # NumPy reference: ref(x, axis=..., keepdims=...)
        self.init = init                # init(acc_dtype) -> expression
        self.update = update            # "acc = ..." with {acc}, {v}
        self.combine = combine          # partials combine, same form
        self.needs_identity = needs_identity  # empty reduction without identity: record error
        self.cost = cost
        self.float_tol = float_tol
        self.merge = merge              # partial results of two chunks (arrays) -> one (Dask);
                                        # argmax/argmin carry (index, value) pairs instead

    def __repr__(self):
        return f"Reduction({self.name!r})"


def _min_of(dt):
    if dt == D.bool_:
        return "False"
    return "-np.inf" if D.is_float(dt) else str(np.iinfo(dt).min)


def _max_of(dt):
    if dt == D.bool_:
        return "True"
    return "np.inf" if D.is_float(dt) else str(np.iinfo(dt).max)


REDUCTIONS: dict[str, Reduction] = {
    "sum": Reduction("sum", np.sum, lambda dt: "0", "{acc} + {v}", "{acc} + {v}",
                     merge=np.add),
    "prod": Reduction("prod", np.prod, lambda dt: "1", "{acc} * {v}", "{acc} * {v}",
                      merge=np.multiply),
    "mean": Reduction("mean", np.mean, lambda dt: "0", "{acc} + {v}", "{acc} + {v}",
                      merge=np.add),
    "max": Reduction("max", np.max, _min_of,
                     "({v} if (({v} > {acc}) | ({v} != {v})) else {acc})",
                     "({v} if (({v} > {acc}) | ({v} != {v})) else {acc})", needs_identity=True,
                     float_tol=False, merge=np.maximum),
    "min": Reduction("min", np.min, _max_of,
                     "({v} if (({v} < {acc}) | ({v} != {v})) else {acc})",
                     "({v} if (({v} < {acc}) | ({v} != {v})) else {acc})", needs_identity=True,
                     float_tol=False, merge=np.minimum),
    "any": Reduction("any", np.any, lambda dt: "False", "({acc} | ({v} != 0))",
                     "({acc} | {v})", float_tol=False, merge=np.logical_or),
    "all": Reduction("all", np.all, lambda dt: "True", "({acc} & ({v} != 0))",
                     "({acc} & {v})", float_tol=False, merge=np.logical_and),
    # argmax/argmin carry (value, index); the renderer special-cases them
    "argmax": Reduction("argmax", np.argmax, _min_of, "", "", needs_identity=True,
                        float_tol=False),
    "argmin": Reduction("argmin", np.argmin, _max_of, "", "", needs_identity=True,
                        float_tol=False),
}


@functools.lru_cache(maxsize=256)
def reduction_dtypes(name: str, dt: np.dtype) -> tuple[np.dtype, np.dtype]:
    """(result dtype, accumulator dtype) of reduction ``name`` over dtype ``dt`` -- NumPy's
    (also the result dtype of the scans: cumsum as sum, cumprod as prod)."""
    if name in ("argmax", "argmin"):
        return D.int64, dt
    if name in ("any", "all"):
        return D.bool_, D.bool_
    if name in ("max", "min"):
        return dt, dt
    out = np.dtype(getattr(np, name)(np.ones(1, dt)).dtype)
    out = D.canonical(out)
    if name == "prod":
        return out, out     # (in the result dtype, as NumPy's: a float32 product overflows)
    acc = D.float64 if D.is_float(out) else out   # float32 sums accumulate in float64
    acc = D.complex128 if out.kind == "c" else acc  # complex64 sums in complex128
    return out, acc


_MAP_DT: dict = {}


def map_dtypes(op: Op, operands) -> tuple[np.dtype, np.dtype]:
    """(result dtype, loop dtype) of map ``op`` over operands (dtypes or weak scalar kinds).

    Raises TypeError (NumPy's own message) when NumPy has no loop for these dtypes.
    Memoised: the answer depends only on the op and the operand dtypes/kinds."""
    key = (op.name, *operands)
    r = _MAP_DT.get(key)
    if r is None:
        try:
            r = _map_dtypes(op, operands)
        except TypeError as e:
            # (kept without its traceback: that holds the frames of the call that failed
            # first -- and through them its operands, arrays of any size -- for good)
            r = type(e)(str(e))
        _MAP_DT[key] = r
    if isinstance(r, Exception):
        raise type(r)(str(r))         # (a fresh one: a raised exception keeps its traceback)
    return r


def _map_dtypes(op: Op, operands) -> tuple[np.dtype, np.dtype]:
    if op.dtypes is not None:
        return tuple(D.canonical(d) for d in op.dtypes(operands))
    if op.name == "where":
        res = D.result_type(*operands[1:])
        return D.canonical(res), D.canonical(res)
    out = D.canonical(D.ufunc_result(op.ufunc, operands))
    if op.loop == "in":
        loop = D.canonical(D.result_type(*operands)) if len(operands) > 1 else (
            operands[0] if isinstance(operands[0], np.dtype) else D.default_dtype(operands[0]))
        return out, loop
    return out, out


COMPARISONS = ("equal", "not_equal", "less", "less_equal", "greater", "greater_equal")


def signed_vs_uint64(name, operands) -> bool:
    """Whether comparison ``name`` is between a signed integer dtype and uint64. NumPy
    compares those exactly (its int64/uint64 loops); their common dtype, float64, would not
    (``2**63 > 2**63 - 1`` is False in float64). The frontend records such a comparison as a
    sign test and a uint64 comparison instead (frontend/array.py ``_compare_signed_u64``),
    and never memoises it as one op."""
    if name not in COMPARISONS or len(operands) != 2:
        return False
    a, b = operands
    return (isinstance(a, np.dtype) and isinstance(b, np.dtype)
            and ((a == D.uint64 and b.kind == "i") or (b == D.uint64 and a.kind == "i")))


UFUNC_TO_OP = {}
for _o in OPS.values():
    if _o.ufunc:
        UFUNC_TO_OP[_o.ufunc] = _o.name
MAP_NAMES = tuple(OPS)
REDUCTION_NAMES = tuple(REDUCTIONS)


def loop_operands(name: str, loop_dtype, arity: int) -> list:
    """The dtype each operand of a map op is cast to in its loop: the loop dtype, except the
    condition of ``where`` (bool)."""
    return [D.bool_, loop_dtype, loop_dtype] if name == "where" else [loop_dtype] * arity


def operand_dtypes(p) -> list:
    """:func:`loop_operands` of a recorded map port; counter-based RNG ops take their int64
    key/counter scalars uncast."""
    op = OPS[p.op]
    if op.counter:
        return [i.dtype for i in p.inputs]
    return loop_operands(p.op, p.loop_dtype, op.arity)


def _expand(t, loop_dtype, args):
    return t(loop_dtype, args) if callable(t) else t.format(*args)


def numba_expr(op: Op, loop_dtype: np.dtype, args: tuple[str, ...]) -> str:
    return _expand(op.numba, loop_dtype, args)


def quad_expr(op: Op, loop_dtype: np.dtype, args: tuple[str, ...]) -> str:
    """The call of a counter op's quad helper (``Op.quad``): its four values."""
    return _expand(op.quad, loop_dtype, args)


# ---- vectorisable transcendental functions (executors/vecmath.py) ----------------------------
# With STREAMRT_FAST_MATH (default on) the Numba renderer calls the branch-free polynomial
# primitives _vm_<name>_f32/_f64 instead of Numba's scalar libm calls; other dtypes keep np.<name>.
# sin/cos/tan and float32 pow have primitives too but stay on libm: their large-argument path
# (|x| > 1.6e6) is a predicated libm call that stops LLVM vectorising, and pow is slower.
VECMATH = {n: (D.float32, D.float64) for n in (
    "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sinh", "cosh", "tanh", "cbrt")}
VECMATH["erf"] = (D.float32,)           # float64 erf: libm (no vectorised primitive yet)


def _vecmath(name, fallback):
    def render(dt, a):
        if dt in VECMATH[name] and settings.fast_math:
            return f"_vm_{name}_{'f32' if dt == D.float32 else 'f64'}({', '.join(a)})"
        return fallback(dt, a) if callable(fallback) else fallback.format(*a)
    return render


for _n in VECMATH:
    OPS[_n].numba = _vecmath(_n, OPS[_n].numba)
