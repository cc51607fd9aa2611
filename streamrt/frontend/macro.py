"""Macros (PeakStream's PS_BEGIN_MACRO/PS_END_MACRO): a function or a ``with`` section whose
recorded work is compiled once per signature and replayed with one submission.

``@ps.macro`` -- the first call with a signature (input shapes, dtypes and kinds; control
values) runs the Python body, records it, builds the program sequence and keeps a *section
record*: how to re-create every port of the section from new inputs, the program-sequence
template and where the outputs are. Later calls with the same signature re-create the ports
and submit the instantiated sequence without running the body.

``with ps.macro_section(name, inputs, controls):`` -- Python cannot skip a ``with`` body, so
the body runs every time; the section's recorded trace is matched against the macro cache
(keyed by name and controls) and a hit skips ProgGen. See docs/guide.md."""
from __future__ import annotations

import contextlib
import functools
import itertools
import math

import numpy as np

from ..core import hooks, keys, stats
from ..core.config import settings
from ..core.ir import DONE, NEW, SUBMITTED, Port, is_scratch, scratch_port
from ..core.errors import ArgumentError, MacroError, callsite, record_error
from .. import compiler
from ..compiler import sequence
from ..backends import registry
from ..backends.numba_cpu import jit
from ..runtime import macro_cache, cscheduler, direct, tiers
from ..runtime.workqueue import current_queue
from .array import Array, const_port, host
from .creation import asarray


class _Recording:
    __slots__ = ("name", "stack", "input_ids", "rng", "rng_start")

    def __init__(self, name, input_ids):
        self.name = name
        self.stack = []
        self.input_ids = set(input_ids)
        self.rng = {}          # scalar port id -> (generator, 'key' | 'ctr', offset)
        self.rng_start = {}    # generator -> its counter when the body first drew from it


def note_rng(rec, gen, key_port, ctr_port, base):
    """A draw from ``gen`` (created outside the body) inside a recording: its key and counter
    parameters become replay inputs, so every replay draws new numbers (random.py)."""
    start = rec.rng_start.setdefault(gen, base)
    rec.rng[key_port.id] = (gen, "key", 0)
    rec.rng[ctr_port.id] = (gen, "ctr", (base - start) % (1 << 64))


def _control_key(v, site, what):
    """A hashable key of a control value, with the type of every scalar in it: 2, 2.0 and True
    are equal in Python but give different dtypes in the body."""
    t = type(v)
    if t is tuple or t is list:
        return (t, tuple([_control_key(x, site, what) for x in v]))
    if t is dict:
        return (t, tuple(sorted((k, _control_key(x, site, what)) for k, x in v.items())))
    if isinstance(v, (float, np.floating)):
        return (t, v, math.copysign(1.0, v))     # (-0.0 == 0.0, but 1 / -0.0 is -inf)
    if isinstance(v, (complex, np.complexfloating)):
        return (t, v, math.copysign(1.0, v.real), math.copysign(1.0, v.imag))
    try:
        hash(v)
        return (t, v)
    except TypeError:
        raise record_error(ArgumentError, f"{what}: control argument of type "
                           f"{type(v).__name__} is not hashable; pass arrays as inputs and "
                           "hashable values as controls", site) from None


def _flatten(tree, leaves):
    """Structure of ``tree`` with Array leaves replaced by their index in ``leaves``."""
    if isinstance(tree, Array):
        leaves.append(tree)
        return ("A", len(leaves) - 1)
    if isinstance(tree, tuple):
        return ("T", tuple(_flatten(x, leaves) for x in tree))
    if isinstance(tree, list):
        return ("L", tuple(_flatten(x, leaves) for x in tree))
    if isinstance(tree, dict):
        return ("D", tuple((k, _flatten(v, leaves)) for k, v in tree.items()))
    return ("C", tree)


def _unflatten(struct, leaves):
    tag, v = struct
    if tag == "A":
        return leaves[v]
    if tag == "T":
        return tuple(_unflatten(x, leaves) for x in v)
    if tag == "L":
        return [_unflatten(x, leaves) for x in v]
    if tag == "D":
        return {k: _unflatten(x, leaves) for k, x in v}
    return v


class _Section:
    """What a replay needs: port recipes, the program-sequence template, the outputs."""
    __slots__ = ("recipes", "template", "outputs", "struct", "n", "nnew", "build", "sites",
                 "advance", "direct")

    def __init__(self, recipes, template, outputs, struct, n, advance=()):
        self.recipes, self.template, self.outputs, self.struct, self.n = (
            recipes, template, outputs, struct, n)
        self.advance = advance     # (generator, values the body drew from it)
        self.nnew = sum(1 for r in recipes if r[0] == "N")
        self.sites = [r[7] for r in recipes if r[0] == "N"]
        self.build = _builder(recipes)
        self.direct = None         # executors/direct.py: None (not tried), False or a Plan


def _builder(recipes):
    """A generated function that re-creates the section's ports from new inputs: straight-line
    code, no per-op interpretation (the replay's hot path). Inputs and frozen values come first,
    then views of inputs (a view is numbered before its base), then the recorded ops in order."""
    g = {"Port": Port, "DONE": DONE, "SUBMITTED": SUBMITTED, "scratch_port": scratch_port}
    lines = ["def build(inputs, q):"]
    for i, r in enumerate(recipes):
        if r[0] == "I":
            lines.append(f"    p{i} = inputs[{r[1]}]._port")
        elif r[0] == "B":
            lines.append(f"    p{i} = inputs[{r[1]}]._port.inputs[0]")
        elif r[0] == "F":
            g[f"f{i}"] = r[1]
            lines.append(f"    p{i} = f{i}")
        elif r[0] == "S":
            _, dt, shape, site = r
            g[f"s{i}"] = (shape, dt, site)
            lines.append(f"    p{i} = scratch_port(*s{i})")
        elif r[0] == "R":
            # a generator's key or counter: read from the generator at each replay
            _, gen, field, off, dt, params = r
            g[f"r{i}"] = (gen._replay_param, field, off, dt, params)
            lines.append(f"    f, w, o, d, a = r{i}")
            lines.append(f"    p{i} = Port('scalar', 'scalar', d, (), (), a, None, None, None, "
                         "f(w, o))")
    for i, r in enumerate(recipes):
        if r[0] == "V":
            # a view of an input taken inside the body (not recorded: its base was computed)
            _, b, dt, shape, params, site = r
            g[f"c{i}"] = (dt, shape, params, site)
            lines.append(f"    d, s, a, t = c{i}")
            lines.append(f"    p{i} = Port('view', 'view', d, s, (p{b},), a, t)")
            lines.append(f"    p{b}.nrefs += 1")
            lines.append(f"    p{i}.state = DONE if p{b}.state == DONE else SUBMITTED")
    for i, r in enumerate(recipes):
        if r[0] == "N":
            _, kind, op, dt, shape, ins, params, site, loop = r
            g[f"c{i}"] = (kind, op, dt, shape, params, site, loop)
            tup = "(" + "".join(f"p{j}, " for j in ins) + ")"
            lines.append(f"    k, o, d, s, a, t, l = c{i}")
            lines.append(f"    p{i} = Port(k, o, d, s, {tup}, a, t, q, None, None, l)")
    lines.append("    return [" + ", ".join(f"p{i}" for i in range(len(recipes))) + "]")
    exec(compile("\n".join(lines), "<streamrt macro replay>", "exec"), g)  # noqa: S102
    return g["build"]


class Macro:
    """A function recorded once per signature and replayed (see module docstring)."""

    def __init__(self, fn, static_argnames=(), name=None):
        self.fn = fn
        self.static_argnames = frozenset(static_argnames or ())
        self.name = name or getattr(fn, "__qualname__", repr(fn))
        self.calls = 0          # times the Python body ran (recordings and inlined nests)
        self.replays = 0
        # the last section replayed directly, for calls with only plain Array arguments:
        # (settings memo, cache generation, argument signature, section)
        self._last = None
        # signatures of small computed inputs recorded before: their calls run the body on
        # the NumPy tier (_small_sig, _run_at_once)
        self._at_once = set()
        functools.update_wrapper(self, fn)

    def __repr__(self):
        return f"<streamrt macro {self.name}>"

    def _split_args(self, args, kwargs, site):
        inputs, sig = [], []
        seen = {}           # aliasing: the same array (or view base) passed twice

        def conv(name, v):
            if name not in self.static_argnames:
                if isinstance(v, Array):
                    inputs.append(v)
                    p = v._port
                    alias = seen.setdefault(p.id, len(seen))
                    if p.kind == "view":    # where the view reads is part of the code
                        return ("I", p.shape, p.dtype, p.kind, alias, p.params,
                                seen.setdefault(("base", p.inputs[0].id), len(seen)))
                    return ("I", p.shape, p.dtype, p.kind, alias)
                if isinstance(v, np.ndarray):
                    a = Array._wrap(const_port(v, site))
                    inputs.append(a)
                    return ("I", a.shape, a.dtype, "const",
                            seen.setdefault(a._port.id, len(seen)))
            return ("K", _control_key(v, site, self.name))

        new_args = []
        for i, v in enumerate(args):
            sig.append(conv(i, v))
            new_args.append(inputs[-1] if sig[-1][0] == "I" else v)
        new_kwargs = {}
        for k in sorted(kwargs):
            sig.append((k, conv(k, kwargs[k])))
            new_kwargs[k] = inputs[-1] if sig[-1][1][0] == "I" else kwargs[k]
        return inputs, tuple(sig), new_args, new_kwargs

    def __call__(self, *args, **kwargs):
        last = self._last
        if last is not None and not kwargs:
            out = self._fast(last, args)
            if out is not None:
                return out
        site = callsite()
        q = current_queue()
        rec = q.recording
        if rec is not None:
            # nested inside a recording: the body becomes part of the outer section
            if self in rec.stack:
                raise record_error(MacroError, f"recursive call of the macro {self.name!r} "
                                   "while it is being recorded", site)
            rec.stack.append(self)
            try:
                self.calls += 1
                return self.fn(*args, **kwargs)
            finally:
                rec.stack.pop()
        small = _small_sig(args, kwargs, site, self.name)
        if small is not None and small in self._at_once:
            return self._run_at_once(args, kwargs)
        inputs, sig, args, kwargs = self._split_args(args, kwargs, site)
        executor = registry.get()
        key = (self, sig, keys.settings_key(executor.name))
        cache = macro_cache.get()
        sec = cache.section(key)
        prof = hooks.profiler
        if sec is not None:
            if small is not None:       # (recorded before with inputs this small)
                _note(self._at_once, small)
                return self._run_at_once(args, kwargs)
            if sec.direct and cscheduler.direct_ok():
                if q.entries:
                    cscheduler.flush(q, reason="macro-begin")
                out = self._run_direct(sec, inputs, q, executor)
                if out is not None:
                    if not kwargs:
                        self._remember(args, sec, cache, executor)
                    return out
            cache.note(True)
            if prof is not None:
                prof.cache("macro", True, site)
                prof.replay(sec.sites)
            return self._replay(sec, inputs, q, executor)
        cache.note(False)
        if prof is not None:
            prof.cache("macro", False, site, f"first call of {self.name} with this signature")
        out = self._record(key, inputs, args, kwargs, q, executor, site, small is not None)
        if small is not None:
            _note(self._at_once, small)
        return out

    # ---- small computed inputs: the body on the NumPy tier --------------------------------
    def _run_at_once(self, args, kwargs):
        """The body itself, its ops on the NumPy tier (NumPy arrays passed as Arrays), for a
        signature recorded before (so its errors -- a write into an input, a read -- were
        raised then): a replay costs a flush, a template's instantiation and a kernel launch,
        30-80 us, where the ops of a small body cost NumPy's (run.py's smallloop_macro: 10
        ops on 1,000-element arrays, 80 us a replay interpreted, 32 compiled, ~4 at once)."""
        self.calls += 1
        stats.add("macro_calls_at_once")
        if any(type(v) is np.ndarray for v in args):
            args = [asarray(v) if type(v) is np.ndarray else v for v in args]
        if kwargs and any(type(v) is np.ndarray for v in kwargs.values()):
            kwargs = {k: asarray(v) if type(v) is np.ndarray else v for k, v in kwargs.items()}
        return self.fn(*args, **kwargs)

    # ---- the fast path: same plain-Array signature as the last direct replay -------------
    @staticmethod
    def _plain_sig(args):
        """(shape, dtype, kind) per argument if every argument is an Array over its own
        (non-view) port -- the signature ``_split_args`` gives such calls -- else None."""
        sig = []
        seen = set()
        for a in args:
            if type(a) is not Array:
                return None
            p = a._port
            if p.kind == "view" or p.id in seen:
                return None
            seen.add(p.id)
            sig.append((p.shape, p.dtype, p.kind))
        return tuple(sig)

    def _remember(self, args, sec, cache, executor):
        plain = self._plain_sig(args)
        if plain is not None:
            # (the executor follows from the settings, whose memo is checked at each use)
            self._last = (settings.__dict__.get("_settings_key"), cache.generation, plain, sec,
                          executor)

    def _fast(self, last, args):
        """A direct replay without building the cache key: the settings, the macro cache and
        the arguments' signature are those of the last direct replay. None: the general
        path (which also raises any error, naming the caller's line)."""
        memo, gen, plain, sec, executor = last
        if memo is None or settings.__dict__.get("_settings_key") is not memo or \
                macro_cache.get().generation != gen or self._plain_sig(args) != plain:
            return None
        q = current_queue()
        if q.recording is not None or q.entries or not cscheduler.direct_ok():
            return None
        return self._run_direct(sec, args, q, executor)

    def _run_direct(self, sec, inputs, q, executor):
        """The section run by its direct plan (counting the macro-cache hit), or None."""
        out = sec.direct.run(inputs, q, executor)
        if out is not None:
            self.replays += 1
        return out

    # ---- first call: run the body and keep the section ------------------------------------
    def _record(self, key, inputs, args, kwargs, q, executor, site, small=False):
        """The first call with a signature: the body recorded, its section kept and its
        sequence submitted -- or, for small computed inputs (``small``: later calls run the
        body at once, no replay will use a section), its entries run through NumPy when they
        qualify (cscheduler.run_now), with no ProgGen and no section."""
        cscheduler.flush(q, reason="macro-begin")
        rec = _Recording(self.name, [a._port.id for a in inputs])
        q.set_recording(rec)
        rec.stack.append(self)
        try:
            self.calls += 1
            out = self.fn(*args, **kwargs)
        except BaseException:
            q.set_recording(None)
            q.take_trace()          # the section's partial work is dropped with the error
            raise
        finally:
            rec.stack.pop()
        q.set_recording(None)
        leaves = []
        struct = _flatten(out, leaves)
        entries, kparts, kports = q.take_trace()
        if not entries:
            # nothing recorded (the body only returned inputs or constants)
            return out
        if small and cscheduler.direct_ok() and \
                cscheduler.run_now(entries, cscheduler.FIRST_SIGHT_ELEMENTS):
            return out
        input_pos = {a._port.id: i for i, a in enumerate(inputs)}
        # bases of input views (re-derived from the new inputs, never frozen)
        base_pos = {a._port.inputs[0].id: i for i, a in enumerate(inputs)
                    if a._port.kind == "view"}
        num = {p.id: i for i, p in enumerate(kports)}
        kports = list(kports)
        for a in leaves:
            # outputs no recorded op reads (an input returned as it is, a view of an input)
            # are numbered too, so that a replay returns them for its own inputs
            p = a._port
            if p.id not in num:
                if p.kind == "view" and p.inputs[0].id not in num:
                    num[p.inputs[0].id] = len(kports)
                    kports.append(p.inputs[0])
                num[p.id] = len(kports)
                kports.append(p)
        recipes = []
        for p in kports:
            if p.state == NEW:
                recipes.append(("N", p.kind, p.op, p.dtype, p.shape,
                                tuple(num[i.id] for i in p.inputs), p.params, p.site,
                                p.loop_dtype))
            elif p.id in rec.rng:
                recipes.append(("R", *rec.rng[p.id], p.dtype, p.params))
            elif p.id in input_pos:
                recipes.append(("I", input_pos[p.id]))
            elif p.id in base_pos:
                recipes.append(("B", base_pos[p.id]))
            elif is_scratch(p):
                # an uninitialised buffer a region write takes over (roll, concatenate...):
                # a new one per replay, or every replay's result would share it
                recipes.append(("S", p.dtype, p.shape, p.site))
            elif p.kind == "view" and (p.inputs[0].id in input_pos
                                       or p.inputs[0].id in base_pos):
                # a view of an input taken in the body: its base was computed, so it was
                # not recorded; re-create it over the new input at each replay
                recipes.append(("V", num[p.inputs[0].id], p.dtype, p.shape, p.params, p.site))
            else:
                recipes.append(("F", p))       # a constant or closure value: frozen
        seq = proggen_generate(entries, executor)
        t = sequence.to_template(seq, kports)
        outputs = tuple(("P", num[a._port.id]) for a in leaves)
        cscheduler.submit_replay(seq, kports, executor)
        if t is not None:
            advance = tuple((gen, (gen._counter - c0) % (1 << 64))
                            for gen, c0 in rec.rng_start.items())
            macro_cache.get().put_section(key, _Section(tuple(recipes), t, outputs, struct,
                                                         len(kports), advance))
        return out

    # ---- later calls: re-create the ports, submit the template -------------------------------
    def _replay(self, sec, inputs, q, executor):
        self.replays += 1
        if q.entries:
            # inputs may still be pending in the work queue: submit them first (as _record does)
            cscheduler.flush(q, reason="macro-begin")
        ports = sec.build(inputs, q)
        for gen, n in sec.advance:
            gen.advance(n)
        stats.add("ops_recorded", sec.nnew)
        leaves = [Array._wrap(ports[o[1]]) for o in sec.outputs]
        seq = sequence.instantiate(sec.template, ports)
        if sec.direct is None and jit.all_ready(seq):
            sec.direct = (settings.direct_replay and direct.plan(
                sec, seq, ports, executor, Array._wrap, _unflatten)) or False
        cscheduler.submit_replay(seq, ports, executor)
        return _unflatten(sec.struct, leaves)


def _note(memo, sig, bound=1024):
    """``sig`` added to the set ``memo`` of signatures run at once (emptied at ``bound``)."""
    if len(memo) >= bound:
        memo.clear()
    memo.add(sig)


def _small_sig(args, kwargs, site, name):
    """The signature under which a call may run the macro's body on the NumPy tier -- every
    array argument computed and under the tier's limit, the tier on
    (STREAMRT_EAGER_ELEMENTS) -- or None: each array's shape, dtype and strides, each other
    argument's control key (positional, then keywords by name)."""
    if not tiers.eager_now():
        return None
    lim = tiers.limit()
    sig = []
    found = False
    items = enumerate(args) if not kwargs else \
        itertools.chain(enumerate(args), sorted(kwargs.items()))
    for k, v in items:
        t = type(v)
        if t is Array:
            h = host(v)
            if h is None or h.size >= lim:
                return None
            sig.append((k, h.shape, h.dtype, h.strides))
            found = True
        elif t is np.ndarray:
            if v.size >= lim:
                return None
            sig.append((k, v.shape, v.dtype, v.strides))
            found = True
        else:
            sig.append((k, _control_key(v, site, name)))
    return tuple(sig) if found else None


def proggen_generate(entries, executor):
    return compiler.generate(entries, executor.caps)


def macro(fn=None, *, static_argnames=(), name=None):
    """Decorator: record ``fn`` once per signature, replay it afterwards without running it.

    Array (and NumPy array) arguments are inputs; every other argument is a control: its value
    is part of the signature. Arrays the body reads from globals or closures, and Python
    scalars it creates, are frozen at the first call (as in ``jax.jit``)."""
    if fn is None:
        return lambda f: Macro(f, static_argnames, name)
    return Macro(fn, static_argnames, name)


@contextlib.contextmanager
def macro_section(name, inputs=(), controls=()):
    """A macro for code that cannot be a function. The body always runs (Python cannot skip a
    ``with`` body); its recorded trace is flushed at the end as one section, keyed by ``name``,
    the input signature and ``controls``, and a macro-cache hit skips ProgGen."""
    site = callsite()
    q = current_queue()
    if q.recording is not None:
        raise record_error(MacroError, "macro_section inside a macro recording is not "
                           "supported; use a nested @ps.macro function", site)
    sig = tuple((a.shape, a.dtype) for a in inputs if isinstance(a, Array))
    ckey = _control_key(tuple(controls) if isinstance(controls, (list, tuple)) else controls,
                        site, name)
    small = _small_sig(tuple(inputs), None, site, name) if all(
        type(a) is Array or type(a) is np.ndarray for a in inputs) else None
    if small is not None:
        small = (name, small, ckey)
        if small in _SECTIONS_AT_ONCE:
            # recorded before with inputs this small: the body's ops on the NumPy tier, as
            # a small @ps.macro call runs its body (Macro._run_at_once)
            stats.add("macro_calls_at_once")
            yield
            return
    cscheduler.flush(q, reason="macro-begin")
    q.set_recording(_Recording(name, [a._port.id for a in inputs if isinstance(a, Array)]))
    try:
        yield
    except BaseException:
        q.set_recording(None)
        q.take_trace()
        raise
    q.set_recording(None)
    cscheduler.flush(q, reason="macro-end", macro_key=(name, sig, ckey), force=True)
    if small is not None:
        _note(_SECTIONS_AT_ONCE, small)


# sections (name, input signature, controls) recorded with small computed inputs: their
# later runs with such inputs run at once (macro_section)
_SECTIONS_AT_ONCE: set = set()
