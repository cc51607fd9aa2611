"""Debugger: reference results, comparison, first diverging op, inspect, breakpoints and
error handlers."""
import copy
import inspect
import warnings

import numpy as np
import pytest

import streamrt as ps
from streamrt.core import ops


def _line():
    return inspect.currentframe().f_back.f_lineno


X = np.linspace(0.1, 2.0, 512).astype(np.float32)


def test_reference_mode_agrees_on_a_correct_program():
    x = ps.asarray(X)
    ps.reset_stats()
    with ps.debug.reference_mode():
        y = ps.sin(x) * 2.0 + ps.sqrt(x)
        got = float(ps.sum(y))
    assert got == pytest.approx(float(np.sum(np.sin(X) * 2 + np.sqrt(X), dtype=np.float64)),
                                rel=1e-5)
    assert ps.runtime_stats()["reference_mismatches"] == 0


@pytest.fixture
def wrong_sqrt():
    """Inject a wrong kernel: sqrt rendered as cbrt in generated code only."""
    good = ops.OPS["sqrt"]
    bad = copy.copy(good)
    bad.numba = "np.cbrt({0})"
    ops.OPS["sqrt"] = bad
    ps.clear_caches()
    yield
    ops.OPS["sqrt"] = good
    ps.clear_caches()


@pytest.mark.parametrize("compare", ["after", "copy-out"])
def test_wrong_kernel_is_caught_and_first_diverging_line_named(wrong_sqrt, compare):
    x = ps.asarray(X)
    with pytest.raises(ps.debug.MismatchError) as ei:
        with ps.debug.reference_mode(compare=compare):
            a = ps.exp(x) * 0.5
            b = ps.sqrt(a) + 1.0; bad = _line()       # noqa: E702
            c = b * b
            np.asarray(c)
    msg = str(ei.value)
    assert f"{__file__}:{bad}:" in msg and "sqrt" in msg


def test_mismatch_warn_and_log_actions(wrong_sqrt):
    x = ps.asarray(X)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        with ps.debug.reference_mode(compare="copy-out", action="warn"):
            v = np.asarray(ps.sqrt(x))
    assert any("diverges from the reference" in str(m.message) for m in w)
    np.testing.assert_allclose(v, np.cbrt(X), rtol=1e-6)   # the optimised value is kept
    n = len(ps.debug.LOG)
    with ps.debug.reference_mode(compare="copy-out", action="log"):
        np.asarray(ps.sqrt(x) + 0.0)
    assert len(ps.debug.LOG) == n + 1


def test_tolerance_is_per_dtype():
    from streamrt.tools.debug.compare import close
    ref = np.array([1.0, np.nan, np.inf, -np.inf], np.float32)
    opt = np.array([1.0 + 5e-7, np.nan, np.inf, -np.inf], np.float32)
    assert close(opt, ref, np.float32).all()
    assert not close(np.array([np.inf], np.float32), np.array([-np.inf], np.float32),
                     np.float32).any()
    assert not close(np.array([2], np.int32), np.array([1], np.int32), np.int32).any()
    old = ps.debug.TOLERANCES["float32"]
    try:
        ps.debug.set_tolerance("float32", 0.0, 0.0)
        assert not close(opt[:1], ref[:1], np.float32).any()
    finally:
        ps.debug.TOLERANCES["float32"] = old


def test_reference_errors_appear_where_numpy_raises():
    i = ps.asarray(np.arange(4, dtype=np.int64))
    with ps.debug.reference_mode():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            r = np.asarray(ps.log(i.astype(np.float64) - 1.0))
    assert np.isnan(r[0]) and r[1] == -np.inf


def test_inspect_does_not_flush_or_change_fusion():
    x = ps.asarray(X)
    ps.sync()
    ps.reset_stats()
    y = ps.sin(x) * 3.0
    z = y + 1.0
    v = ps.debug.inspect(y)
    np.testing.assert_allclose(v, np.sin(X) * 3.0, rtol=1e-6)
    assert ps.runtime_stats()["flushes"] == 0
    s = float(ps.sum(z))
    st = ps.runtime_stats()
    assert st["flushes"] == 1 and st["kernels_launched"] == 1
    assert s == pytest.approx(float(np.sum(np.sin(X) * 3.0 + 1.0, dtype=np.float64)), rel=1e-5)


def test_break_at_calls_back_with_inspect_available():
    x = ps.asarray(X)
    seen = []
    target = _line() + 3
    ps.debug.break_at(__file__, target, lambda a: seen.append(ps.debug.inspect(a)[:2]))
    try:
        y = x * 5.0     # the breakpoint line
        y2 = x * 6.0    # not this one
    finally:
        ps.debug.clear_breakpoints()
    assert len(seen) == 1
    np.testing.assert_allclose(seen[0], X[:2] * 5.0)
    del y, y2


def test_error_handler_stack_sees_type_file_line_and_can_abort():
    seen = []
    ps.push_error_handler(lambda info: seen.append(info) or "raise")
    try:
        ln = _line() + 2
        with pytest.raises(ps.ShapeError):
            ps.ones(3) + ps.ones(4)
    finally:
        ps.pop_error_handler()
    assert seen and seen[0].type is ps.ShapeError
    assert seen[0].file == __file__ and seen[0].line == ln
    ps.push_error_handler(lambda info: "abort")
    try:
        pending = ps.asarray(X) * 2.0
        with pytest.raises(ps.debug.AbortError):
            ps.ones(3) + ps.ones(4)
    finally:
        ps.pop_error_handler()
    with pytest.raises(IndexError):
        ps.pop_error_handler()
    del pending


def test_error_handler_can_ignore_a_mismatch(wrong_sqrt):
    x = ps.asarray(X)
    ps.push_error_handler(lambda info: "ignore" if info.type is ps.debug.MismatchError
                          else "raise")
    try:
        with ps.debug.reference_mode(compare="after"):
            v = np.asarray(ps.sqrt(x) * 1.0)
    finally:
        ps.pop_error_handler()
    np.testing.assert_allclose(v, np.cbrt(X), rtol=1e-6)
