"""Macros: ``@ps.macro`` records once per signature and replays without running the body;
``ps.macro_section`` skips ProgGen on a hit; nesting; the errors a recording raises (naming the
line) and the runtime's state after them. Asserted through counters and results only."""
from __future__ import annotations

import os

import numpy as np
import pytest

import streamrt as ps
from helpers import assert_same

HERE = os.path.basename(__file__)


def _line(marker):
    """Line number of the line of this file that ends with the comment ``# <marker>``."""
    with open(__file__) as f:
        for i, text in enumerate(f, 1):
            if text.rstrip().endswith(f"# <{marker}>"):
                return i
    raise AssertionError(f"marker {marker} not found")


def _at(marker):
    return f"{HERE}:{_line(marker)}"


def _f64(n=100, seed=0):
    return np.random.default_rng(seed).uniform(-2, 2, n)


def _step_macro(ran):
    """A macro of an update and a reduction that notes each run of its body in ``ran``."""
    @ps.macro
    def step(u, c):
        ran.append(1)
        v = u * 0.5 + ps.sin(u) * c
        return v, ps.sum(v * v)
    return step


# ---- record once, replay without the body -----------------------------------------------------
def test_replay_matches_body_and_skips_it(stats):
    ran = []
    step = _step_macro(ran)
    u0 = _f64(seed=1)
    u = ps.asarray(u0) * 1.0        # a computed array (the kind of every later input)
    ps.sync()
    ref = u0
    for i in range(6):
        u, s = step(u, 2.0)
        ref = ref * 0.5 + np.sin(ref) * 2.0
        assert_same(u, ref, ulps=8, what=f"call {i}")
        assert float(s) == pytest.approx(float(np.sum(ref * ref)), rel=1e-12)
    assert len(ran) == 1                # the body ran at the first call only
    assert step.calls == 1 and step.replays == 5
    st = stats()
    assert st["macro_cache_misses"] == 1 and st["macro_cache_hits"] == 5


def test_small_computed_inputs_run_the_body_on_the_numpy_tier_once_recorded(stats):
    """With the NumPy tier on, a call whose array arguments are computed and small runs the
    body itself (its ops at once, at NumPy's cost) once a call with that signature has been
    recorded -- a replay's flush and kernel launch cost more than such a body -- and the
    recording call runs what it recorded through NumPy; large inputs still replay."""
    ran = []
    step = _step_macro(ran)
    with ps.config.override(eager_elements=1 << 16):
        u0 = _f64(seed=3)
        u, ref = ps.asarray(u0), u0
        for i in range(4):
            u, s = step(u, 2.0)
            ref = ref * 0.5 + np.sin(ref) * 2.0
            assert_same(u, ref, ulps=8, what=f"call {i}")
            assert float(s) == pytest.approx(float(np.sum(ref * ref)), rel=1e-12)
        assert len(ran) == 4 and step.calls == 4 and step.replays == 0
        st = stats()
        assert st["macro_cache_misses"] == 1 and st["macro_calls_at_once"] == 3
        # (the recording call itself ran its ops through NumPy: no kernel, no section)
        assert st["kernels_launched"] == 0 and st["kernels_interpreted"] == 0
        assert st["ops_eager"] >= 3 * 5     # (the three calls' ops ran at once)
        step(u, 3.0)                        # another control: recorded first
        assert stats()["macro_cache_misses"] == 2 and stats()["macro_calls_at_once"] == 3
        v, _ = step(u0, 2.0)                # a NumPy array: an Array comes back
        assert isinstance(v, ps.Array) and stats()["macro_calls_at_once"] == 4
        assert_same(v, u0 * 0.5 + np.sin(u0) * 2.0, ulps=8)
        big0 = _f64(n=1 << 17, seed=4)
        big = ps.asarray(big0)
        for _ in range(3):
            w, _ = step(big, 2.0)
        assert step.replays == 2 and stats()["macro_calls_at_once"] == 4
        assert_same(w, big0 * 0.5 + np.sin(big0) * 2.0, ulps=8)


def test_a_small_call_that_writes_its_input_still_raises(stats):
    """The body runs at once only for a signature recorded before, so what a recording
    refuses -- a write into an input -- raises at every call, small inputs too."""
    @ps.macro
    def f(a):
        a[0] = 5.0
        return a

    with ps.config.override(eager_elements=1 << 16):
        a = _f64(seed=5)
        x = ps.asarray(a)
        for _ in range(2):
            with pytest.raises(ps.MacroError):
                f(x)
        assert_same(x, a)
        assert stats()["macro_calls_at_once"] == 0


def test_replay_uses_the_new_inputs_values(stats):
    ran = []

    @ps.macro
    def f(a, b):
        ran.append(1)
        return ps.exp(a) - b * 3.0

    for seed in range(4):
        a, b = _f64(seed=seed), _f64(seed=seed + 10)
        # exp(a) - 3b may cancel: bound the error by exp's ulps, not the difference's
        assert_same(f(ps.asarray(a), ps.asarray(b)), np.exp(a) - b * 3.0,
                    atol=8 * np.spacing(np.exp(np.abs(a)).max()))
    # NumPy arrays are inputs too (wrapped as constants)
    assert_same(f(a + 1, b), np.exp(a + 1) - b * 3.0,
                atol=8 * np.spacing(np.exp(np.abs(a + 1)).max()))
    assert len(ran) == 1 and f.replays == 4
    assert stats()["macro_cache_hits"] == 4


def test_new_signature_records_again(stats):
    ran = []

    @ps.macro
    def f(a, c):
        ran.append(c)
        return a * c + 1.0

    a = _f64(seed=2)
    x = ps.asarray(a)
    calls = [(x, 2.0), (x, 2.0), (x, 3.0), (x, 3.0),          # a new control value
             (ps.asarray(a[:50]), 3.0),                       # a new shape
             (ps.asarray(a.astype(np.float32)), 3.0),         # a new dtype
             (x, 2.0)]                                        # the first signature again
    outs = [np.asarray(f(v, c)) for v, c in calls]
    assert ran == [2.0, 3.0, 3.0, 3.0]
    assert f.calls == 4 and f.replays == 3
    st = stats()
    assert st["macro_cache_misses"] == 4 and st["macro_cache_hits"] == 3
    for out, (v, c) in zip(outs, calls):
        want = np.asarray(v) * c + 1.0
        assert_same(out, want.astype(np.asarray(v).dtype))


def test_control_types_are_part_of_the_signature():
    """2, 2.0 and True are equal in Python but give different result dtypes in the body."""
    @ps.macro
    def f(a, c):
        return a * c

    a = np.arange(5, dtype=np.int32)
    x = ps.asarray(a)
    r_int, r_float, r_bool = f(x, 2), f(x, 2.0), f(x, True)
    assert_same(r_int, a * 2)
    assert_same(r_float, a * 2.0)
    assert_same(r_bool, a * True)
    assert f.calls == 3 and f.replays == 0


def test_list_controls_are_converted_and_unhashable_raise():
    @ps.macro
    def f(a, weights):
        out = a * 0.0
        for w in weights:
            out = out + a * w
        return out

    a = _f64(seed=3)
    x = ps.asarray(a)
    assert_same(f(x, [1.0, 2.0]), a * 0.0 + a * 1.0 + a * 2.0)
    assert_same(f(x, [1.0, 2.0]), a * 0.0 + a * 1.0 + a * 2.0)      # a new list, equal
    assert f.calls == 1 and f.replays == 1
    assert_same(f(x, [1.0]), a * 0.0 + a * 1.0)                     # another value: records
    assert f.calls == 2

    class Opaque:
        __hash__ = None

    with pytest.raises(ps.ArgumentError) as e:
        f(x, Opaque())                                              # <unhashable>
    msg = str(e.value)
    assert _at("unhashable") in msg and "Opaque" in msg and "not hashable" in msg
    with pytest.raises(ps.ArgumentError, match="set"):
        f(x, [1.0, {2.0}])                  # an unhashable value nested in a list
    assert f.calls == 2
    assert_same(f(x, [1.0]), a * 0.0 + a * 1.0)                     # still a replay
    assert f.calls == 2 and f.replays == 2


def test_keyword_inputs_and_controls():
    @ps.macro
    def f(a, *, scale, b):
        return a * scale + b

    for i in range(3):
        a, b = _f64(seed=i), _f64(seed=i + 5)
        assert_same(f(ps.asarray(a), scale=2.0, b=ps.asarray(b)), a * 2.0 + b)
    assert f.calls == 1 and f.replays == 2


# ---- what a replay returns ---------------------------------------------------------------------
def test_returned_input_and_views_follow_the_new_inputs():
    """Outputs no recorded op computes -- an input returned as it is, a view of an input --
    and views of inputs read inside the body refer to the new inputs at each replay."""
    @ps.macro
    def f(a, b):
        d = a[1:] - a[:-1]
        return a, d, b[::2], b * 2.0

    for i in range(3):
        a, b = _f64(12, seed=i) ** (i + 1), _f64(12, seed=i + 7)
        ra, rd, rv, rb = f(ps.asarray(a), ps.asarray(b))
        assert_same(ra, a, what=f"call {i}: returned input")
        assert_same(rd, np.diff(a), what=f"call {i}: view of the input inside the body")
        assert_same(rv, b[::2], what=f"call {i}: returned view of an input")
        assert_same(rb, b * 2.0, what=f"call {i}")
    assert f.calls == 1 and f.replays == 2


def test_aliased_and_view_inputs_are_part_of_the_signature():
    @ps.macro
    def f(a, b):
        return a - b

    a = _f64(12, seed=4)
    x, y = ps.asarray(a), ps.asarray(a * 3.0)
    assert_same(f(x, x), a - a)
    assert_same(f(x, y), a - a * 3.0)       # not the f(x, x) section: b is not a
    assert_same(f(x[1:7], x[0:6]), a[1:7] - a[0:6])
    assert_same(f(x[0:6], x[::2]), a[0:6] - a[::2])     # other offsets and strides
    assert_same(f(y[1:7], y[0:6]), a[1:7] * 3.0 - a[0:6] * 3.0)
    assert f.calls == 4 and f.replays == 1


def test_inputs_pending_in_the_work_queue():
    """A replay whose inputs are still recorded-not-run results submits them first."""
    @ps.macro
    def f(a, b):
        return a * 2.0 + b

    for i in range(3):
        a, b = _f64(seed=20 + i), _f64(seed=30 + i)
        x = ps.asarray(a) + 1.0             # pending when the macro is called
        y = ps.asarray(b) * 3.0
        assert_same(f(x, y), (a + 1.0) * 2.0 + b * 3.0, what=f"call {i}")
    assert f.calls == 1 and f.replays == 2


# ---- direct replay (executors/direct.py) ------------------------------------------------------
def _normalise(u):
    m = ps.mean(u)
    return (u - m) * 0.5, ps.sum(u * u)


def _run_replays(n, direct, seed=40):
    """``n`` calls of a two-output macro (a reduction and a map) on computed inputs; the
    results and the counters of the calls after the first replay."""
    f = ps.macro(_normalise)
    u0 = _f64(seed=seed)
    outs = []
    with ps.config.override(direct_replay=direct):
        u = ps.asarray(u0) * 1.0
        ps.sync()
        for _ in range(2):              # record, then the first replay (builds the plan)
            v, s = f(u)
        ps.sync()
        ps.reset_stats()
        for _ in range(n):
            v, s = f(u)
            outs.append((v, s))
        res = [(np.asarray(v), float(s)) for v, s in outs]
        st = ps.runtime_stats()
    return u0, res, st, f


def test_direct_replay_matches_and_counts_like_the_general_path(stats):
    u0, direct, st_d, f = _run_replays(4, True)
    _, general, st_g, _ = _run_replays(4, False)
    ref = ((u0 - u0.mean()) * 0.5, float(np.sum(u0 * u0)))
    for (v, s), (gv, gs) in zip(direct, general):
        assert_same(v, ref[0], atol=1e-13)
        assert np.array_equal(v, gv) and s == gs         # the same kernels ran
        assert s == pytest.approx(ref[1], rel=1e-12)
    assert st_d["direct_replays"] == 4 and st_g["direct_replays"] == 0
    for k in ("kernels_launched", "macro_cache_hits", "ops_recorded", "flushes",
              "buffers_allocated", "bytes_allocated"):
        assert st_d[k] == st_g[k], k
    assert st_d["macro_cache_hits"] == 4 and st_d["kernels_launched"] >= 4
    assert f.replays == 5
    ps.reset_stats()
    assert ps.runtime_stats()["direct_replays"] == 0


def test_direct_replay_steps_aside_when_watched_or_failing(stats, tmp_path, monkeypatch):
    f = ps.macro(_normalise)
    u0 = _f64(seed=41)
    u = ps.asarray(u0) * 1.0
    ps.sync()
    for _ in range(2):
        f(u)
    ps.sync()
    ps.reset_stats()
    with ps.profile(str(tmp_path / "p.stprof")):        # a profile sees every kernel
        v, _ = f(u)
        assert_same(v, (u0 - u0.mean()) * 0.5, atol=1e-13)
    assert ps.runtime_stats()["direct_replays"] == 0

    def broken(*a):
        raise RuntimeError("device lost")
    from streamrt.runtime import macro_cache
    plan = next(sec.direct for key, sec in macro_cache.get()._sections.items()
                if key[0] is f)              # the section's direct plan: its kernels fail
    kernels = [step[0] for step in plan.steps]
    real = [(k.serial, k.parallel) for k in kernels]
    for k in kernels:
        k.serial = k.parallel = broken
    v, _ = f(u)                     # the general path runs it (split, then NumPy: counted)
    for k, (s, p) in zip(kernels, real):
        k.serial, k.parallel = s, p
    assert_same(v, (u0 - u0.mean()) * 0.5, atol=1e-13)
    assert ps.runtime_stats()["direct_replays"] == 0
    v, _ = f(u)
    assert ps.runtime_stats()["direct_replays"] == 1


def test_direct_replay_memo_follows_caches_settings_and_signature(stats):
    """The last direct replay's section is reused without building the key only while the
    settings, the macro cache and the argument signature are unchanged."""
    f = ps.macro(_normalise)
    u0 = _f64(seed=42)
    u = ps.asarray(u0) * 1.0
    ps.sync()
    for _ in range(3):                  # record, first replay (plan), a direct replay
        f(u)
    ps.reset_stats()
    v, _ = f(u)
    assert_same(v, (u0 - u0.mean()) * 0.5, atol=1e-13)
    st = stats()
    assert st["direct_replays"] == 1 and st["macro_cache_hits"] == 1
    ps.clear_caches()
    ps.reset_stats()
    f(u)                                # recorded again
    assert stats()["macro_cache_misses"] == 1 and f.calls == 2
    with ps.config.override(fusion=False):
        ps.reset_stats()
        v, _ = f(u)                     # other code: another section
        assert stats()["macro_cache_misses"] == 1
        assert_same(v, (u0 - u0.mean()) * 0.5, atol=1e-13)
    w0 = _f64(n=30, seed=43)
    ps.reset_stats()
    v, _ = f(ps.asarray(w0) * 1.0)      # another shape
    assert stats()["macro_cache_misses"] == 1
    assert_same(v, (w0 - w0.mean()) * 0.5, atol=1e-13)


# ---- nesting -----------------------------------------------------------------------------------
def test_nested_macro(stats):
    ran = {"inner": 0, "outer": 0}

    @ps.macro
    def inner(a):
        ran["inner"] += 1
        return a * 2.0

    @ps.macro
    def outer(a, b):
        ran["outer"] += 1
        return inner(a) + inner(b)

    for i in range(3):
        a, b = _f64(seed=40 + i), _f64(seed=50 + i)
        assert_same(outer(ps.asarray(a), ps.asarray(b) * 1.0), a * 2.0 + b * 2.0)
    assert ran == {"outer": 1, "inner": 2}  # inlined into the outer recording, then replayed
    assert outer.replays == 2 and inner.replays == 0
    st = stats()
    assert st["macro_cache_misses"] == 1 and st["macro_cache_hits"] == 2
    # the inner macro on its own records a section of its own
    a = _f64(seed=60)
    assert_same(inner(ps.asarray(a)), a * 2.0)
    assert_same(inner(ps.asarray(a + 1)), (a + 1) * 2.0)
    assert inner.replays == 1


# ---- errors inside a recording -----------------------------------------------------------------
def _assert_runtime_works():
    a = _f64(seed=99)
    assert_same(ps.asarray(a) * 2.0 + 1.0, a * 2.0 + 1.0)
    assert float(ps.sum(ps.asarray(a))) == pytest.approx(float(np.sum(a)))


def test_recursion_raises_naming_the_line():
    @ps.macro
    def f(a, k):
        if k == 0:
            return a * 1.0
        return f(a + 1.0, k - 1)            # <recursion>

    with pytest.raises(ps.MacroError) as e:
        f(ps.asarray(_f64(seed=5)), 2)
    msg = str(e.value)
    assert _at("recursion") in msg and "recursive" in msg
    _assert_runtime_works()
    a = _f64(seed=6)
    assert_same(f(ps.asarray(a), 0), a)     # not recursive with k == 0: fine
    assert_same(f(ps.asarray(a + 1), 0), a + 1)
    assert f.replays == 1


def _read_float(b):
    return float(ps.sum(b))                 # <read-float>


def _read_asarray(b):
    return np.asarray(b)                    # <read-asarray>


def _read_print(b):
    print(b)                                # <read-print>


def _read_sync(b):
    ps.sync()                               # <read-sync>


@pytest.mark.parametrize("read,marker", [(_read_float, "read-float"),
                                         (_read_asarray, "read-asarray"),
                                         (_read_print, "read-print"),
                                         (_read_sync, "read-sync")],
                         ids=["float", "asarray", "print", "sync"])
def test_read_inside_recording_raises_naming_the_line(read, marker):
    @ps.macro
    def f(a):
        b = a + 1.0
        read(b)
        return b

    with pytest.raises(ps.MacroError) as e:
        f(ps.asarray(_f64(seed=7)))
    msg = str(e.value)
    assert _at(marker) in msg, msg
    assert "while it is being recorded" in msg
    assert f.replays == 0
    _assert_runtime_works()


def test_assignment_into_input_raises_and_copy_is_fine():
    @ps.macro
    def f(a):
        a[0] = 5.0                          # <assign>
        return a

    a = _f64(seed=8)
    x = ps.asarray(a)
    with pytest.raises(ps.MacroError) as e:
        f(x)
    assert _at("assign") in str(e.value) and "input" in str(e.value)
    assert_same(x, a)                       # the input is unchanged
    _assert_runtime_works()

    @ps.macro
    def g(a):
        b = a.copy()
        b[0] = 5.0
        return b

    for seed in (9, 10):
        a = _f64(seed=seed)
        want = a.copy()
        want[0] = 5.0
        assert_same(g(ps.asarray(a)), want)
    assert g.replays == 1


def test_error_in_the_body_leaves_the_runtime_working(stats):
    @ps.macro
    def f(a, fail):
        b = a * 3.0
        if fail:
            raise KeyError("boom")
        return b + 1.0

    a = _f64(seed=11)
    pending = ps.asarray(a) - 1.0           # recorded before the macro: must survive
    with pytest.raises(KeyError):
        f(ps.asarray(a), True)
    assert_same(pending, a - 1.0)
    _assert_runtime_works()
    assert_same(f(ps.asarray(a), False), a * 3.0 + 1.0)
    assert_same(f(ps.asarray(a + 2), False), (a + 2) * 3.0 + 1.0)
    assert f.replays == 1
    # a macro_section that raises leaves the runtime working too
    with pytest.raises(ValueError):
        with ps.macro_section("failing", [ps.asarray(a)]):
            ps.asarray(a) * 5.0
            raise ValueError("boom")
    _assert_runtime_works()


# ---- macro_section -------------------------------------------------------------------------------
def _section_loop(stats, name, c, seed, n):
    """``n`` runs of a section updating ``u`` (checked against NumPy each time); the
    (misses, hits, runs at once) of the macro cache after each run."""
    a = _f64(50, seed=seed)
    u, ref = ps.asarray(a), a
    counts = []
    for i in range(n):
        with ps.macro_section(name, [u], controls=(c,)):
            u = u * 0.5 + ps.cos(u) * float(c)
        ref = ref * 0.5 + np.cos(ref) * float(c)
        assert_same(u, ref, ulps=8, what=f"iteration {i}")
        st = stats()
        counts.append((st["macro_cache_misses"], st["macro_cache_hits"],
                       st["macro_calls_at_once"]))
    return counts


def test_macro_section_hits_from_second_iteration(stats):
    counts = _section_loop(stats, "loop body", 2, 12, 5)
    assert counts == [(1, 0, 0), (1, 1, 0), (1, 2, 0), (1, 3, 0), (1, 4, 0)]
    assert stats()["trace_cache_hits"] == 0 and stats()["trace_cache_misses"] == 0


def test_a_small_macro_section_runs_at_once_once_recorded(stats):
    """With the NumPy tier on, a section whose inputs are computed and small is recorded
    the first time, then runs its body at once (no recording, no flush, no cache hit)."""
    with ps.config.override(eager_elements=1 << 16):
        counts = _section_loop(stats, "small body", 3, 14, 4)
    assert counts == [(1, 0, 0), (1, 0, 1), (1, 0, 2), (1, 0, 3)]
    assert stats()["ops_eager"] >= 3 * 4


def test_macro_section_controls_and_read_inside():
    a = _f64(50, seed=13)
    x = ps.asarray(a)
    for c in ([1, 2], [1, 2], [3]):         # list controls are converted
        with ps.macro_section("section", [x], controls=c):
            y = x * float(len(c))
        assert_same(y, a * float(len(c)))
    with pytest.raises(ps.MacroError) as e:
        with ps.macro_section("section", [x], controls=[9]):
            z = x + 1.0
            float(ps.sum(z))                # <section-read>
    assert _at("section-read") in str(e.value)
    _assert_runtime_works()


def test_signed_zero_controls_are_different_calls():
    """0.0 == -0.0 in Python, but ``1 / (a * -0.0)`` is -inf: a control's sign of zero is part
    of the macro's signature (also inside a tuple, and a complex control's parts)."""
    @ps.macro
    def recip(a, c):
        return 1.0 / (a * c)

    @ps.macro
    def recip_t(a, cs):
        return 1.0 / (a * cs[0])

    x = np.ones(70_000)
    X = ps.asarray(x)
    with np.errstate(divide="ignore", invalid="ignore"):
        for c in (0.0, -0.0, 0.0, -0.0, complex(1, 0.0), complex(1, -0.0)):
            np.testing.assert_array_equal(np.asarray(recip(X, c)), 1.0 / (x * c))
            np.testing.assert_array_equal(np.asarray(recip_t(X, (c,))), 1.0 / (x * c))
