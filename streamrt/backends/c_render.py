"""C-dialect renderer: Kernel -> C source in a dialect (OpenCL C, CUDA C) + the runtime index
table.

One renderer for every dialect. The kernel body is written once against a small prelude of
macros and typedefs (SR_KERNEL, SR_GLOBAL, SR_GID, i64, u8, ...) that each dialect defines
(``Dialect``: its subclasses set the prelude, the suffix of single-precision math functions --
CUDA spells them ``expf``; OpenCL overloads ``exp`` -- and the pragmas; they may extend the
op table). Expression templates are a table keyed by the op table's names (``C_OPS``,
``C_REDUCTIONS``); every op in ``ops.OPS`` and ``ops.REDUCTIONS`` has one
(``missing_templates()`` says which do not).

NumPy semantics are kept as the Numba path keeps them (executors/cpu_lib.py): integer
division and modulo by zero give 0, floor-division and modulo take NumPy's signs, shifts past
the bit width give 0 (or -1), signed integer arithmetic wraps (done in the unsigned type),
maximum/minimum propagate NaN and fmax/fmin ignore it, argmax/argmin return the first index.

As in the Numba renderer, sizes, offsets and strides are read from a runtime index table
``D`` (an int64 buffer), so the source depends only on the kernel's structure.

Map kernels: one work-item per element of the collapsed iteration space (a grid-stride loop,
so the launch may be capped). Reduction kernels: each work-group reduces one chunk of one kept
index (``K * C`` chunks; the element-wise producers are inlined in the per-item loop), a tree
reduction in local/shared memory, and the group's result written as a partial -- or, when
``C == 1``, finalised directly; a second kernel (``sr_comb``) combines the ``C`` partials of
each kept index in chunk order when ``C > 1``."""
from __future__ import annotations

import math
import re

import numpy as np

from ..core import dtypes as D, rngcore
from ..core.ops import OPS, REDUCTIONS, operand_dtypes
from ..compiler.kernel import Src, index_table, reduce_params, terms

LMAX = 256          # local-memory size of the tree reduction (the largest work-group used)

_SUFFIX = {np.dtype(np.bool_): "b", np.dtype(np.int32): "i32", np.dtype(np.int64): "i64",
           np.dtype(np.float32): "f32", np.dtype(np.float64): "f64",
           np.dtype(np.int8): "i8", np.dtype(np.int16): "i16", np.dtype(np.uint8): "u8",
           np.dtype(np.uint16): "u16", np.dtype(np.uint32): "u32", np.dtype(np.uint64): "u64"}
_CT = {"b": "bool", "i32": "i32", "i64": "i64", "f32": "float", "f64": "double"}
_ST = {"b": "u8", "i32": "i32", "i64": "i64", "f32": "float", "f64": "double"}
for _s in ("i8", "i16", "u8", "u16", "u32", "u64"):
    _CT[_s] = _ST[_s] = _s
# the unsigned type integer arithmetic wraps in: the operand's own width from 32 bits up;
# u32 below (C promotes 8- and 16-bit operands to int, whose overflow -- 65535 * 65535 -- is
# undefined: unsigned int arithmetic wraps, and the cast back keeps the low bits)
_UT = {"i32": "u32", "i64": "u64", "b": "u8", "i8": "u32", "i16": "u32", "u8": "u32",
       "u16": "u32", "u32": "u32", "u64": "u64"}
# the small integer types the preludes do not define: typedefs (Dialect.small_int_types) added
# to a kernel that uses one
_EXTRA_RE = re.compile(r"\b(i8|i16|u16)\b")


def _sfx(dt):
    try:
        return _SUFFIX[np.dtype(dt)]
    except KeyError:
        raise TypeError(f"the C renderer has no type for dtype {dt}") from None


def vtype(dt):
    """C type of a value in registers (bool stays ``bool``)."""
    return _CT[_sfx(dt)]


def stype(dt):
    """C type of an element in memory (bool is stored as ``u8``, as NumPy does)."""
    return _ST[_sfx(dt)]


def utype(dt):
    return _UT[_sfx(dt)]


class Dialect:
    """What one C dialect writes differently. The kernel body is written once against a small
    prelude of typedefs and macros (SR_KERNEL, SR_GLOBAL, SR_GID, i64, u8, ...) that each
    dialect defines; a dialect is a subclass that sets these attributes and may extend the op
    table (backends/opencl/dialect.py, backends/cuda/dialect.py)."""

    name = "c"                      # in the generated header
    prelude = ""                    # the typedefs and SR_* macros
    fp64_pragma = ""                # before the prelude when a kernel uses double
    float_suffix = ""               # of single-precision math functions (CUDA: ``expf``)
    exact_mul = "((a) * (b))"       # a double product never contracted into an FMA (RNG)
    rng_prefix = ""                 # before the RNG helpers (OpenCL: FP_CONTRACT OFF)
    small_int_types: dict = {}      # i8, i16, u16 -> the C type a kernel using it typedefs
    u8_typedef = ""                 # the prelude's u8 typedef line (the others follow it)
    code_for_op: dict = {}          # op name -> template(dialect, loop dtype, args): C_OPS

    def fn(self, base, dt):
        """Name of C math function ``base`` for dtype ``dt``."""
        return base + self.float_suffix if np.dtype(dt) == D.float32 else base

    def header(self, fp64, code=""):
        """The prelude (``fp64``: the kernel uses double precision), with the typedefs of the
        small integer types ``code`` uses (only then: other kernels' sources stay as they
        were)."""
        base = self.prelude
        used = sorted(set(_EXTRA_RE.findall(code)), key=("i8", "i16", "u16").index)
        if used:
            extra = "".join(f"typedef {self.small_int_types[t]} {t};\n" for t in used)
            base = base.replace(self.u8_typedef, self.u8_typedef + extra)
        return (self.fp64_pragma if fp64 else "") + base


def lit(x, dt):
    """A C literal of value ``x`` typed as ``dt``."""
    dt = np.dtype(dt)
    if dt == D.bool_:
        return "true" if x else "false"
    if D.is_float(dt):
        f = "F" if dt == D.float32 else "D"
        if math.isnan(x):
            return f"SR_NAN_{f}"
        if x in (math.inf, -math.inf):
            return f"SR_INF_{f}" if x > 0 else f"(-SR_INF_{f})"
        s = repr(float(x))
        return f"{s}f" if dt == D.float32 else s
    x = int(x)
    info = np.iinfo(dt)
    if dt.kind == "u":
        return f"(({vtype(dt)}){x}u)"       # (a uint64 past 2**63 fits no signed literal)
    if x == info.min and dt.itemsize >= 4:
        return f"((i32)(-{-(x + 1)} - 1))" if dt == D.int32 else \
            f"(-(i64){-(x + 1)} - (i64)1)"
    return f"(({vtype(dt)}){x})"


# ---- helper functions (emitted only when a kernel uses them) ---------------------------------
_HELPERS = {
    "ifloordiv": """SR_FN {T} sr_ifloordiv_{s}({T} a, {T} b) {{
    if (b == 0) return 0;
    if (b == -1) return ({T})(-({U})a);
    {T} q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0))) q -= 1;
    return q;
}}""",
    "imod": """SR_FN {T} sr_imod_{s}({T} a, {T} b) {{
    if (b == 0 || b == -1) return 0;
    {T} r = a % b;
    if (r != 0 && ((r < 0) != (b < 0))) r += b;
    return r;
}}""",
    "fmod": """SR_FN {T} sr_fmod_{s}({T} a, {T} b) {{
    if (b == 0) return {NAN};
    {T} m = {fmod}(a, b);
    if (m != 0) {{
        if ((b < 0) != (m < 0)) m += b;
    }} else {{
        m = {copysign}(({T})0, b);
    }}
    return m;
}}""",
    "ffloordiv": """SR_FN {T} sr_ffloordiv_{s}({T} a, {T} b) {{
    if (b == 0) return a / b;
    {T} m = {fmod}(a, b);
    {T} div = (a - m) / b;
    if (m != 0) {{
        if ((b < 0) != (m < 0)) div -= ({T})1;
    }}
    {T} fl;
    if (div != 0) {{
        fl = {floor}(div);
        if (div - fl > ({T})0.5) fl += ({T})1;
    }} else {{
        fl = {copysign}(({T})0, a / b);
    }}
    return fl;
}}""",
    "ipow": """SR_FN {T} sr_ipow_{s}({T} a, {T} b) {{
    if (b < 0) return 0;
    {U} r = 1;
    {U} base = ({U})a;
    {T} e = b;
    while (e > 0) {{
        if (e & 1) r = r * base;
        base = base * base;
        e >>= 1;
    }}
    return ({T})r;
}}""",
    "irecip": """SR_FN {T} sr_irecip_{s}({T} a) {{
    if (a == 1 || a == -1) return a;
    return 0;
}}""",
    "fsign": """SR_FN {T} sr_fsign_{s}({T} a) {{
    if (a > 0) return ({T})1;
    if (a < 0) return ({T})-1;
    return a;
}}""",
    "shl": """SR_FN {T} sr_shl_{s}({T} a, {T} b) {{
    if (b < 0 || b >= {BITS}) return 0;
    return ({T})(({U})a << b);
}}""",
    "shr": """SR_FN {T} sr_shr_{s}({T} a, {T} b) {{
    if (b < 0 || b >= {BITS}) return a < 0 ? ({T})-1 : ({T})0;
    return a >> b;
}}""",
}
# the unsigned integers' versions (no negative operands: n // 0 == n % 0 == 0, 1 // n, shifts)
_UHELPERS = {
    "ifloordiv": """SR_FN {T} sr_ifloordiv_{s}({T} a, {T} b) {{
    if (b == 0) return 0;
    return a / b;
}}""",
    "imod": """SR_FN {T} sr_imod_{s}({T} a, {T} b) {{
    if (b == 0) return 0;
    return a % b;
}}""",
    "ipow": """SR_FN {T} sr_ipow_{s}({T} a, {T} b) {{
    {U} r = 1;
    {U} base = ({U})a;
    {T} e = b;
    while (e > 0) {{
        if (e & 1) r = r * base;
        base = base * base;
        e >>= 1;
    }}
    return ({T})r;
}}""",
    "irecip": """SR_FN {T} sr_irecip_{s}({T} a) {{
    return a == 1 ? ({T})1 : ({T})0;
}}""",
    "shl": """SR_FN {T} sr_shl_{s}({T} a, {T} b) {{
    if (b >= {BITS}) return 0;
    return ({T})(({U})a << b);
}}""",
    "shr": """SR_FN {T} sr_shr_{s}({T} a, {T} b) {{
    if (b >= {BITS}) return 0;
    return ({T})(a >> b);
}}""",
}
_HELPER_RE = re.compile(r"\bsr_(\w+?)_(b|i8|i16|i32|i64|u8|u16|u32|u64|f32|f64)\(")


def helper_source(name, s, dialect):
    dt = {v: k for k, v in _SUFFIX.items()}[s]
    T = _CT[s]
    tmpl = _UHELPERS[name] if dt.kind == "u" else _HELPERS[name]
    return tmpl.format(
        T=T, s=s, U=_UT.get(s, T), BITS=dt.itemsize * 8,
        NAN=lit(math.nan, dt) if D.is_float(dt) else "0",
        fmod=dialect.fn("fmod", dt), floor=dialect.fn("floor", dt),
        copysign=dialect.fn("copysign", dt))


def _h(name):
    return lambda d, dt, a: f"sr_{name}_{_sfx(dt)}({', '.join(a)})"


# ---- op templates: name -> callable(dialect, loop dtype, args) -> C expression -------------
def _wrap2(sym, bool_sym=None):
    """Binary arithmetic; signed integers wrap (computed in the unsigned type, as NumPy)."""
    def r(d, dt, a):
        if dt == D.bool_ and bool_sym is not None:
            return f"({a[0]} {bool_sym} {a[1]})"
        if D.is_int(dt):
            u = utype(dt)
            return f"(({vtype(dt)})(({u})({a[0]}) {sym} ({u})({a[1]})))"
        return f"({a[0]} {sym} {a[1]})"
    return r


def _by(int_t, float_t, bool_t=None):
    def r(d, dt, a):
        if dt == D.bool_ and bool_t is not None:
            t = bool_t
        else:
            t = float_t if D.is_float(dt) else int_t
        return t(d, dt, a) if callable(t) else t.format(*a)
    return r


def _math(cname):
    return lambda d, dt, a: f"{d.fn(cname, dt)}({', '.join(a)})"


def _neg(d, dt, a):
    if D.is_int(dt):
        return f"(({vtype(dt)})(-({utype(dt)})({a[0]})))"
    return f"(-{a[0]})"


def _cmp(sym):
    return lambda d, dt, a: f"({a[0]} {sym} {a[1]})"


C_OPS = {
    "add": _wrap2("+", "||"),
    "subtract": _wrap2("-"),
    "multiply": _wrap2("*", "&&"),
    "divide": lambda d, dt, a: f"({a[0]} / {a[1]})",
    "floor_divide": _by(_h("ifloordiv"), _h("ffloordiv")),
    "remainder": _by(_h("imod"), _h("fmod")),
    "power": _by(_h("ipow"), _math("pow")),
    "negative": _neg,
    "positive": lambda d, dt, a: f"({a[0]})",
    "absolute": _by(lambda d, dt, a: f"({a[0]})" if dt.kind == "u" else
                    f"(({a[0]}) < 0 ? {_neg(d, dt, a)} : ({a[0]}))", _math("fabs"), "({0})"),
    "square": lambda d, dt, a: _wrap2("*", "&&")(d, dt, (a[0], a[0])),
    "reciprocal": _by(_h("irecip"), lambda d, dt, a: f"({lit(1, dt)} / {a[0]})"),
    "sign": _by(lambda d, dt, a: f"(({vtype(dt)})(({a[0]} > 0) - ({a[0]} < 0)))", _h("fsign")),
    "logical_and": lambda d, dt, a: f"(({a[0]} != 0) && ({a[1]} != 0))",
    "logical_or": lambda d, dt, a: f"(({a[0]} != 0) || ({a[1]} != 0))",
    "logical_xor": lambda d, dt, a: f"(({a[0]} != 0) != ({a[1]} != 0))",
    "logical_not": lambda d, dt, a: f"({a[0]} == 0)",
    "bitwise_and": lambda d, dt, a: f"({a[0]} & {a[1]})",
    "bitwise_or": lambda d, dt, a: f"({a[0]} | {a[1]})",
    "bitwise_xor": lambda d, dt, a: f"({a[0]} ^ {a[1]})",
    "invert": _by("(~{0})", "(~{0})", "(!{0})"),
    "left_shift": _h("shl"),
    "right_shift": _h("shr"),
    "maximum": lambda d, dt, a: f"(({a[0]} >= {a[1]} || {a[0]} != {a[0]}) ? {a[0]} : {a[1]})",
    "minimum": lambda d, dt, a: f"(({a[0]} <= {a[1]} || {a[0]} != {a[0]}) ? {a[0]} : {a[1]})",
    "fmax": lambda d, dt, a: f"(({a[0]} >= {a[1]} || {a[1]} != {a[1]}) ? {a[0]} : {a[1]})",
    "fmin": lambda d, dt, a: f"(({a[0]} <= {a[1]} || {a[1]} != {a[1]}) ? {a[0]} : {a[1]})",
    "where": lambda d, dt, a: f"({a[0]} ? {a[1]} : {a[2]})",
    "astype": lambda d, dt, a: f"({a[0]})",
    "isnan": _by("false", "({0} != {0})", "false"),
    "isinf": _by("false", lambda d, dt, a: f"({a[0]} == {lit(math.inf, dt)} || "
                 f"{a[0]} == {lit(-math.inf, dt)})", "false"),
    "isfinite": _by("true", "(({0}) - ({0}) == 0)", "true"),
    "arctan2": _math("atan2"),
    "hypot": _math("hypot"),
    "copysign": _math("copysign"),
    "signbit": _by(lambda d, dt, a: "false" if dt.kind == "u" else f"({a[0]} < 0)",
                   lambda d, dt, a: f"(signbit({a[0]}) != 0)", "false"),
}
# counter-based RNG (rngcore.c_source): int64 key/counter parameters, the flat index appended
for _g, _gen in enumerate(rngcore.GENERATORS):
    C_OPS[f"random_uniform_{_gen}"] = (
        lambda d, dt, a, g=_g: f"srr_uniform_{'f32' if dt == D.float32 else 'f64'}({g}, "
                               f"{', '.join(a)})")
    C_OPS[f"random_normal_{_gen}"] = lambda d, dt, a, g=_g: f"srr_normal({g}, {', '.join(a)})"
    C_OPS[f"random_integers_{_gen}"] = (
        lambda d, dt, a, g=_g: f"srr_integers({g}, {', '.join(a)})")
for _n, _s in (("equal", "=="), ("not_equal", "!="), ("less", "<"), ("less_equal", "<="),
               ("greater", ">"), ("greater_equal", ">=")):
    C_OPS[_n] = _cmp(_s)
for _n in ("exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt", "cbrt", "sin", "cos",
           "tan", "sinh", "cosh", "tanh", "erf"):
    C_OPS[_n] = _math(_n)
for _n in ("arcsin", "arccos", "arctan", "arcsinh", "arccosh", "arctanh"):
    C_OPS[_n] = _math("a" + _n[3:])
for _n in ("floor", "ceil", "trunc", "rint"):
    C_OPS[_n] = _by("({0})", _math(_n), "({0})")
# complex parts of real inputs (kernels over complex dtypes run on the host: has_complex)
C_OPS["real"] = C_OPS["conjugate"] = lambda d, dt, a: f"({a[0]})"
C_OPS["imag"] = lambda d, dt, a: lit(0, dt)
C_OPS["angle"] = lambda d, dt, a: f"{d.fn('atan2', dt)}({lit(0, dt)}, {a[0]})"
Dialect.code_for_op = C_OPS


def _red_upd(sym, bool_sym):
    def r(dt, acc, v):
        if dt == D.bool_:
            return f"({acc} {bool_sym} {v})"
        return _wrap2(sym)(None, dt, (acc, v))
    return r


def _min_of(dt):
    if dt == D.bool_:
        return "false"
    return lit(-math.inf, dt) if D.is_float(dt) else lit(np.iinfo(dt).min, dt)


def _max_of(dt):
    if dt == D.bool_:
        return "true"
    return lit(math.inf, dt) if D.is_float(dt) else lit(np.iinfo(dt).max, dt)


_pick_max = lambda dt, acc, v: f"(({v} > {acc} || {v} != {v}) ? {v} : {acc})"
_pick_min = lambda dt, acc, v: f"(({v} < {acc} || {v} != {v}) ? {v} : {acc})"

# name -> (init(acc dtype), update(acc dtype, acc, v), combine(acc dtype, acc, v))
C_REDUCTIONS = {
    "sum": (lambda dt: lit(0, dt), _red_upd("+", "||"), _red_upd("+", "||")),
    "mean": (lambda dt: lit(0, dt), _red_upd("+", "||"), _red_upd("+", "||")),
    "prod": (lambda dt: lit(1, dt), _red_upd("*", "&&"), _red_upd("*", "&&")),
    "max": (_min_of, _pick_max, _pick_max),
    "min": (_max_of, _pick_min, _pick_min),
    "any": (lambda dt: "false", lambda dt, acc, v: f"({acc} || ({v} != 0))",
            lambda dt, acc, v: f"({acc} || {v})"),
    "all": (lambda dt: "true", lambda dt, acc, v: f"({acc} && ({v} != 0))",
            lambda dt, acc, v: f"({acc} && {v})"),
    "argmax": (_min_of, None, None),     # (value, index) pairs: special-cased below
    "argmin": (_max_of, None, None),
}


def missing_templates():
    """Ops and reductions of the op table without a C template (should be empty)."""
    return sorted(set(OPS) - set(C_OPS)) + sorted(set(REDUCTIONS) - set(C_REDUCTIONS))


def c_expr(dialect, name, loop_dtype, args):
    return dialect.code_for_op[name](dialect, np.dtype(loop_dtype), tuple(args))


def cast(expr, src, dst):
    if src is not None and np.dtype(src) == np.dtype(dst):
        return expr
    if np.dtype(dst) == D.bool_:
        return f"({expr} != 0)"
    return f"(({vtype(dst)})({expr}))"


def acc_dtype(p, fp64=True):
    """Accumulator dtype of reduce port ``p`` on this device: float64 accumulators become
    float32 on a device without fp64 (the Numba path always accumulates floats in double)."""
    acc = np.dtype(reduce_params(p)[3])
    if not fp64 and acc == D.float64 and not _port_fp64(p.inputs[0]) and p.dtype != D.float64:
        return D.float32
    return acc


def _port_fp64(p):
    return np.dtype(p.dtype) == D.float64


def uses_fp64(k, fp64=True):
    """Does kernel ``k`` need double precision on a device (with ``fp64`` False: after the
    accumulator demotion a device without fp64 gets)?"""
    for p in list(k.ops) + [a.port for a in k.loads] + list(k.scalars):
        if np.dtype(p.dtype) == D.float64:
            return True
        if p.kind == "map" and p.loop_dtype is not None and np.dtype(p.loop_dtype) == D.float64:
            return True
    for p in k.reductions:
        if acc_dtype(p, fp64) == D.float64:
            return True
    return False


def render(k, plan, dialect, fp64=True):
    """(source, kernel function name, index table, partials spec) for Kernel ``k``. Of its loop
    plan (compiler/plan.py) the C dialects follow the kind: a map or a reduction (a row
    kernel is a Numba strategy: fusion.row_fuse runs for the Numba backend only).

    ``fp64``: the device supports double precision (else float sums accumulate in float)."""
    d = dialect
    tbl, hdr, kept_n, red_n, names, iname = index_table(k, "const i64 {name} = D[{i}];")
    red = k.is_reduction
    nk = len(k.kept)
    nr = len(k.red) if red else 0

    # ---- element body -----------------------------------------------------------------------
    local = {}
    body = []
    nload = len(k.loads)
    for ai, a in enumerate(k.loads):
        local[a.port.id] = (f"x{ai}", a.port.dtype)
    for si, s in enumerate(k.scalars):
        local[s.id] = (f"(p{si} != 0)" if s.dtype == D.bool_ else f"p{si}", s.dtype)
    for n, p in enumerate(k.ops):
        if p.kind != "map":
            continue
        op = OPS[p.op]
        ld = np.dtype(p.loop_dtype)
        want = operand_dtypes(p)
        args = tuple(cast(local[i.id][0], local[i.id][1], w) for i, w in zip(p.inputs, want))
        if op.counter:
            args += ("ei",)
        expr = c_expr(d, p.op, ld, args)
        if p.dtype == D.bool_:
            v = expr if op.loop == "in" or ld == D.bool_ else f"(({expr}) != 0)"
        else:
            v = cast(expr, None, p.dtype)
        body.append(f"const {vtype(p.dtype)} v{n} = {v};")
        local[p.id] = (f"v{n}", p.dtype)

    # ---- signature --------------------------------------------------------------------------
    params = ["SR_GLOBAL const i64* D"]
    for ai, a in enumerate(k.loads):
        params.append(f"SR_GLOBAL const {stype(a.port.dtype)}* a{ai}")
    for si, a in enumerate(k.stores):
        params.append(f"SR_GLOBAL {stype(a.port.dtype)}* a{nload + si}")
    for si, s in enumerate(k.scalars):
        params.append(f"const {stype(s.dtype)} p{si}")
    partial_spec = []
    rinfo = []        # (j, port, out dtype, acc dtype, is_arg)
    for j, p in enumerate(k.reductions):
        acc = acc_dtype(p, fp64)
        isarg = p.op in ("argmax", "argmin")
        rinfo.append((j, p, np.dtype(p.dtype), acc, isarg))
        partial_spec.append(acc)
        if isarg:
            partial_spec.append(D.int64)
    red_params = [f"SR_GLOBAL {stype(o)}* ro{j}" for j, p, o, a, g in rinfo]
    part_params = []
    for j, p, o, a, g in rinfo:
        part_params.append(f"SR_GLOBAL {stype(a)}* q{j}")
        if g:
            part_params.append(f"SR_GLOBAL i64* qi{j}")

    src = Src()

    def emit_element(depth, idx, ie=None):
        if ie is not None:
            src(depth, f"const i64 ei = {ie};")
        for ai, a in enumerate(k.loads):
            dt = a.port.dtype
            rd = f"a{ai}[{idx[ai]}]"
            src(depth, f"const {vtype(dt)} x{ai} = {'(' + rd + ' != 0)' if dt == D.bool_ else rd};")
        for line in body:
            src(depth, line)
        for si, a in enumerate(k.stores):
            ai = nload + si
            v = local[a.port.id][0]
            src(depth, f"a{ai}[{idx[ai]}] = ({stype(a.port.dtype)})({v});")

    def decompose(depth, var, sizes, out):
        n = len(sizes)
        if n == 1:
            src(depth, f"const i64 {out}0 = {var};")
            return
        src(depth, f"i64 rem_{out} = {var};")
        for dd in reversed(range(n)):
            if dd:
                src(depth, f"const i64 {out}{dd} = rem_{out} % {sizes[dd]};")
                src(depth, f"rem_{out} = rem_{out} / {sizes[dd]};")
            else:
                src(depth, f"const i64 {out}0 = rem_{out};")

    if not red:
        fn = "sr_map"
        src(0, f"SR_KERNEL {fn}({', '.join(params)}) {{")
        src.lines.extend(hdr.lines)
        src(1, f"const i64 ntot = {' * '.join(kept_n)};")
        src(1, "for (i64 t = SR_GID; t < ntot; t += SR_GSIZE) {")
        decompose(2, "t", kept_n, "i")
        iv = [f"i{dd}" for dd in range(nk)]
        idx = [" + ".join([off] + terms(iv, ks)) for off, ks, _ in names]
        emit_element(2, idx, " + ".join([iname[0]] + terms(iv, iname[1])) if iname else None)
        src(1, "}")
        src(0, "}")
    else:
        fn = "sr_red"

        def lstore(dt, e):
            return f"(u8)({e})" if dt == D.bool_ else e

        def lload(dt, e):
            return f"({e} != 0)" if dt == D.bool_ else e

        def finalize(depth, j, p, o, a, g, acc, acci, dest):
            if g:
                src(depth, f"{dest} = ({acci} >= 0) ? {acci} : 0;")
            elif p.op == "mean":
                src(depth, f"{dest} = ({stype(o)})({acc} / ({vtype(a)})rtot);")
            else:
                src(depth, f"{dest} = ({stype(o)})({cast(acc, a, o)});")

        def arg_take(p, va, ia, vb, ib):
            """C condition: the pair (vb, ib) replaces (va, ia) -- NumPy's first index,
            NaN first."""
            cmp = ">" if p.op == "argmax" else "<"
            return (f"({ib} >= 0 && ({ia} < 0 || (({vb} != {vb}) ? ({va} == {va} || {ib} < {ia})"
                    f" : ({va} == {va} && ({vb} {cmp} {va} || ({vb} == {va} && {ib} < {ia}))))))")

        src(0, f"SR_KERNEL {fn}({', '.join(params + red_params + part_params + ['const i64 C'])}) {{")
        for j, p, o, a, g in rinfo:
            src(1, f"SR_LOCAL {stype(a)} sq{j}[{LMAX}];")
            if g:
                src(1, f"SR_LOCAL i64 sqi{j}[{LMAX}];")
        src.lines.extend(hdr.lines)
        src(1, f"const i64 K = {' * '.join(kept_n) if kept_n else '1'};")
        src(1, "const i64 lid = SR_LID;")
        src(1, "const i64 L = SR_LSIZE;")
        src(1, "for (i64 t = SR_GRP; t < K * C; t += SR_NGRP) {")
        src(2, "const i64 kk = t / C;")
        src(2, "const i64 c = t - kk * C;")
        if nk:
            decompose(2, "kk", kept_n, "j")
        jv = [f"j{dd}" for dd in range(nk)]
        for ai, (off, ks, _) in enumerate(names):
            src(2, f"const i64 b{ai} = {' + '.join([off] + terms(jv, ks))};")
        if iname:
            src(2, f"const i64 bi = {' + '.join([iname[0]] + terms(jv, iname[1]))};")
        src(2, "const i64 lo = (c * rtot) / C;")
        src(2, "const i64 hi = ((c + 1) * rtot) / C;")
        for j, p, o, a, g in rinfo:
            src(2, f"{vtype(a)} acc{j} = {C_REDUCTIONS[p.op][0](a)};")
            if g:
                src(2, f"i64 acci{j} = -1;")
        src(2, "for (i64 ri = lo + lid; ri < hi; ri += L) {")
        decompose(3, "ri", red_n, "r")
        rv = [f"r{dd}" for dd in range(nr)]
        idx = [" + ".join([f"b{ai}"] + terms(rv, rs)) for ai, (_, _, rs) in enumerate(names)]
        emit_element(3, idx, " + ".join(["bi"] + terms(rv, iname[2])) if iname else None)
        for j, p, o, a, g in rinfo:
            v, vdt = local[p.inputs[0].id]
            if g:
                cmp = ">" if p.op == "argmax" else "<"
                src(3, f"if (acci{j} < 0 || {v} {cmp} acc{j} || ({v} != {v} && acc{j} == acc{j})) {{")
                src(4, f"acc{j} = {v};")
                src(4, f"acci{j} = ri;")
                src(3, "}")
            else:
                upd = C_REDUCTIONS[p.op][1](a, f"acc{j}", cast(v, vdt, a))
                src(3, f"acc{j} = {upd};")
        src(2, "}")
        # tree reduction of the L per-item accumulators in local memory
        for j, p, o, a, g in rinfo:
            src(2, f"sq{j}[lid] = {lstore(a, f'acc{j}')};")
            if g:
                src(2, f"sqi{j}[lid] = acci{j};")
        src(2, "SR_BARRIER;")
        src(2, "for (i64 s = L / 2; s > 0; s >>= 1) {")
        src(3, "if (lid < s) {")
        for j, p, o, a, g in rinfo:
            va, vb = lload(a, f"sq{j}[lid]"), lload(a, f"sq{j}[lid + s]")
            if g:
                cond = arg_take(p, "va", "ia", "vb", "ib")
                src(4, f"{{ const {vtype(a)} va = {va}; const {vtype(a)} vb = {vb};")
                src(4, f"  const i64 ia = sqi{j}[lid]; const i64 ib = sqi{j}[lid + s];")
                src(4, f"  if {cond} {{ sq{j}[lid] = {lstore(a, 'vb')}; sqi{j}[lid] = ib; }} }}")
            else:
                comb = C_REDUCTIONS[p.op][2](a, va, vb)
                src(4, f"sq{j}[lid] = {lstore(a, comb)};")
        src(3, "}")
        src(3, "SR_BARRIER;")
        src(2, "}")
        src(2, "if (lid == 0) {")
        src(3, "if (C == 1) {")
        for j, p, o, a, g in rinfo:
            finalize(4, j, p, o, a, g, lload(a, f"sq{j}[0]"), f"sqi{j}[0]" if g else None,
                     f"ro{j}[kk]")
        src(3, "} else {")
        for j, p, o, a, g in rinfo:
            src(4, f"q{j}[t] = sq{j}[0];")
            if g:
                src(4, f"qi{j}[t] = sqi{j}[0];")
        src(3, "}")
        src(2, "}")
        src(2, "SR_BARRIER;")
        src(1, "}")
        src(0, "}")
        # ---- the combine kernel (C > 1): one work-item per kept index, chunks in order ------
        src(0, "")
        cparams = ["SR_GLOBAL const i64* D"] + red_params + [
            x.replace("SR_GLOBAL ", "SR_GLOBAL const ") for x in part_params] + ["const i64 C"]
        src(0, f"SR_KERNEL sr_comb({', '.join(cparams)}) {{")
        src.lines.extend(hdr.lines)
        src(1, f"const i64 K = {' * '.join(kept_n) if kept_n else '1'};")
        src(1, "for (i64 kk = SR_GID; kk < K; kk += SR_GSIZE) {")
        for j, p, o, a, g in rinfo:
            src(2, f"{vtype(a)} acc{j} = {lload(a, f'q{j}[kk * C]')};")
            if g:
                src(2, f"i64 acci{j} = qi{j}[kk * C];")
        src(2, "for (i64 c = 1; c < C; c++) {")
        for j, p, o, a, g in rinfo:
            w = lload(a, f"q{j}[kk * C + c]")
            if g:
                src(3, f"{{ const {vtype(a)} w = {w}; const i64 wi = qi{j}[kk * C + c];")
                src(3, f"  if {arg_take(p, f'acc{j}', f'acci{j}', 'w', 'wi')} "
                       f"{{ acc{j} = w; acci{j} = wi; }} }}")
            else:
                src(3, f"acc{j} = {C_REDUCTIONS[p.op][2](a, f'acc{j}', w)};")
        src(2, "}")
        for j, p, o, a, g in rinfo:
            finalize(2, j, p, o, a, g, f"acc{j}", f"acci{j}" if g else None, f"ro{j}[kk]")
        src(1, "}")
        src(0, "}")

    code = "\n".join(src.lines) + "\n"
    helpers = []
    for name, s in sorted(set(_HELPER_RE.findall(code))):
        helpers.append(helper_source(name, s, d))
    rng = rngcore.c_source(code, d.exact_mul)
    if rng:
        helpers.insert(0, d.rng_prefix + rng)
    fp = "double" in code or any("double" in h for h in helpers)
    source = (f"// generated by streamrt.backends.c_render ({d.name}) -- do not edit\n"
              + d.header(fp, code + "".join(helpers)) + "\n" + "\n\n".join(helpers)
              + ("\n\n" if helpers else "")
              + code)
    return source, fn, np.array(tbl, dtype=np.int64), partial_spec


# ---- launch specification -------------------------------------------------------------------
def _pow2_floor(n):
    return 1 << (max(1, int(n)).bit_length() - 1)


def map_launch(k, max_wg, units, local=None):
    """(global size, local size) of a map kernel: one work-item per element, capped at a
    grid-stride launch of 64 work-groups per compute unit."""
    n = k.elements
    L = local or min(256, _pow2_floor(max_wg))
    groups = max(1, min(-(-n // L), 64 * max(1, units)))
    return groups * L, L


def reduce_launch(k, max_wg, units):
    """(number of groups, local size L, chunks per kept index C) of a reduction kernel."""
    K = math.prod(k.kept) if k.kept else 1
    R = math.prod(k.red) if k.red else 1
    L = min(LMAX, _pow2_floor(max_wg), _pow2_floor(max(1, R)) * (2 if R & (R - 1) else 1))
    L = max(1, min(L, LMAX))
    target = 4 * max(1, units)
    C = 1
    if K < target and R >= 8 * L:
        C = int(max(1, min(-(-target // K), R // (4 * L))))
    groups = max(1, min(K * C, 64 * max(1, units)))
    return groups, L, C
