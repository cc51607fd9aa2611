"""The C record path against its definition, on random programs: binary operators between
Arrays and with Python scalars (either side), one-operand map functions, basic indexing of
arrays not computed yet (views), releases, the same
body recorded three rounds in a row (the second and third follow the trace the first left in
the trace cache). Each round is recorded by the Python path and by the C path from the same
state; every work-queue entry (its port: kind, op, dtypes, shape, static arguments, state,
reference count, call site, inputs), the trace-key entries and the released flags must be
equal. (Following a cached trace is the C path's own shortcut: the Python path builds every
key entry, the C path compares them with the followed trace's; the entries a queue yields are
the same.) Runs on the reference executor: the rounds are flushed, nothing is compiled."""
import contextlib
import gc

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import streamrt as ps
from streamrt.core.ir import NEW
from streamrt.frontend import native
from streamrt.runtime.workqueue import current_queue

pytestmark = pytest.mark.skipif(not native.available(),
                                reason="the C extension is not built here, or is off")

BINARY = {
    "add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b, "floordiv": lambda a, b: a // b, "mod": lambda a, b: a % b,
    "pow2": lambda a, b: a ** 2, "lt": lambda a, b: a < b, "ge": lambda a, b: a >= b,
    "eq": lambda a, b: a == b, "and": lambda a, b: a & b, "or": lambda a, b: a | b,
    "radd": lambda a, b: b + a, "rsub": lambda a, b: b - a, "rmul": lambda a, b: b * a,
    "rdiv": lambda a, b: b / a,
}
UNARY = {"sqrt": ps.sqrt, "abs": ps.abs, "exp": ps.exp, "negative": ps.negative,
         "sin": ps.sin, "floor": ps.floor, "square": ps.square}
DTYPES = (np.float32, np.float64, np.int32, np.int64)
N = 16

# an instruction: ("bin", op, operand, other operand or None, scalar) | ("un", fn, operand)
# | ("del", operand) | ("ix", operand, key items) | ("square", operand); operands are
# indices into the values made so far (modulo their count); a key item is an int or
# (start, stop, step) of a slice
_ITEM = st.one_of(st.integers(-18, 18),
                  st.tuples(st.one_of(st.none(), st.integers(-18, 18)),
                            st.one_of(st.none(), st.integers(-18, 18)),
                            st.sampled_from([None, 1, 2, -1, 3, -2, 0])))
instruction = st.one_of(
    st.tuples(st.just("bin"), st.sampled_from(sorted(BINARY)), st.integers(0, 63),
              st.one_of(st.none(), st.integers(0, 63)),
              st.sampled_from([2.0, -0.5, 3, 0, 1, True, 7.25])),
    st.tuples(st.just("un"), st.sampled_from(sorted(UNARY)), st.integers(0, 63)),
    st.tuples(st.just("del"), st.integers(0, 63)),
    st.tuples(st.just("ix"), st.integers(0, 63), st.lists(_ITEM, min_size=1, max_size=3)),
    st.tuples(st.just("square"), st.integers(0, 63)))
programs = st.tuples(st.lists(st.sampled_from(DTYPES), min_size=1, max_size=3),
                     st.lists(instruction, min_size=1, max_size=14))


def _body(arrays, code):
    """Run ``code`` on ``arrays``; returns the live values and what raised, in order."""
    vals, errors = list(arrays), []
    for ins in code:
        if not vals:
            break
        try:
            if ins[0] == "bin":
                _, op, i, j, scalar = ins
                a = vals[i % len(vals)]
                b = scalar if j is None else vals[j % len(vals)]
                vals.append(BINARY[op](a, b))
            elif ins[0] == "un":
                vals.append(UNARY[ins[1]](vals[ins[2] % len(vals)]))
            elif ins[0] == "ix":        # basic indexing: a view (the C path's getitem_lazy)
                key = tuple(k if isinstance(k, int) else slice(*k) for k in ins[2])
                vals.append(vals[ins[1] % len(vals)][key if len(key) > 1 else key[0]])
            elif ins[0] == "square":    # a 2-D value to index (a view of a 16-element one)
                a = vals[ins[1] % len(vals)]
                if a.size == N:
                    vals.append(a.reshape(4, 4))
            else:
                del vals[ins[1] % len(vals)]         # a release (the last reference may go)
        except Exception as e:  # noqa: BLE001 - the same error is expected of both paths
            errors.append((type(e).__name__, str(e)))
    return vals, errors


def _snapshot(q, arrays, errors):
    """What a round recorded, without object identities. (Cyclic garbage is collected first:
    an error's traceback holds the frames that raised it, and with them Arrays -- their
    ports' counts -- until the collector runs; the two paths raise through different
    frames.)"""
    gc.collect()
    ext = {a._port.id: n for n, a in enumerate(arrays)}
    pos = {}
    entries = []
    for e in q.entries:
        if e[0] != "compute":
            entries.append(e[:2])
            continue
        p = e[1]
        pos[p.id] = len(entries)
        ins = []
        for i in p.inputs:
            if i.id in pos:
                ins.append(("entry", pos[i.id]))
            elif i.id in ext:
                ins.append(("array", ext[i.id]))
            else:
                ins.append((i.kind, i.dtype, i.shape, i.params, i.scalar))
        entries.append((p.kind, p.op, p.dtype, p.shape, p.params, p.loop_dtype, p.state,
                        p.nrefs, p.site.code, p.site.lasti, tuple(ins)))
    released = tuple(p.nrefs <= 0 for p in q.kports if p.state == NEW)
    return entries, q.key_entries(), released, errors


def _rounds(arrays, code, path):
    ps.clear_caches()               # both paths start from an empty trace cache
    out, following = [], []
    with (native.disabled() if path == "python" else contextlib.nullcontext()):
        for _ in range(3):
            ps.sync()
            q = current_queue()
            vals, errors = _body(arrays, code)
            out.append(_snapshot(q, arrays, errors))
            following.append((q.follow is not None, q.fpos))
            del vals
            ps.sync()               # the flush inserts (then hits) the trace: followed next
    return out, following


@settings(max_examples=200, deadline=None, derandomize=True, database=None,
          suppress_health_check=list(HealthCheck))
@given(programs)
def test_both_record_paths_record_the_same_entries(program):
    dtypes, code = program
    rng = np.random.default_rng(len(code))
    arrays = [ps.asarray((rng.random(N) * 4 - 1).astype(dt)) for dt in dtypes]
    with ps.config.override(backend="reference"):
        by_python, _ = _rounds(arrays, code, "python")
        by_c, following = _rounds(arrays, code, "c")
    assert by_c == by_python
    for r in (1, 2):                # a keyed trace: the next rounds follow it to its end
        keys = by_c[r][1]
        if keys:
            assert following[r] == (True, len(keys)), following
