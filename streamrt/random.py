"""``ps.random``: NumPy's Generator API over counter-based generators whose numbers are computed
inside the fused kernels that consume them (streamrt/rngcore.py has the algorithms).

``ps.random.default_rng(seed, bit_generator="philox" | "fast")`` -> Generator with random,
uniform, normal, standard_normal, integers and choice. A draw records one map op with no array
inputs: the key and the counter base are int64 scalar kernel parameters (never constants in
the source: a loop drawing new numbers hits the trace cache) and each element's counter is the
base plus its flat index. The Generator advances its counter by the number of values drawn --
for Philox rounded up to a multiple of 4, so that every Philox draw starts on a block boundary
(rngcore: a block feeds four float32 or two 64-bit values, computed once in the quad loops).
Inside ``@ps.macro`` the key and counter of a generator created outside the body are replay
inputs: each replay draws new numbers and advances the generator as running the body would."""
from __future__ import annotations

import numbers
import operator
import os
import threading

import numpy as np

from .core import dtypes as D, rngcore
from .core.errors import ArgumentError, DTypeError, callsite, record_error
from .core.ir import Port
from .runtime.workqueue import current_queue
from .frontend.array import Array, _enqueue, const_port, finish_out, operand, astype
from .frontend.math import where
from .frontend.macro import note_rng

__all__ = ["default_rng", "Generator", "seed", "random", "rand", "randn", "uniform", "normal",
           "standard_normal", "integers", "randint", "choice", "random_sample"]

_U64 = 1 << 64
CHOICE_MAX = 64        # choice(a) of at most this many values (a fused select chain)


def _seed_int(seed, site):
    """A non-negative int from NumPy's seed forms (None: fresh OS entropy)."""
    if seed is None:
        return int.from_bytes(os.urandom(16), "little")
    if isinstance(seed, np.random.SeedSequence):
        seed = seed.entropy
        if seed is None:
            return 0
    if isinstance(seed, (bool, np.bool_)):
        raise record_error(ArgumentError, "seed must be an int or a sequence of ints, not bool",
                           site)
    if isinstance(seed, numbers.Integral):
        if seed < 0:
            raise record_error(ValueError, f"seed must be non-negative, got {seed}", site)
        return int(seed)
    if isinstance(seed, (list, tuple, np.ndarray)):
        out = 0
        for i, s in enumerate(np.asarray(seed).ravel().tolist()):
            if not isinstance(s, int) or s < 0:
                raise record_error(ValueError, "a seed sequence must hold non-negative ints",
                                   site)
            out |= (s & (_U64 - 1)) << (64 * i)
        return out
    raise record_error(ArgumentError, f"cannot seed a generator with {type(seed).__name__}",
                       site)


def _shape(size, site, what):
    if size is None:
        return ()
    try:
        shape = (operator.index(size),)
    except TypeError:
        try:
            shape = tuple(operator.index(s) for s in size)
        except TypeError:
            raise record_error(ArgumentError, f"{what}: size must be an int or a tuple of "
                               f"ints, got {size!r}", site) from None
    if any(s < 0 for s in shape):
        raise record_error(ValueError, f"{what}: negative dimensions are not allowed", site)
    return shape


def _float_dtype(dtype, site, what):
    try:
        dt = np.dtype(dtype)
    except TypeError:
        dt = None
    if dt not in (D.float32, D.float64):
        raise record_error(DTypeError, f"{what}: unsupported dtype {dtype!r} (float32 or "
                           "float64)", site)
    return dt


def _scalar(v):
    return Port("scalar", "scalar", D.int64, (), params=("strong",), scalar=rngcore.to_i64(v))


def _out_size(out, size, dtype, site, what):
    """NumPy's ``out=`` of a draw: it gives the size, and its dtype must be ``dtype``."""
    if out is None:
        return size
    if np.dtype(dtype) != out.dtype:
        raise record_error(ArgumentError, f"{what}: Supplied output array has the wrong type. "
                           f"Expected {np.dtype(dtype)}, got {out.dtype}", site)
    if size is not None and tuple(np.atleast_1d(size)) != tuple(out.shape):
        raise record_error(ValueError, f"{what}: size must match out.shape when used together",
                           site)
    return out.shape


class Generator:
    """A counter-based generator: (key, counter). See the module docstring."""

    def __init__(self, seed=None, bit_generator="philox"):
        site = callsite()
        if bit_generator not in rngcore.GENERATORS:
            raise record_error(ArgumentError, f"bit_generator must be one of "
                               f"{', '.join(map(repr, rngcore.GENERATORS))}, got "
                               f"{bit_generator!r}", site)
        s = _seed_int(seed, site)
        self.bit_generator = bit_generator
        self._key = rngcore.philox_key(s) if bit_generator == "philox" else \
            rngcore.squares_key(s)
        self._counter = 0
        self._lock = threading.Lock()      # draws from several threads take disjoint counters
        # a generator created while a macro body is recorded is re-created by the body at
        # every call: its draws are part of the recorded code (see _draw)
        self._born = current_queue().recording

    def __repr__(self):
        return f"Generator({self.bit_generator}, counter={self._counter})"

    @property
    def counter(self):
        """Values drawn so far (mod 2^64; Philox draws rounded up to a multiple of 4): the
        counter base of the next draw."""
        return self._counter

    def _step(self, n):
        """How far a draw of ``n`` values moves the counter: Philox draws start on a block
        boundary (a multiple of 4 values, rngcore), so the quad loops of the Numba renderer
        find every draw of a kernel aligned alike."""
        b = rngcore.BLOCK_VALUES
        return n if self.bit_generator != "philox" else -(-n // b) * b

    def advance(self, n):
        """Skip ``n`` values (as drawing them would)."""
        with self._lock:
            self._counter = (self._counter + self._step(int(n))) % _U64
        return self

    # ---- the one recording path -------------------------------------------------------------
    def _draw(self, dist, shape, out_dt, loop_dt, extra, site):
        n = int(np.prod(shape, dtype=np.int64)) if shape else 1
        with self._lock:
            base = self._counter
            self._counter = (base + self._step(n)) % _U64
        kp, cp = _scalar(self._key), _scalar(base)
        kp.site = cp.site = site
        rec = current_queue().recording
        if rec is not None and self._born is not rec:
            note_rng(rec, self, kp, cp, base)
        port = Port("map", f"random_{dist}_{self.bit_generator}", out_dt, tuple(shape),
                    (kp, cp) + tuple(_scalar(x) for x in extra), (), site, loop_dtype=loop_dt)
        return _enqueue(port)

    def _replay_param(self, field, off):
        """A key or counter kernel parameter for a macro replay (before its advance)."""
        return rngcore.to_i64(self._key if field == "key" else self._counter + off)

    # ---- NumPy's Generator API --------------------------------------------------------------
    def random(self, size=None, dtype=np.float64, out=None):
        """Uniform floats in [0, 1): 53 random bits (float64) or 24 (float32)."""
        site = callsite()
        size = _out_size(out, size, dtype, site, "random")
        dt = _float_dtype(dtype, site, "random")
        r = self._draw("uniform", _shape(size, site, "random"), dt, dt, (), site)
        return finish_out("random", r, out, True, "no", site)

    def standard_normal(self, size=None, dtype=np.float64, out=None):
        """Standard normal floats (Box-Muller, computed in float64)."""
        site = callsite()
        size = _out_size(out, size, dtype, site, "standard_normal")
        dt = _float_dtype(dtype, site, "standard_normal")
        r = self._draw("normal", _shape(size, site, "standard_normal"), dt, D.float64, (), site)
        return finish_out("standard_normal", r, out, True, "no", site)

    def _param_shape(self, params, size, site, what):
        ports = [operand(p, site) for p in params]
        shapes = [p.shape for p in ports if p.kind != "scalar"]
        try:
            bshape = tuple(np.broadcast_shapes(*shapes)) if shapes else ()
        except ValueError:
            raise record_error(ValueError, f"{what}: parameter shapes do not broadcast", site) \
                from None
        if size is None:
            return bshape
        shape = _shape(size, site, what)
        try:
            if np.broadcast_shapes(shape, bshape) != shape:
                raise ValueError
        except ValueError:
            raise record_error(ValueError, f"{what}: size {shape} does not fit parameters of "
                               f"shape {bshape}", site) from None
        return shape

    def uniform(self, low=0.0, high=1.0, size=None):
        """``low + (high - low) * random()`` (NumPy's formula), float64."""
        site = callsite()
        shape = self._param_shape((low, high), size, site, "uniform")
        u = self._draw("uniform", shape, D.float64, D.float64, (), site)
        if _is_num(low) and _is_num(high):
            return float(low) + (float(high) - float(low)) * u
        return low + (high - low) * u

    def normal(self, loc=0.0, scale=1.0, size=None):
        """``loc + scale * standard_normal()`` (NumPy's formula), float64."""
        site = callsite()
        if _is_num(scale) and scale < 0:
            raise record_error(ValueError, "normal: scale < 0", site)
        shape = self._param_shape((loc, scale), size, site, "normal")
        z = self._draw("normal", shape, D.float64, D.float64, (), site)
        return loc + scale * z

    def integers(self, low, high=None, size=None, dtype=np.int64, endpoint=False):
        """Integers in [low, high) ([low, high] with ``endpoint=True``): ``low`` plus the high
        64 bits of a 64-bit random word times the range (no rejection; each value's probability
        is within range/2^64, relative, of uniform)."""
        site = callsite()
        if high is None:
            low, high = 0, low
        for v in (low, high):
            if not _is_int(v):
                raise record_error(ArgumentError, "integers: low and high must be Python or "
                                   f"NumPy integers (array bounds are not supported), got "
                                   f"{type(v).__name__}", site)
        low, high = int(low), int(high)
        try:
            dt = np.dtype(dtype)
        except TypeError:
            dt = None
        if dt not in D.INTS and dt != D.bool_:
            raise record_error(DTypeError, f"integers: unsupported dtype {dtype!r} (an "
                               "integer dtype or bool)", site)
        hi = high if endpoint else high - 1
        if hi < low:
            raise record_error(ValueError, f"integers: low >= high ({low} >= {high})"
                               if not endpoint else f"integers: low > high ({low} > {high})",
                               site)
        lo_b, hi_b = (0, 1) if dt == D.bool_ else (np.iinfo(dt).min, np.iinfo(dt).max)
        if low < lo_b or hi > hi_b:
            raise record_error(ValueError, f"integers: bounds [{low}, {hi}] out of range for "
                               f"{dt}", site)
        rng = (hi - low + 1) % _U64          # 0: the full 2^64 range
        shape = _shape(size, site, "integers")
        out_dt = D.int64 if dt == D.bool_ else dt
        r = self._draw("integers", shape, out_dt, D.int64, (low, rng), site)
        if dt == D.bool_:
            r = astype(r, D.bool_, site=site)
        return r

    def choice(self, a, size=None, replace=True, p=None, shuffle=True):
        """Values of ``a`` (or of ``arange(a)``) picked at random. With replacement: fused
        (uniform indices, or NumPy's inverse-CDF search with ``p``), for at most CHOICE_MAX
        values when ``a`` is an array. Without replacement: the values' random keys are read
        and sorted on the host (a synchronising read)."""
        site = callsite()
        if isinstance(a, numbers.Integral) and not isinstance(a, (bool, np.bool_)):
            n, values = int(a), None
            if n <= 0:
                raise record_error(ValueError, "choice: a must be a positive integer", site)
        else:
            values = np.asarray(a)
            if values.ndim != 1:
                raise record_error(ValueError, "choice: a must be 1-dimensional or an integer",
                                   site)
            n = values.shape[0]
            if n == 0:
                raise record_error(ValueError, "choice: a cannot be empty", site)
        shape = _shape(size, site, "choice")
        count = int(np.prod(shape, dtype=np.int64)) if shape else 1
        if not replace:
            if p is not None:
                raise record_error(ArgumentError, "choice: p= with replace=False is not "
                                   "supported", site)
            if count > n:
                raise record_error(ValueError, "choice: cannot take a larger sample than "
                                   "population when replace=False", site)
            keys = np.asarray(self._draw("uniform", (n,), D.float64, D.float64, (), site))
            idx = np.argsort(keys, kind="stable")[:count].reshape(shape)
            res = idx if values is None else values[idx]
            return Array._wrap(const_port(res, site))
        if p is None:
            idx = self._draw("integers", shape, D.int64, D.int64, (0, n), site)
        else:
            pv = np.asarray(p, dtype=np.float64)
            if pv.shape != (n,):
                raise record_error(ValueError, "choice: a and p must have same size", site)
            if np.any(pv < 0) or not np.all(np.isfinite(pv)):
                raise record_error(ValueError, "choice: probabilities are not non-negative",
                                   site)
            if abs(pv.sum() - 1.0) > np.sqrt(np.finfo(np.float64).eps):
                raise record_error(ValueError, "choice: probabilities do not sum to 1", site)
            if n > CHOICE_MAX:
                raise record_error(ArgumentError, f"choice: p= over more than {CHOICE_MAX} "
                                   "values is not supported", site)
            cdf = np.cumsum(pv)
            cdf /= cdf[-1]
            u = self._draw("uniform", shape, D.float64, D.float64, (), site)
            # NumPy: cdf.searchsorted(u, side="right") = how many cdf entries are <= u
            idx = None
            for c in cdf[:-1]:
                t = (u >= float(c)).astype(np.int64)
                idx = t if idx is None else idx + t
            if idx is None:
                idx = u.astype(np.int64) * 0
        if values is None:
            return idx
        if n > CHOICE_MAX:
            raise record_error(ArgumentError, f"choice: an array of more than {CHOICE_MAX} "
                               "values is not supported (pass an int and index)", site)
        vals = values.astype(D.canonical(values.dtype), copy=False)
        res = vals[n - 1]
        for k in range(n - 2, -1, -1):
            res = where(idx == k, vals[k], res)
        if not isinstance(res, Array):            # n == 1
            return Array._wrap(const_port(np.broadcast_to(res, shape), site))
        return res


def _is_num(v):
    return isinstance(v, (numbers.Real, np.number)) and not isinstance(v, (bool, np.bool_))


def _is_int(v):
    return isinstance(v, (numbers.Integral, np.integer)) and not isinstance(v, (bool, np.bool_))


def default_rng(seed=None, bit_generator="philox"):
    """A Generator: ``bit_generator="philox"`` (Philox4x32-10, the default) or ``"fast"``
    (Squares). A Generator passed as ``seed`` is returned as it is (NumPy's rule)."""
    if isinstance(seed, Generator):
        return seed
    return Generator(seed, bit_generator)


# ---- the legacy module-level functions (np.random.rand, ...) over one global generator ---------
_global = None


def _g():
    global _global
    if _global is None:
        _global = Generator(None)
    return _global


def seed(s=None):
    """Re-seed the module-level generator (Philox)."""
    global _global
    _global = Generator(s)


def random(size=None):
    return _g().random(size)


random_sample = random


def rand(*shape):
    return _g().random(shape or None)


def randn(*shape):
    return _g().standard_normal(shape or None)


def uniform(low=0.0, high=1.0, size=None):
    return _g().uniform(low, high, size)


def normal(loc=0.0, scale=1.0, size=None):
    return _g().normal(loc, scale, size)


def standard_normal(size=None):
    return _g().standard_normal(size)


def integers(low, high=None, size=None, dtype=np.int64, endpoint=False):
    return _g().integers(low, high, size, dtype, endpoint)


def randint(low, high=None, size=None, dtype=np.int64):
    return _g().integers(low, high, size, dtype)


def choice(a, size=None, replace=True, p=None):
    return _g().choice(a, size, replace, p)
